#!/usr/bin/env bash
# Builds and runs the main demo: the Lennard-Jones melt of LAMMPS's bench/in.lj (32,000 atoms,
# 100 steps). On the GPU when an NVIDIA GPU and nvcc are present, else on the CPU.
# Extra arguments go to the demo (e.g. --cells 40 for 256,000 atoms; --help for all options).
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD=${BUILD:-build-demo}
if command -v nvcc >/dev/null && command -v nvidia-smi >/dev/null && nvidia-smi -L >/dev/null 2>&1; then
  cmake -S . -B "$BUILD" -DCMAKE_BUILD_TYPE=Release -DCELLINT_BUILD_TESTS=OFF -DCELLINT_ENABLE_CUDA=ON \
    -DCMAKE_CUDA_ARCHITECTURES=${CUDA_ARCH:-native} >/dev/null
  cmake --build "$BUILD" -j"$(nproc)" --target cellint_lj_cuda
  exec "$BUILD/examples/lj/cellint_lj_cuda" "$@"
fi
cmake -S . -B "$BUILD" -DCMAKE_BUILD_TYPE=Release -DCELLINT_BUILD_TESTS=OFF -DCELLINT_ENABLE_CUDA=OFF >/dev/null
cmake --build "$BUILD" -j"$(nproc)" --target cellint_lj
exec "$BUILD/examples/lj/cellint_lj" "$@"
