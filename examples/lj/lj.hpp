#pragma once
/// @file
/// Lennard-Jones molecular dynamics with cellint: the LAMMPS `bench/in.lj` melt (fcc lattice at
/// rho* = 0.8442, T* = 1.44, r_c = 2.5 sigma, velocity Verlet NVE, dt = 0.005) written against
/// the library's public interface only.
///
/// How the state is kept, and why:
///  - Positions live in the CellGrid, in its sorted (cell) order, on the backend. The
///    integrator moves them in place through `grid.positions(d)`, then `grid.rebuild()` re-bins.
///  - Velocities are *attached attributes* of the grid (one array per axis), so every rebuild
///    permutes them together with the positions: slot i of every array is always the same atom.
///  - Forces come from `interact()` with `LennardJonesForces` (the force alone) into a backend
///    buffer, in the same sorted order. They need no permutation: the step below re-bins *between*
///    the two half kicks, after the old forces were last used. Thermo and trajectory steps run one
///    more pass with `LennardJones` (force, per-atom energy and virial), as LAMMPS computes
///    energies only on its thermo steps.
///  - Nothing is copied to the host during a step except the two small values rebuild() reads
///    (the largest cell count and the bad-input flag), one flag per step with a skin, and 3 x 256
///    partial sums on thermo steps (the reduction runs on the backend).
///
/// One time step (velocity Verlet):
///   v += dt/2 F/m;  x += dt v;   (kick + drift, one kernel)
///   rebuild the grid              (every step by default; see Options::skin)
///   F = interact(grid, lj)        (Auto picks the fastest strategy once, then reuses it)
///   v += dt/2 F/m                 (kick)
/// With a full neighbour list the second kick of one step and the first of the next are one kernel (v += dt F/m).
/// With --fuse yes the force pass applies it with the next drift to each atom as soon as its force is summed
/// (cellint::Epilogue), except where a thermo line or a frame reads the step's positions and velocities; on an H100
/// that is slower than the separate kernel (docs/lists.md), so it is off by default.
///
/// Every per-atom loop is a functor run by `detail::parallel_for<Backend>`, so the same code runs
/// on the Host backend (OpenMP) and on GPUs; this file has no backend-specific code.

#include <algorithm>
#include <array>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <map>
#include <memory>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <vector>

#include "cellint/cellint.hpp"

namespace lj {

using cellint::Index;

/// Parameters of a run (the command-line options of cellint_lj). Defaults reproduce LAMMPS's
/// bench/in.lj: 20x20x20 fcc unit cells = 32,000 atoms, 100 steps.
struct Options {
  int cells = 20;             ///< fcc unit cells per box side (4 atoms each; at least 5)
  int replicate[3] = {1, 1, 1};  ///< the box replicated along x, y, z (in.lj's x, y, z variables): cells x replicate
  /// fcc unit cells along axis d.
  int unit_cells(int d) const { return cells * replicate[d]; }
  double density = 0.8442;    ///< reduced number density rho* (sets the lattice constant)
  double temperature = 1.44;  ///< initial temperature T*
  double cutoff = 2.5;        ///< cutoff r_c in units of sigma
  double dt = 0.005;          ///< time step in units of tau
  int steps = 100;            ///< time steps to run
  int thermo = 10;            ///< thermo output every N steps (0: first and last step only)
  bool shifted = false;       ///< shift the potential to 0 at r_c (LAMMPS lj/cut does not)
  std::string list = "auto";  ///< none (cells every step) | full | half | auto (full on GPUs,
                              ///< half on the CPU; none when a strategy is named)
  double skin = -1;           ///< list: pairs within r_c + skin (default 0.3). No list: 0 (default)
                              ///< re-bins every step, > 0 widens the cells to r_c + skin and
                              ///< re-bins when an atom moved more than skin/2
  int neigh_every = 1;        ///< list: look at the displacements every N steps (LAMMPS every)
  bool neigh_check = true;    ///< list: false rebuilds every neigh_every steps (LAMMPS check no)
  std::string neigh_trigger = "auto";  ///< list: auto | pairs | half-skin (cellint::ListOptions::trigger)
  int sort_every = 1000;      ///< list: re-sort the atoms by cell every N steps (0: never)
  bool breakdown = false;     ///< time each phase (waits for the device at every phase)
  bool stats = false;         ///< print the statistics of the first force and energy passes (cellint::CallStats)
  std::string layout = "auto";  ///< list rows: auto | rows | columns (cellint::ListLayout)
  int row_threads = 0;          ///< list: GPU threads per row (cellint::ListOptions::row_threads; 0: automatic)
  int x_split = 0;              ///< list: list cells along X per cutoff + skin (cellint::ListOptions::x_split; 0: auto)
  bool graph = true;            ///< list steps recorded once and replayed as one graph (GPU backends)
  bool fuse = false;            ///< full list: the next step's kick and drift in the force pass (cellint::Epilogue;
                                ///< on an H100 4 % slower at 32,000 atoms, 7-11 % at 2M-16M: docs/lists.md)
  std::string precision = "double";  ///< float | double | mixed (float positions, double sums)
  std::string backend = "auto";      ///< host | cuda | emulated | auto
  std::string strategy = "auto";     ///< auto, or a strategy name (cellint::to_string)
  std::string xyz;                   ///< extended-XYZ trajectory file (empty: none)
  int every = 0;                     ///< XYZ frame every N steps (0: the final configuration only)
  int seed = 87287;                  ///< velocity seed (LAMMPS's `velocity ... loop geom` scheme)
  int equilibrate = 0;               ///< steps before the drift reference E(start) is taken
  double check_drift = -1;           ///< exit 1 if |E(end) - E(start)| per atom > this (< 0: off)
  std::string json;                  ///< summary file (empty: none)
};

/// One line of thermo output; energies are per atom, as LAMMPS prints them in lj units.
struct Thermo {
  long step = 0;       ///< time step
  double temp = 0;     ///< temperature, 2 KE / (3N - 3)
  double e_pair = 0;   ///< potential energy per atom
  double tot_eng = 0;  ///< total energy per atom
  double press = 0;    ///< pressure, (2 KE + W) / (3 V), W = sum over pairs of r.F
};

/// What a run measured (also written to the JSON summary).
struct Result {
  Index atoms = 0;                  ///< number of atoms
  double loop_s = 0;                ///< wall time of the time-step loop
  double loop_tuning_s = 0;         ///< part of it Auto spent timing strategies (new M_C bucket)
  double atom_steps_per_s = 0;      ///< atoms x steps / (loop_s - loop_tuning_s)
  double atom_steps_per_s_raw = 0;  ///< atoms x steps / loop_s
  long rebuilds = 0;                ///< grid rebuilds (no list) or list rebuilds in the loop
  long sorts = 0;                   ///< grid re-sorts in the loop (list mode)
  std::vector<long> rebuild_steps;  ///< steps at which the list was rebuilt (list mode)
  cellint::Index list_capacity = 0; ///< row entries of the list at the end
  cellint::Index row_threads = 0;   ///< GPU threads per row of the pair kernel (full lists; 1 on the CPU)
  bool pair_check = false;          ///< the list's displacement check looked at pairs (cellint::RebuildTrigger)
  long fused_steps = 0;             ///< steps whose force pass also kicked and drifted (Options::fuse)
  std::string strategy;             ///< strategy of the last interact() call
  bool strategy_changed = false;    ///< Auto switched strategy during the run
  double tuning_s = 0;              ///< time Auto spent timing strategies in the setup
  Index max_per_cell_start = 0;     ///< M_C, the fullest cell's atom count, at step 0
  Index max_per_cell_end = 0;       ///< M_C after the last step
  std::vector<Thermo> thermo;       ///< every thermo line
  long drift_from = 0;              ///< step of E(start)
  double e_start = 0, e_end = 0;    ///< total energy per atom at drift_from and at the end
  double drift = 0;                 ///< |e_end - e_start|
  double max_dev = 0;               ///< largest |E - E(start)| at thermo lines after drift_from

