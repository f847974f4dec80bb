#!/usr/bin/env bash
# gravity2d on one CUDA GPU: builds cellint_gravity2d_cuda (BIN: use that binary instead), checks the two-body period
# and the disc's energy on the GPU, then the rate of the exact all-pairs method at 10^4 .. 10^6 particles (float, the
# hardware reciprocal square root; the force evaluation also timed alone with events) and writes one JSON per run.
#   bash benchmarks/gravity2d_device.sh        (results under $OUT, default benchmarks/results/gravity2d-<UTC date>)
# ONLY=shapes runs the kernel-shape comparison alone, ROUNDS times over the shapes in turn (default 1); TESTS_BIN: a
# prebuilt all-pairs test binary to run instead of building one.
set -uo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$here"
OUT=${OUT:-$here/benchmarks/results/gravity2d-$(date -u +%Y%m%dT%H%M%SZ)}
mkdir -p "$OUT"
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee "$OUT/gpu.txt"
G=${BIN:-}
if [ -z "$G" ]; then
  G=/tmp/cellint_gravity2d_cuda
  nvcc -O3 -std=c++17 -arch=sm_90 --expt-relaxed-constexpr -lineinfo -Iinclude -Iexamples -Xcompiler=-fopenmp \
    examples/gravity2d/gravity2d_main.cu -o "$G" >"$OUT/build.log" 2>&1 || { tail -20 "$OUT/build.log"; exit 1; }
fi
ONLY=${ONLY:-}
ROUNDS=${ROUNDS:-1}
# the all-pairs tests on the GPU (needs Catch2 2 carried in .deps: the machine has none)
if [ -n "${TESTS_BIN:-}" ]; then  # (built elsewhere for sm_90)
  "$TESTS_BIN" --reporter compact >"$OUT/all_pairs_tests.log" 2>&1
  echo "all-pairs tests on the GPU: rc $? $(tail -1 "$OUT/all_pairs_tests.log" 2>/dev/null)"
elif [ -f .deps/usr/include/catch2/catch.hpp ]; then
  printf '#define CELLINT_TEST_GPU 1\n#define CELLINT_TEST_BACKEND cellint::Cuda\n#define CELLINT_TEST_TAG "[cuda]"\n#include "device/strategy_all_pairs_test.hpp"\n' >/tmp/all_pairs_test.cu
  nvcc -O2 -std=c++17 -arch=sm_90 --expt-relaxed-constexpr -Iinclude -Itests -I.deps/usr/include -DCELLINT_TEST_REQUIRES_CUDA=1 \
    -x cu tests/support/main.cpp /tmp/all_pairs_test.cu -o /tmp/all_pairs_tests >"$OUT/build_tests.log" 2>&1 &&
    /tmp/all_pairs_tests --reporter compact >"$OUT/all_pairs_tests.log" 2>&1
  echo "all-pairs tests on the GPU: rc $? $(tail -1 "$OUT/all_pairs_tests.log" 2>/dev/null)"
fi
if [ "$ONLY" != shapes ]; then
"$G" --init two-body --steps 7000 --dt 1e-3 --softening 0 --precision double --math exact --check-period 1e-5 \
  --check-energy 1e-9 >"$OUT/two_body.log" 2>&1
echo "two-body (double): rc $? $(grep -m1 '^Period check' "$OUT/two_body.log")"
"$G" --n 20000 --steps 200 --thermo 50 --precision mixed --check-energy 1e-5 --check-momentum 1e-6 \
  >"$OUT/disc_check.log" 2>&1
echo "disc 20,000 (mixed): rc $? $(grep -m1 '^Energy check' "$OUT/disc_check.log")"
# a rotating disc of 20,000 particles over about two turns of its middle (the picture in docs/gravity2d.md)
"$G" --n 20000 --steps 0 --snapshot "$OUT/disc_t0.csv" >/dev/null 2>&1
"$G" --n 20000 --steps 4000 --dt 5e-4 --thermo 1000 --precision mixed --snapshot "$OUT/disc_t2.csv" \
  >"$OUT/disc_t2.log" 2>&1
echo "disc picture run: rc $? $(grep -m1 '^Energy:' "$OUT/disc_t2.log")"
for run in "10000 400" "100000 100" "300000 12" "1000000 3"; do
  set -- $run
  "$G" --n "$1" --steps "$2" --kernel-reps 5 --json "$OUT/gravity2d_n$1.json" --snapshot "$OUT/snap_n$1.csv" \
    >"$OUT/gravity2d_n$1.log" 2>&1
  echo "n $1: rc $? $(grep -m1 '^Loop time' "$OUT/gravity2d_n$1.log")"
  grep -m1 '^Force evaluation' "$OUT/gravity2d_n$1.log"
done
fi
# the kernel's shape: block size (sources per tile), targets per thread and source splits (0: the rule; 1: none, one
# block per group of targets over every source)
shapes=("1000000 256 4 0" "1000000 256 4 1" "1000000 128 4 0" "1000000 512 4 0" "1000000 256 1 0" "1000000 256 2 0"
  "100000 256 4 0" "100000 256 4 1" "100000 256 2 0" "300000 256 4 1")
for ((r = 1; r <= ROUNDS; ++r)); do
  for shape in "${shapes[@]}"; do
    set -- $shape
    tag="n$1_t$2_k$3_s$4_r$r"
    "$G" --n "$1" --steps 1 --kernel-reps 3 --threads "$2" --targets-per-thread "$3" --source-splits "$4" \
      --json "$OUT/gravity2d_$tag.json" >"$OUT/gravity2d_$tag.log" 2>&1
    echo "round $r, n $1, $2 threads x $3 targets, splits $4: $(grep -m1 '^Force evaluation' "$OUT/gravity2d_$tag.log")"
  done
done
rm -f "$OUT"/snap_n1000000.csv "$OUT"/snap_n300000.csv
