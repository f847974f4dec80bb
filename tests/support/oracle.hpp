#pragma once
// The double-precision O(N^2) oracle and the comparison helpers every strategy test uses.

#include <algorithm>
#include <cmath>
#include <limits>
#include <sstream>
#include <string>
#include <vector>

#include "cellint/backend/host.hpp"
#include "cellint/grid/cell_grid.hpp"
#include "cellint/interact.hpp"
#include "support/generators.hpp"

namespace cellint::test {

/// A smooth test interaction with a payload read from the attribute `charge` (a per-particle q):
/// w = q_s (rc^2 - r^2)^2, accumulating the count, sum w and sum w*dr. Well conditioned, so the
/// comparison tests indexing and images rather than rounding. With `absolute` it sums
/// magnitudes instead (the scale of the tolerance).
template <class Real, int Dim, class Acc = Real>
struct Probe {
  struct Payload {
    Real q;
  };
  struct Accum {
    Acc count;
    Acc w;
    Acc wx[Dim];
  };
  using AccumScalar = Acc;  ///< (half neighbour lists add accumulators element by element)
  Real rc2;
  bool absolute = false;
  Attribute<Real> charge{};  ///< the handle grid.attach(q) returned
  static constexpr int flops = 12;
  template <class View>
  CELLINT_HD Payload load(const View& v, Index i) const {
    return {v.attribute(charge)[i]};
  }
  CELLINT_HD void operator()(Accum& a, const Payload&, const Payload& s, const Vec<Real, Dim>& dr, Real r2) const {
    const Real h = rc2 - r2;
    Real w = s.q * h * h;
    a.count += Acc(1);
    if (absolute) w = w < 0 ? -w : w;
    a.w += static_cast<Acc>(w);
    for (int d = 0; d < Dim; ++d) {
      const Real c = w * dr[d];
      a.wx[d] += static_cast<Acc>(absolute && c < 0 ? -c : c);
    }
  }
  CELLINT_HD void symmetric(Accum& ai, Accum& aj, const Payload& pi, const Payload& pj, const Vec<Real, Dim>& dr,
                            Real r2) const {
    (*this)(ai, pi, pj, dr, r2);
    Vec<Real, Dim> m;
    for (int d = 0; d < Dim; ++d) m[d] = -dr[d];
    (*this)(aj, pj, pi, m, r2);
  }
};

/// Reference results in the user's order, computed in double by brute force over all pairs
/// with the minimum image, independently of the library. Only every `stride`-th particle is a
/// target (stride 1: all), so large GPU cases stay affordable; `sampled` lists them.
template <int Dim>
struct Reference {
  std::vector<Index> sampled;
  std::vector<typename Probe<double, Dim>::Accum> value, scale;
  std::vector<typename Probe<double, Dim>::Accum> slack;  // error bound from the resolution of positions
  std::vector<unsigned> count_lo, count_hi;  // neighbour counts with r2 < rc2 (1 -+ band)
};

/// Runs the oracle on positions `p` (any precision, converted exactly to double) and charges q.
/// `pos_eps` is the absolute error a strategy may make in a coordinate difference (a couple of
/// ulps of the largest coordinate in its precision); it turns into a per-particle slack.
template <class Real, int Dim>
Reference<Dim> reference(const Box<Real, Dim>& box, typename identity<Real>::type cutoff, const typename identity<Positions<Real, Dim>>::type& p,
                         const std::vector<typename identity<Real>::type>& q, double band, Index stride = 1,
                         double pos_eps = 0) {
  const Index n = static_cast<Index>(p[0].size());
  Reference<Dim> r;
  for (Index i = 0; i < n; i += stride) r.sampled.push_back(i);
  const std::size_t m = r.sampled.size();
  r.value.assign(m, {});
  r.scale.assign(m, {});
  r.slack.assign(m, {});
  r.count_lo.assign(m, 0);
  r.count_hi.assign(m, 0);
  const double rc2 = static_cast<double>(cutoff) * cutoff;
  Probe<double, Dim> f{rc2};
  Probe<double, Dim> fa{rc2, true};
  detail::host_for(static_cast<Index>(m), [&](Index k) {
    const Index i = r.sampled[k];
    for (Index j = 0; j < n; ++j) {
      if (i == j) continue;
      Vec<double, Dim> dr;
      for (int d = 0; d < Dim; ++d) {
        double dx = static_cast<double>(p[d][i]) - static_cast<double>(p[d][j]);
        const double L = box.lengths[d];
        if (box.periodic[d]) dx -= L * std::nearbyint(dx / L);
        dr[d] = dx;
      }
      const double r2 = norm2(dr);
      if (r2 < rc2 * (1 - band)) ++r.count_lo[k];
      if (r2 < rc2 * (1 + band)) ++r.count_hi[k];
      if (r2 < rc2) {
        typename Probe<double, Dim>::Payload src{static_cast<double>(q[j])};
        f(r.value[k], src, src, dr, r2);
        fa(r.scale[k], src, src, dr, r2);
        // d(r2) <= 2 |dr| sqrt(Dim) pos_eps; dw = q 2 h d(r2); d(w dr_d) <= |dw dr_d| + |w| pos_eps
        const double h = rc2 - r2, aq = std::abs(src.q);
        const double dr2 = 2 * std::sqrt(r2 * Dim) * pos_eps + Dim * pos_eps * pos_eps;
        auto& sl = r.slack[k];
        sl.w += aq * 2 * std::abs(h) * dr2;
        for (int d = 0; d < Dim; ++d) sl.wx[d] += aq * (2 * std::abs(h) * dr2 * std::abs(dr[d]) + h * h * pos_eps);
      }
    }
  });
  return r;
}

/// Compares a strategy's results (user order) with the reference; returns "" when they agree,
/// else a description of the first few mismatches.
template <class Accum, int Dim>
std::string compare(const std::vector<Accum>& got, const Reference<Dim>& ref, double tol) {
  std::ostringstream err;
  int bad = 0;
  for (std::size_t k = 0; k < ref.sampled.size(); ++k) {
    const std::size_t i = static_cast<std::size_t>(ref.sampled[k]);
    if (i >= got.size()) return "result has too few particles";
    const auto& g = got[i];
    const auto& r = ref.value[k];
    const auto& s = ref.scale[k];
    const auto& e = ref.slack[k];
    const double cnt = static_cast<double>(g.count);
    bool ok = cnt >= ref.count_lo[k] && cnt <= ref.count_hi[k];
    ok = ok && std::abs(static_cast<double>(g.w) - r.w) <= tol * s.w + 4 * e.w + 1e-300;
    for (int d = 0; d < Dim; ++d) ok = ok && std::abs(static_cast<double>(g.wx[d]) - r.wx[d]) <= tol * s.wx[d] + 4 * e.wx[d] + 1e-300;
    if (!ok && bad++ < 5) {
      err << "particle " << i << ": count " << cnt << " (expected " << ref.count_lo[k] << ".." << ref.count_hi[k]
          << "), w " << static_cast<double>(g.w) << " vs " << r.w << " (scale " << s.w << ")";
      for (int d = 0; d < Dim; ++d) err << ", wx" << d << " " << static_cast<double>(g.wx[d]) << " vs " << r.wx[d];
      err << "\n";
    }
  }
  if (bad) err << bad << " of " << ref.sampled.size() << " checked particles differ\n";
  return err.str();
}

/// Tolerance relative to the sum of magnitudes (1e-5 float, 1e-12 double): docs/design.md, "Accuracy checks".
/// The resolution of positions is accounted for separately (Reference::slack).
template <class Real>
double tolerance() {
  return sizeof(Real) >= 8 ? 1e-12 : 1e-5;
}

/// Absolute error of a coordinate difference computed in Real for coordinates up to `max_abs`.
template <class Real>
double position_eps(double max_abs) {
  return 2.0 * max_abs * std::numeric_limits<Real>::epsilon();
}

}  // namespace cellint::test
