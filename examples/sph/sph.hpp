#pragma once
/// @file
/// Weakly compressible SPH dam break with cellint: a water column of width a and height 2a
/// collapses in a tank (Martin & Moyce 1952, n^2 = 2; the geometry of Koshizuka & Oka 1996:
/// a = 0.146 m, tank 4a long). docs/sph.md gives the model, the parameters and the validation.
///
/// How the state is kept:
///  - Positions live in the CellGrid, in its sorted (cell) order, on the backend. Every other
///    per-particle quantity (mass, wall flag, velocity, density, their predicted values, the
///    pressure) is an *attached attribute*, so every rebuild permutes it with the positions and
///    slot i of every array is always the same particle. The functors' load() reads them.
///  - The two interaction results (acceleration + density rate; density sums) are backend
///    buffers in the same sorted order. They are consumed before the next rebuild.
///  - The grid is re-binned every time step (no skin): cells are 2h wide, the kernel support.
///  - Every per-particle loop is a functor run by detail::parallel_for<Backend>, so the same code
///    runs on the Host backend (OpenMP) and on GPUs. A step copies to the host only the values
///    rebuild() reads and the reduced statistics (a few KiB) that set the next time step.
///
/// One time step (kick-drift-kick with predicted velocity and density, second order for the
/// conservative part; a^n, D^n = drho/dt from the previous step, in the current order):
///   v^{n+1/2} = v^n + dt/2 a^n,   rho^{n+1/2} = rho^n + dt/2 D^n,   x^{n+1} = x^n + dt v^{n+1/2}
///   v* = v^n + dt a^n,            rho* = rho^n + dt D^n,            p* = Tait(rho*)
///   rebuild the grid (positions, all attributes permuted)
///   a^{n+1}, D^{n+1} = Forces(x^{n+1}, v*, rho*, p*)          (cellint::interact)
///   v^{n+1} = v^{n+1/2} + dt/2 a^{n+1},   rho^{n+1} = rho^{n+1/2} + dt/2 D^{n+1}
///   every `shepard` steps: rho^{n+1} <- Shepard filter of rho^{n+1}   (cellint::interact)
///   dt <- CFL min(h / (c0 + |v|max), sqrt(h / |a|max))

#include <algorithm>
#include <array>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <limits>
#include <memory>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <vector>

#include "cellint/cellint.hpp"
#include "sph_functors.hpp"

namespace sph {

// ---- options and derived parameters -------------------------------------------------------------

/// The command-line options of cellint_sph.
struct Options {
  int resolution = 40;               ///< particles across the column width a (dx = a / resolution)
  int dim = 2;                       ///< 2, or 3 (a tank of depth `depth` a with side walls)
  bool stats = false;                ///< print the statistics of the first two passes (cellint::CallStats)
  double depth = 1.0;                ///< 3D only: tank depth in units of a
  double column_width = 0.146;       ///< a, metres (Koshizuka & Oka 1996)
  double aspect = 2.0;               ///< column height / width (Martin & Moyce's n^2)
  double tank_length = 4.0;          ///< tank length in units of a
  double tank_height = 4.0;          ///< height of the side walls in units of a
  double t_end = 6.0;                ///< end time, non-dimensional T = t sqrt(2 g / a)
  long steps = 0;                    ///< stop after this many steps (0: run to t_end)
  std::string kernel = "cubic";      ///< cubic | wendland
  double h_factor = 1.3;             ///< h / dx
  double alpha = 0.02;               ///< artificial viscosity
  double delta = 0.1;                ///< density diffusion (delta-SPH); 0: off
  int shepard = 30;                  ///< Shepard density filter every N steps (0: never)
  double cfl = 0.2;                  ///< time-step factor
  double c0_factor = 10.0;           ///< c0 = c0_factor * sqrt(2 g H)
  std::string precision = "double";  ///< float | double
  std::string backend = "auto";      ///< host | cuda | emulated | auto
  std::string strategy = "auto";     ///< auto or a strategy name (cellint::to_string)
  std::string list = "auto";         ///< auto | none | full | half (Verlet lists; auto: see list_mode())
  double skin = 0.25;                ///< list skin in units of h (rows hold the pairs within 2h + skin h)
  int sort = 200;                    ///< with a list: re-sort the particles by cell every N steps (0: never)
  std::string frames;                ///< directory for particle frames (empty: none)
  int every = 0;                     ///< frame every N steps (0: first and last only)
  std::string format = "vtk";        ///< vtk (legacy POLYDATA) | csv
  std::string front;                 ///< CSV of the front position (empty: none)
  int front_every = 10;              ///< front row every N steps
  int progress = 0;                  ///< progress line every N steps (0: every 0.5 of T)
  bool check = false;                ///< physical checks, exit 1 on failure
  double front_tol_low = 0.05;       ///< --check: Z_sim >= (1 - low) Z_exp
  double front_tol_high = 0.20;      ///< --check: Z_sim <= (1 + high) Z_exp
  double rho_low = 0.90;             ///< --check: fluid density bounds, units of rho0
  double rho_high = 1.10;            ///< upper density bound, units of rho0
  bool lattice = false;              ///< run the uniform-lattice density check instead
  double lattice_tol = 0.01;         ///< its relative tolerance
  std::string json;                  ///< JSON summary (empty: none)
};

/// Physical and numerical parameters derived from the options (SI units).
struct Params {
  int dim = 2;
  double g = 9.81, rho0 = 1000.0;
  /// column width a, column height H, tank length L, wall height, tank depth (3-D)
  double a = 0, H = 0, L = 0, Htank = 0, W = 0;
  double dx = 0, h = 0, mass = 0, c0 = 0, B = 0;
  int layers = 3;      ///< boundary particle layers
  double t_scale = 0;  ///< T = t * t_scale, t_scale = sqrt(2 g / a)

