#pragma once
/// @file
/// Small fixed-size vector used for positions and displacements.

#include <cstdint>

#include "cellint/core/macros.hpp"

namespace cellint {

/// Index type for particles and cells.
using Index = std::int32_t;

/// A `Dim`-component vector of `Real` (Dim is 2 or 3). Trivially copyable, usable on host and device.
template <class Real, int Dim>
struct Vec {
  static_assert(Dim == 2 || Dim == 3, "cellint::Vec: Dim must be 2 or 3");
  Real v[Dim];  ///< components, x first

  /// Component access.
  CELLINT_HD constexpr Real& operator[](int d) { return v[d]; }
  /// Component access.
  CELLINT_HD constexpr const Real& operator[](int d) const { return v[d]; }
  /// A vector with every component equal to `a`.
  CELLINT_HD static constexpr Vec fill(Real a) {
    Vec r{};
    for (int d = 0; d < Dim; ++d) r.v[d] = a;
    return r;
  }
};

/// Component-wise sum.
template <class R, int D>
CELLINT_HD constexpr Vec<R, D> operator+(const Vec<R, D>& a, const Vec<R, D>& b) {
  Vec<R, D> r{};
  for (int d = 0; d < D; ++d) r[d] = a[d] + b[d];
  return r;
}
/// Component-wise difference.
template <class R, int D>
CELLINT_HD constexpr Vec<R, D> operator-(const Vec<R, D>& a, const Vec<R, D>& b) {
  Vec<R, D> r{};
  for (int d = 0; d < D; ++d) r[d] = a[d] - b[d];
  return r;
}
/// Scaling.
template <class R, int D>
CELLINT_HD constexpr Vec<R, D> operator*(R s, const Vec<R, D>& a) {
  Vec<R, D> r{};
  for (int d = 0; d < D; ++d) r[d] = s * a[d];
  return r;
}
/// Dot product.
template <class R, int D>
CELLINT_HD constexpr R dot(const Vec<R, D>& a, const Vec<R, D>& b) {
  R s = 0;
  for (int d = 0; d < D; ++d) s += a[d] * b[d];
  return s;
}
/// Squared norm.
template <class R, int D>
CELLINT_HD constexpr R norm2(const Vec<R, D>& a) {
  return dot(a, a);
}

}  // namespace cellint
