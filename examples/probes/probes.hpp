#pragma once
// probes: SPH-style density probes on a line through a particle cloud. The probes and the particles are two particle
// sets on two CellGrids over one box: one two-set interact(probes, cloud, f, out) gives every probe
// rho = sum_j m_j W(|x_p - x_j|, h_p). The functor reads the probes with load() (1 / h_p, an attribute of the probe
// grid) and the particles with load_source() (their mass, an attribute of the cloud grid). A direct sum in double
// checks the result.
#include <algorithm>
#include <array>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

#include "cellint/cellint.hpp"

namespace probes {

using cellint::Index;
using cellint::Vec;

/// Command-line options (see probes_main.cpp for their meaning and defaults).
struct Options {
  long n = 200000;
  long probes = 1000;
  int dim = 3;
  double h = 0.05;                  // the cutoff, and every probe's support radius unless probe_h is set
  double probe_h[2] = {0, 0};       // the first and the last probe's support radius (0: h)
  std::string kernel = "wendland";  // wendland | cubic
  std::uint64_t seed = 1;
  bool periodic = false;
  std::string precision = "float";  // float | double | mixed (float positions and terms, double sums)
  std::string backend = "auto";
  std::string strategy = "auto";
  std::string out, cloud;  // profile CSV, particle sample CSV
  long cloud_sample = 20000;
  double check_limit = 2e8;  // the direct sum covers every probe while probes x particles near the line <= this
};

/// The cloud: a Gaussian blob plus a uniform background in the unit box [0, 1)^Dim.
inline constexpr double box_length = 1;
inline constexpr double blob_sigma = 0.1;     // standard deviation per axis
inline constexpr double blob_fraction = 0.5;  // of the particles; the rest is uniform
inline constexpr double blob_centre[3] = {0.4, 0.55, 0.5};
/// Pairs closer to the cutoff than this (relative) may be counted inside or outside it by the float comparison.
inline constexpr double cutoff_slack = 1e-6;

/// Smoothing kernels with compact support h: W(r, h) = sigma_Dim / h^Dim w(r / h) for r < h, 0 beyond, of integral 1.
enum class KernelKind : int {
  CubicSpline = 0,  ///< M4 cubic spline: w = 1 - 6q^2 + 6q^3 (q < 1/2), 2 (1 - q)^3 (q < 1)
  WendlandC2 = 1    ///< Wendland C2: w = (1 - q)^4 (1 + 4q)
};

inline KernelKind kernel_kind(const std::string& s) {
  if (s == "wendland") return KernelKind::WendlandC2;
  if (s == "cubic") return KernelKind::CubicSpline;
  throw std::invalid_argument("unknown kernel '" + s + "' (wendland or cubic)");
}

/// sigma_Dim, the normalisation of kernel `k` in `dim` dimensions.
inline double kernel_sigma(KernelKind k, int dim) {
  const double pi = 3.14159265358979323846;
  if (k == KernelKind::CubicSpline) return dim == 2 ? 40 / (7 * pi) : 8 / pi;
  return dim == 2 ? 7 / pi : 21 / (2 * pi);
}

/// w(q) of kernel `k` for 0 <= q < 1 (in the functor's precision, and in double for the direct sum).
template <class T>
CELLINT_HD inline T kernel_shape(KernelKind k, T q) {
  const T t = T(1) - q;
  if (k == KernelKind::CubicSpline) return q < T(0.5) ? T(1) - T(6) * q * q * t : T(2) * t * t * t;
  const T t2 = t * t;
  return t2 * t2 * (T(1) + T(4) * q);
}

/// The pair functor: the density at a probe, each term in Real, summed in Acc. Each side has its payload type: a
/// probe's is 1 / h_p (Payload, from load(): the probe grid's attribute), a particle's its mass (SourcePayload, from
/// load_source(): the cloud grid's attribute).
template <class Real, int Dim, class Acc = Real>
struct ProbeDensity {
  struct Payload {
    Real inv_h;  ///< a probe's 1 / h_p
  };
  struct SourcePayload {
    Real m;  ///< a particle's mass
  };
  using Accum = Acc;  ///< rho at the probe
  KernelKind kind;
  Real sigma;                      ///< kernel_sigma(kind, Dim)
  cellint::Attribute<Real> inv_h;  ///< of the probe grid (targets)
  cellint::Attribute<Real> mass;   ///< of the cloud grid (sources)

