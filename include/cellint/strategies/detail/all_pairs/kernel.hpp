#pragma once
// All-pairs tiled: kernel and plan (see strategies/all_pairs.hpp).

#include <cstddef>

#include "cellint/core/math.hpp"
#include "cellint/strategies/all_pairs.hpp"  // the tag and its policy
#include "cellint/strategies/detail/pairs.hpp"
#include "cellint/strategies/strategy.hpp"

namespace cellint::detail {

/// A source staged in shared memory: position and payload in one record, 16-byte aligned, so that a thread reads it
/// with as few (vector) loads as possible (2D float with a float payload: one 16-byte load).
template <class Real, int Dim, class Payload, bool PositionOnly>
struct alignas(16) AllPairsRecord {
  Real x[Dim];  ///< position
  Payload p;    ///< payload
};
template <class Real, int Dim, class Payload>
struct alignas(16) AllPairsRecord<Real, Dim, Payload, true> {
  Real x[Dim];  ///< position (no payload)
};

/// One staged source as the pair term reads it (see accumulate_pair()).
template <class Real, int Dim, class Payload>
struct AllPairsSource {
  Vec<Real, Dim> x;  ///< position at the image nearest the target
  Payload p;         ///< payload
  /// The payload.
  CELLINT_HD Payload payload() const { return p; }
};

/// Staged records, each seen at its image nearest the target on the periodic axes (`Periodic`; without it, as staged).
template <class Real, int Dim, class Payload, bool PositionOnly, bool Periodic>
struct AllPairsSources {
  const AllPairsRecord<Real, Dim, Payload, PositionOnly>* rec;  ///< the tile
  Vec<Real, Dim> xt;                                            ///< the target
  Real len[Dim];                                                ///< box length per axis
  Real inv_len[Dim];                                            ///< 1 / box length per axis
  bool periodic[Dim];                                           ///< periodic axes
  /// Staged source j.
  CELLINT_HD AllPairsSource<Real, Dim, Payload> operator[](Index j) const {
    const AllPairsRecord<Real, Dim, Payload, PositionOnly> r = rec[j];
    AllPairsSource<Real, Dim, Payload> s;
    for (int d = 0; d < Dim; ++d) {
      s.x[d] = r.x[d];
      if constexpr (Periodic)
        if (periodic[d]) s.x[d] += len[d] * round_nearest((xt[d] - s.x[d]) * inv_len[d]);
    }
    if constexpr (!PositionOnly) s.p = r.p;
    return s;
  }
};

/// Kernel: thread t of block b takes target b * block_size() + t; the block stages sources [base, base +
/// block_size()) for base = 0, block_size(), ... and every thread adds them to its target. In one set, a block's own
/// targets are the sources of the tile at base = its first target: only that tile skips the thread's own slot.
template <class F, class Real, int Dim, bool Periodic>
struct AllPairsInteract {
  using T = FunctorTraits<F, Real, Dim>;
  using Payload = typename T::Payload;
  using Record = AllPairsRecord<Real, Dim, Payload, T::position_only>;
  PairViews<Real, Dim> v;   ///< targets and sources
  F f;                      ///< the pair functor
  typename T::Accum* out;   ///< one accumulator per target slot

  /// Shared memory for a block of `threads`.
  static std::size_t shared_bytes(unsigned threads) { return static_cast<std::size_t>(threads) * sizeof(Record); }

  template <class Block>
  CELLINT_HD void operator()(Block& b) const {
    const GridView<Real, Dim>& tv = v.targets;
    const GridView<Real, Dim>& sv = v.sources;
    const Index threads = static_cast<Index>(b.block_size()), me = static_cast<Index>(b.thread_rank());
    const Index first = static_cast<Index>(b.block_rank()) * threads, t = first + me;
    Record* tile = b.template shared<Record>();
    const bool active = t < tv.n;
    const Vec<Real, Dim> xt = active ? tv.position(t) : Vec<Real, Dim>{};
    const Payload pt = active ? T::load(f, tv, t) : Payload{};
    auto acc = T::init(f);
    AllPairsSources<Real, Dim, Payload, T::position_only, Periodic> src{tile, xt, {}, {}, {}};
    for (int d = 0; d < Dim; ++d) {
      src.len[d] = sv.geo.box.lengths[d];
      src.inv_len[d] = Real(1) / sv.geo.box.lengths[d];
      src.periodic[d] = sv.geo.box.periodic[d];
    }
    const Real rc2 = cutoff2(sv.geo);
    for (Index base = 0; base < sv.n; base += threads) {
      const Index j = base + me;
      if (j < sv.n) {
        Record r;
        for (int d = 0; d < Dim; ++d) r.x[d] = sv.pos[d][j];
        if constexpr (!T::position_only) r.p = T::load(f, sv, j);
        tile[me] = r;
      }
      b.sync();
      const Index count = sv.n - base < threads ? sv.n - base : threads;
      if (active) {
        if (v.same && base == first)
          accumulate_around<T>(f, src, Index(0), count, me, xt, pt, rc2, acc);  // the target is source `me` here
        else
          accumulate<T>(f, src, Index(0), count, xt, pt, rc2, acc);
      }
      b.sync();  // the tile is read before the next one overwrites it
    }
    if (active) out[t] = acc;
  }
};

template <>
struct StrategyImpl<AllPairs> {
  using Plan = BasicPlan;  ///< a launch shape
  template <class B, class R, int D, class F>
  static Plan plan(const Call<B, R, D>& c, const F&, const Tuning& t) {
    Plan p;
    if (!B::is_gpu_like) return refuse(p, "all-pairs needs a GPU-like backend (Emulated, Cuda or Hip)");
    const unsigned threads = t.threads ? t.threads : AllPairs::default_threads;
    const unsigned warp = static_cast<unsigned>(c.props.warp_size > 0 ? c.props.warp_size : 32);
    if (static_cast<long>(threads) > c.props.max_threads_per_block || threads % warp != 0)
      return refuse(p, cat("all-pairs: Tuning::threads = ", threads, " must be a multiple of the warp size (", warp,
                           ") and at most the device's ", c.props.max_threads_per_block, " threads per block"));
    const std::size_t bytes = AllPairsInteract<F, R, D, true>::shared_bytes(threads);
    if (bytes > c.props.shared_per_block)
      return refuse(p, cat("all-pairs: a tile of ", threads, " sources needs ", bytes, " bytes of shared memory, more "
                           "than the ", c.props.shared_per_block, " a block has; use fewer threads (Tuning::threads) "
                           "or a smaller functor Payload"));
    const long blocks = (static_cast<long>(c.targets()) + threads - 1) / threads;
    p.shape = {static_cast<unsigned>(blocks > 0 ? blocks : 1), threads, bytes};
    return p;
  }
  template <class B, class R, int D, class F>
  static void run(const Call<B, R, D>& c, const F& f, typename FunctorTraits<F, R, D>::Accum* out, const Plan& p) {
    if constexpr (B::is_gpu_like) {
      bool periodic = false;
      for (int d = 0; d < D; ++d) periodic = periodic || c.geometry().box.periodic[d];
      if (periodic)
        B::launch(p.shape, AllPairsInteract<F, R, D, true>{c.views, f, out}, c.stream);
      else
        B::launch(p.shape, AllPairsInteract<F, R, D, false>{c.views, f, out}, c.stream);
    }
  }
};

}  // namespace cellint::detail
