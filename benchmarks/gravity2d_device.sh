#!/usr/bin/env bash
# gravity2d on one CUDA GPU: builds cellint_gravity2d_cuda (BIN: use that binary instead), checks the two-body period
# and the disc's energy on the GPU, then the rate of the exact all-pairs method at 10^4 .. 10^6 particles (float, the
# hardware reciprocal square root; the force evaluation also timed alone with events) and writes one JSON per run.
#   bash benchmarks/gravity2d_device.sh        (results under $OUT, default benchmarks/results/gravity2d-<UTC date>)
set -uo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$here"
OUT=${OUT:-$here/benchmarks/results/gravity2d-$(date -u +%Y%m%dT%H%M%SZ)}
mkdir -p "$OUT"
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee "$OUT/gpu.txt"
G=${BIN:-}
if [ -z "$G" ]; then
  G=/tmp/cellint_gravity2d_cuda
  nvcc -O3 -std=c++17 -arch=sm_90 --expt-relaxed-constexpr -lineinfo -Iinclude -Iexamples -Xcompiler=-fopenmp \
    examples/gravity2d/gravity2d_main.cu -o "$G" >"$OUT/build.log" 2>&1 || { tail -20 "$OUT/build.log"; exit 1; }
fi
"$G" --init two-body --steps 7000 --dt 1e-3 --softening 0 --precision double --math exact --check-period 1e-5 \
  --check-energy 1e-9 >"$OUT/two_body.log" 2>&1
echo "two-body (double): rc $? $(grep -m1 '^Period check' "$OUT/two_body.log")"
"$G" --n 20000 --steps 200 --thermo 50 --precision mixed --check-energy 1e-5 --check-momentum 1e-6 \
  >"$OUT/disc_check.log" 2>&1
echo "disc 20,000 (mixed): rc $? $(grep -m1 '^Energy check' "$OUT/disc_check.log")"
# a rotating disc of 20,000 particles over about two turns of its middle (the picture in docs/gravity2d.md)
"$G" --n 20000 --steps 0 --snapshot "$OUT/disc_t0.csv" >/dev/null 2>&1
"$G" --n 20000 --steps 4000 --dt 5e-4 --thermo 1000 --precision mixed --snapshot "$OUT/disc_t2.csv" \
  >"$OUT/disc_t2.log" 2>&1
echo "disc picture run: rc $? $(grep -m1 '^Energy:' "$OUT/disc_t2.log")"
for run in "10000 400" "100000 100" "300000 12" "1000000 3"; do
  set -- $run
  "$G" --n "$1" --steps "$2" --kernel-reps 5 --json "$OUT/gravity2d_n$1.json" --snapshot "$OUT/snap_n$1.csv" \
    >"$OUT/gravity2d_n$1.log" 2>&1
  echo "n $1: rc $? $(grep -m1 '^Loop time' "$OUT/gravity2d_n$1.log")"
  grep -m1 '^Force evaluation' "$OUT/gravity2d_n$1.log"
done
# the kernel's shape at 10^6: block size (sources per tile) and targets per thread
for shape in "128 2" "512 2" "256 1" "256 4"; do
  set -- $shape
  "$G" --n 1000000 --steps 1 --kernel-reps 3 --threads "$1" --targets-per-thread "$2" \
    --json "$OUT/gravity2d_n1000000_t$1_k$2.json" >"$OUT/gravity2d_n1000000_t$1_k$2.log" 2>&1
  echo "n 1e6, $1 threads x $2 targets: $(grep -m1 '^Force evaluation' "$OUT/gravity2d_n1000000_t$1_k$2.log")"
done
rm -f "$OUT"/snap_n1000000.csv "$OUT"/snap_n300000.csv
