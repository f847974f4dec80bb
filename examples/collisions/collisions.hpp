#pragma once
/// @file
/// 2D elastic disc collisions (the NUS CS3210 particle simulator) with a cellint broad phase.
///
/// N discs of radius r move in the square [0, L]^2; a step lasts one time unit. Each step:
///  1. every disc gets at most one wall candidate (its earliest wall, if it comes within eps = 1e-8 of it during the
///     step) and disc candidates (every other disc it touches at a time 0 <= t <= 1 by the quadratic of the report's
///     section 2.2; overlapping discs give t < 0 and are ignored: they phase through each other);
///  2. candidates are taken in the report's total order (time, then the lower id of the pair, then a wall before a
///  disc,
///     then the higher id), each accepted only if its discs are still free: at most one collision per disc per step;
///  3. a disc with a collision moves to it, reflects (wall) or exchanges the normal velocity components with its
///  partner
///     (disc), and moves on for the rest of the step, stopping at a wall if it reaches one (it collides with that wall
///     at the start of the next step); the others move freely.
///
/// Two engines run these rules:
///  - reference_step(): the report's algorithm, O(N^2): every pair's time, one candidate list, sorted, filtered.
///  - CellintEngine: the same candidates from a cellint grid, O(N) per step, and the same filter computed without a
///    sorted list (see CellintEngine::step). Both call the same pair_time() and advance(), so their final states are
///    bit-identical; the program checks that with --reference.

#include <algorithm>
#include <array>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iostream>
#include <memory>
#include <sstream>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "cellint/backend/detail/parallel_for.hpp"
#include "cellint/cellint.hpp"

