#pragma once
/// @file
/// X-pencil-reg (paper section 5.3, Figure 5): a block owns a sub-box of Sx x Sy [x Sz] target cells whose particles
/// sit in registers (two per thread); the X-pencils covering the sub-box and its ghost layer, (Sy+2) [x (Sz+2)] rows of
/// Sx+2 cells, are streamed through shared memory one after another. When a staged pencil is a row of the sub-box, its
/// target particles are written into shared memory from the registers of the threads that hold them instead of being
/// read again from global memory (the paper's point); only the two ghost cells at its ends come from global memory.
/// Threads whose targets are not in a row adjacent to the staged one skip the computation but still reach the barriers.
///
/// Launch shape (each part overridable through Tuning):
///  - sub-box (Tuning::subbox, components left at 0 chosen by the rule): one row of cells (Sy = Sz = 1) unless asked
///    for more. A sub-box of Sy x Sz rows streams (Sy+2)(Sz+2) pencils of which each target uses 9 (3D): its threads
///    idle in the others while holding registers and warp slots, and with the data in L2 that costs more than the
///    global loads the register copies save: on an H100 (paper grids, float LJ, one target a thread) 2-row sub-boxes
///    measured 20% to 130% slower than one row. Sx as X-pencil's L: the longest whose expected targets (mean + 3
///    standard deviations) fit the registers of the preferred block and whose (Sx+2) x M_C staged particles fit the
///    shared-memory budget, shortened while there are fewer than 4 sub-boxes per multiprocessor, evened out along the
///    row.
///  - threads (Tuning::threads): half the expected targets of a sub-box (two per thread) rounded up to the warp size,
///    at most 1024 and the kernel's register limit; a sub-box with more targets runs in several passes. Where the
///    registers allow fewer than 1024 threads, the preferred block is at most half of that limit (two blocks per
///    multiprocessor).
///  - blocks (Tuning::blocks): one per sub-box (a grid-stride loop covers fewer blocks).
///  - shared memory (Tuning::shared_bytes is the budget): as for X-pencil (two staging buffers when they fit 48 KiB,
///    the opt-in limit only when one pencil of 3 cells needs it), plus the target offsets of the Sy x Sz rows.
/// supports() says no only when one pencil of Sx+2 cells (Sx = 1 by default) of M_C particles cannot fit the budget, or
/// for a negative sub-box or a z extent in 2D.
///
/// X-pencil-reg writes its targets from registers into the staged pencils, so it runs one set (targets == sources).
/// Auto times it at the rule's shape.

#include <vector>

#include "cellint/strategies/strategy.hpp"

namespace cellint {

/// X-pencil-reg strategy tag (paper 5.3).
struct XPencilReg : detail::StrategyTag<StrategyKind::XPencilReg, true> {
  static constexpr const char* name = "x-pencil-reg";  ///< this tag's name
  /// Target particles each thread of X-pencil-reg keeps in registers (the kernel takes any number). Two cost no
  /// registers over one (92 against 91 a thread, float LJ, sm_90) and, with one-row sub-boxes, measured as fast or up
  /// to 10% faster (paper grids; 2 on an H200, 1 on an H100, whose Par-Part-NoLoop times agree within 1%).
  static constexpr int targets_per_thread = 2;
  /// Auto's shapes: the rule's.
  static std::vector<Tuning> candidates(const Tuning& user) { return {user}; }
};

}  // namespace cellint

#include "cellint/strategies/detail/x_pencil_reg/kernel.hpp"
