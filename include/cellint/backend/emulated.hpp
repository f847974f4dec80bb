#pragma once
/// @file
/// The Emulated backend: runs the GPU block kernels unchanged on the CPU.
///
/// Every block of a launch runs on one OS thread (blocks are spread over the Host backend's loop threads, see
/// backend/host.hpp, when the translation unit is compiled with OpenMP), and every thread of a block is a cooperative
/// fiber with its own stack. `sync()` is a real barrier, each block has its own dynamic shared memory, filled with
/// garbage (0xCD bytes) at the start, and atomics are real atomics. Between two barriers the fibers of a block run in a
/// seeded random order, so a kernel that reads another thread's shared-memory entry without a barrier in between gives
/// a wrong answer here, as it would, sometimes, on a GPU. Kernel bugs the emulator reports as exceptions from `launch`:
/// a barrier that not every thread of the block reaches, writes just past the end of the dynamic shared memory, and
/// fiber stack overflows that stay above the stack's guard page (one that reaches it ends the process with a
/// segmentation fault).
///
/// Memory is plain host memory (as for the Host backend), so backend pointers are host-dereferenceable; `copy` and
/// `fill_bytes` are memmove and memset, `synchronize` does nothing and every call is synchronous.
///
/// Cost: a block of `T` threads crossing `B` barriers makes about T x (B + 1) fiber switches. On x86-64 with g++ or
/// clang a switch is a few instructions of inline assembly (15-30 ns per thread and barrier, measured); elsewhere,
/// under nvcc/hipcc, under ASan/TSan, or with `CELLINT_EMULATED_UCONTEXT` defined, it is glibc's swapcontext (about
/// 0.25-0.3 us, one system call). With x86 shadow stacks active (an opt-in of glibc on Linux 6.6+) the assembly switch
/// cannot run and launch() throws Error saying to define CELLINT_EMULATED_UCONTEXT.

#include <cstddef>
#include <cstdint>
#include <type_traits>

#include "cellint/backend/detail/emulated/algorithms.hpp"
#include "cellint/backend/detail/emulated/scheduler.hpp"
#include "cellint/backend/detail/host_memory.hpp"
#include "cellint/backend/traits.hpp"
#include "cellint/core/error.hpp"

namespace cellint {

/// Run-time options of the Emulated backend, shared by the whole process (see Emulated::options()). Each launch reads
/// them once, when it starts.
struct EmulatedOptions {
  /// Run the threads of a block in a fresh random order between two barriers (instead of thread order 0..n-1), so that
  /// a missing barrier shows up as a wrong result.
  bool shuffle = true;
  /// Seed of the shuffled orders; the order of block `b` after barrier `k` depends only on (seed, b, k), so runs are
  /// reproducible.
  std::uint64_t seed = 12345;
  /// Run the blocks of a launch in parallel over the Host backend's loop threads (when compiled with OpenMP and the
  /// launch has at least 4096 threads in all; smaller launches run serially).
  bool parallel_blocks = true;
  /// Fill each block's dynamic shared memory with 0xCD bytes before the block starts, so that reading shared memory
  /// that the block did not write yields garbage.
  bool poison_shared = true;
  /// Usable stack bytes of each emulated GPU thread (rounded up to whole pages). The kernel, everything it calls, and a
  /// thrown exception must fit. Values below 16 KiB count as 16 KiB.
  std::size_t stack_bytes = 64 * 1024;
};

/// CPU backend that executes block kernels the way a GPU does (see the file description).
///
/// Implements the backend interface of traits.hpp for an `is_gpu_like` backend, emulating the limits of an NVIDIA H100
/// (properties()). All operations are synchronous; streams are ignored. Launches may be made from several OS threads at
/// once; a kernel must not launch a kernel.
struct Emulated : detail::HostMemory {
  /// Runs block kernels.
  static constexpr bool is_gpu_like = true;
  /// Emulated warp width (threads are scheduled individually; there are no warp intrinsics).
  static constexpr int warp_size = 32;
  /// The block object handed to kernels (implements the block API of traits.hpp).
  using Block = detail::emulated::Block;

  /// Backend name for logs.
  static const char* name() { return "emulated"; }

