#pragma once
/// @file
/// The Berkeley CS267 2D particle simulator (homework 2: serial, OpenMP, MPI and CUDA versions of one program) written
/// against cellint's public interface.
///
/// The course's rules, reproduced here:
///  - density 0.0005, mass 0.01, cutoff 0.01, min_r = cutoff / 100, dt 0.0005; a square box of side
///    sqrt(density * N) with reflecting walls;
///  - for every pair closer than the cutoff, with dx = x_neighbour - x_particle, r2 = max(|dx|^2, min_r^2),
///    r = sqrt(r2): a += (1 - cutoff / r) / r2 / mass * dx. The coefficient is negative inside the cutoff: the force
///    pushes the particle away from its neighbour, and vanishes at the cutoff;
///  - then v += a dt, x += v dt, and a particle past a wall is mirrored back with that velocity component flipped;
///  - initial positions on a regular sqrt(N)-wide grid, shuffled among the particles, and velocities uniform in
///    [-1, 1)^2, all drawn from srand48 / lrand48 / drand48 (here with a given seed instead of the clock);
///  - statistics of nearest approach, in units of the cutoff: each step, the smallest pair distance (starting at 1)
///    and the average distance over the pairs within the cutoff; over the run, absmin = the smallest of the first and
///    absavg = the average of the second over the steps that had a pair. A correct run keeps absmin > 0.4 and
///    absavg > 0.8 (particles that do not interact give absmin ~0.01-0.05 and absavg ~0.66).
///
/// How it is built on cellint:
///  - Positions live in a CellGrid over an open (non-periodic) box, velocities are attributes of the grid. The grid is
///    never re-binned, so slots stay fixed and the integrator works on them in place.
///  - Pairs come from a full NeighborList with a skin: rows hold the pairs within cutoff + skin, rebuilt on the
///    backend when a particle moved more than skin / 2. A full list because the statistics take a minimum, which the
///    half list's "add both sides" accumulators cannot carry; rows are short (~2.5 entries at the default skin), so
///    the full list's second evaluation of each pair costs little.
///  - One step is list.update(), interact() and the move kernel, plus a two-kernel reduction of the statistics on
///    steps that collect them. On GPUs the step is recorded once as a graph (StepGraph) and replayed.
///  - An O(N^2) double-precision implementation of the same rules (the course's serial code) runs beside it on
///    request, from the same initial state, and the final positions are compared.

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <map>
#include <memory>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <vector>

#include "cellint/cellint.hpp"

namespace particles2d {

using cellint::Index;

/// The course's constants (common.cpp).
constexpr double density = 0.0005;
constexpr double mass = 0.01;
constexpr double cutoff = 0.01;
constexpr double min_r = cutoff / 100;
constexpr double dt = 0.0005;

/// Thresholds of a correct run (the course's checker).
constexpr double absmin_limit = 0.4;
constexpr double absavg_limit = 0.8;

/// Parameters of a run (the command-line options of cellint_particles2d).
struct Options {
  long long n = 1000;                ///< particles
  int steps = 1000;                  ///< time steps (the course's NSTEPS)
  long seed = 1;                     ///< srand48 seed of the initial state
  int save_every = 10;               ///< trajectory frame every N steps (the course's SAVEFREQ)
  std::string output;                ///< trajectory file (empty: none)
  std::string json;                  ///< summary file (empty: none)
  int stats_every = 1;               ///< collect the statistics every N steps (0: never)
  double skin = cutoff;              ///< list rows hold the pairs within cutoff + skin
  bool check = false;                ///< exit 1 unless absmin > 0.4 and absavg > 0.8
  bool reference = false;            ///< also run the O(N^2) double-precision code and compare
  double tolerance = -1;             ///< largest accepted |x - x_ref| (< 0: by precision)
  std::string precision = "double";  ///< float | double
  std::string backend = "auto";      ///< host | emulated | cuda | auto
};

/// Default tolerance of the comparison with the reference, in box units (the cutoff is 0.01). In double the two codes
/// differ only in the order of the force sums, and collisions amplify those last-bit differences about 100-fold every
/// 100 steps: 400 particles agree to 1e-12 after 250 steps, to 7e-7 after 500. In float the positions' own rounding
/// (~3e-8 of the box) grows the same way: 3e-6 after 50 steps. Compare over a few hundred steps in double, about 50
/// in float.
inline double default_tolerance(const std::string& precision) { return precision == "float" ? 1e-4 : 1e-9; }

// ---- initial state (host, user order) ----------------------------------------------------------------------------

/// The drand48 family (POSIX): a 48-bit linear congruential generator. The course seeds it with srand48(time) and
/// draws the initial state from lrand48 and drand48; doing the same with a given seed reproduces the course's initial
/// particles for that seed, on any platform.
class Rand48 {
 public:
  explicit Rand48(long seed) : x_((static_cast<std::uint64_t>(static_cast<std::uint32_t>(seed)) << 16) | 0x330E) {}
  /// lrand48(): uniform in [0, 2^31).
  long lrand() { return static_cast<long>(next() >> 17); }
  /// drand48(): uniform in [0, 1), the 48 bits as the mantissa.
  double drand() { return static_cast<double>(next()) * (1.0 / 281474976710656.0); }

