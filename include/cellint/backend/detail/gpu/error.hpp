#pragma once
// Runtime error checking shared by the CUDA and HIP backends, written once over a runtime-traits struct RT
// (detail::CudaRuntime, detail::HipRuntime): the mapping of runtime errors to cellint exceptions (NoDevice, GpuError),
// the "context is now unusable" diagnosis and CELLINT_GPU_CHECK. RT supplies the error type and codes,
// GetErrorName/GetErrorString/GetLastError/GetDeviceCount, the is_sticky/is_no_device/is_missing_binary tables, and the
// names and hints used in messages (see cuda/runtime.hpp for the full list; the members spelt alike by both runtimes
// come from CELLINT_DETAIL_GPU_RUNTIME below).

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

/// Throws NoDevice when `e` means "no usable GPU", or when the process has no GPU at all (then any failure means "no
/// GPU").
template <class RT>
void gpu_throw_if_no_device(typename RT::Error e) {
  if (RT::is_no_device(e)) throw NoDevice(gpu_no_device_text<RT>(e, 0), static_cast<int>(e));
  gpu_require_device<RT>();
}

/// Throws the cellint exception for a failed runtime call (`what` names the call or launch).
template <class RT>
[[noreturn]] void throw_gpu_error(typename RT::Error e, const std::string& what, const char* file, int line) {
  // A failed call also records a non-sticky error as the "last error"; clear it so that the next launch check does not
  // report it a second time against an innocent kernel.
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

/// The members that CudaRuntime and HipRuntime spell alike but for the runtime's prefix `rt` (cuda, hip): types, error
/// codes, and the runtime calls, named as the runtime names them less the prefix. MemcpyAsync takes a CopyKind (never
/// HostToHost); FuncSetMaxDynamicSharedMemorySize is FuncSetAttribute(f, MaxDynamicSharedMemorySize, bytes).
#define CELLINT_DETAIL_GPU_RUNTIME(rt)                                                                               \
  using Error = rt##Error_t;                                                                                         \
  using Stream = rt##Stream_t;                                                                                       \
  using Event = rt##Event_t;                                                                                         \
  using FuncAttributes = rt##FuncAttributes;                                                                         \
  using Graph = rt##Graph_t;                                                                                         \
  using GraphExec = rt##GraphExec_t;                                                                                 \
  static constexpr Error Success = rt##Success;                                                                      \
  static constexpr Error ErrorNoDevice = rt##ErrorNoDevice;                                                          \
  static constexpr Error ErrorInvalidValue = rt##ErrorInvalidValue;                                                  \
  static constexpr Error ErrorInvalidDevicePointer = rt##ErrorInvalidDevicePointer;                                  \
  static constexpr Error ErrorInvalidConfiguration = rt##ErrorInvalidConfiguration;                                  \
  static constexpr Error ErrorLaunchOutOfResources = rt##ErrorLaunchOutOfResources;                                  \
  static const char* GetErrorName(Error e) { return rt##GetErrorName(e); }                                           \
  static const char* GetErrorString(Error e) { return rt##GetErrorString(e); }                                       \
  static Error GetLastError() { return rt##GetLastError(); }                                                         \
  static Error GetDeviceCount(int* n) { return rt##GetDeviceCount(n); }                                              \
  static Error GetDevice(int* dev) { return rt##GetDevice(dev); }                                                    \
  static Error GetDeviceProperties(DeviceProp* q, int dev) { return rt##GetDeviceProperties(q, dev); }               \
  static Error Malloc(void** p, std::size_t bytes) { return rt##Malloc(p, bytes); }                                  \
  static Error Free(void* p) { return rt##Free(p); }                                                                 \
  static Error MemGetInfo(std::size_t* free_bytes, std::size_t* total) { return rt##MemGetInfo(free_bytes, total); } \
  static Error MemcpyAsync(void* dst, const void* src, std::size_t bytes, CopyKind kind, Stream s) {                 \
    return rt##MemcpyAsync(dst, src, bytes,                                                                          \
                           kind == CopyKind::HostToDevice   ? rt##MemcpyHostToDevice                                 \
                           : kind == CopyKind::DeviceToHost ? rt##MemcpyDeviceToHost                                 \
                                                            : rt##MemcpyDeviceToDevice,                              \
                           s);                                                                                       \
  }                                                                                                                  \
  static Error MemsetAsync(void* dst, int byte, std::size_t bytes, Stream s) {                                       \
    return rt##MemsetAsync(dst, byte, bytes, s);                                                                     \
  }                                                                                                                  \
  static Error StreamSynchronize(Stream s) { return rt##StreamSynchronize(s); }                                      \
  static Error FuncGetAttributes(FuncAttributes* a, const void* f) { return rt##FuncGetAttributes(a, f); }           \
  static Error FuncSetMaxDynamicSharedMemorySize(const void* f, int bytes) {                                         \
    return rt##FuncSetAttribute(f, rt##FuncAttributeMaxDynamicSharedMemorySize, bytes);                              \
  }                                                                                                                  \
  static Error EventCreate(Event* e) { return rt##EventCreate(e); }                                                  \
  static Error EventDestroy(Event e) { return rt##EventDestroy(e); }                                                 \
  static Error EventRecord(Event e, Stream s) { return rt##EventRecord(e, s); }                                      \
  static Error EventSynchronize(Event e) { return rt##EventSynchronize(e); }                                         \
  static Error EventElapsedTime(float* ms, Event a, Event b) { return rt##EventElapsedTime(ms, a, b); }              \
  static Error StreamCreate(Stream* s) { return rt##StreamCreate(s); }                                               \
  static Error StreamCreateSide(Stream* s, int priority) {                                                           \
    return rt##StreamCreateWithPriority(s, rt##StreamNonBlocking, priority);                                         \
  }                                                                                                                  \
  static Error DeviceGetStreamPriorityRange(int* least, int* greatest) {                                             \
    return rt##DeviceGetStreamPriorityRange(least, greatest);                                                        \
  }                                                                                                                  \
  static Error StreamWaitEvent(Stream s, Event e) { return rt##StreamWaitEvent(s, e, 0); }                           \
  static Error EventCreateUntimed(Event* e) { return rt##EventCreateWithFlags(e, rt##EventDisableTiming); }          \
  static Error StreamDestroy(Stream s) { return rt##StreamDestroy(s); }                                              \
  static Error StreamBeginCapture(Stream s) { return rt##StreamBeginCapture(s, rt##StreamCaptureModeThreadLocal); }  \
  static Error StreamEndCapture(Stream s, Graph* g) { return rt##StreamEndCapture(s, g); }                           \
  static Error GraphLaunch(GraphExec g, Stream s) { return rt##GraphLaunch(g, s); }                                  \
  static Error GraphDestroy(Graph g) { return rt##GraphDestroy(g); }                                                 \
  static Error GraphExecDestroy(GraphExec g) { return rt##GraphExecDestroy(g); }                                     \
  using IpcHandle = rt##IpcMemHandle_t;                                                                              \
  static Error IpcGetMemHandle(IpcHandle* h, void* p) { return rt##IpcGetMemHandle(h, p); }                          \
  static Error IpcOpenMemHandle(void** p, IpcHandle h) {                                                             \
    return rt##IpcOpenMemHandle(p, h, rt##IpcMemLazyEnablePeerAccess);                                               \
  }                                                                                                                  \
  static Error IpcCloseMemHandle(void* p) { return rt##IpcCloseMemHandle(p); }                                       \
  using IpcEventHandle = rt##IpcEventHandle_t;                                                                       \
  static Error EventCreateInterprocess(Event* e) {                                                                   \
    return rt##EventCreateWithFlags(e, rt##EventInterprocess | rt##EventDisableTiming);                              \
  }                                                                                                                  \
  static Error IpcGetEventHandle(IpcEventHandle* h, Event e) { return rt##IpcGetEventHandle(h, e); }                 \
  static Error IpcOpenEventHandle(Event* e, IpcEventHandle h) { return rt##IpcOpenEventHandle(e, h); }               \
  template <class Attributes>                                                                                        \
  static Error PointerGetAttributes(Attributes* a, const void* p) {                                                  \
    return rt##PointerGetAttributes(a, p);                                                                           \
  }                                                                                                                  \
  static Error DeviceCanAccessPeer(int* can, int dev, int peer) { return rt##DeviceCanAccessPeer(can, dev, peer); }  \
  static Error DeviceGetPCIBusId(char* id, int len, int dev) { return rt##DeviceGetPCIBusId(id, len, dev); }

/// Runs `RT::call` (a runtime call named without its prefix, e.g. `GetDevice(&dev)`) and throws as CELLINT_CHECK_CUDA /
/// CELLINT_CHECK_HIP do, naming it with the prefix (`cudaGetDevice(&dev)`).
#define CELLINT_GPU_CHECK(RT, call) ::cellint::detail::gpu_check<RT>(RT::call, RT::name, #call, __FILE__, __LINE__)
