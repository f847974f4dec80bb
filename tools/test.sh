#!/usr/bin/env bash
# Builds and runs the test suite (the README's test command): CPU tests, the GPU kernels on the
# Emulated backend, and, when an NVIDIA GPU is present (or CUDA=1 is given), the CUDA tests.
#   bash tools/test.sh [extra cmake arguments]
# Environment: BUILD (build folder, default build), JOBS (default 2), CUDA=1 / CUDA=0 (build the
# CUDA tests or not; default: only when nvcc and a GPU are both found), CUDA_ARCH (default 90).
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD=${BUILD:-build}
JOBS=${JOBS:-2}
t0=$(date +%s)

# Catch2 v2 from Debian when missing (as root on a fresh Debian machine)
if ! [ -f /usr/include/catch2/catch.hpp ] && command -v apt-get >/dev/null && [ "$(id -u)" = 0 ]; then
  echo "test.sh: installing Debian's catch2 package (Catch2 v2, needed by the tests)"
  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq catch2 >/dev/null
fi

# OpenMPI for the cellint::mpi tests (run under mpiexec with 1 to 8 ranks), likewise
if ! command -v mpicxx >/dev/null && command -v apt-get >/dev/null && [ "$(id -u)" = 0 ]; then
  echo "test.sh: installing Debian's OpenMPI (libopenmpi-dev, openmpi-bin) for the cellint::mpi tests"
  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq libopenmpi-dev openmpi-bin >/dev/null
fi

# CUDA tests: compiling them takes most of the build, and they only run on a GPU.
have_gpu=0
if command -v nvidia-smi >/dev/null && nvidia-smi -L >/dev/null 2>&1; then have_gpu=1; fi
cuda_why=""
if [ -n "${CUDA:-}" ]; then
  cuda=$([ "$CUDA" = 1 ] && echo ON || echo OFF)
  cuda_why="CUDA=$CUDA given"
elif [ "$have_gpu" = 1 ] && command -v nvcc >/dev/null; then
  cuda=ON
  cuda_why="nvcc and a GPU found"
else
  cuda=OFF
  if command -v nvcc >/dev/null; then cuda_why="nvcc found but no NVIDIA GPU; CUDA=1 builds them anyway"
  else cuda_why="no nvcc"; fi
fi
echo "test.sh: CUDA tests ${cuda} (${cuda_why})"

# The build type "Test": the host code at -O1, which the tests need no more than (on 2 cores the build takes 9 min
# against 18 at Release's -O3, and the tests 3.6 min against 2.7). Timings come from Release builds (tools/demo.sh,
# the docs' commands): configuring this folder again with -DCMAKE_BUILD_TYPE=Release gives one.
flags=(-DCMAKE_BUILD_TYPE=Test "-DCMAKE_CXX_FLAGS_TEST=-O1 -DNDEBUG")
[ "$cuda" = ON ] && flags+=("-DCMAKE_CUDA_FLAGS_TEST=-O1 -DNDEBUG")  # (host code; ptxas optimises the device code)
cmake -S . -B "$BUILD" "${flags[@]}" -DCELLINT_ENABLE_CUDA=$cuda -DCMAKE_CUDA_ARCHITECTURES=${CUDA_ARCH:-90} "$@"
cmake --build "$BUILD" -j"$JOBS"
rc=0
ctest --test-dir "$BUILD" --output-on-failure --no-tests=error -j"$JOBS" || rc=$?

echo
echo "==== summary ($(( $(date +%s) - t0 )) s)"
if [ "$cuda" = OFF ]; then
  echo "CUDA tests: not built (${cuda_why})"
elif [ "$have_gpu" = 0 ]; then
  echo "CUDA tests: built, reported as skipped: no NVIDIA GPU on this machine (they run on one)"
fi
if command -v mpicxx >/dev/null; then echo "MPI tests: run under mpiexec with 1, 2, 3, 4 and 8 ranks"
else echo "MPI tests: not built (no MPI found; as root this script installs Debian's OpenMPI)"; fi
echo "HIP tests: built only by a separate hipcc build (see .ci/run); no AMD GPU runs them here"
echo "Build type: Test (-O1) in $BUILD; for timings, a Release build (tools/demo.sh, or -DCMAKE_BUILD_TYPE=Release)"
exit $rc