  template <class View>
  CELLINT_HD Payload load(const View& v, Index i) const {
    return {v.attribute(inv_h)[i]};
  }
  template <class View>
  CELLINT_HD SourcePayload load_source(const View& v, Index j) const {
    return {v.attribute(mass)[j]};
  }
  // Called for every particle closer than the cutoff; a probe whose h_p is below it skips those beyond h_p.
  CELLINT_HD void operator()(Acc& rho, const Payload& probe, const SourcePayload& particle, const Vec<Real, Dim>&,
                             Real r2) const {
    const Real ih = probe.inv_h;
    const Real q = std::sqrt(r2) * ih;
    if (q >= Real(1)) return;
    Real norm = sigma * ih;
    for (int d = 1; d < Dim; ++d) norm *= ih;
    rho += static_cast<Acc>(particle.m * norm * kernel_shape(kind, q));
  }
};

/// Uniform and normal numbers from a seed, the same on every platform (std::mt19937_64's sequence is specified).
class Random {
 public:
  explicit Random(std::uint64_t seed) : g_(seed) {}
  /// Uniform in [0, 1).
  double uniform() { return static_cast<double>(g_() >> 11) * 0x1.0p-53; }
  /// Standard normal (Box-Muller; the second number of each pair is kept for the next call).
  double normal() {
    if (have_) {
      have_ = false;
      return next_;
    }
    const double r = std::sqrt(-2 * std::log(1 - uniform())), phi = 2 * 3.14159265358979323846 * uniform();
    next_ = r * std::sin(phi);
    have_ = true;
    return r * std::cos(phi);
  }

