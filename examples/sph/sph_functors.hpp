#pragma once
/// @file
/// The pair functors of the SPH dam-break example: a smoothing kernel, the density sum (used for
/// the Shepard filter and the lattice check) and the momentum + continuity pass.
///
/// Both functors follow the cellint contract (cellint/core/pair_functor.hpp): a `Payload` that
/// `load()` gathers from the grid's attached attributes (sorted order), an `Accum` per target,
/// `operator()(acc, target, source, dr, r2)` with dr = x_target - x_source, called for every
/// source closer than the cutoff 2h (never for the target itself), and a `symmetric()` form so
/// that the CPU half-shell strategy (Newton's third law) can be used as well.
///
/// Notation (i target, j source): r = |dr|, q = r / h, W_ij = W(r, h), and the kernel gradient
/// grad_i W_ij = F(q) dr, where F = (dW/dr) / r <= 0 (SphKernel::grad_factor).

#include <cmath>

#include "cellint/core/pair_functor.hpp"
#include "cellint/core/vec.hpp"

namespace sph {

using cellint::Index;
using cellint::Vec;

/// Smoothing kernels with support 2h.
enum class KernelKind : int {
  CubicSpline = 0,  ///< Monaghan & Lattanzio (1985) M4 cubic spline
  WendlandC2 = 1    ///< Wendland (1995) C2, as used by DualSPHysics
};

/// W(r, h) and its gradient in `Dim` dimensions. The kind is a run-time member (the same for
/// every pair, so GPU threads never diverge on it); the object is a few scalars, copied into
/// each functor by value.
template <class Real, int Dim>
struct SphKernel {
  KernelKind kind = KernelKind::CubicSpline;
  Real h = 1;      ///< smoothing length
  Real inv_h = 1;  ///< 1 / h
  Real norm = 1;   ///< sigma_D / h^Dim: W = norm * w(q)
  Real gnorm = 1;  ///< sigma_D / h^(Dim+2): F = gnorm * (dw/dq) / q

  /// The kernel of `kind` with smoothing length `h`.
  static SphKernel make(KernelKind kind, double h) {
    const double pi = 3.14159265358979323846;
    double sigma = 0;
    if (kind == KernelKind::CubicSpline) sigma = Dim == 2 ? 10.0 / (7.0 * pi) : 1.0 / pi;
    else
      sigma = Dim == 2 ? 7.0 / (4.0 * pi) : 21.0 / (16.0 * pi);
    const double hd = Dim == 2 ? h * h : h * h * h;
    SphKernel k;
    k.kind = kind;
    k.h = static_cast<Real>(h);
    k.inv_h = static_cast<Real>(1.0 / h);
    k.norm = static_cast<Real>(sigma / hd);
    k.gnorm = static_cast<Real>(sigma / (hd * h * h));
    return k;
  }
  /// The support radius (interaction cutoff), 2h.
  Real support() const { return Real(2) * h; }

