#pragma once
/// @file
/// Strategy tags, the run-time StrategyKind, tuning knobs and the supports() answer.

#include <string>

#include "cellint/backend/traits.hpp"

namespace cellint {

/// Every strategy, as a run-time value (mirrors the tag types below).
enum class StrategyKind {
  ParPartNoLoop,  ///< one thread per target particle (paper 4.1); the in-library GPU reference
  ParPartLoop,    ///< the same with a grid-stride loop (paper 4.2)
  ParCell,        ///< one block per cell (paper 4.3)
  ParCellSM,      ///< one block per cell, sources staged in shared memory (paper 4.4)
  AllInSM,        ///< a sub-box of cells plus ghosts in shared memory (paper 5.1)
  XPencil,        ///< a pencil of cells along X in shared memory, targets in registers (paper 5.2)
  XPencilReg,     ///< targets of a sub-box in registers, source pencils streamed (paper 5.3)
  CellLoop,       ///< CPU: loop over cells and their neighbours (serial / OpenMP)
  CellLoopHalf,   ///< CPU: half-shell cell loop using Newton's third law
  BruteForce,     ///< CPU: O(N^2) over all pairs with the minimum image (the oracle)
  XPencilTile,    ///< X-pencil with every neighbour row staged and warp-wide tiles of targets (cellint)
  Auto            ///< time the eligible strategies once, cache and use the fastest
};

// Strategy tag types. Pass one as the template argument of interact(). Each tag carries its
// StrategyKind (`kind`), its name (`name`, what to_string() returns and strategy_from_name()
// reads), whether it runs on GPU-like backends (`gpu_like`; false: a CPU strategy) and whether
// Auto times it (`auto_candidate`). The registry (strategies/registry.hpp) lists them.
/// Par-Part-NoLoop strategy tag (paper 4.1).
struct ParPartNoLoop {
  static constexpr StrategyKind kind = StrategyKind::ParPartNoLoop;  ///< this tag's StrategyKind
  static constexpr const char* name = "par-part-noloop";             ///< this tag's name
  static constexpr bool gpu_like = true;                             ///< runs on GPU-like backends (else: CPU)
  static constexpr bool auto_candidate = true;                       ///< timed by Auto
};
/// Par-Part-Loop strategy tag (paper 4.2).
struct ParPartLoop {
  static constexpr StrategyKind kind = StrategyKind::ParPartLoop;  ///< this tag's StrategyKind
  static constexpr const char* name = "par-part-loop";             ///< this tag's name
  static constexpr bool gpu_like = true;                           ///< runs on GPU-like backends (else: CPU)
  static constexpr bool auto_candidate = true;                     ///< timed by Auto
};
/// Par-Cell strategy tag (paper 4.3).
struct ParCell {
  static constexpr StrategyKind kind = StrategyKind::ParCell;  ///< this tag's StrategyKind
  static constexpr const char* name = "par-cell";              ///< this tag's name
  static constexpr bool gpu_like = true;                       ///< runs on GPU-like backends (else: CPU)
  static constexpr bool auto_candidate = true;                 ///< timed by Auto
};
/// Par-Cell-SM strategy tag (paper 4.4).
struct ParCellSM {
  static constexpr StrategyKind kind = StrategyKind::ParCellSM;  ///< this tag's StrategyKind
  static constexpr const char* name = "par-cell-sm";             ///< this tag's name
  static constexpr bool gpu_like = true;                         ///< runs on GPU-like backends (else: CPU)
  static constexpr bool auto_candidate = true;                   ///< timed by Auto
};
/// All-in-SM strategy tag (paper 5.1).
struct AllInSM {
  static constexpr StrategyKind kind = StrategyKind::AllInSM;  ///< this tag's StrategyKind
  static constexpr const char* name = "all-in-sm";             ///< this tag's name
  static constexpr bool gpu_like = true;                       ///< runs on GPU-like backends (else: CPU)
  static constexpr bool auto_candidate = true;                 ///< timed by Auto
};
/// X-pencil strategy tag (paper 5.2).
struct XPencil {
  static constexpr StrategyKind kind = StrategyKind::XPencil;  ///< this tag's StrategyKind
  static constexpr const char* name = "x-pencil";              ///< this tag's name
  static constexpr bool gpu_like = true;                       ///< runs on GPU-like backends (else: CPU)
  static constexpr bool auto_candidate = true;                 ///< timed by Auto
};
/// X-pencil-reg strategy tag (paper 5.3).
struct XPencilReg {
  static constexpr StrategyKind kind = StrategyKind::XPencilReg;  ///< this tag's StrategyKind
  static constexpr const char* name = "x-pencil-reg";             ///< this tag's name
  static constexpr bool gpu_like = true;                          ///< runs on GPU-like backends (else: CPU)
  static constexpr bool auto_candidate = true;                    ///< timed by Auto
};
/// CellLoop strategy tag (CPU cell loop).
struct CellLoop {
  static constexpr StrategyKind kind = StrategyKind::CellLoop;  ///< this tag's StrategyKind
  static constexpr const char* name = "cell-loop";              ///< this tag's name
  static constexpr bool gpu_like = false;                       ///< runs on GPU-like backends (else: CPU)
  static constexpr bool auto_candidate = true;                  ///< timed by Auto
};
/// CellLoopHalf strategy tag (CPU half shell).
struct CellLoopHalf {
  static constexpr StrategyKind kind = StrategyKind::CellLoopHalf;  ///< this tag's StrategyKind
  static constexpr const char* name = "cell-loop-half";             ///< this tag's name
  static constexpr bool gpu_like = false;                           ///< runs on GPU-like backends (else: CPU)
  static constexpr bool auto_candidate = true;                      ///< timed by Auto
};
/// BruteForce strategy tag (CPU O(N^2)).
struct BruteForce {
  static constexpr StrategyKind kind = StrategyKind::BruteForce;  ///< this tag's StrategyKind
  static constexpr const char* name = "brute-force";              ///< this tag's name
  static constexpr bool gpu_like = false;                         ///< runs on GPU-like backends (else: CPU)
  static constexpr bool auto_candidate = false;                   ///< timed by Auto
};
/// X-pencil-tile strategy tag (X-pencil, warp tiles).
struct XPencilTile {
  static constexpr StrategyKind kind = StrategyKind::XPencilTile;  ///< this tag's StrategyKind
  static constexpr const char* name = "x-pencil-tile";             ///< this tag's name
  static constexpr bool gpu_like = true;                           ///< runs on GPU-like backends (else: CPU)
  static constexpr bool auto_candidate = true;                     ///< timed by Auto
};
/// Auto strategy tag (autotuned).
struct Auto {
  static constexpr StrategyKind kind = StrategyKind::Auto;  ///< this tag's StrategyKind
  static constexpr const char* name = "auto";               ///< this tag's name
};

/// Tuning knobs shared by the strategies; 0 means "the strategy's rule decides" (paper 7.1).
struct Tuning {
  unsigned threads = 0;  ///< threads per block (ParPart*, ParCell*: default 128)
  unsigned blocks = 0;   ///< blocks (grid-stride strategies; default: fill the device)
  std::size_t shared_bytes =
      0;                      ///< shared-memory budget per block (default: 48 KiB, or the opt-in limit where it helps)
  unsigned sm_particles = 0;  ///< Par-Cell-SM staging buffer in particles (default 512)
  int pencil_length = 0;      ///< X-pencil: target cells per pencil L (default from budget and M_C)
  int subbox[3] = {0, 0, 0};  ///< All-in-SM / X-pencil-reg: target cells per block along x, y, z
};

/// Whether a strategy can run on a grid and device, and why not.
struct Support {
  bool ok = true;      ///< can run
  std::string reason;  ///< why not (empty when ok)
  /// A "yes".
  static Support yes() { return {}; }
  /// A "no" with its reason.
  static Support no(std::string why) { return {false, std::move(why)}; }
};

/// What one interact() call did.
struct Report {
  StrategyKind strategy = StrategyKind::Auto;  ///< the strategy that ran
  LaunchShape shape{};                         ///< its launch shape (GPU-like backends)
  float tuning_ms = 0;                         ///< time spent autotuning in this call (Auto only)
};

namespace detail {
/// Implementation of strategy tag S: specialised by each strategy header with
/// `supports(grid, functor, props, tuning)`, `shape(...)` and `run(grid, functor, out, tuning)`.
template <class S>
struct StrategyImpl;
}  // namespace detail

}  // namespace cellint

// The names, the parser and dispatch, derived from the list of strategies.
#include "cellint/strategies/registry.hpp"