namespace collisions {

using cellint::Index;

// ---- the rules shared by both engines ------------------------------------------------------------------------------

/// Double arithmetic rounded once per operation on every compiler. nvcc contracts a * b + c into one FMA in device code
/// (one rounding instead of two), which would make GPU pair times differ from the CPU reference in the last bit; the
/// intrinsics below are never contracted. Host code is compiled with -ffp-contract=off for the same reason.
namespace exact {
CELLINT_HD inline double mul(double a, double b) {
#if defined(__CUDA_ARCH__)
  return __dmul_rn(a, b);
#else
  return a * b;
#endif
}
CELLINT_HD inline double add(double a, double b) {
#if defined(__CUDA_ARCH__)
  return __dadd_rn(a, b);
#else
  return a + b;
#endif
}
CELLINT_HD inline double sub(double a, double b) {
#if defined(__CUDA_ARCH__)
  return __dsub_rn(a, b);
#else
  return a - b;
#endif
}
CELLINT_HD inline double div(double a, double b) {
#if defined(__CUDA_ARCH__)
  return __ddiv_rn(a, b);
#else
  return a / b;
#endif
}
CELLINT_HD inline double sqrt(double a) {
#if defined(__CUDA_ARCH__)
  return __dsqrt_rn(a);
#else
  return std::sqrt(a);
#endif
}
}  // namespace exact

/// Pair and wall times above 1 mean "no collision in this step".
inline constexpr double no_hit = 2.0;
/// The report's wall tolerance: a disc that comes within this distance of a wall during a step collides with it.
inline constexpr double wall_eps = 1e-8;

/// Time in [0, 1] at which discs P and Q (P the lower id) touch, or no_hit. The report's section 2.2, item 9:
/// A t^2 + B t + C = 0 with A = |dv|^2, B = 2 dx.dv, C = |dx|^2 - 4 r^2 (d = Q - P), first root only;
/// a negative root (overlapping discs) or equal velocities (A = 0) is no collision.
CELLINT_HD inline double pair_time(double xp, double yp, double vxp, double vyp, double xq, double yq, double vxq,
                                   double vyq, double r) {
  using namespace exact;
  const double dx = sub(xq, xp), dy = sub(yq, yp);
  const double dvx = sub(vxq, vxp), dvy = sub(vyq, vyp);
  const double a = add(mul(dvx, dvx), mul(dvy, dvy));
  if (!(a > 0)) return no_hit;
  const double b = add(mul(mul(2.0, dx), dvx), mul(mul(2.0, dy), dvy));
  const double c = sub(add(mul(dx, dx), mul(dy, dy)), mul(mul(4.0, r), r));
  const double disc = sub(mul(b, b), mul(mul(4.0, a), c));
  if (disc < 0) return no_hit;
  const double t = div(sub(-b, exact::sqrt(disc)), mul(2.0, a));
  return t >= 0 && t <= 1 ? t : no_hit;
}

/// A collision candidate's place in the report's total order (section 2.2, item 5): time, then the lower id of the
/// pair (the disc itself for a wall), then a wall before a disc, then the higher id.
struct Key {
  double t;  ///< time in [0, 1]
  Index lo;  ///< lower id (the disc, for a wall)
  int kind;  ///< 0 wall, 1 disc
  Index hi;  ///< higher id (the disc, for a wall)
};
CELLINT_HD inline Key wall_key(double t, Index i) { return {t, i, 0, i}; }
CELLINT_HD inline Key disc_key(double t, Index i, Index j) { return {t, i < j ? i : j, 1, i < j ? j : i}; }
/// Whether a comes first. Keys of distinct candidates always differ, so the order is total.
CELLINT_HD inline bool before(const Key& a, const Key& b) {
  if (a.t != b.t) return a.t < b.t;
  if (a.lo != b.lo) return a.lo < b.lo;
  if (a.kind != b.kind) return a.kind < b.kind;
  return a.hi < b.hi;
}

/// Time at which a disc at x moving at v reaches the wall it moves towards on one axis (clamped to [0, 1]), or no_hit
/// when it ends the step farther than wall_eps from it (the report's section 2.2, item 6).
inline double wall_time_axis(double x, double v, double r, double L) {
  double t;
  if (v < 0) {
    if (x + v - r > wall_eps) return no_hit;
    t = (x - r) / -v;
  } else if (v > 0) {
    if (L - r - (x + v) > wall_eps) return no_hit;
    t = (L - r - x) / v;
  } else {
    return no_hit;
  }
  return std::min(1.0, std::max(0.0, t));
}

/// The discs, in id order (id = index).
struct State {
  double L = 0, r = 0;
  std::vector<double> x, y, vx, vy;
  std::vector<long> disc_hits, wall_hits;  ///< the report's p_c and w_c
  Index size() const { return static_cast<Index>(x.size()); }
};

/// Wall candidate time of disc i (its earliest wall), or no_hit.
inline double wall_time(const State& s, Index i) {
  return std::min(wall_time_axis(s.x[i], s.vx[i], s.r, s.L), wall_time_axis(s.y[i], s.vy[i], s.r, s.L));
}

/// The collisions chosen for one step: partner[i] is -1 (none), i (a wall) or the other disc; time[i] when.
struct Matching {
  std::vector<Index> partner;
  std::vector<double> time;
  void reset(Index n) {
    partner.assign(n, -1);
    time.assign(n, no_hit);
  }
};

namespace detail {
/// Moves a disc for dt, stopping where it reaches a wall (the report's assumption 1a: placed at the wall).
inline void move_stopped(double& x, double& y, double vx, double vy, double dt, double r, double L) {
  double s = dt;
  if (vx < 0) s = std::min(s, (x - r) / -vx);
  if (vx > 0) s = std::min(s, (L - r - x) / vx);
  if (vy < 0) s = std::min(s, (y - r) / -vy);
  if (vy > 0) s = std::min(s, (L - r - y) / vy);
  s = std::max(s, 0.0);
  x = std::min(L - r, std::max(r, x + vx * s));
  y = std::min(L - r, std::max(r, y + vy * s));
}
}  // namespace detail

/// Applies a step's collisions and moves every disc (host; both engines).
inline void advance(State& s, const Matching& m) {
  const Index n = s.size();
  const double r = s.r, L = s.L;
  for (Index i = 0; i < n; ++i) {
    const Index j = m.partner[i];
    const double t = m.time[i];
    if (j < 0) {
      s.x[i] += s.vx[i];
      s.y[i] += s.vy[i];
    } else if (j == i) {
      // the wall(s) reached at t flip their velocity component (both at a corner)
      const bool fx = wall_time_axis(s.x[i], s.vx[i], r, L) == t;
      const bool fy = wall_time_axis(s.y[i], s.vy[i], r, L) == t;
      s.x[i] += s.vx[i] * t;
      s.y[i] += s.vy[i] * t;
      if (fx) s.vx[i] = -s.vx[i];
      if (fy) s.vy[i] = -s.vy[i];
      detail::move_stopped(s.x[i], s.y[i], s.vx[i], s.vy[i], 1 - t, r, L);
      ++s.wall_hits[i];
    } else if (i < j) {  // each pair once, from its lower id
      double xi = s.x[i] + s.vx[i] * t, yi = s.y[i] + s.vy[i] * t;
      double xj = s.x[j] + s.vx[j] * t, yj = s.y[j] + s.vy[j] * t;
      double nx = xj - xi, ny = yj - yi;
      const double d = std::sqrt(nx * nx + ny * ny);
      nx /= d;
      ny /= d;
      // equal masses: the discs exchange their velocity components along the line of centres
      const double dvn = (s.vx[j] - s.vx[i]) * nx + (s.vy[j] - s.vy[i]) * ny;
      s.vx[i] += dvn * nx;
      s.vy[i] += dvn * ny;
      s.vx[j] -= dvn * nx;
      s.vy[j] -= dvn * ny;
      detail::move_stopped(xi, yi, s.vx[i], s.vy[i], 1 - t, r, L);
      detail::move_stopped(xj, yj, s.vx[j], s.vy[j], 1 - t, r, L);
      s.x[i] = xi;
      s.y[i] = yi;
      s.x[j] = xj;
      s.y[j] = yj;
      ++s.disc_hits[i];
      ++s.disc_hits[j];
    }
  }
}

// ---- the O(N^2) reference: the report's algorithm -----------------------------------------------------------------

/// One step as the report computes it: every wall and every pair, one candidate list sorted in the total order, then
/// a pass that accepts a candidate when its discs are still free.
inline void reference_step(State& s, Matching& m) {
  const Index n = s.size();
  std::vector<std::pair<Key, Index>> cand;  // (key, the other disc; the disc itself for a wall)
  for (Index i = 0; i < n; ++i) {
    const double t = wall_time(s, i);
    if (t <= 1) cand.push_back({wall_key(t, i), i});
  }
  for (Index i = 0; i < n; ++i)
    for (Index j = i + 1; j < n; ++j) {
      const double t = pair_time(s.x[i], s.y[i], s.vx[i], s.vy[i], s.x[j], s.y[j], s.vx[j], s.vy[j], s.r);
      if (t <= 1) cand.push_back({disc_key(t, i, j), j});
    }
  std::sort(cand.begin(), cand.end(), [](const auto& a, const auto& b) { return before(a.first, b.first); });
  m.reset(n);
  for (const auto& c : cand) {
    const Index p = c.first.lo, q = c.second;
    if (m.partner[p] >= 0 || m.partner[q] >= 0) continue;  // one collision per disc per step
    m.partner[p] = q;
    m.partner[q] = p;
    m.time[p] = m.time[q] = c.first.t;
  }
  advance(s, m);
}

// ---- the cellint engine --------------------------------------------------------------------------------------------

/// Disc candidates a broad-phase pass keeps per disc: the earliest few, so that the filter can usually skip a partner
/// taken by someone else without another pass.
inline constexpr int kept = 4;

/// A disc's earliest disc candidates in the total order, earliest first (partner -1: empty slot).
struct Candidates {
  double t[kept];
  Index partner[kept];
  /// Inserts (time, other) for disc `self` unless it is there already or later than every kept candidate of a full
  /// list. The result depends only on the set of candidates offered, not on their order.
  CELLINT_HD void offer(double time, Index other, Index self) {
    const Key k = disc_key(time, self, other);
    int at = kept;
    for (int q = kept - 1; q >= 0; --q) {
      if (partner[q] == other) return;
      if (partner[q] < 0 || before(k, disc_key(t[q], self, partner[q]))) at = q;
    }
    if (at == kept) return;
    for (int q = kept - 1; q > at; --q) {
      t[q] = t[q - 1];
      partner[q] = partner[q - 1];
    }
    t[at] = time;
    partner[at] = other;
  }
};

/// The pair functor of the broad phase: for each target disc, its earliest disc candidates (in the total order) among
/// discs that are still free. The grid is binned on positions sampled inside the step (see CellintEngine), but the
/// collision time always comes from the start-of-step state, read by id from user-order arrays, through the same
/// pair_time() as the reference, with the lower id as P. The accumulator keeps the first `kept` of a total order, so
/// the order in which a strategy visits the pairs cannot change it.
struct EarliestDisc {
  struct Payload {
    double x, y, vx, vy;  ///< state at the start of the step
    Index id;             ///< the disc's id
    int taken;            ///< already has a collision this step
  };
  using Accum = Candidates;
  const double *x, *y, *vx, *vy;  ///< start-of-step state by id (backend memory)
  const int* taken;               ///< 1 for discs already matched this step, by id (backend memory)
  double r;                       ///< disc radius
  double reach2;                  ///< squared distance of sampled positions beyond which no collision is possible
  Index n;                        ///< discs: grid particle j is disc j % n (one copy per time slice of a batch)
  static constexpr bool cutoff_test = false;  // reach2 is tested here; cells are at least that wide
  static constexpr int flops = 30;

