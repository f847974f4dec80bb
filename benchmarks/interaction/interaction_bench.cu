// The interaction benchmark on the CUDA backend. See interaction_bench.hpp for what is
// measured and benchmarks/run_device.sh for the campaign.
//
//   interaction_bench_cuda --strategy all,auto --functor paper,lj --json out.json --ceilings ceilings.json

#include <cuda_runtime.h>

#include <string>

#include "cellint/backend/cuda.hpp"
#include "interaction/interaction_bench.hpp"

CELLINT_BENCH_FAMILIES(CELLINT_BENCH_EXTERN, cellint::Cuda)

namespace {

// "13.0" from a CUDA version number such as 13000.
std::string cuda_version_text(int v) { return std::to_string(v / 1000) + "." + std::to_string((v % 1000) / 10); }

}  // namespace

int main(int argc, char** argv) {
  cellint::bench::Context c;
  c.backend = "cuda";
  try {
    const cellint::DeviceProperties p = cellint::Cuda::properties();
    c.card = p.name;
    c.multiprocessors = p.multiprocessors;
  } catch (const cellint::NoDevice& e) {
    std::fprintf(stderr, "interaction_bench_cuda: no usable CUDA device, skipping: %s\n", e.what());
    return 77;
  }
  int drv = 0, rt = 0;
  if (cudaDriverGetVersion(&drv) != cudaSuccess) drv = 0;
  if (cudaRuntimeGetVersion(&rt) != cudaSuccess) rt = 0;
  c.driver = cellint::bench::nvidia_driver_version();
  if (c.driver.empty()) c.driver = "CUDA driver API " + cuda_version_text(drv);
  c.cuda = "runtime " + cuda_version_text(rt) + ", driver API " + cuda_version_text(drv);
  return cellint::bench::bench_main<cellint::Cuda>(argc, argv, c);
}
