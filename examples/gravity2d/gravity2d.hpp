#pragma once
// gravity2d: 2D gravitational N-body with Plummer softening, every pair computed exactly (the all-pairs strategy on
// GPU-like backends, brute-force on the CPU), leapfrog integration, energy and momentum checks, a two-body orbit
// check. The simulation knows nothing about backends: every per-particle loop is a functor run by
// detail::parallel_for<Backend>.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

#include "cellint/cellint.hpp"
#include "cellint/potentials/gravity.hpp"

namespace gravity2d {

using cellint::Index;

/// Command-line options (see gravity2d_main.cpp for their meaning and defaults).
struct Options {
  long n = 100000;
  int steps = 100;
  double dt = 1e-4;
  double softening = 0.01;
  double G = 1;
  std::string init = "disc";  // disc | two-body
  std::uint64_t seed = 1;
  int thermo = 0;  // 0: first and last step only
  std::string precision = "float";
  std::string math = "fast";
  std::string backend = "auto";
  std::string strategy = "default";
  unsigned threads = 0;
  int per_thread = 0;
  int splits = 0;  // all-pairs: Tuning::source_splits
  int kernel_reps = 0;
  std::string json, snapshot;
  double check_energy = -1, check_momentum = -1, check_period = -1;
};

/// Conserved quantities of a state, in double.
struct Conserved {
  double kinetic = 0, potential = 0, px = 0, py = 0;
  double total() const { return kinetic + potential; }
};

/// First half kick and drift of leapfrog (kick-drift-kick): v += dt/2 a; x += dt v.
template <class Real, class Acc, class Accum>
struct KickDrift {
  Real* x[2];
  Acc* v[2];
  const Accum* a;
  Acc half_dt, dt;
  template <class A>
  CELLINT_HD void operator()(A&, Index i) const {
    for (int d = 0; d < 2; ++d) {
      const Acc vi = v[d][i] + half_dt * a[i].a[d];
      v[d][i] = vi;
      x[d][i] += static_cast<Real>(dt * vi);
    }
  }
};

/// Second half kick: v += dt/2 a with the new accelerations.
template <class Acc, class Accum>
struct Kick {
  Acc* v[2];
  const Accum* a;
  Acc half_dt;
  template <class A>
  CELLINT_HD void operator()(A&, Index i) const {
    for (int d = 0; d < 2; ++d) v[d][i] += half_dt * a[i].a[d];
  }
};

/// What a run measured.
struct Result {
  std::string strategy;
  double loop_s = 0;
  double kernel_ms = 0;  // one force evaluation, timed alone (--kernel-reps), else 0
  cellint::LaunchShape shape{};  // the force evaluation's launch (GPU-like backends)
  Conserved start;
  double max_energy_error = 0;  // largest |E - E0| / |E0| over the thermo steps
  double max_momentum = 0;      // largest |P| / sum m|v| over the thermo steps
  double period = 0, period_expected = 0;
};

/// Initial state: positions, velocities, masses in the user's order.
struct State {
  std::vector<double> x[2], v[2], m;
};

/// A uniform disc of radius 0.5 centred in the unit square (the thesis' domain), total mass 1; velocities are set
/// later from the accelerations (circular orbits).
inline State disc(long n, std::uint64_t seed) {
  State s;
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> u(0, 1);
  for (auto* a : {&s.x[0], &s.x[1], &s.v[0], &s.v[1]}) a->resize(static_cast<std::size_t>(n));
  s.m.assign(static_cast<std::size_t>(n), 1.0 / static_cast<double>(n));
  for (long i = 0; i < n; ++i) {
    const double r = 0.5 * std::sqrt(u(rng)), phi = 2 * M_PI * u(rng);
    s.x[0][static_cast<std::size_t>(i)] = 0.5 + r * std::cos(phi);
    s.x[1][static_cast<std::size_t>(i)] = 0.5 + r * std::sin(phi);
  }
  return s;
}

/// Two equal masses 0.5 apart on a circular orbit about the centre of the unit square.
inline State two_body(double G) {
  State s;
  const double a = 0.5, m = 0.5;
  const double v = std::sqrt(G * m / (2 * a));  // m v^2 / (a/2) = G m^2 / a^2
  s.x[0] = {0.5 - a / 2, 0.5 + a / 2};
  s.x[1] = {0.5, 0.5};
  s.v[0] = {0, 0};
  s.v[1] = {-v, v};
  s.m = {m, m};
  return s;
}

/// The run: a CellGrid holds the particles (one cell: the all-pairs strategy needs none, and positions are never
/// re-binned), velocities and masses are attached attributes.
template <class Backend, class Real, class Acc, class Math>
class Simulation {
 public:
  using Grid = cellint::CellGrid<Backend, Real, 2>;
  using Force = cellint::PlummerGravity<Real, 2, Acc, Math>;
  using Potential = cellint::PlummerPotential<Real, 2, Acc, Math>;
  using Accum = typename Force::Accum;