  CELLINT_HD Accum init() const {
    Accum a;
    for (int q = 0; q < kept; ++q) {
      a.t[q] = no_hit;
      a.partner[q] = -1;
    }
    return a;
  }
  template <class View>
  CELLINT_HD Payload load(const View& v, Index i) const {
    const Index id = v.original[i] % n;
    return {x[id], y[id], vx[id], vy[id], id, taken[id]};
  }
  CELLINT_HD void operator()(Accum& a, const Payload& t, const Payload& s, const cellint::Vec<double, 2>&,
                             double r2) const {
    if (r2 > reach2 || t.taken || s.taken) return;
    const bool t_low = t.id < s.id;
    const Payload& p = t_low ? t : s;
    const Payload& q = t_low ? s : t;
    const double time = pair_time(p.x, p.y, p.vx, p.vy, q.x, q.y, q.vx, q.vy, r);
    if (time <= 1) a.offer(time, s.id, t.id);
  }
};

namespace detail {
/// Grid particle j = q n + i is disc i sampled at the middle of slice first + q of K: its start-of-step position moved
/// to t = (first + q + 1/2) / K and clamped into the box (the broad phase's sample), then moved along X by q (L + gap),
/// so that the slices of a batch lie side by side in one grid, a gap (two cells) apart.
struct SampleSlices {
  const double *x, *y, *vx, *vy;
  Index n;
  int first, K;
  double L, gap;
  double *sx, *sy;
  template <class A>
  CELLINT_HD void operator()(A&, Index j) const {
    const Index q = j / n, i = j - q * n;
    const double t = (first + static_cast<double>(q) + 0.5) / K;
    const double px = x[i] + vx[i] * t, py = y[i] + vy[i] * t;
    sx[j] = (px < 0 ? 0 : (px > L ? L : px)) + static_cast<double>(q) * (L + gap);
    sy[j] = py < 0 ? 0 : (py > L ? L : py);
  }
};
/// best[i] = the earliest kept of best[i] and disc i's results in the `slices` slices of a batch (a pair found in
/// several slices is kept once).
struct MergeEarliest {
  const Candidates* by_input;  ///< grid particle q n + i: disc i in slice q of the batch
  Index n;
  int slices;
  Candidates* best;  ///< by id
  template <class A>
  CELLINT_HD void operator()(A&, Index i) const {
    Candidates b = best[i];
    for (int q = 0; q < slices; ++q) {
      const Candidates c = by_input[static_cast<Index>(q) * n + i];
      for (int k = 0; k < kept && c.partner[k] >= 0; ++k) b.offer(c.t[k], c.partner[k], i);
    }
    best[i] = b;
  }
};
/// best[i] = no candidates.
struct ResetEarliest {
  EarliestDisc f;
  Candidates* best;
  template <class A>
  CELLINT_HD void operator()(A&, Index i) const {
    best[i] = f.init();
  }
};
}  // namespace detail

/// Statistics of a CellintEngine run.
struct EngineStats {
  long rounds = 0;       ///< broad-phase rounds (at least one per step)
  long grids = 0;        ///< grids constructed (the cell width grows with the fastest disc)
  int slices = 1;        ///< time slices per step
  int per_grid = 1;      ///< slices that one grid build and one pass serve
  std::string strategy;  ///< cellint strategy of the pair pass
};

/// The cellint broad phase and the filter, on one backend.
///
/// Which pairs can collide. Discs i and j touch at some t in [0, 1] when |d + dv t| = 2r (d, dv: differences of
/// positions and velocities at the start of the step), so |d(s)| = |d + dv s| <= 2r + |dv| |t - s| at any sample time
/// s. Sampling the positions at the middle of the step (s = 1/2) gives |d(1/2)| <= 2r + |dv| / 2 <= 2r + v_max, with
/// |dv| <= |v_i| + |v_j| <= 2 v_max: half of the bound 2r + 2 v_max that start-of-step positions would need. Splitting
/// the step into K slices and binning the positions at each slice's middle s_k = (k + 1/2) / K, the slice that holds t
/// has |t - s_k| <= 1/(2K), so every colliding pair is within reach = 2r + v_max / K in at least one slice. Clamping
/// the samples into the box (a projection onto a convex set) never increases a distance, so the bound survives it.
/// The grid's cells are at least `reach` wide, and the functor skips pairs farther apart than reach (plus a margin that
/// covers rounding: a computed collision time can correspond to a true miss by ~1e-8 at L = 2e4). K trades grid
/// builds (K N) against pairs (N^2 reach^2 / L^2 per slice); with the report's speeds (up to L/4 per step, so that one
/// slice would need cells of half the box) K of a few tens to hundreds balances them, about N^1.5 in all.
///
/// The slices of a step go to the grid in batches: the samples of a batch's slices lie side by side along X, two cells
/// apart, so that one grid build and one interact() pass serve them all (no pair across slices is within reach). Up
/// to `batch_particles` samples a batch; with one slice per grid, as first written, the GPU spent most of a step on
/// the per-slice launches and waits.
///
/// The filter. The report sorts all candidates and accepts each whose discs are both free. The same result comes from
/// rounds: every free disc finds its earliest candidate among free partners (its wall, or a disc from the grid); a
/// wall candidate is accepted, and so is a disc pair that is the earliest candidate of both its discs; the rest repeat
/// with the discs accepted so far excluded. The earliest remaining candidate overall is always accepted, and an
/// accepted candidate is one the sorted pass would reach with both discs free (every earlier candidate of either disc
/// involves a disc taken by an even earlier one), so both give the same matching. Usually one round suffices; a
/// second happens when a disc's earliest partner was taken by someone else.
template <class Backend>
class CellintEngine {
 public:
  using Grid = cellint::CellGrid<Backend, double, 2>;
  using Strategy = std::conditional_t<Backend::is_gpu_like, cellint::ParPartNoLoop, cellint::CellLoop>;