 private:
  std::uint64_t next() {
    x_ = (0x5DEECE66Dull * x_ + 0xB) & ((std::uint64_t(1) << 48) - 1);
    return x_;
  }
  std::uint64_t x_;
};

/// The course's initial particles (init_particles), in its order.
struct Initial {
  double size = 0;           ///< box side, sqrt(density * n)
  std::vector<double> x[2];  ///< positions
  std::vector<double> v[2];  ///< velocities
};

/// Places particle i at grid point k of a sx-by-sy grid spaced size / (sx + 1), where k runs through a shuffle of the
/// points (so that the particles are not spatially sorted), and gives it a velocity uniform in [-1, 1)^2.
inline Initial make_initial(long long n, long seed) {
  Initial s;
  s.size = std::sqrt(density * static_cast<double>(n));
  const long long sx = static_cast<long long>(std::ceil(std::sqrt(static_cast<double>(n))));
  const long long sy = (n + sx - 1) / sx;
  std::vector<long long> shuffle(static_cast<std::size_t>(n));
  for (long long i = 0; i < n; ++i) shuffle[static_cast<std::size_t>(i)] = i;
  for (int d = 0; d < 2; ++d) {
    s.x[d].resize(static_cast<std::size_t>(n));
    s.v[d].resize(static_cast<std::size_t>(n));
  }
  Rand48 r(seed);
  for (long long i = 0; i < n; ++i) {
    const auto ii = static_cast<std::size_t>(i);
    const auto j = static_cast<std::size_t>(r.lrand() % (n - i));
    const long long k = shuffle[j];
    shuffle[j] = shuffle[static_cast<std::size_t>(n - i - 1)];
    s.x[0][ii] = s.size * (1.0 + static_cast<double>(k % sx)) / static_cast<double>(1 + sx);
    s.x[1][ii] = s.size * (1.0 + static_cast<double>(k / sx)) / static_cast<double>(1 + sy);
    s.v[0][ii] = r.drand() * 2 - 1;
    s.v[1][ii] = r.drand() * 2 - 1;
  }
  return s;
}

// ---- the pair functors -------------------------------------------------------------------------------------------

/// The course's force on the target from one neighbour, added to a[]. cellint passes dr = x_target - x_source, the
/// opposite of the course's dx = x_neighbour - x_particle, hence the minus sign.
template <class Real>
CELLINT_HD void add_repulsion(Real (&a)[2], const cellint::Vec<Real, 2>& dr, Real r2, Real c, Real min_r2,
                              Real inv_mass) {
  r2 = r2 > min_r2 ? r2 : min_r2;
  const Real r = std::sqrt(r2);
  const Real coef = (Real(1) - c / r) / r2 * inv_mass;
  a[0] -= coef * dr[0];
  a[1] -= coef * dr[1];
}

/// The acceleration alone: steps that collect no statistics.
template <class Real>
struct Repulsion {
  struct Accum {
    Real a[2];  ///< acceleration
  };
  using AccumScalar = Real;  // addable: lets the GPU spread a row over several threads
  Real c, min_r2, inv_mass;
  static constexpr int flops = 12;
  CELLINT_HD void operator()(Accum& acc, const cellint::NoPayload&, const cellint::NoPayload&,
                             const cellint::Vec<Real, 2>& dr, Real r2) const {
    add_repulsion(acc.a, dr, r2, c, min_r2, inv_mass);
  }
};

/// The acceleration and the course's per-particle statistics of its pairs within the cutoff.
template <class Real>
struct RepulsionStats {
  struct Accum {
    Real a[2];   ///< acceleration
    Real dsum;   ///< sum of r / cutoff over the pairs (r > 0)
    Real dmin2;  ///< smallest r^2 of those pairs (cutoff^2 when none: the course's dmin starts at 1)
    int count;   ///< pairs counted in dsum
  };
  Real c, min_r2, inv_mass;
  static constexpr int flops = 18;
  CELLINT_HD Accum init() const { return Accum{{Real(0), Real(0)}, Real(0), c * c, 0}; }
  CELLINT_HD void operator()(Accum& acc, const cellint::NoPayload&, const cellint::NoPayload&,
                             const cellint::Vec<Real, 2>& dr, Real r2) const {
    if (r2 != Real(0)) {  // the course leaves coincident particles out of the statistics
      acc.dsum += std::sqrt(r2) / c;
      acc.dmin2 = r2 < acc.dmin2 ? r2 : acc.dmin2;
      ++acc.count;
    }
    add_repulsion(acc.a, dr, r2, c, min_r2, inv_mass);
  }
};

// ---- per-particle kernels ----------------------------------------------------------------------------------------

/// The course's move(): v += a dt, x += v dt, then mirror at the walls (flipping the velocity) until inside.
template <class Real, class Accum>
struct Move {
  Real* x[2];
  Real* v[2];
  const Accum* acc;
  Real dt, size;
  template <class A>
  CELLINT_HD void operator()(A&, Index i) const {
    for (int d = 0; d < 2; ++d) {
      Real vi = v[d][i] + acc[i].a[d] * dt;
      Real xi = x[d][i] + vi * dt;
      while (xi < Real(0) || xi > size) {
        xi = xi < Real(0) ? -xi : Real(2) * size - xi;
        vi = -vi;
      }
      v[d][i] = vi;
      x[d][i] = xi;
    }
  }
};

/// One step's statistics summed over some particles.
struct StepStats {
  double sum;                ///< sum of r / cutoff over the pairs
  unsigned long long count;  ///< pairs
  double min2;               ///< smallest r^2
};
CELLINT_HD inline void merge(StepStats& a, const StepStats& b) {
  a.sum += b.sum;
  a.count += b.count;
  a.min2 = b.min2 < a.min2 ? b.min2 : a.min2;
}

/// The statistics of the whole run so far (the course's absavg sum, nabsavg and absmin, as r^2).
struct RunStats {
  double avg_sum;  ///< sum over the steps with a pair of (sum r / cutoff) / pairs
  double min2;     ///< smallest r^2 of any step
  long long steps_with_pairs;
  long long steps;  ///< steps whose statistics were collected
};
CELLINT_HD inline void add_step(RunStats& r, const StepStats& s) {
  if (s.count) {
    r.avg_sum += s.sum / static_cast<double>(s.count);
    ++r.steps_with_pairs;
  }
  r.min2 = s.min2 < r.min2 ? s.min2 : r.min2;
  ++r.steps;
}

/// The block's threads' statistics merged by a tree in shared memory (block_size() StepStats, a power of two); the
/// result is valid in thread 0.
template <class Block>
CELLINT_HD StepStats merge_block(Block& b, const StepStats& s) {
  StepStats* sh = b.template shared<StepStats>();
  const unsigned t = b.thread_rank();
  sh[t] = s;
  b.sync();
  for (unsigned h = b.block_size() / 2; h > 0; h /= 2) {
    if (t < h) merge(sh[t], sh[t + h]);
    b.sync();
  }
  return sh[0];
}

/// GPU reduction, first stage: block k sums a grid-stride share of the particles and writes out[k]. A tree in shared
/// memory instead of atomics: one partial per block, in a fixed order, so the result does not depend on timing.
template <class Accum>
struct StatsBlocks {
  const Accum* acc;
  Index n;
  double c2;
  StepStats* out;
  template <class Block>
  CELLINT_HD void operator()(Block& b) const {
    StepStats s{0, 0, c2};
    const Index stride = static_cast<Index>(b.grid_size() * b.block_size());
    for (Index i = static_cast<Index>(b.block_rank() * b.block_size() + b.thread_rank()); i < n; i += stride)
      merge(s, StepStats{static_cast<double>(acc[i].dsum), static_cast<unsigned long long>(acc[i].count),
                         static_cast<double>(acc[i].dmin2)});
    const StepStats all = merge_block(b, s);
    if (b.thread_rank() == 0) out[b.block_rank()] = all;
  }
};

/// GPU reduction, second stage (one block): sums the first stage's partials and adds the step to the run's totals.
/// The totals stay on the device, so a recorded step needs no host round trip.
struct StatsFinish {
  const StepStats* in;
  Index n;
  double c2;
  RunStats* run;
  template <class Block>
  CELLINT_HD void operator()(Block& b) const {
    StepStats s{0, 0, c2};
    for (Index i = static_cast<Index>(b.thread_rank()); i < n; i += static_cast<Index>(b.block_size())) merge(s, in[i]);
    const StepStats all = merge_block(b, s);
    if (b.thread_rank() == 0) add_step(*run, all);
  }
};

/// Host reduction: lane k sums a contiguous share of the particles.
template <class Accum>
struct StatsLanes {
  const Accum* acc;
  Index n, lanes;
  double c2;
  StepStats* out;
  template <class A>
  CELLINT_HD void operator()(A&, Index lane) const {
    StepStats s{0, 0, c2};
    const auto lo = static_cast<Index>(static_cast<long long>(n) * lane / lanes);
    const auto hi = static_cast<Index>(static_cast<long long>(n) * (lane + 1) / lanes);
    for (Index i = lo; i < hi; ++i)
      merge(s, StepStats{static_cast<double>(acc[i].dsum), static_cast<unsigned long long>(acc[i].count),
                         static_cast<double>(acc[i].dmin2)});
    out[lane] = s;
  }
};

// ---- the course's serial code, in double, as the reference --------------------------------------------------------

/// What the O(N^2) reference ends with.
struct ReferenceResult {
  std::vector<double> x[2];  ///< final positions, user order
  RunStats stats{};
  double seconds = 0;
};

/// The course's serial simulation (serial.cpp: apply_force over all pairs, then move), written out separately from
/// the functors above so that a mistake in one does not hide in both.
inline ReferenceResult run_reference(const Initial& init, int steps, int stats_every) {
  const auto t0 = std::chrono::steady_clock::now();
  const std::size_t n = init.x[0].size();
  const double size = init.size;
  std::vector<double> x = init.x[0], y = init.x[1], vx = init.v[0], vy = init.v[1], ax(n), ay(n);
  ReferenceResult res;
  res.stats = RunStats{0, cutoff * cutoff, 0, 0};
  for (int step = 0; step < steps; ++step) {
    const bool stats = stats_every > 0 && step % stats_every == 0;
    StepStats st{0, 0, cutoff * cutoff};
    for (std::size_t i = 0; i < n; ++i) {
      ax[i] = ay[i] = 0;
      for (std::size_t j = 0; j < n; ++j) {
        if (j == i) continue;
        const double dx = x[j] - x[i], dy = y[j] - y[i];
        double r2 = dx * dx + dy * dy;
        if (r2 > cutoff * cutoff) continue;
        if (r2 != 0) {
          st.sum += std::sqrt(r2) / cutoff;
          st.min2 = std::min(st.min2, r2);
          ++st.count;
        }
        r2 = std::max(r2, min_r * min_r);
        const double r = std::sqrt(r2);
        const double coef = (1 - cutoff / r) / r2 / mass;
        ax[i] += coef * dx;
        ay[i] += coef * dy;
      }
    }
    for (std::size_t i = 0; i < n; ++i) {
      vx[i] += ax[i] * dt;
      vy[i] += ay[i] * dt;
      x[i] += vx[i] * dt;
      y[i] += vy[i] * dt;
      while (x[i] < 0 || x[i] > size) {
        x[i] = x[i] < 0 ? -x[i] : 2 * size - x[i];
        vx[i] = -vx[i];
      }
      while (y[i] < 0 || y[i] > size) {
        y[i] = y[i] < 0 ? -y[i] : 2 * size - y[i];
        vy[i] = -vy[i];
      }
    }
    if (stats) add_step(res.stats, st);
  }
  res.x[0] = std::move(x);
  res.x[1] = std::move(y);
  res.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return res;
}

/// absmin and absavg of a run's totals, in units of the cutoff.
inline double absmin_of(const RunStats& r) { return std::min(1.0, std::sqrt(r.min2) / cutoff); }
inline double absavg_of(const RunStats& r) {
  return r.steps_with_pairs ? r.avg_sum / static_cast<double>(r.steps_with_pairs) : 0.0;
}

// ---- the simulation ------------------------------------------------------------------------------------------------

/// What a run measured (also written to the JSON summary).
struct Result {
  double seconds = 0;            ///< wall time of the time-step loop (device synchronised at its end)
  RunStats stats{};              ///< the course's statistics
  long rebuilds = 0;             ///< list rebuilds in the loop
  std::vector<long> rebuilt_at;  ///< steps at which the list was rebuilt
  Index capacity = 0;            ///< row entries of the list at the end
  Index longest = 0;             ///< longest row found by the rebuilds
  int row_threads = 1;           ///< GPU threads per row on steps without statistics
  int max_per_cell = 0;          ///< fullest grid cell at the start
  std::vector<double> x[2];      ///< final positions, user order (for the reference comparison)
};

/// The simulation of `n` particles with `Real` positions on `Backend`.
template <class Backend, class Real>
class Simulation {
 public:
  using Grid = cellint::CellGrid<Backend, Real, 2>;
  using List = cellint::NeighborList<Backend, Real, 2>;
  using Force = Repulsion<Real>;
  using ForceStats = RepulsionStats<Real>;