  explicit Params(const Options& o) {
    dim = o.dim;
    a = o.column_width;
    H = o.aspect * a;
    L = o.tank_length * a;
    Htank = o.tank_height * a;
    dx = a / o.resolution;
    W = o.dim == 3 ? std::max(1.0, std::round(o.depth * a / dx)) * dx : 0.0;
    h = o.h_factor * dx;
    mass = rho0 * std::pow(dx, o.dim);
    c0 = o.c0_factor * std::sqrt(2 * g * H);
    B = c0 * c0 * rho0 / 7.0;
    layers = static_cast<int>(std::ceil(2 * o.h_factor - 1e-9));
    t_scale = std::sqrt(2 * g / a);
  }
  /// Hydrostatic density at height y under a free surface at height H (Tait inverted).
  double hydrostatic_rho(double y) const {
    const double p = rho0 * g * std::max(0.0, H - y);
    return rho0 * std::pow(1.0 + p / B, 1.0 / 7.0);
  }
};

inline KernelKind parse_kernel(const std::string& s) {
  if (s == "cubic") return KernelKind::CubicSpline;
  if (s == "wendland") return KernelKind::WendlandC2;
  throw std::invalid_argument("unknown kernel '" + s + "' (cubic or wendland)");
}

/// The neighbour search of a run: "none" re-bins the grid every step and searches its cells; "full" and "half" keep a
/// cellint::NeighborList with a skin (half: each pair once, Newton's third law). `auto`: a full list on GPUs and a
/// half list on the CPU, unless --strategy names a cell strategy (then none). Lists reuse one search for both passes
/// (forces, Shepard density) and for many steps: the fastest particle moves about 0.01-0.03 h per step.
template <class Backend>
std::string list_mode(const Options& o) {
  if (o.list != "auto") return o.list;
  if (o.strategy != "auto") return "none";
  return Backend::is_gpu_like ? "full" : "half";
}

/// Reads a strategy name ("auto", "x-pencil", "cell-loop-half", ...).
inline cellint::StrategyKind parse_strategy(const std::string& s) {
  if (const auto k = cellint::strategy_from_name(s)) return *k;
  throw std::invalid_argument("unknown strategy '" + s + "' (one of: " + cellint::strategy_names() + ")");
}

// ---- experimental data --------------------------------------------------------------------------

/// Martin & Moyce (1952), Phil. Trans. R. Soc. Lond. A 244, 312-324: surge front of a collapsing
/// column with n^2 = 2 (height 2a), a = 2.25 in. Z/a versus T = t sqrt(2 g / a); the front was
/// timed as it passed marks 0.5 in apart (Z/a steps of 2/9). Values as tabulated in the paper and
/// widely reproduced; an independent digitisation of their Fig. 3 agrees within 0.05 in T.
struct FrontPoint {
  double T, Z;
};
inline const std::vector<FrontPoint>& martin_moyce() {
  static const std::vector<FrontPoint> d = {{0.00, 1.00}, {0.41, 1.11}, {0.84, 1.22}, {1.19, 1.44},
                                            {1.43, 1.67}, {1.63, 1.89}, {1.83, 2.11}, {1.98, 2.33},
                                            {2.20, 2.56}, {2.32, 2.78}, {2.51, 3.00}, {2.65, 3.22},
                                            {2.83, 3.44}, {2.98, 3.67}, {3.11, 3.89}, {3.33, 4.11}};
  return d;
}
/// Linear interpolation in a table sorted by T (clamped at the ends).
inline double interpolate(const std::vector<FrontPoint>& d, double T) {
  if (T <= d.front().T) return d.front().Z;
  for (std::size_t k = 1; k < d.size(); ++k)
    if (T <= d[k].T)
      return d[k - 1].Z + (d[k].Z - d[k - 1].Z) * (T - d[k - 1].T) / (d[k].T - d[k - 1].T);
  return d.back().Z;
}

// ---- initial particles (host, creation order) ---------------------------------------------------

/// Fluid and boundary particles on a square lattice of spacing dx, in creation order.
struct Particles {
  std::vector<double> x[3];
  std::vector<double> rho;
  std::vector<int> wall;
  std::size_t size() const { return rho.size(); }
  std::size_t fluid = 0;
};

/// The column (x in [0, a], y in [0, H], z in [0, W]) and `layers` layers of fixed particles
/// below the floor and outside the side walls x = 0 and x = L (and z = 0, z = W in 3D), up to
/// the wall height; the top is open. Particle centres sit at (k + 1/2) dx, so the fluid starts
/// dx/2 from every wall and the wall surfaces are half way between fluid and boundary layers.
/// Densities are hydrostatic in the fluid and in the walls that the column rests on.
inline Particles make_dam(const Params& P) {
  Particles s;
  const int nx = static_cast<int>(std::lround(P.L / P.dx));
  const int ny = static_cast<int>(std::lround(P.Htank / P.dx));
  const int nz = P.dim == 3 ? static_cast<int>(std::lround(P.W / P.dx)) : 1;
  const int fx = static_cast<int>(std::lround(P.a / P.dx));
  const int fy = static_cast<int>(std::lround(P.H / P.dx));
  const int lay = P.layers;
  auto add = [&](int i, int j, int k, bool w) {
    const double x = (i + 0.5) * P.dx, y = (j + 0.5) * P.dx, z = (k + 0.5) * P.dx;
    s.x[0].push_back(x);
    s.x[1].push_back(y);
    if (P.dim == 3) s.x[2].push_back(z);
    const bool wetted = !w || (x < P.a + 2 * P.h && y < P.H);
    s.rho.push_back(wetted ? P.hydrostatic_rho(y) : P.rho0);
    s.wall.push_back(w ? 1 : 0);
  };
  const int k0 = P.dim == 3 ? -lay : 0, k1 = P.dim == 3 ? nz + lay : 1;
  for (int k = 0; k < nz; ++k)
    for (int j = 0; j < fy; ++j)
      for (int i = 0; i < fx; ++i) add(i, j, k, false);
  s.fluid = s.size();
  for (int k = k0; k < k1; ++k)
    for (int j = -lay; j < ny; ++j)
      for (int i = -lay; i < nx + lay; ++i) {
        const bool inside = i >= 0 && i < nx && j >= 0 && (P.dim == 2 || (k >= 0 && k < nz));
        if (!inside) add(i, j, k, true);
      }
  return s;
}

// ---- per-particle kernels (run by parallel_for on any backend) ----------------------------------

/// First half of the step: half kick, drift, prediction, pressure of the prediction. A fluid
/// particle that the drift takes out of `[lo, hi]` (the grid's box less dx/2) becomes inert
/// (kind 2): it is parked at the nearest point inside, at rest, and takes part in nothing from
/// then on, as DualSPHysics excludes particles that leave its domain. Splashes that rise far
/// above the walls are the only ones that do.
template <class Real, int Dim, class Accum>
struct Predict {
  Real* x[Dim];
  Vec<Real, Dim>* v;
  Real* rho;
  Vec<Real, Dim>* v_pred;
  Real* rho_pred;
  Real* p;
  int* wall;
  const Accum* f;
  Real dt, rho0, B;
  Real lo[Dim], hi[Dim];
  template <class A>
  CELLINT_HD void operator()(A&, Index i) const {
    const int kind = wall[i];
    if (kind == 2) return;
    const Accum a = f[i];
    const Real r = rho[i];
    Real rh = r + Real(0.5) * dt * a.drho;
    Real rp = r + dt * a.drho;
    if (kind == 1) {
      // a boundary particle never pulls the fluid (DualSPHysics clamps the same way)
      rh = rh < rho0 ? rho0 : rh;
      rp = rp < rho0 ? rho0 : rp;
    } else {
      Vec<Real, Dim> vi = v[i], vp;
      bool out = false;
      for (int d = 0; d < Dim; ++d) {
        const Real vh = vi[d] + Real(0.5) * dt * a.a[d];
        vp[d] = vi[d] + dt * a.a[d];
        vi[d] = vh;
        Real xd = x[d][i] + dt * vh;
        if (!(xd >= lo[d] && xd <= hi[d])) {  // also catches NaN
          out = true;
          xd = xd < lo[d] || xd != xd ? lo[d] : hi[d];
        }
        x[d][i] = xd;
      }
      if (out) {
        wall[i] = 2;
        vi = Vec<Real, Dim>{};
        vp = vi;
      }
      v[i] = vi;
      v_pred[i] = vp;
    }
    rho[i] = rh;
    rho_pred[i] = rp;
    p[i] = tait_pressure(rp, rho0, B);
  }
};

/// Second half kick with the new rates.
template <class Real, int Dim, class Accum>
struct Correct {
  Vec<Real, Dim>* v;
  Real* rho;
  const int* wall;
  const Accum* f;
  Real dt, rho0;
  template <class A>
  CELLINT_HD void operator()(A&, Index i) const {
    if (wall[i] == 2) return;
    const Accum a = f[i];
    Real r = rho[i] + Real(0.5) * dt * a.drho;
    if (wall[i]) {
      r = r < rho0 ? rho0 : r;
    } else {
      Vec<Real, Dim> vi = v[i];
      for (int d = 0; d < Dim; ++d) vi[d] += Real(0.5) * dt * a.a[d];
      v[i] = vi;
    }
    rho[i] = r;
  }
};

/// Sets the predicted state equal to the current one (before the first force evaluation).
template <class Real, int Dim>
struct SyncPrediction {
  const Vec<Real, Dim>* v;
  const Real* rho;
  Vec<Real, Dim>* v_pred;
  Real* rho_pred;
  Real* p;
  Real rho0, B;
  template <class A>
  CELLINT_HD void operator()(A&, Index i) const {
    v_pred[i] = v[i];
    rho_pred[i] = rho[i];
    p[i] = tait_pressure(rho[i], rho0, B);
  }
};

/// Shepard filter of the fluid densities from the density sums (self term added here).
template <class Real, class Sums>
struct ShepardApply {
  Real* rho;
  const Real* mass;
  const int* wall;
  const Sums* s;
  Real w0;
  template <class A>
  CELLINT_HD void operator()(A&, Index i) const {
    if (wall[i]) return;
    const Real m = mass[i];
    rho[i] = (s[i].mass_w + m * w0) / (s[i].vol_w + m / rho[i] * w0);
  }
};

/// Per-step statistics, reduced on the backend.
struct Stats {
  double fluid = 0;                          ///< fluid particles seen
  double front = -1e300;                     ///< largest x of a fluid particle
  double top = -1e300;                       ///< largest y of a fluid particle
  double v2max = 0;                          ///< largest |v|^2 (fluid)
  double a2max = 0;                          ///< largest |a|^2 (fluid)
  double rho_min = 1e300, rho_max = -1e300;  ///< fluid density range
  double escaped = 0;  ///< fluid particles behind a wall surface, below the wall tops
  double over = 0;     ///< fluid particles outside the tank above the wall tops (overflow)
  double inert = 0;    ///< fluid particles that left the domain (kind 2)
  double kinetic = 0;  ///< sum m v^2 / 2 (fluid)