  /// Samples one grid holds at most (the slices of a batch times N; at least one slice).
  static constexpr Index batch_particles = Index(1) << 23;

  /// `slices` = 0 picks K from the initial state; `per_grid` = 0 puts as many slices in one grid as batch_particles
  /// allows.
  CellintEngine(const State& s, int slices, int per_grid = 0) : n_(s.size()), L_(s.L), r_(s.r) {
    for (auto* b : {&x_, &y_, &vx_, &vy_}) b->resize(n_);
    taken_.resize(n_);
    best_.resize(n_);
    stats_.slices = slices > 0 ? slices : auto_slices(s);
    const Index fit = std::max<Index>(1, batch_particles / std::max<Index>(n_, 1));
    batch_ = static_cast<int>(std::min<Index>(stats_.slices, per_grid > 0 ? per_grid : fit));
    stats_.per_grid = batch_;
    const std::size_t m = static_cast<std::size_t>(batch_) * static_cast<std::size_t>(n_);
    for (auto* b : {&sx_, &sy_}) b->resize(m);
    slice_.resize(m);
    by_input_.resize(m);
    stats_.strategy = Strategy::name;
  }

  /// Chooses K ~ v_max sqrt(N) / L, a rough balance of K grid builds against the pairs within reach in each slice (not
  /// tuned: --slices overrides it), at least 1 and no more than needed to bring reach down to 3r.
  static int auto_slices(const State& s) {
    const double vmax = max_speed(s);
    const double k = std::round(vmax * std::sqrt(static_cast<double>(s.size())) / s.L);
    const double k_max = std::ceil(vmax / s.r);
    return static_cast<int>(std::max(1.0, std::min({k, k_max, 4096.0})));
  }