  /// Bins the initial particles, attaches the velocities and builds the list.
  Simulation(const Options& o, const Initial& init)
      : o_(o),
        size_(static_cast<Real>(init.size)),
        grid_(cellint::Box<Real, 2>::cube(Real(0), size_, /*periodic=*/false), static_cast<Real>(cutoff),
              grid_options(o), stream_.get()),
        force_{static_cast<Real>(cutoff), static_cast<Real>(min_r * min_r), static_cast<Real>(1 / mass)},
        force_stats_{force_.c, force_.min_r2, force_.inv_mass} {
    n_ = static_cast<Index>(init.x[0].size());
    {
      std::vector<Real> x(init.x[0].begin(), init.x[0].end()), y(init.x[1].begin(), init.x[1].end());
      grid_.build({x.data(), y.data()}, n_);
    }
    for (int d = 0; d < 2; ++d) {
      std::vector<Real> v(init.v[d].begin(), init.v[d].end());
      vel_[d] = grid_.template attach<Real>(v.data());
    }
    acc_.resize(static_cast<std::size_t>(n_));
    acc_stats_.resize(static_cast<std::size_t>(n_));
    partial_blocks_ =
        gpu_like ? static_cast<Index>(std::max<long long>(
                       1, std::min<long long>((n_ + block - 1) / block, 8LL * Backend::properties().multiprocessors)))
                 : host_lanes;
    partials_.resize(static_cast<std::size_t>(partial_blocks_));
    run_stats_.resize(1);
    const RunStats zero{0, cutoff * cutoff, 0, 0};
    run_stats_.upload(&zero, grid_.stream());
    list_ = std::make_unique<List>(grid_, static_cast<Real>(o.skin));
  }

