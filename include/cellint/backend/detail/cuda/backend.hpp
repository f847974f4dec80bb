#pragma once
// Definitions of the Cuda backend's members (declared in cellint/backend/cuda.hpp).

#include <cub/device/device_radix_sort.cuh>
#include <cub/device/device_scan.cuh>

#include <algorithm>
#include <cstring>
#include <memory>
#include <mutex>
#include <utility>
#include <vector>

#include "cellint/backend/cuda.hpp"
#include "cellint/backend/detail/cuda/error.hpp"
#include "cellint/backend/detail/gpu_block.hpp"

namespace cellint {
namespace detail {

/// Dynamic shared memory every kernel may use without opting in (all NVIDIA GPUs).
inline constexpr std::size_t cuda_default_shared_bytes = 48 * 1024;

/// The process's device count; throws NoDevice when there is no usable GPU.
inline int cuda_device_count() {
  cuda_require_device();
  return cuda_device_count_result().count;
}

/// The calling thread's current device; throws NoDevice when there is no usable GPU.
inline int cuda_current_device() {
  const int count = cuda_device_count();
  int dev = 0;
  CELLINT_CHECK_CUDA(cudaGetDevice(&dev));
  CELLINT_ASSERT(dev >= 0 && dev < count);
  (void)count;
  return dev;
}

/// Remembers, per device, the largest dynamic shared memory a kernel has been opted in to.
/// One instance per kernel type.
struct CudaSharedOptIn {
  std::mutex mutex;
  std::vector<std::size_t> granted;  // per device

  /// Opts `func` in to `bytes` of dynamic shared memory on the current device if needed.
  void ensure(const void* func, std::size_t bytes, std::string (*describe)(const LaunchShape&),
              const LaunchShape& shape) {
    const DeviceProperties p = Cuda::properties();
    if (bytes > p.shared_per_block_optin)
      throw InvalidArgument(cat("cellint: ", describe(shape), " asks for ", bytes,
                                " bytes of dynamic shared memory per block, but ", p.name,
                                " allows at most ", p.shared_per_block_optin,
                                " (after opting in); use fewer cells or threads per block"));
    const int dev = cuda_current_device();
    std::lock_guard<std::mutex> lock(mutex);
    if (granted.size() <= static_cast<std::size_t>(dev)) granted.resize(dev + 1, 0);
    if (granted[dev] >= bytes) return;
    const cudaError_t e = cudaFuncSetAttribute(func, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                               static_cast<int>(bytes));
    if (e != cudaSuccess)
      throw_cuda_error(e,
                       cat("cudaFuncSetAttribute(MaxDynamicSharedMemorySize, ", bytes, ") for ",
                           describe(shape)),
                       __FILE__, __LINE__);
    granted[dev] = bytes;
  }
};

/// Throws GpuError for a failed launch (`what` describes the kernel and its shape).
[[noreturn]] inline void throw_cuda_launch_error(cudaError_t e, const std::string& what,
                                                 const char* when, const LaunchShape& shape) {
  (void)cudaGetLastError();
  if (cuda_error_is_no_device(e)) throw NoDevice(cuda_no_device_text(e, 0), static_cast<int>(e));
  cuda_require_device();  // with no GPU at all, any failure means "no GPU"
  std::string hint;
  if (e == cudaErrorInvalidValue || e == cudaErrorInvalidConfiguration)
    hint = gpu_launch_shape_hint(shape);
  else if (e == cudaErrorLaunchOutOfResources)
    hint =
        ". The kernel uses too many registers for this block size: cap it with "
        "Cuda::max_threads_for(kernel)";
  throw GpuError(cat("cellint: ", what, " failed ", when, ": ", cuda_error_text(e), hint),
                 static_cast<int>(e));
}

/// Growing device scratch buffer, one per (device, stream) and thread, for CUB's temporary
/// storage and the radix sort's alternate buffers. A buffer is only reused on its own stream,
/// so work still in flight on another stream is never overwritten; growing frees the old
/// buffer with cudaFree, which waits for the device.
class CudaScratch {
 public:
  CudaScratch() = default;
  CudaScratch(const CudaScratch&) = delete;
  CudaScratch& operator=(const CudaScratch&) = delete;
  ~CudaScratch() {
    for (Slot& s : slots_) Cuda::deallocate(s.ptr);
  }

