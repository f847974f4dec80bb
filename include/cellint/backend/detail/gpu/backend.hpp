#pragma once
// GpuBackend<RT>: the body of the CUDA and HIP backends, written once over a runtime-traits struct RT
// (detail::CudaRuntime in cuda/runtime.hpp, detail::HipRuntime in hip/runtime.hpp) that names the runtime's types,
// error codes and calls, and its device-wide scan and radix sort. cellint::Cuda and cellint::Hip derive from it. Only
// nvcc and hipcc compile this file.

#include <algorithm>
#include <cstring>
#include <memory>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "cellint/backend/detail/gpu/error.hpp"
#include "cellint/backend/detail/gpu_block.hpp"
#include "cellint/backend/traits.hpp"
#include "cellint/core/error.hpp"

namespace cellint::detail {

/// Dynamic shared memory below which no device needs checks or opt-in (48 KiB on NVIDIA, 64 KiB on AMD: the real
/// default limit is properties().shared_per_block).
inline constexpr std::size_t gpu_default_shared_bytes = 48 * 1024;

/// Rounds up to a 256-byte boundary (the alignment CUB and rocPRIM use).
inline std::size_t gpu_align256(std::size_t n) { return (n + 255) / 256 * 256; }

/// A GPU backend (see cellint::Cuda and cellint::Hip): an empty tag type; every member is static and acts on the
/// calling thread's current device (cudaSetDevice / hipSetDevice). Streams default to the default (null) stream.
/// Members that synchronise say so; the others only enqueue work on the stream.
///
/// Errors: runtime failures throw GpuError (call, error name and text, file and line); NoDevice when no GPU or driver
/// is usable; OutOfMemory when device memory runs out. Errors after which the runtime's context is unusable (illegal
/// address, launch failure, device assert...) say so: the process must restart, a retry cannot succeed.
template <class RT>
struct GpuBackend {
  /// Stream handle; a default-constructed one is the default stream.
  using Stream = typename RT::Stream;
  /// Runs block kernels.
  static constexpr bool is_gpu_like = true;
  /// Backend pointers are device memory, not host-dereferenceable.
  static constexpr bool device_memory = true;
  /// Threads per warp: 32 on NVIDIA GPUs, 64 per wavefront on AMD CDNA GPUs.
  static constexpr int warp_size = RT::warp_size;

  /// Backend name for logs: "cuda" or "hip".
  static const char* name() { return RT::name; }

  /// Allocates `bytes` of device memory with cudaMalloc / hipMalloc (never managed memory). A request for 0 bytes still
  /// returns a unique non-null pointer.
  /// @throws OutOfMemory with the request and the device's free and total memory
  /// @throws NoDevice when no GPU is usable
  static void* allocate(std::size_t bytes) {
    void* p = nullptr;
    const typename RT::Error e = RT::Malloc(&p, bytes ? bytes : 1);
    if (e == RT::ErrorOutOfMemory) {
      (void)RT::GetLastError();
      std::size_t free_bytes = 0, total_bytes = 0;
      const bool known = RT::MemGetInfo(&free_bytes, &total_bytes) == RT::Success;
      (void)RT::GetLastError();
      int dev = -1;
      (void)RT::GetDevice(&dev);
      const std::string request = cat("cellint: ", RT::name, "Malloc of ", gpu_bytes_text(bytes), " failed ");
      throw OutOfMemory(known ? cat(request, "on device ", dev, ": ", gpu_bytes_text(free_bytes), " free of ",
                                    gpu_bytes_text(total_bytes), "; reduce the particle count")
                              : cat(request, "(device memory exhausted); reduce the particle count"),
                        static_cast<int>(e));
    }
    if (e != RT::Success) throw_gpu_error<RT>(e, cat(RT::name, "Malloc of ", bytes, " bytes"), __FILE__, __LINE__);
    return p;
  }