  Index size() const { return n_; }
  const Grid& grid() const { return grid_; }
  const List& list() const { return *list_; }

  /// Runs o.steps steps, writing trajectory frames to `traj` (may be null).
  Result run(FILE* traj) {
    Result res;
    res.max_per_cell = grid_.max_per_cell();
    const long builds0 = list_->check(grid_).builds;
    if (traj) std::fprintf(traj, "%d %g\n", n_, static_cast<double>(size_));
    const auto t0 = std::chrono::steady_clock::now();
    for (int step = 0; step < o_.steps; ++step) {
      const bool stats = o_.stats_every > 0 && step % o_.stats_every == 0;
      // recorded once per kind of step, then replayed as one graph on GPUs; the list decides on the device whether
      // to rebuild, so the recording serves every step
      (stats ? stats_graph_ : plain_graph_).run([&] { issue_step(stats); });
      // the list's log of rebuilds holds the last 4096; look often enough, rarely enough not to matter
      if ((step + 1) % 1000 == 0 && step + 1 < o_.steps) look_at_list(res);
      if (traj && o_.save_every > 0 && step % o_.save_every == 0) save(traj);
    }
    Backend::synchronize(grid_.stream());
    res.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    const cellint::ListStats st = look_at_list(res);
    res.rebuilds = st.builds - builds0;
    res.capacity = list_->capacity();
    res.row_threads = gpu_like ? static_cast<int>(list_->row_threads_for(n_)) : 1;
    run_stats_.download(&res.stats, grid_.stream());
    Backend::synchronize(grid_.stream());
    const auto x = grid_.positions_user_order();
    for (int d = 0; d < 2; ++d) res.x[d].assign(x[d].begin(), x[d].end());
    return res;
  }

