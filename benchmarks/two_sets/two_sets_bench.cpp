// Fluid and wall particles as one set or two (two_sets_bench.hpp) on the Host backend.
//   two_sets_bench [resolution] [reps]
#include "two_sets/two_sets_bench.hpp"

#include <cstdlib>

#include "cellint/backend/host.hpp"

int main(int argc, char** argv) {
  const int res = argc > 1 ? std::atoi(argv[1]) : 100, reps = argc > 2 ? std::atoi(argv[2]) : 20;
  return cellint::bench::two_sets::run<cellint::Host>(res, reps, "cpu");
}
