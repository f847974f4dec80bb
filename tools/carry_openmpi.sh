#!/usr/bin/env bash
# Downloads Debian's OpenMPI (4.1, the one CI uses) and the libraries it loads into .deps/openmpi-debs, to be carried
# to a machine that cannot reach a package registry (the GPU machines: see docs/mpi.md). There,
# benchmarks/mpi_device.sh unpacks them into / without replacing any file the machine already has.
#   bash tools/carry_openmpi.sh            (needs apt-get download: a Debian or Ubuntu machine with its package lists)
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
dest=${DEST:-$here/.deps/openmpi-debs}
mkdir -p "$dest"
cd "$dest"
# mpiexec (orterun), libmpi and its headers, and what `ldd` shows them and their plugins to load beyond the C library
packages=(openmpi-bin openmpi-common libopenmpi3 libopenmpi-dev libpmix2 libhwloc15 libevent-core-2.1-7
          libevent-pthreads-2.1-7 libfabric1 libucx0 libibverbs1 ibverbs-providers librdmacm1 libnl-3-200
          libnl-route-3-200 libpsm2-2 libpsm-infinipath1 libmunge2 libnuma1 libudev1)
apt-get download "${packages[@]}" 2>&1 | grep -v '^W: Download is performed unsandboxed' || true
ls -1 "$dest"/*.deb | wc -l | xargs echo "packages in $dest:"
du -sh "$dest"
