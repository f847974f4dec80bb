#pragma once
// HIP runtime error checking: CELLINT_CHECK_HIP, the mapping of runtime errors to cellint
// exceptions (NoDevice, GpuError) and the "context is now unusable" diagnosis.

#include <hip/hip_runtime.h>

#include <string>

#include "cellint/core/error.hpp"

namespace cellint::detail {

/// True for errors after which every later HIP call of this process fails the same way
/// ("sticky" errors: the context is corrupt and only a new process recovers).
inline bool hip_error_is_sticky(hipError_t e) noexcept {
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
inline bool hip_error_is_no_device(hipError_t e) noexcept {
  switch (e) {
    case hipErrorNoDevice:
    case hipErrorInsufficientDriver:
    case hipErrorNotInitialized:
      return true;
    default:
      return false;
  }
}

/// "hipErrorX (N): text" (ROCm's text is often the name again: then "hipErrorX (N)").
inline std::string hip_error_name_text(hipError_t e) {
  const std::string name = hipGetErrorName(e);
  const std::string text = hipGetErrorString(e);
  return text.empty() || text == name ? cat(name, " (", static_cast<int>(e), ")")
                                      : cat(name, " (", static_cast<int>(e), "): ", text);
}

/// "hipErrorX (N): text", plus what to do for errors with a known remedy.
inline std::string hip_error_text(hipError_t e) {
  std::string s = hip_error_name_text(e);
  if (hip_error_is_sticky(e))
    s += ". The HIP context is now unusable: every later HIP call in this process will fail, so "
         "restart the process instead of retrying. The fault may come from an earlier kernel: "
         "define CELLINT_DEBUG_SYNC to name it";
  else if (e == hipErrorNoBinaryForGpu || e == hipErrorInvalidDeviceFunction)
    s += ". The binary may hold no code for this GPU: rebuild with its architecture in "
         "--offload-arch / CMAKE_HIP_ARCHITECTURES (gfx90a for MI200)";
  return s;
}

/// Message for NoDevice: what the runtime said, and how to run without a GPU.
inline std::string hip_no_device_text(hipError_t e, int count) {
  if (e != hipSuccess)
    return cat("cellint: no HIP GPU was found: the HIP runtime reports ", hip_error_name_text(e),
               ". The Host backend (cellint::Host) runs without a GPU");
  return cat("cellint: no HIP GPU was found: the HIP runtime reports ", count,
             " devices. The Host backend (cellint::Host) runs without a GPU");
}

/// Result of hipGetDeviceCount, asked once per process.
struct HipDeviceCount {
  hipError_t error = hipSuccess;
  int count = 0;
};

/// The process's device count, asked once (never throws).
inline const HipDeviceCount& hip_device_count_result() noexcept {
  static const HipDeviceCount c = [] {
    HipDeviceCount r;
    r.error = hipGetDeviceCount(&r.count);
    if (r.error != hipSuccess) {
      (void)hipGetLastError();
      r.count = 0;
    }
    return r;
  }();
  return c;
}

/// Throws NoDevice when the process has no usable GPU (no driver, no device).
inline void hip_require_device() {
  const HipDeviceCount& c = hip_device_count_result();
  if (c.error != hipSuccess || c.count <= 0)
    throw NoDevice(hip_no_device_text(c.error, c.count),
                   static_cast<int>(c.error != hipSuccess ? c.error : hipErrorNoDevice));
}

/// Throws the cellint exception for a failed runtime call (`what` names the call or launch).
[[noreturn]] inline void throw_hip_error(hipError_t e, const std::string& what, const char* file,
                                         int line) {
  // A failed call also records a non-sticky error as the "last error"; clear it so that the
  // next launch check does not report it a second time against an innocent kernel.
  (void)hipGetLastError();
  if (hip_error_is_no_device(e)) throw NoDevice(hip_no_device_text(e, 0), static_cast<int>(e));
  hip_require_device();  // with no GPU at all, any failure means "no GPU"
  throw GpuError(cat("cellint: ", what, " failed at ", file, ":", line, ": ", hip_error_text(e)),
                 static_cast<int>(e));
}

/// Throws unless `e` is hipSuccess (the body of CELLINT_CHECK_HIP).
inline void hip_check(hipError_t e, const char* call, const char* file, int line) {
  if (e != hipSuccess) throw_hip_error(e, cat("HIP call `", call, "`"), file, line);
}

}  // namespace cellint::detail

/// Runs a HIP runtime call and throws cellint::GpuError (NoDevice when there is no usable GPU)
/// naming the call, the error's name and text, the file and the line when it fails.
#define CELLINT_CHECK_HIP(call) ::cellint::detail::hip_check((call), #call, __FILE__, __LINE__)

#if !defined(CELLINT_CHECK_GPU)
/// Backend-neutral spelling of the runtime check (CELLINT_CHECK_HIP under hipcc).
#  define CELLINT_CHECK_GPU(call) CELLINT_CHECK_HIP(call)
#endif
