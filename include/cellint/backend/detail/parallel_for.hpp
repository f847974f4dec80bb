#pragma once
// One loop over [0, n) for any backend: OpenMP on Host, a grid-stride block kernel elsewhere.
// The body is `template <class A> CELLINT_HD void operator()(A& atomics, Index i) const`, where
// `atomics` offers atomic_add / atomic_max / atomic_min (the block itself on GPU-like backends).

#include <algorithm>

#include "cellint/backend/detail/host_atomics.hpp"
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

/// Runs body(atomics, i) for i in [0, n) on `Backend`.
template <class Backend, class Body>
void parallel_for(Index n, const Body& body, typename Backend::Stream s = {}) {
  if (n <= 0) return;
  if constexpr (Backend::is_gpu_like) {
    const unsigned block = 256;
    const long want = (static_cast<long>(n) + block - 1) / block;
    const long cap = static_cast<long>(Backend::properties().multiprocessors) * 16;
    LaunchShape shape{static_cast<unsigned>(std::max(1L, std::min(want, cap))), block, 0};
    Backend::launch(shape, ElementKernel<Body>{body, n}, s);
  } else {
    HostAtomics a;
#if defined(_OPENMP)
#  pragma omp parallel for schedule(static)
    for (Index i = 0; i < n; ++i) body(a, i);
#else
    for (Index i = 0; i < n; ++i) body(a, i);
#endif
  }
}

}  // namespace cellint::detail
