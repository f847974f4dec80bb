#!/usr/bin/env bash
# Builds and runs the whole GPU test suite on a machine with an NVIDIA GPU, then runs
# compute-sanitizer (memcheck and racecheck) over one small case per strategy.
#   bash tools/device_check.sh [build-dir]
# Environment: SHARDS (parallel test processes, default nproc/2), TEST_FILTER (a Catch2 test spec:
# one process), SANITIZE=0 (skip compute-sanitizer), BUILD_ONLY=1, EXAMPLES / BENCHMARKS=OFF (build less).
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
[ "${BUILD_ONLY:-0}" = 1 ] && exit 0
rc=0
T="$BUILD/tests/cellint_cuda_tests"
SHARDS=${SHARDS:-$(( $(nproc) / 2 > 1 ? $(nproc) / 2 : 1 ))}
if [ -n "${TEST_FILTER:-}" ] || [ "$SHARDS" -le 1 ]; then
  "$T" --reporter compact ${TEST_FILTER:-} >"$LOG/cuda_tests.log" 2>&1 || rc=$?
else
  # The CPU oracle dominates: run the test cases in SHARDS processes sharing the GPU (Catch2 v2
  # reads the test names of a shard from a file with -f), round-robin so large cases spread out.
  t1=$(date +%s)
  "$T" --list-test-names-only | grep -v '^ *$' >"$LOG/cuda_test_names.txt"
  pids=()
  for ((i = 0; i < SHARDS; i++)); do
    # commas and brackets in names must be escaped, or Catch2 reads them as spec syntax
    awk -v n="$SHARDS" -v i="$i" 'NR % n == i' "$LOG/cuda_test_names.txt" | sed 's/[],[]/\\&/g' >"$LOG/shard_$i.txt"
    "$T" --reporter compact -f "$LOG/shard_$i.txt" >"$LOG/cuda_tests_$i.log" 2>&1 &
    pids+=($!)
  done
  for ((i = 0; i < SHARDS; i++)); do wait "${pids[$i]}" || rc=$?; done
  cat "$LOG"/cuda_tests_*.log >"$LOG/cuda_tests.log"
  rm -f "$LOG"/cuda_tests_*.log "$LOG"/shard_*.txt
  echo "$(wc -l <"$LOG/cuda_test_names.txt") test cases in $SHARDS processes: $(( $(date +%s) - t1 )) s;" \
    "$(grep -oE "[0-9]+ test cases?" "$LOG/cuda_tests.log" | awk '{s += $1} END {print s}') reported"
fi
grep -E "^(Passed|Failed|All tests|test cases)" "$LOG/cuda_tests.log" | sort | uniq -c | head -20
grep -B2 -A12 "FAILED" "$LOG/cuda_tests.log" | head -60
echo "cuda tests exit: $rc"
if [ "${SANITIZE:-1}" = 1 ] && command -v compute-sanitizer >/dev/null; then
  for tool in memcheck racecheck; do
    compute-sanitizer --tool $tool --error-exitcode 9 "$BUILD/tests/cellint_cuda_tests" "[sanitize]" \
      >"$LOG/sanitize_$tool.log" 2>&1
    echo "compute-sanitizer $tool: exit $? ($(grep -cE 'ERROR SUMMARY: 0 errors|RACECHECK SUMMARY: 0 hazards' "$LOG/sanitize_$tool.log") clean summaries)"
    grep -m3 -E "ERROR SUMMARY|RACECHECK SUMMARY" "$LOG/sanitize_$tool.log"
  done
fi
exit $rc