  double pair_s = 0, neigh_s = 0, integrate_s = 0, output_s = 0;  ///< net loop time by phase
};

// ---- initial state (host, user order) -----------------------------------------------------------

namespace detail {

/// The per-atom random stream of LAMMPS's `velocity all create T seed loop geom`: a Park-Miller
/// "minimal standard" generator (16807 x mod 2^31 - 1) whose state is a Jenkins one-at-a-time hash
/// of the seed and the atom's coordinates, warmed up by 5 draws. Seeding from the coordinates
/// makes the velocities independent of atom order and processor count, and following the same
/// scheme gives this program the very velocities LAMMPS starts in.lj with, so the two runs can be
/// compared step by step.
class GeomRandom {
 public:
  GeomRandom(int seed, const double (&x)[3]) {
    std::uint32_t h = 0;
    auto mix = [&h](const void* p, std::size_t n) {
      const signed char* c = static_cast<const signed char*>(p);  // LAMMPS hashes (signed) chars
      for (std::size_t i = 0; i < n; ++i) {
        h += static_cast<std::uint32_t>(static_cast<int>(c[i]));
        h += h << 10;
        h ^= h >> 6;
      }
    };
    mix(&seed, sizeof seed);
    mix(x, sizeof x);
    h += h << 3;
    h ^= h >> 11;
    h += h << 15;
    state_ = static_cast<int>(h & 0x7ffffffu);  // 27 bits, as LAMMPS keeps them
    if (state_ == 0) state_ = 1;
    for (int i = 0; i < 5; ++i) uniform();
  }
  /// Uniform in (0, 1).
  double uniform() {
    const int k = state_ / 127773;
    state_ = 16807 * (state_ - k * 127773) - 2836 * k;
    if (state_ < 0) state_ += 2147483647;
    return state_ * (1.0 / 2147483647);
  }