  static double max_speed(const State& s) {
    double v2 = 0;
    for (Index i = 0; i < s.size(); ++i) v2 = std::max(v2, s.vx[i] * s.vx[i] + s.vy[i] * s.vy[i]);
    return std::sqrt(v2);
  }

  /// One step: finds the matching and advances the state.
  void step(State& s, Matching& m) {
    x_.upload(s.x.data());
    y_.upload(s.y.data());
    vx_.upload(s.vx.data());
    vy_.upload(s.vy.data());
    const int K = stats_.slices;
    const double reach = 2 * s.r + max_speed(s) / K;
    const double reach_margin = reach * (1 + 1e-9) + 1e-6 * (1 + s.L);
    if (!grid_ || grid_->cutoff() < std::min(reach_margin, s.L)) {
      // the cells grow with the fastest disc; headroom so that small changes keep the grid. The batch's slices lie side
      // by side along X, two cells apart (gap_)
      const double cw = std::min(1.25 * reach_margin, s.L);
      gap_ = 2 * cw;
      cellint::Box<double, 2> box;
      box.lengths[0] = batch_ * (s.L + gap_);  // (the last slice's samples stay a gap inside, whatever the rounding)
      box.lengths[1] = s.L;
      grid_ = std::make_unique<Grid>(box, cw);
      ++stats_.grids;
    }
    EarliestDisc f{x_.data(), y_.data(), vx_.data(), vy_.data(), taken_.data(), s.r, reach_margin * reach_margin, n_};

    m.reset(n_);
    std::vector<double> wall(n_);
    for (Index i = 0; i < n_; ++i) wall[i] = wall_time(s, i);
    std::vector<int> taken(n_, 0);
    std::vector<Candidates> best(n_);
    std::vector<Key> choice(n_);
    std::vector<char> has(n_), unknown(n_);
    taken_.fill_bytes(0);
    auto pass = [&] {  // every free disc's earliest disc candidates among free discs
      ++stats_.rounds;
      cellint::detail::parallel_for<Backend>(n_, detail::ResetEarliest{f, best_.data()});
      for (int k = 0; k < K; k += batch_) {
        const int q = std::min(batch_, K - k);
        const Index m = static_cast<Index>(q) * n_;
        cellint::detail::parallel_for<Backend>(m, detail::SampleSlices{x_.data(), y_.data(), vx_.data(), vy_.data(), n_,
                                                                       k, K, s.L, gap_, sx_.data(), sy_.data()});
        grid_->build_from_backend({sx_.data(), sy_.data()}, m);
        cellint::interact<Strategy>(*grid_, f, slice_);
        // the pass's results from the grid's sorted order back to the samples' order (by_input_[original[k]])
        cellint::detail::parallel_for<Backend>(
            m, cellint::detail::ScatterKernel<Candidates>{slice_.data(), grid_->view().original, by_input_.data()});
        cellint::detail::parallel_for<Backend>(n_, detail::MergeEarliest{by_input_.data(), n_, q, best_.data()});
      }
      best_.download(best.data());
    };
    pass();
    for (;;) {
      // each free disc's earliest candidate: its wall or the first kept disc that is still free. It is unknown when
      // every kept disc is taken, the list was full and the wall (if any) comes after the last kept candidate.
      bool any_unknown = false;
      for (Index i = 0; i < n_; ++i) {
        has[i] = unknown[i] = 0;
        if (taken[i]) continue;
        if (wall[i] <= 1) {
          choice[i] = wall_key(wall[i], i);
          has[i] = 1;
        }
        const Candidates& c = best[i];
        int q = 0;
        while (q < kept && c.partner[q] >= 0 && taken[c.partner[q]]) ++q;
        if (q < kept && c.partner[q] >= 0) {
          const Key d = disc_key(c.t[q], i, c.partner[q]);
          if (!has[i] || before(d, choice[i])) choice[i] = d;
          has[i] = 1;
        } else if (q == kept && (!has[i] || before(disc_key(c.t[kept - 1], i, c.partner[kept - 1]), choice[i]))) {
          unknown[i] = 1;
          any_unknown = true;
        }
      }
      // accept walls and pairs that are the earliest candidate of both discs
      bool accepted = false, left = false;
      for (Index i = 0; i < n_; ++i) {
        if (!has[i] || unknown[i] || taken[i]) continue;
        const Key& c = choice[i];
        if (c.kind == 0) {
          m.partner[i] = i;
          m.time[i] = c.t;
          taken[i] = 1;
          accepted = true;
          continue;
        }
        const Index j = c.lo == i ? c.hi : c.lo;
        if (i < j && has[j] && !unknown[j] && choice[j].kind == 1 && choice[j].lo == c.lo && choice[j].hi == c.hi) {
          m.partner[i] = j;
          m.partner[j] = i;
          m.time[i] = m.time[j] = c.t;
          taken[i] = taken[j] = 1;
          accepted = true;
        }
      }
      for (Index i = 0; i < n_ && !left; ++i) left = (has[i] || unknown[i]) && !taken[i];
      if (!left) break;
      if (!accepted && !any_unknown) throw std::logic_error("collisions: the filter made no progress");
      if (!accepted) {  // only discs whose kept candidates ran out remain undecided: a new pass among free discs
        taken_.upload(taken.data());
        pass();
      }
    }
    advance(s, m);
  }

