#pragma once
// HipRuntime: what the shared GPU backend body (detail/gpu/backend.hpp) needs from the HIP runtime and rocPRIM;
// CELLINT_CHECK_HIP. The members are those of CudaRuntime (detail/cuda/runtime.hpp).

#include <cstddef>
#include <string>

#include <hip/hip_runtime.h>
#include <rocprim/device/device_radix_sort.hpp>
#include <rocprim/device/device_scan.hpp>
#include <rocprim/functional.hpp>

#include "cellint/backend/detail/gpu/error.hpp"
#include "cellint/backend/traits.hpp"

namespace cellint::detail {

struct HipRuntime {
  using DeviceProp = hipDeviceProp_t;
  using PointerAttributes = hipPointerAttribute_t;  ///< (its `device`: where the memory is)
  CELLINT_DETAIL_GPU_RUNTIME(hip)
  static constexpr Error ErrorOutOfMemory = hipErrorOutOfMemory;

  static constexpr const char* name = "hip";     ///< backend name and prefix of the runtime's calls
  static constexpr const char* runtime = "HIP";  ///< the runtime, in messages
  static constexpr const char* type = "Hip";     ///< the backend type, in messages
  static constexpr int warp_size = 64;           ///< threads per wavefront on AMD CDNA GPUs (gfx9: MI100-MI300)

  /// True for errors after which every later HIP call of this process fails the same way.
  static bool is_sticky(Error e) noexcept {
    switch (e) {
      case hipErrorECCNotCorrectable:
      case hipErrorIllegalAddress:
      case hipErrorLaunchTimeOut:
      case hipErrorAssert:
      case hipErrorLaunchFailure:
        return true;
      default:
        return false;
    }
  }
  /// True for errors that mean "there is no usable GPU or driver in this process".
  static bool is_no_device(Error e) noexcept {
    return e == hipErrorNoDevice || e == hipErrorInsufficientDriver || e == hipErrorNotInitialized;
  }
  /// True when the binary may hold no code for the GPU.
  static bool is_missing_binary(Error e) noexcept {
    return e == hipErrorNoBinaryForGpu || e == hipErrorInvalidDeviceFunction;
  }
  static constexpr const char* sticky_hint = "";
  static constexpr const char* missing_binary_hint =
      ". The binary may hold no code for this GPU: rebuild with its architecture in --offload-arch / "
      "CMAKE_HIP_ARCHITECTURES (gfx90a for MI200)";

  /// hipGraphInstantiate (the runtimes' signatures differ).
  static Error GraphInstantiate(GraphExec* e, Graph g) { return hipGraphInstantiate(e, g, nullptr, nullptr, 0); }
  static Error HostAlloc(void** p, std::size_t bytes) { return hipHostMalloc(p, bytes, 0); }
  static Error HostFree(void* p) { return hipHostFree(p); }
  /// hipStreamWaitValue32(s, p, v, hipStreamWaitValueGte): work enqueued on s after it starts once *p >= v.
  static Error StreamWaitValueGeq(Stream s, const void* p, unsigned v) {
    return hipStreamWaitValue32(s, const_cast<void*>(p), v, hipStreamWaitValueGte, 0xFFFFFFFFu);
  }
  /// Whether the current device takes StreamWaitValueGeq().
  static bool CanWaitValue() {
    int dev = 0, can = 0;
    if (hipGetDevice(&dev) != hipSuccess ||
        hipDeviceGetAttribute(&can, hipDeviceAttributeCanUseStreamWaitValue, dev) != hipSuccess) {
      (void)hipGetLastError();
      return false;
    }
    return can != 0;
  }

  /// The opt-in limit is a CUDA notion: HIP on AMD reports no such attribute (ROCm 5) and lets every kernel use
  /// sharedMemPerBlock (the whole 64 KiB LDS on gfx90a); 0 when not reported.
  static std::size_t shared_per_block_optin(const DeviceProp&, int dev) {
    int optin = 0;
    if (hipDeviceGetAttribute(&optin, hipDeviceAttributeSharedMemPerBlockOptin, dev) != hipSuccess) {
      (void)hipGetLastError();
      optin = 0;
    }
    return static_cast<std::size_t>(optin > 0 ? optin : 0);
  }
  static std::size_t shared_per_multiprocessor(const DeviceProp& q) { return q.maxSharedMemoryPerMultiProcessor; }

  /// Device-wide primitives (templates, so that rocPRIM's kernels are compiled only where used).
  static constexpr const char* scan_name = "rocprim::exclusive_scan";
  template <class T>
  static Error exclusive_sum(void* temp, std::size_t& temp_bytes, const T* in, T* out, Index n, Stream s) {
    return rocprim::exclusive_scan(temp, temp_bytes, in, out, T(0), static_cast<std::size_t>(n), rocprim::plus<T>(), s);
  }
  static constexpr const char* sort_name = "rocprim::radix_sort_pairs";
  /// Radix sort by bits [0, key_bits) between `keys`/`keys_alt` and `values`/`values_alt`; `keys` and `values` point to
  /// the buffers that hold the result on return.
  template <class K, class V>
  static Error sort_pairs(void* temp, std::size_t& temp_bytes, K*& keys, K* keys_alt, V*& values, V* values_alt,
                          Index n, int key_bits, Stream s) {
    rocprim::double_buffer<K> k(keys, keys_alt);
    rocprim::double_buffer<V> v(values, values_alt);
    const Error e = rocprim::radix_sort_pairs(temp, temp_bytes, k, v, static_cast<std::size_t>(n), 0u,
                                              static_cast<unsigned>(key_bits), s);
    keys = k.current();
    values = v.current();
    return e;
  }
};

/// "hipErrorX (N): text", plus what to do for errors with a known remedy.
inline std::string hip_error_text(hipError_t e) { return gpu_error_text<HipRuntime>(e); }

}  // namespace cellint::detail

/// Runs a HIP runtime call and throws cellint::GpuError (NoDevice when there is no usable GPU) naming the call, the
/// error's name and text, the file and the line when it fails.
#define CELLINT_CHECK_HIP(call) \
  ::cellint::detail::gpu_check<::cellint::detail::HipRuntime>((call), "", #call, __FILE__, __LINE__)

#if !defined(CELLINT_CHECK_GPU)
/// Backend-neutral spelling of the runtime check (CELLINT_CHECK_HIP under hipcc).
#define CELLINT_CHECK_GPU(call) CELLINT_CHECK_HIP(call)
#endif
