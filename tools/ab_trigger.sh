#!/usr/bin/env bash
# The list's rebuild triggers side by side on one CUDA GPU: builds the LJ demo once and runs in.lj with
# `--neigh-trigger half-skin` and `pairs` alternately at each size, then prints the median rate of each, their ratio and
# the rebuild counts (docs/lists.md, "the pair trigger").
#   bash tools/ab_trigger.sh [cells ...]      (default: 20 25 40 50 60 80; results under $OUT or /tmp/ab_trigger)
# Environment: ROUNDS [3], PRECISION [float] (float | mixed | double), LJ_BIN (a prebuilt cellint_lj_cuda).
set -uo pipefail
SIZES=("$@")
[ ${#SIZES[@]} -eq 0 ] && SIZES=(20 25 40 50 60 80)
R=${OUT:-/tmp/ab_trigger}
mkdir -p "$R"
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee "$R/gpu.txt"
L=${LJ_BIN:-$R/lj}
if [ -z "${LJ_BIN:-}" ]; then
  nvcc -O3 -std=c++17 -arch=sm_90 --expt-relaxed-constexpr -Iexamples -Iinclude examples/lj/lj_main.cu -o "$L" \
    >"$R/build.log" 2>&1 || { tail -20 "$R/build.log"; exit 1; }
fi
steps_for() { case $1 in 20|25) echo 4000;; 40) echo 2000;; *) echo 1000;; esac; }
for c in "${SIZES[@]}"; do
  for _ in $(seq "${ROUNDS:-3}"); do
    for t in half-skin pairs; do
      echo "$c $t $("$L" --cells "$c" --steps "$(steps_for "$c")" --thermo 0 --precision "${PRECISION:-float}" \
        --neigh-trigger $t | grep -E '^Performance|^Neighbour list' | tr '\n' ' ')"
    done
  done
done >"$R/runs.txt"
python3 - "$R/runs.txt" <<'PY' | tee "$R/ab.txt"
import collections, re, statistics, sys
rate, rebuilds = collections.defaultdict(list), collections.defaultdict(list)
for line in open(sys.argv[1]):
    c, t = line.split()[:2]
    rate[(int(c), t)].append(float(re.search(r"([\d.e+]+) atom-steps/s", line).group(1)))
    m = re.search(r"(\d+) rebuilds in (\d+) steps", line)
    rebuilds[(int(c), t)].append(1000 * int(m.group(1)) / int(m.group(2)))
for c in sorted({c for c, _ in rate}):
    a, b = statistics.median(rate[(c, "half-skin")]), statistics.median(rate[(c, "pairs")])
    ra, rb = (statistics.median(rebuilds[(c, t)]) for t in ("half-skin", "pairs"))
    print("%9d atoms: half-skin %.4g, pairs %.4g atom-steps/s, pairs / half-skin %.3f; "
          "rebuilds per 1,000 steps %.0f -> %.0f" % (4 * c ** 3, a, b, b / a, ra, rb))
PY