  const EngineStats& stats() const { return stats_; }

 private:
  Index n_;
  double L_, r_;
  int batch_ = 1;   // slices per grid
  double gap_ = 0;  // room between the slices of a batch along X
  std::unique_ptr<Grid> grid_;
  cellint::Buffer<Backend, double> x_, y_, vx_, vy_, sx_, sy_;
  cellint::Buffer<Backend, int> taken_;
  cellint::Buffer<Backend, EarliestDisc::Accum> slice_, by_input_, best_;
  EngineStats stats_;
};

// ---- input ---------------------------------------------------------------------------------------------------------

/// A parsed input: the report's `N L r S`, the mode, and the initial states when the file has them.
struct Input {
  Index n = 0;
  double L = 0, r = 0;
  long steps = 0;
  bool print = false;        ///< print mode: the state before every step
  bool has_states = false;   ///< the file lists every disc (else they are generated)
  State state;               ///< initial state (when has_states)
  std::vector<int> line_of;  ///< input line of each disc (when has_states)
  std::string source = "stdin";
};

/// An input error: "<source>:<line>: <what>" or "<source>: <what>".
class InputError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

namespace detail {
inline std::string fmt(double v) {
  char b[64];
  std::snprintf(b, sizeof b, "%.10g", v);
  return b;
}
inline bool parse_long(const std::string& t, long& v) {
  char* end = nullptr;
  errno = 0;
  v = std::strtol(t.c_str(), &end, 10);
  return !t.empty() && *end == 0 && errno == 0;
}
inline bool parse_double(const std::string& t, double& v) {
  char* end = nullptr;
  v = std::strtod(t.c_str(), &end);
  return !t.empty() && *end == 0 && std::isfinite(v);
}

/// Disc pairs closer than 2r, found through a bucket grid of cells at least 2r wide (O(N)).
class OverlapFinder {
 public:
  OverlapFinder(double L, double r, Index n) : r_(r) {
    const double per_axis = std::min(std::floor(L / (2 * r)), std::ceil(std::sqrt(static_cast<double>(n))) + 1);
    m_ = static_cast<long>(std::max(1.0, per_axis));
    w_ = L / static_cast<double>(m_);
    cells_.resize(static_cast<std::size_t>(m_ * m_));
  }
  /// A disc already added that overlaps (x, y), or -1.
  Index find(const State& s, double x, double y) const {
    const long cx = cell(x), cy = cell(y);
    for (long j = std::max(0L, cy - 1); j <= std::min(m_ - 1, cy + 1); ++j)
      for (long i = std::max(0L, cx - 1); i <= std::min(m_ - 1, cx + 1); ++i)
        for (Index k : cells_[static_cast<std::size_t>(j * m_ + i)]) {
          const double dx = s.x[k] - x, dy = s.y[k] - y;
          if (dx * dx + dy * dy < 4 * r_ * r_) return k;
        }
    return -1;
  }
  void add(Index k, double x, double y) { cells_[static_cast<std::size_t>(cell(y) * m_ + cell(x))].push_back(k); }

