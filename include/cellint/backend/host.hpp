#pragma once
/// @file
/// The Host backend: plain CPU memory; loops run on the calling thread or, when OpenMP is enabled and a loop is large
/// enough, on it and a small pool of helper threads (see "Host loops" below: the thread count is OpenMP's, the threads
/// are not an OpenMP team). Strategies on this backend are the CPU cell loops (full and half-shell) and the O(N^2)
/// oracle.

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <exception>
#include <mutex>
#include <numeric>
#include <thread>
#include <vector>

#include "cellint/backend/detail/host_memory.hpp"

#if defined(_OPENMP)
#  include <omp.h>
#  if defined(__linux__)
#    include <pthread.h>
#    include <sched.h>
#  endif
#endif

namespace cellint {

/// CPU backend (serial, or multi-threaded when the translation unit is compiled with OpenMP).
struct Host : detail::HostMemory {
  static constexpr bool is_gpu_like = false;  ///< runs no block kernels, only the CPU strategies
  static constexpr int warp_size = 1;         ///< no warps: one thread
  /// Backend name for logs.
  static const char* name() { return "host"; }
  /// Most threads a parallel loop uses (the caller included): omp_get_max_threads(), 1 without OpenMP.
  static int threads() {
#if defined(_OPENMP)
    return omp_get_max_threads();
#else
    return 1;
#endif
  }
  /// Properties of the CPU seen as a device.
  static DeviceProperties properties() {
    DeviceProperties p;
    p.multiprocessors = threads();
    p.warp_size = 1;
    const char n[] = "host CPU";
    for (unsigned i = 0; i < sizeof(n); ++i) p.name[i] = n[i];
    return p;
  }
  /// Exclusive prefix sum of n values (in may equal out).
  static void exclusive_scan(const std::uint32_t* in, std::uint32_t* out, Index n, Stream = {}) {
    std::uint32_t run = 0;
    for (Index i = 0; i < n; ++i) {
      const std::uint32_t v = in[i];
      out[i] = run;
      run += v;
    }
  }
  /// Stable ascending sort of (key, value) pairs by key, in place.
  static void sort_pairs(std::uint32_t* keys, Index* values, Index n, int /*key_bits*/, Stream = {}) {
    std::vector<Index> order(static_cast<std::size_t>(n));
    std::iota(order.begin(), order.end(), 0);
    std::stable_sort(order.begin(), order.end(), [&](Index a, Index b) { return keys[a] < keys[b]; });
    std::vector<std::uint32_t> k(order.size());
    std::vector<Index> v(order.size());
    for (std::size_t i = 0; i < order.size(); ++i) {
      k[i] = keys[order[i]];
      v[i] = values[order[i]];
    }
    std::copy(k.begin(), k.end(), keys);
    std::copy(v.begin(), v.end(), values);
  }
};

namespace detail {

// ---- Host loops ---------------------------------------------------------------------------------
//
// A parallel loop of the Host backend is run by the calling thread together with the threads of a small pool
// (HostPool), never by an OpenMP parallel region. The caller publishes the loop, takes chunks of it like any helper,
// and returns as soon as every chunk is done: it waits only for chunks that a helper has started, never for a helper
// that has not shown up. A helper that another process keeps off its core therefore costs at most the chunk it holds (a
// few microseconds of work), where an OpenMP region's barriers wait for every thread of the team, and, while waiting,
// spin on their own core for milliseconds (libgomp's GOMP_SPINCOUNT, LLVM's KMP_BLOCKTIME), so that the late thread
// queues behind the other process for a whole time slice, at every barrier. Idle helpers and a waiting caller spin for
// at most host_spin_ns (yielding the core every microsecond) and then sleep, which leaves their core to whoever needs
// it. A helper descheduled in the middle of a chunk still makes the caller wait; when that wait is far longer than a
// chunk, the pool backs off (HostPool::back_off): loops run on the calling thread alone for 10 ms to 0.5 s. Loops too
// small to pay for helpers (see host_threads_for) run on the calling thread alone.
//
// The number of threads is OpenMP's (OMP_NUM_THREADS, omp_set_num_threads); without OpenMP, loops run on the calling
// thread. A loop started from a helper, from inside an OpenMP parallel region, or while another thread's loop holds the
// pool, runs on its calling thread.

/// How long an idle helper or a waiting caller spins before it sleeps (nanoseconds). The spin yields the core every few
/// pauses (sched_yield), so that a thread of ours or another process queued on the same core runs instead of waiting
/// for the spinner's time slice to end. Override with -DCELLINT_HOST_SPIN_NS=...
#if !defined(CELLINT_HOST_SPIN_NS)
#  define CELLINT_HOST_SPIN_NS 50000
#endif
inline constexpr long long host_spin_ns = CELLINT_HOST_SPIN_NS;

/// Pause instruction for spin loops.
inline void cpu_relax() {
#if defined(CELLINT_DEVICE_PASS)
#elif defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#elif defined(__aarch64__) || defined(__arm__)
  __asm__ __volatile__("yield");
#endif
}

/// Number of threads (the caller included) worth using for `work` units when each thread should get at least
/// `per_thread` of them; 1: run on the calling thread.
inline int host_threads_for(long long work, long long per_thread) {
#if defined(_OPENMP)
  if (omp_in_parallel()) return 1;  // the enclosing region's threads already use the cores
  const long long by_work = work / (per_thread > 0 ? per_thread : 1);
  const long long t = std::min<long long>(omp_get_max_threads(), by_work);
  return t > 1 ? static_cast<int>(t) : 1;
#else
  (void)work;
  (void)per_thread;
  return 1;
#endif
}

/// Whether this thread is one of the pool's helpers (set once per helper thread).
inline bool& host_in_helper() {
  static thread_local bool flag = false;
  return flag;
}

/// Whether a loop started now runs inside another parallel loop (on a pool helper, or inside an OpenMP parallel
/// region), where other threads may be running loops too.
inline bool host_loop_nested() {
#if defined(_OPENMP)
  return host_in_helper() || omp_in_parallel();
#else
  return false;
#endif
}

#if defined(_OPENMP)
/// Spin for host_spin_ns, then sleep on `cv` until done() holds. Whoever makes done() true changes an atomic (seq_cst)
/// and then calls host_notify() with the same mutex, cv and count.
template <class Pred>
void host_wait(std::mutex& m, std::condition_variable& cv, std::atomic<int>& sleepers, const Pred& done) {
  const auto t0 = std::chrono::steady_clock::now();
  for (unsigned k = 1;; ++k) {
    if (done()) return;
    if (k % 8 == 0) {  // about every microsecond
      std::this_thread::yield();
      if (std::chrono::steady_clock::now() - t0 > std::chrono::nanoseconds(host_spin_ns)) break;
    } else {
      cpu_relax();
    }
  }
  std::unique_lock<std::mutex> lock(m);
  sleepers.fetch_add(1);  // seq_cst: either host_notify() sees the sleeper or done() sees the change
  // the timeout only bounds the cost of a missed wake-up; host_notify() is what ends the wait
  while (!done()) cv.wait_for(lock, std::chrono::milliseconds(2));
  sleepers.fetch_sub(1);
}
inline void host_notify(std::mutex& m, std::condition_variable& cv, std::atomic<int>& sleepers) {
  if (sleepers.load() > 0) {
    std::lock_guard<std::mutex> lock(m);
    cv.notify_all();
  }
}

/// The Host backend's helper threads (one process-wide pool, created on first use, grown on demand, never destroyed:
/// its threads sleep when idle and end with the process).
class HostPool {
 public:
  static HostPool& get() {
    static HostPool* pool = new HostPool;  // never destroyed: no join at exit, no order problem
    return *pool;
  }

