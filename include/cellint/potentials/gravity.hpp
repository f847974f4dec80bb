#pragma once
/// @file
/// Newtonian gravity with Plummer softening, for every pair (no cutoff: `cutoff_test = false`), to be run by the
/// all-pairs strategy on GPUs and brute-force on the CPU (see strategies/all_pairs.hpp).
///
/// With s = r^2 + eps^2 and dr = x_i - x_j, the acceleration of particle i is a_i = -G sum_j m_j dr / s^(3/2) and its
/// potential phi_i = -G sum_j m_j / s^(1/2); the total potential energy is sum_i m_i phi_i / 2. The softening keeps
/// close encounters finite (the force peaks at r = eps / sqrt(2)).

#include "cellint/core/math.hpp"
#include "cellint/core/pair_functor.hpp"
#include "cellint/grid/grid_view.hpp"

namespace cellint {

/// What the Plummer functors share: the parameters, the payload (G m, formed when a source is read: once per tile in
/// the all-pairs strategy) and eps^2 + |dr|^2.
template <class Real, int Dim>
struct PlummerParams {
  /// What a particle carries: G times its mass.
  struct Payload {
    Real gm;  ///< G m
  };
  static constexpr bool cutoff_test = false;  ///< every pair, whatever the distance
  Real G = 1;                                 ///< gravitational constant
  Real softening2 = 0;                        ///< eps^2
  Attribute<Real> mass{};                     ///< the handle grid.attach(masses) returned

  /// The payload of particle i: G times its mass.
  template <class View>
  CELLINT_HD Payload load(const View& v, Index i) const {
    return {G * v.attribute(mass)[i]};
  }
  /// eps^2 + |dr|^2 as a chain of multiply-adds. The pair term's own |dr|^2 is then unused (no cutoff test) and the
  /// compiler drops it: one instruction fewer per pair than r2 + eps^2.
  CELLINT_HD Real softened2(const Vec<Real, Dim>& dr) const {
    Real s2 = softening2;
    for (int d = 0; d < Dim; ++d) s2 += dr[d] * dr[d];
    return s2;
  }
};

/// Plummer-softened gravity: the acceleration (`Accum` of Dim values). Per pair: dr (Dim subtractions), s = eps^2 +
/// |dr|^2 (Dim multiply-adds), one reciprocal square root, its cube (two multiplications), the weight (one
/// multiplication) and Dim multiply-adds.
/// @tparam Real position type; @tparam Dim 2 or 3; @tparam Acc accumulation type; @tparam Math ExactMath (correctly
/// rounded square root and division) or FastMath (the hardware's reciprocal square root in float on GPUs).
template <class Real, int Dim, class Acc = Real, class Math = ExactMath>
struct PlummerGravity : PlummerParams<Real, Dim> {
  using Payload = typename PlummerParams<Real, Dim>::Payload;  ///< G m
  /// The acceleration of a particle.
  struct Accum {
    Acc a[Dim];  ///< acceleration
  };
  using AccumScalar = Acc;  ///< Accum is Dim values of Acc
  /// Floating-point operations executed per pair, counting a multiply-add as two and the reciprocal square root as
  /// one: Dim (dr) + 2 Dim (s, multiply-adds) + 1 (rsqrt) + 2 (cube) + 1 (weight) + 2 Dim (a) = 5 Dim + 4 (14 in 2D).
  static constexpr int flops = 5 * Dim + 4;

  /// Adds source s's pull: acc -= G m_s dr / (eps^2 + |dr|^2)^(3/2).
  CELLINT_HD void operator()(Accum& acc, const Payload&, const Payload& s, const Vec<Real, Dim>& dr, Real) const {
    const Real inv = Math::rsqrt(this->softened2(dr));
    const Real w = s.gm * (inv * inv * inv);
    for (int d = 0; d < Dim; ++d) acc.a[d] -= static_cast<Acc>(w * dr[d]);
  }
};

/// The Plummer-softened potential of each particle (`Accum` of one value): phi_i = -G sum_j m_j / sqrt(r^2 + eps^2).
/// Evaluated on output steps only, as the energy of a Lennard-Jones run.
template <class Real, int Dim, class Acc = Real, class Math = ExactMath>
struct PlummerPotential : PlummerParams<Real, Dim> {
  using Payload = typename PlummerParams<Real, Dim>::Payload;  ///< G m
  /// The potential of a particle.
  struct Accum {
    Acc phi;  ///< potential (energy per unit mass)
  };
  using AccumScalar = Acc;  ///< one value

  /// Adds source s's potential: phi -= G m_s / sqrt(eps^2 + |dr|^2).
  CELLINT_HD void operator()(Accum& acc, const Payload&, const Payload& s, const Vec<Real, Dim>& dr, Real) const {
    acc.phi -= static_cast<Acc>(s.gm * Math::rsqrt(this->softened2(dr)));
  }
};

}  // namespace cellint
