#pragma once
/// @file
/// The HIP backend: device memory from hipMalloc, block kernels launched on HIP streams,
/// device-wide scan and radix sort from rocPRIM. Compile the including file with hipcc
/// (`-std=c++17 --offload-arch=...`) or as the CMake HIP language, and link `cellint::hip`.

#if !defined(__HIPCC__) && !defined(__HIP__)
#  error "cellint/backend/hip.hpp needs hipcc: compile this file as HIP and link cellint::hip"
#endif

#include <hip/hip_runtime.h>

#include <cstddef>
#include <cstdint>

#include "cellint/backend/detail/gpu_block.hpp"
#include "cellint/backend/detail/hip/error.hpp"
#include "cellint/backend/traits.hpp"
#include "cellint/core/error.hpp"

namespace cellint {

/// HIP backend (AMD GPUs through ROCm). An empty tag type; every member is static and acts on the
/// calling thread's current device (hipSetDevice). Streams default to the null stream. Members that
/// synchronise say so; the others only enqueue work on the stream.
///
/// Errors: runtime failures throw GpuError (call, error name and text, file and line);
/// NoDevice when no GPU or driver is usable; OutOfMemory when device memory runs out. Errors
/// after which the HIP runtime is unusable (illegal address, launch failure, device assert...)
/// say so: the process must restart, a retry cannot succeed.
struct Hip {
  /// Stream handle; a default-constructed one is the default stream.
  using Stream = hipStream_t;
  /// Runs block kernels.
  static constexpr bool is_gpu_like = true;
  /// Backend pointers are device memory, not host-dereferenceable.
  static constexpr bool device_memory = true;
  /// Threads per wavefront on AMD CDNA GPUs (gfx9: MI100, MI200, MI300).
  static constexpr int warp_size = 64;

  /// Backend name for logs: "hip".
  static const char* name() { return "hip"; }

  /// Allocates `bytes` of device memory with hipMalloc (never managed memory). A request for
  /// 0 bytes still returns a unique non-null pointer.
  /// @throws OutOfMemory with the request and the device's free and total memory
  /// @throws NoDevice when no GPU is usable
  static void* allocate(std::size_t bytes);
  /// Frees memory from allocate(); null is ignored. Never throws (runtime errors at process
  /// exit or after a fatal device error are ignored).
  static void deallocate(void* p) noexcept;
  /// Copies `bytes` on stream `s` (hipMemcpyAsync with the named kind). DeviceToHost then
  /// synchronises `s`, so the host can read `dst` on return; HostToDevice returns once `src`
  /// may be reused for pageable memory (pinned sources must stay unchanged until `s` is
  /// synchronised); DeviceToDevice only enqueues; HostToHost is a plain memmove.
  /// @throws GpuError
  static void copy(void* dst, const void* src, std::size_t bytes, CopyKind kind, Stream s = {});
  /// Sets `bytes` bytes at `dst` to `byte` (hipMemsetAsync on `s`; does not synchronise).
  /// @throws GpuError
  static void fill_bytes(void* dst, int byte, std::size_t bytes, Stream s = {});
  /// Waits for all work enqueued on `s`. @throws GpuError (with the error of a failed kernel)
  static void synchronize(Stream s = {});
  /// Properties of the current device (cached per device after the first call).
  /// @throws NoDevice when hipGetDeviceCount fails (no driver, error 35...) or finds no device
  static DeviceProperties properties();

  /// Launches `kernel` (a trivially copyable block kernel, see backend/traits.hpp) as
  /// `shape.grid` blocks of `shape.block` threads with `shape.shared_bytes` of dynamic shared
  /// memory on stream `s`. grid == 0 launches nothing. AMD GPUs allow their whole LDS (64 KiB
  /// on gfx90a) without opting in, so there a larger request is only validated; above the
  /// device's default limit (HIP on NVIDIA) the kernel is opted in once per kernel type and
  /// device (hipFuncSetAttribute). Every launch
  /// is checked with hipGetLastError; with CELLINT_DEBUG_SYNC defined the stream is also
  /// synchronised and checked, so a failing kernel is named at once. Does not synchronise
  /// otherwise.
  /// @throws InvalidArgument when shared_bytes exceeds the device's opt-in limit
  /// @throws GpuError naming the kernel type, the launch shape and the error
  template <class Kernel>
  static void launch(const LaunchShape& shape, const Kernel& kernel, Stream s = {});

  /// Largest block size `kernel` can be launched with (register-limited; 1024 at most), asked
  /// of the runtime once per kernel type and device.
  /// @throws GpuError
  template <class Kernel>
  static int max_threads_for(const Kernel& kernel);

  /// `out[i] = in[0] + ... + in[i-1]` for i in [0, n) on stream `s` (rocprim::exclusive_scan
  /// with rocprim::plus). `in == out` (in place) is allowed. Temporary storage is a per-thread,
  /// per-stream scratch buffer that only grows. Does not synchronise.
  /// (A template only so that rocPRIM's kernels are compiled where the scan is used.)
  /// @throws OutOfMemory, GpuError
  template <class Unused = void>
  static void exclusive_scan(const std::uint32_t* in, std::uint32_t* out, Index n, Stream s = {});

  /// Stable ascending sort of `keys[0, n)` with `values` alongside, in place, comparing only
  /// bits [0, key_bits) of the keys (rocprim::radix_sort_pairs; the alternate buffers
  /// live in the scratch buffer). Does not synchronise.
  /// @pre 0 <= key_bits <= 32; with key_bits == 0 or n < 2 nothing is done
  /// @throws InvalidArgument, OutOfMemory, GpuError
  template <class Unused = void>
  static void sort_pairs(std::uint32_t* keys, Index* values, Index n, int key_bits, Stream s = {});

  /// Times GPU work on a stream with a pair of HIP events. Not copyable; movable.
  class Timer {
   public:
    /// Creates the two events for stream `s`. @throws GpuError, NoDevice
    explicit Timer(Stream s = {});
    ~Timer();
    Timer(const Timer&) = delete;
    Timer& operator=(const Timer&) = delete;
    /// Takes over `o`'s events.
    Timer(Timer&& o) noexcept;
    /// Takes over `o`'s events.
    Timer& operator=(Timer&& o) noexcept;
    /// Records the start event on the stream.
    void start();
    /// Records the stop event on the stream.
    void stop();
    /// Milliseconds between start() and stop(); waits for the stop event.
    /// @throws GpuError
    float elapsed_ms() const;

   private:
    void release() noexcept;
    hipEvent_t start_ = nullptr;
    hipEvent_t stop_ = nullptr;
    Stream stream_ = nullptr;
  };
};

}  // namespace cellint

#include "cellint/backend/detail/hip/backend.hpp"
