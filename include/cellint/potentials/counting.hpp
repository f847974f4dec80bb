#pragma once
/// @file
/// Neighbour counting: how many sources lie within the cutoff of each particle.

#include "cellint/core/pair_functor.hpp"

namespace cellint {

/// Counts the neighbours of each particle within the cutoff.
template <class Real, int Dim>
struct NeighborCount {
  using Accum = unsigned;  ///< number of neighbours
  static constexpr int flops = 0;  ///< no floating-point work per pair
  /// Counts the pair.
  CELLINT_HD void operator()(unsigned& n, const NoPayload&, const NoPayload&, const Vec<Real, Dim>&, Real) const { ++n; }
  /// Counts the pair for both particles.
  CELLINT_HD void symmetric(unsigned& ni, unsigned& nj, const NoPayload&, const NoPayload&, const Vec<Real, Dim>&,
                            Real) const {
    ++ni;
    ++nj;
  }
};

}  // namespace cellint
