#pragma once
/// @file
/// The CUDA backend: device memory from cudaMalloc, block kernels launched on CUDA streams,
/// device-wide scan and radix sort from CUB. Compile the including file with nvcc (a `.cu`
/// file) and link `cellint::cuda`.

#if !defined(__CUDACC__)
#  error "cellint/backend/cuda.hpp needs nvcc: compile this file as CUDA (.cu) and link cellint::cuda"
#endif

#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>

#include "cellint/backend/detail/cuda/error.hpp"
#include "cellint/backend/detail/gpu_block.hpp"
#include "cellint/backend/traits.hpp"
#include "cellint/core/error.hpp"

namespace cellint {

/// CUDA backend (NVIDIA GPUs). An empty tag type; every member is static and acts on the
/// calling thread's current device (cudaSetDevice). Streams default to the legacy default
/// stream. Members that synchronise say so; the others only enqueue work on the stream.
///
/// Errors: runtime failures throw GpuError (call, error name and text, file and line);
/// NoDevice when no GPU or driver is usable; OutOfMemory when device memory runs out. Errors
/// after which the CUDA context is unusable (illegal address, launch failure, device assert...)
/// say so: the process must restart, a retry cannot succeed.
struct Cuda {
  /// Stream handle; a default-constructed one is the default stream.
  using Stream = cudaStream_t;
  /// Runs block kernels.
  static constexpr bool is_gpu_like = true;
  /// Backend pointers are device memory, not host-dereferenceable.
  static constexpr bool device_memory = true;
  /// Threads per warp on NVIDIA GPUs.
  static constexpr int warp_size = 32;

  /// Backend name for logs: "cuda".
  static const char* name() { return "cuda"; }

  /// Allocates `bytes` of device memory with cudaMalloc (never managed memory). A request for
  /// 0 bytes still returns a unique non-null pointer.
  /// @throws OutOfMemory with the request and the device's free and total memory
  /// @throws NoDevice when no GPU is usable
  static void* allocate(std::size_t bytes);
  /// Frees memory from allocate(); null is ignored. Never throws (runtime errors at process
  /// exit or after a fatal device error are ignored).
  static void deallocate(void* p) noexcept;
  /// Copies `bytes` on stream `s` (cudaMemcpyAsync with the named kind). DeviceToHost then
  /// synchronises `s`, so the host can read `dst` on return; HostToDevice returns once `src`
  /// may be reused for pageable memory (pinned sources must stay unchanged until `s` is
  /// synchronised); DeviceToDevice only enqueues; HostToHost is a plain memmove.
  /// @throws GpuError
  static void copy(void* dst, const void* src, std::size_t bytes, CopyKind kind, Stream s = {});
  /// Sets `bytes` bytes at `dst` to `byte` (cudaMemsetAsync on `s`; does not synchronise).
  /// @throws GpuError
  static void fill_bytes(void* dst, int byte, std::size_t bytes, Stream s = {});
  /// Waits for all work enqueued on `s`. @throws GpuError (with the error of a failed kernel)
  static void synchronize(Stream s = {});
  /// Properties of the current device (cached per device after the first call).
  /// @throws NoDevice when cudaGetDeviceCount fails (no driver, error 35...) or finds no device
  static DeviceProperties properties();

  /// Launches `kernel` (a trivially copyable block kernel, see backend/traits.hpp) as
  /// `shape.grid` blocks of `shape.block` threads with `shape.shared_bytes` of dynamic shared
  /// memory on stream `s`. grid == 0 launches nothing. Above 48 KiB of shared memory the
  /// kernel is opted in once per kernel type and device (cudaFuncSetAttribute). Every launch
  /// is checked with cudaGetLastError; with CELLINT_DEBUG_SYNC defined the stream is also
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

  /// `out[i] = in[0] + ... + in[i-1]` for i in [0, n) on stream `s` (cub::DeviceScan::
  /// ExclusiveSum). `in == out` (in place) is allowed. Temporary storage is a per-thread,
  /// per-stream scratch buffer that only grows. Does not synchronise.
  /// (A template only so that CUB's kernels are compiled where the scan is used.)
  /// @throws OutOfMemory, GpuError
  template <class Unused = void>
  static void exclusive_scan(const std::uint32_t* in, std::uint32_t* out, Index n, Stream s = {});

  /// Stable ascending sort of `keys[0, n)` with `values` alongside, in place, comparing only
  /// bits [0, key_bits) of the keys (cub::DeviceRadixSort::SortPairs; the alternate buffers
  /// live in the scratch buffer). Does not synchronise.
  /// @pre 0 <= key_bits <= 32; with key_bits == 0 or n < 2 nothing is done
  /// @throws InvalidArgument, OutOfMemory, GpuError
  template <class Unused = void>
  static void sort_pairs(std::uint32_t* keys, Index* values, Index n, int key_bits, Stream s = {});

  /// Times GPU work on a stream with a pair of CUDA events. Not copyable; movable.
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
    cudaEvent_t start_ = nullptr;
    cudaEvent_t stop_ = nullptr;
    Stream stream_ = nullptr;
  };
};

}  // namespace cellint

#include "cellint/backend/detail/cuda/backend.hpp"
