#!/usr/bin/env bash
# Generates the API reference from the Doxygen comments of include/cellint/ into
# build-apidocs/html (open build-apidocs/html/index.html) and fails if doxygen warns about
# anything: an undocumented public entity, a malformed command, a bad parameter name.
# Internals (detail/ directories, namespace cellint::detail) are neither documented nor checked.
#
#   bash tools/apidocs.sh            # exit status 0: no warning; 1: warnings (listed); 2: no doxygen
#
# Doxygen comes from the system; when it is missing and this runs as root on Debian/Ubuntu, the
# `doxygen` package is installed with apt-get (graphviz is not needed). Settings: docs/Doxyfile.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$(pwd)
out=build-apidocs

if ! command -v doxygen >/dev/null; then
  if command -v apt-get >/dev/null && [ "$(id -u)" = 0 ]; then
    echo "apidocs: doxygen not found; installing the Debian package 'doxygen' (apt-get install -y doxygen)"
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq doxygen >/dev/null
  else
    echo "apidocs: doxygen not found; install it (Debian/Ubuntu: apt-get install doxygen) and rerun" >&2
    exit 2
  fi
fi

version=$(sed -n 's/^#define CELLINT_VERSION_STRING "\(.*\)"$/\1/p' include/cellint/version.hpp)
rm -rf "$out/html" "$out/warnings.log" "$out/doxygen.stderr"
mkdir -p "$out"

# The main page: where to start reading.
cat >"$out/mainpage.md" <<'EOF'
# cellint API reference

Header-only C++17 library for short-range particle interactions on a cell grid: for every
particle, the sum of a pair functor over all neighbours closer than a cutoff, computed on an
NVIDIA GPU (CUDA), an AMD GPU (HIP) or the CPU.

Where to start:

- cellint::Box and cellint::GridOptions describe the domain and the cells;
  cellint::CellGrid bins particles into them (`cellint/grid/cell_grid.hpp`).
- cellint::interact runs a pair functor over every particle's neighbours
  (`cellint/interact.hpp`); the strategy tags (cellint::XPencil, cellint::Auto, ...) are in
  `cellint/strategies/strategy.hpp`.
- The functor contract is in `cellint/core/pair_functor.hpp` (cellint::FunctorTraits); ready-made
  functors are cellint::LennardJones, cellint::LennardJonesPaper and cellint::NeighborCount.
- Backends: cellint::Host, cellint::Emulated, cellint::Cuda, cellint::Hip
  (`cellint/backend/traits.hpp` lists what every backend provides).
- Errors: every exception derives from cellint::Error (`cellint/core/error.hpp`).

The user guide (strategies, backends, grid and box, functors, benchmarks, demos) is the
Markdown under `docs/` in the repository, starting from its README.
EOF

set +e
CELLINT_VERSION="$version" doxygen docs/Doxyfile 2>"$out/doxygen.stderr"
status=$?
set -e

# Doxygen writes documentation warnings to the log file (WARN_LOGFILE); problems with the
# configuration itself go to stderr. Both count.
warnings=$( { cat "$out/warnings.log" 2>/dev/null; cat "$out/doxygen.stderr"; } | sed "s|$root/||g" | sed '/^\s*$/d')
if [ -n "$warnings" ]; then
  echo "$warnings"
  echo "apidocs: doxygen printed $(printf '%s\n' "$warnings" | grep -c 'warning\|error') warning(s) (above, file:line: text);" \
    "document the entity or fix the comment" >&2
  exit 1
fi
if [ "$status" != 0 ]; then
  echo "apidocs: doxygen exited with status $status" >&2
  exit 1
fi
echo "apidocs: $(doxygen --version | cut -d' ' -f1), cellint $version, no warnings;" \
  "$(find "$out/html" -name '*.html' | wc -l) pages in $out/html (open $out/html/index.html)"
