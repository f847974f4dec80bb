#pragma once
// CudaRuntime: what the shared GPU backend body (detail/gpu/backend.hpp) needs from the CUDA runtime and CUB;
// CELLINT_CHECK_CUDA. HipRuntime (detail/hip/runtime.hpp) has the same members.

#include <cstddef>
#include <string>

#include <cub/device/device_radix_sort.cuh>
#include <cub/device/device_scan.cuh>
#include <cuda_runtime.h>

#include "cellint/backend/detail/gpu/error.hpp"
#include "cellint/backend/traits.hpp"

namespace cellint::detail {

struct CudaRuntime {
  using DeviceProp = cudaDeviceProp;
  using PointerAttributes = cudaPointerAttributes;  ///< (its `device`: where the memory is)
  CELLINT_DETAIL_GPU_RUNTIME(cuda)
  static constexpr Error ErrorOutOfMemory = cudaErrorMemoryAllocation;

  static constexpr const char* name = "cuda";     ///< backend name and prefix of the runtime's calls
  static constexpr const char* runtime = "CUDA";  ///< the runtime, in messages
  static constexpr const char* type = "Cuda";     ///< the backend type, in messages
  static constexpr int warp_size = 32;            ///< threads per warp on NVIDIA GPUs

  /// True for errors after which every later CUDA call of this process fails the same way ("sticky" errors: the context
  /// is corrupt and only a new process recovers).
  static bool is_sticky(Error e) noexcept {
    switch (e) {
      case cudaErrorECCUncorrectable:
      case cudaErrorContained:
      case cudaErrorIllegalAddress:
      case cudaErrorLaunchTimeout:
      case cudaErrorAssert:
      case cudaErrorHardwareStackError:
      case cudaErrorIllegalInstruction:
      case cudaErrorMisalignedAddress:
      case cudaErrorInvalidAddressSpace:
      case cudaErrorInvalidPc:
      case cudaErrorLaunchFailure:
      case cudaErrorTensorMemoryLeak:
      case cudaErrorMpsClientTerminated:
      case cudaErrorExternalDevice:
        return true;
      default:
        return false;
    }
  }
  /// True for errors that mean "there is no usable GPU or driver in this process".
  static bool is_no_device(Error e) noexcept {
    switch (e) {
      case cudaErrorNoDevice:
      case cudaErrorInsufficientDriver:
      case cudaErrorStubLibrary:
      case cudaErrorDevicesUnavailable:
      case cudaErrorSystemDriverMismatch:
      case cudaErrorCompatNotSupportedOnDevice:
      case cudaErrorInitializationError:
        return true;
      default:
        return false;
    }
  }
  /// True when the binary holds no code for the GPU.
  static bool is_missing_binary(Error e) noexcept { return e == cudaErrorNoKernelImageForDevice; }
  static constexpr const char* sticky_hint = ", and run under compute-sanitizer to find the access";
  static constexpr const char* missing_binary_hint =
      ". The binary holds no code for this GPU: rebuild with its architecture in CMAKE_CUDA_ARCHITECTURES (90 for "
      "H100)";