  /// Frees memory from allocate(); null is ignored. Never throws (runtime errors at process exit or after a fatal
  /// device error are ignored).
  static void deallocate(void* p) noexcept {
    if (!p) return;
    const typename RT::Error e = RT::Free(p);
    // At process exit (cudaErrorCudartUnloading, hipErrorDeinitialized) or after a fatal error the free fails
    // harmlessly; a pointer allocate() never returned is a bug in the caller.
    CELLINT_ASSERT(e != RT::ErrorInvalidValue && e != RT::ErrorInvalidDevicePointer);
    if (e != RT::Success) (void)RT::GetLastError();
  }

  /// Allocates `bytes` of page-locked host memory (cudaMallocHost / hipHostMalloc): copies from and to it run at the
  /// bus's speed and without a staging copy. Optional for a backend (those with device memory have it).
  /// @throws GpuError
  static void* allocate_pinned(std::size_t bytes) {
    void* p = nullptr;
    CELLINT_GPU_CHECK(RT, HostAlloc(&p, bytes ? bytes : 1));
    return p;
  }
  /// Frees memory from allocate_pinned(); null is ignored. Never throws.
  static void deallocate_pinned(void* p) noexcept {
    if (p && RT::HostFree(p) != RT::Success) (void)RT::GetLastError();
  }

  /// Interprocess memory: a handle to device memory from allocate() that another process on the same node opens with
  /// ipc_open() (cudaIpcGetMemHandle / hipIpcGetMemHandle), for copies between processes' GPUs without the host (over
  /// NVLink or PCIe peer to peer where the GPUs have it). Optional for a backend.
  using IpcHandle = typename RT::IpcHandle;
  /// The handle of `p` (the start of an allocation).
  /// @throws GpuError
  static IpcHandle ipc_handle(void* p) {
    IpcHandle h{};
    CELLINT_GPU_CHECK(RT, IpcGetMemHandle(&h, p));
    return h;
  }
  /// Maps another process's allocation into this one (with peer access where the GPUs allow it).
  /// @throws GpuError
  static void* ipc_open(const IpcHandle& h) {
    void* p = nullptr;
    CELLINT_GPU_CHECK(RT, IpcOpenMemHandle(&p, h));
    return p;
  }
  /// Unmaps what ipc_open() mapped; null is ignored. Never throws.
  static void ipc_close(void* p) noexcept {
    if (p && RT::IpcCloseMemHandle(p) != RT::Success) (void)RT::GetLastError();
  }
  /// Whether kernels of this process's device may read and write `p` (memory from ipc_open(): its device, or one this
  /// device reaches peer to peer); false where the runtime cannot tell. Copies reach it either way. Never throws.
  static bool ipc_reachable(const void* p) noexcept {
    typename RT::PointerAttributes a{};
    int dev = 0, can = 0;
    if (RT::PointerGetAttributes(&a, p) != RT::Success || RT::GetDevice(&dev) != RT::Success) {
      (void)RT::GetLastError();
      return false;
    }
    if (a.device == dev) return true;
    if (RT::DeviceCanAccessPeer(&can, dev, a.device) != RT::Success) {
      (void)RT::GetLastError();
      return false;
    }
    return can != 0;
  }

  /// The current device's PCI address ("0000:1b:00.0"), the same in every process on the node: two processes whose
  /// addresses are equal share a GPU. Empty where the runtime cannot tell. Never throws.
  static std::string bus_id() noexcept {
    char id[64] = {};
    int dev = 0;
    if (RT::GetDevice(&dev) != RT::Success ||
        RT::DeviceGetPCIBusId(id, static_cast<int>(sizeof id), dev) != RT::Success) {
      (void)RT::GetLastError();
      return {};
    }
    return id;
  }

