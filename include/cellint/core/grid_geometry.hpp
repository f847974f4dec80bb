#pragma once
/// @file
/// Cell-grid geometry: cells per axis from the cutoff, x-fastest linear cell index.

#include <cmath>
#include <cstdint>
#include <limits>

#include "cellint/core/box.hpp"
#include "cellint/core/error.hpp"

namespace cellint {

/// Geometry of a regular cell grid over a Box. Trivially copyable; used on host and device. Cells are numbered
/// x-fastest: c = ix + nx * (iy + ny * iz), so a row of cells along X (an X-pencil) is one contiguous range of cells,
/// and of particles once binned.
template <class Real, int Dim>
struct GridGeometry {
  Box<Real, Dim> box;           ///< the box
  Real cutoff;                  ///< interaction cutoff (cell width >= cutoff on every axis)
  Index cells[Dim];             ///< cells per axis
  Real width[Dim];              ///< cell width per axis
  Real inv_width[Dim];          ///< 1 / width

  /// Total number of cells.
  CELLINT_HD Index cell_count() const {
    Index n = 1;
    for (int d = 0; d < Dim; ++d) n *= cells[d];
    return n;
  }
  /// Linear cell index of integer cell coordinates (x fastest).
  CELLINT_HD Index linear(const Index (&c)[Dim]) const {
    Index l = c[Dim - 1];
    for (int d = Dim - 2; d >= 0; --d) l = l * cells[d] + c[d];
    return l;
  }
  /// Integer cell coordinates of a linear cell index.
  CELLINT_HD void coords(Index l, Index (&c)[Dim]) const {
    for (int d = 0; d < Dim; ++d) {
      c[d] = l % cells[d];
      l /= cells[d];
    }
  }
  /// Cell coordinate along axis `d` of a coordinate already inside the box (clamped at the upper face, so a particle
  /// exactly on the upper face of an open box is in the last cell).
  CELLINT_HD Index axis_cell(Real x, int d) const {
    Index c = static_cast<Index>((x - box.origin[d]) * inv_width[d]);
    c = c < 0 ? 0 : c;
    return c >= cells[d] ? cells[d] - 1 : c;
  }
};

/// Options that shape the grid.
template <class Real>
struct GridOptions {
  /// Minimum cell width; 0 means "equal to the cutoff" (the paper's choice).
  /// Larger values give fewer, fuller cells.
  Real min_cell_width = 0;
  /// Order particles within a cell by their original index (deterministic results). Costs a radix sort on GPU backends
  /// instead of an atomic scatter.
  bool stable = false;
};

/// Builds the geometry for `box` and `cutoff`: on each axis the largest number of cells whose width is at least
/// max(cutoff, min_cell_width).
/// @throws InvalidArgument if the cutoff is not positive and finite, a box length is not positive, the cutoff exceeds
/// an open axis, or a periodic axis has fewer than 3 cells.
template <class Real, int Dim>
GridGeometry<Real, Dim> make_geometry(const Box<Real, Dim>& box, Real cutoff, Real min_cell_width = 0) {
  static const char* axis_name[3] = {"x", "y", "z"};
  CELLINT_EXPECTS(std::isfinite(cutoff) && cutoff > 0, "cellint: cutoff must be positive and finite, got ", cutoff);
  const Real w = min_cell_width > cutoff ? min_cell_width : cutoff;
  GridGeometry<Real, Dim> g{};
  g.box = box;
  g.cutoff = cutoff;
  double total = 1;
  for (int d = 0; d < Dim; ++d) {
    const Real L = box.lengths[d];
    CELLINT_EXPECTS(std::isfinite(L) && L > 0 && std::isfinite(box.origin[d]),
                    "cellint: box length along ", axis_name[d], " must be positive and finite, got ", L);
    // A box built as k cells of width w in Real arithmetic must give k cells, not k-1 because of rounding: allow 4 ulps
    // of Real. A cell may then be narrower than the cutoff by that much, which only matters for pairs whose distance
    // already rounds either way in Real.
    const double ratio = static_cast<double>(L) / static_cast<double>(w);
    const double n = std::floor(ratio * (1.0 + 4.0 * std::numeric_limits<Real>::epsilon()));
    CELLINT_EXPECTS(n >= 1, "cellint: cutoff/cell width ", w, " is larger than the box along ",
                    axis_name[d], " (length ", L, "); enlarge the box or reduce the cutoff");
    CELLINT_EXPECTS(!box.periodic[d] || n >= 3, "cellint: periodic axis ", axis_name[d], " has length ", L,
                    ", room for only ", n, " cell(s) of width >= ", w,
                    "; a periodic axis needs at least 3 cells (length >= 3 x cutoff) so that every "
                    "neighbour cell and image is distinct; enlarge the box or reduce the cutoff");
    total *= n;
    CELLINT_EXPECTS(total < 2.0e9, "cellint: the grid would have more than 2e9 cells; raise "
                    "GridOptions::min_cell_width or the cutoff");
    g.cells[d] = static_cast<Index>(n);
    g.width[d] = static_cast<Real>(static_cast<double>(L) / n);
    g.inv_width[d] = static_cast<Real>(n / static_cast<double>(L));
  }
  return g;
}

}  // namespace cellint
