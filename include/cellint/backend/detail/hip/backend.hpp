#pragma once
// Definitions of the Hip backend's members (declared in cellint/backend/hip.hpp).

#include <rocprim/device/device_radix_sort.hpp>
#include <rocprim/device/device_scan.hpp>
#include <rocprim/functional.hpp>

#include <algorithm>
#include <cstring>
#include <memory>
#include <mutex>
#include <utility>
#include <vector>

#include "cellint/backend/detail/gpu_block.hpp"
#include "cellint/backend/detail/hip/error.hpp"
#include "cellint/backend/hip.hpp"

namespace cellint {
namespace detail {

/// Dynamic shared memory below which no device needs checks or opt-in (48 KiB on NVIDIA,
/// 64 KiB on AMD: the real default limit is properties().shared_per_block).
inline constexpr std::size_t hip_default_shared_bytes = 48 * 1024;

/// The process's device count; throws NoDevice when there is no usable GPU.
inline int hip_device_count() {
  hip_require_device();
  return hip_device_count_result().count;
}

/// The calling thread's current device; throws NoDevice when there is no usable GPU.
inline int hip_current_device() {
  const int count = hip_device_count();
  int dev = 0;
  CELLINT_CHECK_HIP(hipGetDevice(&dev));
  CELLINT_ASSERT(dev >= 0 && dev < count);
  (void)count;
  return dev;
}

/// Remembers, per device, the largest dynamic shared memory a kernel has been opted in to.
/// One instance per kernel type.
struct HipSharedOptIn {
  std::mutex mutex;
  std::vector<std::size_t> granted;  // per device

  /// Checks `bytes` of dynamic shared memory against the current device's limits and opts
  /// `func` in when the request is above the default limit (never the case on AMD GPUs,
  /// whose opt-in limit is the default one).
  void ensure(const void* func, std::size_t bytes, std::string (*describe)(const LaunchShape&),
              const LaunchShape& shape) {
    const DeviceProperties p = Hip::properties();
    if (bytes <= p.shared_per_block) return;
    if (bytes > p.shared_per_block_optin)
      throw InvalidArgument(cat("cellint: ", describe(shape), " asks for ", bytes,
                                " bytes of dynamic shared memory per block, but ", p.name,
                                " allows at most ", p.shared_per_block_optin,
                                " (after opting in); use fewer cells or threads per block"));
    const int dev = hip_current_device();
    std::lock_guard<std::mutex> lock(mutex);
    if (granted.size() <= static_cast<std::size_t>(dev)) granted.resize(dev + 1, 0);
    if (granted[dev] >= bytes) return;
    const hipError_t e = hipFuncSetAttribute(func, hipFuncAttributeMaxDynamicSharedMemorySize,
                                             static_cast<int>(bytes));
    if (e != hipSuccess)
      throw_hip_error(
          e,
          cat("hipFuncSetAttribute(MaxDynamicSharedMemorySize, ", bytes, ") for ", describe(shape)),
          __FILE__, __LINE__);
    granted[dev] = bytes;
  }
};

/// Throws GpuError for a failed launch (`what` describes the kernel and its shape).
[[noreturn]] inline void throw_hip_launch_error(hipError_t e, const std::string& what,
                                                const char* when, const LaunchShape& shape) {
  (void)hipGetLastError();
  if (hip_error_is_no_device(e)) throw NoDevice(hip_no_device_text(e, 0), static_cast<int>(e));
  hip_require_device();  // with no GPU at all, any failure means "no GPU"
  std::string hint;
  if (e == hipErrorInvalidValue || e == hipErrorInvalidConfiguration)
    hint = gpu_launch_shape_hint(shape);
  else if (e == hipErrorLaunchOutOfResources)
    hint =
        ". The kernel uses too many registers for this block size: cap it with "
        "Hip::max_threads_for(kernel)";
  throw GpuError(cat("cellint: ", what, " failed ", when, ": ", hip_error_text(e), hint),
                 static_cast<int>(e));
}

/// Growing device scratch buffer, one per (device, stream) and thread, for rocPRIM's temporary
/// storage and the radix sort's alternate buffers. A buffer is only reused on its own stream,
/// so work still in flight on another stream is never overwritten; growing frees the old
/// buffer with hipFree, which waits for the device.
class HipScratch {
 public:
  HipScratch() = default;
  HipScratch(const HipScratch&) = delete;
  HipScratch& operator=(const HipScratch&) = delete;
  ~HipScratch() {
    for (Slot& s : slots_) Hip::deallocate(s.ptr);
  }