  /// Interprocess events (cudaIpcGetEventHandle / hipIpcGetEventHandle): an IpcEvent of this process, recorded on its
  /// streams, that a process on the same node opens as an OpenedIpcEvent and makes its own streams wait for, so that
  /// work on two processes' GPUs is ordered without either host waiting for its device. Optional for a backend.
  using IpcEventHandle = typename RT::IpcEventHandle;
  /// An event another process can wait for (see IpcEventHandle). Not copyable.
  class IpcEvent {
   public:
    /// @throws GpuError, NoDevice
    IpcEvent() {
      gpu_require_device<RT>();
      CELLINT_GPU_CHECK(RT, EventCreateInterprocess(&e_));
    }
    ~IpcEvent() {
      if (e_ && RT::EventDestroy(e_) != RT::Success) (void)RT::GetLastError();
    }
    IpcEvent(const IpcEvent&) = delete;
    IpcEvent& operator=(const IpcEvent&) = delete;
    /// Marks the work enqueued on `s` so far: waiters from now on wait for it. @throws GpuError
    void record(Stream s) { CELLINT_GPU_CHECK(RT, EventRecord(e_, s)); }
    /// What another process opens. @throws GpuError
    IpcEventHandle handle() const {
      IpcEventHandle h{};
      CELLINT_GPU_CHECK(RT, IpcGetEventHandle(&h, e_));
      return h;
    }

   private:
    typename RT::Event e_ = nullptr;
  };
  /// Another process's IpcEvent, opened here. Not copyable.
  class OpenedIpcEvent {
   public:
    /// @throws GpuError
    explicit OpenedIpcEvent(const IpcEventHandle& h) { CELLINT_GPU_CHECK(RT, IpcOpenEventHandle(&e_, h)); }
    ~OpenedIpcEvent() {
      if (e_ && RT::EventDestroy(e_) != RT::Success) (void)RT::GetLastError();
    }
    OpenedIpcEvent(const OpenedIpcEvent&) = delete;
    OpenedIpcEvent& operator=(const OpenedIpcEvent&) = delete;
    /// Work enqueued on `s` from now on starts after the work that the owner's last record() before this call marked
    /// (the owner must have recorded it: order the two hosts, e.g. by a message). @throws GpuError
    void wait(Stream s) const { CELLINT_GPU_CHECK(RT, StreamWaitEvent(s, e_)); }

   private:
    typename RT::Event e_ = nullptr;
  };

  /// Enqueues on `s` a wait, by the stream itself (no host, no thread of the device), until the 32-bit word at `flag`
  /// reaches `value`: work enqueued on `s` after it starts once (int)(*flag - value) >= 0 on CUDA (cuStreamWaitValue32
  /// with GEQ: a comparison that wraps around) and *flag >= value on HIP (hipStreamWaitValue32 with Gte, unsigned; its
  /// documentation asks for memory from hipExtMallocWithFlags(hipMallocSignalMemory)). `flag`: device memory of this
  /// process's device, which another device may write (interprocess memory). Where the writer stores the word after its
  /// data (a kernel after the one that wrote the data, with a system-wide fence), the work after the wait sees the
  /// data. Optional for a backend.
  /// @throws GpuError where the driver refuses it (see can_wait_value())
  static void wait_value(Stream s, const unsigned* flag, unsigned value) {
    CELLINT_GPU_CHECK(RT, StreamWaitValueGeq(s, flag, value));
  }
  /// Whether wait_value() works here (the driver has the call). Never throws.
  static bool can_wait_value() noexcept {
    try {
      return RT::CanWaitValue();
    } catch (...) {
      return false;
    }
  }

  /// Copies `bytes` on stream `s` (cudaMemcpyAsync / hipMemcpyAsync with the named kind). DeviceToHost then
  /// synchronises `s`, so the host can read `dst` on return; HostToDevice returns once `src` may be reused for pageable
  /// memory (pinned sources must stay unchanged until `s` is synchronised); DeviceToDevice only enqueues; HostToHost is
  /// a plain memmove.
  /// @throws GpuError
  static void copy(void* dst, const void* src, std::size_t bytes, CopyKind kind, Stream s = {}) {
    if (bytes == 0) return;
    if (kind == CopyKind::HostToHost) {
      std::memmove(dst, src, bytes);
      return;
    }
    CELLINT_GPU_CHECK(RT, MemcpyAsync(dst, src, bytes, kind, s));
    if (kind == CopyKind::DeviceToHost) CELLINT_GPU_CHECK(RT, StreamSynchronize(s));
  }

  /// Sets `bytes` bytes at `dst` to `byte` (memset on `s`; does not synchronise).
  /// @throws GpuError
  static void fill_bytes(void* dst, int byte, std::size_t bytes, Stream s = {}) {
    if (bytes != 0) CELLINT_GPU_CHECK(RT, MemsetAsync(dst, byte, bytes, s));
  }

