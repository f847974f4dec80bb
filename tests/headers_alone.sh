#!/usr/bin/env bash
# Every header of include/cellint compiles on its own with the host compiler (the GPU runtime
# headers need nvcc or hipcc and are left out).   headers_alone.sh CXX INCLUDE_DIR
cxx=$1
inc=$2
rc=0
n=0
for h in $(cd "$inc" && find cellint -name '*.hpp' | sort); do
  # (the GPU runtimes' headers; cellint/mpi/distributed_grid.hpp needs mpi.h: the MPI tests compile it first)
  case $h in */cuda.hpp | */hip.hpp | */detail/cuda/* | */detail/hip/* | */detail/gpu/* | */detail/gpu_block.hpp | */mpi/distributed_grid.hpp) continue ;; esac
  echo "#include \"$h\"" | "$cxx" -std=c++17 -fsyntax-only -I"$inc" -x c++ - || { echo "does not compile alone: $h"; rc=1; }
  n=$((n + 1))
done
echo "$n headers checked"
exit $rc