 private:
  std::mt19937_64 g_;
  bool have_ = false;
  double next_ = 0;
};

/// Particles (user order): positions and masses (mean 1 / n: the total mass is about 1).
struct Cloud {
  std::vector<double> x[3];
  std::vector<double> m;
};

/// The first blob_fraction n particles in the blob (an axis drawn again when it falls outside an open box, wrapped
/// into a periodic one), the others uniform in the box; masses uniform in [0.5, 1.5] / n.
inline Cloud make_cloud(long n, int dim, bool periodic, std::uint64_t seed) {
  Cloud c;
  Random rng(seed);
  const long blob = std::lround(blob_fraction * static_cast<double>(n));
  for (int d = 0; d < dim; ++d) c.x[d].resize(static_cast<std::size_t>(n));
  c.m.resize(static_cast<std::size_t>(n));
  for (long i = 0; i < n; ++i) {
    const std::size_t k = static_cast<std::size_t>(i);
    for (int d = 0; d < dim; ++d) {
      double x = 0;
      if (i >= blob) {
        x = box_length * rng.uniform();
      } else if (periodic) {
        x = blob_centre[d] + blob_sigma * rng.normal();
        x -= box_length * std::floor(x / box_length);
      } else {
        do x = blob_centre[d] + blob_sigma * rng.normal();
        while (x < 0 || x >= box_length);
      }
      c.x[d][k] = x;
    }
    c.m[k] = (0.5 + rng.uniform()) / static_cast<double>(n);
  }
  return c;
}

/// The direct sum over (probe, particle) pairs in double, from the same (rounded) inputs as the grids.
struct Direct {
  std::vector<long> probes;    // the probes summed: every one, or an even sample
  std::vector<double> rho;     // per probe summed: sum m_j W
  std::vector<double> scale;   // per probe summed: sum |m_j W| (the scale of the rounding)
  std::vector<long> terms;     // per probe summed: the particles within its h_p
  std::uint64_t pairs_lo = 0;  // pairs closer than (1 - cutoff_slack) rc
  std::uint64_t pairs_hi = 0;  // pairs closer than (1 + cutoff_slack) rc
  long tube = 0;               // particles near the probe line (see direct_sum)
  long total = 0;              // probes
  double seconds = 0;
  bool all() const { return static_cast<long>(rho.size()) == total; }
};

/// Sums, for every probe (or an even sample of `sample` probes when the probes times the particles near the line
/// exceed `limit`), m_j W(|x_p - x_j|, h_p) over every particle j, and counts the pairs within the cutoff. The probes
/// lie on one line along x, so a particle farther than the cutoff from that line is farther from every probe: the sum
/// skips those (it keeps a "tube" of radius 1.001 rc around the line), which changes nothing. Periodic axes use the
/// nearest image.
template <int Dim>
Direct direct_sum(const std::array<std::vector<double>, Dim>& p, const std::vector<double>& inv_h,
                  const std::array<std::vector<double>, Dim>& x, const std::vector<double>& m, double rc, bool periodic,
                  KernelKind kind, double limit, long sample) {
  const auto t0 = std::chrono::steady_clock::now();
  Direct r;
  const long np = static_cast<long>(p[0].size()), nx = static_cast<long>(x[0].size());
  r.total = np;
  auto image = [&](double d) { return periodic ? d - box_length * std::nearbyint(d / box_length) : d; };
  const double rc2 = rc * rc;
  const double lo2 = rc2 * (1 - cutoff_slack) * (1 - cutoff_slack), hi2 = rc2 * (1 + cutoff_slack) * (1 + cutoff_slack);
  std::vector<long> tube;
  for (long j = 0; j < nx; ++j) {
    double r2 = 0;
    for (int d = 1; d < Dim; ++d) {
      const double dr = image(x[d][static_cast<std::size_t>(j)] - p[d][0]);
      r2 += dr * dr;
    }
    if (r2 < 1.001 * 1.001 * rc2) tube.push_back(j);
  }
  r.tube = static_cast<long>(tube.size());
  if (static_cast<double>(np) * static_cast<double>(r.tube) <= limit || np <= sample) {
    for (long i = 0; i < np; ++i) r.probes.push_back(i);
  } else {
    for (long k = 0; k < sample; ++k) r.probes.push_back(k * (np - 1) / (sample - 1));
  }
  const long count = static_cast<long>(r.probes.size());
  r.rho.assign(static_cast<std::size_t>(count), 0.0);
  r.scale.assign(static_cast<std::size_t>(count), 0.0);
  r.terms.assign(static_cast<std::size_t>(count), 0);
  const double sigma = kernel_sigma(kind, Dim);
  std::uint64_t lo = 0, hi = 0;
#pragma omp parallel for schedule(dynamic, 8) reduction(+ : lo, hi)
  for (long k = 0; k < count; ++k) {
    const std::size_t i = static_cast<std::size_t>(r.probes[static_cast<std::size_t>(k)]);
    const double ih = inv_h[i], norm = sigma * std::pow(ih, Dim);
    double sum = 0, scale = 0;
    long terms = 0;
    for (long j : tube) {
      const std::size_t s = static_cast<std::size_t>(j);
      double r2 = 0;
      for (int d = 0; d < Dim; ++d) {
        const double dr = image(p[d][i] - x[d][s]);
        r2 += dr * dr;
      }
      if (r2 >= hi2) continue;
      ++hi;
      if (r2 < lo2) ++lo;
      if (r2 >= rc2) continue;
      const double q = std::sqrt(r2) * ih;
      if (q >= 1) continue;
      const double term = m[s] * norm * kernel_shape(kind, q);
      sum += term;
      scale += std::abs(term);
      ++terms;
    }
    r.rho[static_cast<std::size_t>(k)] = sum;
    r.scale[static_cast<std::size_t>(k)] = scale;
    r.terms[static_cast<std::size_t>(k)] = terms;
  }
  r.pairs_lo = lo;
  r.pairs_hi = hi;
  r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return r;
}

}  // namespace probes
