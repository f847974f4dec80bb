#pragma once
/// @file
/// The front door: interact<Strategy>(grid, functor, out) for one particle set, interact<Strategy>(targets, sources,
/// functor, out) for two, and interact_with(kind, ...) for a strategy chosen at run time. Per-call statistics
/// (Tuning::statistics) and the reproducible mode (Tuning::reproducible) are handled here, around the strategy.

#include <algorithm>
#include <cstdio>
#include <string>
#include <vector>

#include "cellint/potentials/counting.hpp"
#include "cellint/strategies/detail/neighbors.hpp"
#include "cellint/tune/autotuner.hpp"

namespace cellint {

namespace detail {
/// Grids built with GridOptions::stable, which the reproducible mode needs.
/// @throws InvalidArgument naming the grid that is not
template <class B, class R, int D>
void check_reproducible(const CellGrid<B, R, D>& targets, const CellGrid<B, R, D>& sources) {
  for (const CellGrid<B, R, D>* g : {&targets, &sources})
    CELLINT_EXPECTS(g->options().stable, "cellint::interact: Tuning::reproducible needs the ",
                    &targets == &sources ? "grid" : g == &targets ? "target grid" : "source grid",
                    " built with GridOptions::stable = true (an unstable build orders each cell's particles as the "
                    "binning's atomics happen to run, and the sums follow that order)");
}

/// Copies cell offsets (backend memory) to the host vector `h` (sized).
template <class B>
void download_offsets(const Index* cell_start, std::vector<Index>& h, typename B::Stream s) {
  B::copy(h.data(), cell_start, h.size() * sizeof(Index), CopyKind::DeviceToHost, s);
  B::synchronize(s);
}

/// Candidate pairs of strategy `k` for call `c` (CallStats::pairs_examined), from both grids' cell offsets.
template <class B, class R, int D>
std::uint64_t examined_pairs(StrategyKind k, const Call<B, R, D>& c) {
  const GridView<R, D>& tv = c.views.targets;
  const GridView<R, D>& sv = c.views.sources;
  const std::uint64_t nt = static_cast<std::uint64_t>(tv.n), ns = static_cast<std::uint64_t>(sv.n);
  const std::uint64_t self = c.views.same ? nt : 0;
  if (k == StrategyKind::AllPairs || k == StrategyKind::BruteForce) return nt * ns - self;
  const Index cells = tv.geo.cell_count();
  std::vector<Index> ts(static_cast<std::size_t>(cells) + 1), other;
  download_offsets<B>(tv.cell_start, ts, c.stream);
  if (!c.views.same) {
    other.resize(ts.size());
    download_offsets<B>(sv.cell_start, other, c.stream);
  }
  const std::vector<Index>& ss = c.views.same ? ts : other;
  std::uint64_t sum = 0;
  for (Index cell = 0; cell < cells; ++cell) {
    const std::uint64_t n = static_cast<std::uint64_t>(ts[cell + 1] - ts[cell]);
    if (!n) continue;
    Index coords[D];
    tv.geo.coords(cell, coords);
    std::uint64_t around = 0;
    for_each_neighbor_range<false>(tv.geo, coords, [&](Index nb, Index, const Vec<R, D>&) {
      around += static_cast<std::uint64_t>(ss[nb + 1] - ss[nb]);
    });
    sum += n * around;
  }
  sum -= self;
  return k == StrategyKind::CellLoopHalf ? sum / 2 : sum;
}

/// Fills rep.stats for call `c`, which strategy rep.strategy ran in `ms` milliseconds: the examined pairs from the cell
/// offsets, the pairs within the cutoff by a counting pass (par-part-loop on GPU-like backends, cell-loop on the CPU).
template <class B, class R, int D, class F>
void fill_stats(Report& rep, const Call<B, R, D>& c, double ms) {
  using T = FunctorTraits<F, R, D>;
  CallStats& s = rep.stats;
  s.collected = true;
  s.ms = ms;
  s.targets = static_cast<std::uint64_t>(c.views.targets.n);
  s.sources = static_cast<std::uint64_t>(c.views.sources.n);
  s.pairs_examined = examined_pairs(rep.strategy, c);
  const std::uint64_t target = D * sizeof(R) + (T::position_only ? 0 : sizeof(typename T::Payload));
  const std::uint64_t source = D * sizeof(R) + (T::position_only ? 0 : sizeof(typename T::SourcePayload));
  const std::uint64_t offsets = (static_cast<std::uint64_t>(c.geometry().cell_count()) + 1) * sizeof(Index);
  s.min_bytes = s.targets * (target + sizeof(typename T::Accum)) + offsets;
  if (!c.views.same) s.min_bytes += s.sources * source + offsets;
  if (!s.targets) return;
  Buffer<B, unsigned> counts(static_cast<std::size_t>(s.targets));
  // one strategy named at compile time: the counting functor adds one kernel, not one per strategy
  using Counter = std::conditional_t<B::is_gpu_like, ParPartLoop, CellLoop>;
  run_strategy<Counter>(c, NeighborCount<R, D>{}, counts.data(), Tuning{});
  set_pairs_within(s, counts.to_host(c.stream), rep.strategy == StrategyKind::CellLoopHalf);
}

/// The front door of every call: checks, then strategy `k` (Auto: the autotuner) for the targets of `targets` against
/// the sources of `sources` (one set when they are the same object), with the statistics when asked for.
template <class B, class R, int D, class F>
Report front(StrategyKind k, const CellGrid<B, R, D>& targets, const CellGrid<B, R, D>& sources, const F& f,
             typename FunctorTraits<F, R, D>::Accum* out, const Tuning& t) {
  if (&targets == &sources)
    check_call(targets, f, "interact");
  else
    check_sets(targets, sources, f);
  if (t.reproducible) check_reproducible(targets, sources);
  if constexpr (B::device_memory) {
    // The call runs on the targets' stream: work the caller queued on another sources' stream is waited for first.
    if (&targets != &sources && targets.stream() != sources.stream()) B::synchronize(sources.stream());
  }
  auto run = [&] {  // (Auto makes its own call object from its cached decision)
    return k == StrategyKind::Auto ? Autotuner::instance().run(targets, sources, f, out, t)
                                   : run_kind(k, make_call(targets, sources, B::properties()), f, out, t);
  };
  if (!t.statistics) return run();
  const auto c = make_call(targets, sources, B::properties());
  Report rep;  // (events are created only here: nothing of this runs without statistics)
  double ms = call_ms<B>(c.stream, [&] { rep = run(); });
  if (rep.tuning_ms > 0) {  // Auto tuned in this call: the call alone, once more (now from Auto's cache)
    const float tuning = rep.tuning_ms;
    ms = call_ms<B>(c.stream, [&] { rep = run(); });
    rep.tuning_ms = tuning;
  }
  fill_stats<B, R, D, F>(rep, c, ms);
  return rep;
}
}  // namespace detail

/// One line for a log: the strategy that ran (or `what`, e.g. "full list") and, with statistics, "1.2e+07 pairs
/// examined, 4.4e+06 within the cutoff (36.6 %), 0.123 ms, 456 GB/s of its minimum bytes".
inline std::string describe(const Report& r, const char* what = nullptr) {
  char b[320];
  const int n = std::min(std::snprintf(b, sizeof(b), "%s", what ? what : to_string(r.strategy)),
                         static_cast<int>(sizeof(b)) - 1);
  const CallStats& s = r.stats;
  if (s.collected)
    std::snprintf(b + n, sizeof(b) - static_cast<std::size_t>(n),
                  ": %.3g pairs examined%s, %.3g within the cutoff (%.1f %%), %.3g ms, %.3g GB/s of its minimum bytes",
                  static_cast<double>(s.pairs_examined), s.each_pair_once ? " (each once)" : "",
                  static_cast<double>(s.pairs_within), 100 * s.hit_rate(), s.ms, s.gbytes_per_s());
  return b;
}

/// Computes, for every particle t of `grid`, the functor's accumulation over all source particles s != t within the
/// cutoff (periodic images included) and stores it at out[t] (sorted slot order, backend memory of at least grid.size()
/// elements). The pointer form does not know the size of `out`: prefer the Buffer or std::vector overloads, which check
/// it; the pointer form is for memory the caller owns and sized.
///
/// @tparam Strategy a strategy tag (ParPartNoLoop, XPencil, ... or Auto, the default: the fastest eligible strategy,
///         timed once per functor / grid shape / device and cached)
/// @param grid the binned particles (targets and sources)
/// @param f the pair functor
/// @param out one result per particle, sorted slot order
/// @param t launch knobs, and two call options: `statistics` (Report::stats) and `reproducible`
/// @throws Unsupported if an explicitly named strategy cannot run here (the reason says why)
/// @throws InvalidArgument before grid.build(), or for an Attribute handle in `f` that is unset, of another grid, or
///         dropped by a build(); with Tuning::reproducible, for a grid built without GridOptions::stable
template <class Strategy = Auto, class B, class R, int D, class F>
Report interact(const CellGrid<B, R, D>& grid, const F& f, typename FunctorTraits<F, R, D>::Accum* out,
                const Tuning& t = {}) {
  return detail::front(Strategy::kind, grid, grid, f, out, t);
}

/// interact() into a backend Buffer of at least grid.size() elements (checked).
template <class Strategy = Auto, class B, class R, int D, class F>
Report interact(const CellGrid<B, R, D>& grid, const F& f, Buffer<B, typename FunctorTraits<F, R, D>::Accum>& out,
                const Tuning& t = {}) {
  detail::expect_room(out.size(), grid.size(), "interact", "the output buffer");
  return interact<Strategy>(grid, f, out.data(), t);
}

/// interact() into a host vector of at least grid.size() elements (checked; backends whose memory is host memory: Host,
/// Emulated).
template <class Strategy = Auto, class B, class R, int D, class F>
Report interact(const CellGrid<B, R, D>& grid, const F& f, std::vector<typename FunctorTraits<F, R, D>::Accum>& out,
                const Tuning& t = {}) {
  static_assert(!B::device_memory, "cellint::interact(std::vector): this backend computes in device memory; "
                "pass a cellint::Buffer (or a device pointer)");
  detail::expect_room(out.size(), grid.size(), "interact", "the output vector");
  return interact<Strategy>(grid, f, out.data(), t);
}

/// Two particle sets: for every particle t of `targets`, the functor's accumulation over the particles of `sources`
/// within the cutoff (periodic images included; nothing is excluded, not even a source at a target's position), into
/// out[t] (the target grid's sorted slot order; targets.to_user_order() brings it back). Both grids must share one cell
/// geometry: the same box, cutoff and cell size (an InvalidArgument says so otherwise); their particle counts,
/// attributes and payloads differ as they like: the functor reads targets with load() and sources with load_source()
/// when it has one (see core/pair_functor.hpp), and its Attribute handles may belong to either grid. Auto chooses per
/// (targets, sources) shape among the strategies that run two sets. The call runs on the targets' stream (work queued
/// on another sources' stream is waited for first).
/// @throws Unsupported if an explicitly named strategy cannot run two sets (the reason names those that can)
/// @throws InvalidArgument for grids over another geometry, a grid not built, an Attribute handle of neither grid (or,
///         without load_source(), one the other grid does not mirror), and with Tuning::reproducible a grid built
///         without GridOptions::stable
template <class Strategy = Auto, class B, class R, int D, class F>
Report interact(const CellGrid<B, R, D>& targets, const CellGrid<B, R, D>& sources, const F& f,
                typename FunctorTraits<F, R, D>::Accum* out, const Tuning& t = {}) {
  return detail::front(Strategy::kind, targets, sources, f, out, t);
}

/// Two sets into a backend Buffer of at least targets.size() elements (checked).
template <class Strategy = Auto, class B, class R, int D, class F>
Report interact(const CellGrid<B, R, D>& targets, const CellGrid<B, R, D>& sources, const F& f,
                Buffer<B, typename FunctorTraits<F, R, D>::Accum>& out, const Tuning& t = {}) {
  detail::expect_room(out.size(), targets.size(), "interact", "the output buffer");
  return interact<Strategy>(targets, sources, f, out.data(), t);
}

/// Two sets into a host vector of at least targets.size() elements (checked; Host and Emulated).
template <class Strategy = Auto, class B, class R, int D, class F>
Report interact(const CellGrid<B, R, D>& targets, const CellGrid<B, R, D>& sources, const F& f,
                std::vector<typename FunctorTraits<F, R, D>::Accum>& out, const Tuning& t = {}) {
  static_assert(!B::device_memory, "cellint::interact(std::vector): this backend computes in device memory; "
                "pass a cellint::Buffer (or a device pointer)");
  detail::expect_room(out.size(), targets.size(), "interact", "the output vector");
  return interact<Strategy>(targets, sources, f, out.data(), t);
}

/// Runs strategy `k` chosen at run time (Auto included): interact() for one set. Asynchronous on GPU backends (unless
/// Tuning::statistics): synchronise the grid's stream before reading `out` on the host.
/// @throws Unsupported with the strategy's reason when it cannot run on this grid/device
template <class B, class R, int D, class F>
Report interact_with(StrategyKind k, const CellGrid<B, R, D>& grid, const F& f,
                     typename FunctorTraits<F, R, D>::Accum* out, const Tuning& t = {}) {
  return detail::front(k, grid, grid, f, out, t);
}

/// Runs strategy `k` chosen at run time (Auto included) for two sets (see interact(targets, sources, f, out)).
/// @throws Unsupported with the strategy's reason when it cannot run two sets here
template <class B, class R, int D, class F>
Report interact_with(StrategyKind k, const CellGrid<B, R, D>& targets, const CellGrid<B, R, D>& sources, const F& f,
                     typename FunctorTraits<F, R, D>::Accum* out, const Tuning& t = {}) {
  return detail::front(k, targets, sources, f, out, t);
}

}  // namespace cellint
