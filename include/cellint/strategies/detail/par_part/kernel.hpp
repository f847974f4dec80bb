#pragma once
// Par-Part-NoLoop and Par-Part-Loop: kernel and plan (see strategies/par_part.hpp).

#include <algorithm>

#include "cellint/strategies/detail/neighbors.hpp"
#include "cellint/strategies/par_part.hpp"  // the tag and its policy
#include "cellint/strategies/strategy.hpp"

namespace cellint::detail {

/// Kernel: thread i of the launch handles target i (and i + stride, ... when `loop`).
template <class F, class Real, int Dim>
struct ParPartInteract {
  using T = FunctorTraits<F, Real, Dim>;
  PairViews<Real, Dim> v;   ///< targets and sources
  F f;                      ///< the pair functor
  typename T::Accum* out;   ///< one accumulator per target slot
  bool loop;                ///< grid-stride loop over targets (Par-Part-Loop)
  template <class Block>
  CELLINT_HD void operator()(Block& b) const {
    const GridView<Real, Dim>& tv = v.targets;
    const Index first = static_cast<Index>(b.block_rank() * b.block_size() + b.thread_rank());
    const Index stride = loop ? static_cast<Index>(b.grid_size() * b.block_size()) : tv.n;
    for (Index t = first; t < tv.n; t += stride) {
      auto acc = T::init(f);
      accumulate_neighbors<false, T>(v.sources, f, v.excluded(t), tv.position(t), T::load(f, tv, t), acc);
      out[t] = acc;
    }
  }
};

/// Shared part of the two Par-Part strategies.
template <class Tag, bool Loop>
struct ParPartImpl {
  using Plan = BasicPlan;  ///< a launch shape, nothing else to plan
  template <class B, class R, int D, class F>
  static Plan plan(const Call<B, R, D>& c, const F&, const Tuning& t) {
    Plan p;
    if (!B::is_gpu_like) return refuse(p, cat(Tag::name, " needs a GPU-like backend (Emulated, Cuda or Hip)"));
    const unsigned threads = t.threads ? t.threads : Tag::default_threads;
    if (static_cast<long>(threads) > c.props.max_threads_per_block)
      return refuse(p, cat(Tag::name, ": Tuning::threads = ", threads, " exceeds the device's ",
                           c.props.max_threads_per_block, " threads per block"));
    const long need = (static_cast<long>(c.targets()) + threads - 1) / threads;
    const long fill = static_cast<long>(c.props.multiprocessors) * (c.props.max_threads_per_multiprocessor / threads);
    const long blocks = !Loop ? need : t.blocks ? t.blocks : std::min<long>(need, fill);
    p.shape = {static_cast<unsigned>(std::max(1L, blocks)), threads, 0};
    return p;
  }
  template <class B, class R, int D, class F>
  static void run(const Call<B, R, D>& c, const F& f, typename FunctorTraits<F, R, D>::Accum* out, const Plan& p) {
    if constexpr (B::is_gpu_like) B::launch(p.shape, ParPartInteract<F, R, D>{c.views, f, out, Loop}, c.stream);
  }
};

template <> struct StrategyImpl<ParPartNoLoop> : ParPartImpl<ParPartNoLoop, false> {};
template <> struct StrategyImpl<ParPartLoop> : ParPartImpl<ParPartLoop, true> {};

}  // namespace cellint::detail
