#!/usr/bin/env bash
# Full Nsight Compute sections (stall reasons, pipes, memory) of the kernels that bound issue 13 and 14's goals, on one
# CUDA GPU: the list's row build and the full-list pair kernel of the LJ demo at 2,048,000 atoms (float and mixed), and
# the all-pairs gravity kernel at 10^6 particles; the SASS of both demos for reading the inner loops.
#   bash tools/ncu_detail.sh        (results under $OUT, default /tmp/ncu-detail; ONLY=lj or gravity: one demo)
set -uo pipefail
R=${OUT:-/tmp/ncu-detail}
mkdir -p "$R"
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader | tee "$R/gpu.txt"
flags=(-O3 -std=c++17 -arch=sm_90 --expt-relaxed-constexpr -lineinfo -Iinclude -Iexamples)
ONLY=${ONLY:-}
[ "$ONLY" != gravity ] && { nvcc "${flags[@]}" examples/lj/lj_main.cu -o "$R/lj" >"$R/build_lj.log" 2>&1 & }
[ "$ONLY" != lj ] && { nvcc "${flags[@]}" -Xcompiler=-fopenmp examples/gravity2d/gravity2d_main.cu -o "$R/grav" \
  >"$R/build_grav.log" 2>&1 & }
wait
# the functions of cuobjdump's listing whose (mangled) names match the regex
sass_of() { awk -v re="$1" '/Function : /{keep = ($0 ~ re)} keep'; }
# sections: one report each, printed as text
prof() {  # name regex skip demo-args...
  local name=$1 re=$2 skip=$3
  shift 3
  ncu --set full --kernel-name-base demangled -k "regex:$re" --launch-skip "$skip" --launch-count 1 -f -o "$R/$name" \
    "$@" >"$R/$name.run.log" 2>&1
  ncu --import "$R/$name.ncu-rep" --page details --print-details all >"$R/$name.txt" 2>&1
  echo "$name: $(grep -m1 -E 'Duration' "$R/$name.txt")"
}
if [ -x "$R/lj" ]; then
  for p in float mixed; do
    prof "build_$p" ListBuildRowsStaged 0 "$R/lj" --cells 80 --steps 20 --thermo 0 --precision $p
    prof "pair_$p" 'ListInteract<' 10 "$R/lj" --cells 80 --steps 20 --thermo 0 --precision $p
  done
  cuobjdump -sass "$R/lj" | sass_of 'ListInteract|ListBuildRowsStaged' | gzip >"$R/lj.sass.gz"
fi
if [ -x "$R/grav" ]; then
  prof gravity 'AllPairsInteract<cellint::PlummerGravity' 0 "$R/grav" --n 1000000 --steps 1 --kernel-reps 1 \
    --threads 512
  cuobjdump -sass "$R/grav" | sass_of 'AllPairsInteract' | gzip >"$R/grav.sass.gz"
fi
rm -f "$R/lj" "$R/grav" "$R"/*.ncu-rep
