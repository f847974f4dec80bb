// Fluid and wall particles as one set or two (two_sets_bench.hpp) on the CUDA backend.
//   two_sets_bench_cuda [resolution] [reps]
#include <cstdlib>

#include "cellint/backend/cuda.hpp"

#include "two_sets/two_sets_bench.hpp"

int main(int argc, char** argv) {
  const int res = argc > 1 ? std::atoi(argv[1]) : 400, reps = argc > 2 ? std::atoi(argv[2]) : 100;
  return cellint::bench::two_sets::run<cellint::Cuda>(res, reps, cellint::Cuda::properties().name);
}
