#pragma once
/// @file
/// The view of a CellGrid that kernels and functors see: raw pointers plus geometry.

#include <type_traits>

#include "cellint/core/grid_geometry.hpp"

namespace cellint {

/// Maximum number of attributes that can be attached to one CellGrid.
inline constexpr int max_attributes = 8;

/// Trivially copyable view of a binned grid, passed by value to kernels and to `F::load`.
/// All pointers are backend pointers in sorted order (slot i is the i-th particle after binning).
template <class Real, int Dim>
struct GridView {
  GridGeometry<Real, Dim> geo;        ///< cells, widths, box
  const Real* pos[Dim];               ///< sorted positions, one array per axis (wrapped into the box)
  const Index* cell_start;            ///< particles of cell c are [cell_start[c], cell_start[c+1])
  const Index* original;              ///< sorted slot -> index in the user's original order
  Index n;                            ///< number of particles
  Index max_per_cell;                 ///< M_C: the largest particle count of any cell
  const void* attr[max_attributes];   ///< attached attributes, sorted like the positions

  /// Position of particle `i`.
  CELLINT_HD Vec<Real, Dim> position(Index i) const {
    Vec<Real, Dim> x;
    for (int d = 0; d < Dim; ++d) x[d] = pos[d][i];
    return x;
  }
  /// Attached attribute `k` as an array of `T` (as attached, sorted order).
  template <class T>
  CELLINT_HD const T* attribute(int k) const {
    return static_cast<const T*>(attr[k]);
  }
  /// Cell of particle `i`'s position.
  CELLINT_HD Index cell_of(const Vec<Real, Dim>& x) const {
    Index c[Dim];
    for (int d = 0; d < Dim; ++d) c[d] = geo.axis_cell(x[d], d);
    return geo.linear(c);
  }
};

static_assert(std::is_trivially_copyable<GridView<float, 3>>::value, "GridView must be trivially copyable");

}  // namespace cellint