  /// Waits for all work enqueued on `s`. @throws GpuError (with the error of a failed kernel)
  static void synchronize(Stream s = {}) { CELLINT_GPU_CHECK(RT, StreamSynchronize(s)); }

  /// Properties of the current device (cached per device after the first call).
  /// @throws NoDevice when the device count fails (no driver...) or finds no device
  static DeviceProperties properties() {
    static std::mutex mutex;
    static std::vector<std::unique_ptr<DeviceProperties>> cache;  // per device
    const int dev = current_device();
    std::lock_guard<std::mutex> lock(mutex);
    if (cache.size() <= static_cast<std::size_t>(dev)) cache.resize(dev + 1);
    if (!cache[dev]) {
      typename RT::DeviceProp q{};
      CELLINT_GPU_CHECK(RT, GetDeviceProperties(&q, dev));
      auto p = std::make_unique<DeviceProperties>();
      p->multiprocessors = q.multiProcessorCount;
      p->shared_per_block = q.sharedMemPerBlock;
      p->shared_per_block_optin = std::max(RT::shared_per_block_optin(q, dev), q.sharedMemPerBlock);
      p->shared_per_multiprocessor = RT::shared_per_multiprocessor(q);
      p->max_threads_per_block = q.maxThreadsPerBlock;
      p->max_threads_per_multiprocessor = q.maxThreadsPerMultiProcessor;
      p->warp_size = q.warpSize;
      std::strncpy(p->name, q.name, sizeof(p->name) - 1);
      p->name[sizeof(p->name) - 1] = '\0';
      cache[dev] = std::move(p);
    }
    return *cache[dev];
  }

  /// Launches `kernel` (a trivially copyable block kernel, see backend/traits.hpp) as `shape.grid` blocks of
  /// `shape.block` threads with `shape.shared_bytes` of dynamic shared memory on stream `s`. grid == 0 launches
  /// nothing. A request above the device's default limit (48 KiB on NVIDIA) opts the kernel in once per kernel type and
  /// device (cudaFuncSetAttribute / hipFuncSetAttribute); AMD GPUs allow their whole LDS (64 KiB on gfx90a) without
  /// opting in, so there a larger request is only validated. Every launch is checked with GetLastError; with
  /// CELLINT_DEBUG_SYNC defined the stream is also synchronised and checked, so a failing kernel is named at once. Does
  /// not synchronise otherwise.
  /// @throws InvalidArgument when shared_bytes exceeds the device's opt-in limit
  /// @throws GpuError naming the kernel type, the launch shape and the error
  template <class Kernel>
  static void launch(const LaunchShape& shape, const Kernel& kernel, Stream s = {}) {
    check_block_kernel_type<Kernel>();
    if (shape.grid == 0) return;
    if (shape.shared_bytes > gpu_default_shared_bytes) {
      static SharedOptIn opt_in;  // one per kernel type
      opt_in.template ensure<Kernel>(shape);
    }
    block_kernel_for<Kernel>()<<<shape.grid, shape.block, shape.shared_bytes, s>>>(kernel);
    const typename RT::Error e = RT::GetLastError();
    if (e != RT::Success) throw_launch_error(e, describe_launch<Kernel>(shape), "to launch", shape);
#if defined(CELLINT_DEBUG_SYNC)
    const typename RT::Error e2 = RT::StreamSynchronize(s);
    if (e2 != RT::Success)
      throw_launch_error(e2, describe_launch<Kernel>(shape), "while running (CELLINT_DEBUG_SYNC)", shape);
#endif
  }

  /// Largest block size `kernel` can be launched with (register-limited; 1024 at most), asked of the runtime once per
  /// kernel type and device.
  /// @throws GpuError
  template <class Kernel>
  static int max_threads_for(const Kernel&) {
    check_block_kernel_type<Kernel>();
    static PerDeviceValue cache;  // one per kernel type: strategies ask on every call
    return cache.get(current_device(), [] {
      typename RT::FuncAttributes a{};
      CELLINT_GPU_CHECK(RT, FuncGetAttributes(&a, reinterpret_cast<const void*>(block_kernel_for<Kernel>())));
      return a.maxThreadsPerBlock;
    });
  }

