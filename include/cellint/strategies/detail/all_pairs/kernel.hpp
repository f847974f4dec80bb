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

/// Kernel: each thread holds K targets, me + k * block_size() of its block's K * block_size() (K = 1, 2 or 4); the
/// block stages sources [base, base + block_size()) for base = 0, block_size(), ... as records, and every thread adds
/// each staged source to its K targets (one shared-memory load serves K pairs). In one set, target k of a thread is
/// source `me` of the tile at base = first + k * block_size(): only those K tiles test for the thread's own slots.
template <class F, class Real, int Dim, bool Periodic, int K>
struct AllPairsInteract {
  using T = FunctorTraits<F, Real, Dim>;
  using Payload = typename T::Payload;
  using Record = AllPairsRecord<Real, Dim, typename T::SourcePayload, T::position_only>;  ///< a staged source
  using Source = AllPairsSource<Real, Dim, typename T::SourcePayload>;
  PairViews<Real, Dim> v;  ///< targets and sources
  F f;                     ///< the pair functor
  typename T::Accum* out;  ///< one accumulator per target slot

  /// Shared memory for a block of `threads`.
  static std::size_t shared_bytes(unsigned threads) { return static_cast<std::size_t>(threads) * sizeof(Record); }

  template <class Block>
  CELLINT_HD void operator()(Block& b) const {
    const GridView<Real, Dim>& tv = v.targets;
    const GridView<Real, Dim>& sv = v.sources;
    const Index threads = static_cast<Index>(b.block_size()), me = static_cast<Index>(b.thread_rank());
    const Index first = static_cast<Index>(b.block_rank()) * threads * K;
    Record* tile = b.template shared<Record>();
    Vec<Real, Dim> xt[K];
    Payload pt[K];
    typename T::Accum acc[K];
    for (int k = 0; k < K; ++k) {
      const Index t = first + k * threads + me;
      xt[k] = t < tv.n ? tv.position(t) : Vec<Real, Dim>{};
      pt[k] = t < tv.n ? T::load(f, tv, t) : Payload{};
      acc[k] = T::init(f);
    }
    Real len[Dim], inv_len[Dim];
    for (int d = 0; d < Dim; ++d) {
      len[d] = sv.geo.box.lengths[d];
      inv_len[d] = Real(1) / sv.geo.box.lengths[d];
    }
    const Real rc2 = cutoff2(sv.geo);
    // source j of the tile for target k: its position at the image nearest the target on periodic axes
    auto seen_from = [&](const Record& r, int k) {
      Source s;
      for (int d = 0; d < Dim; ++d) {
        s.x[d] = r.x[d];
        if constexpr (Periodic)
          if (sv.geo.box.periodic[d]) s.x[d] += len[d] * round_nearest((xt[k][d] - s.x[d]) * inv_len[d]);
      }
      if constexpr (!T::position_only) s.p = r.p;
      return s;
    };
    for (Index base = 0; base < sv.n; base += threads) {
      const Index j = base + me;
      if (j < sv.n) {
        Record r;
        for (int d = 0; d < Dim; ++d) r.x[d] = sv.pos[d][j];
        if constexpr (!T::position_only) r.p = T::load_source(f, sv, j);
        tile[me] = r;
      }
      b.sync();
      const Index count = sv.n - base < threads ? sv.n - base : threads;
      // the target (if any) that is source `me` of this tile; idle targets past the end take every source (harmless:
      // their sums are not written)
      int own = -1;
      if (v.same)
        for (int k = 0; k < K; ++k)
          if (base == first + k * threads) own = k;
      if (own < 0) {
        Index q = 0;
        for (; q + 2 <= count; q += 2) {  // two records in flight
          const Record r0 = tile[q], r1 = tile[q + 1];
          for (int k = 0; k < K; ++k) accumulate_pair<T>(f, seen_from(r0, k), xt[k], pt[k], rc2, acc[k]);
          for (int k = 0; k < K; ++k) accumulate_pair<T>(f, seen_from(r1, k), xt[k], pt[k], rc2, acc[k]);
        }
        if (q < count) {
          const Record r0 = tile[q];
          for (int k = 0; k < K; ++k) accumulate_pair<T>(f, seen_from(r0, k), xt[k], pt[k], rc2, acc[k]);
        }
      } else {
        for (Index q = 0; q < count; ++q) {
          const Record r0 = tile[q];
          for (int k = 0; k < K; ++k)
            accumulate_pair<T>(f, seen_from(r0, k), xt[k], pt[k], rc2, acc[k], k != own || q != me);
        }
      }
      b.sync();  // the tile is read before the next one overwrites it
    }
    for (int k = 0; k < K; ++k) {
      const Index t = first + k * threads + me;
      if (t < tv.n) out[t] = acc[k];
    }
  }
};

