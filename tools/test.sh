#!/usr/bin/env bash
# Builds and runs the test suite (the README's test command). CUDA targets are compiled for
# sm_90 when nvcc is found; their tests run on a machine with a GPU and are skipped otherwise.
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD=${BUILD:-build}
# Catch2 v2 from Debian when missing (as root on a fresh Debian machine)
if ! [ -f /usr/include/catch2/catch.hpp ] && command -v apt-get >/dev/null && [ "$(id -u)" = 0 ]; then
  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq catch2 >/dev/null
fi
cmake -S . -B "$BUILD" -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=${CUDA_ARCH:-90} "$@"
cmake --build "$BUILD" -j"${JOBS:-2}"
ctest --test-dir "$BUILD" --output-on-failure --no-tests=error -j"${JOBS:-2}"
