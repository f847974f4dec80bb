#!/usr/bin/env bash
# in.lj on the CPU, side by side: Debian's LAMMPS (2 MPI ranks, -sf opt) against cellint_lj (Host backend, all
# cores, half Verlet list), at 32,000 and 256,000 atoms, best of ROUNDS runs each, alternating. Both use in.lj's
# neighbour settings (skin 0.3, rebuilt every 20 steps without a check) and double precision; cellint_lj also in
# float. Where cellint_lj_mpi is built beside cellint_lj, it runs too, as LAMMPS does: 2 MPI ranks of one thread,
# half lists (cellint::mpi; skin 0.3, rebuilt when a vote of the ranks asks, so more often than every 20 steps).
# Prints the ratios and writes benchmarks/results/<OUT_NAME>.json (one record per program, size and precision).
#   bash benchmarks/peers/lammps_cpu.sh [path/to/cellint_lj]
# Needs: apt-get install lammps openmpi-bin. Environment: ROUNDS [3], STEPS [100], OUT_NAME [cpu-lammps-<date>], BUILD_NOTE
# (how cellint_lj was built, for the records; default "Release (-O3), generic x86-64").
set -uo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
LJ=${1:-$here/build/examples/lj/cellint_lj}
LJ_MPI=$(dirname "$LJ")/cellint_lj_mpi
ROUNDS=${ROUNDS:-3}
STEPS=${STEPS:-100}
OUT=$here/benchmarks/results/${OUT_NAME:-cpu-lammps-$(date -u +%Y-%m-%d)}.json
command -v lmp >/dev/null || { echo "no lmp: apt-get install lammps openmpi-bin"; exit 1; }
tmp=$(mktemp -d)
sed "s/^run.*/run $STEPS/" "$here/examples/lj/in.lj" >"$tmp/in.lj"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_btl_vader_single_copy_mechanism=none
lammps_rate() {  # atom-steps/s of one LAMMPS run at scale $1 (in.lj's x = y = z)
  (cd "$tmp" && mpirun -np 2 --oversubscribe lmp -sf opt -var x "$1" -var y "$1" -var z "$1" -in in.lj -log none \
    -screen lmp.out >/dev/null 2>&1)
  awk '/^Loop time of/ {print $9 * $12 / $4}' "$tmp/lmp.out"
}
cellint_rate() {  # atom-steps/s of one cellint_lj run: $1 unit cells per side, $2 precision
  "$LJ" --backend host --cells "$1" --steps "$STEPS" --thermo 0 --precision "$2" --list half --neigh-every 20 \
    --neigh-check no --json "$tmp/c.json" >/dev/null 2>&1
  python3 -c "import json; print(json.load(open('$tmp/c.json'))['atom_steps_per_s'])"
}
mpi_rate() {  # atom-steps/s of one cellint_lj_mpi run on 2 ranks: $1 unit cells per side, $2 precision
  OMP_NUM_THREADS=1 mpirun -np 2 --oversubscribe "$LJ_MPI" --backend host --cells "$1" --steps "$STEPS" --thermo 0 \
    --precision "$2" --list half --json "$tmp/m.json" >/dev/null 2>&1
  python3 -c "import json; print(json.load(open('$tmp/m.json'))['atom_steps_per_s'])"
}
programs=(cellint_lj)
[ -x "$LJ_MPI" ] && programs+=(cellint_lj_mpi)
best() { sort -g | tail -1; }
echo "[" >"$OUT"
first=1
for scale in 1 2; do
  cells=$((20 * scale))
  atoms=$((4 * cells * cells * cells))
  l=() d=() f=() md=() mf=()
  for ((r = 0; r < ROUNDS; ++r)); do
    l+=("$(lammps_rate $scale)")
    d+=("$(cellint_rate $cells double)")
    f+=("$(cellint_rate $cells float)")
    if [ -x "$LJ_MPI" ]; then
      md+=("$(mpi_rate $cells double)")
      mf+=("$(mpi_rate $cells float)")
    fi
  done
  L=$(printf '%s\n' "${l[@]}" | best)
  for program in "${programs[@]}"; do
    for prec in double float; do
      case $program/$prec in
      cellint_lj/double) C=$(printf '%s\n' "${d[@]}" | best) ;;
      cellint_lj/float) C=$(printf '%s\n' "${f[@]}" | best) ;;
      cellint_lj_mpi/double) C=$(printf '%s\n' "${md[@]}" | best) ;;
      *) C=$(printf '%s\n' "${mf[@]}" | best) ;;
      esac
      ratio=$(python3 -c "print(round($C / $L, 3))")
      printf 'in.lj %8d atoms: LAMMPS (2 ranks, opt, double) %.4g, %s %s %.4g atom-steps/s: ratio %s\n' \
        "$atoms" "$L" "$program" "$prec" "$C" "$ratio"
      [ $first = 1 ] || echo "," >>"$OUT"
      first=0
      printf '  {"program": "%s", "peer": "lammps -sf opt, 2 MPI ranks, double", "atoms": %d, "precision": "%s", "steps": %d, "cellint_atom_steps_per_s": %.6g, "lammps_atom_steps_per_s": %.6g, "ratio_vs_lammps": %s, "cpus": %d, "rounds": %d, "build": "%s"}' \
        "$program" "$atoms" "$prec" "$STEPS" "$C" "$L" "$ratio" "$(nproc)" "$ROUNDS" "${BUILD_NOTE:-Release (-O3), generic x86-64}" >>"$OUT"
    done
  done
done
echo "]" >>"$OUT"
echo "wrote $OUT"
rm -rf "$tmp"
