#pragma once
/// @file
/// X-pencil-tile: a variant of X-pencil (paper section 5.2) whose threads work in warp-wide tiles of targets that sweep
/// the same sources in lock-step.
///
/// A block owns a pencil of L target cells along X. It stages, once, the pencil of L+2 cells of every one of the
/// 3^(Dim-1) rows around it (its own row and the rows at Y/Z +-1, image shifts added at copy time, as X-pencil does)
/// into shared memory: all the sources any of its targets needs. One barrier. Then each warp takes tiles of `warp size`
/// consecutive targets of the own row (tile w, w + warps, ...): every lane holds one target in registers, and the warp
/// loops over the union of its lanes' source windows, row after row. When the tile lies in one cell (most tiles, with
/// tens of particles per cell) that union is exactly each lane's window of 3 cells per row, every lane reads the same
/// source in the same iteration (a shared-memory broadcast), and the trip count is the same for the whole warp: no
/// divergence, no bank conflicts, no per-pair index test except the target itself in the own row. A tile that straddles
/// cells loops over the union of its cells' windows with a per-lane window test.
///
/// Where X-pencil gives each thread its own window (lanes of a warp in different cells read different addresses and run
/// different trip counts), this variant trades idle lanes at cell boundaries for lock-step execution. Measured on an
/// H100 (docs/strategies.md): it wins for functors with a cutoff test on small grids at 10-100 particles per cell, and
/// loses on large grids, where nine staged rows take so much shared memory per block that few warps fit a
/// multiprocessor (X-pencil's warps of one cell already run in lock-step), and at 1 particle per cell, where most tiles
/// straddle many cells.
///
/// Launch shape (each part overridable through Tuning):
///  - L (Tuning::pencil_length): the longest pencil whose staged rows, 3^(Dim-1) x (L+2) x M_C records, fit the budget
///    of three blocks per multiprocessor (so that the staging of one block overlaps the computation of the others), and
///    whose expected targets (Poisson mean + 3 standard deviations) fit 1024 threads; shortened while there are fewer
///    than 4 pencils per multiprocessor, evened out along the row. When even L = 1 exceeds that budget the opt-in limit
///    is used.
///  - threads (Tuning::threads, rounded up to the warp size): one warp per expected tile of a pencil (expected targets
///    / warp size, rounded up); a pencil with more tiles loops.
///  - blocks (Tuning::blocks): one per pencil (grid-stride loop when fewer).
///  - shared memory (Tuning::shared_bytes is the budget): the layout above.
/// supports() says no on the Host backend and when one pencil of 3 cells does not fit the budget (Tuning::shared_bytes,
/// else the opt-in limit), with the numbers.
///
/// X-pencil-tile reads its targets from the staged own row, so it runs one set (targets == sources). Auto times the
/// rule's pencil length, then L = 2 and 4 (the rule aims at three blocks per multiprocessor; longer pencils stage fewer
/// ghost cells per target).

#include <vector>

#include "cellint/strategies/strategy.hpp"

namespace cellint {

/// X-pencil-tile strategy tag (X-pencil, warp tiles; beyond the paper).
struct XPencilTile : detail::StrategyTag<StrategyKind::XPencilTile, true> {
  static constexpr const char* name = "x-pencil-tile";  ///< this tag's name
  /// Blocks per multiprocessor the default shared-memory budget aims at.
  static constexpr int blocks_per_sm = 3;
  /// Auto's shapes: the rule's, then pencil lengths 2 and 4.
  static std::vector<Tuning> candidates(const Tuning& user) {
    return detail::vary(user, &Tuning::pencil_length, {2, 4});
  }
};

}  // namespace cellint

#include "cellint/strategies/detail/x_pencil_tile/kernel.hpp"