  Simulation(const Options& o, const State& s) : o_(o), n_(static_cast<Index>(s.m.size())), grid_(box(s), cutoff(s)) {
    std::array<std::vector<Real>, 2> x;
    for (int d = 0; d < 2; ++d) x[static_cast<std::size_t>(d)].assign(s.x[d].begin(), s.x[d].end());
    grid_.build(x);
    for (int d = 0; d < 2; ++d) {
      std::vector<Acc> v(s.v[d].begin(), s.v[d].end());
      vel_[d] = grid_.template attach<Acc>(v.data());
    }
    std::vector<Real> m(s.m.begin(), s.m.end());
    mass_ = grid_.template attach<Real>(m.data());
    force_.G = potential_.G = static_cast<Real>(o.G);
    force_.softening2 = potential_.softening2 = static_cast<Real>(o.softening * o.softening);
    force_.mass = potential_.mass = mass_;
    acc_.resize(static_cast<std::size_t>(std::max<Index>(n_, 1)));
    phi_.resize(static_cast<std::size_t>(std::max<Index>(n_, 1)));
    if (o.strategy == "default")
      strategy_ = Backend::is_gpu_like ? cellint::StrategyKind::AllPairs : cellint::StrategyKind::BruteForce;
    else if (auto k = cellint::strategy_from_name(o.strategy))
      strategy_ = *k;
    else
      throw std::invalid_argument("unknown strategy '" + o.strategy + "' (" + cellint::strategy_names() + ")");
    if (strategy_ != cellint::StrategyKind::Auto) {
      cellint::Tuning t;
      t.threads = o.threads;
      t.targets_per_thread = o.per_thread;
      t.source_splits = o.splits;
      tuning_ = t;
      const cellint::Support ok = cellint::supports(strategy_, grid_, force_, tuning_);
      if (!ok.ok) throw std::invalid_argument("strategy " + o.strategy + " cannot run: " + ok.reason);
    }
  }

  /// Sets the velocities of circular orbits from the accelerations: v = sqrt(r |a . r_hat|) around the centre of
  /// mass, turning counter-clockwise.
  void circular_velocities() {
    forces();
    const auto a = grid_.to_user_order(acc_.data());
    const auto x = grid_.positions_user_order();
    std::vector<Acc> v[2];
    for (auto& w : v) w.resize(static_cast<std::size_t>(n_));
    for (Index i = 0; i < n_; ++i) {
      const std::size_t k = static_cast<std::size_t>(i);
      const double rx = double(x[0][k]) - 0.5, ry = double(x[1][k]) - 0.5, r = std::hypot(rx, ry);
      const double ar = r > 0 ? -(double(a[k].a[0]) * rx + double(a[k].a[1]) * ry) / r : 0;
      const double speed = std::sqrt(std::max(0.0, ar * r));
      v[0][k] = static_cast<Acc>(r > 0 ? -speed * ry / r : 0);
      v[1][k] = static_cast<Acc>(r > 0 ? speed * rx / r : 0);
    }
    for (int d = 0; d < 2; ++d) grid_.from_user_order(v[d], grid_.attribute(vel_[d]));
  }

