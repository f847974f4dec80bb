#pragma once
// Neighbour-cell iteration with periodic images: the shift travels with the ghost cell, so the
// hot loop computes dr = x_t - (x_s + shift) with no per-pair minimum-image work.

#include "cellint/grid/grid_view.hpp"

namespace cellint::detail {

/// Calls f(neighbour_cell, shift) for each of the up to 3^Dim cells around cell coordinates `c`
/// (c itself included). Open axes skip neighbours outside the grid; periodic axes wrap and pass
/// the image shift to add to source positions.
CELLINT_HD_WARNING_DISABLE
template <class Real, int Dim, class F>
CELLINT_HD inline void for_each_neighbor_cell(const GridGeometry<Real, Dim>& g, const Index (&c)[Dim], F&& f) {
  constexpr int count = Dim == 3 ? 27 : 9;
  for (int k = 0; k < count; ++k) {
    Index nc[Dim];
    Vec<Real, Dim> shift{};
    int rest = k;
    bool valid = true;
    for (int d = 0; d < Dim; ++d) {
      const int o = rest % 3 - 1;
      rest /= 3;
      Index v = c[d] + o;
      shift[d] = Real(0);
      if (v < 0 || v >= g.cells[d]) {
        if (!g.box.periodic[d]) { valid = false; break; }
        shift[d] = v < 0 ? -g.box.lengths[d] : g.box.lengths[d];
        v = v < 0 ? v + g.cells[d] : v - g.cells[d];
      }
      nc[d] = v;
    }
    if (valid) f(g.linear(nc), shift);
  }
}

/// Accumulates into `acc` the contributions of every source in the neighbour cells of target
/// particle `t` (position xt, payload pt), reading sources from global memory.
CELLINT_HD_WARNING_DISABLE
template <class Traits, class F, class Real, int Dim>
CELLINT_HD inline void accumulate_from_global(const GridView<Real, Dim>& v, const F& f, Index t,
                                              const Vec<Real, Dim>& xt, const typename Traits::Payload& pt,
                                              typename Traits::Accum& acc) {
  Index c[Dim];
  for (int d = 0; d < Dim; ++d) c[d] = v.geo.axis_cell(xt[d], d);
  const Real rc2 = v.geo.cutoff * v.geo.cutoff;
  for_each_neighbor_cell(v.geo, c, [&](Index cell, const Vec<Real, Dim>& shift) {
    const Index end = v.cell_start[cell + 1];
    for (Index s = v.cell_start[cell]; s < end; ++s) {
      if (s == t) continue;
      Vec<Real, Dim> dr;
      for (int d = 0; d < Dim; ++d) dr[d] = xt[d] - (v.pos[d][s] + shift[d]);
      const Real r2 = norm2(dr);
      if (!Traits::cutoff_test || r2 < rc2) f(acc, pt, Traits::load(f, v, s), dr, r2);
    }
  });
}

}  // namespace cellint::detail