 private:
  int state_ = 1;
};

}  // namespace detail

/// Atoms on an fcc lattice and their initial velocities, in the user's (creation) order.
struct Lattice {
  double a = 0;              ///< lattice constant, (4 / rho)^(1/3)
  double box[3] = {0, 0, 0};  ///< box edges, cells x replicate x a
  /// The box's volume.
  double volume() const { return box[0] * box[1] * box[2]; }
  std::vector<double> x[3];  ///< positions
  std::vector<double> v[3];  ///< velocities
};

/// Why `o`'s lattice cannot be built (too many atoms for an int index), or empty.
inline std::string lattice_error(const Options& o) {
  const double atoms = 4.0 * o.cells * o.cells * o.cells * o.replicate[0] * o.replicate[1] * o.replicate[2];
  if (atoms > 2147483647.0)
    return "--cells " + std::to_string(o.cells) + " with --replicate " + std::to_string(o.replicate[0]) + "," +
           std::to_string(o.replicate[1]) + "," + std::to_string(o.replicate[2]) + " makes " +
           std::to_string(static_cast<long long>(atoms)) + " atoms; at most 2,147,483,647 fit the atom index";
  return {};
}

/// Builds `o.cells`^3 fcc unit cells, times `o.replicate` along each axis (LAMMPS `lattice fcc rho` + `create_atoms`
/// in in.lj's box of 20x x 20y x 20z cells: same positions
/// bit for bit, same order) and draws velocities as `velocity all create T seed loop geom` does:
/// uniform components in [-0.5, 0.5) per atom, total momentum removed, then scaled so that the
/// temperature is exactly T with 3N - 3 degrees of freedom.
inline Lattice make_fcc(const Options& o) {
  Lattice l;
  l.a = std::pow(4.0 / o.density, 1.0 / 3.0);
  int cells[3];
  for (int d = 0; d < 3; ++d) {
    cells[d] = o.unit_cells(d);
    l.box[d] = cells[d] * l.a;
  }
  static const double basis[4][3] = {{0, 0, 0}, {0.5, 0.5, 0}, {0.5, 0, 0.5}, {0, 0.5, 0.5}};
  const std::size_t n = 4 * static_cast<std::size_t>(cells[0]) * cells[1] * cells[2];
  for (int d = 0; d < 3; ++d) {
    l.x[d].reserve(n);
    l.v[d].reserve(n);
  }
  double p[3] = {0, 0, 0};
  for (int k = 0; k < cells[2]; ++k)
    for (int j = 0; j < cells[1]; ++j)
      for (int i = 0; i < cells[0]; ++i)
        for (const auto& b : basis) {
          const double x[3] = {(i + b[0]) * l.a, (j + b[1]) * l.a, (k + b[2]) * l.a};
          detail::GeomRandom r(o.seed, x);
          for (int d = 0; d < 3; ++d) {
            l.x[d].push_back(x[d]);
            l.v[d].push_back(r.uniform() - 0.5);  // unit mass: no 1/sqrt(m) factor
            p[d] += l.v[d].back();
          }
        }
  double v2 = 0;
  for (int d = 0; d < 3; ++d)
    for (double& v : l.v[d]) {
      v -= p[d] / static_cast<double>(n);
      v2 += v * v;
    }
  const double t = v2 / (3.0 * static_cast<double>(n) - 3.0);
  const double scale = std::sqrt(o.temperature / t);
  for (int d = 0; d < 3; ++d)
    for (double& v : l.v[d]) v *= scale;
  return l;
}

/// The periodic box of a lattice, from the origin.
template <class Real>
cellint::Box<Real, 3> box_of(const Lattice& l) {
  cellint::Box<Real, 3> b;
  for (int d = 0; d < 3; ++d) {
    b.origin[d] = Real(0);
    b.lengths[d] = static_cast<Real>(l.box[d]);
    b.periodic[d] = true;
  }
  return b;
}

// ---- per-atom kernels (one functor per loop; run by parallel_for on any backend) ----------------

// [lj-kick-drift]
/// First half of velocity Verlet: v += dt/2 F/m, then x += dt v.
template <class Real, class Acc, class Accum>
struct KickDrift {
  Real* x[3];
  Acc* v[3];
  const Accum* f;
  Acc half_dt_over_m, dt;
  template <class A>
  CELLINT_HD void operator()(A&, Index i) const {
    for (int d = 0; d < 3; ++d) {
      const Acc vi = velocity(i, d);
      v[d][i] = vi;
      x[d][i] = drifted(x[d][i], vi);
    }
  }
  /// Atom i's velocity after the kick, along d.
  CELLINT_HD Acc velocity(Index i, int d) const { return v[d][i] + half_dt_over_m * f[i].force[d]; }
  /// A position after the drift at velocity vi.
  CELLINT_HD Real drifted(Real xi, Acc vi) const { return xi + static_cast<Real>(dt * vi); }
};
// [lj-kick-drift]

/// The second half kick of this step and the first of the next, then the next step's drift, run by the force pass
/// on each atom's force as soon as its row is summed (cellint::Epilogue): v += dt F/m; x += dt v. The same arithmetic
/// as KickDrift joined, without storing the forces and reading them back. The rows read the list's packed positions,
/// not the grid's, so moving the grid's positions here races with nothing.
template <class Real, class Acc, class Accum>
struct KickDriftAfterForces {
  Real* x[3];
  Acc* v[3];
  Acc dt_over_m, dt;
  CELLINT_HD void operator()(Index i, const Accum& f) const {
    for (int d = 0; d < 3; ++d) {
      const Acc vi = v[d][i] + dt_over_m * f.force[d];
      v[d][i] = vi;
      x[d][i] += static_cast<Real>(dt * vi);
    }
  }
};

/// Second half of velocity Verlet: v += dt/2 F/m with the new forces.
template <class Acc, class Accum>
struct Kick {
  Acc* v[3];
  const Accum* f;
  Acc half_dt_over_m;
  template <class A>
  CELLINT_HD void operator()(A&, Index i) const {
    for (int d = 0; d < 3; ++d) v[d][i] += half_dt_over_m * f[i].force[d];
  }
};

/// First stage of the thermo sums: lane k writes out[3k + 0..2] = its share of the sums over atoms
/// of v^2, potential energy and virial, in double. On GPU-like backends lane k takes atoms k,
/// k + lanes, ... (neighbouring threads read neighbouring atoms); on the CPU a contiguous range.
/// No atomics: the result does not depend on thread timing.
template <class Acc, class Accum>
struct ThermoPartials {
  const Acc* v[3];
  const Accum* f;
  Index n, lanes;
  bool strided;
  double* out;
  template <class A>
  CELLINT_HD void operator()(A&, Index lane) const {
    double v2 = 0, pe = 0, w = 0;
    const Index begin =
        strided ? lane : static_cast<Index>(static_cast<long long>(n) * lane / lanes);
    const Index end =
        strided ? n : static_cast<Index>(static_cast<long long>(n) * (lane + 1) / lanes);
    const Index step = strided ? lanes : 1;
    for (Index i = begin; i < end; i += step) {
      for (int d = 0; d < 3; ++d) v2 += static_cast<double>(v[d][i]) * static_cast<double>(v[d][i]);
      pe += static_cast<double>(f[i].energy);
      w += static_cast<double>(f[i].virial);
    }
    out[3 * lane + 0] = v2;
    out[3 * lane + 1] = pe;
    out[3 * lane + 2] = w;
  }
};

/// Second stage: lane k of `lanes` sums the triples k, k + lanes, ... of the first stage's `n`.
struct SumTriples {
  const double* in;
  Index n, lanes;
  double* out;
  template <class A>
  CELLINT_HD void operator()(A&, Index lane) const {
    double s[3] = {0, 0, 0};
    for (Index i = lane; i < n; i += lanes)
      for (int q = 0; q < 3; ++q) s[q] += in[3 * i + q];
    for (int q = 0; q < 3; ++q) out[3 * lane + q] = s[q];
  }
};

/// Sets moved[0] to 1 when some atom moved farther than sqrt(limit2) since the last rebuild; with `ref2`, also
/// moved[1] to 1 when some atom moved farther than sqrt(limit2b) since the positions ref2 holds, and, with limit2c > 0,
/// moved[2] to 1 when one moved farther than sqrt(limit2c) since them. The second distance counts the axes whose ref2
/// is set only (none set: no second check).
template <class Real>
struct MovedTooFar {
  const Real* x[3];
  const Real* ref[3];
  Real limit2;
  unsigned* moved;
  const Real* ref2[3] = {nullptr, nullptr, nullptr};
  Real limit2b = 0;
  Real limit2c = 0;
  template <class A>
  CELLINT_HD void operator()(A& atomics, Index i) const {
    Real r2 = 0, r2b = 0;
    bool second = false;
    for (int d = 0; d < 3; ++d) {
      const Real xi = x[d][i], dx = xi - ref[d][i];
      r2 += dx * dx;
      if (ref2[d]) {
        const Real dy = xi - ref2[d][i];
        r2b += dy * dy;
        second = true;
      }
    }
    // (a non-finite position counts as moved: the rebuild that follows reports it)
    if (!(r2 <= limit2)) atomics.atomic_max(moved, 1u);
    if (second && !(r2b <= limit2b)) atomics.atomic_max(moved + 1, 1u);
    if (second && limit2c > 0 && !(r2b <= limit2c)) atomics.atomic_max(moved + 2, 1u);
  }
};

// ---- the simulation -----------------------------------------------------------------------------

/// --neigh-trigger's names (cellint::ListOptions::trigger): auto, pairs, half-skin.
inline bool is_trigger_name(const std::string& s) { return s == "auto" || s == "pairs" || s == "half-skin"; }
inline cellint::RebuildTrigger trigger_of(const std::string& s) {
  return s == "pairs" ? cellint::RebuildTrigger::Pairs
         : s == "half-skin" ? cellint::RebuildTrigger::HalfSkin
                            : cellint::RebuildTrigger::Auto;
}

/// Reads a strategy name ("auto", "x-pencil", "cell-loop-half", ...).
/// @throws std::invalid_argument listing the valid names
inline cellint::StrategyKind parse_strategy(const std::string& s) {
  if (const auto k = cellint::strategy_from_name(s)) return *k;
  throw std::invalid_argument("unknown strategy '" + s + "' (one of: " + cellint::strategy_names() + ")");
}

/// The neighbour-list mode a run uses: none, full or half.
template <class Backend>
std::string list_mode(const Options& o) {
  if (o.list != "auto") return o.list;
  if (o.strategy != "auto") return "none";  // a named cell strategy
  // a list needs 3 of its cells (width cutoff + skin) along each side of the box (the narrowest)
  const double box =
      std::min(o.unit_cells(0), std::min(o.unit_cells(1), o.unit_cells(2))) * std::pow(4.0 / o.density, 1.0 / 3.0);
  if (box < 3.0 * (o.cutoff + (o.skin >= 0 ? o.skin : 0.3))) return "none";
  return Backend::is_gpu_like ? "full" : "half";
}

/// The LJ functors' arithmetic: cellint::FastMath, the GPU's reciprocal in float (one instruction, about 1 ulp; see
/// docs/functors.md), as GPU MD codes build their kernels (OpenMM's CUDA platform compiles with --use_fast_math). It
/// changes GPU runs with float positions only: double precision and the host divide exactly either way. A build with
/// -DCELLINT_LJ_MATH=cellint::ExactMath takes the IEEE division everywhere.
#ifndef CELLINT_LJ_MATH
#  define CELLINT_LJ_MATH cellint::FastMath
#endif
/// "fast" or "exact": the division the LJ functors run on `Backend` with `Real` positions (the JSON's `math`).
template <class Backend, class Real>
const char* lj_math_name() {
  const bool fast = std::is_same<CELLINT_LJ_MATH, cellint::FastMath>::value && Backend::device_memory &&
                    std::is_same<Real, float>::value;
  return fast ? "fast" : "exact";
}

/// An LJ system of `Real` positions (float or double) and `Acc` velocities, forces and energy
/// sums on `Backend`.
template <class Backend, class Real, class Acc>
class Simulation {
 public:
  using Grid = cellint::CellGrid<Backend, Real, 3>;
  using Potential = cellint::LennardJones<Real, 3, Acc, CELLINT_LJ_MATH>;
  using Accum = typename Potential::Accum;  // force, energy, virial: thermo steps
  using ForcesOnly = cellint::LennardJonesForces<Real, 3, Acc, CELLINT_LJ_MATH>;
  using Force = typename ForcesOnly::Accum;  // the force alone: every step
  using List = cellint::NeighborList<Backend, Real, 3>;