  /// `out[i] = in[0] + ... + in[i-1]` for i in [0, n) on stream `s` (cub::DeviceScan::ExclusiveSum /
  /// rocprim::exclusive_scan). `in == out` (in place) is allowed. Temporary storage is a per-thread, per-stream scratch
  /// buffer that only grows. Does not synchronise. (Like every member, compiled only where used: CUB's and rocPRIM's
  /// kernels too.)
  /// @throws OutOfMemory, GpuError
  static void exclusive_scan(const std::uint32_t* in, std::uint32_t* out, Index n, Stream s = {}) {
    if (n <= 0) return;
    std::size_t temp_bytes = 0;
    check_primitive(RT::exclusive_sum(nullptr, temp_bytes, in, out, n, s), RT::scan_name,
                    "(nullptr, temp_bytes, in, out, n, s)", __LINE__);
    void* temp = Scratch::instance().get(std::max<std::size_t>(temp_bytes, 1), s);
    check_primitive(RT::exclusive_sum(temp, temp_bytes, in, out, n, s), RT::scan_name,
                    "(temp, temp_bytes, in, out, n, s)", __LINE__);
  }

  /// Stable ascending sort of `keys[0, n)` with `values` alongside, in place, comparing only bits [0, key_bits) of the
  /// keys (cub::DeviceRadixSort::SortPairs / rocprim::radix_sort_pairs; the alternate buffers live in the scratch
  /// buffer). Does not synchronise.
  /// @pre 0 <= key_bits <= 32; with key_bits == 0 or n < 2 nothing is done
  /// @throws InvalidArgument, OutOfMemory, GpuError
  static void sort_pairs(std::uint32_t* keys, Index* values, Index n, int key_bits, Stream s = {}) {
    CELLINT_EXPECTS(key_bits >= 0 && key_bits <= 32, "cellint: ", RT::type, "::sort_pairs: key_bits is ", key_bits,
                    ", must be in [0, 32]");
    if (n < 2 || key_bits == 0) return;
    const std::size_t count = static_cast<std::size_t>(n);
    const std::size_t key_bytes = gpu_align256(count * sizeof(std::uint32_t));
    const std::size_t value_bytes = gpu_align256(count * sizeof(Index));
    std::uint32_t* k = keys;
    Index* v = values;
    std::uint32_t* const no_keys = nullptr;  // the size query has no alternate buffers yet
    Index* const no_values = nullptr;
    std::size_t temp_bytes = 0;
    check_primitive(RT::sort_pairs(nullptr, temp_bytes, k, no_keys, v, no_values, n, key_bits, s), RT::sort_name,
                    "(nullptr, temp_bytes, keys, values, n, 0, key_bits, s)", __LINE__);
    auto* base = static_cast<unsigned char*>(
        Scratch::instance().get(key_bytes + value_bytes + std::max<std::size_t>(temp_bytes, 1), s));
    k = keys;
    v = values;
    check_primitive(
        RT::sort_pairs(base + key_bytes + value_bytes, temp_bytes, k, reinterpret_cast<std::uint32_t*>(base), v,
                       reinterpret_cast<Index*>(base + key_bytes), n, key_bits, s),
        RT::sort_name, "(temp, temp_bytes, keys, values, n, 0, key_bits, s)", __LINE__);
    if (k != keys)
      CELLINT_GPU_CHECK(RT, MemcpyAsync(keys, k, count * sizeof(std::uint32_t), CopyKind::DeviceToDevice, s));
    if (v != values) CELLINT_GPU_CHECK(RT, MemcpyAsync(values, v, count * sizeof(Index), CopyKind::DeviceToDevice, s));
  }

