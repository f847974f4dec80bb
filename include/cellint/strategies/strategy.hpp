#pragma once
/// @file
/// What every strategy shares: the run-time StrategyKind, the tag base, tuning knobs, the supports() answer, the Report
/// of a call and the Call a strategy sees.

#include <cstdint>
#include <initializer_list>
#include <string>
#include <utility>
#include <vector>

#include "cellint/backend/traits.hpp"
#include "cellint/grid/grid_view.hpp"

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
  AllPairs,       ///< every pair, sources streamed through shared memory in tiles (no cells; long-range, small N)
  Auto            ///< time the eligible strategies once, cache and use the fastest
};

namespace detail {
/// What every strategy tag carries: its StrategyKind (`kind`), whether it runs on GPU-like backends (`gpu_like`; false:
/// a CPU strategy) and whether Auto times it (`auto_candidate`). A tag adds its `name` (what to_string() returns and
/// strategy_from_name() reads) and its policy: its defaults and `candidates()`, the shapes Auto times (the rule's
/// first).
template <StrategyKind K, bool GpuLike, bool AutoCandidate = true>
struct StrategyTag {
  static constexpr StrategyKind kind = K;                   ///< this tag's StrategyKind
  static constexpr bool gpu_like = GpuLike;                 ///< runs on GPU-like backends (else: CPU)
  static constexpr bool auto_candidate = AutoCandidate;     ///< timed by Auto
  /// Whether Auto times it for these targets and sources (besides supports()): a tag whose cost does not follow the
  /// cells (AllPairs) says no where timing it would take long.
  template <class Real, int Dim>
  static bool auto_eligible(const GridView<Real, Dim>&, const GridView<Real, Dim>&) {
    return true;
  }
};
}  // namespace detail

/// Auto strategy tag: time the eligible strategies once, cache and use the fastest.
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
  int targets_per_thread = 0;  ///< All-pairs: targets each thread holds in registers, 1, 2 or 4 (default 4)
  /// All-pairs: blocks per group of targets, each over its own run of sources, their sums added with atomics (default:
  /// the fewest that make the launch whole waves of the device; 1 = none; always 1 with `reproducible` or an Accum
  /// that is not an array of one scalar type).
  int source_splits = 0;
  /// Fill Report::stats: the call is timed (events on GPUs) and synchronised, and a counting pass runs after it. Off
  /// (the default), nothing of it runs: the kernels are the same either way.
  bool statistics = false;
  /// Bit-identical results run after run for the same input: both grids must be built with GridOptions::stable (an
  /// InvalidArgument says so otherwise), and Auto chooses by a fixed rule instead of timing (see docs/calls.md).
  bool reproducible = false;
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

/// Per-call statistics (Report::stats), filled when Tuning::statistics is set.
struct CallStats {
  bool collected = false;            ///< Tuning::statistics was set (else every field below is 0)
  std::uint64_t targets = 0;         ///< target particles
  std::uint64_t sources = 0;         ///< source particles
  /// Candidate pairs the strategy tests against the cutoff: the sources of each target's 3^Dim neighbour cells (every
  /// source for all-pairs and brute-force; each pair once for the half-shell cell loop), the target itself excluded.
  std::uint64_t pairs_examined = 0;
  /// Of those, the pairs closer than the cutoff, counted exactly by a second pass: (target, source) pairs (the pair
  /// terms the results hold, for a functor with the cutoff test); for a strategy that evaluates each pair once
  /// (`each_pair_once`), pairs, each of which gives two terms.
  std::uint64_t pairs_within = 0;
  bool each_pair_once = false;  ///< a half-shell strategy or a half list: the counts above are of unordered pairs
  /// Bytes the call needs at the least: each target's position, payload and result and each source's position and
  /// payload once, and both grids' cell offsets. Over `ms`, an effective bandwidth.
  std::uint64_t min_bytes = 0;
  /// The call's time (GPU events; the host clock on CPU backends). When Auto tuned in the call (Report::tuning_ms), the
  /// call is made once more, from Auto's decision, and that is the time.
  double ms = 0;
  /// Fraction of the candidates inside the cutoff.
  double hit_rate() const { return pairs_examined ? double(pairs_within) / double(pairs_examined) : 0.0; }
  /// min_bytes over the call's time, GB/s.
  double gbytes_per_s() const { return ms > 0 ? double(min_bytes) / (ms * 1e6) : 0.0; }
};

/// What one interact() call did.
struct Report {
  StrategyKind strategy = StrategyKind::Auto;  ///< the strategy that ran
  LaunchShape shape{};                         ///< its launch shape (GPU-like backends)
  float tuning_ms = 0;                         ///< time spent autotuning in this call (Auto only)
  CallStats stats;                             ///< with Tuning::statistics: pairs, time and bytes of the call
};

