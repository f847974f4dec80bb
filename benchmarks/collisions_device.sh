#!/usr/bin/env bash
# The disc-collision example (examples/collisions) on a GPU machine: builds cellint_collisions_cuda, checks it bit for
# bit against the O(N^2) reference on the GPU, then times the NUS CS3210 report's cases (N = 1,000 .. 32,000,
# L = 20,000, r = 1, S = 1,000, discs generated as in the report) and larger N. One JSON per run and a summary table
# go to $OUT (default ./collisions_out). Budget: ~3 minutes on one H100 (build ~1 min).
#
#   OUT=/tmp/out benchmarks/collisions_device.sh
set -euo pipefail
cd "$(dirname "$0")/.."
OUT=${OUT:-$PWD/collisions_out}
mkdir -p "$OUT"
BIN=$OUT/cellint_collisions_cuda

# A direct nvcc line (as tools/ab_lists.sh does): one translation unit, no CMake configure on the GPU machine.
nvcc -std=c++17 -O3 -arch=sm_90 --expt-relaxed-constexpr -Xcompiler=-fopenmp,-ffp-contract=off \
  -DCELLINT_ENABLE_CUDA=1 -I include -I examples examples/collisions/collisions_main.cu -o "$BIN" -lgomp
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader > "$OUT/device.txt" || true

run() {  # run NAME INPUT ARGS...: one JSON, stderr kept
  local name=$1 input=$2
  shift 2
  echo "== $name: $input $*"
  echo "$input" | timeout 120 "$BIN" --backend cuda --quiet --json "$OUT/$name.json" "$@" 2> >(tee "$OUT/$name.log" >&2) || echo "$name failed (rc $?)"
}

# 1. bit-identity on the GPU (exit 1 on the first differing disc): course speeds, a dense box, the sample file
run check_course "400 200 1 300" --reference
run check_dense "4000 300 1 200" --reference --speed 0.5,2
echo "$BIN --backend cuda --reference --input examples/collisions/inputs/tie.txt" > "$OUT/check_tie.log"
"$BIN" --backend cuda --reference --input examples/collisions/inputs/tie.txt >> "$OUT/check_tie.log" 2>&1 || echo "tie check failed"

# 2. the report's cases (its table: Titan RTX, Tesla T4, 20-thread Xeon)
for n in 1000 2000 3000 4000 6000 8000 12000 16000 24000 32000; do
  run report_$n "$n 20000 1 1000 perf"
done
# 3. beyond: at the course's speeds the broad phase needs ~v_max sqrt(N)/L slices a step, so fewer steps here
for n in 100000 1000000; do
  run course_$n "$n 20000 1 20 perf"
done
# slower discs (|v| components 1 .. 4 per step): the regime where one slice a step suffices
for n in 100000 1000000 4000000; do
  run slow_$n "$n 20000 1 100 perf" --speed 1,4
done

python3 - "$OUT" <<'PY'
import json, glob, os, sys
out = sys.argv[1]
rows = []
for f in sorted(glob.glob(os.path.join(out, "*.json"))):
    j = json.load(open(f))
    rows.append((os.path.basename(f)[:-5], j["particles"], j["steps"], j["seconds"], j["particle_steps_per_s"],
                 j["slices"], j["collisions"]["wall"], j["collisions"]["disc"],
                 "" if j["reference"] is None else ("identical" if j["reference"]["identical"] else "DIFFERS")))
with open(os.path.join(out, "summary.md"), "w") as s:
    s.write("| run | N | S | seconds | disc-steps/s | slices | wall | disc | reference |\n|---|---|---|---|---|---|---|---|---|\n")
    for r in rows:
        s.write("| %s | %d | %d | %.4g | %.3g | %d | %d | %d | %s |\n" % r)
print(open(os.path.join(out, "summary.md")).read())
PY
