#pragma once
/// @file
/// Par-Part-NoLoop and Par-Part-Loop (paper sections 4.1 and 4.2): one thread per target
/// particle, sources read from global memory in the 3^Dim neighbour cells. NoLoop launches one
/// thread per particle (128 per block, paper 7.1); Loop uses a grid-stride loop over targets
/// with any number of blocks. Par-Part-NoLoop stays the in-library GPU reference.

#include <algorithm>

#include "cellint/core/pair_functor.hpp"
#include "cellint/grid/cell_grid.hpp"
#include "cellint/strategies/detail/neighbors.hpp"
#include "cellint/strategies/strategy.hpp"

namespace cellint::detail {

/// Kernel: thread i of the launch handles target i (and i + stride, ... when `loop`).
template <class F, class Real, int Dim>
struct ParPartInteract {
  using T = FunctorTraits<F, Real, Dim>;
  GridView<Real, Dim> v;
  F f;
  typename T::Accum* out;
  bool loop;
  template <class Block>
  CELLINT_HD void operator()(Block& b) const {
    const Index first = static_cast<Index>(b.block_rank() * b.block_size() + b.thread_rank());
    const Index stride = loop ? static_cast<Index>(b.grid_size() * b.block_size()) : v.n;
    for (Index t = first; t < v.n; t += stride) {
      auto acc = T::init(f);
      accumulate_from_global<T>(v, f, t, v.position(t), T::load(f, v, t), acc);
      out[t] = acc;
    }
  }
};

/// Shared part of the two Par-Part strategies.
template <bool Loop>
struct ParPartImpl {
  template <class B, class R, int D, class F>
  static Support supports(const CellGrid<B, R, D>&, const F&, const DeviceProperties&, const Tuning&) {
    if (!B::is_gpu_like) return Support::no("par-part needs a GPU-like backend (Emulated, Cuda or Hip)");
    return Support::yes();
  }
  template <class B, class R, int D, class F>
  static LaunchShape shape(const CellGrid<B, R, D>& grid, const F&, const DeviceProperties& p, const Tuning& t) {
    const unsigned threads = t.threads ? t.threads : 128;
    const long need = (static_cast<long>(grid.size()) + threads - 1) / threads;
    long blocks = need;
    if (Loop) blocks = t.blocks ? t.blocks : std::min<long>(need, static_cast<long>(p.multiprocessors) * (p.max_threads_per_multiprocessor / threads));
    return {static_cast<unsigned>(std::max(1L, blocks)), threads, 0};
  }
  template <class B, class R, int D, class F>
  static LaunchShape run(const CellGrid<B, R, D>& grid, const F& f, typename F::Accum* out, const Tuning& t) {
    LaunchShape s{};
    if constexpr (B::is_gpu_like) {
      s = shape(grid, f, B::properties(), t);
      if (grid.size() == 0) return s;
      B::launch(s, ParPartInteract<F, R, D>{grid.view(), f, out, Loop}, grid.stream());
    }
    return s;
  }
};

template <> struct StrategyImpl<ParPartNoLoop> : ParPartImpl<false> {};
template <> struct StrategyImpl<ParPartLoop> : ParPartImpl<true> {};

}  // namespace cellint::detail