  /// At least `bytes` of device memory for stream `s` on the current device.
  void* get(std::size_t bytes, hipStream_t s) {
    const int dev = hip_current_device();
    Slot* slot = nullptr;
    for (Slot& x : slots_)
      if (x.device == dev && x.stream == s) slot = &x;
    if (!slot) {
      slots_.push_back(Slot{dev, s, nullptr, 0});
      slot = &slots_.back();
    }
    if (slot->bytes < bytes) {
      const std::size_t grown = std::max(bytes, slot->bytes + slot->bytes / 2);
      Hip::deallocate(slot->ptr);
      slot->ptr = nullptr;
      slot->bytes = 0;
      slot->ptr = Hip::allocate(grown);
      slot->bytes = grown;
    }
    return slot->ptr;
  }

  /// This thread's scratch buffers.
  static HipScratch& instance() {
    thread_local HipScratch scratch;
    return scratch;
  }

 private:
  struct Slot {
    int device;
    hipStream_t stream;
    void* ptr;
    std::size_t bytes;
  };
  std::vector<Slot> slots_;
};

/// Rounds up to a 256-byte boundary.
inline std::size_t hip_align256(std::size_t n) { return (n + 255) / 256 * 256; }

}  // namespace detail

// ---- memory ------------------------------------------------------------------------------------

inline void* Hip::allocate(std::size_t bytes) {
  const std::size_t request = bytes ? bytes : 1;
  void* p = nullptr;
  const hipError_t e = hipMalloc(&p, request);
  if (e == hipErrorOutOfMemory) {
    (void)hipGetLastError();
    std::size_t free_bytes = 0, total_bytes = 0;
    const bool known = hipMemGetInfo(&free_bytes, &total_bytes) == hipSuccess;
    (void)hipGetLastError();
    int dev = -1;
    (void)hipGetDevice(&dev);
    throw OutOfMemory(
        known ? detail::cat("cellint: hipMalloc of ", detail::gpu_bytes_text(bytes),
                            " failed on device ", dev, ": ", detail::gpu_bytes_text(free_bytes),
                            " free of ", detail::gpu_bytes_text(total_bytes),
                            "; reduce the particle count")
              : detail::cat("cellint: hipMalloc of ", detail::gpu_bytes_text(bytes),
                            " failed (device memory exhausted); reduce the particle count"),
        static_cast<int>(e));
  }
  if (e != hipSuccess)
    detail::throw_hip_error(e, detail::cat("hipMalloc of ", bytes, " bytes"), __FILE__, __LINE__);
  return p;
}

inline void Hip::deallocate(void* p) noexcept {
  if (!p) return;
  const hipError_t e = hipFree(p);
  // At process exit (hipErrorDeinitialized) or after a fatal error hipFree fails
  // harmlessly; a pointer hipMalloc never returned is a bug in the caller.
  CELLINT_ASSERT(e != hipErrorInvalidValue && e != hipErrorInvalidDevicePointer);
  if (e != hipSuccess) (void)hipGetLastError();
}

inline void Hip::copy(void* dst, const void* src, std::size_t bytes, CopyKind kind, Stream s) {
  if (bytes == 0) return;
  switch (kind) {
    case CopyKind::HostToDevice:
      CELLINT_CHECK_HIP(hipMemcpyAsync(dst, src, bytes, hipMemcpyHostToDevice, s));
      break;
    case CopyKind::DeviceToHost:
      CELLINT_CHECK_HIP(hipMemcpyAsync(dst, src, bytes, hipMemcpyDeviceToHost, s));
      CELLINT_CHECK_HIP(hipStreamSynchronize(s));
      break;
    case CopyKind::DeviceToDevice:
      CELLINT_CHECK_HIP(hipMemcpyAsync(dst, src, bytes, hipMemcpyDeviceToDevice, s));
      break;
    case CopyKind::HostToHost:
      std::memmove(dst, src, bytes);
      break;
  }
}

inline void Hip::fill_bytes(void* dst, int byte, std::size_t bytes, Stream s) {
  if (bytes == 0) return;
  CELLINT_CHECK_HIP(hipMemsetAsync(dst, byte, bytes, s));
}

inline void Hip::synchronize(Stream s) { CELLINT_CHECK_HIP(hipStreamSynchronize(s)); }

inline DeviceProperties Hip::properties() {
  static std::mutex mutex;
  static std::vector<std::unique_ptr<DeviceProperties>> cache;  // per device
  const int dev = detail::hip_current_device();
  std::lock_guard<std::mutex> lock(mutex);
  if (cache.size() <= static_cast<std::size_t>(dev)) cache.resize(dev + 1);
  if (!cache[dev]) {
    hipDeviceProp_t q{};
    CELLINT_CHECK_HIP(hipGetDeviceProperties(&q, dev));
    // The opt-in limit is a CUDA notion: HIP on AMD reports no such attribute (ROCm 5) and
    // lets every kernel use sharedMemPerBlock (the whole 64 KiB LDS on gfx90a).
    int optin = 0;
    if (hipDeviceGetAttribute(&optin, hipDeviceAttributeSharedMemPerBlockOptin, dev) !=
        hipSuccess) {
      (void)hipGetLastError();
      optin = 0;
    }
    auto p = std::make_unique<DeviceProperties>();
    p->multiprocessors = q.multiProcessorCount;
    p->shared_per_block = q.sharedMemPerBlock;
    p->shared_per_block_optin =
        std::max(static_cast<std::size_t>(optin > 0 ? optin : 0), q.sharedMemPerBlock);
    p->shared_per_multiprocessor = q.maxSharedMemoryPerMultiProcessor;
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
void Hip::launch(const LaunchShape& shape, const Kernel& kernel, Stream s) {
  detail::check_block_kernel_type<Kernel>();
  if (shape.grid == 0) return;
  if (shape.shared_bytes > detail::hip_default_shared_bytes) {
    static detail::HipSharedOptIn opt_in;  // one per kernel type
    opt_in.ensure(reinterpret_cast<const void*>(&detail::block_kernel<Kernel>), shape.shared_bytes,
                  &detail::describe_launch<Kernel>, shape);
  }
  detail::block_kernel<Kernel><<<shape.grid, shape.block, shape.shared_bytes, s>>>(kernel);
  const hipError_t e = hipGetLastError();
  if (e != hipSuccess)
    detail::throw_hip_launch_error(e, detail::describe_launch<Kernel>(shape), "to launch", shape);
#if defined(CELLINT_DEBUG_SYNC)
  const hipError_t e2 = hipStreamSynchronize(s);
  if (e2 != hipSuccess)
    detail::throw_hip_launch_error(e2, detail::describe_launch<Kernel>(shape),
                                   "while running (CELLINT_DEBUG_SYNC)", shape);
#endif
}

template <class Kernel>
int Hip::max_threads_for(const Kernel&) {
  detail::check_block_kernel_type<Kernel>();
  static detail::PerDeviceValue cache;  // one per kernel type: strategies ask on every call
  return cache.get(detail::hip_current_device(), [] {
    hipFuncAttributes a{};
    CELLINT_CHECK_HIP(
        hipFuncGetAttributes(&a, reinterpret_cast<const void*>(&detail::block_kernel<Kernel>)));
    return a.maxThreadsPerBlock;
  });
}

// ---- device-wide primitives --------------------------------------------------------------------

template <class Unused>
void Hip::exclusive_scan(const std::uint32_t* in, std::uint32_t* out, Index n, Stream s) {
  if (n <= 0) return;
  std::size_t temp_bytes = 0;
  CELLINT_CHECK_HIP(rocprim::exclusive_scan(nullptr, temp_bytes, in, out, std::uint32_t(0),
                                            static_cast<std::size_t>(n),
                                            rocprim::plus<std::uint32_t>(), s));
  void* temp = detail::HipScratch::instance().get(std::max<std::size_t>(temp_bytes, 1), s);
  CELLINT_CHECK_HIP(rocprim::exclusive_scan(temp, temp_bytes, in, out, std::uint32_t(0),
                                            static_cast<std::size_t>(n),
                                            rocprim::plus<std::uint32_t>(), s));
}

template <class Unused>
void Hip::sort_pairs(std::uint32_t* keys, Index* values, Index n, int key_bits, Stream s) {
  CELLINT_EXPECTS(key_bits >= 0 && key_bits <= 32, "cellint: Hip::sort_pairs: key_bits is ",
                  key_bits, ", must be in [0, 32]");
  if (n < 2 || key_bits == 0) return;
  const std::size_t count = static_cast<std::size_t>(n);
  const std::size_t key_bytes = detail::hip_align256(count * sizeof(std::uint32_t));
  const std::size_t value_bytes = detail::hip_align256(count * sizeof(Index));
  rocprim::double_buffer<std::uint32_t> d_keys(keys, nullptr);
  rocprim::double_buffer<Index> d_values(values, nullptr);
  std::size_t temp_bytes = 0;
  CELLINT_CHECK_HIP(rocprim::radix_sort_pairs(nullptr, temp_bytes, d_keys, d_values, count, 0u,
                                              static_cast<unsigned>(key_bits), s));
  auto* base = static_cast<unsigned char*>(detail::HipScratch::instance().get(
      key_bytes + value_bytes + std::max<std::size_t>(temp_bytes, 1), s));
  auto* keys_alt = reinterpret_cast<std::uint32_t*>(base);
  auto* values_alt = reinterpret_cast<Index*>(base + key_bytes);
  void* temp = base + key_bytes + value_bytes;
  d_keys = rocprim::double_buffer<std::uint32_t>(keys, keys_alt);
  d_values = rocprim::double_buffer<Index>(values, values_alt);
  CELLINT_CHECK_HIP(rocprim::radix_sort_pairs(temp, temp_bytes, d_keys, d_values, count, 0u,
                                              static_cast<unsigned>(key_bits), s));
  if (d_keys.current() != keys)
    CELLINT_CHECK_HIP(hipMemcpyAsync(keys, d_keys.current(), count * sizeof(std::uint32_t),
                                     hipMemcpyDeviceToDevice, s));
  if (d_values.current() != values)
    CELLINT_CHECK_HIP(hipMemcpyAsync(values, d_values.current(), count * sizeof(Index),
                                     hipMemcpyDeviceToDevice, s));
}

// ---- timer -------------------------------------------------------------------------------------

inline Hip::Timer::Timer(Stream s) : stream_(s) {
  (void)detail::hip_device_count();
  CELLINT_CHECK_HIP(hipEventCreate(&start_));
  const hipError_t e = hipEventCreate(&stop_);
  if (e != hipSuccess) {
    release();
    detail::throw_hip_error(e, "HIP call `hipEventCreate(&stop_)`", __FILE__, __LINE__);
  }
}

inline Hip::Timer::~Timer() { release(); }

inline Hip::Timer::Timer(Timer&& o) noexcept
    : start_(std::exchange(o.start_, nullptr)),
      stop_(std::exchange(o.stop_, nullptr)),
      stream_(o.stream_) {}

inline Hip::Timer& Hip::Timer::operator=(Timer&& o) noexcept {
  if (this != &o) {
    release();
    start_ = std::exchange(o.start_, nullptr);
    stop_ = std::exchange(o.stop_, nullptr);
    stream_ = o.stream_;
  }
  return *this;
}

inline void Hip::Timer::release() noexcept {
  // Failures (at process exit, after a fatal device error) are ignored; clear only our own.
  if (start_ && hipEventDestroy(start_) != hipSuccess) (void)hipGetLastError();
  if (stop_ && hipEventDestroy(stop_) != hipSuccess) (void)hipGetLastError();
  start_ = stop_ = nullptr;
}

inline void Hip::Timer::start() { CELLINT_CHECK_HIP(hipEventRecord(start_, stream_)); }

inline void Hip::Timer::stop() { CELLINT_CHECK_HIP(hipEventRecord(stop_, stream_)); }

inline float Hip::Timer::elapsed_ms() const {
  CELLINT_CHECK_HIP(hipEventSynchronize(stop_));
  float ms = 0.0f;
  CELLINT_CHECK_HIP(hipEventElapsedTime(&ms, start_, stop_));
  return ms;
}

}  // namespace cellint
