#!/usr/bin/env bash
# The Python package on the device machine: build it with CUDA, run its tests (the GPU ones too) and the side-by-side
# benchmark, in one call. Results under $OUT (default out/).
#   bash benchmarks/python_device.sh [build|tests|bench|example|all]...
# Wheels of packages the device image lacks (vesin) travel in .whl/ (see docs/python.md).
set -uo pipefail
cd "$(dirname "$0")/.."
OUT=${OUT:-out}
mkdir -p "$OUT"
OUT=$(cd "$OUT" && pwd)
export PYTHONUNBUFFERED=1
steps=${*:-all}
has() { [[ " $steps " == *" $1 "* || " $steps " == *" all "* ]]; }
t0=$(date +%s)
say() { printf '==== %s (%s s)\n' "$1" "$(( $(date +%s) - t0 ))"; }

nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee "$OUT/gpu.txt"
if ls .whl/*.whl >/dev/null 2>&1; then
  python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl &&
    export PYTHONPATH=/tmp/site
fi

if has build; then
  say "build (CUDA, sm_90)"
  CMAKE_ARGS="-DCELLINT_PY_CUDA=ON -DCMAKE_CUDA_ARCHITECTURES=90" CMAKE_BUILD_PARALLEL_LEVEL=$(nproc) \
    python3 -m pip install --no-build-isolation --no-deps -v ./python >"$OUT/build.log" 2>&1 ||
    { tail -n 40 "$OUT/build.log"; exit 1; }
  python3 -c "import cellint; print('cellint', cellint.__version__, 'cuda', cellint.cuda_available())"
fi
if has tests; then
  say "tests"
  (cd python && python3 -m pytest -q -rs tests 2>&1 | tee "$OUT/pytest.log" | tail -n 15)
fi
if has bench; then
  say "benchmark"
  python3 python/benchmarks/bench_pairs.py --gpu --stages --json "$OUT/python_gpu.json" 2>&1 | tee "$OUT/bench.log"
fi
if has example; then
  say "example on the GPU"
  python3 python/examples/melt_rdf.py --cells 20 --steps 400 --device cuda --png "$OUT/rdf_gpu.png" 2>&1 |
    tee "$OUT/example.log" | tail -n 4
fi
say "done"
