#pragma once
// The neighbourhood of a cell, written once: the periodic wrap of a neighbour coordinate (the
// image shift travels with the ghost cell, so the pair loop computes dr = x_t - (x_s + shift)
// with no per-pair minimum-image work), the rows of cells around a cell, the 3^Dim cells around
// it, and the search for the cell (or row) that holds a slot.

#include "cellint/strategies/detail/pairs.hpp"

namespace cellint::detail {

/// The one periodic wrap: neighbour coordinate `x` along axis `d`, at most one period outside
/// the grid. False past an open face; else `x` wrapped into the grid and `s` the image shift to
/// add to that cell's positions.
template <class Real, int Dim>
CELLINT_HD inline bool wrap_axis(const GridGeometry<Real, Dim>& g, int d, Index& x, Real& s) {
  s = Real(0);
  if (x >= 0 && x < g.cells[d]) return true;
  if (!g.box.periodic[d]) return false;
  s = x < 0 ? -g.box.lengths[d] : g.box.lengths[d];
  x = x < 0 ? x + g.cells[d] : x - g.cells[d];
  return true;
}

/// The X-row of cells at (y, z) (z ignored in 2D), wrapped: its index y + ny * z and the image
/// shift of its positions (x component 0). False off an open face.
template <class Real, int Dim>
CELLINT_HD inline bool neighbor_row(const GridGeometry<Real, Dim>& g, Index y, Index z, Index& row,
                                    Vec<Real, Dim>& shift) {
  shift[0] = Real(0);
  if (!wrap_axis(g, 1, y, shift[1])) return false;
  row = y;
  if constexpr (Dim == 3) {
    if (!wrap_axis(g, 2, z, shift[2])) return false;
    row += z * g.cells[1];
  }
  return true;
}

/// Calls fn(first_cell, end_cell, shift) for the up to 3^Dim cells around cell coordinates `c`
/// (c itself included), rows in the order z, y and x fastest. With MergeX, neighbours adjacent
/// along X in memory (same row, no periodic wrap between them) come as one range
/// [first_cell, end_cell) of up to 3 cells, whose particles are the contiguous slots
/// [cell_start[first_cell], cell_start[end_cell]); else every call is one cell. With `reach_x`, the
/// cells within reach_x of c along X instead of one (a neighbour list whose cells are 1 / reach_x of
/// its reach along X; a periodic X then needs 2 reach_x + 1 cells).
CELLINT_HD_WARNING_DISABLE
template <bool MergeX, class Real, int Dim, class Fn>
CELLINT_HD inline void for_each_neighbor_range(const GridGeometry<Real, Dim>& g, const Index (&c)[Dim], Fn&& fn,
                                               int reach_x = 1) {
  constexpr int rows = Dim == 3 ? 9 : 3;
  for (int r = 0; r < rows; ++r) {
    Vec<Real, Dim> s;
    Index row;
    if (!neighbor_row(g, c[1] + (r % 3 - 1), Dim == 3 ? c[Dim - 1] + (r / 3 - 1) : Index(0), row, s)) continue;
    row *= g.cells[0];
    for (int ox = -reach_x; ox <= reach_x;) {
      Index x = c[0] + ox;
      if (!wrap_axis(g, 0, x, s[0])) {
        ++ox;
        continue;
      }
      Index last = x;
      int e = ox + 1;
      if constexpr (MergeX) {
        for (; e <= reach_x; ++e) {
          Index x2 = c[0] + e;
          Real s2;
          if (!wrap_axis(g, 0, x2, s2) || x2 != last + 1) break;
          last = x2;
        }
      }
      fn(row + x, row + last + 1, s);
      ox = e;
    }
  }
}

/// Accumulates into `acc` every source of view `sv` in the cells around cell coordinates `c`
/// for the target at `xt` (payload pt), read from global memory; the source slot `skip` is left
/// out (see PairViews::excluded()).
CELLINT_HD_WARNING_DISABLE
template <bool MergeX, class T, class F, class Real, int Dim>
CELLINT_HD inline void accumulate_neighbors(const GridView<Real, Dim>& sv, const F& f, const Index (&c)[Dim],
                                            Index skip, const Vec<Real, Dim>& xt,
                                            const typename T::Payload& pt, typename T::Accum& acc) {
  const Real rc2 = cutoff2(sv.geo);
  for_each_neighbor_range<MergeX>(sv.geo, c, [&](Index c0, Index c1, const Vec<Real, Dim>& shift) {
    const GlobalSources<T, F, Real, Dim> src{sv, f, shift};
    accumulate_except<T>(f, src, sv.cell_start[c0], sv.cell_start[c1], skip, xt, pt, rc2, acc);
  });
}

/// accumulate_neighbors() around the cell that holds position `xt`.
CELLINT_HD_WARNING_DISABLE
template <bool MergeX, class T, class F, class Real, int Dim>
CELLINT_HD inline void accumulate_neighbors(const GridView<Real, Dim>& sv, const F& f, Index skip,
                                            const Vec<Real, Dim>& xt, const typename T::Payload& pt,
                                            typename T::Accum& acc) {
  Index c[Dim];
  for (int d = 0; d < Dim; ++d) c[d] = sv.geo.axis_cell(xt[d], d);
  accumulate_neighbors<MergeX, T>(sv, f, c, skip, xt, pt, acc);
}

/// The last i in [lo, hi] with a[i] <= v (a ascending, a[lo] <= v): the cell, row or pencil that
/// holds slot v, given their first slots.
template <class I>
CELLINT_HD inline I last_le(const Index* a, I lo, I hi, Index v) {
  while (lo < hi) {
    const I mid = (lo + hi + 1) / 2;
    if (a[mid] <= v)
      lo = mid;
    else
      hi = mid - 1;
  }
  return lo;
}

}  // namespace cellint::detail
