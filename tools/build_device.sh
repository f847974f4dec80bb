#!/usr/bin/env bash
# Builds here (nvcc, sm_90) the programs that benchmarks/mpi_device.sh and benchmarks/lists_device.sh run on the GPU
# machine, into BIN (default build-device/, carried there with `run`'s carry): cellint_lj_cuda, cellint_lj_mpi_cuda,
# and the GPU backend's and neighbour lists' tests alone (neighbor_list_test_cuda, gpu_backend_test_cuda), which
# compile in minutes where the whole CUDA test suite takes an hour on two cores.
#   bash tools/build_device.sh [target...]   (default: all four; JOBS, default 2)
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
BIN=${BIN:-$here/build-device}
B=${BUILD:-$here/build-cuda}
JOBS=${JOBS:-2}
targets=("$@")
[ ${#targets[@]} -eq 0 ] && targets=(cellint_lj_cuda cellint_lj_mpi_cuda neighbor_list_test_cuda gpu_backend_test_cuda)
mkdir -p "$BIN"
if [ ! -f "$B/CMakeCache.txt" ]; then
  cmake -S "$here" -B "$B" -DCELLINT_ENABLE_CUDA=ON -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=90 >/dev/null
fi
demos=() tests=()
for t in "${targets[@]}"; do
  case $t in
  *_test_cuda) tests+=("$t") ;;
  *) demos+=("$t") ;;
  esac
done
[ ${#demos[@]} -gt 0 ] && cmake --build "$B" -j "$JOBS" --target "${demos[@]}"
for t in "${demos[@]}"; do cp "$(find "$B" -type f -name "$t" -perm -u+x | head -1)" "$BIN/"; done
if [ ${#tests[@]} -gt 0 ]; then
  objs=(support/main.o)
  for t in "${tests[@]}"; do objs+=("gen/$t.o"); done
  dir=$B/tests/CMakeFiles
  # (the Makefile generator tracks no header dependencies of these objects: always compiled again)
  for t in "${tests[@]}"; do find "$dir" -name "$t.cu.o" -delete; done
  make -C "$B/tests" -j "$JOBS" "${objs[@]}" >/dev/null
  main=$(find "$dir" -path '*cellint_test_main_cuda.dir*' -name main.cpp.o | head -1)
  for t in "${tests[@]}"; do
    obj=$(find "$dir" -path '*cellint_cuda_tests.dir*' -name "$t.cu.o" | head -1)
    nvcc -arch=sm_90 "$main" "$obj" -o "$BIN/$t" -lcudart_static
  done
fi
ls -l "$BIN"