 private:
  static constexpr bool gpu_like = Backend::is_gpu_like;
  static constexpr unsigned block = 256;   // threads of the reduction blocks (a power of two: the tree halves it)
  static constexpr Index host_lanes = 64;  // lanes of the host reduction

  // Cells at least cutoff + skin wide, as the list's: the grid is only binned once, and its own cells then cost less.
  static cellint::GridOptions<Real> grid_options(const Options& o) {
    cellint::GridOptions<Real> g;
    g.min_cell_width = static_cast<Real>(cutoff + o.skin);
    return g;
  }

  void issue_step(bool stats) {
    list_->update(grid_);  // packs the positions; rebuilds the rows on the backend when a particle moved > skin / 2
    Real* x[2] = {grid_.positions(0), grid_.positions(1)};
    Real* v[2] = {grid_.attribute(vel_[0]), grid_.attribute(vel_[1])};
    const Real step_dt = static_cast<Real>(dt);
    if (stats) {
      cellint::interact(*list_, grid_, force_stats_, acc_stats_.data());
      reduce_stats();  // the statistics are of the positions before the move, as the course takes them
      cellint::detail::parallel_for<Backend>(
          n_, Move<Real, typename ForceStats::Accum>{{x[0], x[1]}, {v[0], v[1]}, acc_stats_.data(), step_dt, size_},
          grid_.stream());
    } else {
      cellint::interact(*list_, grid_, force_, acc_.data());
      cellint::detail::parallel_for<Backend>(
          n_, Move<Real, typename Force::Accum>{{x[0], x[1]}, {v[0], v[1]}, acc_.data(), step_dt, size_},
          grid_.stream());
    }
  }

