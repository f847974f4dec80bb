#!/usr/bin/env bash
# Before and after on one GPU in one call: builds interaction_bench_cuda of this tree and of a
# baseline tree, then runs the paper campaign (the `paper` part of run_device.sh) with each,
# base first, and summarises per strategy with benchmarks/compare.py.
#
#   BASE=.bench-base bash benchmarks/compare_device.sh
#
# BASE: the baseline source tree, e.g. made here with
#   mkdir -p .bench-base && git archive <commit> | tar -x -C .bench-base
# (and carried to the GPU machine). OUT: output folder [/tmp/compare]. JOBS: build parallelism
# per tree [8; the two trees build at once]. ROUNDS: base/new pairs [1].
set -uo pipefail
cd "$(dirname "$0")/.."
BASE=${BASE:-.bench-base}
OUT=${OUT:-/tmp/compare}
JOBS=${JOBS:-8}
ROUNDS=${ROUNDS:-1}
mkdir -p "$OUT"
t0=$(date +%s)
build() {  # build SRC DIR NAME
  cmake -S "$1" -B "$2" -DCMAKE_BUILD_TYPE=Release -DCELLINT_ENABLE_CUDA=ON -DCMAKE_CUDA_ARCHITECTURES=90 \
    -DCELLINT_BUILD_TESTS=OFF -DCELLINT_BUILD_EXAMPLES=OFF >"$OUT/configure_$3.log" 2>&1 &&
    cmake --build "$2" -j"$JOBS" --target interaction_bench_cuda >"$OUT/build_$3.log" 2>&1 ||
    { echo "compare_device: $3 build failed"; grep -E "error" "$OUT/build_$3.log" | head -20; return 1; }
}
build "$BASE" /tmp/cmp-base base & pb=$!
build . /tmp/cmp-new new & pn=$!
wait $pb || exit 1
wait $pn || exit 1
echo "compare_device: both built in $(( $(date +%s) - t0 )) s"
nvidia-smi --query-gpu=name,driver_version,clocks.sm,temperature.gpu --format=csv,noheader
args=(--label paper --strategy all,auto --functor paper,paper-fast,lj,lj-fast --cells 2,4,8,16,32 --ppc 1,10,100
      --precision float --dim 3 --reps 200 --batches 5)
for ((r = 1; r <= ROUNDS; r++)); do
  for side in base new; do
    t1=$(date +%s)
    /tmp/cmp-$side/benchmarks/interaction_bench_cuda "${args[@]}" --json "$OUT/paper_${side}_$r.json" \
      >"$OUT/paper_${side}_$r.log" 2>&1 || echo "compare_device: $side round $r exited $?"
    echo "compare_device: $side round $r in $(( $(date +%s) - t1 )) s"
  done
done
python3 benchmarks/compare.py "$OUT"/paper_base_*.json -- "$OUT"/paper_new_*.json | tee "$OUT/compare.txt"
