#pragma once
/// @file
/// The simulation box: origin, edge lengths and a periodic flag per axis.

#include "cellint/core/vec.hpp"

namespace cellint {

/// Axis-aligned simulation box [origin, origin + lengths). An axis is either periodic (positions wrap, interactions see
/// periodic images) or open (a particle outside is an error).
template <class Real, int Dim>
struct Box {
  Vec<Real, Dim> origin{};   ///< lower corner
  Vec<Real, Dim> lengths{};  ///< edge lengths, all > 0
  bool periodic[Dim]{};      ///< periodic flag per axis

  /// A box with the same periodicity on every axis.
  static Box cube(Real lo, Real length, bool periodic_all) {
    Box b;
    for (int d = 0; d < Dim; ++d) {
      b.origin[d] = lo;
      b.lengths[d] = length;
      b.periodic[d] = periodic_all;
    }
    return b;
  }
  /// A box from its origin and lengths, with the same periodicity on every axis.
  static Box make(const Vec<Real, Dim>& origin, const Vec<Real, Dim>& lengths, bool periodic_all) {
    Box b;
    b.origin = origin;
    b.lengths = lengths;
    for (int d = 0; d < Dim; ++d) b.periodic[d] = periodic_all;
    return b;
  }
};

}  // namespace cellint
