#!/usr/bin/env bash
# Builds and runs the whole GPU test suite on a machine with an NVIDIA GPU, then runs
# compute-sanitizer (memcheck and racecheck) over one small case per strategy.
#   bash tools/device_check.sh [build-dir]
# Catch2 v2: from the system, or from .deps/ (Debian's catch2 unpacked there, see docs/backends.md).
# Logs go to $OUT when set (the device machine), else to the build directory.
set -uo pipefail
cd "$(dirname "$0")/.."
BUILD=${1:-build-gpu}
LOG=${OUT:-$BUILD}
mkdir -p "$BUILD" "$LOG"
extra=()
[ -d .deps/usr/lib/cmake/Catch2 ] && extra+=(-DCatch2_DIR="$PWD/.deps/usr/lib/cmake/Catch2")
command -v ninja >/dev/null && extra+=(-G Ninja)
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader | tee "$LOG/gpu.txt"
t0=$(date +%s)
cmake -S . -B "$BUILD" -DCMAKE_BUILD_TYPE=Release -DCELLINT_ENABLE_CUDA=ON -DCMAKE_CUDA_ARCHITECTURES=90 \
  -DCELLINT_BUILD_EXAMPLES=${EXAMPLES:-ON} -DCELLINT_BUILD_BENCHMARKS=${BENCHMARKS:-ON} -DCELLINT_FULL_MATRIX=ON "${extra[@]}" >"$LOG/configure.log" 2>&1 \
  || { tail -30 "$LOG/configure.log"; exit 1; }
cmake --build "$BUILD" -j"$(nproc)" >"$LOG/build.log" 2>&1 || { grep -E "error" "$LOG/build.log" | head -40; exit 1; }
echo "build: $(( $(date +%s) - t0 )) s"
rc=0
"$BUILD/tests/cellint_cuda_tests" --reporter compact ${TEST_FILTER:-} >"$LOG/cuda_tests.log" 2>&1 || rc=$?
tail -5 "$LOG/cuda_tests.log"; grep -B2 -A12 "FAILED" "$LOG/cuda_tests.log" | head -60
echo "cuda tests exit: $rc"
if [ "${SANITIZE:-1}" = 1 ] && command -v compute-sanitizer >/dev/null; then
  for tool in memcheck racecheck; do
    compute-sanitizer --tool $tool --error-exitcode 9 "$BUILD/tests/cellint_cuda_tests" "[sanitize]" \
      >"$LOG/sanitize_$tool.log" 2>&1
    echo "compute-sanitizer $tool: exit $? ($(grep -c 'ERROR SUMMARY: 0 errors' "$LOG/sanitize_$tool.log") clean summaries)"
    grep -m3 "ERROR SUMMARY" "$LOG/sanitize_$tool.log"
  done
fi
exit $rc
