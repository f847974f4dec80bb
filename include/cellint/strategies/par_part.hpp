#pragma once
/// @file
/// Par-Part-NoLoop and Par-Part-Loop (paper sections 4.1 and 4.2): one thread per target particle, sources read from
/// global memory in the 3^Dim neighbour cells. NoLoop launches one thread per particle; Loop uses a grid-stride loop
/// over targets with any number of blocks. Par-Part-NoLoop stays the in-library GPU reference. Both take two different
/// sets.
///
/// Policy: 128 threads per block (paper 7.1; Tuning::threads). Auto times NoLoop at 128, 64 and 256 threads (the block
/// size moves occupancy and the tail of the launch, which depend on the grid) and Loop at the rule's shape. Loop's
/// blocks (Tuning::blocks): enough to fill every multiprocessor.

#include <vector>

#include "cellint/strategies/strategy.hpp"

namespace cellint {

/// Par-Part-NoLoop strategy tag (paper 4.1).
struct ParPartNoLoop : detail::StrategyTag<StrategyKind::ParPartNoLoop, true> {
  static constexpr const char* name = "par-part-noloop";  ///< this tag's name
  static constexpr unsigned default_threads = 128;        ///< threads per block (paper 7.1)
  /// Auto's shapes: the rule's (128 threads), then 64 and 256.
  static std::vector<Tuning> candidates(const Tuning& user) {
    return detail::vary(user, &Tuning::threads, {64u, 256u});
  }
};

/// Par-Part-Loop strategy tag (paper 4.2).
struct ParPartLoop : detail::StrategyTag<StrategyKind::ParPartLoop, true> {
  static constexpr const char* name = "par-part-loop";  ///< this tag's name
  static constexpr unsigned default_threads = 128;      ///< threads per block (paper 7.1)
  /// Auto's shapes: the rule's.
  static std::vector<Tuning> candidates(const Tuning& user) { return {user}; }
};

}  // namespace cellint

#include "cellint/strategies/detail/par_part/kernel.hpp"