  /// Runs body(i) for i in [0, n) in chunks of `grain`, on the calling thread and up to `threads - 1` helpers; returns
  /// when every index is done.
  template <class Body>
  void run(Index n, Index grain, int threads, const Body& body) {
    const Index g = grain > 0 ? grain : 1;
    const Index chunks = (n + g - 1) / g;
    bool expected = false;
    if (threads <= 1 || chunks <= 1 || in_helper() ||
        !busy_.compare_exchange_strong(expected, true, std::memory_order_acquire)) {
      for (Index i = 0; i < n; ++i) body(i);
      return;
    }
    const auto t0 = std::chrono::steady_clock::now();
    const int helpers = std::min<int>(threads - 1, max_helpers);
    if (t0 < serial_until_ || !ensure_helpers(helpers)) {  // backing off, or no thread could start
      busy_.store(false, std::memory_order_release);
      for (Index i = 0; i < n; ++i) body(i);
      return;
    }
    Job job;
    job.n = n;
    job.grain = g;
    job.chunks = chunks;
    job.body = &body;
    job.call = [](const void* b, Index begin, Index end) {
      const Body& f = *static_cast<const Body*>(b);
      for (Index i = begin; i < end; ++i) f(i);
    };
    job_.store(&job, std::memory_order_relaxed);
    const std::uint64_t epoch = (ctl_.load() >> 32) + 1;  // odd: a loop is open
    ctl_.store((epoch << 32) | (static_cast<std::uint64_t>(helpers) << 16));
    host_notify(m_, helpers_cv_, helpers_asleep_);
    const Index own = work(job);
    const auto t1 = std::chrono::steady_clock::now();
    // wait for the chunks that helpers started (not for helpers that did not come)
    host_wait(m_, caller_cv_, caller_asleep_, [&] { return job.done.load() >= job.chunks || job.failed.load(); });
    close();
    back_off(t1 - t0, own, std::chrono::steady_clock::now() - t1);
    busy_.store(false, std::memory_order_release);
    if (job.failed.load()) std::rethrow_exception(job.error);  // the first exception of any thread
  }