  CELLINT_HD void merge(const Stats& o) {
    fluid += o.fluid;
    front = front > o.front ? front : o.front;
    top = top > o.top ? top : o.top;
    v2max = v2max > o.v2max ? v2max : o.v2max;
    a2max = a2max > o.a2max ? a2max : o.a2max;
    rho_min = rho_min < o.rho_min ? rho_min : o.rho_min;
    rho_max = rho_max > o.rho_max ? rho_max : o.rho_max;
    escaped += o.escaped;
    over += o.over;
    inert += o.inert;
    kinetic += o.kinetic;
  }
};

/// First reduction stage: lane k of `lanes` reduces its share of the particles (strided on GPUs
/// so neighbouring threads read neighbouring particles, a contiguous range on the CPU).
template <class Real, int Dim, class Accum>
struct StatsPartials {
  const Real* x[Dim];
  const Vec<Real, Dim>* v;
  const Real* rho;
  const Real* mass;
  const int* wall;
  const Accum* f;
  Index n, lanes;
  bool strided;
  double L, W, Htank;  ///< tank length, depth (W = 0 in 2D) and wall height
  Stats* out;
  template <class A>
  CELLINT_HD void operator()(A&, Index lane) const {
    Stats s;
    const Index begin =
        strided ? lane : static_cast<Index>(static_cast<long long>(n) * lane / lanes);
    const Index end =
        strided ? n : static_cast<Index>(static_cast<long long>(n) * (lane + 1) / lanes);
    const Index step = strided ? lanes : 1;
    for (Index i = begin; i < end; i += step) {
      if (wall[i] == 2) s.inert += 1;
      if (wall[i]) continue;
      const double px = static_cast<double>(x[0][i]), py = static_cast<double>(x[1][i]);
      double v2 = 0, a2 = 0;
      for (int d = 0; d < Dim; ++d) {
        v2 += static_cast<double>(v[i][d]) * static_cast<double>(v[i][d]);
        a2 += static_cast<double>(f[i].a[d]) * static_cast<double>(f[i].a[d]);
      }
      const double r = static_cast<double>(rho[i]);
      bool out_of_tank = px < 0 || px > L || py < 0;
      if (Dim == 3) {
        const double pz = static_cast<double>(x[Dim - 1][i]);
        out_of_tank = out_of_tank || pz < 0 || pz > W;
      }
      s.fluid += 1;
      s.front = px > s.front ? px : s.front;
      s.top = py > s.top ? py : s.top;
      s.v2max = v2 > s.v2max ? v2 : s.v2max;
      s.a2max = a2 > s.a2max ? a2 : s.a2max;
      s.rho_min = r < s.rho_min ? r : s.rho_min;
      s.rho_max = r > s.rho_max ? r : s.rho_max;
      s.escaped += out_of_tank && py < Htank ? 1 : 0;
      s.over += out_of_tank && py >= Htank ? 1 : 0;
      s.kinetic += 0.5 * static_cast<double>(mass[i]) * v2;
    }
    out[lane] = s;
  }
};

/// Second stage: lane k merges the partials k, k + lanes, ...
struct StatsMerge {
  const Stats* in;
  Index n, lanes;
  Stats* out;
  template <class A>
  CELLINT_HD void operator()(A&, Index lane) const {
    Stats s;
    for (Index i = lane; i < n; i += lanes) s.merge(in[i]);
    out[lane] = s;
  }
};

// ---- the simulation -----------------------------------------------------------------------------

/// One front sample.
struct FrontSample {
  long step;
  double t, T, Z;  ///< time (s), T = t sqrt(2g/a), Z/a
};

/// What a run measured.
struct Result {
  std::size_t fluid = 0, walls = 0;
  long steps = 0;
  double t = 0, T = 0;
  double loop_s = 0, setup_s = 0;
  double pair_s = 0, density_s = 0, neigh_s = 0, integrate_s = 0, stats_s = 0, output_s = 0;
  std::string strategy_forces, strategy_density;
  std::string neighbours;    ///< none (cells re-binned every step), full or half (Verlet list)
  long list_rebuilds = 0;    ///< list rebuilds in the loop (lists only)
  long sorts = 0;            ///< re-sorts of the grid in the loop (lists only)
  double tuning_s = 0;       ///< time Auto spent timing candidates, setup and loop
  double tuning_loop_s = 0;  ///< the part of it inside the loop (included in loop_s)
  std::vector<FrontSample> front;
  double rho_min = 1e300,
         rho_max = -1e300;        ///< fluid density range over the whole run (units of rho0)
  double max_escaped = 0;         ///< most fluid particles behind a wall surface at once
  double max_over = 0;            ///< most fluid particles over the wall tops at once
  double inert = 0;               ///< fluid particles that left the domain by the end
  double mass0 = 0, mass1 = 0;    ///< total mass at start and end (exact sums)
  bool masses_identical = false;  ///< every particle's mass unchanged, bit for bit
  double dt_min = 1e300, dt_max = 0;
};

/// A dam-break simulation with `Real` (float or double) state on `Backend` in `Dim` dimensions.
template <class Backend, class Real, int Dim>
class Simulation {
 public:
  using Grid = cellint::CellGrid<Backend, Real, Dim>;
  using V = Vec<Real, Dim>;
  using ForceF = Forces<Real, Dim>;
  using DensityF = DensitySum<Real, Dim>;
  using FAcc = typename ForceF::Accum;
  using DAcc = typename DensityF::Accum;
  using List = cellint::NeighborList<Backend, Real, Dim>;

  Simulation(const Options& o, const Params& P)
      : o_(o),
        P_(P),
        init_(make_dam(P)),
        grid_(box(P), static_cast<Real>(2 * P.h)),
        strategy_(parse_strategy(o.strategy)),
        mode_(list_mode<Backend>(o)) {
    n_ = static_cast<Index>(init_.size());
    std::array<std::vector<Real>, Dim> x;
    for (int d = 0; d < Dim; ++d) x[d].assign(init_.x[d].begin(), init_.x[d].end());
    grid_.build(x);
    const std::size_t n = init_.size();
    std::vector<Real> mass(n, static_cast<Real>(P.mass)), rho(init_.rho.begin(), init_.rho.end());
    std::vector<V> zero(n, V{});
    mass_user_ = mass;
    attr_.mass = grid_.template attach<Real>(mass.data());
    attr_.wall = grid_.template attach<int>(init_.wall.data());
    attr_.vel = grid_.template attach<V>(zero.data());
    attr_.rho = grid_.template attach<Real>(rho.data());
    attr_.vel_pred = grid_.template attach<V>(zero.data());
    attr_.rho_pred = grid_.template attach<Real>(rho.data());
    attr_.pressure = grid_.template attach<Real>(rho.data());  // overwritten below
    forces_.resize(n);
    sums_.resize(n);
    const Index lanes = stat_lanes();
    partials_.resize(static_cast<std::size_t>(lanes));
    merged_.resize(static_cast<std::size_t>(std::min<Index>(lanes, 64)));

    kernel_ = SphKernel<Real, Dim>::make(parse_kernel(o.kernel), P.h);
    forces_f_.kernel = kernel_;
    forces_f_.alpha_c0 = static_cast<Real>(o.alpha * P.c0);
    forces_f_.eta2 = static_cast<Real>(0.01 * P.h * P.h);
    forces_f_.delta_h_c0_2 = static_cast<Real>(2 * o.delta * P.h * P.c0);
    forces_f_.gravity = static_cast<Real>(P.g);
    forces_f_.attr = attr_;
    density_f_.kernel = kernel_;
    density_f_.mass_attr = attr_.mass;
    density_f_.rho_attr = attr_.rho;
    density_f_.kind_attr = attr_.wall;
    if (mode_ != "none") {
      cellint::ListOptions lo;
      lo.half = mode_ == "half";
      list_ = std::make_unique<List>(grid_, static_cast<Real>(o.skin * P.h), lo);
    }
  }

  Index size() const { return n_; }
  std::size_t fluid() const { return init_.fluid; }
  const Grid& grid() const { return grid_; }

  /// Runs to o.t_end (or o.steps) with progress lines, frames and the front file.
  Result run() {
    Result r;
    r.fluid = init_.fluid;
    r.walls = init_.size() - init_.fluid;
    for (double m : mass_user_) r.mass0 += m;
    typename Backend::Timer t_pred(grid_.stream()), t_corr(grid_.stream()), t_neigh(grid_.stream()),
        t_pair(grid_.stream()), t_dens(grid_.stream()), t_stats(grid_.stream());

    // setup: pressure, first rates and statistics (Auto tunes here, outside the timed loop)
    const auto s0 = std::chrono::steady_clock::now();
    cellint::detail::parallel_for<Backend>(
        n_,
        SyncPrediction<Real, Dim>{attr<V>(attr_.vel), attr<Real>(attr_.rho),
                                  attr<V>(attr_.vel_pred), attr<Real>(attr_.rho_pred),
                                  attr<Real>(attr_.pressure), static_cast<Real>(P_.rho0),
                                  static_cast<Real>(P_.B)},
        grid_.stream());
    compute_forces();
    if (o_.shepard > 0) shepard();  // so that Auto also times the density pass before the loop
    Stats st = stats();
    r.setup_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - s0).count();
    record(r, st, 0, 0.0);
    FILE* front = open_front();
    write_front(front, r.front.back());
    if (!o_.frames.empty()) write_frame(0, 0.0);

