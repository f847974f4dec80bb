#!/usr/bin/env bash
# Builds and installs the Python package (CPU build unless nvcc and a GPU are both found), then runs its tests.
#   bash python/test.sh
# Installs from PyPI what it needs: scikit-build-core and nanobind (build), numpy and pytest (tests), and ase and
# matscipy, whose neighbour lists the tests compare against (skipped when they cannot be installed).
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3}
export CMAKE_BUILD_PARALLEL_LEVEL=${CMAKE_BUILD_PARALLEL_LEVEL:-${JOBS:-2}}
$PY -m pip install -q --disable-pip-version-check numpy pytest
$PY -m pip install -q --disable-pip-version-check ase matscipy || echo "python/test.sh: ase/matscipy not installed: their comparisons are skipped"
$PY -m pip install -q --disable-pip-version-check ./python
cd python
$PY -m pytest -q -rs tests