  /// W at squared distance r2 (0 beyond 2h).
  CELLINT_HD Real value(Real r2) const {
    const Real q = std::sqrt(r2) * inv_h;
    if (q >= Real(2)) return Real(0);
    if (kind == KernelKind::CubicSpline) {
      if (q < Real(1)) return norm * (Real(1) - Real(1.5) * q * q + Real(0.75) * q * q * q);
      const Real t = Real(2) - q;
      return norm * Real(0.25) * t * t * t;
    }
    const Real t = Real(1) - Real(0.5) * q;
    const Real t2 = t * t;
    return norm * t2 * t2 * (Real(2) * q + Real(1));
  }
  /// W(0), the self contribution of a density sum (w(0) = 1 for both kernels).
  CELLINT_HD Real self() const { return norm; }
  /// F(r) = (dW/dr) / r, so that grad_i W_ij = F dr with dr = x_i - x_j. Finite at r = 0.
  CELLINT_HD Real grad_factor(Real r2) const {
    const Real q = std::sqrt(r2) * inv_h;
    if (q >= Real(2)) return Real(0);
    if (kind == KernelKind::CubicSpline) {
      if (q < Real(1)) return gnorm * (Real(-3) + Real(2.25) * q);  // (-3q + 9/4 q^2) / q
      const Real t = Real(2) - q;
      return gnorm * Real(-0.75) * t * t / q;
    }
    const Real t = Real(1) - Real(0.5) * q;
    return gnorm * Real(-5) * t * t * t;  // (-5 q (1 - q/2)^3) / q
  }
};

/// Tait's equation of state with gamma = 7: p = B ((rho / rho0)^7 - 1), B = c0^2 rho0 / 7.
template <class Real>
CELLINT_HD inline Real tait_pressure(Real rho, Real rho0, Real B) {
  const Real x = rho / rho0;
  const Real x2 = x * x;
  const Real x4 = x2 * x2;
  return B * (x4 * x2 * x - Real(1));
}

/// Attribute handles of the grid (CellGrid::attach), read by the functors' load().
template <class Real, int Dim>
struct Attributes {
  cellint::Attribute<Real> mass;                 ///< particle mass
  cellint::Attribute<int> wall;                  ///< 0 fluid, 1 boundary particle, 2 fluid that left the domain (inert)
  cellint::Attribute<Vec<Real, Dim>> vel;        ///< velocity v^n (half-step velocity inside a step)
  cellint::Attribute<Real> rho;                  ///< density rho^n (half-step density inside a step)
  cellint::Attribute<Vec<Real, Dim>> vel_pred;   ///< predicted velocity the forces are evaluated with
  cellint::Attribute<Real> rho_pred;             ///< predicted density the forces are evaluated with
  cellint::Attribute<Real> pressure;             ///< Tait pressure of rho_pred
};

/// Density sum: per target i, sum_j m_j W_ij and sum_j (m_j / rho_j) W_ij over its neighbours
/// (the self term m_i W(0) is added by the caller, which knows m_i). The first is the SPH
/// summation density; their ratio is the Shepard-filtered density
///     rho_i = sum_j m_j W_ij / sum_j (m_j / rho_j) W_ij     (j over neighbours and i itself),
/// which this example applies to the fluid every `--shepard` steps (Colagrossi & Landrini 2003).
template <class Real, int Dim>
struct DensitySum {
  /// What a particle carries.
  struct Payload {
    Real m;    ///< mass
    Real rho;  ///< density the volume m / rho is taken from
    int kind;  ///< 0 fluid, 1 boundary, 2 inert (left the domain: no contribution)
  };
  /// Per-target sums.
  struct Accum {
    Real mass_w;  ///< sum_j m_j W_ij
    Real vol_w;   ///< sum_j (m_j / rho_j) W_ij
  };
  using AccumScalar = Real;  ///< Accum is two Reals (half neighbour lists add them)
  SphKernel<Real, Dim> kernel;
  cellint::Attribute<Real> mass_attr;  ///< attribute handle of the masses
  cellint::Attribute<Real> rho_attr;   ///< attribute handle of the densities
  cellint::Attribute<int> kind_attr;   ///< attribute handle of the fluid / boundary / inert flags
  static constexpr int flops = 12;

  template <class View>
  CELLINT_HD Payload load(const View& v, Index i) const {
    return {v.attribute(mass_attr)[i], v.attribute(rho_attr)[i], v.attribute(kind_attr)[i]};
  }
  CELLINT_HD void operator()(Accum& a, const Payload& t, const Payload& s, const Vec<Real, Dim>&,
                             Real r2) const {
    if (t.kind == 2 || s.kind == 2) return;
    const Real w = kernel.value(r2);
    a.mass_w += s.m * w;
    a.vol_w += s.m / s.rho * w;
  }
  CELLINT_HD void symmetric(Accum& ai, Accum& aj, const Payload& pi, const Payload& pj,
                            const Vec<Real, Dim>&, Real r2) const {
    if (pi.kind == 2 || pj.kind == 2) return;
    const Real w = kernel.value(r2);
    ai.mass_w += pj.m * w;
    ai.vol_w += pj.m / pj.rho * w;
    aj.mass_w += pi.m * w;
    aj.vol_w += pi.m / pi.rho * w;
  }
};

/// Momentum and continuity equations of weakly compressible SPH with dynamic boundary
/// particles (Crespo, Gomez-Gesteira & Dalrymple 2007). For target i and neighbours j:
///
///   dv_i/dt   = g - sum_j m_j (p_i / rho_i^2 + p_j / rho_j^2 + Pi_ij) grad_i W_ij
///   drho_i/dt = sum_j m_j (v_i - v_j) . grad_i W_ij
///             + delta h c0 sum_j 2 (rho_i - rho_j) F_ij m_j / rho_j        (fluid pairs only)
///
/// with Monaghan's (1992) artificial viscosity, for approaching pairs (v_ij . r_ij < 0) only,
///   Pi_ij = -alpha c0 mu_ij / rho_bar_ij,  mu_ij = h v_ij . r_ij / (r_ij^2 + 0.01 h^2),
/// and the density-diffusion term of Molteni & Colagrossi (2009) (delta-SPH; delta = 0 turns it
/// off). Boundary particles take part in every sum with zero velocity: their density follows
/// the continuity equation (their pressure then pushes the fluid away), their acceleration is
/// not computed (they do not move), and wall-wall pairs are skipped. Inert particles (fluid that
/// left the domain, kind 2) take part in nothing.
template <class Real, int Dim>
struct Forces {
  /// What a particle carries (read from the attached attributes).
  struct Payload {
    Vec<Real, Dim> v;  ///< velocity (predicted)
    Real rho;          ///< density (predicted)
    Real p_rho2;       ///< p / rho^2
    Real m;            ///< mass
    int wall;          ///< 0 fluid, 1 boundary particle, 2 inert
  };
  /// Per-target result.
  struct Accum {
    Vec<Real, Dim> a;  ///< acceleration, gravity included
    Real drho;         ///< d rho / dt
  };
  using AccumScalar = Real;  ///< Accum is Dim + 1 Reals (half neighbour lists add them)
  SphKernel<Real, Dim> kernel;
  Real alpha_c0 = 0;      ///< alpha * c0 (artificial viscosity)
  Real eta2 = 0;          ///< 0.01 h^2
  Real delta_h_c0_2 = 0;  ///< 2 * delta * h * c0 (density diffusion)
  Real gravity = 0;       ///< g, acting along -y
  Attributes<Real, Dim> attr;
  static constexpr int flops = 45;