    double t = 0;
    long step = 0;
    double next_progress = 0.5;
    const double t_end = o_.t_end / P_.t_scale;
    const double tuning_setup = tuning_s_;
    const long builds0 = list_ ? list_->check(grid_).builds : 0;
    const auto t0 = std::chrono::steady_clock::now();
    while ((o_.steps <= 0 || step < o_.steps) && t < t_end * (1 - 1e-12)) {
      double dt = time_step(st);
      if (t + dt > t_end) dt = t_end - t;
      r.dt_min = std::min(r.dt_min, dt);
      r.dt_max = std::max(r.dt_max, dt);
      ++step;
      // one kick-drift-kick step (the scheme in the file comment)
      t_pred.start();
      predict(dt);  // v, rho to the half step; x to the full step; v*, rho*, p*
      t_pred.stop();
      t_neigh.start();
      if (!list_) {
        grid_.rebuild();  // re-bin; every attribute follows its particle
      } else {
        if (o_.sort > 0 && step % o_.sort == 0) {
          grid_.rebuild();  // re-sort by cell (locality); the list then rebuilds at once
          ++r.sorts;
        }
        list_->update(grid_);  // rebuilds on the device once a particle moved more than skin / 2
      }
      t_neigh.stop();
      t_pair.start();
      compute_forces();  // a, drho/dt of every particle (cellint::interact)
      t_pair.stop();
      t_corr.start();
      correct(dt);  // second half kick
      t_corr.stop();
      t_dens.start();
      const bool filter = o_.shepard > 0 && step % o_.shepard == 0;
      if (filter) shepard();  // density pass (cellint::interact) + Shepard filter
      t_dens.stop();
      t += dt;
      t_stats.start();
      st = stats();
      if (list_ && step % 50 == 0) list_->check(grid_);  // grows rows that overflowed (waits; stats() did)
      t_stats.stop();
      r.integrate_s += 1e-3 * (t_pred.elapsed_ms() + t_corr.elapsed_ms());
      r.neigh_s += 1e-3 * t_neigh.elapsed_ms();
      r.pair_s += 1e-3 * t_pair.elapsed_ms();
      if (filter) r.density_s += 1e-3 * t_dens.elapsed_ms();
      r.stats_s += 1e-3 * t_stats.elapsed_ms();

      const auto o0 = std::chrono::steady_clock::now();
      record(r, st, step, t);
      const bool last = !((o_.steps <= 0 || step < o_.steps) && t < t_end * (1 - 1e-12));
      if (front && (step % std::max(1, o_.front_every) == 0 || last))
        write_front(front, r.front.back());
      if (!o_.frames.empty() && (last || (o_.every > 0 && step % o_.every == 0)))
        write_frame(step, t);
      const double T = t * P_.t_scale;
      const bool show = o_.progress > 0 ? step % o_.progress == 0 : T >= next_progress;
      if (show || last) {
        while (next_progress <= T) next_progress += 0.5;
        progress(step, t, dt, st,
                 std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
      }
      r.output_s += std::chrono::duration<double>(std::chrono::steady_clock::now() - o0).count();
    }
    Backend::synchronize(grid_.stream());
    r.loop_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    if (front) std::fclose(front);
    r.steps = step;
    r.t = t;
    r.T = t * P_.t_scale;
    r.neighbours = mode_;
    r.strategy_forces = list_ ? "verlet-list-" + mode_ : cellint::to_string(strategy_forces_);
    r.strategy_density = o_.shepard <= 0 ? "-" : list_ ? r.strategy_forces : cellint::to_string(strategy_density_);
    if (list_) r.list_rebuilds = list_->check(grid_).builds - builds0;
    r.tuning_s = tuning_s_;
    r.tuning_loop_s = tuning_s_ - tuning_setup;
    // mass: every particle keeps its own mass through all the permutations (bit for bit)
    const std::vector<Real> m =
        grid_.to_user_order(static_cast<const Real*>(attr<Real>(attr_.mass)));
    r.masses_identical = m == mass_user_;
    for (Real v : m) r.mass1 += static_cast<double>(v);
    return r;
  }

 private:
  static cellint::Box<Real, Dim> box(const Params& P) {
    // the tank and its boundary layers, one more dx all round, and room above the walls
    const double pad = (P.layers + 1) * P.dx;
    cellint::Box<Real, Dim> b;
    b.origin[0] = static_cast<Real>(-pad);
    b.lengths[0] = static_cast<Real>(P.L + 2 * pad);
    b.origin[1] = static_cast<Real>(-pad);
    b.lengths[1] = static_cast<Real>(P.Htank + pad + 4 * P.a);  // splashes may rise above the walls
    if (Dim == 3) {
      b.origin[Dim - 1] = static_cast<Real>(-pad);
      b.lengths[Dim - 1] = static_cast<Real>(P.W + 2 * pad);
    }
    for (int d = 0; d < Dim; ++d) b.periodic[d] = false;
    return b;
  }
  Index stat_lanes() const {
    return std::max<Index>(1,
                           std::min<Index>(n_, Backend::is_gpu_like ? Index(1) << 14 : Index(64)));
  }
  template <class T>
  T* attr(const cellint::Attribute<T>& h) {
    return grid_.attribute(h);  // re-read after every rebuild: buffers are swapped
  }

  void predict(double dt) {
    Predict<Real, Dim, FAcc> k{};
    for (int d = 0; d < Dim; ++d) k.x[d] = grid_.positions(d);
    k.v = attr<V>(attr_.vel);
    k.rho = attr<Real>(attr_.rho);
    k.v_pred = attr<V>(attr_.vel_pred);
    k.rho_pred = attr<Real>(attr_.rho_pred);
    k.p = attr<Real>(attr_.pressure);
    k.wall = attr<int>(attr_.wall);
    k.f = forces_.data();
    k.dt = static_cast<Real>(dt);
    k.rho0 = static_cast<Real>(P_.rho0);
    k.B = static_cast<Real>(P_.B);
    const auto& box = grid_.geometry().box;
    for (int d = 0; d < Dim; ++d) {
      k.lo[d] = box.origin[d] + static_cast<Real>(0.5 * P_.dx);
      k.hi[d] = box.origin[d] + box.lengths[d] - static_cast<Real>(0.5 * P_.dx);
    }
    cellint::detail::parallel_for<Backend>(n_, k, grid_.stream());
  }
  void correct(double dt) {
    Correct<Real, Dim, FAcc> k{attr<V>(attr_.vel),    attr<Real>(attr_.rho),
                               attr<int>(attr_.wall), forces_.data(),
                               static_cast<Real>(dt), static_cast<Real>(P_.rho0)};
    cellint::detail::parallel_for<Backend>(n_, k, grid_.stream());
  }
  template <class F, class Acc>
  cellint::StrategyKind pass(const F& f, Acc* out) {
    cellint::Tuning t;
    t.statistics = o_.stats && stats_shown_ < 2;  // (the first two passes; --stats)
    const cellint::Report rep = list_ ? cellint::interact(*list_, grid_, f, out, t)
                                      : cellint::interact_with(strategy_, grid_, f, out, t);
    if (t.statistics)
      std::printf("# stats, %s pass: %s\n", stats_shown_++ ? "second" : "first",
                  cellint::describe(rep, list_ ? (list_->half() ? "half list" : "full list") : nullptr).c_str());
    tuning_s_ += 1e-3 * rep.tuning_ms;
    return list_ ? cellint::StrategyKind::Auto : rep.strategy;
  }
  void compute_forces() { strategy_forces_ = pass(forces_f_, forces_.data()); }
  void shepard() {
    strategy_density_ = pass(density_f_, sums_.data());
    ShepardApply<Real, DAcc> k{attr<Real>(attr_.rho), attr<Real>(attr_.mass), attr<int>(attr_.wall),
                               sums_.data(), kernel_.self()};
    cellint::detail::parallel_for<Backend>(n_, k, grid_.stream());
  }

  Stats stats() {
    const Index l1 = stat_lanes();
    const Index l2 = static_cast<Index>(merged_.size());
    StatsPartials<Real, Dim, FAcc> k{};
    for (int d = 0; d < Dim; ++d) k.x[d] = grid_.positions(d);
    k.v = attr<V>(attr_.vel);
    k.rho = attr<Real>(attr_.rho);
    k.mass = attr<Real>(attr_.mass);
    k.wall = attr<int>(attr_.wall);
    k.f = forces_.data();
    k.n = n_;
    k.lanes = l1;
    k.strided = Backend::is_gpu_like;
    k.L = P_.L;
    k.W = P_.W;
    k.Htank = P_.Htank;
    k.out = partials_.data();
    // each lane reduces n / l1 particles: say so, so that the Host backend shares the lanes
    // among threads once there are enough particles
    cellint::detail::parallel_for<Backend>(l1, k, grid_.stream(), (n_ + l1 - 1) / l1);
    cellint::detail::parallel_for<Backend>(l2, StatsMerge{partials_.data(), l1, l2, merged_.data()},
                                           grid_.stream());
    std::vector<Stats> h(static_cast<std::size_t>(l2));
    merged_.download(h.data(), grid_.stream());
    Stats s;
    for (const Stats& p : h) s.merge(p);
    return s;
  }

  double time_step(const Stats& s) const {
    const double vmax = std::sqrt(s.v2max), amax = std::sqrt(s.a2max);
    double dt = P_.h / (P_.c0 + vmax);
    if (amax > 0) dt = std::min(dt, std::sqrt(P_.h / amax));
    return o_.cfl * dt;
  }

