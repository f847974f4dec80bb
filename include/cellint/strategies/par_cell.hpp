#pragma once
/// @file
/// Par-Cell and Par-Cell-SM (paper sections 4.3 and 4.4, Algorithms 2 and 3): one thread block per target cell (a
/// grid-stride loop over cells when there are fewer blocks than cells), one thread per target particle of the cell
/// (looping when the cell holds more particles than the block has threads), the target kept in registers. Par-Cell
/// reads the sources of the 3^Dim neighbour cells from global memory; Par-Cell-SM stages each source cell through a
/// shared-memory buffer of `Tuning::sm_particles` particles (512 by default), one chunk at a time. Both take two
/// different sets.
///
/// Policy (paper 7.1): 128 threads per block (`Tuning::threads`), as many blocks as cells (`Tuning::blocks` overrides;
/// the count is capped at the device's grid limit, the kernels stride over the remaining cells). Neither strategy
/// depends on M_C: a crowded cell only costs more rounds of targets and more chunks of sources. Auto times 128, 64 and
/// 256 threads.

#include <vector>

#include "cellint/strategies/strategy.hpp"

namespace cellint {

/// Par-Cell strategy tag (paper 4.3).
struct ParCell : detail::StrategyTag<StrategyKind::ParCell, true> {
  static constexpr const char* name = "par-cell";   ///< this tag's name
  static constexpr unsigned default_threads = 128;  ///< threads per block (paper 7.1)
  /// Auto's shapes: the rule's (128 threads), then 64 and 256.
  static std::vector<Tuning> candidates(const Tuning& user) {
    return detail::vary(user, &Tuning::threads, {64u, 256u});
  }
};

/// Par-Cell-SM strategy tag (paper 4.4).
struct ParCellSM : detail::StrategyTag<StrategyKind::ParCellSM, true> {
  static constexpr const char* name = "par-cell-sm";   ///< this tag's name
  static constexpr unsigned default_threads = 128;     ///< threads per block (paper 7.1)
  static constexpr unsigned default_sm_particles = 512;  ///< staging buffer in particles (paper 7.1)
  /// Auto's shapes: the rule's (128 threads), then 64 and 256.
  static std::vector<Tuning> candidates(const Tuning& user) {
    return detail::vary(user, &Tuning::threads, {64u, 256u});
  }
};

}  // namespace cellint

#include "cellint/strategies/detail/par_cell/kernel.hpp"
