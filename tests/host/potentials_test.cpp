// The shipped pair functors against the textbook formulas, written out independently here:
// the strategy tests compare strategies with an oracle that calls the same functor, so a wrong
// formula inside a functor would pass them all.
#include <catch2/catch.hpp>

#include <cmath>

#include "cellint/potentials/lennard_jones.hpp"

using namespace cellint;

namespace {
// V(r) = 4 eps [(sigma/s)^12 - (sigma/s)^6] with s^2 = r^2 + soft^2.
double lj_v(double eps, double sigma, double soft2, double r2) {
  const double x6 = std::pow(sigma * sigma / (r2 + soft2), 3);
  return 4 * eps * (x6 * x6 - x6);
}
}  // namespace

TEST_CASE("LennardJones gives the textbook energy, force and virial", "[host][potentials]") {
  const double eps = 1.3, sigma = 0.9, rc = 2.5, soft = 0.2;
  for (bool shifted : {false, true})
    for (double softening : {0.0, soft}) {
      const auto lj = LennardJones<double, 3>::make(eps, sigma, rc, shifted, softening);
      const double s2 = softening * softening;
      const double shift = shifted ? lj_v(eps, sigma, 0, rc * rc) : 0.0;
      for (double r : {0.8, 0.95, 1.0, 1.12, 1.5, 2.4}) {
        const Vec<double, 3> dr{r * 0.6, -r * 0.8, 0.0};
        const double r2 = r * r;
        LennardJones<double, 3>::Accum a{};
        lj(a, NoPayload{}, NoPayload{}, dr, r2);
        // F = -dV/dr along dr / r, by a central difference of the textbook V in r.
        const double h = 1e-6;
        const double dvdr = (lj_v(eps, sigma, s2, (r + h) * (r + h)) - lj_v(eps, sigma, s2, (r - h) * (r - h))) / (2 * h);
        const double fr = -dvdr / r;  // F = fr * dr
        CHECK(a.energy == Approx(0.5 * (lj_v(eps, sigma, s2, r2) - shift)).epsilon(1e-12).margin(1e-14));
        for (int d = 0; d < 3; ++d) CHECK(a.force[d] == Approx(fr * dr[d]).epsilon(1e-7).margin(1e-9));
        CHECK(a.virial == Approx(0.5 * fr * r2).epsilon(1e-7).margin(1e-9));
        // The scalar part alone.
        double f_scalar = 0;
        CHECK(lj.eval(r2, f_scalar) == Approx(lj_v(eps, sigma, s2, r2) - shift).epsilon(1e-12).margin(1e-14));
        CHECK(f_scalar == Approx(fr).epsilon(1e-7).margin(1e-9));
      }
    }
  // Shifted: the energy is 0 at the cutoff.
  const auto shifted = LennardJones<double, 3>::make(eps, sigma, rc, true);
  double fr = 0;
  CHECK(shifted.eval(rc * rc, fr) == Approx(0).margin(1e-14));
}

TEST_CASE("LennardJonesForces gives LennardJones's forces, both sides of a pair", "[host][potentials]") {
  for (bool shifted : {false, true}) {
    const auto full = LennardJones<double, 3>::make(1.3, 0.9, 2.5, shifted, 0.1);
    const auto forces = LennardJonesForces<double, 3>::make(1.3, 0.9, 2.5, shifted, 0.1);
    for (double r : {0.8, 1.0, 1.5, 2.4}) {
      const Vec<double, 3> dr{r * 0.36, r * 0.48, -r * 0.8};
      LennardJones<double, 3>::Accum a{};
      full(a, NoPayload{}, NoPayload{}, dr, r * r);
      LennardJonesForces<double, 3>::Accum b{}, bi{}, bj{};
      forces(b, NoPayload{}, NoPayload{}, dr, r * r);
      forces.symmetric(bi, bj, NoPayload{}, NoPayload{}, dr, r * r);
      for (int d = 0; d < 3; ++d) {
        CHECK(b.force[d] == a.force[d]);
        CHECK(bi.force[d] == a.force[d]);
        CHECK(bj.force[d] == -a.force[d]);
      }
    }
  }
  static_assert(sizeof(LennardJonesForces<float, 3>::Accum) == 3 * sizeof(float), "the force only");
}

TEST_CASE("LennardJonesPaper gives the softened energy, r2 recomputed from dr", "[host][potentials]") {
  LennardJonesPaper<double, 3> f;
  f.epsilon = 0.7;
  f.sigma2 = 1.2;
  f.softening2 = 0.05;
  for (double r : {0.0, 0.3, 1.0, 1.7, 3.0}) {
    const Vec<double, 3> dr{r * 0.48, r * 0.6, -r * 0.64};  // |dr| = r
    double e = 0;
    // The r2 argument is ignored: the functor takes |dr|^2 itself (pass a wrong one to show it).
    f(e, NoPayload{}, NoPayload{}, dr, -1.0);
    CHECK(e == Approx(lj_v(0.7, std::sqrt(1.2), 0.05, r * r)).epsilon(1e-12));
  }
  LennardJonesPaper<double, 2> f2;
  double e2 = 0;
  f2(e2, NoPayload{}, NoPayload{}, Vec<double, 2>{0.6, 0.8}, 1.0);
  CHECK(e2 == Approx(lj_v(1, 1, 1e-2, 1.0)).epsilon(1e-12));
}