  /// At least `bytes` of device memory for stream `s` on the current device.
  void* get(std::size_t bytes, cudaStream_t s) {
    const int dev = cuda_current_device();
    Slot* slot = nullptr;
    for (Slot& x : slots_)
      if (x.device == dev && x.stream == s) slot = &x;
    if (!slot) {
      slots_.push_back(Slot{dev, s, nullptr, 0});
      slot = &slots_.back();
    }
    if (slot->bytes < bytes) {
      const std::size_t grown = std::max(bytes, slot->bytes + slot->bytes / 2);
      Cuda::deallocate(slot->ptr);
      slot->ptr = nullptr;
      slot->bytes = 0;
      slot->ptr = Cuda::allocate(grown);
      slot->bytes = grown;
    }
    return slot->ptr;
  }

  /// This thread's scratch buffers.
  static CudaScratch& instance() {
    thread_local CudaScratch scratch;
    return scratch;
  }

 private:
  struct Slot {
    int device;
    cudaStream_t stream;
    void* ptr;
    std::size_t bytes;
  };
  std::vector<Slot> slots_;
};

/// Rounds up to CUB's 256-byte alignment.
inline std::size_t cuda_align256(std::size_t n) { return (n + 255) / 256 * 256; }

}  // namespace detail

// ---- memory ------------------------------------------------------------------------------------

inline void* Cuda::allocate(std::size_t bytes) {
  const std::size_t request = bytes ? bytes : 1;
  void* p = nullptr;
  const cudaError_t e = cudaMalloc(&p, request);
  if (e == cudaErrorMemoryAllocation) {
    (void)cudaGetLastError();
    std::size_t free_bytes = 0, total_bytes = 0;
    const bool known = cudaMemGetInfo(&free_bytes, &total_bytes) == cudaSuccess;
    (void)cudaGetLastError();
    int dev = -1;
    (void)cudaGetDevice(&dev);
    throw OutOfMemory(
        known ? detail::cat("cellint: cudaMalloc of ", detail::gpu_bytes_text(bytes),
                            " failed on device ", dev, ": ", detail::gpu_bytes_text(free_bytes),
                            " free of ", detail::gpu_bytes_text(total_bytes),
                            "; reduce the particle count")
              : detail::cat("cellint: cudaMalloc of ", detail::gpu_bytes_text(bytes),
                            " failed (device memory exhausted); reduce the particle count"),
        static_cast<int>(e));
  }
  if (e != cudaSuccess)
    detail::throw_cuda_error(e, detail::cat("cudaMalloc of ", bytes, " bytes"), __FILE__, __LINE__);
  return p;
}

inline void Cuda::deallocate(void* p) noexcept {
  if (!p) return;
  const cudaError_t e = cudaFree(p);
  // At process exit (cudaErrorCudartUnloading) or after a fatal error cudaFree fails
  // harmlessly; a pointer cudaMalloc never returned is a bug in the caller.
  CELLINT_ASSERT(e != cudaErrorInvalidValue && e != cudaErrorInvalidDevicePointer);
  if (e != cudaSuccess) (void)cudaGetLastError();
}

inline void Cuda::copy(void* dst, const void* src, std::size_t bytes, CopyKind kind, Stream s) {
  if (bytes == 0) return;
  switch (kind) {
    case CopyKind::HostToDevice:
      CELLINT_CHECK_CUDA(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyHostToDevice, s));
      break;
    case CopyKind::DeviceToHost:
      CELLINT_CHECK_CUDA(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToHost, s));
      CELLINT_CHECK_CUDA(cudaStreamSynchronize(s));
      break;
    case CopyKind::DeviceToDevice:
      CELLINT_CHECK_CUDA(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToDevice, s));
      break;
    case CopyKind::HostToHost:
      std::memmove(dst, src, bytes);
      break;
  }
}

inline void Cuda::fill_bytes(void* dst, int byte, std::size_t bytes, Stream s) {
  if (bytes == 0) return;
  CELLINT_CHECK_CUDA(cudaMemsetAsync(dst, byte, bytes, s));
}

