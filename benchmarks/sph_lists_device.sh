#!/usr/bin/env bash
# The SPH dam break on one CUDA GPU with Verlet lists against re-binning every step, in one call: builds
# cellint_sph_cuda, runs a/dx = 200 (87,218 particles) to T = 2.6 with the checks (float with a full list, float with
# cell lists chosen by Auto, double with a full list), the list skin at a/dx = 200 over 3,000 steps, and a/dx = 700
# (about 1M particles) for 2,000 steps both ways. Everything goes into $OUT/results.tgz.
#   bash benchmarks/sph_lists_device.sh
# Environment: OUT (default benchmarks/results/sph-lists-<UTC date>), BUILD_DIR [/tmp/cellint-sph], JOBS [16].
set -uo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$here"
FINAL=${OUT:-$here/benchmarks/results/sph-lists-$(date -u +%Y%m%dT%H%M%SZ)}
OUT=$(mktemp -d)
BUILD=${BUILD_DIR:-/tmp/cellint-sph}
mkdir -p "$FINAL"
exec > >(tee -a "$OUT/sph_lists_device.log") 2>&1
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader | tee "$OUT/gpu.txt"
extra=()
command -v ninja >/dev/null && extra+=(-G Ninja)
cmake -S . -B "$BUILD" -DCMAKE_BUILD_TYPE=Release -DCELLINT_ENABLE_CUDA=ON -DCMAKE_CUDA_ARCHITECTURES=90 \
  -DCELLINT_BUILD_EXAMPLES=ON -DCELLINT_BUILD_BENCHMARKS=OFF -DCELLINT_BUILD_TESTS=OFF "${extra[@]}" \
  >"$OUT/configure.log" 2>&1 || { tail -20 "$OUT/configure.log"; exit 1; }
cmake --build "$BUILD" -j"${JOBS:-16}" --target cellint_sph_cuda >"$OUT/build.log" 2>&1 ||
  { grep -E "error" -A3 "$OUT/build.log" | head -30; exit 1; }
S=$BUILD/examples/sph/cellint_sph_cuda
run() {  # name, options...
  local name=$1
  shift
  timeout 240 "$S" --progress 0 "$@" --json "$OUT/sph_$name.json" >"$OUT/sph_$name.log" 2>&1
  echo "$name: rc $? | $(grep -m1 '^Loop time' "$OUT/sph_$name.log" | sed 's/.*: //') | $(grep -m1 -E '^Neighbours|^Strategy' "$OUT/sph_$name.log")"
  grep -E "check|front at" "$OUT/sph_$name.log" | grep -iE "fail" | head -3
}
run 200_float_list --resolution 200 --t-end 2.6 --precision float --check --front "$OUT/sph_front_200_float_list.csv"
run 200_float_cells --resolution 200 --t-end 2.6 --precision float --check --list none
run 200_double_list --resolution 200 --t-end 2.6 --precision double --check
for skin in 0.1 0.25 0.5 1.0; do
  run "200_float_skin$skin" --resolution 200 --steps 3000 --precision float --skin $skin
done
run 200_float_cells_3000 --resolution 200 --steps 3000 --precision float --list none
run 700_float_list --resolution 700 --steps 2000 --precision float
run 700_float_cells --resolution 700 --steps 2000 --precision float --list none
(cd "$OUT" && tar czf "$FINAL/results.tgz" *.json *.log *.csv *.txt 2>/dev/null)
echo "done: $FINAL/results.tgz"
