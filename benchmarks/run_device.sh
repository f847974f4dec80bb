#!/usr/bin/env bash
# The whole benchmark campaign on one CUDA GPU in one call (sized for an H100: about 6 minutes
# including the build; every part is also bounded by a time budget so the call ends in time).
#
#   bash benchmarks/run_device.sh [PART ...]
#
# PART (default: all = build ceilings paper cost scaling scan lj sph):
#   build     configure + build interaction_bench_cuda, ceilings, the block-scan benchmark and the
#             LJ and SPH demos (Release, sm_90, -j16)
#   ceilings  measured FP32 FMA rate and device-memory bandwidth         -> ceilings.json
#   paper     paper section 7: d in 2..32, 1/10/100 per cell, float, 3D, every strategy + Auto,
#             functors paper (LennardJonesPaper) and lj (force with cutoff test), each also
#             with FastMath (paper-fast, lj-fast: the approximate reciprocal)
#                                                                          -> interaction_paper.json
#   cost      paper Fig. 8 cost variants cheap / paper / lj150 on d in {4,16,32} x {1,10,100}
#                                                                          -> interaction_cost.json
#   scaling   N = 1e3 .. 1e8 at 10 per cell (stops at the memory limit), atomic and stable
#             binning timed too                                          -> interaction_scaling.json
#   scan      block prefix sum against cub::BlockScan, n = 27 .. 4096     -> block_scan.json
#   lj        LJ demo: the energy drift over 1,000 steps (shifted, 32K atoms) in float, mixed and
#             double, then in.lj at 32K/256K/2M/16M atoms in each         -> lj_*.json
#   sph       SPH dam break: 1M particles float/double 2,000 steps, 80K particles to T = 2.6 checked
#                                                                          -> sph_*.json, sph_front_200_*.csv
# Everything goes to $OUT (default benchmarks/results/run-<UTC date>) with run_device.log.
#
# Environment:
#   OUT                  output folder
#   BUILD_DIR            build folder [/tmp/cellint-bench-build]
#   CELLINT_BUILD_TESTS  passed to CMake [OFF] (the device machine has no Catch2)
#   CUDA_ARCH            CMAKE_CUDA_ARCHITECTURES [90]
#   CELLINT_BENCH_BIN    the benchmarks/ folder of a prebuilt build tree (interaction_bench_cuda,
#                        ceilings, primitives/; the demos are looked up in its ../examples): skip the build
#   CELLINT_COMMIT       commit recorded in the JSON (else git rev-parse, else "unknown"); set it
#                        when the copy of the tree on the GPU machine carries stale git metadata
#   BUDGET_S             seconds the whole script may take [560]
#   BENCH_ARGS           extra arguments for every interaction_bench_cuda call
#   JOBS                 build parallelism [16]
set -uo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$here"
t_start=$(date +%s)
BUDGET_S=${BUDGET_S:-560}
stamp=$(date -u +%Y%m%dT%H%M%SZ)
OUT=${OUT:-$here/benchmarks/results/run-$stamp}
BUILD_DIR=${BUILD_DIR:-/tmp/cellint-bench-build}
CUDA_ARCH=${CUDA_ARCH:-90}
JOBS=${JOBS:-16}
BENCH_ARGS=${BENCH_ARGS:-}
mkdir -p "$OUT"
log="$OUT/run_device.log"
exec > >(tee -a "$log") 2>&1

if [ -z "${CELLINT_COMMIT:-}" ]; then
  CELLINT_COMMIT=$(git -C "$here" rev-parse --short=12 HEAD 2>/dev/null || echo unknown)
fi
export CELLINT_COMMIT

parts=("$@")
[ ${#parts[@]} -eq 0 ] && parts=(all)
want() {
  local p
  for p in "${parts[@]}"; do [ "$p" = "$1" ] || [ "$p" = all ] && return 0; done
  return 1
}
for p in "${parts[@]}"; do
  case $p in build|ceilings|paper|cost|scaling|scan|lj|sph|all) ;; *) echo "run_device.sh: unknown part '$p'"; exit 2 ;; esac
done

elapsed() { echo $(( $(date +%s) - t_start )); }
left() { echo $(( BUDGET_S - $(elapsed) )); }
say() { printf '[run_device %4ss] %s\n' "$(elapsed)" "$*"; }

# Estimated seconds per part on an H100 (printed up front; the budget enforces the bound).
declare -A est=([build]=150 [ceilings]=10 [paper]=150 [cost]=80 [scaling]=80 [scan]=15 [lj]=90 [sph]=90)
total=0
for p in build ceilings paper cost scaling scan lj sph; do
  if want $p; then
    if [ $p = build ] && [ -n "${CELLINT_BENCH_BIN:-}" ]; then continue; fi
    total=$(( total + ${est[$p]} ))
  fi