inline void Cuda::synchronize(Stream s) { CELLINT_CHECK_CUDA(cudaStreamSynchronize(s)); }

inline DeviceProperties Cuda::properties() {
  static std::mutex mutex;
  static std::vector<std::unique_ptr<DeviceProperties>> cache;  // per device
  const int dev = detail::cuda_current_device();
  std::lock_guard<std::mutex> lock(mutex);
  if (cache.size() <= static_cast<std::size_t>(dev)) cache.resize(dev + 1);
  if (!cache[dev]) {
    cudaDeviceProp q{};
    CELLINT_CHECK_CUDA(cudaGetDeviceProperties(&q, dev));
    auto p = std::make_unique<DeviceProperties>();
    p->multiprocessors = q.multiProcessorCount;
    p->shared_per_block = q.sharedMemPerBlock;
    p->shared_per_block_optin = std::max(q.sharedMemPerBlockOptin, q.sharedMemPerBlock);
    p->shared_per_multiprocessor = q.sharedMemPerMultiprocessor;
    p->max_threads_per_block = q.maxThreadsPerBlock;
    p->max_threads_per_multiprocessor = q.maxThreadsPerMultiProcessor;
    p->warp_size = q.warpSize;
    std::strncpy(p->name, q.name, sizeof(p->name) - 1);
    p->name[sizeof(p->name) - 1] = '\0';
    cache[dev] = std::move(p);
  }
  return *cache[dev];
}

// ---- kernels -----------------------------------------------------------------------------------

template <class Kernel>
void Cuda::launch(const LaunchShape& shape, const Kernel& kernel, Stream s) {
  detail::check_block_kernel_type<Kernel>();
  if (shape.grid == 0) return;
  if (shape.shared_bytes > detail::cuda_default_shared_bytes) {
    static detail::CudaSharedOptIn opt_in;  // one per kernel type
    opt_in.ensure(reinterpret_cast<const void*>(&detail::block_kernel<Kernel>), shape.shared_bytes,
                  &detail::describe_launch<Kernel>, shape);
  }
  detail::block_kernel<Kernel><<<shape.grid, shape.block, shape.shared_bytes, s>>>(kernel);
  const cudaError_t e = cudaGetLastError();
  if (e != cudaSuccess)
    detail::throw_cuda_launch_error(e, detail::describe_launch<Kernel>(shape), "to launch", shape);
#if defined(CELLINT_DEBUG_SYNC)
  const cudaError_t e2 = cudaStreamSynchronize(s);
  if (e2 != cudaSuccess)
    detail::throw_cuda_launch_error(e2, detail::describe_launch<Kernel>(shape),
                                    "while running (CELLINT_DEBUG_SYNC)", shape);
#endif
}

template <class Kernel>
int Cuda::max_threads_for(const Kernel&) {
  detail::check_block_kernel_type<Kernel>();
  static detail::PerDeviceValue cache;  // one per kernel type: strategies ask on every call
  return cache.get(detail::cuda_current_device(), [] {
    cudaFuncAttributes a{};
    CELLINT_CHECK_CUDA(
        cudaFuncGetAttributes(&a, reinterpret_cast<const void*>(&detail::block_kernel<Kernel>)));
    return a.maxThreadsPerBlock;
  });
}

// ---- device-wide primitives --------------------------------------------------------------------

template <class Unused>
void Cuda::exclusive_scan(const std::uint32_t* in, std::uint32_t* out, Index n, Stream s) {
  if (n <= 0) return;
  std::size_t temp_bytes = 0;
  CELLINT_CHECK_CUDA(cub::DeviceScan::ExclusiveSum(nullptr, temp_bytes, in, out, n, s));
  void* temp = detail::CudaScratch::instance().get(std::max<std::size_t>(temp_bytes, 1), s);
  CELLINT_CHECK_CUDA(cub::DeviceScan::ExclusiveSum(temp, temp_bytes, in, out, n, s));
}