  void reduce_stats() {
    const double c2 = cutoff * cutoff;
    if constexpr (gpu_like) {
      const cellint::LaunchShape shape{static_cast<unsigned>(partial_blocks_), block, block * sizeof(StepStats)};
      Backend::launch(shape, StatsBlocks<typename ForceStats::Accum>{acc_stats_.data(), n_, c2, partials_.data()},
                      grid_.stream());
      Backend::launch(cellint::LaunchShape{1, block, block * sizeof(StepStats)},
                      StatsFinish{partials_.data(), partial_blocks_, c2, run_stats_.data()}, grid_.stream());
    } else {
      cellint::detail::parallel_for<Backend>(
          host_lanes, StatsLanes<typename ForceStats::Accum>{acc_stats_.data(), n_, host_lanes, c2, partials_.data()},
          grid_.stream(), (n_ + host_lanes - 1) / host_lanes);
      StepStats s{0, 0, c2};
      for (Index k = 0; k < host_lanes; ++k) merge(s, partials_.data()[k]);
      add_step(*run_stats_.data(), s);
    }
  }

  // Waits for the device; collects the rebuild steps. Rows that overflowed grew: the recordings point at old rows.
  cellint::ListStats look_at_list(Result& res) {
    cellint::ListStats st = list_->check(grid_);
    // update number u is the list's u-th update() since it was made: step u - 1 of this run
    for (long u : st.rebuilt_at) res.rebuilt_at.push_back(u - 1);
    res.longest = std::max(res.longest, st.longest);
    if (st.grew) {
      stats_graph_.reset();
      plain_graph_.reset();
    }
    return st;
  }

  // One frame of the course's trajectory format: "x y" per particle, in the course's order.
  void save(FILE* f) {
    const auto x = grid_.positions_user_order();
    for (Index i = 0; i < n_; ++i)
      std::fprintf(f, "%g %g\n", static_cast<double>(x[0][static_cast<std::size_t>(i)]),
                   static_cast<double>(x[1][static_cast<std::size_t>(i)]));
  }