  /// Builds the lattice, bins it and attaches the velocities.
  explicit Simulation(const Options& o)
      : o_(o),
        lattice_(make_fcc(o)),
        grid_(box_of<Real>(lattice_), static_cast<Real>(o.cutoff), grid_options(o), stream_.get()),
        lj_(Potential::make(Real(1), Real(1), static_cast<Real>(o.cutoff), o.shifted)),
        lj_forces_(lj_),
        strategy_(parse_strategy(o.strategy)),
        mode_(list_mode<Backend>(o)) {
    // [lj-setup]
    n_ = static_cast<Index>(lattice_.x[0].size());
    std::vector<Real> x[3];
    for (int d = 0; d < 3; ++d) x[d].assign(lattice_.x[d].begin(), lattice_.x[d].end());
    grid_.build({x[0].data(), x[1].data(), x[2].data()}, n_);
    for (int d = 0; d < 3; ++d) {
      std::vector<Acc> v(lattice_.v[d].begin(), lattice_.v[d].end());
      vel_[d] = grid_.template attach<Acc>(v.data());
    }
    forces_.resize(static_cast<std::size_t>(n_));
    energies_.resize(static_cast<std::size_t>(n_));
    // [lj-setup]
    partials_.resize(3 * (Index(1) << 16));
    totals_.resize(3 * 256);
    moved_.resize(1);
    if (mode_ != "none") {
      cellint::ListOptions lo;
      lo.half = mode_ == "half";
      lo.every = o_.neigh_every;
      lo.row_threads = o_.row_threads;
      lo.x_split = o_.x_split;
      lo.check = o_.neigh_check;
      lo.trigger = trigger_of(o_.neigh_trigger);
      lo.layout = o_.layout == "rows"      ? cellint::ListLayout::Rows
                  : o_.layout == "columns" ? cellint::ListLayout::Columns
                                           : cellint::ListLayout::Auto;
      list_ = std::make_unique<List>(grid_, static_cast<Real>(skin(o_)), lo);
    } else if (o_.skin > 0) {
      for (auto& r : ref_) r.resize(static_cast<std::size_t>(n_));
    }
    volume_ = lattice_.volume();
  }

  /// Number of atoms.
  Index size() const { return n_; }
  /// The grid (geometry, sorted arrays).
  const Grid& grid() const { return grid_; }
  /// none, full or half.
  const std::string& mode() const { return mode_; }
  /// Whether the list's displacement check looks at pairs.
  bool checks_pairs() const { return list_ && list_->checks_pairs(); }
  /// The list skin of a run (0.3 by default), or the cell skin without a list.
  static double skin(const Options& o) {
    return o.skin >= 0 ? o.skin : list_mode<Backend>(o) != "none" ? 0.3 : 0.0;
  }

