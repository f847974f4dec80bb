#!/usr/bin/env bash
# Weak and strong scaling of cellint_lj_mpi (in.lj decomposed over MPI ranks): one JSON record per run with
# `scaling` ("weak" or "strong"), `device`, `ranks`, `gpus` (0: CPU ranks), `atoms`, `atom_steps_per_s`,
# `efficiency` and the time per step by phase, in $OUT/lj_mpi_scaling.json.
#   bash benchmarks/mpi_scaling.sh [RANKS...]        (default: 1 2; BIN: the program, default build/examples/lj/...)
# Weak: about WEAK_ATOMS atoms per rank (fcc cells per side rounded, so the count per rank is reported as run);
# efficiency = rate per rank / rate of one rank. Strong: STRONG_CELLS^3 x 4 atoms on every count; efficiency =
# rate / (ranks x rate of one rank). STEPS steps each (default 50; STRONG_STEPS for strong), thermo at the end only.
# ARGS: more options for every run (e.g. "--backend cuda --precision float"; the GPU program is cellint_lj_mpi_cuda,
# one GPU per rank); KINDS: "weak strong" (default) or one of them; TAG: a prefix for the run names.
# WEAK_SHAPE: cube (default: the box grows as a cube, WEAK_ATOMS x ranks in all) or replicate (the one-rank box
# replicated along x, --replicate RANKS,1,1, as LAMMPS runs in.lj for weak scaling: each rank holds that box).
set -uo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
BIN=${BIN:-$here/build/examples/lj/cellint_lj_mpi}
OUT=${OUT:-$here/benchmarks/results/lj-mpi-$(date -u +%Y%m%dT%H%M%SZ)}
STEPS=${STEPS:-50}
WEAK_ATOMS=${WEAK_ATOMS:-32000}
WEAK_SHAPE=${WEAK_SHAPE:-cube}
case $WEAK_SHAPE in cube | replicate) ;; *) echo "WEAK_SHAPE must be cube or replicate, got '$WEAK_SHAPE'"; exit 1 ;; esac
STRONG_CELLS=${STRONG_CELLS:-20}
STRONG_STEPS=${STRONG_STEPS:-$STEPS}
ARGS=${ARGS:-}
KINDS=${KINDS:-weak strong}
TAG=${TAG:-}
RANKS=("$@")
[ ${#RANKS[@]} -eq 0 ] && RANKS=(1 2)
LAUNCH=${LAUNCH:-mpiexec}
export OMPI_ALLOW_RUN_AS_ROOT=${OMPI_ALLOW_RUN_AS_ROOT:-1} OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=${OMPI_ALLOW_RUN_AS_ROOT_CONFIRM:-1}
[ -x "$BIN" ] || { echo "no $BIN (cmake --build build --target cellint_lj_mpi, or BIN=...)"; exit 1; }
mkdir -p "$OUT"
records=()
for kind in $KINDS; do
  for np in "${RANKS[@]}"; do
    steps=$STEPS
    shape=()
    if [ "$kind" = weak ] && [ "$WEAK_SHAPE" = replicate ]; then
      cells=$(python3 -c "print(max(5, round(($WEAK_ATOMS / 4) ** (1 / 3))))")
      shape=(--replicate "$np,1,1")
    elif [ "$kind" = weak ]; then
      cells=$(python3 -c "print(max(5, round(($WEAK_ATOMS * $np / 4) ** (1 / 3))))")
    else
      cells=$STRONG_CELLS
      steps=$STRONG_STEPS
    fi
    tag="${TAG}${kind}_np${np}"
    # shellcheck disable=SC2086
    $LAUNCH -n "$np" "$BIN" --cells "$cells" ${shape[@]+"${shape[@]}"} --steps "$steps" --thermo 0 $ARGS --json "$OUT/$tag.json" \
      >"$OUT/$tag.log" 2>&1
    echo "$kind, $np ranks, $cells^3 unit cells ${shape[*]+${shape[*]}}: rc $? $(grep -m1 '^Loop time' "$OUT/$tag.log")"
    records+=("$OUT/$tag.json")
  done
done
name=lj_mpi_scaling.json
[ "$KINDS" = "weak strong" ] || name="lj_mpi_scaling_${KINDS// /_}.json"
python3 - "$OUT/${TAG}$name" "${records[@]}" <<'EOF'
import json, os, sys
out, files = sys.argv[1], sys.argv[2:]
runs = []
for f in files:
    if not os.path.exists(f):
        continue
    r = json.load(open(f))
    r["scaling"] = "weak" if "weak_np" in os.path.basename(f) else "strong"
    r["run"] = os.path.basename(f)[:-5]
    r["gpus"] = 0 if r["backend"] in ("host", "emulated") else r["ranks"]
    runs.append(r)
for kind in ("weak", "strong"):
    base = [r for r in runs if r["scaling"] == kind and r["ranks"] == 1]
    for r in runs:
        if r["scaling"] != kind or not base:
            continue
        b = base[0]["atom_steps_per_s"]
        r["efficiency"] = r["atom_steps_per_s"] / (r["ranks"] * b) if b > 0 else None
json.dump(runs, open(out, "w"), indent=1)
for r in runs:
    print(f'{r["scaling"]:6} ranks {r["ranks"]} atoms {r["atoms"]:>9} {r["atom_steps_per_s"]:.4g} atom-steps/s'
          f' efficiency {r.get("efficiency") or 0:.2f}')
print("wrote", out)
EOF
