#pragma once
// Runtime error checking shared by the CUDA and HIP backends, written once over a runtime-traits
// struct RT (detail::CudaRuntime, detail::HipRuntime): the mapping of runtime errors to cellint
// exceptions (NoDevice, GpuError), the "context is now unusable" diagnosis and CELLINT_GPU_CHECK.
// RT supplies the error type and codes, GetErrorName/GetErrorString/GetLastError/
// GetDeviceCount, the is_sticky/is_no_device/is_missing_binary tables, and the names and hints
// used in messages (see cuda/runtime.hpp for the full list).

#include <string>

#include "cellint/core/error.hpp"

namespace cellint::detail {

/// "cudaErrorX (N): text" (ROCm's text is often the name again: then "hipErrorX (N)").
template <class RT>
std::string gpu_error_name_text(typename RT::Error e) {
  const std::string name = RT::GetErrorName(e);
  const std::string text = RT::GetErrorString(e);
  return text.empty() || text == name ? cat(name, " (", static_cast<int>(e), ")")
                                      : cat(name, " (", static_cast<int>(e), "): ", text);
}

/// "cudaErrorX (N): text", plus what to do for errors with a known remedy.
template <class RT>
std::string gpu_error_text(typename RT::Error e) {
  std::string s = gpu_error_name_text<RT>(e);
  if (RT::is_sticky(e))
    s += cat(". The ", RT::runtime, " context is now unusable: every later ", RT::runtime,
             " call in this process will fail, so restart the process instead of retrying. The "
             "fault may come from an earlier kernel: define CELLINT_DEBUG_SYNC to name it",
             RT::sticky_hint);
  else if (RT::is_missing_binary(e))
    s += RT::missing_binary_hint;
  return s;
}

/// Message for NoDevice: what the runtime said, and how to run without a GPU.
template <class RT>
std::string gpu_no_device_text(typename RT::Error e, int count) {
  return cat("cellint: no ", RT::runtime, " GPU was found: the ", RT::runtime, " runtime reports ",
             e != RT::Success ? gpu_error_name_text<RT>(e) : cat(count, " devices"),
             ". The Host backend (cellint::Host) runs without a GPU");
}

/// Result of GetDeviceCount, asked once per process.
template <class RT>
struct GpuDeviceCount {
  typename RT::Error error = RT::Success;
  int count = 0;
};

/// The process's device count, asked once (never throws).
template <class RT>
const GpuDeviceCount<RT>& gpu_device_count_result() noexcept {
  static const GpuDeviceCount<RT> c = [] {
    GpuDeviceCount<RT> r;
    r.error = RT::GetDeviceCount(&r.count);
    if (r.error != RT::Success) {
      (void)RT::GetLastError();
      r.count = 0;
    }
    return r;
  }();
  return c;
}

/// Throws NoDevice when the process has no usable GPU (no driver, no device).
template <class RT>
void gpu_require_device() {
  const GpuDeviceCount<RT>& c = gpu_device_count_result<RT>();
  if (c.error != RT::Success || c.count <= 0)
    throw NoDevice(gpu_no_device_text<RT>(c.error, c.count),
                   static_cast<int>(c.error != RT::Success ? c.error : RT::ErrorNoDevice));
}

/// Throws NoDevice when `e` means "no usable GPU", or when the process has no GPU at all (then
/// any failure means "no GPU").
template <class RT>
void gpu_throw_if_no_device(typename RT::Error e) {
  if (RT::is_no_device(e)) throw NoDevice(gpu_no_device_text<RT>(e, 0), static_cast<int>(e));
  gpu_require_device<RT>();
}

/// Throws the cellint exception for a failed runtime call (`what` names the call or launch).
template <class RT>
[[noreturn]] void throw_gpu_error(typename RT::Error e, const std::string& what, const char* file, int line) {
  // A failed call also records a non-sticky error as the "last error"; clear it so that the
  // next launch check does not report it a second time against an innocent kernel.
  (void)RT::GetLastError();
  gpu_throw_if_no_device<RT>(e);
  throw GpuError(cat("cellint: ", what, " failed at ", file, ":", line, ": ", gpu_error_text<RT>(e)),
                 static_cast<int>(e));
}

/// Throws unless `e` is success; the message names the call as "<RUNTIME> call `<prefix><call>`".
template <class RT>
void gpu_check(typename RT::Error e, const char* prefix, const char* call, const char* file, int line) {
  if (e != RT::Success) throw_gpu_error<RT>(e, cat(RT::runtime, " call `", prefix, call, "`"), file, line);
}

}  // namespace cellint::detail

/// Runs `RT::call` (a runtime call named without its prefix, e.g. `GetDevice(&dev)`) and throws
/// as CELLINT_CHECK_CUDA / CELLINT_CHECK_HIP do, naming it with the prefix (`cudaGetDevice(&dev)`).
#define CELLINT_GPU_CHECK(RT, call) ::cellint::detail::gpu_check<RT>(RT::call, RT::name, #call, __FILE__, __LINE__)
