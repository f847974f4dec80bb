#pragma once
/// @file
/// CPU strategies: CellLoop (each target scans its 3^Dim neighbour cells; parallel over cells
/// with OpenMP) and CellLoopHalf (each pair visited once through a half-shell stencil and
/// Newton's third law; cells processed in colour classes so that threads never write the same
/// particle).

#include <vector>

#include "cellint/backend/host.hpp"
#include "cellint/core/pair_functor.hpp"
#include "cellint/grid/cell_grid.hpp"
#include "cellint/strategies/detail/neighbors.hpp"
#include "cellint/strategies/strategy.hpp"

namespace cellint::detail {

template <>
struct StrategyImpl<CellLoop> {
  template <class B, class R, int D, class F>
  static Support supports(const CellGrid<B, R, D>&, const F&, const DeviceProperties&, const Tuning&) {
    if (B::device_memory) return Support::no("cell-loop runs on host memory (Host or Emulated backend)");
    return Support::yes();
  }
  template <class B, class R, int D, class F>
  static LaunchShape run(const CellGrid<B, R, D>& grid, const F& f, typename F::Accum* out, const Tuning&) {
    if constexpr (!B::device_memory) {
      using T = FunctorTraits<F, R, D>;
      const auto v = grid.view();
      host_for(v.geo.cell_count(), [&](Index cell) {
        for (Index t = v.cell_start[cell]; t < v.cell_start[cell + 1]; ++t) {
          auto acc = T::init(f);
          accumulate_from_global<T>(v, f, t, v.position(t), T::load(f, v, t), acc);
          out[t] = acc;
        }
      });
    }
    return {};
  }
};

template <>
struct StrategyImpl<CellLoopHalf> {
  template <class B, class R, int D, class F>
  static Support supports(const CellGrid<B, R, D>&, const F&, const DeviceProperties&, const Tuning&) {
    if (B::device_memory) return Support::no("cell-loop-half runs on host memory (Host or Emulated backend)");
    if (!FunctorTraits<F, R, D>::symmetric)
      return Support::no("cell-loop-half needs the functor's symmetric() (Newton's third law) form");
    return Support::yes();
  }
  template <class B, class R, int D, class F>
  static LaunchShape run(const CellGrid<B, R, D>& grid, const F& f, typename F::Accum* out, const Tuning&) {
    using T = FunctorTraits<F, R, D>;
    if constexpr (!B::device_memory && T::symmetric) {
      const auto v = grid.view();
      const auto& g = v.geo;
      for (Index t = 0; t < v.n; ++t) out[t] = T::init(f);
      // Colour per axis: c % 3 for the first 3*floor(n/3) cells, own colours 3 and 4 for the
      // remaining ones; same-coloured cells are >= 3 apart (also across a periodic face), so the
      // +-1 cells that their half shells write never overlap.
      int ncol[D];
      for (int d = 0; d < D; ++d) ncol[d] = g.cells[d] % 3 == 0 || g.cells[d] < 3 ? (g.cells[d] < 3 ? g.cells[d] : 3) : 3 + g.cells[d] % 3;
      int colours = 1;
      for (int d = 0; d < D; ++d) colours *= ncol[d];
      std::vector<std::vector<Index>> by_colour(static_cast<std::size_t>(colours));
      for (Index cell = 0; cell < g.cell_count(); ++cell) {
        Index c[D];
        g.coords(cell, c);
        int col = 0;
        for (int d = D - 1; d >= 0; --d) {
          const Index full = g.cells[d] / 3 * 3;
          const int cd = g.cells[d] < 3 ? static_cast<int>(c[d]) : (c[d] < full ? static_cast<int>(c[d] % 3) : 3 + static_cast<int>(c[d] - full));
          col = col * ncol[d] + cd;
        }
        by_colour[static_cast<std::size_t>(col)].push_back(cell);
      }
      const R rc2 = g.cutoff * g.cutoff;
      for (const auto& cells : by_colour) {
        host_for(static_cast<Index>(cells.size()), [&](Index k) {
          const Index cell = cells[static_cast<std::size_t>(k)];
          Index c[D];
          g.coords(cell, c);
          for_each_neighbor_cell(g, c, [&](Index nb, const Vec<R, D>& shift) {
            // half shell: the neighbour comes after the cell in linear order (self: j > i). With
            // periodic wrap a neighbour can appear under two offsets only when an axis has < 3
            // cells, which periodic axes exclude.
            if (nb < cell) return;
            for (Index i = v.cell_start[cell]; i < v.cell_start[cell + 1]; ++i) {
              const auto xi = v.position(i);
              const auto pi = T::load(f, v, i);
              const Index j0 = nb == cell ? i + 1 : v.cell_start[nb];
              for (Index j = j0; j < v.cell_start[nb + 1]; ++j) {
                Vec<R, D> dr;
                for (int d = 0; d < D; ++d) dr[d] = xi[d] - (v.pos[d][j] + shift[d]);
                const R r2 = norm2(dr);
                if (!T::cutoff_test || r2 < rc2) f.symmetric(out[i], out[j], pi, T::load(f, v, j), dr, r2);
              }
            }
          });
        }, /*grain=*/1);  // colour classes are small: hand out single cells
      }
    }
    return {};
  }
};

}  // namespace cellint::detail