  void record(Result& r, const Stats& s, long step, double t) {
    const double T = t * P_.t_scale;
    r.front.push_back({step, t, T, (s.front + 0.5 * P_.dx) / P_.a});
    r.rho_min = std::min(r.rho_min, s.rho_min / P_.rho0);
    r.rho_max = std::max(r.rho_max, s.rho_max / P_.rho0);
    r.max_escaped = std::max(r.max_escaped, s.escaped);
    r.max_over = std::max(r.max_over, s.over);
    r.inert = s.inert;
  }

  void progress(long step, double t, double dt, const Stats& s, double elapsed) const {
    const double T = t * P_.t_scale;
    std::printf(
        "step %7ld  t %.4f s  T %5.2f  dt %.3e s  Z/a %.3f  rho/rho0 [%.4f, %.4f]  %.4g steps/s  "
        "%.4g particle-steps/s\n",
        step, t, T, dt, (s.front + 0.5 * P_.dx) / P_.a, s.rho_min / P_.rho0, s.rho_max / P_.rho0,
        elapsed > 0 ? step / elapsed : 0.0,
        elapsed > 0 ? static_cast<double>(n_) * step / elapsed : 0.0);
    std::fflush(stdout);
  }

  FILE* open_front() const {
    if (o_.front.empty()) return nullptr;
    FILE* f = std::fopen(o_.front.c_str(), "w");
    if (!f) throw std::runtime_error("cannot write " + o_.front);
    std::fprintf(
        f,
        "# cellint_sph front: a = %.6g m, H = %.6g m, dx = %.6g m, %d-D, T = t*sqrt(2g/a), "
        "Z = (max x of the fluid + dx/2)\n",
        P_.a, P_.H, P_.dx, Dim);
    std::fprintf(f, "step,t,T,Z_over_a\n");
    return f;
  }
  static void write_front(FILE* f, const FrontSample& s) {
    if (!f) return;
    std::fprintf(f, "%ld,%.8g,%.6g,%.6g\n", s.step, s.t, s.T, s.Z);
  }

  /// One particle frame in the user's (creation) order: legacy VTK POLYDATA or CSV.
  void write_frame(long step, double t) {
    const auto x = grid_.positions_user_order();
    const std::vector<V> v = grid_.to_user_order(static_cast<const V*>(attr<V>(attr_.vel)));
    const std::vector<Real> rho =
        grid_.to_user_order(static_cast<const Real*>(attr<Real>(attr_.rho)));
    const std::vector<int> wall =
        grid_.to_user_order(static_cast<const int*>(attr<int>(attr_.wall)));
    const std::size_t n = rho.size();
    char name[64];
    std::snprintf(name, sizeof name, "/sph_%06ld.%s", step, o_.format == "csv" ? "csv" : "vtk");
    const std::string path = o_.frames + name;
    FILE* f = std::fopen(path.c_str(), "w");
    if (!f) throw std::runtime_error("cannot write " + path + " (does the directory exist?)");
    auto pressure = [&](std::size_t i) {
      return static_cast<double>(
          tait_pressure(rho[i], static_cast<Real>(P_.rho0), static_cast<Real>(P_.B)));
    };
    auto coord = [&](int d, std::size_t i) { return d < Dim ? static_cast<double>(x[d][i]) : 0.0; };
    auto vel = [&](int d, std::size_t i) { return d < Dim ? static_cast<double>(v[i][d]) : 0.0; };
    if (o_.format == "csv") {
      std::fprintf(f, "# t=%.8g T=%.6g step=%ld a=%.6g dx=%.6g\n", t, t * P_.t_scale, step, P_.a,
                   P_.dx);
      std::fprintf(f, "x,y,z,vx,vy,vz,rho,p,wall\n");
      for (std::size_t i = 0; i < n; ++i)
        std::fprintf(f, "%.7g,%.7g,%.7g,%.6g,%.6g,%.6g,%.7g,%.6g,%d\n", coord(0, i), coord(1, i),
                     coord(2, i), vel(0, i), vel(1, i), vel(2, i), static_cast<double>(rho[i]),
                     pressure(i), wall[i]);
    } else {
      std::fprintf(
          f,
          "# vtk DataFile Version 3.0\ncellint_sph t=%.8g T=%.6g step=%ld a=%.6g dx=%.6g\nASCII\n",
          t, t * P_.t_scale, step, P_.a, P_.dx);
      std::fprintf(f, "DATASET POLYDATA\nFIELD FieldData 1\nTIME 1 1 double\n%.10g\n", t);
      std::fprintf(f, "POINTS %zu float\n", n);
      for (std::size_t i = 0; i < n; ++i)
        std::fprintf(f, "%.7g %.7g %.7g\n", coord(0, i), coord(1, i), coord(2, i));
      std::fprintf(f, "VERTICES %zu %zu\n", n, 2 * n);
      for (std::size_t i = 0; i < n; ++i) std::fprintf(f, "1 %zu\n", i);
      std::fprintf(f, "POINT_DATA %zu\nVECTORS velocity float\n", n);
      for (std::size_t i = 0; i < n; ++i)
        std::fprintf(f, "%.6g %.6g %.6g\n", vel(0, i), vel(1, i), vel(2, i));
      std::fprintf(f, "SCALARS density float 1\nLOOKUP_TABLE default\n");
      for (std::size_t i = 0; i < n; ++i) std::fprintf(f, "%.7g\n", static_cast<double>(rho[i]));
      std::fprintf(f, "SCALARS pressure float 1\nLOOKUP_TABLE default\n");
      for (std::size_t i = 0; i < n; ++i) std::fprintf(f, "%.6g\n", pressure(i));
      std::fprintf(f, "SCALARS wall int 1\nLOOKUP_TABLE default\n");
      for (std::size_t i = 0; i < n; ++i) std::fprintf(f, "%d\n", wall[i]);
    }
    std::fclose(f);
  }

