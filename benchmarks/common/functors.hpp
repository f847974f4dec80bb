#pragma once
/// @file
/// Pair functors of the benchmark campaign besides the library's own Lennard-Jones functors.
///
/// The paper's Figure 8 compares the strategies under three arithmetic costs per candidate pair:
/// a "low-flop" kernel that only sums the components of dr (5 flop), the softened LJ energy
/// (LennardJonesPaper, 21 flop) and the same LJ energy with 150 added flop. None of them tests
/// the cutoff: every candidate pair of the 3^Dim neighbour cells is evaluated, as in the paper.
///
/// The `Acc` parameter is the accumulation type: `Real` for float/double runs, `double` for
/// the mixed-precision runs (float positions and pair arithmetic, double sums).

#include "cellint/core/pair_functor.hpp"
#include "cellint/core/vec.hpp"

namespace cellint::bench {

/// Low-flop variant (paper Fig. 8): accumulates the sum of the components of dr.
/// 5 flop per candidate pair in the paper's count (the sums of the positions).
template <class Real, int Dim, class Acc = Real>
struct CheapSum {
  using Accum = Acc;                    ///< per-target sum
  static constexpr bool cutoff_test = false;
  static constexpr int flops = 5;       ///< the paper's count for the low-flop kernel
  /// Accumulates the pair.
  CELLINT_HD void operator()(Acc& a, const NoPayload&, const NoPayload&, const Vec<Real, Dim>& dr, Real) const {
    Real s = dr[0];
    for (int d = 1; d < Dim; ++d) s += dr[d];
    a += static_cast<Acc>(s);
  }
};

/// High-flop variant (paper Fig. 8): the paper's LJ energy plus a chain of 75 dependent FMAs
/// (150 flop) seeded by the pair's x2, so that the compiler can neither drop nor hoist it.
/// The coefficients are run-time members (not constants) for the same reason; with
/// chain_scale = 0 the result equals the plain LJ energy up to rounding.
template <class Real, int Dim, class Acc = Real>
struct PaperLJ150 {
  using Accum = Acc;                    ///< potential energy of the particle (plus the chain term)
  static constexpr bool cutoff_test = false;
  static constexpr int chain = 75;      ///< dependent FMAs per pair
  static constexpr int flops = 21 + 2 * chain;  ///< 171 flop per candidate pair
  Real epsilon = 1;                     ///< well depth
  Real sigma2 = 1;                      ///< sigma squared
  Real softening2 = Real(1e-2);         ///< regularisation of r^2
  Real chain_a = Real(0.5);             ///< y <- y * a + b (bounded: converges to b / (1 - a))
  Real chain_b = Real(0.5);             ///< see chain_a
  Real chain_scale = Real(1e-6);        ///< weight of the chain's result in the sum
  /// Accumulates the pair.
  CELLINT_HD void operator()(Acc& e, const NoPayload&, const NoPayload&, const Vec<Real, Dim>&, Real r2) const {
    const Real x2 = sigma2 / (r2 + softening2);
    const Real x6 = x2 * x2 * x2;
    Real y = x2;
#if defined(__CUDACC__) || defined(__HIPCC__)
#  pragma unroll
#endif
    for (int k = 0; k < chain; ++k) y = y * chain_a + chain_b;
    e += static_cast<Acc>(Real(4) * epsilon * x6 * (x6 - Real(1)) + y * chain_scale);
  }
};

}  // namespace cellint::bench
