#pragma once
/// @file
/// Lennard-Jones functors: the force/energy/virial functor used by simulations, and the paper's benchmark workload
/// (softened potential energy over every candidate pair, no cutoff test).

#include "cellint/core/math.hpp"
#include "cellint/core/pair_functor.hpp"

namespace cellint {

/// Lennard-Jones 12-6 pair interaction, V(r) = 4 eps [(sigma/r)^12 - (sigma/r)^6] - V_shift.
///
/// Per target particle i it accumulates
///  - `force`:  F_i = sum_j -dV/dr * dr/r, dr = x_i - x_j (a repulsive pair pushes i away from j);
///  - `energy`: sum_j V(r_ij) / 2, so that summing over all particles gives the total energy;
///  - `virial`: sum_j (r_ij . F_ij) / 2, so that P = (N k T + sum_i virial_i / Dim... ) / V with the usual P = (N k T +
///    W / Dim) / V, W = sum over pairs of r . F.
/// With `shifted` the energy is shifted to 0 at the cutoff (forces unchanged): total energy is then conserved by
/// velocity Verlet without the jump at the cutoff. `softening2` > 0 replaces r^2 by r^2 + softening2 (the paper's
/// regularisation for random positions).
///
/// @tparam Real position type; @tparam Dim 2 or 3; @tparam Acc accumulation type (double for mixed precision with float
/// positions); @tparam Math ExactMath (IEEE division) or FastMath (the GPU's approximate reciprocal in float, see
/// core/math.hpp).
template <class Real, int Dim, class Acc = Real, class Math = ExactMath>
struct LennardJones {
  /// Per-particle result.
  struct Accum {
    Acc force[Dim];  ///< force on the particle
    Acc energy;      ///< half the potential energy of its pairs
    Acc virial;      ///< half of sum r.F over its pairs
  };
  using AccumScalar = Acc;  ///< Accum is Dim + 2 values of Acc (half neighbour lists add them)
  Real epsilon = 1;      ///< well depth
  Real sigma2 = 1;       ///< sigma squared
  Real shift = 0;        ///< energy subtracted per pair (V(rc) when shifted)
  Real softening2 = 0;   ///< added to r^2
  static constexpr int flops = 23;  ///< per evaluated pair, dr and r2 included

  /// Parameters in the usual form.
  static LennardJones make(Real epsilon, Real sigma, Real cutoff, bool shifted = false, Real softening = 0) {
    LennardJones lj;
    lj.epsilon = epsilon;
    lj.sigma2 = sigma * sigma;
    lj.softening2 = softening * softening;
    if (shifted) {
      const Real s6 = lj.sigma2 * lj.sigma2 * lj.sigma2 / (cutoff * cutoff * cutoff * cutoff * cutoff * cutoff);
      lj.shift = 4 * epsilon * (s6 * s6 - s6);
    }
    return lj;
  }

