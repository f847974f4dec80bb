#pragma once
// CUDA runtime error checking: CELLINT_CHECK_CUDA, the mapping of runtime errors to cellint
// exceptions (NoDevice, GpuError) and the "context is now unusable" diagnosis.

#include <cuda_runtime.h>

#include <string>

#include "cellint/core/error.hpp"

namespace cellint::detail {

/// True for errors after which every later CUDA call of this process fails the same way
/// ("sticky" errors: the context is corrupt and only a new process recovers).
inline bool cuda_error_is_sticky(cudaError_t e) noexcept {
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
inline bool cuda_error_is_no_device(cudaError_t e) noexcept {
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

/// "cudaErrorX (N): text", plus what to do for errors with a known remedy.
inline std::string cuda_error_text(cudaError_t e) {
  std::string s = cat(cudaGetErrorName(e), " (", static_cast<int>(e), "): ", cudaGetErrorString(e));
  if (cuda_error_is_sticky(e))
    s += ". The CUDA context is now unusable: every later CUDA call in this process will fail, so "
         "restart the process instead of retrying. The fault may come from an earlier kernel: "
         "define CELLINT_DEBUG_SYNC to name it, and run under compute-sanitizer to find the access";
  else if (e == cudaErrorNoKernelImageForDevice)
    s += ". The binary holds no code for this GPU: rebuild with its architecture in "
         "CMAKE_CUDA_ARCHITECTURES (90 for H100)";
  return s;
}

/// Message for NoDevice: what the runtime said, and how to run without a GPU.
inline std::string cuda_no_device_text(cudaError_t e, int count) {
  if (e != cudaSuccess)
    return cat("cellint: no CUDA GPU was found: the CUDA runtime reports ", cudaGetErrorName(e),
               " (", static_cast<int>(e), "): ", cudaGetErrorString(e),
               ". The Host backend (cellint::Host) runs without a GPU");
  return cat("cellint: no CUDA GPU was found: the CUDA runtime reports ", count,
             " devices. The Host backend (cellint::Host) runs without a GPU");
}

/// Result of cudaGetDeviceCount, asked once per process.
struct CudaDeviceCount {
  cudaError_t error = cudaSuccess;
  int count = 0;
};

/// The process's device count, asked once (never throws).
inline const CudaDeviceCount& cuda_device_count_result() noexcept {
  static const CudaDeviceCount c = [] {
    CudaDeviceCount r;
    r.error = cudaGetDeviceCount(&r.count);
    if (r.error != cudaSuccess) {
      (void)cudaGetLastError();
      r.count = 0;
    }
    return r;
  }();
  return c;
}

/// Throws NoDevice when the process has no usable GPU (no driver, no device).
inline void cuda_require_device() {
  const CudaDeviceCount& c = cuda_device_count_result();
  if (c.error != cudaSuccess || c.count <= 0)
    throw NoDevice(cuda_no_device_text(c.error, c.count),
                   static_cast<int>(c.error != cudaSuccess ? c.error : cudaErrorNoDevice));
}

/// Throws the cellint exception for a failed runtime call (`what` names the call or launch).
[[noreturn]] inline void throw_cuda_error(cudaError_t e, const std::string& what, const char* file,
                                          int line) {
  // A failed call also records a non-sticky error as the "last error"; clear it so that the
  // next launch check does not report it a second time against an innocent kernel.
  (void)cudaGetLastError();
  if (cuda_error_is_no_device(e)) throw NoDevice(cuda_no_device_text(e, 0), static_cast<int>(e));
  cuda_require_device();  // with no GPU at all, any failure means "no GPU"
  throw GpuError(cat("cellint: ", what, " failed at ", file, ":", line, ": ", cuda_error_text(e)),
                 static_cast<int>(e));
}

/// Throws unless `e` is cudaSuccess (the body of CELLINT_CHECK_CUDA).
inline void cuda_check(cudaError_t e, const char* call, const char* file, int line) {
  if (e != cudaSuccess) throw_cuda_error(e, cat("CUDA call `", call, "`"), file, line);
}

}  // namespace cellint::detail

/// Runs a CUDA runtime call and throws cellint::GpuError (NoDevice when there is no usable GPU)
/// naming the call, the error's name and text, the file and the line when it fails.
#define CELLINT_CHECK_CUDA(call) ::cellint::detail::cuda_check((call), #call, __FILE__, __LINE__)

#if !defined(CELLINT_CHECK_GPU)
/// Backend-neutral spelling of the runtime check (CELLINT_CHECK_CUDA under nvcc).
#  define CELLINT_CHECK_GPU(call) CELLINT_CHECK_CUDA(call)
#endif