 private:
  static constexpr int max_helpers = 0xffff;
  struct Job {
    Index n = 0, grain = 1, chunks = 0;
    const void* body = nullptr;
    void (*call)(const void*, Index, Index) = nullptr;
    alignas(64) std::atomic<Index> next{0};  // claimed chunks (its own cache line: every thread
    alignas(64) std::atomic<Index> done{0};  // claims and completes chunks on these two)
    std::atomic<bool> failed{false};
    std::exception_ptr error;  // written once, by the thread that set `failed`
  };

  HostPool() = default;

  // A loop whose caller, done with its own chunks, then waited far longer than a chunk takes has a helper that was
  // descheduled in the middle of a chunk: another process is using the cores. The pool then runs loops on their calling
  // thread for a while (10 ms, doubling while it keeps happening, at most 0.5 s) instead of paying a time slice again
  // and again; a second of loops without such a wait resets the back-off.
  void back_off(std::chrono::steady_clock::duration own, Index own_chunks, std::chrono::steady_clock::duration wait) {
    const auto per_chunk = own / (own_chunks > 0 ? own_chunks : 1);
    const auto now = std::chrono::steady_clock::now();
    if (wait > std::chrono::microseconds(200) + 4 * per_chunk) {
      backoff_ = backoff_ == std::chrono::steady_clock::duration::zero()
                     ? std::chrono::steady_clock::duration(std::chrono::milliseconds(10))
                     : std::min<std::chrono::steady_clock::duration>(2 * backoff_, std::chrono::milliseconds(500));
      serial_until_ = now + backoff_;
      last_stall_ = now;
    } else if (now - last_stall_ > std::chrono::seconds(1)) {
      backoff_ = std::chrono::steady_clock::duration::zero();
    }
  }

  // ends the open loop: no helper enters any more (even epoch); waits for those inside to leave
  void close() {
    ctl_.fetch_add(std::uint64_t(1) << 32);
    host_wait(m_, caller_cv_, caller_asleep_, [&] { return (ctl_.load() & 0xffffu) == 0; });
    job_.store(nullptr, std::memory_order_relaxed);
  }

  static bool& in_helper() { return host_in_helper(); }

  // takes chunks until none is left; returns how many it ran
  Index work(Job& job) {
    for (Index ran = 0;; ++ran) {
      const Index k = job.next.fetch_add(1, std::memory_order_relaxed);
      if (k >= job.chunks) return ran;
      const Index b = k * job.grain;
      try {
        job.call(job.body, b, std::min(job.n, b + job.grain));
      } catch (...) {  // keep the first exception for the caller, hand out no more chunks
        bool first = false;
        if (job.failed.compare_exchange_strong(first, true)) job.error = std::current_exception();
        job.next.store(job.chunks);
        host_notify(m_, caller_cv_, caller_asleep_);
        return ran;
      }
      if (job.done.fetch_add(1) + 1 == job.chunks) host_notify(m_, caller_cv_, caller_asleep_);
    }
  }

  // starts helpers up to `helpers` (only the caller holding busy_ does); false if none runs
  bool ensure_helpers(int helpers) {
    try {
      while (started_ < helpers) {
        std::thread(&HostPool::helper_main, this, started_, caller_place()).detach();
        ++started_;
      }
    } catch (...) {  // std::system_error: the system refuses more threads; use those we have
    }
    return started_ > 0;
  }