  /// A recorded sequence of work on one stream (a CUDA or HIP graph): record(s, issue) runs `issue()` with the stream
  /// in capture mode, so that the kernels and copies it enqueues on `s` are recorded instead of run; replay() then
  /// launches the whole sequence with one call. `issue()` must not wait for the device (no synchronize, no copy to the
  /// host) nor make decisions on the host that should change between replays.
  class Graph {
   public:
    Graph() = default;
    ~Graph() { release(); }
    Graph(const Graph&) = delete;
    Graph& operator=(const Graph&) = delete;
    /// Records what `issue()` enqueues on `s` (replacing an earlier recording). @throws GpuError
    template <class Fn>
    void record(Stream s, Fn&& issue) {
      release();
      gpu_require_device<RT>();
      CELLINT_EXPECTS(s != nullptr, "cellint: a step can only be recorded from a stream of its own (the ", RT::runtime,
                      " default stream cannot be captured): give the grid a cellint::OwnStream<Backend>'s stream");
      CELLINT_GPU_CHECK(RT, StreamBeginCapture(s));
      try {
        issue();
      } catch (...) {
        typename RT::Graph g = nullptr;
        if (RT::StreamEndCapture(s, &g) == RT::Success && g) (void)RT::GraphDestroy(g);
        (void)RT::GetLastError();
        throw;
      }
      CELLINT_GPU_CHECK(RT, StreamEndCapture(s, &graph_));
      CELLINT_GPU_CHECK(RT, GraphInstantiate(&exec_, graph_));
    }
    /// Whether a recording exists.
    bool recorded() const { return exec_ != nullptr; }
    /// Launches the recording on `s`. @throws GpuError
    void replay(Stream s) { CELLINT_GPU_CHECK(RT, GraphLaunch(exec_, s)); }
    /// Drops the recording.
    void release() noexcept {
      if (exec_ && RT::GraphExecDestroy(exec_) != RT::Success) (void)RT::GetLastError();
      if (graph_ && RT::GraphDestroy(graph_) != RT::Success) (void)RT::GetLastError();
      exec_ = nullptr;
      graph_ = nullptr;
    }

   private:
    typename RT::Graph graph_ = nullptr;
    typename RT::GraphExec exec_ = nullptr;
  };

  /// A stream of its own (cudaStreamCreate / hipStreamCreate: ordered with the default stream), destroyed with the
  /// object. Steps recorded as graphs need one.
  class StreamOwner {
   public:
    /// Creates the stream. @throws GpuError, NoDevice
    StreamOwner() {
      gpu_require_device<RT>();
      CELLINT_GPU_CHECK(RT, StreamCreate(&s_));
    }
    ~StreamOwner() {
      if (s_ && RT::StreamDestroy(s_) != RT::Success) (void)RT::GetLastError();
    }
    StreamOwner(const StreamOwner&) = delete;
    StreamOwner& operator=(const StreamOwner&) = delete;
    /// The stream.
    Stream get() const { return s_; }

   private:
    Stream s_ = nullptr;
  };

  /// A stream for work that overlaps the caller's (halo traffic beside interior kernels): not ordered with the default
  /// stream (cudaStreamNonBlocking), of the device's highest priority, so that its short kernels start ahead of the
  /// blocks of a long kernel queued on another stream. fork() and join() order it with another stream through events,
  /// without the host waiting. Not copyable.
  class SideStream {
   public:
    /// Creates the stream and its two events. @throws GpuError, NoDevice
    SideStream() {
      gpu_require_device<RT>();
      int least = 0, greatest = 0;
      CELLINT_GPU_CHECK(RT, DeviceGetStreamPriorityRange(&least, &greatest));
      try {
        CELLINT_GPU_CHECK(RT, StreamCreateSide(&s_, greatest));
        CELLINT_GPU_CHECK(RT, EventCreateUntimed(&forked_));
        CELLINT_GPU_CHECK(RT, EventCreateUntimed(&joined_));
      } catch (...) {
        release();
        throw;
      }
    }
    ~SideStream() { release(); }
    SideStream(const SideStream&) = delete;
    SideStream& operator=(const SideStream&) = delete;
    /// The stream.
    Stream get() const { return s_; }
    /// Work enqueued here from now on starts after the work enqueued on `from` so far. @throws GpuError
    void fork(Stream from) {
      CELLINT_GPU_CHECK(RT, EventRecord(forked_, from));
      CELLINT_GPU_CHECK(RT, StreamWaitEvent(s_, forked_));
    }
    /// Work enqueued on `into` from now on starts after the work enqueued here so far. @throws GpuError
    void join(Stream into) {
      CELLINT_GPU_CHECK(RT, EventRecord(joined_, s_));
      CELLINT_GPU_CHECK(RT, StreamWaitEvent(into, joined_));
    }

