#pragma once
/// @file
/// X-pencil (paper section 5.2, Algorithm 5, Figure 4): a block owns a pencil of L target cells along X plus one ghost
/// cell at each end. The pencil is staged in shared memory, every thread keeps one target particle in registers,
/// computes against it, then the 3^(Dim-1) - 1 neighbour pencils (rows Y/Z +-1, same X range) are staged one after
/// another.
///
/// Launch shape (paper 7.1, adapted from measurements; each part overridable through Tuning):
///  - L (Tuning::pencil_length): the longest pencil, at most the cells of a row, whose expected targets (mean + 3
///    standard deviations of a Poisson count at the grid's mean particles per cell) fit a block of 512 threads and
///    whose M_C x (L+2) staged particles fit the shared-memory budget; shortened while there are fewer than 4 pencils
///    per multiprocessor (the paper: fewer than 1), then evened out so that the pencils of a row differ by at most one
///    cell.
///  - threads (Tuning::threads): the expected targets of one pencil rounded up to the warp size, at most 1024 and the
///    kernel's register limit (where that limit is below 1024 the preferred block is at most half of it). Threads map
///    to target particles only (ghost cells are copied by a strided loop); a pencil with more targets than threads (a
///    cluster) is processed in several passes, so no particle count is ever too large for a block. The paper's M_C x
///    (L+2) threads measured up to 1.6x slower: most of those threads idle.
///  - blocks (Tuning::blocks): one per pencil (a grid-stride loop covers fewer blocks).
///  - shared memory (Tuning::shared_bytes is the budget): two staging buffers of M_C x (L+2) particles when they fit
///    the budget (one barrier per pencil), else one (two barriers per pencil); the budget is 48 KiB
///    (DeviceProperties::shared_per_block) unless even one pencil of 3 cells needs more, then the opt-in limit.
/// supports() says no only when a pencil of L+2 cells (L = 1 by default) of M_C particles cannot fit the budget:
/// Tuning::shared_bytes, else the device's opt-in limit.
///
/// X-pencil takes two different sets: the targets come from their own view, the staged pencils from the sources. Auto
/// times the rule's pencil length, then L = 1 and 2 (shorter pencils: smaller blocks, fewer threads waiting at each
/// row's barrier).

#include <vector>

#include "cellint/strategies/strategy.hpp"

namespace cellint {

/// X-pencil strategy tag (paper 5.2).
struct XPencil : detail::StrategyTag<StrategyKind::XPencil, true> {
  static constexpr const char* name = "x-pencil";  ///< this tag's name
  /// Auto's shapes: the rule's, then pencil lengths 1 and 2.
  static std::vector<Tuning> candidates(const Tuning& user) {
    return detail::vary(user, &Tuning::pencil_length, {1, 2});
  }
};

}  // namespace cellint

#include "cellint/strategies/detail/x_pencil/kernel.hpp"
