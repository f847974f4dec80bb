#pragma once
/// @file
/// All-in-SM (paper section 5.1, Algorithm 4, Figures 2 and 3; launch shape from section 7.1): every block owns a
/// sub-box of target cells plus its one-cell ghost layer, and holds all of it in shared memory. The block copies the
/// particles of the box (positions, with periodic image shifts already applied, and the functor's payload) into shared
/// memory once, then each thread takes target particles and loops over their 3^Dim neighbour cells in shared memory.
///
/// Sizing (host side, see all_in_sm_plan()):
/// * Budget: Tuning::shared_bytes, else the default per-block limit (48 KiB), unless the smallest box that can run
///   (3^Dim cells, or the extents fixed by Tuning::subbox) does not fit there: then the smaller of half the
///   multiprocessor's shared memory (two resident blocks) and the opt-in limit that holds it.
/// * Box: the largest number of cells the budget holds at M_C particles a cell, shaped by the paper's power-of-3 rule
///   (all_in_sm_box()); the target sub-box is the box minus its ghost layer, clipped to the grid. A cell costs M_C x
///   (Dim x sizeof(Real) + sizeof(Payload)) bytes plus a 4-byte local offset, and each X-row a small record
///   (AllInSMLayout has the exact layout); the rule is re-run with fewer cells until the exact layout fits.
/// * Parallelism: while there are fewer blocks than multiprocessors, the largest target extent shrinks by one cell (z
///   before y before x on ties), as in the paper's B = 2,2,2 -> 2,1,1.
/// * Threads: M_C x box cells (the most particles a box can hold), rounded up to a whole warp, at most 512;
///   Tuning::threads overrides. Threads loop over the box's particles and targets.
/// * Tuning::subbox fixes the target extent of the axes where it is non-zero (clipped to the grid; neither shrunk for
///   parallelism nor for the budget); the other axes follow the rules.
///
/// The strategy cannot run when a box of 3^Dim cells of M_C particles does not fit the budget (supports() says so with
/// the numbers): X-pencil or Par-Part-NoLoop need far less shared memory.
///
/// All-in-SM stages targets and sources as one box, so it runs one set (targets == sources). Auto times it at the
/// rule's shape.

#include <vector>

#include "cellint/strategies/strategy.hpp"

namespace cellint {

/// All-in-SM strategy tag (paper 5.1).
struct AllInSM : detail::StrategyTag<StrategyKind::AllInSM, true> {
  static constexpr const char* name = "all-in-sm";  ///< this tag's name
  /// Auto's shapes: the rule's.
  static std::vector<Tuning> candidates(const Tuning& user) { return {user}; }
};

}  // namespace cellint

#include "cellint/strategies/detail/all_in_sm/kernel.hpp"
