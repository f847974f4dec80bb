#!/usr/bin/env bash
# A/B of the LJ demo's list path on one CUDA GPU, in one call: the working tree against another tree's headers
# (e.g. the previous commit's `include/`, exported with `git archive HEAD~1 include | tar -x -C /tmp/base`; with its
# `examples/` too, that tree's demo), both built
# with nvcc the same way, run alternately (A B A B ...) at each size; the median rate of each, and with ncu present
# the per-kernel times of both at every size (Nsight Compute, 60 steps after the first 100 launches). The last round's
# JSON of each stays as a_c<cells>.json and b_c<cells>.json.
#   bash tools/ab_lists.sh BASE_DIR [cells ...]      (default cells: 25 80; results under $OUT or /tmp/ab)
# Environment: ROUNDS [3], EXTRA (demo options for both, e.g. "--precision mixed"), NCU [1; 0: no profiles], NVCC_B
# (extra nvcc options for B only: with BASE_DIR `.` B is the working tree built with a macro, e.g. -DNDEBUG), REUSE
# [0; 1: keep the two binaries a run before left in $OUT], LJ_BIN (one built demo as both A and B, nothing built;
# BASE_DIR is then ignored) with A_OPTS and B_OPTS (demo options for A only and B only, e.g. "--stage-sources off").
set -uo pipefail
BASE=${1:?usage: tools/ab_lists.sh BASE_DIR [cells ...]}
shift
SIZES=("$@")
[ ${#SIZES[@]} -eq 0 ] && SIZES=(25 80)
R=${OUT:-/tmp/ab}
mkdir -p "$R"
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee "$R/gpu.txt"
flags=(-O3 -std=c++17 -arch=sm_90 --expt-relaxed-constexpr -lineinfo -Iexamples)
# LJ_BIN: one demo for both; REUSE=1: the binaries a run before left here
if [ -n "${LJ_BIN:-}" ]; then
  ln -sf "$(realpath "$LJ_BIN")" "$R/lj_a"
  ln -sf "$(realpath "$LJ_BIN")" "$R/lj_b"
elif ! { [ "${REUSE:-0}" = 1 ] && [ -x "$R/lj_a" ] && [ -x "$R/lj_b" ]; }; then
  nvcc "${flags[@]}" ${NVCC_B:-} -Iinclude examples/lj/lj_main.cu -o "$R/lj_b" >"$R/build_b.log" 2>&1 &
  # the base tree's demo too when it has one (then A is that tree as a whole)
  if [ -f "$BASE/examples/lj/lj_main.cu" ]; then
    nvcc "${flags[@]/-Iexamples/-I$BASE/examples}" -I"$BASE/include" "$BASE/examples/lj/lj_main.cu" -o "$R/lj_a" \
      >"$R/build_a.log" 2>&1 &
  else
    nvcc "${flags[@]}" -I"$BASE/include" examples/lj/lj_main.cu -o "$R/lj_a" >"$R/build_a.log" 2>&1 &
  fi
  wait
fi
[ -x "$R/lj_a" ] && [ -x "$R/lj_b" ] || { tail -20 "$R"/build_*.log; exit 1; }
steps_for() { case $1 in 20|25) echo 4000;; 40|50) echo 2000;; 64|80) echo 400;; 126) echo 100;; 160) echo 50;; *) echo 60;; esac; }
# rate JSON COMMAND...: runs the demo, keeps its JSON (the last round's stays) and prints its rate
rate() { local j=$1; shift; "$@" --json "$j" >/dev/null 2>&1 && python3 -c "import json;print(json.load(open('$j'))['atom_steps_per_s'])"; }
for c in "${SIZES[@]}"; do
  a=() b=()
  for _ in $(seq "${ROUNDS:-3}"); do
    a+=("$(rate "$R/a_c$c.json" "$R/lj_a" --cells "$c" --steps "$(steps_for "$c")" --thermo 0 --precision float ${EXTRA:-} ${A_OPTS:-})")
    b+=("$(rate "$R/b_c$c.json" "$R/lj_b" --cells "$c" --steps "$(steps_for "$c")" --thermo 0 --precision float ${EXTRA:-} ${B_OPTS:-})")
  done
  python3 - "$c" "${a[*]}" "${b[*]}" <<'PY' | tee -a "$R/ab.txt"
import statistics, sys
c, a, b = int(sys.argv[1]), [float(x) for x in sys.argv[2].split()], [float(x) for x in sys.argv[3].split()]
n = 4 * c ** 3
ma, mb = statistics.median(a), statistics.median(b)
print("cells %3d (%d atoms): A %.4g  B %.4g atom-steps/s (%.0f / %.0f steps/s)  B/A %.3f" % (c, n, ma, mb, ma / n, mb / n, mb / ma))
PY
done
if [ "${NCU:-1}" = 1 ] && command -v ncu >/dev/null; then
  here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
  for v in a b; do
    echo "== $v"
    opts=${A_OPTS:-}
    [ "$v" = b ] && opts=${B_OPTS:-}
    LJ_BIN="$R/lj_$v" CELLS="${SIZES[*]}" EXTRA="${EXTRA:-} $opts" bash "$here/profile_lists.sh" "$R/prof_$v"
  done
fi
