#pragma once
/// @file
/// CPU strategies: CellLoop (each target scans its 3^Dim neighbour cells; cells shared among the Host backend's
/// threads) and CellLoopHalf (each pair visited once through a half-shell stencil and Newton's third law; cells
/// processed in colour classes so that threads never write the same particle). Both run through detail::host_loop
/// (backend/host.hpp): a few hundred particles or fewer run on the calling thread.
///
/// CellLoop takes two different sets; CellLoopHalf writes both sides of a pair, so it runs one set. Auto times
/// CellLoopHalf before CellLoop (it is usually faster where the functor has a symmetric form).

#include <vector>

#include "cellint/strategies/strategy.hpp"

namespace cellint {

/// CellLoop strategy tag (CPU cell loop).
struct CellLoop : detail::StrategyTag<StrategyKind::CellLoop, false> {
  static constexpr const char* name = "cell-loop";  ///< this tag's name
  /// Particles each thread must get before the loop is shared among threads: below, the pass runs on the calling thread
  /// (handing cells to other threads would cost more than the pairs of so few particles).
  static constexpr long long particles_per_thread = 256;
  /// Auto's shapes: one (the CPU loop has no knobs).
  static std::vector<Tuning> candidates(const Tuning& user) { return {user}; }
};

/// CellLoopHalf strategy tag (CPU half shell, Newton's third law).
struct CellLoopHalf : detail::StrategyTag<StrategyKind::CellLoopHalf, false> {
  static constexpr const char* name = "cell-loop-half";  ///< this tag's name
  /// Auto's shapes: one.
  static std::vector<Tuning> candidates(const Tuning& user) { return {user}; }
};

}  // namespace cellint

#include "cellint/strategies/detail/cell_loop/loop.hpp"