  /// Scalar part: returns V(r) and sets fr so that F_i = fr * dr. With u = 1 / (r2 + softening2), s6 = sigma^6 and c =
  /// 4 eps s6 (loop invariants): V = 4 eps [(s6 u^3)^2 - s6 u^3] = u^3 (c s6 u^3 - c) and fr = 24 eps (s6 u^3) (2 s6
  /// u^3 - 1) u = u^4 (12 c s6 u^3 - 6 c): after the reciprocal three multiplications for u^2, u^3, u^4, then one FMA
  /// and one multiplication each.
  CELLINT_HD Real eval(Real r2, Real& fr) const {
    const Real u = Math::rcp(r2 + softening2);
    const Real s6 = sigma2 * sigma2 * sigma2;
    const Real c = Real(4) * epsilon * s6;
    const Real u2 = u * u;
    const Real u3 = u2 * u;
    fr = (u2 * u2) * (Real(12) * c * s6 * u3 - Real(6) * c);
    return u3 * (c * s6 * u3 - c) - shift;
  }
  /// Accumulates the pair (dr = x_target - x_source).
  CELLINT_HD void operator()(Accum& a, const NoPayload&, const NoPayload&, const Vec<Real, Dim>& dr, Real r2) const {
    Real fr;
    const Real e = eval(r2, fr);
    for (int d = 0; d < Dim; ++d) a.force[d] += product_in<Acc>(fr, dr[d]);
    a.energy += static_cast<Acc>(Real(0.5) * e);
    a.virial += static_cast<Acc>(Real(0.5) * fr * r2);
  }
  /// Newton's-third-law form for half-shell strategies.
  CELLINT_HD void symmetric(Accum& ai, Accum& aj, const NoPayload&, const NoPayload&, const Vec<Real, Dim>& dr,
                            Real r2) const {
    Real fr;
    const Real e = eval(r2, fr);
    for (int d = 0; d < Dim; ++d) {
      ai.force[d] += product_in<Acc>(fr, dr[d]);
      aj.force[d] -= product_in<Acc>(fr, dr[d]);
    }
    ai.energy += static_cast<Acc>(Real(0.5) * e);
    aj.energy += static_cast<Acc>(Real(0.5) * e);
    ai.virial += static_cast<Acc>(Real(0.5) * fr * r2);
    aj.virial += static_cast<Acc>(Real(0.5) * fr * r2);
  }
};

/// The forces of LennardJones alone, without the energy and the virial: for the steps of a simulation that print
/// nothing (LAMMPS, too, computes energies only on its thermo steps). The Accum is the force only, so a half list or a
/// half-shell strategy adds three values into the other particle instead of five. Same parameters and `make()`.
template <class Real, int Dim, class Acc = Real, class Math = ExactMath>
struct LennardJonesForces : LennardJones<Real, Dim, Acc, Math> {
  using Full = LennardJones<Real, Dim, Acc, Math>;  ///< the functor with energy and virial
  /// Per-particle result.
  struct Accum {
    Acc force[Dim];  ///< force on the particle, as LennardJones's
  };
  using AccumScalar = Acc;          ///< Accum is Dim values of Acc
  static constexpr int flops = 15;  ///< per evaluated pair, dr and r2 included
  /// r2 = +infinity gives u = 0 and fr = -0: the force adds nothing (neighbour lists then call it without a branch)
  static constexpr bool branch_free = true;
  LennardJonesForces() = default;
  /// The forces of `lj` (its parameters).
  explicit LennardJonesForces(const Full& lj) : Full(lj) {}
  /// Parameters in the usual form (LennardJones::make()).
  static LennardJonesForces make(Real epsilon, Real sigma, Real cutoff, bool shifted = false, Real softening = 0) {
    return LennardJonesForces(Full::make(epsilon, sigma, cutoff, shifted, softening));
  }
  /// Accumulates the pair's force (dr = x_target - x_source).
  CELLINT_HD void operator()(Accum& a, const NoPayload&, const NoPayload&, const Vec<Real, Dim>& dr, Real r2) const {
    Real fr;
    this->eval(r2, fr);
    for (int d = 0; d < Dim; ++d) a.force[d] += product_in<Acc>(fr, dr[d]);
  }
  /// Newton's-third-law form for half lists and half-shell strategies.
  CELLINT_HD void symmetric(Accum& ai, Accum& aj, const NoPayload&, const NoPayload&, const Vec<Real, Dim>& dr,
                            Real r2) const {
    Real fr;
    this->eval(r2, fr);
    for (int d = 0; d < Dim; ++d) {
      ai.force[d] += product_in<Acc>(fr, dr[d]);
      aj.force[d] -= product_in<Acc>(fr, dr[d]);
    }
  }
};

/// The paper's benchmark workload (section 7.1): per particle, the softened LJ potential energy 4 eps
/// [(s2/(r2+soft2))^6 - (s2/(r2+soft2))^3] summed over every particle of the 3^Dim neighbour cells, without a cutoff
/// test. The paper counts 21 flop per candidate pair.
/// @tparam Acc accumulation type (double for mixed precision); @tparam Math ExactMath (the paper's build: plain -O3,
/// IEEE division) or FastMath (approximate reciprocal on GPUs).
template <class Real, int Dim, class Acc = Real, class Math = ExactMath>
struct LennardJonesPaper {
  using Accum = Acc;                ///< potential energy of the particle
  static constexpr bool cutoff_test = false;  ///< no cutoff test: every pair of the 3^Dim neighbour cells counts
  static constexpr int flops = 21;  ///< the paper's count (sqrt counted as 1)
  Real epsilon = 1;                 ///< well depth
  Real sigma2 = 1;                  ///< sigma squared
  Real softening2 = Real(1e-2);     ///< regularisation of r^2
  /// Accumulates the pair: with u = 1 / (r2 + softening2), u3 = u^3 and s6 = sigma^6, 4 eps [(s6 u3)^2 - s6 u3] = u3 (4
  /// eps s6^2 u3 - 4 eps s6): after the reciprocal two multiplications and two FMAs (the coefficients are loop
  /// invariants). r2 + softening2 is recomputed from dr with the softening added first, softening2 + dx^2 + dy^2 (+
  /// dz^2), so that it is a chain of Dim FMAs instead of a multiply, Dim - 1 FMAs and an add; the r2 argument is then
  /// unused and, without a cutoff test, never computed.
  CELLINT_HD void operator()(Acc& e, const NoPayload&, const NoPayload&, const Vec<Real, Dim>& dr, Real) const {
    Real s2 = softening2;
    for (int d = 0; d < Dim; ++d) s2 += dr[d] * dr[d];
    const Real u = Math::rcp(s2);
    const Real u3 = u * u * u;
    const Real s6 = sigma2 * sigma2 * sigma2;
    const Real b = Real(4) * epsilon * s6;
    e += static_cast<Acc>(u3 * (b * s6 * u3 - b));
  }
};

}  // namespace cellint
