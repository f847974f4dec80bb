#pragma once
// All-pairs tiled: kernel and plan (see strategies/all_pairs.hpp).

#include <algorithm>
#include <cmath>
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

/// Kernel: each thread holds K targets, me + k * block_size() of its group's K * block_size() (K = 1, 2 or 4); the
/// block stages sources [base, base + block_size()) for base = 0, block_size(), ... as records, and every thread adds
/// each staged source to its K targets (one shared-memory load serves K pairs). In one set, target k of a thread is
/// source `me` of the tile at base = first + k * block_size(): only those K tiles test for the thread's own slots.
///
/// With `splits` > 1, blocks g * splits + s share target group g, each over its own run of sources [s * chunk,
/// (s + 1) * chunk) (chunk a multiple of block_size()), and add their partial sums to `out` with atomics: `out` holds
/// zeros before the launch, and only split 0 starts from the functor's init(). That keeps the launch a whole number of
/// waves where the target groups alone would leave part of the device idle (see StrategyImpl<AllPairs>::plan).
template <class F, class Real, int Dim, bool Periodic, int K>
struct AllPairsInteract {
  using T = FunctorTraits<F, Real, Dim>;
  using Payload = typename T::Payload;
  using Record = AllPairsRecord<Real, Dim, typename T::SourcePayload, T::position_only>;  ///< a staged source
  using Source = AllPairsSource<Real, Dim, typename T::SourcePayload>;
  static constexpr int kUnroll = 8;  ///< records read together in a full tile (a divisor of every warp size)
  PairViews<Real, Dim> v;            ///< targets and sources
  F f;                               ///< the pair functor
  typename T::Accum* out;            ///< one accumulator per target slot
  Index splits = 1;                  ///< blocks per target group, each over its own run of sources
  Index chunk = 0;                   ///< sources per split (with splits > 1)

  /// Shared memory for a block of `threads`.
  static std::size_t shared_bytes(unsigned threads) { return static_cast<std::size_t>(threads) * sizeof(Record); }