  /// cudaGraphInstantiate (the runtimes' signatures differ).
  static Error GraphInstantiate(GraphExec* e, Graph g) { return cudaGraphInstantiate(e, g, 0ULL); }
  static Error HostAlloc(void** p, std::size_t bytes) { return cudaMallocHost(p, bytes); }
  static Error HostFree(void* p) { return cudaFreeHost(p); }
  /// cuStreamWaitValue32(s, p, v, CU_STREAM_WAIT_VALUE_GEQ), found through the runtime's driver entry points (no link
  /// to the driver library): work enqueued on s after it starts once (int)(*p - v) >= 0. cudaErrorNotSupported where
  /// the driver has no such call or refuses it.
  static Error StreamWaitValueGeq(Stream s, const void* p, unsigned v) {
    const WaitValue32 fn = wait_value32();
    if (!fn) return cudaErrorNotSupported;
    return fn(s, reinterpret_cast<unsigned long long>(p), v, 0u) == 0 ? cudaSuccess : cudaErrorNotSupported;
  }
  /// Whether StreamWaitValueGeq() has a driver call behind it.
  static bool CanWaitValue() { return wait_value32() != nullptr; }
  // (the driver's CUresult is an int; CUdeviceptr an unsigned long long; CU_STREAM_WAIT_VALUE_GEQ 0)
  using WaitValue32 = int (*)(Stream, unsigned long long, unsigned, unsigned);
  static WaitValue32 wait_value32() {
    static const WaitValue32 fn = [] {
      void* f = nullptr;
      bool found = false;
#if CUDART_VERSION >= 12000
      cudaDriverEntryPointQueryResult q = cudaDriverEntryPointSymbolNotFound;
#if CUDART_VERSION >= 12050
      const Error e = cudaGetDriverEntryPointByVersion("cuStreamWaitValue32", &f, 12000, cudaEnableDefault, &q);
#else
      const Error e = cudaGetDriverEntryPoint("cuStreamWaitValue32", &f, cudaEnableDefault, &q);
#endif
      found = e == cudaSuccess && q == cudaDriverEntryPointSuccess;
      if (!found) (void)cudaGetLastError();
#endif
      return found ? reinterpret_cast<WaitValue32>(f) : nullptr;
    }();
    return fn;
  }

  /// The properties that the two runtimes name or report differently.
  static std::size_t shared_per_block_optin(const DeviceProp& q, int /*dev*/) { return q.sharedMemPerBlockOptin; }
  static std::size_t shared_per_multiprocessor(const DeviceProp& q) { return q.sharedMemPerMultiprocessor; }

  /// Device-wide primitives (templates, so that CUB's kernels are compiled only where used).
  static constexpr const char* scan_name = "cub::DeviceScan::ExclusiveSum";
  template <class T>
  static Error exclusive_sum(void* temp, std::size_t& temp_bytes, const T* in, T* out, Index n, Stream s) {
    return cub::DeviceScan::ExclusiveSum(temp, temp_bytes, in, out, n, s);
  }
  static constexpr const char* sort_name = "cub::DeviceRadixSort::SortPairs";
  /// Radix sort by bits [0, key_bits) between `keys`/`keys_alt` and `values`/`values_alt`; `keys` and `values` point to
  /// the buffers that hold the result on return.
  template <class K, class V>
  static Error sort_pairs(void* temp, std::size_t& temp_bytes, K*& keys, K* keys_alt, V*& values, V* values_alt,
                          Index n, int key_bits, Stream s) {
    cub::DoubleBuffer<K> k(keys, keys_alt);
    cub::DoubleBuffer<V> v(values, values_alt);
    const Error e = cub::DeviceRadixSort::SortPairs(temp, temp_bytes, k, v, n, 0, key_bits, s);
    keys = k.Current();
    values = v.Current();
    return e;
  }
};

/// "cudaErrorX (N): text", plus what to do for errors with a known remedy.
inline std::string cuda_error_text(cudaError_t e) { return gpu_error_text<CudaRuntime>(e); }

}  // namespace cellint::detail

/// Runs a CUDA runtime call and throws cellint::GpuError (NoDevice when there is no usable GPU) naming the call, the
/// error's name and text, the file and the line when it fails.
#define CELLINT_CHECK_CUDA(call) \
  ::cellint::detail::gpu_check<::cellint::detail::CudaRuntime>((call), "", #call, __FILE__, __LINE__)

#if !defined(CELLINT_CHECK_GPU)
/// Backend-neutral spelling of the runtime check (CELLINT_CHECK_CUDA under nvcc).
#define CELLINT_CHECK_GPU(call) CELLINT_CHECK_CUDA(call)
#endif
