#!/usr/bin/env bash
# The CS267 2D particle simulator (examples/particles2d, docs/particles2d.md) on one CUDA GPU, in one call:
#  1. builds cellint_particles2d_cuda with nvcc (about 30 s; or takes a binary built elsewhere: BIN=path);
#  2. checks it on the GPU: the course's statistics (--check) and the O(N^2) reference (--reference);
#  3. the headline, 10^6 particles x 1,000 steps, three times in double and float (goal: <= 0.2 s on an H100),
#     and the list's skin at 10^6 (0.005, 0.01, 0.02, 0.03) and the steps without statistics (--stats-every 0);
#  4. the report's Table 2 (P100, 1M .. 150M particles), in double: 1,000 steps up to 16M, 100 steps from 20M on
#     (the table then gives the time of 1,000 steps as 10 x the measured one, marked), and 10^7 in float;
#  5. a summary table under $OUT: one row per run, the report's P100 time beside.
# Expected: about 3 minutes of runs on an H100 after the build (the largest, 150M particles, needs ~40 GB of GPU
# memory by estimate, ~250 bytes per particle, and ~25 s, most of it the host's set-up).
#   bash benchmarks/particles2d_device.sh [build|check|headline|table ...]   (default: all)
# Environment: OUT (results; default benchmarks/results/h100-particles2d-<UTC date>), BUILD_DIR [/tmp/cellint-p2d],
# BIN (a prebuilt cellint_particles2d_cuda; skips the build), SIZES (override the table's sizes, in millions).
set -uo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$here"
OUT=${OUT:-$here/benchmarks/results/h100-particles2d-$(date -u +%Y%m%dT%H%M%SZ)}
BUILD=${BUILD_DIR:-/tmp/cellint-p2d}
mkdir -p "$OUT" "$BUILD"
exec > >(tee -a "$OUT/particles2d_device.log") 2>&1
parts=("$@")
[ ${#parts[@]} -eq 0 ] && parts=(build check headline table)
want() { local p; for p in "${parts[@]}"; do [ "$p" = "$1" ] && return 0; done; return 1; }
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader | tee "$OUT/gpu.txt"
P2D=${BIN:-$BUILD/cellint_particles2d_cuda}

if want build && [ -z "${BIN:-}" ]; then
  # the same as the CMake target (cmake -S . -B build -DCELLINT_ENABLE_CUDA=ON -DCMAKE_CUDA_ARCHITECTURES=90
  # -DCELLINT_BUILD_TESTS=OFF && cmake --build build --target cellint_particles2d_cuda), without the configure step
  t0=$(date +%s)
  nvcc -std=c++17 -O3 -arch=sm_90 --expt-relaxed-constexpr -lineinfo -Xcompiler -fopenmp -Iinclude -Iexamples \
    examples/particles2d/particles2d_main.cu -o "$P2D" -lgomp >"$OUT/build.log" 2>&1 ||
    { grep -E "error" -A3 "$OUT/build.log" | head -40; exit 1; }
  echo "build: $(( $(date +%s) - t0 )) s"
fi
[ -x "$P2D" ] || { echo "no binary at $P2D (run the build part, or set BIN)"; exit 1; }

# run NAME OPTIONS...: one run with its JSON and its output kept; a run that fails or times out is reported, and the
# next one goes on
run() {
  local name=$1; shift
  timeout 300 "$P2D" --backend cuda "$@" --json "$OUT/$name.json" >"$OUT/$name.txt" 2>&1
  local rc=$?
  printf '%-28s rc=%d  %s\n' "$name" "$rc" "$(grep -E '^n = |Check:|Reference check:' "$OUT/$name.txt" | tr '\n' ' ')"
  [ $rc -eq 0 ] || tail -5 "$OUT/$name.txt"
}

if want check; then
  run check_n1000_double --n 1000 --steps 1000 --check
  run check_n1000_float --n 1000 --steps 1000 --check --precision float
  run reference_n400_double --n 400 --steps 250 --reference
  run reference_n400_float --n 400 --steps 50 --reference --precision float
  run check_n1000000_double --n 1000000 --steps 1000 --check
fi

if want headline; then
  for r in 1 2 3; do
    run "headline_double_$r" --n 1000000 --steps 1000
    run "headline_float_$r" --n 1000000 --steps 1000 --precision float
  done
  for s in 0.005 0.02 0.03; do run "skin${s}_double" --n 1000000 --steps 1000 --skin "$s"; done
  run nostats_double --n 1000000 --steps 1000 --stats-every 0
  run nostats_float --n 1000000 --steps 1000 --stats-every 0 --precision float
fi

if want table; then
  for m in ${SIZES:-1 2 4 8 10 16 20 32 40 64 80 100 120 140 150}; do
    steps=1000
    [ "$m" -ge 20 ] && steps=100
    run "table_${m}M_double" --n $((m * 1000000)) --steps $steps
  done
  run table_10M_float --n 10000000 --steps 1000 --precision float
fi

python3 - "$OUT" <<'PY' | tee "$OUT/summary.md"
import glob, json, os, sys
out = sys.argv[1]
# the report's Table 2: P100, 1,000 steps, wall time in s by millions of particles
p100 = {1: 2.07123, 2: 3.49473, 4: 6.4183, 8: 12.4431, 10: 15.3946, 16: 24.2205, 20: 30.2132, 32: 47.8294,
        40: 59.7026, 64: 95.445, 80: 121.034, 100: 162.12, 120: 205.123, 140: 248.194, 150: 269.91}
rows = []
for f in sorted(glob.glob(os.path.join(out, "*.json"))):
    try:
        j = json.load(open(f))
    except ValueError:
        continue
    rows.append((os.path.basename(f)[:-5], j))
print(f"# particles2d on {open(os.path.join(out, 'gpu.txt')).read().strip()}\n")
print("| run | particles | steps | precision | skin | s (loop) | s per 1,000 steps | P100 (report) | speed-up | "
      "us/step | rebuilds | absmin | absavg |")
print("|---|---|---|---|---|---|---|---|---|---|---|---|---|")
for name, j in sorted(rows, key=lambda r: (r[1]["particles"], r[0])):
    n, steps, s = j["particles"], j["steps"], j["seconds"]
    per1000 = s * 1000 / steps if steps else 0
    mark = "" if steps == 1000 else " (x%g)" % (1000 / steps)
    ref = p100.get(n // 1000000) if n % 1000000 == 0 else None
    ratio = "%.1fx" % (ref / per1000) if ref and per1000 > 0 and j["precision"] == "double" else ""
    print(f"| {name} | {n:,} | {steps} | {j['precision']} | {j['list']['skin']:g} | {s:.4g} | {per1000:.4g}{mark} | "
          f"{ref if ref else ''} | {ratio} | {j['us_per_step']:.4g} | {j['list']['rebuilds']} | "
          f"{j['absmin']:.4f} | {j['absavg']:.4f} |")
head = [j["seconds"] for name, j in rows if name.startswith("headline_double")]
if head:
    med = sorted(head)[len(head) // 2]
    print(f"\nHeadline, 10^6 particles x 1,000 steps, double: median {med:.4g} s "
          f"(goal <= 0.2 s: {'met' if med <= 0.2 else 'not met'}; the report's P100: 2.07 s)")
PY