  /// The process-wide options. Change them between launches, not during one.
  static EmulatedOptions& options() {
    static EmulatedOptions o;
    return o;
  }

  /// Limits of an NVIDIA H100 (SXM), which launch() enforces: 132 multiprocessors, 48 KiB of dynamic shared memory per
  /// block by default and 227 KiB after opting in, 228 KiB per multiprocessor, 1024 threads per block and 2048 per
  /// multiprocessor, warp size 32.
  static DeviceProperties properties() {
    return {132, 48 * 1024, 227 * 1024, 228 * 1024, 1024, 2048, warp_size, "emulated (H100-like limits)"};
  }

  /// Runs `kernel` on `shape.grid` blocks of `shape.block` threads, each block with `shape.shared_bytes` bytes of
  /// dynamic shared memory; returns when every block is done. A grid of 0 blocks does nothing.
  /// @tparam Kernel trivially copyable functor with `template <class Block> void operator()(Block& b) const`
  /// @throws InvalidArgument if shape.block is not in 1..1024 or shape.shared_bytes exceeds
  ///         properties().shared_per_block_optin
  /// @throws Error if threads of one block reach a barrier a different number of times, if a thread overflows its stack
  ///         (EmulatedOptions::stack_bytes), or if a block writes past the end of its shared memory
  /// @throws whatever the kernel throws (the first failing block's exception; the blocks not started yet are skipped)
  template <class Kernel>
  static void launch(const LaunchShape& shape, const Kernel& kernel, Stream = {}) {
    static_assert(std::is_trivially_copyable<Kernel>::value,
                  "cellint: a block kernel must be trivially copyable (GPU kernels receive it by value)");
    static_assert(std::is_invocable<const Kernel&, Block&>::value,
                  "cellint: a block kernel needs `template <class Block> void operator()(Block& b) const`");
    CELLINT_EXPECTS(shape.block >= 1 && shape.block <= 1024, "cellint: Emulated::launch: ", shape.block,
                    " threads per block requested; the block size must be in 1..1024 (LaunchShape::block)");
    CELLINT_EXPECTS(shape.shared_bytes <= 227 * 1024, "cellint: Emulated::launch: ", shape.shared_bytes,
                    " bytes of shared memory per block requested; the limit is ", 227 * 1024,
                    " (properties().shared_per_block_optin); use fewer threads or items per block");
    if (shape.grid == 0) return;
    const EmulatedOptions& o = options();
    detail::emulated::run_grid({shape.grid, shape.block, shape.shared_bytes, o.shuffle, o.seed, o.parallel_blocks,
                                o.poison_shared, o.stack_bytes < 16 * 1024 ? 16 * 1024 : o.stack_bytes, &kernel,
                                &detail::emulated::invoke_kernel<Kernel>});
  }

  /// Largest block size `kernel` can be launched with: always 1024 (no register limit here).
  template <class Kernel>
  static int max_threads_for(const Kernel&) {
    return 1024;
  }

  /// out[i] = in[0] + ... + in[i-1] for i in [0, n), modulo 2^32. `in` may equal `out`.
  /// @throws InvalidArgument if n < 0
  static void exclusive_scan(const std::uint32_t* in, std::uint32_t* out, Index n, Stream = {}) {
    CELLINT_EXPECTS(n >= 0, "cellint: Emulated::exclusive_scan: negative length ", n);
    detail::emulated::exclusive_scan(in, out, n);
  }

  /// Sorts the pairs (keys[i], values[i]), i in [0, n), by ascending key, in place and stably (pairs with equal keys
  /// keep their order). Only the low `key_bits` bits of each key take part in the comparison, as with a radix sort over
  /// bits [0, key_bits).
  /// @throws InvalidArgument if n < 0 or key_bits is not in 0..32
  static void sort_pairs(std::uint32_t* keys, Index* values, Index n, int key_bits, Stream = {}) {
    CELLINT_EXPECTS(n >= 0, "cellint: Emulated::sort_pairs: negative length ", n);
    CELLINT_EXPECTS(key_bits >= 0 && key_bits <= 32, "cellint: Emulated::sort_pairs: key_bits = ", key_bits,
                    " is outside 0..32");
    detail::emulated::radix_sort_pairs(keys, values, n, key_bits);
  }
};

}  // namespace cellint