namespace detail {
/// One interaction call as every strategy sees it: the target and source views, the stream to launch on and the device.
/// Built once per call by the front door (make_call()); strategies never see the owning CellGrid.
template <class B, class Real, int Dim>
struct Call {
  PairViews<Real, Dim> views;    ///< targets and sources (and whether they are one set)
  typename B::Stream stream{};   ///< where kernels go
  DeviceProperties props{};      ///< the device (B::properties())

  /// The cell geometry both sides share.
  const GridGeometry<Real, Dim>& geometry() const { return views.sources.geo; }
  /// Target particles.
  Index targets() const { return views.targets.n; }
  /// M_C of the sources (what shared-memory staging is sized for), at least 1.
  Index source_max_per_cell() const { return views.sources.max_per_cell > 0 ? views.sources.max_per_cell : 1; }
  /// Mean targets per cell (the pencil rules size blocks from it).
  double mean_targets_per_cell() const {
    return static_cast<double>(views.targets.n) / static_cast<double>(geometry().cell_count());
  }
};

/// The call of `grid` with itself (targets == sources), for device properties `p`.
template <class Grid>
Call<typename Grid::backend_type, typename Grid::real_type, Grid::dim> make_call(const Grid& grid,
                                                                                const DeviceProperties& p) {
  Call<typename Grid::backend_type, typename Grid::real_type, Grid::dim> c;
  c.views = PairViews<typename Grid::real_type, Grid::dim>::one_set(grid.view());
  c.stream = grid.stream();
  c.props = p;
  return c;
}

/// Runs `fn` (which enqueues work on stream `s`) and returns its time in milliseconds by the backend's Timer: two
/// events on GPUs (elapsed_ms() waits for the second), the host clock on the CPU backends (whose calls return when
/// done).
template <class B, class Fn>
double call_ms(typename B::Stream s, Fn&& fn) {
  typename B::Timer timer(s);
  timer.start();
  fn();
  timer.stop();
  return static_cast<double>(timer.elapsed_ms());
}

/// Sets s.pairs_within from the per-target neighbour counts of a counting pass; `each_pair_once` (a half-shell strategy
/// or a half list, which count both terms of a pair they evaluate once) halves it and says so.
inline void set_pairs_within(CallStats& s, const std::vector<unsigned>& counts, bool each_pair_once) {
  s.pairs_within = 0;
  for (unsigned n : counts) s.pairs_within += n;
  s.each_pair_once = each_pair_once;
  if (each_pair_once) s.pairs_within /= 2;
}

/// The plan of a strategy that decides nothing but whether it can run and its launch shape.
struct BasicPlan {
  Support support;    ///< whether it can run, and why not
  LaunchShape shape;  ///< its launch shape (unused on the CPU)
};

/// Implementation of strategy tag S, specialised in strategies/detail/<name>/:
///   `struct Plan` (at least `Support support; LaunchShape shape;`), computed once per call by
///   `template <class B, class R, int D, class F> static Plan plan(const Call<B, R, D>&, const F&, const Tuning&)`,
///   and `static void run(const Call<B, R, D>&, const F&, Accum* out, const Plan&)`, which launches the kernel
///   (asynchronous), called only when the plan says yes and there are targets. Only the front door
///   (strategies/run.hpp) turns a "no" into Unsupported.
template <class S>
struct StrategyImpl;

/// Why strategy `name`, which reads each particle once for both sides of a pair, refuses a functor with load_source().
inline std::string reads_each_particle_once(const char* name) {
  return std::string(name) + " reads each particle once for both sides of a pair: it cannot run a functor with "
                             "load_source() (on GPUs x-pencil, par-cell-sm or par-part-noloop can, on the CPU cell-loop)";
}

/// Plan `p` saying no for reason `why` (the early exits of plan()).
template <class Plan>
Plan refuse(Plan p, std::string why) {
  p.support = Support::no(std::move(why));
  return p;
}

/// Knob values Auto times besides the rule's: `user` first, then one Tuning per value of `values` written into the knob
/// `member` (none when the user fixed that knob).
template <class V>
std::vector<Tuning> vary(const Tuning& user, V Tuning::*member, std::initializer_list<V> values) {
  std::vector<Tuning> r{user};
  if (user.*member != V{}) return r;
  for (V v : values) {
    Tuning t = user;
    t.*member = v;
    r.push_back(t);
  }
  return r;
}
}  // namespace detail

}  // namespace cellint
