#!/usr/bin/env bash
# Neighbour lists on one CUDA GPU in one call: builds the CUDA tests and the LJ demo, runs the list tests (and
# compute-sanitizer on them), then the LJ campaign - in.lj at 32K .. 16M atoms with cell lists (re-binned every step)
# against full and half Verlet lists, float and mixed - and OpenMM's rate on the same card beside it when its wheels
# were carried (.whl/, see benchmarks/peers/openmm_lj.py).
#   bash benchmarks/lists_device.sh [build|tests|lj|openmm ...]   (default: all)
# Environment: OUT (results; default benchmarks/results/lists-<UTC date>), BUILD_DIR [/tmp/cellint-lists],
# LJ_SIZES ["20 25 40 80 160"], JOBS [16].
set -uo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$here"
OUT=${OUT:-$here/benchmarks/results/lists-$(date -u +%Y%m%dT%H%M%SZ)}
FINAL=$OUT
OUT=$(mktemp -d)  # everything is written here, then packed into $FINAL/results.tgz (few files travel back)
BUILD=${BUILD_DIR:-/tmp/cellint-lists}
JOBS=${JOBS:-16}
mkdir -p "$OUT" "$FINAL"
# one archive (the device tool brings back a limited number of files), also when the run is cut short
pack() {
  (cd "$OUT" && tar czf "$FINAL/results.tgz" --exclude=build.log --exclude=configure.log *.json *.log *.txt 2>/dev/null)
}
trap pack EXIT
trap 'exit 143' TERM INT
exec > >(tee -a "$OUT/lists_device.log") 2>&1
parts=("$@")
[ ${#parts[@]} -eq 0 ] && parts=(build tests openmm lj)
want() { local p; for p in "${parts[@]}"; do [ "$p" = "$1" ] && return 0; done; return 1; }
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader | tee "$OUT/gpu.txt"
LJ=$BUILD/examples/lj/cellint_lj_cuda

if want build; then
  t0=$(date +%s)
  extra=()
  # the tests need Catch2 2 (carried in .deps: the machine's own Catch2 may be 3); without it, the demo only
  if [ -d .deps/usr/lib/cmake/Catch2 ]; then
    extra+=(-DCatch2_DIR="$PWD/.deps/usr/lib/cmake/Catch2")
  else
    extra+=(-DCELLINT_BUILD_TESTS=OFF)
  fi
  command -v ninja >/dev/null && extra+=(-G Ninja)
  cmake -S . -B "$BUILD" -DCMAKE_BUILD_TYPE=Release -DCELLINT_ENABLE_CUDA=ON -DCMAKE_CUDA_ARCHITECTURES=90 \
    -DCELLINT_BUILD_EXAMPLES=ON -DCELLINT_BUILD_BENCHMARKS=OFF "${extra[@]}" >"$OUT/configure.log" 2>&1 ||
    { tail -30 "$OUT/configure.log"; exit 1; }
  targets=(cellint_lj_cuda)
  [ -d .deps/usr/lib/cmake/Catch2 ] && targets+=(cellint_cuda_tests)
  cmake --build "$BUILD" -j"$JOBS" --target "${targets[@]}" >"$OUT/build.log" 2>&1 ||
    { grep -E "error" -A3 "$OUT/build.log" | head -40; exit 1; }
  echo "build: $(( $(date +%s) - t0 )) s"
fi

if want tests && [ -x "$BUILD/tests/cellint_cuda_tests" ]; then
  "$BUILD/tests/cellint_cuda_tests" --reporter compact "[lists]" >"$OUT/list_tests.log" 2>&1
  echo "list tests: exit $?; $(tail -1 "$OUT/list_tests.log")"
  grep -B2 -A12 FAILED "$OUT/list_tests.log" | head -40
  if command -v compute-sanitizer >/dev/null; then
    for tool in memcheck racecheck; do
      compute-sanitizer --tool $tool --error-exitcode 9 "$BUILD/tests/cellint_cuda_tests" "[lists][sanitize]" \
        >"$OUT/list_sanitize_$tool.log" 2>&1
      echo "compute-sanitizer $tool: exit $? $(grep -m1 -E 'ERROR SUMMARY|RACECHECK SUMMARY' "$OUT/list_sanitize_$tool.log")"
    done
  fi
fi

if want openmm && ls .whl/openmm-*.whl >/dev/null 2>&1; then
  python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl &&
    PYTHONPATH=/tmp/site PYTHONUNBUFFERED=1 timeout 150 python3 benchmarks/peers/openmm_lj.py --cells 20 25 80 \
      --precision single --json "$OUT/openmm_lj.json" 2>&1 | tail -5
fi
if want lj && [ -x "$LJ" ]; then
  # steps per size: about a second of loop at the expected rates
  steps_for() { case $1 in 20|25) echo 4000;; 40) echo 2000;; 80) echo 400;; *) echo 60;; esac; }
  for c in ${LJ_SIZES:-20 25 40 80 160}; do
    for prec in float mixed; do
      for mode in none full half; do
        [ "$c" = 160 ] && [ "$mode" = half ] && continue
        [ "$prec" = mixed ] && [ "$mode" = half ] && [ "$c" != 80 ] && continue
        j="$OUT/lj_${mode}_${prec}_c${c}.json"
        timeout 120 "$LJ" --cells "$c" --steps "$(steps_for "$c")" --thermo 0 --precision "$prec" --list "$mode" \
          --json "$j" >"$OUT/lj_${mode}_${prec}_c${c}.log" 2>&1
        rc=$?
        printf '%-5s %-6s %-4s cells %-3s rc %s  %s  %s\n' lj "$prec" "$mode" "$c" "$rc" \
          "$(grep -m1 '^Performance' "$OUT/lj_${mode}_${prec}_c${c}.log")" \
          "$(grep -m1 -E '^Neighbour list|^Strategy' "$OUT/lj_${mode}_${prec}_c${c}.log")"
      done
    done
  done
  # in.lj's own neighbour settings (LAMMPS: neigh_modify every 20 delay 0 check no), as the Warp script used
  for c in 25 80; do
    j="$OUT/lj_full20_float_c${c}.json"
    "$LJ" --cells $c --steps "$(steps_for $c)" --thermo 0 --precision float --list full --neigh-every 20 \
      --neigh-check no --json "$j" >"$OUT/lj_full20_float_c$c.log" 2>&1
    echo "lj float full every-20 cells $c: $(grep -m1 '^Performance' "$OUT/lj_full20_float_c$c.log")"
  done
  # without graphs (each kernel launched from the host), and other skins
  for c in 25 80; do
    "$LJ" --cells $c --steps "$(steps_for $c)" --thermo 0 --precision float --list full --graph no \
      --json "$OUT/lj_full_nograph_float_c$c.json" >"$OUT/lj_full_nograph_float_c$c.log" 2>&1
    echo "lj float full no-graph cells $c: $(grep -m1 '^Performance' "$OUT/lj_full_nograph_float_c$c.log")"
    for skin in 0.4 0.5 0.7; do
      "$LJ" --cells $c --steps "$(steps_for $c)" --thermo 0 --precision float --list full --skin $skin \
        --json "$OUT/lj_full_skin${skin}_float_c$c.json" >"$OUT/lj_full_skin${skin}_float_c$c.log" 2>&1
      echo "lj float full skin $skin cells $c: $(grep -m1 '^Performance' "$OUT/lj_full_skin${skin}_float_c$c.log") $(grep -m1 '^Neighbour' "$OUT/lj_full_skin${skin}_float_c$c.log")"
    done
  done
  # threads per row in the full-list pair kernel (ListOptions::row_threads; 0: automatic)
  for c in 20 25 40; do
    for rt in 1 2 4 8; do
      "$LJ" --cells $c --steps "$(steps_for $c)" --thermo 0 --precision float --list full --row-threads $rt \
        --json "$OUT/lj_full_rt${rt}_float_c$c.json" >"$OUT/lj_full_rt${rt}_float_c$c.log" 2>&1
      echo "lj float full row-threads $rt cells $c: $(grep -m1 '^Performance' "$OUT/lj_full_rt${rt}_float_c$c.log")"
    done
  done
  # row layout: rows (i * capacity + k) against the default columns (k * stride + i)
  for c in 25 80; do
    "$LJ" --cells $c --steps "$(steps_for $c)" --thermo 0 --precision float --list full --layout rows \
      --json "$OUT/lj_full_rows_float_c$c.json" >"$OUT/lj_full_rows_float_c$c.log" 2>&1
    echo "lj float full rows-layout cells $c: $(grep -m1 '^Performance' "$OUT/lj_full_rows_float_c$c.log")"
  done
  # where the time goes (per-phase timers wait for the device: slower than the runs above)
  for c in 25 80; do
    "$LJ" --cells $c --steps 1000 --thermo 0 --precision float --list full --breakdown >"$OUT/lj_breakdown_c$c.log" 2>&1
    echo "breakdown c$c: $(grep -m1 '^Breakdown' "$OUT/lj_breakdown_c$c.log")"
  done
  # energy drift: shifted LJ, 32,000 atoms, mixed precision, skin 0.3, lists reused, 10,000 steps
  "$LJ" --cells 20 --shifted --precision mixed --list full --equilibrate 1000 --steps 11000 --thermo 1000 \
    --check-drift 1e-4 --json "$OUT/lj_drift_full_mixed.json" >"$OUT/lj_drift_full_mixed.log" 2>&1
  echo "drift (full, mixed): rc $? $(grep -m1 '^Drift check' "$OUT/lj_drift_full_mixed.log")"
  head -12 "$OUT/lj_drift_full_mixed.log" | grep -E "^ +0 "
fi

echo "done: $FINAL/results.tgz"
