#pragma once
/// @file
/// BruteForce: every pair, minimum-image convention, on the CPU. The O(N^2) oracle that every other strategy is tested
/// against (use it in double precision). It takes two different sets. Auto never times it. A functor with
/// `cutoff_test = false` is called for every pair of the sets, as by AllPairs on GPUs (the CPU path of long-range
/// kernels; the cell strategies call such a functor for the pairs of neighbouring cells instead).

#include <vector>

#include "cellint/strategies/strategy.hpp"

namespace cellint {

/// BruteForce strategy tag (CPU O(N^2)).
struct BruteForce : detail::StrategyTag<StrategyKind::BruteForce, false, false> {
  static constexpr const char* name = "brute-force";  ///< this tag's name
  /// Auto's shapes: none are timed (auto_candidate is false); one for completeness.
  static std::vector<Tuning> candidates(const Tuning& user) { return {user}; }
};

}  // namespace cellint

#include "cellint/strategies/detail/brute_force/loop.hpp"
