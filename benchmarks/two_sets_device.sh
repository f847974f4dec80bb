#!/usr/bin/env bash
# Two sets, statistics and the reproducible mode on one CUDA GPU: builds the CUDA tests (with Catch2 2 carried in
# .deps), the interaction benchmark, two_sets_bench_cuda, the probes example and the LJ demo; runs the [two-sets],
# [stats] and [reproducible] tests (and memcheck on the two-set ones), the benchmark with --stats --reproducible
# --binning-stable beside plain timings, the fluid/wall comparison, the probes example and the LJ demo's --stats.
#   bash benchmarks/two_sets_device.sh [build|tests|bench|all]   (default all; results under $OUT, default
#   benchmarks/results/two-sets-<UTC date>; the build in $BUILD, default build-two-sets/, kept for the later steps)
set -uo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$here"
OUT=${OUT:-$here/benchmarks/results/two-sets-$(date -u +%Y%m%dT%H%M%SZ)}
BUILD=${BUILD:-$here/build-two-sets}
STEP=${1:-all}
want() { [ "$STEP" = all ] || [ "$STEP" = "$1" ]; }
JOBS=${JOBS:-$(nproc)}
mkdir -p "$OUT"
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader | tee "$OUT/gpu.txt"
if want build; then
extra=()
[ -d .deps/usr/lib/cmake/Catch2 ] && extra+=(-DCatch2_DIR="$PWD/.deps/usr/lib/cmake/Catch2")
cmake -S . -B "$BUILD" -DCMAKE_BUILD_TYPE=Release -DCELLINT_ENABLE_CUDA=ON -DCMAKE_CUDA_ARCHITECTURES=90 \
  -DCELLINT_BUILD_TESTS=ON -DCELLINT_BUILD_BENCHMARKS=ON -DCELLINT_BUILD_EXAMPLES=ON "${extra[@]}" \
  >"$OUT/configure.log" 2>&1 || { tail -20 "$OUT/configure.log"; exit 1; }
targets=(interaction_bench_cuda two_sets_bench_cuda cellint_lj_cuda)
[ -f examples/probes/probes_main.cu ] && targets+=(cellint_probes_cuda)
[ -d .deps/usr/lib/cmake/Catch2 ] && targets+=(cellint_cuda_tests)
for t in "${targets[@]}"; do
  cmake --build "$BUILD" -j"$JOBS" --target "$t" >"$OUT/build_$t.log" 2>&1 || { echo "build $t failed:"; grep -m5 error "$OUT/build_$t.log"; }
done
fi
T=$BUILD/tests/cellint_cuda_tests
if want tests && [ -x "$T" ]; then
  "$T" --reporter compact "[two-sets],[stats],[reproducible]" >"$OUT/tests.log" 2>&1
  echo "tests [two-sets],[stats],[reproducible]: rc $? $(tail -1 "$OUT/tests.log")"
  compute-sanitizer --tool memcheck --error-exitcode 9 "$T" "[two-sets][sanitize]" >"$OUT/memcheck.log" 2>&1
  echo "memcheck [two-sets]: rc $? $(tail -1 "$OUT/memcheck.log")"
  timeout 300 "$T" --reporter compact >"$OUT/tests_all.log" 2>&1
  echo "the whole CUDA suite: rc $? $(tail -1 "$OUT/tests_all.log")"
fi
B=$BUILD/benchmarks
if want bench && [ -x "$B/interaction_bench_cuda" ]; then
  # the same cases without and with the statistics and the reproducible mode, twice (plain timings before and after)
  for round in 1 2; do
    "$B/interaction_bench_cuda" --cells 8,16,32 --ppc 10,100 --strategy par-part-noloop,x-pencil,auto --functor lj \
      --json "$OUT/plain_$round.json" --label plain >"$OUT/plain_$round.log" 2>&1
    echo "plain round $round: rc $?"
  done
  "$B/interaction_bench_cuda" --cells 8,16,32 --ppc 10,100 --strategy par-part-noloop,x-pencil,auto --functor lj \
    --stats --reproducible --binning-stable --json "$OUT/options.json" --label options >"$OUT/options.log" 2>&1
  echo "options: rc $?"
  grep -E "auto|x-pencil" "$OUT/options.log" | tail -12
fi
if want bench && [ -x "$B/two_sets_bench_cuda" ]; then
  for res in 200 400 800; do
    "$B/two_sets_bench_cuda" $res 100 | tee "$OUT/two_sets_res$res.json"
  done
fi
P=$BUILD/examples/probes/cellint_probes_cuda
if want bench && [ -x "$P" ]; then
  for args in "" "--dim 2" "--n 10000000 --probes 100000 --precision mixed --strategy par-part-loop" \
      "--dim 2 --n 10000000 --probes 100000 --precision mixed --strategy par-part-noloop"; do
    name=probes$(echo "$args" | tr -d ' -' | cut -c1-40)
    "$P" $args >"$OUT/$name.log" 2>&1
    echo "probes $args: rc $?"; grep -E "strategy|ms,|PASS|FAIL" "$OUT/$name.log"
  done
fi
L=$BUILD/examples/lj/cellint_lj_cuda
if want bench && [ -x "$L" ]; then
  "$L" --cells 25 --steps 200 --precision float --stats >"$OUT/lj_stats.log" 2>&1; echo "lj --stats: rc $?"
  grep "^# stats" "$OUT/lj_stats.log"
  "$L" --cells 25 --steps 200 --precision float --list none --stats >"$OUT/lj_stats_cells.log" 2>&1
  echo "lj --list none --stats: rc $?"; grep "^# stats" "$OUT/lj_stats_cells.log"
fi