  CELLINT_HD Accum init() const {
    Accum a{};
    a.a[1] = -gravity;
    return a;
  }
  template <class View>
  CELLINT_HD Payload load(const View& v, Index i) const {
    Payload p;
    p.v = v.attribute(attr.vel_pred)[i];
    p.rho = v.attribute(attr.rho_pred)[i];
    p.p_rho2 = v.attribute(attr.pressure)[i] / (p.rho * p.rho);
    p.m = v.attribute(attr.mass)[i];
    p.wall = v.attribute(attr.wall)[i];
    return p;
  }

  /// The shared part of a pair: F, v_ij . dr and the momentum factor (p_i/rho_i^2 + p_j/rho_j^2
  /// + Pi_ij), each pair term then being m * factor * F * dr.
  CELLINT_HD void pair(const Payload& pi, const Payload& pj, const Vec<Real, Dim>& dr, Real r2,
                       Real& F, Real& vdotr, Real& factor) const {
    F = kernel.grad_factor(r2);
    vdotr = Real(0);
    for (int d = 0; d < Dim; ++d) vdotr += (pi.v[d] - pj.v[d]) * dr[d];
    Real visc = Real(0);
    if (vdotr < Real(0)) {
      const Real mu = kernel.h * vdotr / (r2 + eta2);
      visc = -alpha_c0 * mu / (Real(0.5) * (pi.rho + pj.rho));
    }
    factor = pi.p_rho2 + pj.p_rho2 + visc;
  }

  /// Pairs that interact: fluid-fluid and fluid-boundary (kinds 0+0, 0+1, 1+0). Boundary pairs
  /// have no relative velocity and do not move; inert particles take part in nothing.
  CELLINT_HD static bool active(const Payload& pi, const Payload& pj) {
    return pi.wall + pj.wall < 2;
  }

  CELLINT_HD void operator()(Accum& acc, const Payload& pi, const Payload& pj,
                             const Vec<Real, Dim>& dr, Real r2) const {
    if (!active(pi, pj)) return;
    Real F, vdotr, factor;
    pair(pi, pj, dr, r2, F, vdotr, factor);
    acc.drho += pj.m * vdotr * F;
    if (!pi.wall && !pj.wall) acc.drho += delta_h_c0_2 * (pi.rho - pj.rho) * F * pj.m / pj.rho;
    if (!pi.wall) {
      const Real s = -pj.m * factor * F;
      for (int d = 0; d < Dim; ++d) acc.a[d] += s * dr[d];
    }
  }

  CELLINT_HD void symmetric(Accum& ai, Accum& aj, const Payload& pi, const Payload& pj,
                            const Vec<Real, Dim>& dr, Real r2) const {
    if (!active(pi, pj)) return;
    Real F, vdotr, factor;
    pair(pi, pj, dr, r2, F, vdotr, factor);
    // grad_j W_ji = -F dr and v_ji . (x_j - x_i) = v_ij . dr
    ai.drho += pj.m * vdotr * F;
    aj.drho += pi.m * vdotr * F;
    if (!pi.wall && !pj.wall) {
      const Real diff = delta_h_c0_2 * (pi.rho - pj.rho) * F;
      ai.drho += diff * pj.m / pj.rho;
      aj.drho -= diff * pi.m / pi.rho;
    }
    if (!pi.wall) {
      const Real s = -pj.m * factor * F;
      for (int d = 0; d < Dim; ++d) ai.a[d] += s * dr[d];
    }
    if (!pj.wall) {
      const Real s = pi.m * factor * F;
      for (int d = 0; d < Dim; ++d) aj.a[d] += s * dr[d];
    }
  }
};

}  // namespace sph