  Options o_;
  Params P_;
  Particles init_;
  Grid grid_;
  cellint::StrategyKind strategy_;
  Index n_ = 0;
  Attributes<Real, Dim> attr_;
  std::vector<Real> mass_user_;
  SphKernel<Real, Dim> kernel_;
  ForceF forces_f_{};
  DensityF density_f_{};
  cellint::Buffer<Backend, FAcc> forces_;
  cellint::Buffer<Backend, DAcc> sums_;
  cellint::Buffer<Backend, Stats> partials_, merged_;
  std::string mode_;             // none, full or half
  std::unique_ptr<List> list_;   // with a list: the rows, rebuilt on the backend
  cellint::StrategyKind strategy_forces_ = cellint::StrategyKind::Auto,
                        strategy_density_ = cellint::StrategyKind::Auto;
  double tuning_s_ = 0;
  int stats_shown_ = 0;  // passes whose statistics were printed (--stats)
};

// ---- the uniform-lattice check ------------------------------------------------------------------

/// The functors through cellint against an O(N^2) loop over all pairs in double that calls
/// the same functors directly, on a disordered state: positions jittered by up to 0.3 dx,
/// random velocities (|v| <= 2 m/s), densities within 2% of rho0 with their Tait pressures, and
/// one particle in ten a boundary particle and one in twenty inert. Compared per particle, relative
/// to the largest reference value of each quantity: 1e-4 in float, 1e-10 in double. Returns the
/// failures.
template <class Backend, class Real, int Dim>
int disorder_check(const Options& o, const Params& P, const SphKernel<Real, Dim>& kernel,
                   const std::vector<cellint::StrategyKind>& strategies, int side, bool periodic) {
  const std::size_t n = static_cast<std::size_t>(std::pow(side, Dim));
  const double len = side * P.dx;
  unsigned long long seed = 0x9E3779B97F4A7C15ull;
  auto uniform = [&seed]() {  // in [-1, 1)
    seed = seed * 6364136223846793005ull + 1442695040888963407ull;
    return static_cast<double>(seed >> 11) * (2.0 / 9007199254740992.0) - 1.0;
  };
  std::array<std::vector<Real>, Dim> x;
  std::vector<Real> mass(n, static_cast<Real>(P.mass)), rho(n), p(n);
  std::vector<int> wall(n);
  std::vector<Vec<Real, Dim>> vel(n);
  for (std::size_t i = 0; i < n; ++i) {
    std::size_t r = i;
    for (int d = 0; d < Dim; ++d) {
      x[d].push_back(
          static_cast<Real>((static_cast<double>(r % side) + 0.5 + 0.3 * uniform()) * P.dx));
      r /= side;
      vel[i][d] = static_cast<Real>(2.0 / std::sqrt(Dim) * uniform());
    }
    rho[i] = static_cast<Real>(P.rho0 * (1 + 0.02 * uniform()));
    p[i] = tait_pressure(rho[i], static_cast<Real>(P.rho0), static_cast<Real>(P.B));
    const double u = uniform();
    wall[i] = u > 0.8 ? 1 : (u < -0.9 ? 2 : 0);  // some boundary and some inert particles
  }
  cellint::CellGrid<Backend, Real, Dim> grid(
      cellint::Box<Real, Dim>::cube(Real(0), static_cast<Real>(len), periodic),
      static_cast<Real>(2 * P.h));
  grid.build(x);
  Attributes<Real, Dim> at;
  at.mass = grid.template attach<Real>(mass.data());
  at.wall = grid.template attach<int>(wall.data());
  at.vel = at.vel_pred = grid.template attach<Vec<Real, Dim>>(vel.data());
  at.rho = at.rho_pred = grid.template attach<Real>(rho.data());
  at.pressure = grid.template attach<Real>(p.data());
  auto make_forces = [&](auto real, auto k) {
    using R = decltype(real);
    Forces<R, Dim> f{};
    f.kernel = k;
    f.alpha_c0 = static_cast<R>(o.alpha * P.c0);
    f.eta2 = static_cast<R>(0.01 * P.h * P.h);
    f.delta_h_c0_2 = static_cast<R>(2 * o.delta * P.h * P.c0);
    f.gravity = static_cast<R>(P.g);
    if constexpr (std::is_same<R, Real>::value) f.attr = at;  // the double reference reads no grid
    return f;
  };
  const Forces<Real, Dim> forces = make_forces(Real(0), kernel);
  const DensitySum<Real, Dim> dens{kernel, at.mass, at.rho, at.wall};

  // the reference: every pair, minimum image on periodic axes, in double
  const auto kd = SphKernel<double, Dim>::make(kernel.kind, P.h);
  const Forces<double, Dim> fd = make_forces(0.0, kd);
  const DensitySum<double, Dim> dd{kd, {}, {}, {}};
  std::vector<typename Forces<double, Dim>::Accum> fref(n);
  std::vector<typename DensitySum<double, Dim>::Accum> dref(n);
  std::vector<typename Forces<double, Dim>::Payload> pf(n);
  std::vector<typename DensitySum<double, Dim>::Payload> pd(n);
  for (std::size_t i = 0; i < n; ++i) {
    for (int d = 0; d < Dim; ++d) pf[i].v[d] = static_cast<double>(vel[i][d]);
    pf[i].rho = static_cast<double>(rho[i]);
    pf[i].p_rho2 = static_cast<double>(p[i]) / (pf[i].rho * pf[i].rho);
    pf[i].m = static_cast<double>(mass[i]);
    pf[i].wall = wall[i];
    pd[i] = {pf[i].m, pf[i].rho, wall[i]};
  }
  const double rc2 = 4 * P.h * P.h;
  for (std::size_t i = 0; i < n; ++i) {
    fref[i] = fd.init();
    dref[i] = {};
    for (std::size_t j = 0; j < n; ++j) {
      if (i == j) continue;
      Vec<double, Dim> dr;
      for (int d = 0; d < Dim; ++d) {
        dr[d] = static_cast<double>(x[d][i]) - static_cast<double>(x[d][j]);
        if (periodic) dr[d] -= len * std::round(dr[d] / len);
      }
      const double r2 = cellint::norm2(dr);
      if (r2 >= rc2) continue;
      fd(fref[i], pf[i], pf[j], dr, r2);
      dd(dref[i], pd[i], pd[j], dr, r2);
    }
  }
  double ascale = 0, dscale = 0, wscale = 0;
  for (std::size_t i = 0; i < n; ++i) {
    for (int d = 0; d < Dim; ++d) ascale = std::max(ascale, std::fabs(fref[i].a[d]));
    dscale = std::max(dscale, std::fabs(fref[i].drho));
    wscale = std::max(wscale, std::fabs(dref[i].mass_w));
  }

  cellint::Buffer<Backend, typename Forces<Real, Dim>::Accum> acc(n);
  cellint::Buffer<Backend, typename DensitySum<Real, Dim>::Accum> sums(n);
  const double tol = sizeof(Real) == 4 ? 1e-4 : 1e-10;
  int failures = 0;
  for (const cellint::StrategyKind strategy : strategies) {
    if (strategy != cellint::StrategyKind::Auto && (!cellint::supports(strategy, grid, dens).ok ||
                                                    !cellint::supports(strategy, grid, forces).ok))
      continue;  // reported by the lattice check
    const auto rep = strategy == cellint::StrategyKind::Auto
                         ? cellint::interact(grid, forces, acc.data())
                         : cellint::interact_with(strategy, grid, forces, acc.data());
    if (strategy == cellint::StrategyKind::Auto) cellint::interact(grid, dens, sums.data());
    else
      cellint::interact_with(strategy, grid, dens, sums.data());
    Backend::synchronize(grid.stream());
    const auto f =
        grid.to_user_order(static_cast<const typename Forces<Real, Dim>::Accum*>(acc.data()));
    const auto s =
        grid.to_user_order(static_cast<const typename DensitySum<Real, Dim>::Accum*>(sums.data()));
    double ea = 0, ed = 0, ew = 0;
    for (std::size_t i = 0; i < n; ++i) {
      for (int d = 0; d < Dim; ++d)
        ea = std::max(ea, std::fabs(static_cast<double>(f[i].a[d]) - fref[i].a[d]) / ascale);
      ed = std::max(ed, std::fabs(static_cast<double>(f[i].drho) - fref[i].drho) / dscale);
      ew = std::max(ew, std::fabs(static_cast<double>(s[i].mass_w) - dref[i].mass_w) / wscale);
    }
    const bool ok = ea <= tol && ed <= tol && ew <= tol;
    std::printf(
        "  %s box, %s, disordered state vs O(N^2) double: relative errors a %.2e, drho/dt %.2e, "
        "density sum %.2e (tolerance %.0e): %s\n",
        periodic ? "periodic" : "open", cellint::to_string(rep.strategy), ea, ed, ew, tol,
        ok ? "passed" : "FAILED");
    if (!ok) ++failures;
  }
  return failures;
}

/// A still square lattice of fluid (spacing dx, h = h_factor dx, m = rho0 dx^Dim): the density
/// sum at every particle far from any free surface must be rho0 within `lattice_tol`, the
/// Shepard ratio rho0 (to rounding), and the pressure acceleration and density rate of a
/// uniform pressure zero (to rounding). Checked in a periodic box (every particle) and in an
/// open box (particles at least 2h inside), with the strategy of --strategy, or with every
/// strategy of the backend for `--strategy all` (the functors under each GPU kernel).
template <class Backend, class Real, int Dim>
int lattice_check(const Options& o) {
  const Params P(o);
  const KernelKind kind = parse_kernel(o.kernel);
  std::vector<cellint::StrategyKind> strategies;
  if (o.strategy == "all") strategies = cellint::strategies_for<Backend>();
  else
    strategies.push_back(parse_strategy(o.strategy));
  const int side = Dim == 2 ? 32 : 14;  // particles per side (periodic: >= 3 cells of 2h)
  const double len = side * P.dx;
  int failures = 0, runs = 0;
  std::printf(
      "cellint SPH uniform-lattice check: %d-D, %d^%d particles, dx %.4g m, h %.4g dx, %s kernel, "
      "precision %s, backend %s\n",
      Dim, side, Dim, P.dx, o.h_factor, o.kernel.c_str(), sizeof(Real) == 4 ? "float" : "double",
      Backend::name());
  for (int periodic = 1; periodic >= 0; --periodic) {
    auto box = cellint::Box<Real, Dim>::cube(Real(0), static_cast<Real>(len), periodic != 0);
    cellint::CellGrid<Backend, Real, Dim> grid(box, static_cast<Real>(2 * P.h));
    std::array<std::vector<Real>, Dim> x;
    const std::size_t n = static_cast<std::size_t>(std::pow(side, Dim));
    for (std::size_t i = 0; i < n; ++i) {
      std::size_t r = i;
      for (int d = 0; d < Dim; ++d) {
        x[d].push_back(static_cast<Real>((static_cast<double>(r % side) + 0.5) * P.dx));
        r /= side;
      }
    }
    grid.build(x);
    const double p_uniform = 5000.0;  // any uniform pressure: its gradient must vanish
    std::vector<Real> mass(n, static_cast<Real>(P.mass)), rho(n, static_cast<Real>(P.rho0)),
        p(n, static_cast<Real>(p_uniform));
    std::vector<int> wall(n, 0);
    std::vector<Vec<Real, Dim>> zero(n, Vec<Real, Dim>{});
    Attributes<Real, Dim> at;
    at.mass = grid.template attach<Real>(mass.data());
    at.wall = grid.template attach<int>(wall.data());
    at.vel = at.vel_pred = grid.template attach<Vec<Real, Dim>>(zero.data());
    at.rho = at.rho_pred = grid.template attach<Real>(rho.data());
    at.pressure = grid.template attach<Real>(p.data());
    const auto kernel = SphKernel<Real, Dim>::make(kind, P.h);
    const DensitySum<Real, Dim> dens{kernel, at.mass, at.rho, at.wall};
    Forces<Real, Dim> forces{};
    forces.kernel = kernel;
    forces.alpha_c0 = static_cast<Real>(o.alpha * P.c0);
    forces.eta2 = static_cast<Real>(0.01 * P.h * P.h);
    forces.delta_h_c0_2 = static_cast<Real>(2 * o.delta * P.h * P.c0);
    forces.gravity = 0;
    forces.attr = at;
    cellint::Buffer<Backend, typename DensitySum<Real, Dim>::Accum> sums(n);
    cellint::Buffer<Backend, typename Forces<Real, Dim>::Accum> acc(n);

    for (const cellint::StrategyKind strategy : strategies) {
      const char* name = cellint::to_string(strategy);
      if (strategy != cellint::StrategyKind::Auto) {
        const cellint::Support sd = cellint::supports(strategy, grid, dens),
                               sf = cellint::supports(strategy, grid, forces);
        if (!sd.ok || !sf.ok) {
          std::printf("  %s box, %s: skipped (%s)\n", periodic ? "periodic" : "open", name,
                      (sd.ok ? sf : sd).reason.c_str());
          continue;
        }
      }
      const auto rep_d = strategy == cellint::StrategyKind::Auto
                             ? cellint::interact(grid, dens, sums.data())
                             : cellint::interact_with(strategy, grid, dens, sums.data());
      const auto rep_f = strategy == cellint::StrategyKind::Auto
                             ? cellint::interact(grid, forces, acc.data())
                             : cellint::interact_with(strategy, grid, forces, acc.data());
      Backend::synchronize(grid.stream());
      const auto s = grid.to_user_order(
          static_cast<const typename DensitySum<Real, Dim>::Accum*>(sums.data()));
      const auto f =
          grid.to_user_order(static_cast<const typename Forces<Real, Dim>::Accum*>(acc.data()));
      // interior: at least one support radius from an open face
      auto interior = [&](std::size_t i) {
        if (periodic) return true;
        for (int d = 0; d < Dim; ++d)
          if (x[d][i] < 2 * P.h || x[d][i] > len - 2 * P.h) return false;
        return true;
      };
      // scale of one pair term of the pressure acceleration: 2 p / rho^2 m |grad W| ~ 2 p / (rho h)
      const double a_scale = 2 * p_uniform / (P.rho0 * P.h);
      double dev = 0, shep = 0, amax = 0, dmax = 0;
      std::size_t checked = 0;
      for (std::size_t i = 0; i < n; ++i) {
        if (!interior(i)) continue;
        ++checked;
        const double w0 = static_cast<double>(kernel.self()) * P.mass;
        const double r = static_cast<double>(s[i].mass_w) + w0;
        const double r_shepard = r / (static_cast<double>(s[i].vol_w) + w0 / P.rho0);
        dev = std::max(dev, std::fabs(r / P.rho0 - 1));
        shep = std::max(shep, std::fabs(r_shepard / P.rho0 - 1));
        double a2 = 0;
        for (int d = 0; d < Dim; ++d)
          a2 += static_cast<double>(f[i].a[d]) * static_cast<double>(f[i].a[d]);
        amax = std::max(amax, std::sqrt(a2) / a_scale);
        dmax = std::max(dmax, std::fabs(static_cast<double>(f[i].drho)));
      }
      const double round = std::numeric_limits<Real>::epsilon() * 1e3;
      const bool ok =
          checked > 0 && dev <= o.lattice_tol && shep <= round && amax <= round && dmax == 0;
      const std::string ran = strategy == cellint::StrategyKind::Auto
                                  ? std::string("auto: ") + cellint::to_string(rep_d.strategy) +
                                        " / " + cellint::to_string(rep_f.strategy)
                                  : name;
      std::printf(
          "  %s box, %s: %zu particles checked: max |rho/rho0 - 1| = %.3e (tolerance %.3g), "
          "Shepard "
          "%.3e, |a| of uniform p %.3e (relative), |drho/dt| %.3e: %s\n",
          periodic ? "periodic" : "open", ran.c_str(), checked, dev, o.lattice_tol, shep, amax,
          dmax, ok ? "passed" : "FAILED");
      ++runs;
      if (!ok) ++failures;
    }
    failures += disorder_check<Backend, Real, Dim>(o, P, kernel, strategies, side, periodic != 0);
  }
  const bool ok = failures == 0 && runs > 0;
  std::printf("Lattice check: %s\n", ok ? "passed" : "FAILED");
  return ok ? 0 : 1;
}

// ---- the program --------------------------------------------------------------------------------

/// Writes the JSON summary of a run.
template <class Backend, class Real, int Dim>
void write_json(const Options& o, const Params& P, const Result& r, const std::string& device,
                int threads, const std::vector<std::array<double, 3>>& checks) {
  FILE* f = std::fopen(o.json.c_str(), "w");
  if (!f) throw std::runtime_error("cannot write " + o.json);
  std::fprintf(f, "{\n  \"program\": \"cellint_sph\",\n  \"cellint_version\": \"%s\",\n",
               CELLINT_VERSION_STRING);
  std::fprintf(f, "  \"backend\": \"%s\",\n  \"device\": \"%s\",\n  \"host_threads\": %d,\n",
               Backend::name(), device.c_str(), threads);
  std::fprintf(f, "  \"precision\": \"%s\",\n  \"dim\": %d,\n  \"resolution\": %d,\n",
               sizeof(Real) == 4 ? "float" : "double", Dim, o.resolution);
  std::fprintf(
      f,
      "  \"fluid_particles\": %zu,\n  \"wall_particles\": %zu,\n  \"dx\": %.8g,\n  \"h\": %.8g,\n",
      r.fluid, r.walls, P.dx, P.h);
  std::fprintf(f,
               "  \"c0\": %.8g,\n  \"kernel\": \"%s\",\n  \"alpha\": %.6g,\n  \"delta\": %.6g,\n  "
               "\"shepard\": %d,\n",
               P.c0, o.kernel.c_str(), o.alpha, o.delta, o.shepard);
  std::fprintf(f,
               "  \"steps\": %ld,\n  \"t_end\": %.8g,\n  \"T_end\": %.6g,\n  \"loop_s\": %.6g,\n  "
               "\"setup_s\": %.6g,\n",
               r.steps, r.t, r.T, r.loop_s, r.setup_s);
  const double sps = r.loop_s > 0 ? r.steps / r.loop_s : 0;
  std::fprintf(f, "  \"steps_per_s\": %.6g,\n  \"particle_steps_per_s\": %.6g,\n", sps,
               sps * static_cast<double>(r.fluid + r.walls));
  std::fprintf(f,
               "  \"breakdown_s\": {\"forces\": %.6g, \"density\": %.6g, \"neigh\": %.6g, "
               "\"integrate\": %.6g, "
               "\"stats\": %.6g, \"output\": %.6g},\n",
               r.pair_s, r.density_s, r.neigh_s, r.integrate_s, r.stats_s, r.output_s);
  std::fprintf(
      f, "  \"strategy_forces\": \"%s\",\n  \"strategy_density\": \"%s\",\n  \"tuning_s\": %.6g,\n",
      r.strategy_forces.c_str(), r.strategy_density.c_str(), r.tuning_s);
  std::fprintf(f, "  \"tuning_loop_s\": %.6g,\n", r.tuning_loop_s);
  std::fprintf(f, "  \"neighbours\": \"%s\",\n  \"skin_h\": %.6g,\n  \"list_rebuilds\": %ld,\n  \"sorts\": %ld,\n",
               r.neighbours.c_str(), r.neighbours == "none" ? 0.0 : o.skin, r.list_rebuilds, r.sorts);
  std::fprintf(f,
               "  \"rho_range\": [%.6g, %.6g],\n  \"escaped\": %.0f,\n  \"over_walls\": %.0f,\n"
               "  \"inert\": %.0f,\n",
               r.rho_min, r.rho_max, r.max_escaped, r.max_over, r.inert);
  std::fprintf(f, "  \"mass_start\": %.17g,\n  \"mass_end\": %.17g,\n", r.mass0, r.mass1);
  std::fprintf(f, "  \"front_vs_martin_moyce\": [");
  for (std::size_t k = 0; k < checks.size(); ++k)
    std::fprintf(f, "%s{\"T\": %.4g, \"Z_sim\": %.5g, \"Z_exp\": %.5g}", k ? ", " : "",
                 checks[k][0], checks[k][1], checks[k][2]);
  std::fprintf(f, "],\n  \"front\": [");
  const std::size_t stride = std::max<std::size_t>(1, r.front.size() / 400);
  for (std::size_t k = 0; k < r.front.size(); k += stride)
    std::fprintf(f, "%s[%.5g, %.5g]", k ? ", " : "", r.front[k].T, r.front[k].Z);
  std::fprintf(f, "]\n}\n");
  std::fclose(f);
}

/// Simulated Z/a at non-dimensional time T (linear interpolation in the samples; -1 if not
/// reached).
inline double front_at(const std::vector<FrontSample>& s, double T) {
  for (std::size_t k = 1; k < s.size(); ++k)
    if (s[k].T >= T)
      return s[k - 1].Z + (s[k].Z - s[k - 1].Z) * (T - s[k - 1].T) / (s[k].T - s[k - 1].T);
  return -1;
}

/// Runs the dam break described by `o` on `Backend` and prints the summary. Returns 0, or 1
/// when --check is given and a check fails.
template <class Backend, class Real, int Dim>
int run(const Options& o) {
  if (o.lattice) return lattice_check<Backend, Real, Dim>(o);
  const cellint::DeviceProperties props = Backend::properties();
  const std::string device = props.name;
  const int threads = Backend::is_gpu_like ? 0 : props.multiprocessors;
  const Params P(o);
  Simulation<Backend, Real, Dim> sim(o, P);
  const auto& geo = sim.grid().geometry();
  std::printf("cellint %s SPH dam break (%d-D): %d particles (%zu fluid, %zu boundary)\n",
              CELLINT_VERSION_STRING, Dim, sim.size(), sim.fluid(),
              static_cast<std::size_t>(sim.size()) - sim.fluid());
  std::printf(
      "  column a = %.4g m x H = %.4g m, tank %.4g m long, walls %.4g m high%s; dx = %.4g m "
      "(a/%d), "
      "h = %.3g dx, %s kernel\n",
      P.a, P.H, P.L, P.Htank, Dim == 3 ? (", depth " + std::to_string(P.W) + " m").c_str() : "",
      P.dx, o.resolution, o.h_factor, o.kernel.c_str());
  std::printf(
      "  c0 = %.4g m/s (%.3g sqrt(2gH)), alpha = %.3g, delta = %.3g, Shepard every %d steps, CFL "
      "%.3g, "
      "%d boundary layers\n",
      P.c0, o.c0_factor, o.alpha, o.delta, o.shepard, o.cfl, P.layers);
  std::string cells;
  for (int d = 0; d < Dim; ++d) cells += (d ? "x" : "") + std::to_string(geo.cells[d]);
  const std::string mode = list_mode<Backend>(o);
  char skin[32];
  std::snprintf(skin, sizeof skin, "%g", o.skin);
  const std::string search = mode == "none" ? "re-binned every step, strategy " + o.strategy
                                            : mode + " Verlet list, skin " + skin + " h, re-sorted every " +
                                                  std::to_string(o.sort) + " steps";
  std::printf("  backend %s (%s%s), precision %s, grid %s cells of width >= 2h, %s\n", Backend::name(), device.c_str(),
              threads ? (", " + std::to_string(threads) + " threads").c_str() : "",
              sizeof(Real) == 4 ? "float" : "double", cells.c_str(), search.c_str());
  std::printf("  until T = t sqrt(2g/a) = %.3g (t = %.4g s)%s\n", o.t_end, o.t_end / P.t_scale,
              o.steps > 0 ? (", at most " + std::to_string(o.steps) + " steps").c_str() : "");
  std::fflush(stdout);

  const Result r = sim.run();

  const std::size_t n = r.fluid + r.walls;
  const double sps = r.loop_s > 0 ? r.steps / r.loop_s : 0;
  std::printf(
      "Loop time of %.4g s for %ld steps with %zu particles on %s: %.4g steps/s, %.4g "
      "particle-steps/s\n",
      r.loop_s, r.steps, n,
      Backend::is_gpu_like ? device.c_str()
                           : ("host, " + std::to_string(threads) + " threads").c_str(),
      sps, sps * static_cast<double>(n));
  const double tot = r.loop_s > 0 ? r.loop_s : 1;
  std::printf(
      "Breakdown: forces %.3g s (%.1f%%), density %.3g s (%.1f%%), neigh %.3g s (%.1f%%), "
      "integrate %.3g s "
      "(%.1f%%), stats %.3g s (%.1f%%), output %.3g s (%.1f%%); setup %.3g s\n",
      r.pair_s, 100 * r.pair_s / tot, r.density_s, 100 * r.density_s / tot, r.neigh_s,
      100 * r.neigh_s / tot, r.integrate_s, 100 * r.integrate_s / tot, r.stats_s,
      100 * r.stats_s / tot, r.output_s, 100 * r.output_s / tot, r.setup_s);
  if (r.neighbours != "none")
    std::printf("Neighbours: %s Verlet list, skin %.3g h, %ld rebuilds and %ld re-sorts in %ld steps\n",
                r.neighbours.c_str(), o.skin, r.list_rebuilds, r.sorts, r.steps);
  else if (o.strategy == "auto" && r.tuning_loop_s > 0)
    std::printf(
        "Strategy: forces %s, density %s, chosen by Auto (timing candidates: %.3g s in the setup, "
        "%.3g s inside the loop when the cell occupancy changed; %.4g steps/s without it)\n",
        r.strategy_forces.c_str(), r.strategy_density.c_str(), r.tuning_s - r.tuning_loop_s,
        r.tuning_loop_s, r.loop_s > r.tuning_loop_s ? r.steps / (r.loop_s - r.tuning_loop_s) : 0.0);
  else if (o.strategy == "auto")
    std::printf(
        "Strategy: forces %s, density %s, chosen by Auto (timing candidates: %.3g s, in the "
        "setup)\n",
        r.strategy_forces.c_str(), r.strategy_density.c_str(), r.tuning_s);
  else
    std::printf("Strategy: forces %s, density %s, as requested\n", r.strategy_forces.c_str(),
                r.strategy_density.c_str());
  std::printf("Time step: %.3e .. %.3e s; simulated t = %.5g s (T = %.4g)\n", r.dt_min, r.dt_max,
              r.t, r.T);
  std::printf("Mass: start %.17g kg, end %.17g kg, every particle's mass unchanged: %s\n", r.mass0,
              r.mass1, r.masses_identical ? "yes" : "NO");
  std::printf("Fluid density over the run: %.4f .. %.4f rho0\n", r.rho_min, r.rho_max);
  std::printf(
      "Fluid particles outside the tank (most at once): %.0f behind a wall surface, %.0f over the "
      "wall tops\n",
      r.max_escaped, r.max_over);
  if (r.inert > 0)
    std::printf(
        "Splash: %.0f fluid particle(s) left the computational box (y up to %.3g m) and were made "
        "inert\n",
        r.inert, static_cast<double>(geo.box.origin[1] + geo.box.lengths[1]));

  // front against Martin & Moyce, while it is on the floor (before it reaches the far wall)
  std::vector<std::array<double, 3>> cmp;
  for (double T : {0.5, 1.0, 1.5, 2.0, 2.5, 3.0}) {
    const double zs = front_at(r.front, T), ze = interpolate(martin_moyce(), T);
    if (zs < 0 || std::max(zs, ze) > o.tank_length - 0.25)
      continue;  // not reached, or at the far wall
    if (cmp.empty())
      std::printf("Front Z/a vs Martin & Moyce (1952), n^2 = 2:\n  %6s %8s %8s %8s\n", "T", "sim",
                  "exp", "sim/exp");
    cmp.push_back({T, zs, ze});
    std::printf("  %6.2f %8.3f %8.3f %8.3f\n", T, zs, ze, zs / ze);
  }
  if (!o.json.empty()) write_json<Backend, Real, Dim>(o, P, r, device, threads, cmp);
  if (!o.check) return 0;

  int failed = 0;
  auto report = [&](bool ok, const std::string& what) {
    std::printf("  %-72s %s\n", what.c_str(), ok ? "passed" : "FAILED");
    failed += ok ? 0 : 1;
  };
  std::printf("Checks:\n");
  char buf[256];
  std::snprintf(buf, sizeof buf,
                "total mass constant (%.17g -> %.17g kg, per particle bit for bit)", r.mass0,
                r.mass1);
  report(r.mass0 == r.mass1 && r.masses_identical, buf);
  std::snprintf(buf, sizeof buf, "fluid density within [%.3g, %.3g] rho0 (seen %.4f .. %.4f)",
                o.rho_low, o.rho_high, r.rho_min, r.rho_max);
  report(r.rho_min >= o.rho_low && r.rho_max <= o.rho_high, buf);
  std::snprintf(buf, sizeof buf,
                "no fluid particle behind a wall surface or over a wall (most at once: %.0f, %.0f)",
                r.max_escaped, r.max_over);
  report(r.max_escaped == 0 && r.max_over == 0, buf);
  std::snprintf(buf, sizeof buf, "no fluid particle left the domain (%.0f did)", r.inert);
  report(r.inert == 0, buf);
  int fronts = 0;
  for (double T : {1.5, 2.0, 2.5}) {
    const double zs = front_at(r.front, T), ze = interpolate(martin_moyce(), T);
    if (zs < 0 || ze > o.tank_length - 0.25)
      continue;  // not reached, or the experiment is past the far wall
    ++fronts;
    std::snprintf(buf, sizeof buf,
                  "front at T = %.1f: Z/a = %.3f within [%.0f%%, +%.0f%%] of Martin & Moyce's %.3f",
                  T, zs, -100 * o.front_tol_low, 100 * o.front_tol_high, ze);
    report(zs >= (1 - o.front_tol_low) * ze && zs <= (1 + o.front_tol_high) * ze, buf);
  }
  report(fronts > 0, "the run reached T = 1.5 (front compared at least once)");
  std::printf("Check: %s\n", failed ? "FAILED" : "passed");
  return failed ? 1 : 0;
}

}  // namespace sph