  /// Runs o.steps steps with thermo output on stdout (and XYZ frames when asked).
  Result run() {
    Result res;
    res.atoms = n_;
    res.max_per_cell_start = grid_.max_per_cell();
    typename Backend::Timer t_int(grid_.stream()), t_neigh(grid_.stream()), t_pair(grid_.stream());

    // setup: forces of the initial configuration (Auto tunes here, outside the timed loop)
    if (!list_ && o_.skin > 0) save_reference();
    const long builds0 = list_ ? list_->check(grid_).builds : 0;
    compute_forces();
    FILE* xyz = open_xyz();
    if (o_.fuse && !(fuses() && o_.graph && !o_.breakdown && o_.neigh_every == 1))
      std::printf(
          "# --fuse yes has no effect here: it needs a full list and recorded steps (--graph yes, no "
          "--breakdown, --neigh-every 1)\n");
    thermo_header();
    record(res, 0);  // (the energy functor's first call: Auto times it here, in the setup too)
    if (xyz && (o_.every > 0 || o_.steps == 0)) write_xyz(xyz, 0);
    res.drift_from = std::min<long>(o_.equilibrate, o_.steps);
    if (res.drift_from == 0) res.e_start = res.thermo.back().tot_eng;

    const double setup_tuning_s = tuning_s_;
    const auto t0 = std::chrono::steady_clock::now();
    for (long step = 1; step <= o_.steps; ++step) {
      const bool sort = list_ && o_.sort_every > 0 && step % o_.sort_every == 0;
      const bool last = step == o_.steps;
      const bool thermo = last || step == res.drift_from || (o_.thermo > 0 && step % o_.thermo == 0);
      const bool frame = xyz && (last || (o_.every > 0 && step % o_.every == 0));
      if (list_ && o_.graph && !o_.breakdown && o_.neigh_every == 1 && !sort) {
        // one velocity-Verlet step with a list (docs/lj.md quotes this block): recorded once, then launched as one
        // graph on GPUs; the list decides on the device whether to rebuild, so the recording serves every step until
        // something is reallocated. The second half kick waits for the next step's first, and the two are one kernel
        // (v += dt F/m, as leapfrog): it is applied alone only where velocities are read. With --fuse yes and a full
        // list that kernel runs inside the force pass (an epilogue on each atom's force), which then also drifts the
        // atoms for the next step: the positions are then a step ahead of the forces and the velocities half a step
        // (v(n + 1/2)) until a thermo step.
        // [lj-step]
        const int kick = advanced_ ? 0 : kick_pending_ ? 2 : 1;  // none (done by the last force pass), joined, half
        const bool fuse = fuses() && !thermo && !frame;          // (thermo and frames read x and v at this step)
        graph(kick, fuse).run([&] {
          if (kick) kick_drift(kick == 2);  // v += dt/2 F/m (dt F/m: the previous step's second half too); x += dt v
          list_->update(grid_);             // displacement check; rebuild on the device when needed
          if (fuse)
            compute_forces_then_kick_drift();  // the forces, each then applied at once: v += dt F/m; x += dt v
          else
            compute_forces();  // forces_[i] = sum over the list's neighbours j of LJ(x_i - x_j)
        });
        advanced_ = fuse;
        kick_pending_ = !fuse;
        res.fused_steps += fuse;
        if (thermo || frame) settle_kick();  // v += dt/2 F/m
        // [lj-step]
      } else {
        settle_kick();
        step_by_phase(res, sort, t_int, t_neigh, t_pair);
      }

      const auto o0 = std::chrono::steady_clock::now();
      if (thermo) {
        if (list_) look_at_list(res);
        record(res, step);
        if (step == res.drift_from) res.e_start = res.thermo.back().tot_eng;
        if (step > res.drift_from)
          res.max_dev = std::max(res.max_dev, std::fabs(res.thermo.back().tot_eng - res.e_start));
        progress(step,
                 std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
      }
      if (frame) write_xyz(xyz, step);
      res.output_s += std::chrono::duration<double>(std::chrono::steady_clock::now() - o0).count();
    }
    Backend::synchronize(grid_.stream());
    res.loop_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    if (list_) {
      res.rebuilds = look_at_list(res).builds - builds0;
      res.list_capacity = list_->capacity();
      res.pair_check = list_->checks_pairs();
      res.row_threads = Backend::is_gpu_like && !list_->half() ? list_->row_threads_for(grid_.size()) : 1;
    }
    if (xyz) std::fclose(xyz);

    // Auto's timing runs are a one-off cost (once per grid shape and M_C power of two); the
    // throughput leaves them out, like LAMMPS's loop time leaves out its setup.
    res.tuning_s = setup_tuning_s;
    res.loop_tuning_s = tuning_s_ - setup_tuning_s;
    res.pair_s -= res.loop_tuning_s;  // the breakdown, too, is of the net loop time
    const double atom_steps = static_cast<double>(n_) * o_.steps;
    res.atom_steps_per_s_raw = res.loop_s > 0 ? atom_steps / res.loop_s : 0;
    res.atom_steps_per_s =
        res.loop_s - res.loop_tuning_s > 0 ? atom_steps / (res.loop_s - res.loop_tuning_s) : 0;
    res.e_end = res.thermo.back().tot_eng;
    res.drift = std::fabs(res.e_end - res.e_start);
    res.max_per_cell_end = grid_.max_per_cell();
    res.strategy = list_ ? "verlet-list-" + mode_ : cellint::to_string(last_strategy_);
    res.strategy_changed = strategy_changed_;
    return res;
  }

 private:
  static cellint::GridOptions<Real> grid_options(const Options& o) {
    cellint::GridOptions<Real> g;
    if (o.skin > 0) g.min_cell_width = static_cast<Real>(o.cutoff + o.skin);
    return g;
  }
  static constexpr bool gpu_like = Backend::is_gpu_like;
  std::array<Acc*, 3> velocities() {
    return {grid_.attribute(vel_[0]), grid_.attribute(vel_[1]), grid_.attribute(vel_[2])};
  }

  // [lj-kick-drift-call]
  void kick_drift(bool joined = false) {  // joined: the previous step's second half kick comes first
    const auto v = velocities();  // re-read every step: rebuild() swaps the buffers
    KickDrift<Real, Acc, Force> k{{grid_.positions(0), grid_.positions(1), grid_.positions(2)},
                                  {v[0], v[1], v[2]},
                                  forces_.data(),
                                  static_cast<Acc>((joined ? 1.0 : 0.5) * o_.dt / mass),
                                  static_cast<Acc>(o_.dt)};
    cellint::detail::parallel_for<Backend>(n_, k, grid_.stream());
  }
  // [lj-kick-drift-call]

  void settle_kick() {  // the second half kick of a recorded step, where the velocities are read or a step follows
    if (!kick_pending_) return;
    kick();
    kick_pending_ = false;
  }

  void kick() {
    const auto v = velocities();
    Kick<Acc, Force> k{{v[0], v[1], v[2]}, forces_.data(), static_cast<Acc>(0.5 * o_.dt / mass)};
    cellint::detail::parallel_for<Backend>(n_, k, grid_.stream());
  }

  // One step launched kernel by kernel: without a list (re-binned when needed), on a re-sort step, with
  // ListOptions::every > 1 (a host-side choice a recording would freeze), or timed per phase (--breakdown).
  template <class Timer>
  void step_by_phase(Result& res, bool sort, Timer& t_int, Timer& t_neigh, Timer& t_pair) {
    const bool timed = o_.breakdown;  // per-phase timers wait for the device
    if (timed) t_int.start();
    if (!advanced_) kick_drift();  // (else the last force pass kicked and drifted)
    advanced_ = false;
    if (timed) {
      t_int.stop();
      res.integrate_s += 1e-3 * t_int.elapsed_ms();  // read before the timer is reused below
      t_neigh.start();
    }
    if (list_) {
      if (sort) {
        grid_.rebuild();  // re-sorts by cell (locality); the list then rebuilds at once
        ++res.sorts;
        reset_graphs();  // positions and velocities moved to the other buffers
      }
      list_->update(grid_);
    } else if (needs_rebuild()) {
      grid_.rebuild();  // re-bins positions; velocities (attributes) follow
      ++res.rebuilds;
      if (o_.skin > 0) save_reference();
    }
    if (timed) {
      t_neigh.stop();
      t_pair.start();
    }
    compute_forces();
    if (timed) {
      t_pair.stop();
      t_int.start();
    }
    kick();
    if (timed) {
      t_int.stop();
      res.integrate_s += 1e-3 * t_int.elapsed_ms();
      res.neigh_s += 1e-3 * t_neigh.elapsed_ms();
      res.pair_s += 1e-3 * t_pair.elapsed_ms();
    }
  }

  // Collects the list's rebuild steps (waits for the device: thermo steps only).
  cellint::ListStats look_at_list(Result& res) {
    cellint::ListStats st = list_->check(grid_);
    for (long u : st.rebuilt_at) res.rebuild_steps.push_back(u);
    if (st.grew) reset_graphs();  // the rows were reallocated
    return st;
  }
  void reset_graphs() {
    for (auto& g : graphs_) g.reset();
  }
  // The recorded list step for a kick before it (0: none, 1: half, 2: joined) and a force pass with or without the
  // kick and drift after it. (With fuses(), a joined kick is left pending only by thermo and frame steps, which settle
  // it: graph(2, true) is never recorded.)
  cellint::StepGraph<Backend>& graph(int kick, bool fuse) { return graphs_[static_cast<std::size_t>(2 * kick + fuse)]; }
  // Whether list steps may fold the kick and drift into the force pass (a full list: each force is complete when its
  // row is summed).
  bool fuses() const { return o_.fuse && list_ && !list_->half(); }

  // [lj-forces]
  void compute_forces() {  // the force alone (LennardJonesForces): every step
    const cellint::Report rep = pass(lj_forces_, forces_.data());
    if (list_) return;
    if (have_strategy_ && rep.strategy != last_strategy_) strategy_changed_ = true;
    last_strategy_ = rep.strategy;
    have_strategy_ = true;
  }
  void compute_energies() { pass(lj_, energies_.data()); }  // force, energy, virial: thermo and trajectory steps
  template <class F, class Out>
  cellint::Report pass(const F& f, Out out) {  // one interact() over the list, or over the cells (Auto or named)
    cellint::Tuning t;
    t.statistics = o_.stats && stats_shown_ < 2;  // (the first force and energy passes; --stats)
    cellint::Report rep;
    if constexpr (std::is_pointer<Out>::value)
      rep = list_ ? cellint::interact(*list_, grid_, f, out, t) : cellint::interact_with(strategy_, grid_, f, out, t);
    else
      rep = cellint::interact(*list_, grid_, f, out, t);  // (an epilogue: lists only)
    if (t.statistics)
      std::printf("# stats, %s pass: %s\n", stats_shown_++ ? "second" : "first",
                  cellint::describe(rep, list_ ? (list_->half() ? "half list" : "full list") : nullptr).c_str());
    tuning_s_ += 1e-3 * rep.tuning_ms;
    return rep;
  }
  // [lj-forces]

  void compute_forces_then_kick_drift() {  // a full list: the kick and drift as each force is summed (no forces_)
    const auto v = velocities();
    const KickDriftAfterForces<Real, Acc, Force> then{{grid_.positions(0), grid_.positions(1), grid_.positions(2)},
                                                      {v[0], v[1], v[2]},
                                                      static_cast<Acc>(o_.dt / mass),
                                                      static_cast<Acc>(o_.dt)};
    pass(lj_forces_, cellint::epilogue(then));
  }

  // Skin mode: re-bin once some atom moved more than skin/2 since the last rebuild (then no pair
  // closer than r_c can be two cells apart). Without a skin: every step.
  bool needs_rebuild() {
    if (o_.skin <= 0) return true;
    moved_.fill_bytes(0, grid_.stream());
    const Real half = static_cast<Real>(0.5 * o_.skin);
    MovedTooFar<Real> k{{grid_.positions(0), grid_.positions(1), grid_.positions(2)},
                        {ref_[0].data(), ref_[1].data(), ref_[2].data()},
                        half * half,
                        moved_.data()};
    cellint::detail::parallel_for<Backend>(n_, k, grid_.stream());
    unsigned moved = 0;
    moved_.download(&moved, grid_.stream());
    return moved != 0;
  }

  void save_reference() {
    for (int d = 0; d < 3; ++d)
      Backend::copy(ref_[d].data(), grid_.positions(d), sizeof(Real) * static_cast<std::size_t>(n_),
                    cellint::CopyKind::DeviceToDevice, grid_.stream());
  }

  Thermo measure(long step) {
    // two reduction stages on the backend, the last few hundred values summed here
    const auto v = velocities();
    const Index l1 =
        std::max<Index>(1, std::min<Index>(n_, gpu_like ? Index(1) << 16 : Index(256)));
    const Index l2 = std::min<Index>(l1, 256);
    compute_energies();  // at the current positions (the step's forces came from LennardJonesForces)
    ThermoPartials<Acc, Accum> k1{{v[0], v[1], v[2]}, energies_.data(), n_, l1, gpu_like, nullptr};
    k1.out = partials_.data();
    // each of the l1 lanes sums about n_ / l1 atoms (the Host backend shares loops by work)
    cellint::detail::parallel_for<Backend>(l1, k1, grid_.stream(), (n_ + l1 - 1) / l1);
    cellint::detail::parallel_for<Backend>(l2, SumTriples{partials_.data(), l1, l2, totals_.data()},
                                           grid_.stream());
    std::vector<double> h(3 * static_cast<std::size_t>(l2));
    Backend::copy(h.data(), totals_.data(), sizeof(double) * h.size(),
                  cellint::CopyKind::DeviceToHost, grid_.stream());
    double s[3] = {0, 0, 0};
    for (Index i = 0; i < l2; ++i)
      for (int q = 0; q < 3; ++q) s[q] += h[3 * static_cast<std::size_t>(i) + q];
    const double ke = 0.5 * mass * s[0];
    const double dof = 3.0 * n_ - 3.0;  // momentum is conserved: LAMMPS's compute temp
    Thermo t;
    t.step = step;
    t.temp = 2 * ke / dof;
    t.e_pair = s[1] / n_;
    t.tot_eng = (ke + s[1]) / n_;
    // LAMMPS: P = (dof T + W) / (3V) = (2 KE + W) / (3V); sum_i virial_i counts each pair's r.F
    // once (the functor adds half of it to each partner).
    t.press = (2 * ke + s[2]) / (3 * volume_);
    return t;
  }

  void record(Result& res, long step) {
    res.thermo.push_back(measure(step));
    const Thermo& t = res.thermo.back();
    std::printf("%8ld %12.8g %12.8g %12.8g %12.8g\n", t.step, t.temp, t.e_pair, t.tot_eng, t.press);
  }
  static void thermo_header() {
    std::printf("%8s %12s %12s %12s %12s\n", "Step", "Temp", "E_pair", "TotEng", "Press");
  }
  void progress(long step, double elapsed) const {
    std::printf("# step %ld/%d  %.3f s  %.4g atom-steps/s\n", step, o_.steps, elapsed,
                elapsed > 0 ? static_cast<double>(n_) * step / elapsed : 0.0);
    std::fflush(stdout);
  }

  FILE* open_xyz() const {
    if (o_.xyz.empty()) return nullptr;
    FILE* f = std::fopen(o_.xyz.c_str(), "w");
    if (!f) throw std::runtime_error("cannot write " + o_.xyz);
    return f;
  }

  /// One extended-XYZ frame (OVITO, ASE): atoms in creation order, positions wrapped into the box.
  void write_xyz(FILE* f, long step) {
    const auto x = grid_.positions_user_order();
    const auto v = velocities();
    std::vector<Acc> vu[3];
    for (int d = 0; d < 3; ++d) vu[d] = grid_.to_user_order(static_cast<const Acc*>(v[d]));
    compute_energies();
    const std::vector<Accum> acc = grid_.to_user_order(static_cast<const Accum*>(energies_.data()));
    const double* L = lattice_.box;
    std::fprintf(f, "%d\n", n_);
    std::fprintf(f,
                 "Lattice=\"%.10g 0 0 0 %.10g 0 0 0 %.10g\" Origin=\"0 0 0\" pbc=\"T T T\" "
                 "Properties=species:S:1:id:I:1:pos:R:3:velo:R:3:pe:R:1:ke:R:1 Time=%.6g Step=%ld\n",
                 L[0], L[1], L[2], step * o_.dt, step);
    for (Index i = 0; i < n_; ++i) {
      double p[3], w[3], v2 = 0;
      for (int d = 0; d < 3; ++d) {
        p[d] = static_cast<double>(x[d][i]);
        p[d] -= L[d] * std::floor(p[d] / L[d]);
        w[d] = static_cast<double>(vu[d][i]);
        v2 += w[d] * w[d];
      }
      std::fprintf(f, "A %d %.7g %.7g %.7g %.7g %.7g %.7g %.7g %.7g\n", i + 1, p[0], p[1], p[2],
                   w[0], w[1], w[2], static_cast<double>(acc[i].energy), 0.5 * mass * v2);
    }
    std::fflush(f);
  }

  static constexpr double mass = 1.0;

  Options o_;
  Lattice lattice_;
  cellint::OwnStream<Backend> stream_;  // a stream of its own: list steps are recorded as graphs on GPUs
  Grid grid_;
  Potential lj_;
  ForcesOnly lj_forces_;
  cellint::StrategyKind strategy_;
  std::string mode_;
  std::unique_ptr<List> list_;
  // the recorded list steps (graph())
  std::array<cellint::StepGraph<Backend>, 6> graphs_{
      cellint::StepGraph<Backend>{grid_.stream()}, cellint::StepGraph<Backend>{grid_.stream()},
      cellint::StepGraph<Backend>{grid_.stream()}, cellint::StepGraph<Backend>{grid_.stream()},
      cellint::StepGraph<Backend>{grid_.stream()}, cellint::StepGraph<Backend>{grid_.stream()}};
  bool kick_pending_ = false;  // the last recorded step's second half kick is not applied yet
  bool advanced_ = false;      // the last force pass kicked and drifted: x and v are the next step's (Options::fuse)
  Index n_ = 0;
  cellint::Attribute<Acc> vel_[3];
  cellint::Buffer<Backend, Force> forces_;     // every step
  cellint::Buffer<Backend, Accum> energies_;   // thermo and trajectory steps
  cellint::Buffer<Backend, double> partials_, totals_;  // thermo reduction stages
  cellint::Buffer<Backend, unsigned> moved_;
  cellint::Buffer<Backend, Real> ref_[3];
  double volume_ = 0;
  cellint::StrategyKind last_strategy_ = cellint::StrategyKind::Auto;
  bool have_strategy_ = false, strategy_changed_ = false;
  double tuning_s_ = 0;
  int stats_shown_ = 0;  // passes whose statistics were printed (--stats)
};

// ---- reporting ----------------------------------------------------------------------------------

/// Precision label of a (Real, Acc) pair.
template <class Real, class Acc>
const char* precision_name() {
  if (std::is_same<Real, double>::value) return "double";
  return std::is_same<Acc, double>::value ? "mixed" : "float";
}

/// Writes the JSON summary of a run.
template <class Backend, class Real, class Acc>
void write_json(const Options& o, const Result& r, const std::string& device, int threads,
                const cellint::GridGeometry<Real, 3>& geo) {
  FILE* f = std::fopen(o.json.c_str(), "w");
  if (!f) throw std::runtime_error("cannot write " + o.json);
  std::fprintf(f, "{\n  \"program\": \"cellint_lj\",\n  \"cellint_version\": \"%s\",\n",
               CELLINT_VERSION_STRING);
  std::fprintf(f, "  \"backend\": \"%s\",\n  \"device\": \"%s\",\n  \"host_threads\": %d,\n",
               Backend::name(), device.c_str(), threads);
  std::fprintf(
      f,
      "  \"precision\": \"%s\",\n  \"math\": \"%s\",\n  \"atoms\": %d,\n  \"unit_cells\": %d,\n"
      "  \"density\": %.10g,\n",
      precision_name<Real, Acc>(), lj_math_name<Backend, Real>(), r.atoms, o.cells, o.density);
  std::fprintf(f,
               "  \"box\": %.10g,\n  \"box_lengths\": [%.10g, %.10g, %.10g],\n  \"replicate\": [%d, %d, %d],\n  "
               "\"grid_cells\": [%d, %d, %d],\n  \"cutoff\": %.10g,\n  \"shifted\": %s,\n",
               static_cast<double>(geo.box.lengths[0]), static_cast<double>(geo.box.lengths[0]),
               static_cast<double>(geo.box.lengths[1]), static_cast<double>(geo.box.lengths[2]), o.replicate[0],
               o.replicate[1], o.replicate[2], geo.cells[0], geo.cells[1], geo.cells[2], o.cutoff,
               o.shifted ? "true" : "false");
  std::fprintf(f, "  \"skin\": %.10g,\n  \"dt\": %.10g,\n  \"steps\": %d,\n  \"seed\": %d,\n",
               Simulation<Backend, Real, Acc>::skin(o), o.dt, o.steps, o.seed);
  const std::string mode = list_mode<Backend>(o);
  std::fprintf(f, "  \"list\": \"%s\",\n", mode.c_str());
  if (mode != "none") {
    std::map<long, long> hist;  // rebuild interval (steps) -> how often
    long prev = 0;
    for (long s : r.rebuild_steps) {
      ++hist[s - prev];
      prev = s;
    }
    std::fprintf(f,
                 "  \"list_detail\": {\"every\": %d, \"check\": %s, \"pair_check\": %s, \"sort_every\": %d, "
                 "\"capacity\": %d, "
                 "\"row_threads\": %d, \"sorts\": %ld, \"fused_steps\": %ld, \"rebuild_intervals\": {",
                 o.neigh_every, o.neigh_check ? "true" : "false", r.pair_check ? "true" : "false", o.sort_every,
                 r.list_capacity, r.row_threads, r.sorts, r.fused_steps);
    bool first = true;
    for (const auto& h : hist) {
      std::fprintf(f, "%s\"%ld\": %ld", first ? "" : ", ", h.first, h.second);
      first = false;
    }
    std::fprintf(f, "}},\n");
  }
  std::fprintf(
      f,
      "  \"strategy\": \"%s\",\n  \"strategy_requested\": \"%s\",\n  \"strategy_changed\": %s,\n",
      r.strategy.c_str(), o.strategy.c_str(), r.strategy_changed ? "true" : "false");
  std::fprintf(f, "  \"max_per_cell\": [%d, %d],\n", r.max_per_cell_start, r.max_per_cell_end);
  std::fprintf(f,
               "  \"tuning_s\": %.6g,\n  \"loop_s\": %.6g,\n  \"loop_tuning_s\": %.6g,\n  "
               "\"atom_steps_per_s\": %.6g,\n"
               "  \"atom_steps_per_s_raw\": %.6g,\n",
               r.tuning_s, r.loop_s, r.loop_tuning_s, r.atom_steps_per_s, r.atom_steps_per_s_raw);
  std::fprintf(f,
               "  \"breakdown_s\": {\"pair\": %.6g, \"neigh\": %.6g, \"integrate\": %.6g, "
               "\"output\": %.6g},\n"
               "  \"rebuilds\": %ld,\n",
               r.pair_s, r.neigh_s, r.integrate_s, r.output_s, r.rebuilds);
  std::fprintf(
      f,
      "  \"drift\": {\"from_step\": %ld, \"e_start\": %.12g, \"e_end\": %.12g, \"per_atom\": %.6g, "
      "\"max_dev\": %.6g, \"tolerance\": %.6g},\n",
      r.drift_from, r.e_start, r.e_end, r.drift, r.max_dev, o.check_drift);
  std::fprintf(f, "  \"thermo\": [\n");
  for (std::size_t i = 0; i < r.thermo.size(); ++i) {
    const Thermo& t = r.thermo[i];
    std::fprintf(f,
                 "    {\"step\": %ld, \"temp\": %.12g, \"e_pair\": %.12g, \"tot_eng\": %.12g, "
                 "\"press\": %.12g}%s\n",
                 t.step, t.temp, t.e_pair, t.tot_eng, t.press, i + 1 < r.thermo.size() ? "," : "");
  }
  std::fprintf(f, "  ]\n}\n");
  std::fclose(f);
}

/// Runs the simulation described by `o` on `Backend` in the given precision and prints the
/// summary. Returns the process exit code: 0, or 1 when the drift check fails.
template <class Backend, class Real, class Acc>
int run(const Options& o) {
  const cellint::DeviceProperties props = Backend::properties();
  const std::string device = props.name;
  const int threads = Backend::is_gpu_like ? 0 : props.multiprocessors;
  Simulation<Backend, Real, Acc> sim(o);
  const auto& geo = sim.grid().geometry();
  std::printf("cellint %s Lennard-Jones NVE: %d atoms (fcc %dx%dx%d, rho %.4g), box %.6g x %.6g x %.6g, T0 %.4g\n",
              CELLINT_VERSION_STRING, sim.size(), o.unit_cells(0), o.unit_cells(1), o.unit_cells(2), o.density,
              static_cast<double>(geo.box.lengths[0]), static_cast<double>(geo.box.lengths[1]),
              static_cast<double>(geo.box.lengths[2]), o.temperature);
  std::printf("  backend %s (%s%s), precision %s (%s math), cutoff %.4g%s, dt %.4g, %d steps\n",
              Backend::name(), device.c_str(),
              threads ? (", " + std::to_string(threads) + " threads").c_str() : "",
              precision_name<Real, Acc>(), lj_math_name<Backend, Real>(), o.cutoff, o.shifted ? " (shifted)" : "",
              o.dt, o.steps);
  std::printf(
      "  grid %dx%dx%d cells of width %.4g, %s, strategy %s\n", geo.cells[0], geo.cells[1],
      geo.cells[2], static_cast<double>(geo.width[0]),
      sim.mode() != "none"
          ? (sim.mode() + " Verlet list, skin " + std::to_string(Simulation<Backend, Real, Acc>::skin(o)) +
             (o.neigh_check ? (sim.checks_pairs() ? ", rebuilt on the device when an atom past skin/2 may have "
                                                    "closed in on a neighbour"
                                                  : ", rebuilt on the device when an atom moved > skin/2")
                            : ", rebuilt every " + std::to_string(o.neigh_every) + " steps"))
                .c_str()
      : o.skin > 0
          ? ("skin " + std::to_string(o.skin) + ": re-bin when an atom moved > skin/2").c_str()
          : "re-binned every step",
      sim.mode() != "none" ? "-" : o.strategy.c_str());
  std::fflush(stdout);

  const Result r = sim.run();

  const double net_s = r.loop_s - r.loop_tuning_s;
  const double steps_per_s = net_s > 0 ? o.steps / net_s : 0;
  std::printf("Loop time of %.6g on %s for %d steps with %d atoms\n", r.loop_s,
              Backend::is_gpu_like ? device.c_str()
                                   : ("host, " + std::to_string(threads) + " threads").c_str(),
              o.steps, r.atoms);
  if (r.loop_tuning_s > 0)
    std::printf(
        "  of which %.4g s Auto timing the strategies again (M_C moved to another power of two); "
        "left out below\n",
        r.loop_tuning_s);
  std::printf("Performance: %.6g tau/day, %.6g timesteps/s, %.4g atom-steps/s\n",
              steps_per_s * o.dt * 86400.0, steps_per_s, r.atom_steps_per_s);
  if (sim.mode() != "none")
    std::printf("Neighbour list: %s, %ld rebuilds in %d steps, %ld re-sorts, %d row entries%s\n", sim.mode().c_str(),
                r.rebuilds, o.steps, r.sorts, r.list_capacity,
                o.fuse ? (", " + std::to_string(r.fused_steps) + " steps kicked in the force pass").c_str() : "");
  else if (o.strategy == "auto")
    std::printf(
        "Strategy: %s, chosen by Auto%s (timing took %.3g s in the setup, %.3g s in the loop)\n",
        r.strategy.c_str(), r.strategy_changed ? ", after switching during the run" : "",
        r.tuning_s, r.loop_tuning_s);
  else
    std::printf("Strategy: %s, as requested\n", r.strategy.c_str());
  std::printf("Cells: %dx%dx%d, fullest cell %d atoms at step 0, %d at the end\n", geo.cells[0],
              geo.cells[1], geo.cells[2], r.max_per_cell_start, r.max_per_cell_end);
  const double tot = net_s > 0 ? net_s : 1;
  if (o.breakdown)
  std::printf(
      "Breakdown: pair %.4g s (%.1f%%), neigh %.4g s (%.1f%%, %ld rebuilds), integrate %.4g s "
      "(%.1f%%), "
      "output %.4g s (%.1f%%)\n",
      r.pair_s, 100 * r.pair_s / tot, r.neigh_s, 100 * r.neigh_s / tot, r.rebuilds, r.integrate_s,
      100 * r.integrate_s / tot, r.output_s, 100 * r.output_s / tot);
  std::printf(
      "Energy drift: |E(%d) - E(%ld)| = %.3g per atom (largest deviation at thermo steps %.3g)\n",
      o.steps, r.drift_from, r.drift, r.max_dev);
  if (!o.json.empty()) write_json<Backend, Real, Acc>(o, r, device, threads, geo);
  if (o.check_drift >= 0) {
    const bool ok = r.drift <= o.check_drift;
    std::printf("Drift check: %.3g %s %.3g per atom: %s\n", r.drift, ok ? "<=" : ">", o.check_drift,
                ok ? "passed" : "FAILED");
    return ok ? 0 : 1;
  }
  return 0;
}

}  // namespace lj