  // With OpenMP thread binding (OMP_PROC_BIND), the initial thread is pinned to its place before any loop runs, and a
  // new thread inherits that mask: every helper would share the caller's core. Helper i is bound instead to the place
  // after the caller's, i + 1 places on, as OpenMP binds the threads of a team. (called by the caller) its OpenMP place
  // when threads are bound, else -1
  static int caller_place() {
    if (omp_get_proc_bind() == omp_proc_bind_false || omp_get_num_places() < 2) return -1;
    const int here = omp_get_place_num();
    return here < 0 ? 0 : here;
  }
  static void bind_like_openmp(int index, int caller) {
#if defined(__linux__)
    if (caller < 0) return;
    const int places = omp_get_num_places();
    if (places < 2) return;
    const int place = (caller + 1 + index) % places;
    const int count = omp_get_place_num_procs(place);
    if (count <= 0) return;
    std::vector<int> ids(static_cast<std::size_t>(count));
    omp_get_place_proc_ids(place, ids.data());
    cpu_set_t set;
    CPU_ZERO(&set);
    for (int id : ids)
      if (id >= 0 && id < CPU_SETSIZE) CPU_SET(id, &set);
    pthread_setaffinity_np(pthread_self(), sizeof(set), &set);  // best effort: keep the inherited mask on failure
#else
    (void)index;
    (void)caller;
#endif
  }

  void helper_main(int index, int caller) {
    in_helper() = true;
    bind_like_openmp(index, caller);
    std::uint64_t seen = ctl_.load() >> 32;
    for (;;) {
      std::uint64_t c = 0;
      host_wait(m_, helpers_cv_, helpers_asleep_, [&] {
        c = ctl_.load();
        const std::uint64_t e = c >> 32;
        return (e & 1u) && e != seen;
      });
      // enter the open loop unless it has its helpers already
      bool entered = false;
      for (;;) {
        const std::uint64_t e = c >> 32;
        if (!(e & 1u) || e == seen) break;  // closed meanwhile: nothing to do
        if ((c & 0xffffu) >= ((c >> 16) & 0xffffu)) {
          seen = e;  // enough helpers
          break;
        }
        if (ctl_.compare_exchange_weak(c, c + 1)) {
          seen = e;
          entered = true;
          break;
        }
      }
      if (!entered) continue;
      work(*job_.load(std::memory_order_relaxed));  // the CAS above ordered it after the caller's store
      ctl_.fetch_sub(1);
      host_notify(m_, caller_cv_, caller_asleep_);
    }
  }

  // epoch (bits 32-63; odd while a loop is open) | helpers allowed (16-31) | helpers inside (0-15)
  std::atomic<std::uint64_t> ctl_{0};
  std::atomic<Job*> job_{nullptr};
  std::atomic<bool> busy_{false};
  // only the caller holding busy_ touches these
  int started_ = 0;
  std::chrono::steady_clock::time_point serial_until_{}, last_stall_{};
  std::chrono::steady_clock::duration backoff_{};
  std::mutex m_;
  std::condition_variable helpers_cv_, caller_cv_;
  std::atomic<int> helpers_asleep_{0}, caller_asleep_{0};
};
#endif

/// Runs body(i) for i in [0, n) on up to `threads` threads (the caller and pool helpers), handing out `grain` indices
/// at a time; returns when all are done. threads <= 1: serial.
template <class Body>
void host_loop(Index n, Index grain, int threads, const Body& body) {
#if defined(_OPENMP)
  if (threads > 1) {
    HostPool::get().run(n, grain, threads, body);
    return;
  }
#endif
  (void)grain;
  (void)threads;
  for (Index i = 0; i < n; ++i) body(i);
}

/// Runs body(i) for i in [0, n), in parallel when OpenMP is enabled, handing out `grain` indices at a time
/// (dynamically, so that a thread slowed down by other processes takes fewer). For loops whose iterations do real work
/// (a cell, a particle's neighbours): threads are used once there are at least two grains for each.
template <class F>
void host_for(Index n, F&& body, int grain = 64) {
  const Index g = grain > 0 ? grain : 1;
  host_loop(n, g, host_threads_for(n, 2 * static_cast<long long>(g)), body);
}
}  // namespace detail

}  // namespace cellint