 private:
  long cell(double v) const { return std::min(m_ - 1, std::max(0L, static_cast<long>(v / w_))); }
  double r_, w_;
  long m_;
  std::vector<std::vector<Index>> cells_;
};
}  // namespace detail

/// Reads the report's input format: `N L r S` (whitespace-separated, over one or several lines), optionally `print`
/// or `perf` (default perf), then either nothing (the discs are generated) or N lines `i x y vx vy`, one per disc,
/// ids 0 .. N-1 in any order. Checks the report's assumption 3 (L >= 2r, N r^2 <= L^2), that every disc is inside the
/// box and that no two overlap.
/// @throws InputError naming the line, or the particle and its line
inline Input read_input(std::istream& in, const std::string& source) {
  Input inp;
  inp.source = source;
  std::vector<std::pair<int, std::vector<std::string>>> lines;  // (line number, tokens), blank lines left out
  std::string text;
  for (int no = 1; std::getline(in, text); ++no) {
    std::istringstream ss(text);
    std::vector<std::string> tok;
    for (std::string t; ss >> t;) tok.push_back(t);
    if (!tok.empty()) lines.push_back({no, tok});
  }
  auto fail = [&](int line, const std::string& what) -> InputError {
    return InputError(source + (line > 0 ? ":" + std::to_string(line) : std::string()) + ": " + what);
  };
  // the header: four numbers, then the optional mode, as a stream of tokens
  std::size_t li = 0, ti = 0;
  auto next_token = [&](const char* what, int& line) -> std::string {
    if (li >= lines.size()) throw fail(0, std::string("unexpected end of input: expected ") + what);
    line = lines[li].first;
    std::string t = lines[li].second[ti];
    if (++ti == lines[li].second.size()) ++li, ti = 0;
    return t;
  };
  int line = 0;
  long n = 0, steps = 0;
  std::string t = next_token("N (the number of discs)", line);
  if (!detail::parse_long(t, n)) throw fail(line, "N must be an integer, got '" + t + "'");
  if (n <= 0) throw fail(line, "N must be positive, got " + t);
  if (n > 100000000) throw fail(line, "N = " + t + " is more than this program handles (1e8)");
  t = next_token("L (the side of the box)", line);
  if (!detail::parse_double(t, inp.L) || !(inp.L > 0)) throw fail(line, "L must be a positive number, got '" + t + "'");
  t = next_token("r (the disc radius)", line);
  if (!detail::parse_double(t, inp.r) || !(inp.r > 0)) throw fail(line, "r must be a positive number, got '" + t + "'");
  t = next_token("S (the number of steps)", line);
  if (!detail::parse_long(t, steps) || steps < 0) throw fail(line, "S must be an integer >= 0, got '" + t + "'");
  inp.n = static_cast<Index>(n);
  inp.steps = steps;
  if (inp.L < 2 * inp.r)
    throw fail(line, "L = " + detail::fmt(inp.L) + " < 2r = " + detail::fmt(2 * inp.r) + ": not even one disc fits");
  if (static_cast<double>(n) * inp.r * inp.r > inp.L * inp.L)
    throw fail(line, "N r^2 > L^2: " + std::to_string(n) + " discs of radius " + detail::fmt(inp.r) +
                         " do not fit in a box of side " + detail::fmt(inp.L));
  // the mode: the rest of the header's last line, or a line of its own
  const bool same_line = ti != 0;
  if (li < lines.size() && (same_line || lines[li].second.size() == 1)) {
    const auto& tok = lines[li].second;
    if (tok[ti] != "print" && tok[ti] != "perf")
      throw fail(lines[li].first, "expected 'print' or 'perf' after N L r S, got '" + tok[ti] + "'");
    if (ti + 1 != tok.size()) throw fail(lines[li].first, "unexpected '" + tok[ti + 1] + "' after the mode");
    inp.print = tok[ti] == "print";
    ++li;
    ti = 0;
  }
  if (li == lines.size()) return inp;

  // the discs: one line each
  State& s = inp.state;
  s.L = inp.L;
  s.r = inp.r;
  for (auto* v : {&s.x, &s.y, &s.vx, &s.vy}) v->assign(inp.n, 0.0);
  s.disc_hits.assign(inp.n, 0);
  s.wall_hits.assign(inp.n, 0);
  inp.line_of.assign(inp.n, 0);
  const std::size_t first = li;
  for (; li < lines.size(); ++li) {
    const int no = lines[li].first;
    const auto& tok = lines[li].second;
    if (tok.size() != 5) throw fail(no, "expected a disc 'i x y vx vy' (5 values), got " + std::to_string(tok.size()));
    long id;
    double v[4];
    if (!detail::parse_long(tok[0], id)) throw fail(no, "the disc id must be an integer, got '" + tok[0] + "'");
    if (id < 0 || id >= n)
      throw fail(no, "disc id " + tok[0] + " is out of range (0 .. " + std::to_string(n - 1) + ")");
    static const char* names[4] = {"x", "y", "vx", "vy"};
    for (int k = 0; k < 4; ++k)
      if (!detail::parse_double(tok[k + 1], v[k]))
        throw fail(
            no, std::string("disc ") + tok[0] + ": " + names[k] + " must be a finite number, got '" + tok[k + 1] + "'");
    if (inp.line_of[id])
      throw fail(no, "disc " + tok[0] + " appears twice (first on line " + std::to_string(inp.line_of[id]) + ")");
    inp.line_of[id] = no;
    s.x[id] = v[0];
    s.y[id] = v[1];
    s.vx[id] = v[2];
    s.vy[id] = v[3];
  }
  if (lines.size() - first != static_cast<std::size_t>(n))
    throw fail(0, "the input lists " + std::to_string(lines.size() - first) + " discs but N = " + std::to_string(n) +
                      " (list all of them or none)");
  const double lo = inp.r, hi = inp.L - inp.r;
  for (Index i = 0; i < inp.n; ++i)
    if (s.x[i] < lo || s.x[i] > hi || s.y[i] < lo || s.y[i] > hi)
      throw fail(inp.line_of[i], "disc " + std::to_string(i) + " at (" + detail::fmt(s.x[i]) + ", " +
                                     detail::fmt(s.y[i]) +
                                     ") is outside the box: its centre must lie in [r, L - r] = [" + detail::fmt(lo) +
                                     ", " + detail::fmt(hi) + "]");
  detail::OverlapFinder grid(inp.L, inp.r, inp.n);
  for (Index i = 0; i < inp.n; ++i) {
    const Index k = grid.find(s, s.x[i], s.y[i]);
    if (k >= 0) {
      const double d = std::hypot(s.x[i] - s.x[k], s.y[i] - s.y[k]);
      throw fail(inp.line_of[i], "discs " + std::to_string(k) + " (line " + std::to_string(inp.line_of[k]) + ") and " +
                                     std::to_string(i) + " overlap: their centres are " + detail::fmt(d) +
                                     " apart, less than 2r = " + detail::fmt(2 * inp.r));
    }
    grid.add(i, s.x[i], s.y[i]);
  }
  inp.has_states = true;
  return inp;
}

/// The report's generator (section 2.2, item 1): C's rand() seeded with `seed` (3210 in the report), positions uniform
/// in [r, L - r]^2 drawn again until the disc overlaps none placed before, velocity components uniform in magnitude in
/// [lo, hi] (the course's [L / (8r), L / 4] by default) with a random sign.
inline State generate(const Input& inp, unsigned seed, double lo, double hi) {
  State s;
  s.L = inp.L;
  s.r = inp.r;
  const Index n = inp.n;
  for (auto* v : {&s.x, &s.y, &s.vx, &s.vy}) v->assign(n, 0.0);
  s.disc_hits.assign(n, 0);
  s.wall_hits.assign(n, 0);
  std::srand(seed);
  auto uniform = [](double a, double b) { return a + (b - a) * (std::rand() / static_cast<double>(RAND_MAX)); };
  detail::OverlapFinder grid(inp.L, inp.r, n);
  for (Index i = 0; i < n; ++i) {
    for (int attempt = 0;; ++attempt) {
      if (attempt == 100000)
        throw InputError("could not place disc " + std::to_string(i) + " without overlap after 100000 attempts (N = " +
                         std::to_string(n) + " is too dense for L = " + detail::fmt(inp.L) + ")");
      s.x[i] = uniform(inp.r, inp.L - inp.r);
      s.y[i] = uniform(inp.r, inp.L - inp.r);
      if (grid.find(s, s.x[i], s.y[i]) < 0) break;
    }
    grid.add(i, s.x[i], s.y[i]);
    s.vx[i] = uniform(lo, hi) * (std::rand() % 2 ? -1 : 1);
    s.vy[i] = uniform(lo, hi) * (std::rand() % 2 ? -1 : 1);
  }
  return s;
}

// ---- output --------------------------------------------------------------------------------------------------------

/// The report's state lines: `step i x y vx vy`, and at the end `S i x y vx vy p_c w_c`.
inline void print_state(std::FILE* f, const State& s, long step, bool final_counts) {
  for (Index i = 0; i < s.size(); ++i) {
    if (final_counts)
      std::fprintf(f, "%ld %d %.8f %.8f %.8f %.8f %ld %ld\n", step, i, s.x[i], s.y[i], s.vx[i], s.vy[i], s.disc_hits[i],
                   s.wall_hits[i]);
    else
      std::fprintf(f, "%ld %d %.8f %.8f %.8f %.8f\n", step, i, s.x[i], s.y[i], s.vx[i], s.vy[i]);
  }
}

/// Index of the first disc whose final state differs in any bit (position, velocity or counts), or -1.
inline Index first_difference(const State& a, const State& b) {
  for (Index i = 0; i < a.size(); ++i) {
    const double u[4] = {a.x[i], a.y[i], a.vx[i], a.vy[i]}, v[4] = {b.x[i], b.y[i], b.vx[i], b.vy[i]};
    if (std::memcmp(u, v, sizeof u) != 0 || a.disc_hits[i] != b.disc_hits[i] || a.wall_hits[i] != b.wall_hits[i])
      return i;
  }
  return -1;
}

}  // namespace collisions
