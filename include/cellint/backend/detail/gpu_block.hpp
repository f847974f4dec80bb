#pragma once
// The block API handed to block kernels on CUDA and HIP, the generic __global__ trampoline that runs a block kernel,
// and the launch-description helpers both GPU backends use in messages. Only nvcc and hipcc compile this file.

#include "cellint/core/macros.hpp"

#if !defined(CELLINT_GPU_COMPILER)
#  error "cellint/backend/detail/gpu_block.hpp needs nvcc or hipcc (include cuda.hpp or hip.hpp)"
#endif

#if defined(CELLINT_COMPILER_HIP)
#  include <hip/hip_runtime.h>
#else
#  include <cuda_runtime.h>
#endif

#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <string>
#include <type_traits>
#include <typeinfo>
#include <vector>

#if defined(__has_include)
#  if __has_include(<cxxabi.h>)
#    include <cxxabi.h>
#    define CELLINT_DETAIL_HAS_CXXABI 1
#  endif
#endif

#include "cellint/backend/traits.hpp"
#include "cellint/core/error.hpp"

namespace cellint::detail {

/// Keeps `T` out of template argument deduction (atomics deduce T from the pointer alone).
template <class T>
struct NoDeduce {
  using type = T;
};

#if defined(CELLINT_DEVICE_PASS)
/// The block's dynamic shared memory (one extern array for every kernel, 16-byte aligned).
__device__ inline unsigned char* gpu_dynamic_shared() {
  extern __shared__ __attribute__((aligned(16))) unsigned char cellint_dynamic_shared[];
  return cellint_dynamic_shared;
}
/// `device` in the device pass; `host` (a placeholder the host pass never runs) otherwise.
#  define CELLINT_DETAIL_DEVICE_OR(device, host) device
#else
#  define CELLINT_DETAIL_DEVICE_OR(device, host) host
#endif

/// Block API of the CUDA and HIP backends (see backend/traits.hpp): 1-D thread and block ranks, the block barrier,
/// dynamic shared memory and atomics, forwarding to the runtime's built-ins. The members are `__host__ __device__` so
/// that `CELLINT_HD` kernel templates call them without host/device diagnostics; their bodies exist only in the device
/// pass (the host pass never runs them).
struct GpuBlock {
  /// Rank of this thread in its block (threadIdx.x).
  CELLINT_HD unsigned thread_rank() const { return CELLINT_DETAIL_DEVICE_OR(threadIdx.x, 0); }
  /// Threads per block (blockDim.x).
  CELLINT_HD unsigned block_size() const { return CELLINT_DETAIL_DEVICE_OR(blockDim.x, 1); }
  /// Rank of this block in the grid (blockIdx.x).
  CELLINT_HD unsigned block_rank() const { return CELLINT_DETAIL_DEVICE_OR(blockIdx.x, 0); }
  /// Blocks in the grid (gridDim.x).
  CELLINT_HD unsigned grid_size() const { return CELLINT_DETAIL_DEVICE_OR(gridDim.x, 1); }
  /// Block-wide barrier (__syncthreads); every thread of the block must reach it.
  CELLINT_HD void sync() const { CELLINT_DETAIL_DEVICE_OR(__syncthreads(), (void)0); }
  /// Memory fence at device scope (__threadfence): this thread's loads and stores before it are seen by every
  /// thread of the device before its loads and stores after it.
  CELLINT_HD void fence() const { CELLINT_DETAIL_DEVICE_OR(__threadfence(), (void)0); }
  /// The block's dynamic shared memory seen as an array of `T` (16-byte aligned; its size is
  /// LaunchShape::shared_bytes).
  template <class T>
  CELLINT_HD T* shared() const {
    static_assert(alignof(T) <= 16, "cellint: shared<T>() is 16-byte aligned; T needs more");
    return CELLINT_DETAIL_DEVICE_OR(reinterpret_cast<T*>(gpu_dynamic_shared()), nullptr);
  }
  /// `*p += v` atomically (device scope); returns the old value. T: int, unsigned, unsigned long long, float or double.
  template <class T>
  CELLINT_HD T atomic_add(T* p, typename NoDeduce<T>::type v) const {
    static_assert(std::is_same_v<T, int> || std::is_same_v<T, unsigned> || std::is_same_v<T, unsigned long long> ||
                      std::is_same_v<T, float> || std::is_same_v<T, double>,
                  "cellint: atomic_add supports int, unsigned, unsigned long long, float and double");
    return CELLINT_DETAIL_DEVICE_OR(atomicAdd(p, v), ((void)p, (void)v, T{}));
  }
  /// `*p = max(*p, v)` atomically; returns the old value. T: int or unsigned.
  template <class T>
  CELLINT_HD T atomic_max(T* p, typename NoDeduce<T>::type v) const {
    static_assert(std::is_same_v<T, int> || std::is_same_v<T, unsigned>,
                  "cellint: atomic_max supports int and unsigned");
    return CELLINT_DETAIL_DEVICE_OR(atomicMax(p, v), ((void)p, (void)v, T{}));
  }
  /// `*p = min(*p, v)` atomically; returns the old value. T: int or unsigned.
  template <class T>
  CELLINT_HD T atomic_min(T* p, typename NoDeduce<T>::type v) const {
    static_assert(std::is_same_v<T, int> || std::is_same_v<T, unsigned>,
                  "cellint: atomic_min supports int and unsigned");
    return CELLINT_DETAIL_DEVICE_OR(atomicMin(p, v), ((void)p, (void)v, T{}));
  }
};

#undef CELLINT_DETAIL_DEVICE_OR

/// Runs one block kernel: every thread calls `k(block)`. Kernels reach threadIdx & co. only through GpuBlock. No
/// __launch_bounds__: the block size is a run-time choice, capped by Backend::max_threads_for.
template <class Kernel>
__global__ void block_kernel(Kernel k) {
  GpuBlock b;
  k(b);
}

/// A block kernel's occupancy request: a kernel type that declares `static constexpr unsigned launch_max_threads`
/// (the largest block it is launched with) and `launch_min_blocks` (blocks of that size one multiprocessor should
/// hold; 0: no request) runs through bounded_block_kernel, so that the compiler keeps its registers within that
/// occupancy.
template <class K, class = void>
struct LaunchBounds {
  static constexpr bool declared = false;
};
template <class K>
struct LaunchBounds<K, std::void_t<decltype(K::launch_max_threads), decltype(K::launch_min_blocks)>> {
  static constexpr bool declared = K::launch_min_blocks > 0;
  static constexpr unsigned max_threads = K::launch_max_threads;
  static constexpr unsigned min_blocks = K::launch_min_blocks;
};

/// block_kernel with the kernel type's LaunchBounds. On HIP only the block size is passed (the second argument of
/// __launch_bounds__ means warps per execution unit there).
template <class Kernel>
__global__ void
#if defined(CELLINT_COMPILER_HIP)
__launch_bounds__(LaunchBounds<Kernel>::max_threads)
#else
__launch_bounds__(LaunchBounds<Kernel>::max_threads, LaunchBounds<Kernel>::min_blocks)
#endif
    bounded_block_kernel(Kernel k) {
  GpuBlock b;
  k(b);
}

/// The __global__ function that runs `Kernel`: bounded_block_kernel when it declares LaunchBounds, else block_kernel.
template <class Kernel>
constexpr auto block_kernel_for() {
  if constexpr (LaunchBounds<Kernel>::declared)
    return &bounded_block_kernel<Kernel>;
  else
    return &block_kernel<Kernel>;
}

/// A value per device that never changes once known (a kernel's register-limited block size): computed on first use,
/// then read without calling the runtime. One instance per kernel type.
struct PerDeviceValue {
  std::mutex mutex;
  std::vector<int> values;  // per device; 0 = not known yet

