#!/usr/bin/env bash
# cellint::mpi on the GPU machine, one GPU per rank (docs/mpi.md):
#   check    the carried OpenMPI installed; the list test on the GPU; the LJ demo over every GPU against the
#            single-rank run (--check-serial: double and float, full and half lists, cells); CHECKS (';'-separated option
#            sets): only those runs, on as many ranks as GPUs (2 at least), without the tests and the runs of 4 and 8
#            ranks (a short check where time is short)
#   scaling  in.lj in float: the one-GPU demo (cellint_lj_cuda) beside weak scaling (2,048,000 atoms per GPU) and strong
#            scaling (16,384,000 atoms) on 1, 2, 4 ... GPUs, and the weak runs again without the overlap of ghost
#            positions with interior rows (--overlap off), through the host, and with --breakdown (phases)
#   skin     the weak runs again with a skin of 0.5 (and the one-GPU demo beside them)
#   repeat   the weak runs with and without overlap, alternated, ROUNDS times (default 3): the run-to-run spread
#   margin   the weak runs with ghost margins 0 (every list rebuild redistributes), 0.3 and 0.6 (or MARGINS; the
#            default is 0.9), alternated, ROUNDS times (default 2), with --breakdown runs of 0 and 0.6 (BREAKDOWN_MARGINS)
#   shape    the weak runs with the box grown as a cube and with the one-GPU box replicated along x (as LAMMPS
#            runs in.lj's weak scaling), alternated, ROUNDS times (default 2)
#   ab       two builds of the MPI demo alternated, ROUNDS times (default 3), weak scaling in each of SHAPES (default
#            "replicate cube"): A_BIN, the baseline (default BIN's cellint_lj_mpi_cuda_a), and B_BIN, the build under
#            test (default BIN's cellint_lj_mpi_cuda), with A_ARGS and B_ARGS added to their runs; medians in ab.txt
#   breakdown  the weak runs of each of SHAPES with --breakdown (the phases, a redistribution's parts and their time in
#            MPI calls; B_ARGS added)
#   variants the weak run at the most GPUs, the one-GPU box replicated, with --breakdown, once for each of VARIANTS
#            (';'-separated option sets; leading VAR=value words go to the environment); NSYS=1: then a 300-step run
#            under nsys, its CUDA API summary per rank
#   shared   A_BIN and B_BIN (as ab) alternated ROUNDS times (default 2), RANKS ranks (default 2) on however many GPUs,
#            the one-GPU box replicated, with --breakdown: a redistribution's parts where multi-GPU machines are not lent
#   options  the weak runs (WEAK_SHAPE, default replicate) once for each of VARIANTS (as above), alternated ROUNDS
#            times (default 3); medians, list rebuilds and redistributions in options.txt
#   timeline the weak run, the one-GPU box replicated, on each GPU count with --timeline (each rank's GPU timeline of
#            the overlapped steps), once for each of VARIANTS as above (default: none)
#   ahead    --ghosts-ahead: the checks against the single-rank run over every transport, then the weak runs (the box
#            replicated) without and with it alternated ROUNDS times (default 2) with --timeline, medians in ahead.txt
#            (one GPU: 2 ranks share it, flags forced)
#   gap      one GPU: cellint_lj_cuda beside the MPI demo on one rank (GAP_ARGS added; and baseline builds,
#            cellint_lj_cuda_a, cellint_lj_mpi_cuda_a and _b, where BIN has them), with and without --breakdown,
#            alternated ROUNDS times (default 2), medians in gap.txt; NCU=1: each kernel's GPU time per step (Nsight
#            Compute) in gap_kernels.txt; NSYS=1: their kernels and API calls under nsys, 300 steps each; TIMELINE=1:
#            the voting loop's --timeline on one rank (--overlap pack) in gap_timeline.txt
#   bash benchmarks/mpi_device.sh [check] [scaling] [skin] [repeat] [margin] [shape] [ab] [breakdown] [shared]
#                                 [variants] [options] [timeline] [ahead] [gap]
#   (default: check and scaling)
# The programs come built (BIN: cellint_lj_mpi_cuda, cellint_lj_cuda, neighbor_list_test_cuda, gpu_backend_test_cuda;
# default build-device/)
# and OpenMPI as Debian packages (DEBS, default .deps/openmpi-debs, from tools/carry_openmpi.sh): nothing can be
# installed from the network there. Files are unpacked into / only where none exists already.
set -uo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
OUT=${OUT:-$here/benchmarks/results/mpi-device}
BIN=${BIN:-$here/build-device}
DEBS=${DEBS:-$here/.deps/openmpi-debs}
STAGES=("$@")
[ ${#STAGES[@]} -eq 0 ] && STAGES=(check scaling)
mkdir -p "$OUT/runs"
log="$OUT/mpi_device.log"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1
export OMPI_MCA_pml=ob1 OMPI_MCA_btl=self,vader  # one node: shared memory, no network probing
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
say() { echo "== $*" | tee -a "$log"; }
# the path of an Nsight tool (nsys, ncu): on PATH, or where CUDA and Nsight install them; empty if none
nsight() { command -v "$1" || find /usr/local/cuda*/bin /opt/nvidia -name "$1" -type f -perm -u+x 2>/dev/null | head -1; }

install_openmpi() {
  if command -v mpiexec >/dev/null; then return; fi
  local stage
  stage=$(mktemp -d)
  for d in "$DEBS"/*.deb; do dpkg-deb -x "$d" "$stage"; done
  # (existing files, directories' permissions and symbolic links to directories, such as /lib, are left alone)
  (cd "$stage" && tar -cf - -- *) | tar -C / -xf - --skip-old-files --keep-directory-symlink
  for p in mpiexec mpirun; do [ -e /usr/bin/$p ] || ln -s orterun /usr/bin/$p; done
  ldconfig
  say "OpenMPI from $(find "$DEBS" -name "*.deb" | wc -l) carried packages: $(mpiexec --version 2>&1 | head -1)"
}

gpus=$(nvidia-smi -L 2>/dev/null | wc -l)
say "$(date -u +%FT%TZ) $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | head -1), $gpus GPUs, $(nproc) cores"
install_openmpi
M=(mpiexec --bind-to none)
ranks=()
for n in 1 2 4 8; do [ "$n" -le "$gpus" ] && ranks+=("$n"); done

# a VARIANTS entry split into its leading VAR=value words (envs) and the options after them (opts)
split_variant() {
  envs=() opts=()
  local w
  for w in $1; do
    if [[ $w == *=* && ${#opts[@]} -eq 0 ]]; then envs+=("$w"); else opts+=("$w"); fi
  done
}

# the LJ demo on np ranks, 100 steps with the options $1, against the single-rank run (its --check-serial among them)
check_serial() {
  say "$np ranks: $1"
  # shellcheck disable=SC2086
  "${M[@]}" -n "$np" "$BIN/cellint_lj_mpi_cuda" --steps 100 --thermo 50 $1 2>&1 |
    grep -E 'cellint_lj_mpi:|^ +(0|100) |Loop time|Per step|Serial check|rror' | tee -a "$log"
}

# weak scaling with each value of one option in turn, ROUNDS times: alternate ROUNDS OPTION VALUE...
alternate() {
  local rounds=$1 opt=$2 round v
  shift 2
  for round in $(seq 1 "$rounds"); do
    for v in "$@"; do
      say "round $round, weak scaling, $opt $v"
      env "${common[@]}" ARGS="--precision float $opt $v" WEAK_ATOMS=2048000 STEPS=1000 KINDS=weak \
        TAG="${opt#--}_${v/./}_r${round}_" bash "$here/benchmarks/mpi_scaling.sh" "${ranks[@]}" 2>&1 |
        grep -E 'efficiency|rc [1-9]' | tee -a "$log"
    done
  done
}

for stage in "${STAGES[@]}"; do
  case $stage in
  check)
    np=$gpus; [ "$np" -lt 2 ] && np=2
    if [ -n "${CHECKS:-}" ]; then
      IFS=';' read -ra sets <<<"$CHECKS"
      for a in "${sets[@]}"; do
        check_serial "$a"
      done
      continue
    fi
    if [ -x "$BIN/gpu_backend_test_cuda" ]; then
      say "GPU backend tests (SideStream included)"
      "$BIN/gpu_backend_test_cuda" 2>&1 | tail -3 | tee -a "$log"
    fi
    if [ -x "$BIN/neighbor_list_test_cuda" ]; then
      say "neighbour-list tests on the GPU (set_targets and ListPart included)"
      "$BIN/neighbor_list_test_cuda" '[lists]' 2>&1 | tail -3 | tee -a "$log"
    fi
    for a in "--precision double --cells 12 --check-serial 1e-9" "--precision double --cells 12 --overlap off --check-serial 1e-9" \
             "--precision double --cells 12 --overlap on --check-serial 1e-9" \
             "--precision double --cells 12 --ghost-margin 0 --check-serial 1e-9" \
             "--precision double --cells 12 --ghost-margin 0.6 --check-serial 1e-9" \
             "--precision double --cells 12 --redistribute any --check-serial 1e-9" \
             "--precision double --cells 12 --neigh-trigger pairs --steps 300 --check-serial 1e-9" \
             "--precision double --cells 12 --ghost-margin 0 --neigh-trigger pairs --steps 300 --check-serial 1e-9" \
             "--precision float --cells 52 --check-serial 1e-3" \
             "--precision float --cells 20 --check-serial 1e-3" \
             "--precision mixed --cells 20 --check-serial 1e-3" "--precision float --cells 20 --list none --check-serial 1e-3" \
             "--precision double --cells 12 --list half --check-serial 1e-9"; do
      check_serial "$a"
    done
    # ghosts through two and three axes, several ranks per GPU where GPUs are fewer: by events there (a shared GPU),
    # by flags with CELLINT_MPI_IPC_FLAGS=1 (no MPS here); and slabs, where ranks 0 and 2 are not neighbours (the
    # migration's counts go between neighbours only)
    for d in "4 2,2,1 -" "4 2,2,1 1" "8 2,2,2 1" "4 4,1,1 -"; do
      set -- $d
      e=()
      [ "$3" = 1 ] && e=(CELLINT_MPI_IPC_FLAGS=1)
      say "$1 ranks on $gpus GPUs, --ranks $2 ${e[*]}: --precision double --cells 12 --check-serial 1e-9"
      env ${e[@]+"${e[@]}"} "${M[@]}" -n "$1" "$BIN/cellint_lj_mpi_cuda" --steps 100 --thermo 50 --precision double \
        --cells 12 --ranks "$2" --breakdown --check-serial 1e-9 2>&1 |
        grep -E 'cellint_lj_mpi:|Per step|changed ranks|Serial check|rror' |
        tee -a "$log"
    done
    for e in "CELLINT_MPI_IPC_FLAGS=0" "CELLINT_MPI_IPC_FLAGS=0 CELLINT_MPI_IPC_EVENTS=0" CELLINT_MPI_INBOX_BYTES=512; do
      say "$np ranks, peer copies ordered by events, or by the hosts, or inboxes too small at first ($e): " \
        "--precision double --cells 12 --breakdown"
      # shellcheck disable=SC2086
      env $e "${M[@]}" -n "$np" "$BIN/cellint_lj_mpi_cuda" --steps 100 --thermo 50 --precision double \
        --cells 12 --breakdown --check-serial 1e-9 2>&1 |
        grep -E 'cellint_lj_mpi:|Per step|changed ranks|Serial check|rror' | tee -a "$log"
    done
    ;;
  scaling)
    say "one GPU, no MPI: cellint_lj_cuda, 2,048,000 atoms, float"
    "$BIN/cellint_lj_cuda" --cells 80 --precision float --steps 500 --thermo 0 --json "$OUT/runs/lj_cuda_2M.json" 2>&1 |
      grep -E 'Loop time|Neighbour list' | tee -a "$log"
    common=(BIN="$BIN/cellint_lj_mpi_cuda" OUT="$OUT/runs" LAUNCH="${M[*]}")
    say "weak scaling, 2,048,000 atoms per GPU"
    env "${common[@]}" ARGS="--precision float" WEAK_ATOMS=2048000 STEPS=1000 KINDS=weak \
      bash "$here/benchmarks/mpi_scaling.sh" "${ranks[@]}" 2>&1 | tee -a "$log"
    say "weak scaling without overlap (--overlap off)"
    env "${common[@]}" ARGS="--precision float --overlap off" WEAK_ATOMS=2048000 STEPS=1000 KINDS=weak \
      TAG=nooverlap_ bash "$here/benchmarks/mpi_scaling.sh" "${ranks[@]}" 2>&1 | tee -a "$log"
    say "weak scaling, ghosts' positions through the host (CELLINT_MPI_IPC=0)"
    env "${common[@]}" CELLINT_MPI_IPC=0 ARGS="--precision float" WEAK_ATOMS=2048000 STEPS=1000 KINDS=weak \
      TAG=staged_ bash "$here/benchmarks/mpi_scaling.sh" "${ranks[@]}" 2>&1 | tee -a "$log"
    say "weak scaling with --breakdown (the phases)"
    env "${common[@]}" ARGS="--precision float --breakdown" WEAK_ATOMS=2048000 STEPS=1000 KINDS=weak TAG=breakdown_ \
      bash "$here/benchmarks/mpi_scaling.sh" "${ranks[@]}" 2>&1 | tee -a "$log"
    say "strong scaling, 16,384,000 atoms"
    env "${common[@]}" ARGS="--precision float --breakdown" STRONG_CELLS=160 STRONG_STEPS=500 KINDS=strong \
      bash "$here/benchmarks/mpi_scaling.sh" "${ranks[@]}" 2>&1 | tee -a "$log"
    grep -h 'Per step\|One rebuild' "$OUT"/runs/*.log | tee -a "$log" >/dev/null
    ;;
  skin)
    common=(BIN="$BIN/cellint_lj_mpi_cuda" OUT="$OUT/runs" LAUNCH="${M[*]}")
    say "weak scaling with a skin of 0.5 (fewer rebuilds, longer rows), with --breakdown"
    env "${common[@]}" ARGS="--precision float --skin 0.5 --breakdown" WEAK_ATOMS=2048000 STEPS=1000 KINDS=weak \
      TAG=skin05_ bash "$here/benchmarks/mpi_scaling.sh" "${ranks[@]}" 2>&1 | tee -a "$log"
    say "one GPU, no MPI, skin 0.5"
    "$BIN/cellint_lj_cuda" --cells 80 --precision float --steps 1000 --thermo 0 --skin 0.5 \
      --json "$OUT/runs/lj_cuda_2M_skin05.json" 2>&1 | grep -E 'Loop time|Neighbour list' | tee -a "$log"
    grep -h 'Per step' "$OUT"/runs/skin05_*.log | tee -a "$log" >/dev/null
    ;;
  repeat)
    common=(BIN="$BIN/cellint_lj_mpi_cuda" OUT="$OUT/runs" LAUNCH="${M[*]}")
    alternate "${ROUNDS:-3}" --overlap on off
    ;;
  margin)
    common=(BIN="$BIN/cellint_lj_mpi_cuda" OUT="$OUT/runs" LAUNCH="${M[*]}")
    # shellcheck disable=SC2086
    alternate "${ROUNDS:-2}" --ghost-margin ${MARGINS:-0 0.3 0.6}
    for m in ${BREAKDOWN_MARGINS-0 0.6}; do
      say "weak scaling with --breakdown, --ghost-margin $m"
      env "${common[@]}" ARGS="--precision float --breakdown --ghost-margin $m" WEAK_ATOMS=2048000 STEPS=1000 \
        KINDS=weak TAG="breakdown_m${m/./}_" bash "$here/benchmarks/mpi_scaling.sh" "${ranks[@]}" 2>&1 | tee -a "$log"
    done
    grep -h 'Per step\|One rebuild' "$OUT"/runs/breakdown_m*.log | tee -a "$log" >/dev/null
    ;;
  shape)
    common=(BIN="$BIN/cellint_lj_mpi_cuda" OUT="$OUT/runs" LAUNCH="${M[*]}")
    for round in $(seq 1 "${ROUNDS:-2}"); do
      for shape in cube replicate; do
        say "round $round, weak scaling, box grown as a $shape"
        env "${common[@]}" ARGS="--precision float" WEAK_ATOMS=2048000 WEAK_SHAPE=$shape STEPS=1000 KINDS=weak \
          TAG="shape_${shape}_r${round}_" bash "$here/benchmarks/mpi_scaling.sh" "${ranks[@]}" 2>&1 |
          grep -E 'efficiency|rc [1-9]' | tee -a "$log"
      done
    done
    ;;
  ab)
    A_BIN=${A_BIN:-$BIN/cellint_lj_mpi_cuda_a} B_BIN=${B_BIN:-$BIN/cellint_lj_mpi_cuda}
    for round in $(seq 1 "${ROUNDS:-3}"); do
      for v in A B; do
        bin=$A_BIN args=${A_ARGS:-}
        [ $v = B ] && bin=$B_BIN args=${B_ARGS:-}
        for shape in ${SHAPES:-replicate cube}; do
          say "round $round, $v ($(basename "$bin") $args), weak scaling, box grown as a $shape"
          env BIN="$bin" OUT="$OUT/runs" LAUNCH="${M[*]}" ARGS="--precision float $args" WEAK_ATOMS=2048000 \
            WEAK_SHAPE="$shape" STEPS=1000 KINDS=weak TAG="ab_${v}_${shape}_r${round}_" \
            bash "$here/benchmarks/mpi_scaling.sh" "${ranks[@]}" 2>&1 | grep -E 'efficiency|rc [1-9]' | tee -a "$log"
        done
      done
    done
    python3 - "$OUT/runs" <<'EOF' | tee "$OUT/ab.txt" | tee -a "$log"
import glob, json, os, statistics, sys
runs = {}
for f in sorted(glob.glob(os.path.join(sys.argv[1], "ab_*_weak_np*.json"))):
    _, v, shape, rnd, _, np = os.path.basename(f)[:-5].split("_")
    r = json.load(open(f))
    runs.setdefault((shape, v, int(np[2:])), []).append(r["atom_steps_per_s"])
for shape in sorted({k[0] for k in runs}):
    for v in ("A", "B"):
        one = statistics.median(runs.get((shape, v, 1), [0]))
        cols = []
        for np in sorted(n for s, w, n in runs if s == shape and w == v):
            rates = runs[(shape, v, np)]
            med = statistics.median(rates)
            eff = med / (np * one) if one else 0
            cols.append(f"{np} GPUs {med:.4g} ({' '.join(f'{x:.4g}' for x in rates)}) {100 * eff:.1f} %")
        print(f"{shape:9} {v}: " + "; ".join(cols))
EOF
    ;;
  breakdown)
    bin=$BIN/cellint_lj_mpi_cuda
    for shape in ${SHAPES:-replicate cube}; do
      say "weak scaling with --breakdown, box grown as a $shape ($(basename "$bin"))"
      env BIN="$bin" OUT="$OUT/runs" LAUNCH="${M[*]}" ARGS="--precision float --breakdown ${B_ARGS:-}" \
        WEAK_ATOMS=2048000 WEAK_SHAPE="$shape" STEPS=1000 KINDS=weak TAG="breakdown_${shape}_" \
        bash "$here/benchmarks/mpi_scaling.sh" "${ranks[@]}" 2>&1 | tee -a "$log"
      grep -h -A1 'Per step\|One rebuild' "$OUT"/runs/breakdown_"${shape}"_*.log | tee -a "$log"
    done
    ;;
  shared)
    # (where fewer GPUs are lent than ranks are wanted: the ranks share them, so this times a redistribution's parts,
    # mostly waits and latencies, not the scaling)
    A_BIN=${A_BIN:-$BIN/cellint_lj_mpi_cuda_a} B_BIN=${B_BIN:-$BIN/cellint_lj_mpi_cuda} np=${RANKS:-2}
    for round in $(seq 1 "${ROUNDS:-2}"); do
      for v in A B; do
        bin=$A_BIN
        [ $v = B ] && bin=$B_BIN
        say "round $round, $v ($(basename "$bin")), $np ranks on $gpus GPUs, the one-GPU box replicated, --breakdown"
        env ${SHARED_ENV:-} "${M[@]}" -n "$np" "$bin" --cells 80 --replicate "$np,1,1" --steps 1000 --thermo 0 \
          --precision float --breakdown --json "$OUT/runs/shared_${v}_r${round}.json" >"$OUT/runs/shared_${v}_r$round.log" 2>&1
        grep -E 'Loop time|Per step|One rebuild|of which|migration \(ms\)|changed ranks|rror' \
          "$OUT/runs/shared_${v}_r$round.log" | tee -a "$log"
      done
    done
    ;;
  variants)
    np=${ranks[${#ranks[@]}-1]}
    IFS=';' read -ra vs <<<"${VARIANTS:---ghost-margin 0.3}"
    i=0
    for v in "${vs[@]}"; do
      i=$((i + 1))
      split_variant "$v"
      say "variant $i, $np GPUs, the one-GPU box replicated, --breakdown: $v"
      env ${envs[@]+"${envs[@]}"} "${M[@]}" -n "$np" "$BIN/cellint_lj_mpi_cuda" --cells 80 --replicate "$np,1,1" \
        --steps 1000 --thermo 0 --precision float --breakdown ${opts[@]+"${opts[@]}"} >"$OUT/runs/variant_$i.log" 2>&1
      grep -E 'Loop time|Per step|One rebuild|of which|rror' "$OUT/runs/variant_$i.log" | tee -a "$log"
    done
    if [ "${NSYS:-0}" = 1 ]; then
      nsys=$(nsight nsys)
      if [ -z "$nsys" ]; then
        say "no nsys on this machine"
      else
        say "nsys ($nsys): CUDA API and MPI calls of each rank, 300 steps"
        "${M[@]}" -n "$np" "$nsys" profile -t cuda,mpi --mpi-impl=openmpi -o "$OUT/runs/nsys_%q{OMPI_COMM_WORLD_RANK}" \
          --force-overwrite true "$BIN/cellint_lj_mpi_cuda" --cells 80 --replicate "$np,1,1" --steps 300 --thermo 0 \
          --precision float >"$OUT/runs/nsys.log" 2>&1
        for f in "$OUT"/runs/nsys_*.nsys-rep; do
          "$nsys" stats -q -r cuda_api_sum "$f" 2>&1 | head -30 | tee -a "$log"
          rm -f "$f" "${f%.nsys-rep}.sqlite"
        done
      fi
    fi
    ;;
  ahead)
    # --ghosts-ahead (the ghosts' positions packed before the kick, as it will move them): the checks against the
    # single-rank run over every transport (ranks sharing a GPU: flags forced with CELLINT_MPI_IPC_FLAGS=1), then the
    # weak runs (2,048,000 atoms per rank, the box replicated, float) without and with it, alternated ROUNDS times
    # (default 2), on as many ranks as GPUs (2 sharing one where there is one; flags forced there too), with
    # --timeline; medians in ahead.txt
    np=$gpus; [ "$np" -lt 2 ] && np=2
    # (first the same check without it: a failure below is then the ahead exchange's, or not)
    say "$np ranks, CELLINT_MPI_IPC_FLAGS=1: --precision double --cells 12 --ghosts-ahead off --check-serial 1e-9"
    CELLINT_MPI_IPC_FLAGS=1 "${M[@]}" -n "$np" "$BIN/cellint_lj_mpi_cuda" --steps 100 --thermo 50 --precision double \
      --cells 12 --ghosts-ahead off --check-serial 1e-9 2>&1 | grep -E 'Per step|Serial check|rror' | tee -a "$log"
    for e in CELLINT_MPI_IPC_FLAGS=1 CELLINT_MPI_IPC_FLAGS=0 "CELLINT_MPI_IPC_FLAGS=0 CELLINT_MPI_IPC_EVENTS=0" \
             CELLINT_MPI_IPC=0; do
      sets=("--precision double --cells 12")
      [ "$e" = CELLINT_MPI_IPC_FLAGS=1 ] && sets+=("--precision double --cells 12 --overlap on"
        "--precision double --cells 12 --overlap off" "--precision double --cells 12 --neigh-trigger pairs --steps 300"
        "--precision float --cells 20" "--precision mixed --cells 20")
      for a in "${sets[@]}"; do
        tol=1e-9; [[ $a == *double* ]] || tol=1e-3
        say "$np ranks, $e: $a --ghosts-ahead on --check-serial $tol"
        # shellcheck disable=SC2086
        env $e "${M[@]}" -n "$np" "$BIN/cellint_lj_mpi_cuda" --steps 100 --thermo 50 $a --ghosts-ahead on \
          --check-serial $tol 2>&1 | grep -E 'Per step|Serial check|rror' | tee -a "$log"
      done
    done
    for d in "4 2,2,1" "4 4,1,1" "8 2,2,2"; do
      set -- $d
      say "$1 ranks on $gpus GPUs, --ranks $2 CELLINT_MPI_IPC_FLAGS=1: --precision double --cells 12 --ghosts-ahead on"
      CELLINT_MPI_IPC_FLAGS=1 "${M[@]}" -n "$1" "$BIN/cellint_lj_mpi_cuda" --steps 100 --thermo 50 --precision double \
        --cells 12 --ranks "$2" --ghosts-ahead on --check-serial 1e-9 2>&1 | grep -E 'Per step|Serial check|rror' |
        tee -a "$log"
    done
    for round in $(seq 1 "${ROUNDS:-2}"); do
      for v in off on; do
        say "round $round, $np ranks on $gpus GPUs, 2,048,000 atoms each, the box replicated, --ghosts-ahead $v"
        CELLINT_MPI_IPC_FLAGS=1 "${M[@]}" -n "$np" "$BIN/cellint_lj_mpi_cuda" --cells 80 --replicate "$np,1,1" \
          --ranks "$np,1,1" --precision float --steps 1000 --thermo 0 --timeline --ghosts-ahead "$v" \
          --json "$OUT/runs/ahead_${v}_r$round.json" >"$OUT/runs/ahead_${v}_r$round.log" 2>&1
        grep -E -A3 'Loop time|timeline|rror' "$OUT/runs/ahead_${v}_r$round.log" | tee -a "$log"
      done
    done
    python3 - "$OUT/runs" <<'EOF' | tee "$OUT/ahead.txt" | tee -a "$log"
import glob, json, os, statistics, sys
for v in ("off", "on"):
    r = [json.load(open(f))["atom_steps_per_s"] for f in sorted(glob.glob(os.path.join(sys.argv[1], f"ahead_{v}_r*.json")))]
    if r:
        print(f"--ghosts-ahead {v}: {statistics.median(r):.4g} atom-steps/s ({' '.join(f'{x:.4g}' for x in r)})")
EOF
    ;;
  gap)
    # one GPU: the single-GPU loop (cellint_lj_cuda) beside the MPI loop on one rank, 2,048,000 atoms in float,
    # alternated ROUNDS times (default 2), the MPI loop also with --breakdown; NSYS=1: then 300 steps of each under nsys,
    # their GPU kernels and CUDA API calls summed (where the one-rank MPI loop spends its time that the other does not)
    for round in $(seq 1 "${ROUNDS:-2}"); do
      for b in cellint_lj_cuda_a cellint_lj_cuda; do  # (_a: a baseline build, where BIN has one)
        [ -x "$BIN/$b" ] || continue
        say "round $round, $b, 2,048,000 atoms, float, 1000 steps"
        "$BIN/$b" --cells 80 --precision float --steps 1000 --thermo 0 \
          --json "$OUT/runs/gap_single${b#cellint_lj_cuda}_r$round.json" 2>&1 | grep -E 'Loop time|Neighbour list|rror' |
          tee -a "$log"
      done
      for b in cellint_lj_mpi_cuda_a cellint_lj_mpi_cuda_b cellint_lj_mpi_cuda; do
        [ -x "$BIN/$b" ] || continue
        for bd in "" --breakdown; do
          say "round $round, $b on 1 rank, the same ${bd:-without --breakdown} ${GAP_ARGS:-}"
          # shellcheck disable=SC2086
          "${M[@]}" -n 1 "$BIN/$b" --cells 80 --steps 1000 --thermo 0 --precision float $bd ${GAP_ARGS:-} \
            --json "$OUT/runs/gap_${b}${bd:+_bd}_r$round.json" >"$OUT/runs/gap_${b}${bd:+_bd}_r$round.log" 2>&1
          grep -E -A1 'Loop time|Per step|One rebuild|rror' "$OUT/runs/gap_${b}${bd:+_bd}_r$round.log" | tee -a "$log"
        done
      done
    done
    if [ "${TIMELINE:-0}" = 1 ]; then
      say "the MPI loop on 1 rank with --timeline (events around each phase of the steps without a rebuild)"
      # shellcheck disable=SC2086
      "${M[@]}" -n 1 "$BIN/cellint_lj_mpi_cuda" --cells 80 --steps 1000 --thermo 0 --precision float --timeline \
        --overlap pack ${GAP_ARGS:-} 2>&1 | grep -E -A2 'timeline|Loop time|rror' | tee "$OUT/gap_timeline.txt" | tee -a "$log"
    fi
    python3 - "$OUT/runs" <<'EOF' | tee "$OUT/gap.txt" | tee -a "$log"
import glob, json, os, re, statistics, sys
rates = {}
for f in sorted(glob.glob(os.path.join(sys.argv[1], "gap_*_r*.json"))):
    name = re.sub(r"_r[0-9]+$", "", os.path.basename(f)[4:-5])
    rates.setdefault(name, []).append(json.load(open(f))["atom_steps_per_s"])
one = statistics.median(rates.get("single", [0]))
for name, r in sorted(rates.items()):
    med = statistics.median(r)
    print(f"{name:32} {med:.4g} atom-steps/s ({' '.join(f'{x:.4g}' for x in r)})" +
          (f", {100 * (med / one - 1):+.1f} % against cellint_lj_cuda" if one and name != "single" else ""))
EOF
    if [ "${NCU:-0}" = 1 ]; then
      # each kernel's GPU time per step: runs of 60 and 160 steps under Nsight Compute (the clocks and caches of a run
      # without it), the difference over 100 steps (setup and first steps cancel; list rebuilds are averaged in);
      # cellint_lj_cuda with --graph no, whose kicks are not joined (a separate Kick kernel the graph would not run)
      ncu=$(nsight ncu)
      [ -z "$ncu" ] && say "no ncu on this machine"
      for steps in ${ncu:+60 160}; do
        "$ncu" --csv --log-file "$OUT/runs/gap_ncu_single_$steps.csv" --metrics gpu__time_duration.sum \
          --cache-control none --clock-control none "$BIN/cellint_lj_cuda" --cells 80 --precision float --graph no \
          --steps "$steps" --thermo 0 >/dev/null 2>&1
        # shellcheck disable=SC2086
        "${M[@]}" -n 1 "$ncu" --csv --log-file "$OUT/runs/gap_ncu_mpi_$steps.csv" --metrics gpu__time_duration.sum \
          --cache-control none --clock-control none "$BIN/cellint_lj_mpi_cuda" --cells 80 --precision float \
          --steps $steps --thermo 0 ${GAP_ARGS:-} >/dev/null 2>&1
      done
      [ -n "$ncu" ] && python3 - "$OUT/runs" <<'EOF' | tee "$OUT/gap_kernels.txt" | tee -a "$log"
import collections, csv, os, re, sys
def kernels(path):
    t = collections.defaultdict(lambda: [0, 0.0])
    rows = [l for l in open(path) if l.startswith('"')]
    for r in csv.DictReader(rows):
        if r.get("Metric Name") != "gpu__time_duration.sum":
            continue
        name = re.sub(r"\b(cellint|detail|lj|std)::", "", r["Kernel Name"])
        name = re.sub(r"\(.*", "", name)[:110]
        scale = {"nsecond": 1e-3, "ns": 1e-3, "usecond": 1, "us": 1, "msecond": 1e3, "ms": 1e3}.get(r["Metric Unit"], 1e-3)
        t[name][0] += 1
        t[name][1] += float(r["Metric Value"].replace(",", "")) * scale
    return t
for prog in ("single", "mpi"):
    a = kernels(os.path.join(sys.argv[1], f"gap_ncu_{prog}_60.csv"))
    b = kernels(os.path.join(sys.argv[1], f"gap_ncu_{prog}_160.csv"))
    rows = []
    for k in set(a) | set(b):
        n = (b.get(k, [0, 0])[0] - a.get(k, [0, 0])[0]) / 100
        us = (b.get(k, [0, 0])[1] - a.get(k, [0, 0])[1]) / 100
        rows.append((us, n, k))
    rows.sort(reverse=True)
    print(f"== {prog}: GPU time per step, {sum(r[0] for r in rows):.1f} us in {sum(r[1] for r in rows):.2f} launches")
    for us, n, k in rows:
        if abs(us) >= 0.05 or n:
            print(f"{us:9.2f} us {n:6.2f} launches  {k}")
EOF
    fi
    if [ "${NSYS:-0}" = 1 ]; then
      nsys=$(nsight nsys)
      if [ -z "$nsys" ]; then
        say "no nsys on this machine"
      else
        say "nsys ($nsys): 300 steps of each, GPU kernels and CUDA API calls"
        "$nsys" profile -t cuda -o "$OUT/runs/gap_single" --force-overwrite true "$BIN/cellint_lj_cuda" --cells 80 \
          --precision float --steps 300 --thermo 0 >"$OUT/runs/gap_nsys.log" 2>&1
        # shellcheck disable=SC2086
        "${M[@]}" -n 1 "$nsys" profile -t cuda,mpi --mpi-impl=openmpi -o "$OUT/runs/gap_mpi" --force-overwrite true \
          "$BIN/cellint_lj_mpi_cuda" --cells 80 --steps 300 --thermo 0 --precision float ${GAP_ARGS:-} \
          >>"$OUT/runs/gap_nsys.log" 2>&1
        for f in "$OUT"/runs/gap_single.nsys-rep "$OUT"/runs/gap_mpi.nsys-rep; do
          say "$(basename "$f")"
          "$nsys" stats -q -r cuda_gpu_kern_sum,cuda_gpu_mem_time_sum,cuda_api_sum "$f" 2>&1 |
            cut -c1-220 | head -90 | tee -a "$log"
          rm -f "$f" "${f%.nsys-rep}.sqlite"
        done
      fi
    fi
    ;;
  options)
    IFS=';' read -ra vs <<<"${VARIANTS:-}"
    [ ${#vs[@]} -eq 0 ] && vs=("")
    for round in $(seq 1 "${ROUNDS:-3}"); do
      i=0
      for v in "${vs[@]}"; do
        i=$((i + 1))
        split_variant "$v"
        say "round $round, option set $i, weak scaling: ${v:-(as built)}"
        env ${envs[@]+"${envs[@]}"} BIN="$BIN/cellint_lj_mpi_cuda" OUT="$OUT/runs" LAUNCH="${M[*]}" \
          ARGS="--precision float ${opts[*]-}" WEAK_ATOMS=2048000 WEAK_SHAPE="${WEAK_SHAPE:-replicate}" STEPS=1000 \
          KINDS=weak TAG="options_${i}_r${round}_" bash "$here/benchmarks/mpi_scaling.sh" "${ranks[@]}" 2>&1 |
          grep -E 'efficiency|rc [1-9]' | tee -a "$log"
      done
    done
    VARIANTS=${VARIANTS:-} python3 - "$OUT/runs" <<'EOF' | tee "$OUT/options.txt" | tee -a "$log"
import glob, json, os, statistics, sys
runs = {}
for f in sorted(glob.glob(os.path.join(sys.argv[1], "options_*_weak_np*.json"))):
    parts = os.path.basename(f)[:-5].split("_")
    runs.setdefault((int(parts[1]), int(parts[-1][2:])), []).append(json.load(open(f)))
names = os.environ["VARIANTS"].split(";")
for i in sorted({k[0] for k in runs}):
    ones = [r["atom_steps_per_s"] for r in runs.get((i, 1), [])]
    one = statistics.median(ones) if ones else 0
    cols = []
    for np in sorted(n for j, n in runs if j == i):
        rs = runs[(i, np)]
        rates = [r["atom_steps_per_s"] for r in rs]
        med = statistics.median(rates)
        eff = ", %.1f %%" % (100 * med / (np * one)) if one and np > 1 else ""
        cols.append("%d GPUs %.4g (%s%s; rebuilds %s, with redistribution %s)" % (
            np, med, " ".join("%.4g" % x for x in rates), eff, " ".join(str(r["rebuilds"]) for r in rs),
            " ".join(str(r["redistributions"]) for r in rs)))
    print("%d [%s]: %s" % (i, names[i - 1] if i <= len(names) else "", "; ".join(cols)))
EOF
    ;;
  timeline)
    IFS=';' read -ra vs <<<"${VARIANTS:-}"
    [ ${#vs[@]} -eq 0 ] && vs=("")
    i=0
    for v in "${vs[@]}"; do
      i=$((i + 1))
      split_variant "$v"
      for np in "${ranks[@]}"; do
        say "timeline $i, $np GPUs, the one-GPU box replicated: ${v:-(as built)}"
        env ${envs[@]+"${envs[@]}"} "${M[@]}" -n "$np" "$BIN/cellint_lj_mpi_cuda" --cells 80 --replicate "$np,1,1" \
          --steps 1000 --thermo 0 --precision float --timeline ${opts[@]+"${opts[@]}"} >"$OUT/runs/timeline_${i}_np$np.log" 2>&1
        grep -E 'Loop time|rank [0-9]|rror' "$OUT/runs/timeline_${i}_np$np.log" | tee -a "$log"
      done
    done
    ;;
  *) echo "unknown stage $stage (check, scaling, skin, repeat, margin, shape, ab, breakdown, shared, variants, options, timeline)"; exit 1 ;;
  esac
done
cp "$OUT"/runs/*lj_mpi_scaling*.json "$OUT"/ 2>/dev/null
tar -C "$OUT" -czf "$OUT/runs.tar.gz" runs && rm -rf "$OUT/runs"
say "done: $(ls "$OUT")"