template <class Unused>
void Cuda::sort_pairs(std::uint32_t* keys, Index* values, Index n, int key_bits, Stream s) {
  CELLINT_EXPECTS(key_bits >= 0 && key_bits <= 32, "cellint: Cuda::sort_pairs: key_bits is ",
                  key_bits, ", must be in [0, 32]");
  if (n < 2 || key_bits == 0) return;
  const std::size_t count = static_cast<std::size_t>(n);
  const std::size_t key_bytes = detail::cuda_align256(count * sizeof(std::uint32_t));
  const std::size_t value_bytes = detail::cuda_align256(count * sizeof(Index));
  cub::DoubleBuffer<std::uint32_t> d_keys(keys, nullptr);
  cub::DoubleBuffer<Index> d_values(values, nullptr);
  std::size_t temp_bytes = 0;
  CELLINT_CHECK_CUDA(
      cub::DeviceRadixSort::SortPairs(nullptr, temp_bytes, d_keys, d_values, n, 0, key_bits, s));
  auto* base = static_cast<unsigned char*>(detail::CudaScratch::instance().get(
      key_bytes + value_bytes + std::max<std::size_t>(temp_bytes, 1), s));
  auto* keys_alt = reinterpret_cast<std::uint32_t*>(base);
  auto* values_alt = reinterpret_cast<Index*>(base + key_bytes);
  void* temp = base + key_bytes + value_bytes;
  d_keys = cub::DoubleBuffer<std::uint32_t>(keys, keys_alt);
  d_values = cub::DoubleBuffer<Index>(values, values_alt);
  CELLINT_CHECK_CUDA(
      cub::DeviceRadixSort::SortPairs(temp, temp_bytes, d_keys, d_values, n, 0, key_bits, s));
  if (d_keys.Current() != keys)
    CELLINT_CHECK_CUDA(cudaMemcpyAsync(keys, d_keys.Current(), count * sizeof(std::uint32_t),
                                       cudaMemcpyDeviceToDevice, s));
  if (d_values.Current() != values)
    CELLINT_CHECK_CUDA(cudaMemcpyAsync(values, d_values.Current(), count * sizeof(Index),
                                       cudaMemcpyDeviceToDevice, s));
}

// ---- timer -------------------------------------------------------------------------------------

inline Cuda::Timer::Timer(Stream s) : stream_(s) {
  (void)detail::cuda_device_count();
  CELLINT_CHECK_CUDA(cudaEventCreate(&start_));
  const cudaError_t e = cudaEventCreate(&stop_);
  if (e != cudaSuccess) {
    release();
    detail::throw_cuda_error(e, "CUDA call `cudaEventCreate(&stop_)`", __FILE__, __LINE__);
  }
}

inline Cuda::Timer::~Timer() { release(); }

inline Cuda::Timer::Timer(Timer&& o) noexcept
    : start_(std::exchange(o.start_, nullptr)),
      stop_(std::exchange(o.stop_, nullptr)),
      stream_(o.stream_) {}

inline Cuda::Timer& Cuda::Timer::operator=(Timer&& o) noexcept {
  if (this != &o) {
    release();
    start_ = std::exchange(o.start_, nullptr);
    stop_ = std::exchange(o.stop_, nullptr);
    stream_ = o.stream_;
  }
  return *this;
}

inline void Cuda::Timer::release() noexcept {
  // Failures (at process exit, after a fatal device error) are ignored; clear only our own.
  if (start_ && cudaEventDestroy(start_) != cudaSuccess) (void)cudaGetLastError();
  if (stop_ && cudaEventDestroy(stop_) != cudaSuccess) (void)cudaGetLastError();
  start_ = stop_ = nullptr;
}

inline void Cuda::Timer::start() { CELLINT_CHECK_CUDA(cudaEventRecord(start_, stream_)); }

inline void Cuda::Timer::stop() { CELLINT_CHECK_CUDA(cudaEventRecord(stop_, stream_)); }

inline float Cuda::Timer::elapsed_ms() const {
  CELLINT_CHECK_CUDA(cudaEventSynchronize(stop_));
  float ms = 0.0f;
  CELLINT_CHECK_CUDA(cudaEventElapsedTime(&ms, start_, stop_));
  return ms;
}

}  // namespace cellint