  /// The value for device `dev`, from `compute()` the first time.
  template <class Compute>
  int get(int dev, Compute&& compute) {
    std::lock_guard<std::mutex> lock(mutex);
    if (values.size() <= static_cast<std::size_t>(dev)) values.resize(dev + 1, 0);
    if (values[dev] == 0) values[dev] = compute();
    return values[dev];
  }
};

/// Readable name of the kernel type, for error messages.
template <class Kernel>
std::string kernel_name() {
  const char* mangled = typeid(Kernel).name();
#if defined(CELLINT_DETAIL_HAS_CXXABI)
  int status = 0;
  char* d = abi::__cxa_demangle(mangled, nullptr, nullptr, &status);
  if (status == 0 && d) {
    std::string s(d);
    std::free(d);
    return s;
  }
  std::free(d);
#endif
  return mangled;
}

/// "block kernel `K` (grid=G, block=B, shared_bytes=S)", for error messages.
template <class Kernel>
std::string describe_launch(const LaunchShape& shape) {
  return cat("block kernel `", kernel_name<Kernel>(), "` (grid=", shape.grid, ", block=", shape.block,
             ", shared_bytes=", shape.shared_bytes, ")");
}

/// "N bytes (X.X MiB)" or "(X.X GiB)", for memory messages.
inline std::string gpu_bytes_text(std::size_t n) {
  const double mib = static_cast<double>(n) / (1024.0 * 1024.0);
  char buf[64];
  if (mib >= 1024.0)
    std::snprintf(buf, sizeof(buf), "%.1f GiB", mib / 1024.0);
  else
    std::snprintf(buf, sizeof(buf), "%.1f MiB", mib);
  return cat(n, " bytes (", buf, ")");
}

/// Hint appended to a launch error that the launch shape itself may explain.
inline const char* gpu_launch_shape_hint(const LaunchShape& shape) {
  if (shape.block == 0 || shape.block > 1024)
    return ". The block size must be in [1, max_threads_per_block] (1024 on current GPUs)";
  if (shape.grid > 2147483647u) return ". The grid must have fewer than 2^31 blocks";
  return ". Check the launch shape against properties() (threads per block, shared memory)";
}

/// Checks done before every GPU launch that do not need the runtime.
template <class Kernel>
constexpr void check_block_kernel_type() {
  static_assert(std::is_trivially_copyable_v<Kernel>,
                "cellint: a block kernel is passed to the GPU by value and must be trivially "
                "copyable (hold views and raw pointers, not owning containers)");
}

}  // namespace cellint::detail
