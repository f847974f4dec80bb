#pragma once
// One loop over [0, n) for any backend: a Host loop (backend/host.hpp) on Host, a grid-stride block kernel elsewhere.
// The body is `template <class A> CELLINT_HD void operator()(A& atomics, Index i) const`, where `atomics` offers
// atomic_add / atomic_max / atomic_min (the block itself on GPU-like backends).
//
// On the Host backend a loop runs on the calling thread unless it holds enough work to share: `work` (parallel_for's
// last argument) is the cost of one index in simple element operations (a load, a few flops, a store; 1 by default),
// and a thread is given at least host_min_work of them. Per-particle loops of a few thousand particles (binning, an
// integrator step) therefore involve no other thread at all: they are memory-bound and take microseconds, less than
// handing work to other threads and far less than one scheduler time slice of a thread that another process delays.
// Larger loops are shared in chunks (see "Host loops" in backend/host.hpp).

#include <algorithm>

#include "cellint/backend/detail/host_atomics.hpp"
#include "cellint/backend/host.hpp"
#include "cellint/backend/traits.hpp"

namespace cellint::detail {

/// Grid-stride block kernel applying `body` to every index.
template <class Body>
struct ElementKernel {
  Body body;
  Index n;
  template <class Block>
  CELLINT_HD void operator()(Block& b) const {
    const Index stride = static_cast<Index>(b.grid_size() * b.block_size());
    for (Index i = static_cast<Index>(b.block_rank() * b.block_size() + b.thread_rank()); i < n; i += stride)
      body(b, i);
  }
};

/// Element operations that one thread must get before a Host loop is shared among threads.
inline constexpr long long host_min_work = 4096;

/// Runs body(atomics, i) for i in [0, n) on `Backend`. `work`: the cost of one index in element operations, for the
/// Host backend's decision to run in parallel (GPU-like backends ignore it).
template <class Backend, class Body>
void parallel_for(Index n, const Body& body, typename Backend::Stream s = {}, long long work = 1) {
  if (n <= 0) return;
  if constexpr (Backend::is_gpu_like) {
    const unsigned block = 256;
    const long want = (static_cast<long>(n) + block - 1) / block;
    const long cap = static_cast<long>(Backend::properties().multiprocessors) * 16;
    LaunchShape shape{static_cast<unsigned>(std::max(1L, std::min(want, cap))), block, 0};
    Backend::launch(shape, ElementKernel<Body>{body, n}, s);
  } else {
    (void)s;
    const long long total = static_cast<long long>(n) * (work > 0 ? work : 1);
    const int threads = host_threads_for(total, host_min_work);
    if (threads <= 1) {
      if (host_loop_nested()) {  // other threads may run loops that update the same memory
        HostAtomics a;
        for (Index i = 0; i < n; ++i) body(a, i);
      } else {
        HostSerialAtomics a;  // the only loop running: plain read-modify-write
        for (Index i = 0; i < n; ++i) body(a, i);
      }
      return;
    }
    // chunks of at most host_min_work operations, at least 4 per thread: a thread that another process slows down takes
    // fewer of them, and handing them out costs little
    const long long per_chunk = std::max<long long>(1, host_min_work / (work > 0 ? work : 1));
    const Index grain = static_cast<Index>(std::max<long long>(1, std::min<long long>(per_chunk, n / (4LL * threads))));
    HostAtomics a;
    host_loop(n, grain, threads, [&](Index i) { body(a, i); });
  }
}

}  // namespace cellint::detail
