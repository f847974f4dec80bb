#!/usr/bin/env bash
# Per-kernel GPU times of the list path in the LJ demo (Nsight Compute, one CUDA GPU): builds cellint_lj_cuda (or uses
# $LJ_BIN), runs in.lj for 60 steps under ncu at each size of $CELLS (default 80: 2,048,000 atoms) and prints min /
# median / max / total per kernel, then the demo's rate at 62,500 and 2,048,000 atoms without the profiler.
#   bash tools/profile_lists.sh [build-dir]      (EXTRA: more demo options, e.g. "--row-threads 1"; NCU_OPTS: more
#   ncu options, e.g. "--clock-control none --cache-control none" for the clocks and caches of a run without it)
set -u
B=${1:-/tmp/cellint-prof}
L=${LJ_BIN:-}
if [ -z "$L" ]; then
  cmake -S . -B "$B" -DCMAKE_BUILD_TYPE=Release -DCELLINT_ENABLE_CUDA=ON -DCMAKE_CUDA_ARCHITECTURES=90 \
    -DCELLINT_BUILD_EXAMPLES=ON -DCELLINT_BUILD_BENCHMARKS=OFF -DCELLINT_BUILD_TESTS=OFF -G Ninja >/dev/null 2>&1
  cmake --build "$B" --target cellint_lj_cuda -j16 >"$B.log" 2>&1 || { grep error -A3 "$B.log" | head; exit 1; }
  L=$B/examples/lj/cellint_lj_cuda
fi
for cells in ${CELLS:-80}; do
echo "== in.lj, $((4 * cells * cells * cells)) atoms, float: per kernel (us; Nsight Compute clocks)"
ncu ${NCU_OPTS:-} --metrics gpu__time_duration.sum --launch-skip 100 --launch-count 400 "$L" --cells "$cells" --steps 60 --thermo 0 \
  --precision float --graph no ${EXTRA:-} >"$B.ncu" 2>&1
python3 - "$B.ncu" <<'PY'
import collections, re, sys
t = collections.defaultdict(list)
name = None
for line in open(sys.argv[1]):
    if line.startswith("==PROF=="):
        continue
    m = re.search(r"block_kernel<(\w+)<(?:lj::)?(\w+)?", line)
    if m:
        name = m.group(1) + ("/" + (m.group(2) or "") if m.group(1) == "ElementKernel" else "")
    m = re.search(r"gpu__time_duration.sum\s+(\S+)\s+([\d.,]+)", line)
    if m and name:
        t[name].append(float(m.group(2).replace(",", "")) * {"ns": 1e-3, "us": 1, "ms": 1e3}.get(m.group(1), 1))
for k, v in sorted(t.items(), key=lambda kv: -sum(kv[1])):
    v.sort()
    print("%-30s n=%3d min %8.1f median %8.1f max %8.1f total %9.0f us" % (k, len(v), v[0], v[len(v) // 2], v[-1], sum(v)))
PY
done
[ -n "${LJ_BIN:-}" ] && exit 0
for c in 25 80; do "$L" --cells $c --steps 2000 --thermo 0 --precision float | grep -E "^Performance"; done