done
say "parts: ${parts[*]}; estimate ~${total}s on an H100; budget ${BUDGET_S}s; commit $CELLINT_COMMIT; out $OUT"
command -v nvidia-smi >/dev/null && nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.sm,clocks.max.sm,temperature.gpu,power.draw --format=csv 2>&1 | sed 's/^/  /'
# The SM clock, temperature, power and active throttle reasons once a second for the whole run
# (clocks.csv): a card that throttles under sustained load gives slow, noisy numbers that are
# not this library's; the summary at the end says whether it happened.
sampler=
if command -v nvidia-smi >/dev/null; then
  nvidia-smi --query-gpu=timestamp,clocks.sm,temperature.gpu,power.draw,clocks_throttle_reasons.active \
    --format=csv,noheader,nounits -l 1 >"$OUT/clocks.csv" 2>/dev/null &
  sampler=$!
fi

status=0
# run_part NAME SECONDS_RESERVED_FOR_LATER_PARTS CMD...: runs CMD with the time that is left.
run_part() {
  local name=$1 reserve=$2
  shift 2
  local t=$(( $(left) - reserve ))
  if [ $t -lt 15 ]; then
    say "SKIP $name: only $(left)s of the budget left"
    status=1
    return
  fi
  say "START $name (limit ${t}s): $*"
  local t0=$(date +%s)
  timeout -k 5 "$t" "$@"
  local rc=$?
  if [ $rc -eq 124 ] || [ $rc -eq 137 ]; then
    say "TIMEOUT $name after $(( $(date +%s) - t0 ))s (partial JSON kept)"
    status=1
  elif [ $rc -eq 77 ]; then
    say "SKIPPED $name: no usable GPU"
    status=1
  elif [ $rc -ne 0 ]; then
    say "DONE $name with exit code $rc after $(( $(date +%s) - t0 ))s (1 = check failures or errors: see above)"
    status=1
  else
    say "DONE $name in $(( $(date +%s) - t0 ))s"
  fi
}

# ---- build -------------------------------------------------------------------------------------
if [ -n "${CELLINT_BENCH_BIN:-}" ]; then
  BIN=$CELLINT_BENCH_BIN
  say "using prebuilt binaries in $BIN"
else
  BIN=$BUILD_DIR/benchmarks
  if want build || [ ! -x "$BIN/interaction_bench_cuda" ]; then
    say "configure + build in $BUILD_DIR (-j$JOBS)"
    t0=$(date +%s)
    if ! cmake -S "$here" -B "$BUILD_DIR" -DCMAKE_BUILD_TYPE=Release -DCELLINT_ENABLE_CUDA=ON \
         -DCMAKE_CUDA_ARCHITECTURES="$CUDA_ARCH" -DCELLINT_BUILD_TESTS="${CELLINT_BUILD_TESTS:-OFF}" \
         -DCELLINT_BUILD_EXAMPLES=ON -DCELLINT_BUILD_BENCHMARKS=ON -DCELLINT_FULL_MATRIX=ON >"$BUILD_DIR.configure.log" 2>&1; then
      tail -n 40 "$BUILD_DIR.configure.log"
      say "configure FAILED"
      exit 1
    fi
    if ! timeout $(( $(left) - 30 )) cmake --build "$BUILD_DIR" -j"$JOBS" --target interaction_bench_cuda ceilings \
         cellint_block_scan_bench cellint_lj_cuda cellint_sph_cuda \
         >"$BUILD_DIR.build.log" 2>&1; then
      grep -E "error|Error" "$BUILD_DIR.build.log" | head -n 40
      tail -n 20 "$BUILD_DIR.build.log"
      say "build FAILED"
      exit 1
    fi
    grep -iE "warning" "$BUILD_DIR.build.log" | sort -u | head -n 20
    say "built in $(( $(date +%s) - t0 ))s"
  fi
fi
for b in interaction_bench_cuda ceilings; do
  [ -x "$BIN/$b" ] || { say "missing $BIN/$b"; exit 1; }
done