  Result run() {
    Result r;
    r.strategy = cellint::to_string(strategy_);
    forces();
    start_ = r.start = measure();
    momentum_scale_ = std::max(1e-300, momentum_sum());
    double angle = 0, last_phi = orbit_angle();
    std::vector<double> turns;  // times at which the separation turned by another 2 pi
    const bool orbit = o_.init == "two-body";
    const auto t0 = std::chrono::steady_clock::now();
    for (int step = 1; step <= o_.steps; ++step) {
      kick_drift();
      forces();
      kick();
      if (orbit) {  // two bodies: follow the separation's angle every step (host copy of two positions)
        const double phi = orbit_angle();
        double d = phi - last_phi;
        d -= 2 * M_PI * std::nearbyint(d / (2 * M_PI));
        const double before = angle;
        angle += d;
        last_phi = phi;
        if (std::floor(angle / (2 * M_PI)) > std::floor(before / (2 * M_PI))) {
          const double target = 2 * M_PI * std::floor(angle / (2 * M_PI));
          turns.push_back(o_.dt * (step - 1 + (target - before) / (angle - before)));
        }
      }
      if (step == o_.steps || (o_.thermo > 0 && step % o_.thermo == 0)) {
        const Conserved c = measure();
        r.max_energy_error = std::max(r.max_energy_error, energy_error(c));
        r.max_momentum = std::max(r.max_momentum, momentum_error(c));
        print(step, c);
      }
    }
    Backend::synchronize(grid_.stream());
    r.loop_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    if (turns.size() >= 2) r.period = (turns.back() - turns.front()) / static_cast<double>(turns.size() - 1);
    if (orbit) r.period_expected = 2 * M_PI * std::sqrt(0.5 * 0.5 * 0.5 / (o_.G * 1.0));
    if (o_.kernel_reps > 0) r.kernel_ms = time_kernel(o_.kernel_reps);
    r.shape = shape_;
    if (!o_.snapshot.empty()) write_snapshot();
    return r;
  }

  void print_header() const {
    std::printf("%8s %14s %14s %14s %12s %12s\n", "Step", "Kinetic", "Potential", "Total", "dE/E0", "|dP|/sum m|v|");
  }
  void print(int step, const Conserved& c) const {
    std::printf("%8d %14.8g %14.8g %14.8g %12.3g %12.3g\n", step, c.kinetic, c.potential, c.total(),
                (c.total() - start_.total()) / std::abs(start_.total()), momentum_error(c));
    std::fflush(stdout);
  }
  Conserved measure() {
    potential();
    const auto x = grid_.positions_user_order();
    const auto phi = grid_.to_user_order(phi_.data());
    const auto m = grid_.to_user_order(grid_.attribute(mass_));
    std::vector<Acc> v[2];
    for (int d = 0; d < 2; ++d) v[d] = grid_.to_user_order(static_cast<const Acc*>(grid_.attribute(vel_[d])));
    Conserved c;
    for (Index i = 0; i < n_; ++i) {
      const std::size_t k = static_cast<std::size_t>(i);
      const double mi = m[k], vx = v[0][k], vy = v[1][k];
      c.kinetic += 0.5 * mi * (vx * vx + vy * vy);
      c.potential += 0.5 * mi * double(phi[k].phi);
      c.px += mi * vx;
      c.py += mi * vy;
    }
    return c;
  }
  Index size() const { return n_; }
  const Grid& grid() const { return grid_; }