template <>
struct StrategyImpl<AllPairs> {
  /// The launch shape, and the targets each thread holds.
  struct Plan {
    Support support;     ///< whether it can run, and why not
    LaunchShape shape;   ///< blocks of `threads`, each with one tile of records
    int per_thread = 2;  ///< targets per thread
  };
  template <class B, class R, int D, class F>
  static Plan plan(const Call<B, R, D>& c, const F&, const Tuning& t) {
    Plan p;
    if (!B::is_gpu_like) return refuse(p, "all-pairs needs a GPU-like backend (Emulated, Cuda or Hip)");
    const unsigned threads = t.threads ? t.threads : AllPairs::default_threads;
    const unsigned warp = static_cast<unsigned>(c.props.warp_size > 0 ? c.props.warp_size : 32);
    if (static_cast<long>(threads) > c.props.max_threads_per_block || threads % warp != 0)
      return refuse(p, cat("all-pairs: Tuning::threads = ", threads, " must be a multiple of the warp size (", warp,
                           ") and at most the device's ", c.props.max_threads_per_block, " threads per block"));
    p.per_thread = t.targets_per_thread ? t.targets_per_thread : AllPairs::default_targets_per_thread;
    if (p.per_thread != 1 && p.per_thread != 2 && p.per_thread != 4)
      return refuse(p, cat("all-pairs: Tuning::targets_per_thread = ", p.per_thread, " must be 1, 2 or 4"));
    const std::size_t bytes = AllPairsInteract<F, R, D, true, 1>::shared_bytes(threads);
    if (bytes > c.props.shared_per_block)
      return refuse(p, cat("all-pairs: a tile of ", threads, " sources needs ", bytes, " bytes of shared memory, more ",
                           "than the ", c.props.shared_per_block, " a block has; use fewer threads (Tuning::threads) ",
                           "or a smaller functor Payload"));
    const long per_block = static_cast<long>(threads) * p.per_thread;
    const long blocks = (static_cast<long>(c.targets()) + per_block - 1) / per_block;
    p.shape = {static_cast<unsigned>(blocks > 0 ? blocks : 1), threads, bytes};
    return p;
  }
  template <class B, class R, int D, class F>
  static void run(const Call<B, R, D>& c, const F& f, typename FunctorTraits<F, R, D>::Accum* out, const Plan& p) {
    if constexpr (B::is_gpu_like) {
      bool periodic = false;
      for (int d = 0; d < D; ++d) periodic = periodic || c.geometry().box.periodic[d];
      if (periodic)
        launch<B, R, D, F, true>(c, f, out, p);
      else
        launch<B, R, D, F, false>(c, f, out, p);
    }
  }

 private:
  template <class B, class R, int D, class F, bool Periodic>
  static void launch(const Call<B, R, D>& c, const F& f, typename FunctorTraits<F, R, D>::Accum* out, const Plan& p) {
    if (p.per_thread == 1)
      B::launch(p.shape, AllPairsInteract<F, R, D, Periodic, 1>{c.views, f, out}, c.stream);
    else if (p.per_thread == 4)
      B::launch(p.shape, AllPairsInteract<F, R, D, Periodic, 4>{c.views, f, out}, c.stream);
    else
      B::launch(p.shape, AllPairsInteract<F, R, D, Periodic, 2>{c.views, f, out}, c.stream);
  }
};

}  // namespace cellint::detail
