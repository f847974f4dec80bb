#!/usr/bin/env bash
# The list's rebuild checks side by side on one CUDA GPU: builds the LJ demo once and runs in.lj with the demo's
# default (look at the pairs every step, rebuild when needed) and with in.lj's own `neigh_modify every 20 check no`
# (rebuild every 20 steps whatever moved) alternately at each size, float and mixed at 2M atoms; then the energy drift
# of each (shifted LJ, 32,000 atoms, mixed precision, 10,000 steps after 1,000; limit 1e-4 per atom), and OpenMM's rate
# on the same card when its wheels were carried (.whl/, see benchmarks/peers/openmm_lj.py). docs/lists.md, "in.lj's
# own neighbour settings".
#   bash tools/ab_check.sh [cells ...]      (default: 20 25 80; results under $OUT or /tmp/ab_check)
# Environment: ROUNDS [3], LJ_BIN (a prebuilt cellint_lj_cuda).
set -uo pipefail
SIZES=("$@")
[ ${#SIZES[@]} -eq 0 ] && SIZES=(20 25 80)
R=${OUT:-/tmp/ab_check}
mkdir -p "$R/runs"
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader | tee "$R/gpu.txt"
L=${LJ_BIN:-$R/lj}
if [ -z "${LJ_BIN:-}" ]; then
  nvcc -O3 -std=c++17 -arch=sm_90 --expt-relaxed-constexpr -Iexamples -Iinclude examples/lj/lj_main.cu -o "$L" \
    >"$R/build.log" 2>&1 || { tail -20 "$R/build.log"; exit 1; }
fi
inlj=(--neigh-every 20 --neigh-check no)
steps_for() { case $1 in 20|25) echo 4000;; 40) echo 2000;; 80) echo 400;; *) echo 100;; esac; }
# rate JSON COMMAND...: runs the demo, keeps its JSON (the last round's stays), prints its rate and rebuild count
rate() {
  local j=$1; shift
  "$@" --json "$j" >/dev/null 2>&1 &&
    python3 -c "import json;d=json.load(open('$j'));print('%.4g'%d['atom_steps_per_s'], d['rebuilds'])"
}
for p in float mixed; do
  for c in "${SIZES[@]}"; do
    [ "$p" = mixed ] && [ "$c" != 80 ] && continue
    for _ in $(seq "${ROUNDS:-3}"); do
      a=(--cells "$c" --steps "$(steps_for "$c")" --thermo 0 --precision "$p")
      echo "$p c$c safe $(rate "$R/runs/safe_${p}_c$c.json" "$L" "${a[@]}")" \
        "inlj $(rate "$R/runs/inlj_${p}_c$c.json" "$L" "${a[@]}" "${inlj[@]}")" | tee -a "$R/ab.txt"
    done
  done
done
drift=(--cells 20 --shifted --precision mixed --list full --equilibrate 1000 --steps 11000 --thermo 1000
  --check-drift 1e-4)
"$L" "${drift[@]}" --json "$R/runs/drift_safe_c20.json" >"$R/drift_safe.log" 2>&1
echo "drift, default check: rc $? $(grep -m1 '^Drift check' "$R/drift_safe.log")"
"$L" "${drift[@]}" "${inlj[@]}" --json "$R/runs/drift_inlj_c20.json" >"$R/drift_inlj.log" 2>&1
echo "drift, every 20 check no: rc $? $(grep -m1 '^Drift check' "$R/drift_inlj.log")"
here=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
if ls "$here"/.whl/openmm-*.whl >/dev/null 2>&1; then
  python3 -m pip install -q --no-index --no-deps --no-compile --upgrade --target /tmp/openmm_site "$here"/.whl/*.whl \
    >"$R/pip.log" 2>&1
  PYTHONPATH=/tmp/openmm_site timeout 300 python3 "$here/benchmarks/peers/openmm_lj.py" --cells "${SIZES[@]}" \
    --precision single --json "$R/openmm_lj.json" 2>&1 | tail -"${#SIZES[@]}"
fi
