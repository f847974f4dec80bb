// The CUDA grids of the Python package (compiled by nvcc).
#include "cellint/backend/cuda.hpp"

#include "grid.hpp"

namespace cellint::py {
std::unique_ptr<GridBase> make_cuda_grid(const GridSpec& s) {
  int count = 0;
  if (cudaGetDeviceCount(&count) != cudaSuccess || count == 0)
    throw NoDevice("cellint: no CUDA GPU is visible (cudaGetDeviceCount); use device='cpu'", 100);
  CELLINT_EXPECTS(s.device_id >= 0 && s.device_id < count, "cellint: no CUDA GPU ", s.device_id, " (", count,
                  " visible)");
  CurrentDevice<Cuda> on(s.device_id);  // (the caller's current device is restored)
  int current = -1;
  cudaGetDevice(&current);
  if (current != s.device_id)
    throw GpuError(detail::cat("cellint: could not make CUDA GPU ", s.device_id, " current"), 101);
  return make_grid<Cuda>(s);
}
std::string cuda_device_name(int device_id) {
  cudaDeviceProp p{};
  if (cudaGetDeviceProperties(&p, device_id) != cudaSuccess) return "";
  return p.name;
}
}  // namespace cellint::py