  Options o_;
  Real size_;
  cellint::OwnStream<Backend> stream_;  // a stream of its own: steps are recorded as graphs on GPUs
  Grid grid_;
  Force force_;
  ForceStats force_stats_;
  std::unique_ptr<List> list_;
  cellint::StepGraph<Backend> stats_graph_{grid_.stream()};  // a step that collects the statistics
  cellint::StepGraph<Backend> plain_graph_{grid_.stream()};  // one that does not
  Index n_ = 0;
  cellint::Attribute<Real> vel_[2];
  cellint::Buffer<Backend, typename Force::Accum> acc_;
  cellint::Buffer<Backend, typename ForceStats::Accum> acc_stats_;
  Index partial_blocks_ = 1;
  cellint::Buffer<Backend, StepStats> partials_;
  cellint::Buffer<Backend, RunStats> run_stats_;
};

// ---- reporting -----------------------------------------------------------------------------------------------------

/// How the run compared with the reference.
struct Comparison {
  bool ran = false;
  double max_dx = 0;  ///< largest |x - x_ref| over particles and axes
  Index worst = 0;    ///< the particle where it is
  double tolerance = 0;
  double seconds = 0;
  double absmin = 0, absavg = 0;  ///< the reference's statistics
  bool ok() const { return max_dx <= tolerance; }
};

/// Writes the JSON summary of a run.
template <class Backend, class Real>
void write_json(FILE* f, const Options& o, const Result& r, const Comparison& cmp, const std::string& device,
                int threads, const Simulation<Backend, Real>& sim) {
  const auto& geo = sim.grid().geometry();
  const double absmin = absmin_of(r.stats), absavg = absavg_of(r.stats);
  std::fprintf(f, "{\n  \"program\": \"particles2d\",\n  \"cellint_version\": \"%s\",\n", CELLINT_VERSION_STRING);
  std::fprintf(f, "  \"backend\": \"%s\",\n  \"device\": \"%s\",\n  \"host_threads\": %d,\n", Backend::name(),
               device.c_str(), threads);
  std::fprintf(f, "  \"precision\": \"%s\",\n  \"particles\": %d,\n  \"steps\": %d,\n  \"seed\": %ld,\n",
               std::is_same<Real, double>::value ? "double" : "float", sim.size(), o.steps, o.seed);
  std::fprintf(
      f,
      "  \"density\": %.10g,\n  \"mass\": %.10g,\n  \"cutoff\": %.10g,\n  \"min_r\": %.10g,\n  \"dt\": %.10g,\n"
      "  \"box\": %.10g,\n",
      density, mass, cutoff, min_r, dt, static_cast<double>(geo.box.lengths[0]));
  std::fprintf(f, "  \"grid_cells\": [%d, %d],\n  \"cell_width\": %.10g,\n  \"max_per_cell\": %d,\n", geo.cells[0],
               geo.cells[1], static_cast<double>(geo.width[0]), r.max_per_cell);
  std::map<long, long> hist;  // rebuild interval (steps) -> how often
  long prev = 0;
  for (long s : r.rebuilt_at) {
    ++hist[s - prev];
    prev = s;
  }
  std::fprintf(f,
               "  \"list\": {\"kind\": \"full\", \"skin\": %.10g, \"reach\": %.10g, \"rebuilds\": %ld, "
               "\"mean_interval\": %.6g, \"capacity\": %d, \"longest_row\": %d, \"row_threads\": %d, "
               "\"rebuild_intervals\": {",
               o.skin, cutoff + o.skin, r.rebuilds, r.rebuilds ? static_cast<double>(o.steps) / r.rebuilds : 0.0,
               r.capacity, r.longest, r.row_threads);
  bool first = true;
  for (const auto& h : hist) {
    std::fprintf(f, "%s\"%ld\": %ld", first ? "" : ", ", h.first, h.second);
    first = false;
  }
  std::fprintf(f, "}},\n");
  const double ps = r.seconds > 0 ? static_cast<double>(sim.size()) * o.steps / r.seconds : 0;
  std::fprintf(f, "  \"seconds\": %.6g,\n  \"us_per_step\": %.6g,\n  \"particle_steps_per_s\": %.6g,\n", r.seconds,
               o.steps ? 1e6 * r.seconds / o.steps : 0.0, ps);
  std::fprintf(f,
               "  \"stats_every\": %d,\n  \"stats_steps\": %lld,\n  \"steps_with_pairs\": %lld,\n  \"absmin\": %.10g,\n"
               "  \"absavg\": %.10g,\n",
               o.stats_every, r.stats.steps, r.stats.steps_with_pairs, absmin, absavg);
  std::fprintf(f, "  \"check\": %s,\n",
               !o.check                                         ? "null"
               : absmin > absmin_limit && absavg > absavg_limit ? "\"passed\""
                                                                : "\"failed\"");
  if (cmp.ran)
    std::fprintf(f,
                 "  \"reference\": {\"max_dx\": %.6g, \"tolerance\": %.6g, \"passed\": %s, \"seconds\": %.6g, "
                 "\"absmin\": %.10g, \"absavg\": %.10g}\n}\n",
                 cmp.max_dx, cmp.tolerance, cmp.ok() ? "true" : "false", cmp.seconds, cmp.absmin, cmp.absavg);
  else
    std::fprintf(f, "  \"reference\": null\n}\n");
}

/// Runs the simulation described by `o` on `Backend` in `Real`, prints the summary and the checks. `traj` and `json`
/// are open files or null. Returns the exit code: 0, or 1 when a check failed.
template <class Backend, class Real>
int run(const Options& o, FILE* traj, FILE* json) {
  const cellint::DeviceProperties props = Backend::properties();
  const std::string device = props.name;
  const int threads = Backend::is_gpu_like ? 0 : props.multiprocessors;
  const Initial init = make_initial(o.n, o.seed);
  Simulation<Backend, Real> sim(o, init);
  const auto& geo = sim.grid().geometry();
  std::printf("cellint %s particles2d (CS267): %d particles, box %.6g, density %g, cutoff %g, dt %g, %d steps\n",
              CELLINT_VERSION_STRING, sim.size(), init.size, density, cutoff, dt, o.steps);
  std::printf("  backend %s (%s%s), precision %s, seed %ld\n", Backend::name(), device.c_str(),
              threads ? (", " + std::to_string(threads) + " threads").c_str() : "",
              std::is_same<Real, double>::value ? "double" : "float", o.seed);
  std::printf(
      "  grid %dx%d cells of width %.4g; full Verlet list, skin %g, rebuilt on the backend when a particle "
      "moved > skin/2\n",
      geo.cells[0], geo.cells[1], static_cast<double>(geo.width[0]), o.skin);
  std::fflush(stdout);

  const Result r = sim.run(traj);

  const double absmin = absmin_of(r.stats), absavg = absavg_of(r.stats);
  std::printf("n = %d, simulation time = %.6g seconds, absmin = %f, absavg = %f\n", sim.size(), r.seconds, absmin,
              absavg);
  std::printf("  %.4g us/step, %.4g particle-steps/s\n", o.steps ? 1e6 * r.seconds / o.steps : 0.0,
              r.seconds > 0 ? static_cast<double>(sim.size()) * o.steps / r.seconds : 0.0);
  std::printf("  list: %ld rebuilds in %d steps, %d row entries, longest row %d\n", r.rebuilds, o.steps, r.capacity,
              r.longest);
  int code = 0;
  if (o.check) {
    if (r.stats.steps_with_pairs == 0) {
      std::printf("Check FAILED: no pair came within the cutoff in any step (run more steps or particles)\n");
      code = 1;
    } else {
      const bool min_ok = absmin > absmin_limit, avg_ok = absavg > absavg_limit;
      std::printf("Check: absmin %f %s %g, absavg %f %s %g: %s\n", absmin, min_ok ? ">" : "<=", absmin_limit, absavg,
                  avg_ok ? ">" : "<=", absavg_limit, min_ok && avg_ok ? "passed" : "FAILED");
      if (!min_ok) std::printf("  the minimum distance is below 0.4: some particles are not interacting\n");
      if (!avg_ok) std::printf("  the average distance is below 0.8: most particles are not interacting\n");
      if (!min_ok || !avg_ok) code = 1;
    }
  }
  Comparison cmp;
  if (o.reference) {
    const ReferenceResult ref = run_reference(init, o.steps, o.stats_every);
    cmp.ran = true;
    cmp.seconds = ref.seconds;
    cmp.tolerance = o.tolerance >= 0 ? o.tolerance : default_tolerance(o.precision);
    cmp.absmin = absmin_of(ref.stats);
    cmp.absavg = absavg_of(ref.stats);
    for (int d = 0; d < 2; ++d)
      for (std::size_t i = 0; i < ref.x[d].size(); ++i) {
        const double e = std::fabs(r.x[d][i] - ref.x[d][i]);
        if (!(e <= cmp.max_dx)) {  // a NaN counts as the worst
          cmp.max_dx = std::isnan(e) ? HUGE_VAL : e;
          cmp.worst = static_cast<Index>(i);
        }
      }
    std::printf("Reference (O(N^2), double, %.3g s): absmin = %f, absavg = %f\n", ref.seconds, cmp.absmin, cmp.absavg);
    std::printf("Reference check: max |x - x_ref| = %.3g (particle %d) %s tolerance %.3g: %s\n", cmp.max_dx, cmp.worst,
                cmp.ok() ? "<=" : ">", cmp.tolerance, cmp.ok() ? "passed" : "FAILED");
    if (!cmp.ok()) code = 1;
  }
  if (json) write_json(json, o, r, cmp, device, threads, sim);
  return code;
}

}  // namespace particles2d
