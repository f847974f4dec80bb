#pragma once
// Block scheduler of the Emulated backend.
//
// A launch runs its blocks one after another, or spread over OpenMP threads; each block runs on one OS thread as
// `block` cooperative fibers, one per GPU thread, which share that thread's Worker. Execution goes in phases separated
// by barriers: in every phase each fiber runs, in an order that is a fresh seeded permutation when shuffling, until it
// calls sync() or returns. Control passes straight from one fiber to the next of the phase (one switch per fiber and
// phase); the last one switches back to the scheduler, which checks that either every thread waits at the barrier (next
// phase) or every thread has returned (block done). Anything else is a divergent barrier and fails the launch. An
// exception leaving the kernel is caught on its fiber, the block is abandoned (suspended fibers are never resumed,
// their stacks are reused by the next block) and the exception is rethrown from launch.
//
// Per-thread resources (fiber stacks with a guard page, contexts, the shared-memory buffer) are kept in a thread_local
// Worker and reused across blocks and launches.

#include <sys/mman.h>
#include <unistd.h>

#include <atomic>
#include <climits>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <memory>
#include <mutex>
#include <string>
#include <type_traits>
#include <vector>

#include "cellint/backend/detail/emulated/context.hpp"
#include "cellint/backend/host.hpp"
#include "cellint/backend/traits.hpp"
#include "cellint/core/error.hpp"