  template <class Block>
  CELLINT_HD void operator()(Block& b) const {
    const GridView<Real, Dim>& tv = v.targets;
    const GridView<Real, Dim>& sv = v.sources;
    const Index threads = static_cast<Index>(b.block_size()), me = static_cast<Index>(b.thread_rank());
    const Index group = static_cast<Index>(b.block_rank()) / splits,
                split = static_cast<Index>(b.block_rank()) % splits;
    const Index first = group * threads * K;
    const Index lo = splits > 1 ? split * chunk : 0;
    const Index hi = splits > 1 && sv.n - lo > chunk ? lo + chunk : sv.n;
    Record* tile = b.template shared<Record>();
    Vec<Real, Dim> xt[K];
    Payload pt[K];
    typename T::Accum acc[K];
    for (int k = 0; k < K; ++k) {
      const Index t = first + k * threads + me;
      xt[k] = t < tv.n ? tv.position(t) : Vec<Real, Dim>{};
      pt[k] = t < tv.n ? T::load(f, tv, t) : Payload{};
      acc[k] = split == 0 ? T::init(f) : typename T::Accum{};
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
    for (Index base = lo; base < hi; base += threads) {
      const Index j = base + me;
      if (j < hi) {
        Record r;
        for (int d = 0; d < Dim; ++d) r.x[d] = sv.pos[d][j];
        if constexpr (!T::position_only) r.p = T::load_source(f, sv, j);
        tile[me] = r;
      }
      b.sync();
      const Index count = hi - base < threads ? hi - base : threads;
      // the target (if any) that is source `me` of this tile; idle targets past the end take every source (harmless:
      // their sums are not written)
      int own = -1;
      if (v.same)
        for (int k = 0; k < K; ++k)
          if (base == first + k * threads) own = k;
      if (own < 0 && count == threads && threads % kUnroll == 0) {
        // a full tile (threads is a multiple of the warp size, so of kUnroll): kUnroll records in flight, and the
        // loop's own instructions (counter, test, branch) paid once per kUnroll * K pairs
        for (Index q = 0; q < count; q += kUnroll) {
          Record r[kUnroll];
          CELLINT_DETAIL_UNROLL
          for (int u = 0; u < kUnroll; ++u) r[u] = tile[q + u];
          CELLINT_DETAIL_UNROLL
          for (int u = 0; u < kUnroll; ++u)
            for (int k = 0; k < K; ++k) accumulate_pair<T>(f, seen_from(r[u], k), xt[k], pt[k], rc2, acc[k]);
        }
      } else if (own < 0) {
        for (Index q = 0; q < count; ++q) {
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
      if (t >= tv.n) continue;
      if constexpr (T::addable) {
        if (splits > 1) {
          atomic_add_accum<T>(b, out + t, acc[k]);
          continue;
        }
      }
      out[t] = acc[k];
    }
  }
};

template <>
struct StrategyImpl<AllPairs> {
  /// The launch shape, and the targets each thread holds.
  struct Plan {
    Support support;     ///< whether it can run, and why not
    LaunchShape shape;   ///< blocks of `threads`, each with one tile of records
    int per_thread = 0;  ///< targets per thread (the rule, or Tuning::targets_per_thread)
    Index splits = 1;    ///< blocks per target group (runs of sources added with atomics)
    Index chunk = 0;     ///< sources per split
  };

  /// Blocks per target group for `groups` groups on `slots` resident blocks: 1 when the groups alone fill whole waves
  /// (at least 97 % of the last one busy), else the fewest splits that do, or the best of up to 64 (equal blocks run
  /// in lockstep waves, so a launch of w waves takes ceil(w) of them). `most` caps it: every split keeps at least 2
  /// tiles of sources.
  static Index choose_splits(long groups, long slots, long most) {
    Index best = 1;
    double best_eff = 0;
    for (Index s = 1; s <= 64 && s <= most; ++s) {
      const double w = static_cast<double>(groups) * static_cast<double>(s) / static_cast<double>(slots);
      const double eff = w / std::ceil(w);
      if (eff >= 0.97) return s;
      if (eff > best_eff + 1e-9) best = s, best_eff = eff;
    }
    return best;
  }
  template <class B, class R, int D, class F>
  static Plan plan(const Call<B, R, D>& c, const F& f, const Tuning& t) {
    Plan p;
    if (!B::is_gpu_like) return refuse(p, "all-pairs needs a GPU-like backend (Emulated, Cuda or Hip)");
    const unsigned threads = t.threads ? t.threads : AllPairs::default_threads;
    const unsigned warp = static_cast<unsigned>(c.props.warp_size > 0 ? c.props.warp_size : 32);
    if (static_cast<long>(threads) > c.props.max_threads_per_block || threads % warp != 0)
      return refuse(p, cat("all-pairs: Tuning::threads = ", threads, " must be a multiple of the warp size (", warp,
                           ") and at most the device's ", c.props.max_threads_per_block, " threads per block"));
    p.per_thread = t.targets_per_thread;
    if (p.per_thread != 0 && p.per_thread != 1 && p.per_thread != 2 && p.per_thread != 4)
      return refuse(p, cat("all-pairs: Tuning::targets_per_thread = ", p.per_thread, " must be 1, 2 or 4"));
    if (t.source_splits < 0)
      return refuse(p, cat("all-pairs: Tuning::source_splits = ", t.source_splits, " must be 0 (the rule) or more"));
    const std::size_t bytes = AllPairsInteract<F, R, D, true, 1>::shared_bytes(threads);
    if (bytes > c.props.shared_per_block)
      return refuse(p, cat("all-pairs: a tile of ", threads, " sources needs ", bytes, " bytes of shared memory, more ",
                           "than the ", c.props.shared_per_block, " a block has; use fewer threads (Tuning::threads) ",
                           "or a smaller functor Payload"));
    const long sources = c.views.sources.n;
    const bool can_split = B::is_gpu_like && FunctorTraits<F, R, D>::addable && !t.reproducible;
    const long most = can_split ? std::max(1L, sources / (2L * threads)) : 1;  // splits of at least two tiles
    // resident blocks: by threads and shared memory (registers below, once the kernel is known)
    long per_sm = std::min<long>(c.props.max_threads_per_multiprocessor / static_cast<long>(threads), 32);
    per_sm =
        std::min<long>(per_sm, static_cast<long>(c.props.shared_per_multiprocessor / std::max<std::size_t>(bytes, 1)));
    auto groups_of = [&](int k) {
      const long per_block = static_cast<long>(threads) * k;
      return std::max(1L, (static_cast<long>(c.targets()) + per_block - 1) / per_block);
    };
    if (p.per_thread == 0) {
      // the most targets per thread (AllPairs::default_targets_per_thread) that still fill the device, split or not
      p.per_thread = 1;
      for (int k = AllPairs::default_targets_per_thread; k > 1; k /= 2)
        if (groups_of(k) * most >= per_sm * c.props.multiprocessors) {
          p.per_thread = k;
          break;
        }
    }
    const long groups = groups_of(p.per_thread);
    if constexpr (B::is_gpu_like && FunctorTraits<F, R, D>::addable) {
      // registers, where they allow less than 1,024 threads a block
      const int reg_cap =
          p.per_thread == 1   ? B::max_threads_for(AllPairsInteract<F, R, D, false, 1>{c.views, f, nullptr})
          : p.per_thread == 4 ? B::max_threads_for(AllPairsInteract<F, R, D, false, 4>{c.views, f, nullptr})
                              : B::max_threads_for(AllPairsInteract<F, R, D, false, 2>{c.views, f, nullptr});
      if (reg_cap < 1024) per_sm = std::min<long>(per_sm, reg_cap / static_cast<long>(threads));
      const long slots = std::max(1L, per_sm) * std::max(1, c.props.multiprocessors);
      if (can_split)
        p.splits = t.source_splits > 0 ? static_cast<Index>(std::min<long>(t.source_splits, most))
                                       : choose_splits(groups, slots, most);
    }
    if (p.splits > 1) {
      // whole tiles per split; then drop splits left empty by the rounding
      const long per_split = (sources + p.splits - 1) / p.splits;
      p.chunk = static_cast<Index>((per_split + threads - 1) / threads * threads);
      p.splits = static_cast<Index>((sources + p.chunk - 1) / p.chunk);
    }
    p.shape = {static_cast<unsigned>(groups * p.splits), threads, bytes};
    return p;
  }
  template <class B, class R, int D, class F>
  static void run(const Call<B, R, D>& c, const F& f, typename FunctorTraits<F, R, D>::Accum* out, const Plan& p) {
    if constexpr (B::is_gpu_like) {
      using Accum = typename FunctorTraits<F, R, D>::Accum;
      if (p.splits > 1) B::fill_bytes(out, 0, static_cast<std::size_t>(c.targets()) * sizeof(Accum), c.stream);
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
      B::launch(p.shape, AllPairsInteract<F, R, D, Periodic, 1>{c.views, f, out, p.splits, p.chunk}, c.stream);
    else if (p.per_thread == 4)
      B::launch(p.shape, AllPairsInteract<F, R, D, Periodic, 4>{c.views, f, out, p.splits, p.chunk}, c.stream);
    else
      B::launch(p.shape, AllPairsInteract<F, R, D, Periodic, 2>{c.views, f, out, p.splits, p.chunk}, c.stream);
  }
};

}  // namespace cellint::detail