 private:
  // An open box around the particles with room for them to spread (all-pairs ignores the cells), and a cutoff of
  // the box's length: one cell per axis.
  static cellint::Box<Real, 2> box(const State& s) {
    double lo = 0, hi = 1;
    for (int d = 0; d < 2; ++d)
      for (double v : s.x[d]) {
        if (!std::isfinite(v)) throw std::invalid_argument("a particle position is not finite");
        lo = std::min(lo, v);
        hi = std::max(hi, v);
      }
    cellint::Box<Real, 2> b;
    for (int d = 0; d < 2; ++d) {
      b.origin[d] = static_cast<Real>(lo - (hi - lo));
      b.lengths[d] = static_cast<Real>(3 * (hi - lo));
      b.periodic[d] = false;
    }
    return b;
  }
  static Real cutoff(const State& s) { return box(s).lengths[0]; }
  // |E - E0| / |E0| and |P - P0| / sum m|v| (at the start) of state c
  double energy_error(const Conserved& c) const {
    return std::abs(c.total() - start_.total()) / std::abs(start_.total());
  }
  double momentum_error(const Conserved& c) const {
    return std::hypot(c.px - start_.px, c.py - start_.py) / momentum_scale_;
  }
  double orbit_angle() {
    if (o_.init != "two-body") return 0;
    const auto x = grid_.positions_user_order();
    return std::atan2(double(x[1][1]) - double(x[1][0]), double(x[0][1]) - double(x[0][0]));
  }
  void forces() { shape_ = pass(force_, acc_.data()).shape; }
  void potential() { pass(potential_, phi_.data()); }
  template <class F, class Out>
  cellint::Report pass(const F& f, Out* out) {  // one interact() with the strategy of --strategy (Auto, or named)
    if (strategy_ == cellint::StrategyKind::Auto) return cellint::interact(grid_, f, out);
    return cellint::interact_with(strategy_, grid_, f, out, tuning_);
  }
  void kick_drift() {
    KickDrift<Real, Acc, Accum> k{{grid_.positions(0), grid_.positions(1)},
                                  {grid_.attribute(vel_[0]), grid_.attribute(vel_[1])},
                                  acc_.data(),
                                  static_cast<Acc>(0.5 * o_.dt),
                                  static_cast<Acc>(o_.dt)};
    cellint::detail::parallel_for<Backend>(n_, k, grid_.stream());
  }
  void kick() {
    Kick<Acc, Accum> k{
        {grid_.attribute(vel_[0]), grid_.attribute(vel_[1])}, acc_.data(), static_cast<Acc>(0.5 * o_.dt)};
    cellint::detail::parallel_for<Backend>(n_, k, grid_.stream());
  }
  // One force evaluation timed alone: `reps` calls between two events, after one to warm up.
  double time_kernel(int reps) {
    forces();
    typename Backend::Timer t(grid_.stream());
    t.start();
    for (int k = 0; k < reps; ++k) forces();
    t.stop();
    return t.elapsed_ms() / reps;
  }
  void write_snapshot() {
    FILE* f = std::fopen(o_.snapshot.c_str(), "w");
    if (!f) throw std::runtime_error("cannot write " + o_.snapshot);
    const auto x = grid_.positions_user_order();
    std::fprintf(f, "x,y\n");
    for (Index i = 0; i < n_; ++i)
      std::fprintf(f, "%.7g,%.7g\n", double(x[0][static_cast<std::size_t>(i)]),
                   double(x[1][static_cast<std::size_t>(i)]));
    std::fclose(f);
  }

  // The scale of the momentum check: sum m |v| now.
  double momentum_sum() {
    const auto m = grid_.to_user_order(grid_.attribute(mass_));
    std::vector<Acc> v[2];
    for (int d = 0; d < 2; ++d) v[d] = grid_.to_user_order(static_cast<const Acc*>(grid_.attribute(vel_[d])));
    double sum = 0;
    for (Index i = 0; i < n_; ++i) {
      const std::size_t k = static_cast<std::size_t>(i);
      sum += m[k] * std::hypot(double(v[0][k]), double(v[1][k]));
    }
    return sum;
  }

 private:
  Options o_;
  Index n_;
  Grid grid_;
  cellint::Attribute<Acc> vel_[2];
  cellint::Attribute<Real> mass_;
  Force force_;
  Potential potential_;
  cellint::Buffer<Backend, Accum> acc_;
  cellint::Buffer<Backend, typename Potential::Accum> phi_;
  cellint::StrategyKind strategy_ = cellint::StrategyKind::AllPairs;
  cellint::LaunchShape shape_{};  // the last force evaluation's launch
  cellint::Tuning tuning_;
  Conserved start_;            // the state run() started from
  double momentum_scale_ = 1;  // sum m|v| at the start
};

}  // namespace gravity2d
