#pragma once
/// @file
/// All-pairs (tiled): no cells. Each thread holds four targets in registers (Tuning::targets_per_thread: 1, 2 or 4), and
/// a block streams every source through shared memory in tiles of one source per thread (the classic N-body tiling:
/// each source is read from global memory once per block, and all the block's targets use it from shared memory; one
/// shared-memory load serves a thread's targets). Every (target, source) pair is formed: the functor is called for the
/// pairs within the cutoff (minimum image on periodic axes), or for every pair when it sets `cutoff_test = false`.
/// That is what long-range kernels (gravity, Coulomb without a cutoff) and small systems need; for a short cutoff over
/// many cells the cell strategies do far less work.
///
/// With `cutoff_test = false` the pairs differ from the cell strategies' ones: those call the functor for every pair
/// of neighbouring cells, this strategy for every pair of the sets. The two agree when the neighbour cells of every
/// cell are the whole grid (at most 2 cells along an open axis, 3 along a periodic one).
///
/// Policy: 256 threads per block (Tuning::threads), each thread with 4 targets (Tuning::targets_per_thread), or 2 or
/// 1 where 4 would leave the device part idle. Where the groups of targets alone would not fill whole waves of the
/// device (few targets, or a last wave mostly empty), each group's sources are split into runs, one block each, whose
/// sums are added with atomics (Tuning::source_splits; none with Tuning::reproducible or an Accum that is not an array
/// of one scalar). On an H100, 2D gravity: 1.5x at 10^5 particles, 1.1x at 10^6 (with the four targets). Auto times it
/// only where it cannot waste time: where every source is a neighbour-cell candidate of every target (the rule
/// above), or for at most 2^24 pairs. It takes two different sets.

#include <vector>

#include "cellint/strategies/strategy.hpp"

namespace cellint {

/// All-pairs tiled strategy tag.
struct AllPairs : detail::StrategyTag<StrategyKind::AllPairs, true> {
  static constexpr const char* name = "all-pairs";      ///< this tag's name
  static constexpr unsigned default_threads = 256;      ///< threads per block (sources per tile)
  static constexpr int default_targets_per_thread = 4;  ///< targets each thread holds (Tuning::targets_per_thread)
  /// Pairs up to which Auto times this strategy whatever the cells.
  static constexpr double auto_pairs = 16777216.0;
  /// Auto's shapes: the rule's, then 128 threads.
  static std::vector<Tuning> candidates(const Tuning& user) { return detail::vary(user, &Tuning::threads, {128u}); }
  /// Whether Auto times it for these targets and sources (see the file comment).
  template <class Real, int Dim>
  static bool auto_eligible(const GridView<Real, Dim>& targets, const GridView<Real, Dim>& sources) {
    bool whole = true;
    for (int d = 0; d < Dim; ++d) whole = whole && sources.geo.cells[d] <= (sources.geo.box.periodic[d] ? 3 : 2);
    return whole || static_cast<double>(targets.n) * static_cast<double>(sources.n) <= auto_pairs;
  }
};

}  // namespace cellint

#include "cellint/strategies/detail/all_pairs/kernel.hpp"