   private:
    void release() noexcept {
      if (forked_ && RT::EventDestroy(forked_) != RT::Success) (void)RT::GetLastError();
      if (joined_ && RT::EventDestroy(joined_) != RT::Success) (void)RT::GetLastError();
      if (s_ && RT::StreamDestroy(s_) != RT::Success) (void)RT::GetLastError();
      forked_ = joined_ = nullptr;
      s_ = nullptr;
    }
    Stream s_ = nullptr;
    typename RT::Event forked_ = nullptr, joined_ = nullptr;
  };

  /// Times GPU work on a stream with a pair of runtime events. Not copyable; movable.
  class Timer {
   public:
    /// Creates the two events for stream `s`. @throws GpuError, NoDevice
    explicit Timer(Stream s = {}) : stream_(s) {
      gpu_require_device<RT>();
      CELLINT_GPU_CHECK(RT, EventCreate(&start_));
      const typename RT::Error e = RT::EventCreate(&stop_);
      if (e != RT::Success) {
        release();
        throw_gpu_error<RT>(e, cat(RT::runtime, " call `", RT::name, "EventCreate(&stop_)`"), __FILE__, __LINE__);
      }
    }
    ~Timer() { release(); }
    Timer(const Timer&) = delete;
    Timer& operator=(const Timer&) = delete;
    /// Takes over `o`'s events.
    Timer(Timer&& o) noexcept
        : start_(std::exchange(o.start_, nullptr)), stop_(std::exchange(o.stop_, nullptr)), stream_(o.stream_) {}
    /// Takes over `o`'s events.
    Timer& operator=(Timer&& o) noexcept {
      if (this != &o) {
        release();
        start_ = std::exchange(o.start_, nullptr);
        stop_ = std::exchange(o.stop_, nullptr);
        stream_ = o.stream_;
      }
      return *this;
    }
    /// Records the start event on the stream.
    void start() { CELLINT_GPU_CHECK(RT, EventRecord(start_, stream_)); }
    /// Records the stop event on the stream.
    void stop() { CELLINT_GPU_CHECK(RT, EventRecord(stop_, stream_)); }
    /// Milliseconds between start() and stop(); waits for the stop event.
    /// @throws GpuError
    float elapsed_ms() const {
      CELLINT_GPU_CHECK(RT, EventSynchronize(stop_));
      float ms = 0.0f;
      CELLINT_GPU_CHECK(RT, EventElapsedTime(&ms, start_, stop_));
      return ms;
    }

   private:
    void release() noexcept {
      // Failures (at process exit, after a fatal device error) are ignored; clear only our own.
      if (start_ && RT::EventDestroy(start_) != RT::Success) (void)RT::GetLastError();
      if (stop_ && RT::EventDestroy(stop_) != RT::Success) (void)RT::GetLastError();
      start_ = stop_ = nullptr;
    }
    typename RT::Event start_ = nullptr;
    typename RT::Event stop_ = nullptr;
    Stream stream_ = nullptr;
  };

 private:
  /// The calling thread's current device; throws NoDevice when there is no usable GPU.
  static int current_device() {
    gpu_require_device<RT>();
    int dev = 0;
    CELLINT_GPU_CHECK(RT, GetDevice(&dev));
    CELLINT_ASSERT(dev >= 0 && dev < gpu_device_count_result<RT>().count);
    return dev;
  }

  /// Checks the result of a scan or sort call (`call` is its argument list, for the message).
  static void check_primitive(typename RT::Error e, const char* name, const char* call, int line) {
    gpu_check<RT>(e, name, call, __FILE__, line);
  }