# ---- runs ----------------------------------------------------------------------------------------
# Each part may use what is left of the budget minus a reserve for the parts after it, so that a
# slow part cannot starve the rest (a part cut short keeps the JSON written so far).
declare -A floor_s=([paper]=90 [cost]=60 [scaling]=60 [scan]=15 [lj]=60 [sph]=60)
reserve_after() {  # reserve_after PART: the floors of the wanted parts that follow PART
  local r=0 seen=0 p
  for p in ceilings paper cost scaling scan lj sph; do
    if [ $seen -eq 1 ] && want $p; then r=$(( r + ${floor_s[$p]:-0} )); fi
    [ $p = "$1" ] && seen=1
  done
  echo $r
}
ceil="$OUT/ceilings.json"
ceil_arg=()
if want ceilings; then
  run_part ceilings "$(reserve_after ceilings)" "$BIN/ceilings" --json "$ceil"
fi
[ -f "$ceil" ] && ceil_arg=(--ceilings "$ceil")

if want paper; then
  # shellcheck disable=SC2086
  run_part paper "$(reserve_after paper)" "$BIN/interaction_bench_cuda" --label paper --strategy all,auto \
    --functor paper,paper-fast,lj,lj-fast --cells 2,4,8,16,32 --ppc 1,10,100 --precision float --dim 3 --reps 200 --batches 5 \
    "${ceil_arg[@]}" --json "$OUT/interaction_paper.json" $BENCH_ARGS
fi
if want cost; then
  # shellcheck disable=SC2086
  run_part cost "$(reserve_after cost)" "$BIN/interaction_bench_cuda" --label cost --strategy all \
    --functor cheap,paper,lj150 --cells 4,16,32 --ppc 1,10,100 --precision float --dim 3 --reps 200 --batches 5 \
    "${ceil_arg[@]}" --json "$OUT/interaction_cost.json" $BENCH_ARGS
fi
if want scaling; then
  # shellcheck disable=SC2086
  run_part scaling 5 "$BIN/interaction_bench_cuda" --label scaling --scaling --scaling-min 1e3 --scaling-max 1e8 \
    --ppc 10 --strategy all,auto --functor paper --precision float --dim 3 --reps 200 --batches 5 --max-ms 1000 \
    --binning-stable \
    "${ceil_arg[@]}" --json "$OUT/interaction_scaling.json" $BENCH_ARGS
fi

export EX=$BIN/../examples OUT
if want scan; then
  run_part scan "$(reserve_after scan)" "$BIN/primitives/cellint_block_scan_bench" "$OUT/block_scan.json"
fi
# The demos: one process per run, each writing its JSON summary (commands as in docs/lj.md, docs/sph.md).
lj_all() {
  local B=$EX/lj/cellint_lj_cuda p c
  for p in float mixed double; do
    "$B" --cells 20 --shifted --equilibrate 200 --steps 1200 --thermo 200 --precision $p \
      --json "$OUT/lj_drift_$p.json" | tail -n 4 || return 1
  done
  for c in 20 40 80 160; do for p in float mixed double; do
    echo "--cells $c --precision $p"
    "$B" --cells $c --thermo 0 --precision $p --json "$OUT/lj_${c}_$p.json" | tail -n 3 || return 1
  done; done
}
sph_all() {
  local B=$EX/sph/cellint_sph_cuda p
  for p in float double; do
    "$B" --resolution 700 --precision $p --steps 2000 --progress 1000 --json "$OUT/sph_700_$p.json" | tail -n 6 || return 1
  done
  # validation to T = 2.6 (the CTest run's end: the surge has not reached the far wall yet)
  for p in float double; do
    "$B" --resolution 200 --precision $p --t-end 2.6 --check --front "$OUT/sph_front_200_$p.csv" \
      --progress 5000 --json "$OUT/sph_200_$p.json" | tail -n 9
  done
}
export -f lj_all sph_all
want lj && run_part lj "$(reserve_after lj)" bash -o pipefail -c lj_all
want sph && run_part sph "$(reserve_after sph)" bash -o pipefail -c sph_all

if [ -n "$sampler" ]; then
  kill "$sampler" 2>/dev/null
  # throttle reasons other than none (0x0) and idle (0x1), e.g. 0x4 power cap, 0x20 / 0x40 thermal
  n=$(wc -l <"$OUT/clocks.csv")
  if [ "$n" -gt 0 ]; then
    clocks=$(cut -d, -f2 "$OUT/clocks.csv" | tr -d ' ' | sort -n)
    throttled=$(cut -d, -f5 "$OUT/clocks.csv" | tr -d ' ' | grep -cvE '^0x0+[01]$')
    say "SM clock over $n samples: min $(echo "$clocks" | head -1) MHz, median $(echo "$clocks" | sed -n "$(( (n + 1) / 2 ))p") MHz; samples with throttling: $throttled"
  fi
fi
say "finished (status $status); files in $OUT:"
ls -l "$OUT" | sed 's/^/  /'
exit $status