namespace cellint::detail::emulated {
inline namespace CELLINT_DETAIL_EMU_ABI {

inline constexpr unsigned max_block = 1024;         // threads per block (H100 limit)
inline constexpr std::size_t shared_redzone = 64;   // checked bytes after the dynamic shared memory
inline constexpr unsigned char redzone_byte = 0xA5;
inline constexpr std::uint64_t stack_canary = 0x5AFEC0DEC0FFEE11ull;
inline constexpr std::size_t parallel_min_threads = 4096;  // smaller launches run their blocks serially

class Block;

/// Everything one launch needs, fixed for its duration (a snapshot of the options).
struct LaunchConfig {
  unsigned grid = 1;
  unsigned block = 1;
  std::size_t shared_bytes = 0;
  bool shuffle = true;
  std::uint64_t seed = 0;
  bool parallel_blocks = true;
  bool poison_shared = true;
  std::size_t stack_bytes = 64 * 1024;
  const void* kernel = nullptr;                    // the user's functor
  void (*invoke)(const void*, Block&) = nullptr;   // calls it
};

/// Guard pages in use by all StackPools. Each splits a mapping in two, and Linux limits a process to about 65k
/// mappings, so past max_guard_pages new stacks go without one (their canary still reports overflows, after the block).
inline std::atomic<long> guard_pages_used{0};
inline constexpr long max_guard_pages = 8192;

/// Fiber stacks of one OS thread: one mapping each, with an inaccessible guard page below the stack (while
/// guard_pages_used allows) and a canary in its lowest bytes. Stacks are `bytes + colour_room` long and stack i starts
/// colour(i) bytes below its top, so that the hot top frames of the fibers (equally spaced mappings) do not all fall
/// into the same cache sets.
class StackPool {
 public:
  StackPool() = default;
  StackPool(const StackPool&) = delete;
  StackPool& operator=(const StackPool&) = delete;
  ~StackPool() { release(); }

  /// Makes at least `n` stacks of `bytes` usable bytes available. @throws OutOfMemory
  void reserve(unsigned n, std::size_t bytes) {
    if (page_ == 0) page_ = static_cast<std::size_t>(sysconf(_SC_PAGESIZE));
    bytes = (bytes + page_ - 1) / page_ * page_;
    if (bytes != bytes_) {
      release();
      bytes_ = bytes;
    }
    while (maps_.size() < n) {
      const std::size_t total = bytes_ + colour_room + page_;
      void* m = mmap(nullptr, total, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
      if (m == MAP_FAILED)
        throw OutOfMemory(cat("cellint: Emulated: could not map a fiber stack of ", total,
                              " bytes; lower Emulated::options().stack_bytes or the block size"), 2);
      bool guarded = false;
      if (guard_pages_used.fetch_add(1, std::memory_order_relaxed) < max_guard_pages)
        guarded = mprotect(m, page_, PROT_NONE) == 0;
      if (!guarded) guard_pages_used.fetch_sub(1, std::memory_order_relaxed);
      maps_.push_back(m);
      guarded_.push_back(guarded);
      std::memcpy(low(static_cast<unsigned>(maps_.size() - 1)), &stack_canary, sizeof stack_canary);
    }
  }
  /// Lowest usable byte of stack `i`.
  void* low(unsigned i) const { return static_cast<unsigned char*>(maps_[i]) + page_; }
  /// Usable stack bytes (at least) per stack.
  std::size_t bytes() const { return bytes_; }
  /// Bytes of stack `i` from low(i) up to where its fiber starts.
  std::size_t start_offset(unsigned i) const { return bytes_ + colour_room - colour(i); }
  /// Whether stack `i` still had its canary (false: a fiber overflowed it); restores it.
  bool check_canary(unsigned i) {
    std::uint64_t v;
    std::memcpy(&v, low(i), sizeof v);
    if (v == stack_canary) return true;
    std::memcpy(low(i), &stack_canary, sizeof stack_canary);
    return false;
  }
  /// Unmaps every stack.
  void release() noexcept {
    for (std::size_t i = 0; i < maps_.size(); ++i) {
      munmap(maps_[i], bytes_ + colour_room + page_);
      if (guarded_[i]) guard_pages_used.fetch_sub(1, std::memory_order_relaxed);
    }
    maps_.clear();
    guarded_.clear();
  }

 private:
  static constexpr std::size_t colour_room = 4096;
  static std::size_t colour(unsigned i) { return (i % 64u) * 64u; }

  std::vector<void*> maps_;
  std::vector<bool> guarded_;
  std::size_t bytes_ = 0;
  std::size_t page_ = 0;
};

/// Per-OS-thread state: reusable resources and the block in flight.
struct Worker {
  Context scheduler;                       // where the block's scheduler waits
  std::unique_ptr<Context[]> fibers;       // one per thread rank (address-stable)
  StackPool stacks;
  std::vector<unsigned> order;             // run order of the current phase
  unsigned char* shared_base = nullptr;    // 64-byte aligned, shared bytes + redzone
  std::size_t shared_capacity = 0;

  const LaunchConfig* cfg = nullptr;       // block in flight
  unsigned block_rank = 0;
  unsigned block_size = 0;
  unsigned pos = 0;                        // index in `order` of the running fiber
  unsigned waiting = 0;                    // fibers at the barrier in this phase
  unsigned finished = 0;                   // fibers that returned from the kernel
  bool failed = false;                     // a fiber threw; `error` holds the exception
  bool active = false;                     // a block is running on this thread
  std::exception_ptr error;

  Worker() = default;
  Worker(const Worker&) = delete;
  Worker& operator=(const Worker&) = delete;
  ~Worker() { std::free(shared_base); }

  /// Context of the fiber after the running one in this phase, or the scheduler after the last.
  CELLINT_INLINE Context& next() {
    ++pos;
    return pos < block_size ? fibers[order[pos]] : scheduler;
  }

  /// Sizes the reusable resources for `c`. @throws OutOfMemory
  void prepare(const LaunchConfig& c) {
    if (!fibers) {
      fibers.reset(new Context[max_block]);
      order.resize(max_block);
    }
    stacks.reserve(c.block, c.stack_bytes);
    const std::size_t need = (c.shared_bytes + shared_redzone + 63) / 64 * 64;
    if (need > shared_capacity) {
      std::free(shared_base);
      shared_base = static_cast<unsigned char*>(std::aligned_alloc(64, need));
      shared_capacity = shared_base ? need : 0;
      if (!shared_base)
        throw OutOfMemory(cat("cellint: Emulated: could not allocate ", need, " bytes of shared memory"), 2);
    }
    cfg = &c;
  }
};

/// The OS thread's worker.
inline Worker& this_worker() {
  static thread_local Worker w;
  return w;
}

/// SplitMix64 step: the generator behind the shuffled orders.
inline std::uint64_t splitmix64(std::uint64_t& s) {
  std::uint64_t z = (s += 0x9E3779B97F4A7C15ull);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

/// Fills w.order for `phase` of the current block: 0..n-1, or a permutation of it drawn from (seed, block rank, phase)
/// when shuffling.
inline void make_order(Worker& w, unsigned phase) {
  const unsigned n = w.block_size;
  unsigned* o = w.order.data();
  for (unsigned i = 0; i < n; ++i) o[i] = i;
  if (!w.cfg->shuffle || n < 2) return;
  std::uint64_t s = w.cfg->seed;
  s = splitmix64(s) ^ (static_cast<std::uint64_t>(w.block_rank) << 32 | phase);
  for (unsigned i = n - 1; i > 0; --i) {
    const auto j = static_cast<unsigned>(((splitmix64(s) >> 32) * (static_cast<std::uint64_t>(i) + 1)) >> 32);
    const unsigned t = o[i];
    o[i] = o[j];
    o[j] = t;
  }
}

/// The kernel's view of one GPU thread: its rank and the block it belongs to. Implements the block API of traits.hpp.
/// The members are host-device only so that nvcc and hipcc accept `CELLINT_HD` kernels instantiated with this type;
/// they only ever run on the host.
class Block {
 public:
  /// @param w the worker running the block; @param rank thread rank in the block
  Block(Worker* w, unsigned rank) : w_(w), rank_(rank) {}

  /// Rank of this thread in its block, 0..block_size()-1.
  CELLINT_HD unsigned thread_rank() const { return rank_; }
  /// Threads per block.
  CELLINT_HD unsigned block_size() const { return w_->block_size; }
  /// Rank of this block in the grid, 0..grid_size()-1.
  CELLINT_HD unsigned block_rank() const { return w_->block_rank; }
  /// Blocks in the grid.
  CELLINT_HD unsigned grid_size() const { return w_->cfg->grid; }

  /// Block-wide barrier: returns once every thread of the block has called it. Every thread must call it the same
  /// number of times, or the launch throws Error.
  CELLINT_HD void sync() {
#if !defined(CELLINT_DEVICE_PASS)
    Worker& w = *w_;
    ++w.waiting;
    context_switch(w.fibers[rank_], w.next());
#endif
  }

  /// Memory fence: this thread's loads and stores before it are seen by every other thread (other blocks run on other
  /// OS threads) before its loads and stores after it.
  CELLINT_HD void fence() const {
#if !defined(CELLINT_DEVICE_PASS)
    __atomic_thread_fence(__ATOMIC_SEQ_CST);
#endif
  }

  /// The block's dynamic shared memory (LaunchShape::shared_bytes bytes, 16-byte aligned).
  template <class T>
  CELLINT_HD T* shared() const {
    static_assert(alignof(T) <= 16, "cellint: shared<T>() is 16-byte aligned; T needs more");
    return reinterpret_cast<T*>(w_->shared_base);
  }

  /// Atomically adds `v` to *p; returns the old value.
  CELLINT_HD int atomic_add(int* p, int v) const { return rmw(p, Add<int>{v}); }
  /// Atomically adds `v` to *p; returns the old value.
  CELLINT_HD unsigned atomic_add(unsigned* p, unsigned v) const { return rmw(p, Add<unsigned>{v}); }
  /// Atomically adds `v` to *p; returns the old value.
  CELLINT_HD unsigned long long atomic_add(unsigned long long* p, unsigned long long v) const {
    return rmw(p, Add<unsigned long long>{v});
  }
  /// Atomically adds `v` to *p; returns the old value.
  CELLINT_HD float atomic_add(float* p, float v) const { return rmw(p, Add<float>{v}); }
  /// Atomically adds `v` to *p; returns the old value.
  CELLINT_HD double atomic_add(double* p, double v) const { return rmw(p, Add<double>{v}); }
  /// Atomically replaces *p by max(*p, v); returns the old value.
  CELLINT_HD int atomic_max(int* p, int v) const { return rmw(p, Max<int>{v}); }
  /// Atomically replaces *p by max(*p, v); returns the old value.
  CELLINT_HD unsigned atomic_max(unsigned* p, unsigned v) const { return rmw(p, Max<unsigned>{v}); }
  /// Atomically replaces *p by min(*p, v); returns the old value.
  CELLINT_HD int atomic_min(int* p, int v) const { return rmw(p, Min<int>{v}); }
  /// Atomically replaces *p by min(*p, v); returns the old value.
  CELLINT_HD unsigned atomic_min(unsigned* p, unsigned v) const { return rmw(p, Min<unsigned>{v}); }

 private:
  template <class T>
  struct Add {
    T v;
    T operator()(T old) const { return old + v; }
  };
  template <class T>
  struct Max {
    T v;
    T operator()(T old) const { return old < v ? v : old; }
  };
  template <class T>
  struct Min {
    T v;
    T operator()(T old) const { return v < old ? v : old; }
  };

  /// Atomic read-modify-write *p = op(*p); returns the old value. Integer adds are one fetch-add, everything else a
  /// compare-exchange loop.
  template <class T, class Op>
  CELLINT_HD static T rmw(T* p, Op op) {
#if defined(CELLINT_DEVICE_PASS)
    (void)op;
    return *p;  // never runs: Emulated kernels execute on the host
#else
    if constexpr (std::is_integral<T>::value && std::is_same<Op, Add<T>>::value) {
      return __atomic_fetch_add(p, op.v, __ATOMIC_ACQ_REL);
    } else {
      T old;
      __atomic_load(p, &old, __ATOMIC_RELAXED);
      T desired = op(old);
      while (!__atomic_compare_exchange(p, &old, &desired, true, __ATOMIC_ACQ_REL, __ATOMIC_RELAXED))
        desired = op(old);
      return old;
    }
#endif
  }

  Worker* w_;
  unsigned rank_;
};

/// Calls the type-erased kernel.
template <class Kernel>
void invoke_kernel(const void* kernel, Block& b) {
  (*static_cast<const Kernel*>(kernel))(b);
}

/// Body of every fiber: runs the kernel for the thread rank it was started for, then hands control on (to the next
/// fiber of the phase, or to the scheduler on an exception).
inline void fiber_main(void* arg) {
  Worker& w = *static_cast<Worker*>(arg);
  const unsigned rank = w.order[w.pos];
  bool ok = true;
  try {
    Block b(&w, rank);
    w.cfg->invoke(w.cfg->kernel, b);
  } catch (...) {
    w.error = std::current_exception();
    ok = false;
  }
  Context& self = w.fibers[rank];
  if (!ok) {
    w.failed = true;
    context_switch(self, w.scheduler);
  } else {
    ++w.finished;
    context_switch(self, w.next());
  }
  std::abort();  // a finished fiber is never resumed
}

/// Clears Worker::active when the block ends, however it ends.
struct ActiveGuard {
  Worker& w;
  ~ActiveGuard() { w.active = false; }
};

/// Checks and restores the stack canaries of the current block's threads; returns the rank of the first thread that
/// overflowed its stack, or block_size if none did.
inline unsigned first_overflowed_stack(Worker& w) {
  unsigned first = w.block_size;
  for (unsigned i = 0; i < w.block_size; ++i)
    if (!w.stacks.check_canary(i) && first == w.block_size) first = i;
  return first;
}

/// Runs block `block` of the launch `c` on the calling OS thread.
/// @throws Error on a divergent barrier, a stack overflow or a write past the shared memory; rethrows what the kernel
/// threw.
inline void run_block(const LaunchConfig& c, unsigned block) {
  Worker& w = this_worker();
  w.prepare(c);
  w.active = true;
  ActiveGuard guard{w};
  const unsigned n = c.block;
  w.block_rank = block;
  w.block_size = n;
  w.waiting = 0;
  w.finished = 0;
  w.failed = false;
  if (c.poison_shared) std::memset(w.shared_base, 0xCD, c.shared_bytes);
  std::memset(w.shared_base + c.shared_bytes, redzone_byte, shared_redzone);
  for (unsigned i = 0; i < n; ++i)
    context_start(w.fibers[i], w.stacks.low(i), w.stacks.start_offset(i), &fiber_main, &w);
  context_prepare(w.scheduler);

  for (unsigned phase = 0;; ++phase) {
    make_order(w, phase);
    w.pos = 0;
    w.waiting = 0;
    context_switch(w.scheduler, w.fibers[w.order[0]]);
    if (w.failed) {
      (void)first_overflowed_stack(w);
      std::exception_ptr e = std::move(w.error);
      w.error = nullptr;
      std::rethrow_exception(e);
    }
    if (w.finished == n) break;
    if (w.finished != 0) {
      (void)first_overflowed_stack(w);
      throw Error(cat("cellint: Emulated: barrier reached by ", w.waiting, " of ", n, " threads of block ",
                      block, " (barrier number ", phase + 1, "); the others returned from the kernel "
                      "without reaching it. Every thread of a block must call sync() the same number of "
                      "times: do not put a barrier in a branch or loop that depends on the thread, and "
                      "do not return early before one"));
    }
  }

  const unsigned overflowed = first_overflowed_stack(w);
  if (overflowed < n)
    throw Error(cat("cellint: Emulated: thread ", overflowed, " of block ", block, " overflowed its fiber stack of ",
                      w.stacks.bytes(), " bytes; raise Emulated::options().stack_bytes"));
  for (std::size_t i = 0; i < shared_redzone; ++i)
    if (w.shared_base[c.shared_bytes + i] != redzone_byte)
      throw Error(cat("cellint: Emulated: block ", block, " wrote past the end of its dynamic shared memory "
                      "(to byte ", c.shared_bytes + i, " of LaunchShape::shared_bytes = ", c.shared_bytes,
                      "); size the shared memory for every thread and item of the block"));
}

/// Runs every block of the launch `c`, over OpenMP threads when allowed (and the launch has at least
/// parallel_min_threads threads: below that, starting a parallel region costs more than it saves, much more on a loaded
/// machine), and rethrows the error of the lowest-ranked failing block (remaining blocks are skipped after a failure).
inline void run_grid(const LaunchConfig& c) {
  if (const char* why = context_unusable_reason()) throw Error(cat("cellint: Emulated::launch: ", why));
  if (this_worker().active)
    throw Error("cellint: Emulated::launch was called from inside a kernel running on the Emulated "
                "backend; a kernel cannot launch another kernel");
  std::atomic<bool> stop{false};
  std::mutex m;
  std::exception_ptr first;
  unsigned first_block = UINT_MAX;
  const auto one = [&](unsigned b) {
    if (stop.load(std::memory_order_relaxed)) return;
    try {
      run_block(c, b);
    } catch (...) {
      std::lock_guard<std::mutex> lock(m);
      if (b < first_block) {
        first_block = b;
        first = std::current_exception();
      }
      stop.store(true, std::memory_order_relaxed);
    }
  };
  // Blocks are shared like the Host backend's loops (backend/host.hpp): the calling thread and the pool's helpers take
  // one block at a time, and a helper that another process keeps off its core holds up no one but its own block.
  const bool worth_it = c.grid > 1 && std::size_t(c.grid) * c.block >= parallel_min_threads;
  const int threads = c.parallel_blocks && worth_it ? host_threads_for(static_cast<long long>(c.grid), 1) : 1;
  host_loop(static_cast<Index>(c.grid), 1, threads, [&](Index b) { one(static_cast<unsigned>(b)); });
  if (first) std::rethrow_exception(first);
}

}  // inline namespace CELLINT_DETAIL_EMU_ABI
}  // namespace cellint::detail::emulated