  /// Throws GpuError for a failed launch (`what` describes the kernel and its shape).
  [[noreturn]] static void throw_launch_error(typename RT::Error e, const std::string& what, const char* when,
                                              const LaunchShape& shape) {
    (void)RT::GetLastError();
    gpu_throw_if_no_device<RT>(e);
    std::string hint;
    if (e == RT::ErrorInvalidValue || e == RT::ErrorInvalidConfiguration)
      hint = gpu_launch_shape_hint(shape);
    else if (e == RT::ErrorLaunchOutOfResources)
      hint = cat(". The kernel uses too many registers for this block size: cap it with ", RT::type,
                 "::max_threads_for(kernel)");
    throw GpuError(cat("cellint: ", what, " failed ", when, ": ", gpu_error_text<RT>(e), hint), static_cast<int>(e));
  }

  /// Remembers, per device, the largest dynamic shared memory a kernel has been opted in to. One instance per kernel
  /// type.
  struct SharedOptIn {
    std::mutex mutex;
    std::vector<std::size_t> granted;  // per device

    /// Checks `shape.shared_bytes` against the current device's limits and opts `Kernel` in when the request is above
    /// the default limit (never the case on AMD GPUs, whose opt-in limit is the default one).
    template <class Kernel>
    void ensure(const LaunchShape& shape) {
      const std::size_t bytes = shape.shared_bytes;
      const DeviceProperties p = properties();
      if (bytes <= p.shared_per_block) return;
      if (bytes > p.shared_per_block_optin)
        throw InvalidArgument(cat("cellint: ", describe_launch<Kernel>(shape), " asks for ", bytes,
                                  " bytes of dynamic shared memory per block, but ", p.name, " allows at most ",
                                  p.shared_per_block_optin,
                                  " (after opting in); use fewer cells or threads per block"));
      const int dev = current_device();
      std::lock_guard<std::mutex> lock(mutex);
      if (granted.size() <= static_cast<std::size_t>(dev)) granted.resize(dev + 1, 0);
      if (granted[dev] >= bytes) return;
      const typename RT::Error e = RT::FuncSetMaxDynamicSharedMemorySize(
          reinterpret_cast<const void*>(block_kernel_for<Kernel>()), static_cast<int>(bytes));
      if (e != RT::Success)
        throw_gpu_error<RT>(e,
                            cat(RT::name, "FuncSetAttribute(MaxDynamicSharedMemorySize, ", bytes, ") for ",
                                describe_launch<Kernel>(shape)),
                            __FILE__, __LINE__);
      granted[dev] = bytes;
    }
  };

  /// Growing device scratch buffer, one per (device, stream) and thread, for the scan's and sort's temporary storage
  /// and the sort's alternate buffers. A buffer is only reused on its own stream, so work still in flight on another
  /// stream is never overwritten; growing frees the old buffer, which waits for the device.
  class Scratch {
   public:
    Scratch() = default;
    Scratch(const Scratch&) = delete;
    Scratch& operator=(const Scratch&) = delete;
    ~Scratch() {
      for (Slot& s : slots_) deallocate(s.ptr);
    }

    /// At least `bytes` of device memory for stream `s` on the current device.
    void* get(std::size_t bytes, Stream s) {
      const int dev = current_device();
      Slot* slot = nullptr;
      for (Slot& x : slots_)
        if (x.device == dev && x.stream == s) slot = &x;
      if (!slot) {
        slots_.push_back(Slot{dev, s, nullptr, 0});
        slot = &slots_.back();
      }
      if (slot->bytes < bytes) {
        const std::size_t grown = std::max(bytes, slot->bytes + slot->bytes / 2);
        deallocate(slot->ptr);
        slot->ptr = nullptr;
        slot->bytes = 0;
        slot->ptr = allocate(grown);
        slot->bytes = grown;
      }
      return slot->ptr;
    }

    /// This thread's scratch buffers.
    static Scratch& instance() {
      thread_local Scratch scratch;
      return scratch;
    }

   private:
    struct Slot {
      int device;
      Stream stream;
      void* ptr;
      std::size_t bytes;
    };
    std::vector<Slot> slots_;
  };
};

}  // namespace cellint::detail
