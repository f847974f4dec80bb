#pragma once
/// @file
/// CPU strategies: CellLoop (each target scans its 3^Dim neighbour cells; cells shared among the
/// Host backend's threads) and CellLoopHalf (each pair visited once through a half-shell stencil
/// and Newton's third law; cells processed in colour classes so that threads never write the same
/// particle). Both run through detail::host_loop (backend/host.hpp): a few hundred particles or
/// fewer run on the calling thread.

#include <algorithm>

#include "cellint/backend/host.hpp"
#include "cellint/core/pair_functor.hpp"
#include "cellint/grid/cell_grid.hpp"
#include "cellint/strategies/detail/neighbors.hpp"
#include "cellint/strategies/strategy.hpp"

namespace cellint::detail {

/// Particles that each thread of a CPU cell loop must get before the loop is shared: below, the
/// pass runs on the calling thread (handing cells to other threads would cost more than the pairs
/// of so few particles).
inline constexpr long long cell_loop_particles_per_thread = 256;

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
      // threads from the particle count (a few hundred particles each at least), cells handed out
      // dynamically, about 8 chunks per thread and at most 64 cells per chunk
      const int threads = host_threads_for(v.n, cell_loop_particles_per_thread);
      const Index cells = v.geo.cell_count();
      const Index grain = std::max<Index>(1, std::min<Index>(64, cells / (8 * threads)));
      host_loop(cells, grain, threads, [&](Index cell) {
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
      // Colour per axis: c % 3 for the first 3*floor(n/3) cells, own colours 3 and 4 for the
      // remaining ones; same-coloured cells are >= 3 apart (also across a periodic face), so the
      // +-1 cells that their half shells write never overlap. An axis of fewer than 3 cells gives
      // every cell its own colour.
      int ncol[D];
      for (int d = 0; d < D; ++d) ncol[d] = g.cells[d] < 3 ? static_cast<int>(g.cells[d]) : 3 + static_cast<int>(g.cells[d] % 3);
      int colours = 1;
      for (int d = 0; d < D; ++d) colours *= ncol[d];
      // along axis d, colour cd holds `count` coordinates first, first + step, ...
      auto axis_class = [&](int d, int cd, Index& first, Index& step, Index& count) {
        const Index n = g.cells[d], full = n / 3 * 3;
        if (n < 3) {
          first = cd, step = 1, count = 1;
        } else if (cd < 3) {
          first = cd, step = 3, count = full / 3;
        } else {
          first = full + (cd - 3), step = 1, count = 1;
        }
      };
      const R rc2 = g.cutoff * g.cutoff;
      // the half shell of one cell: each pair once, both sides written
      auto half_shell = [&](Index cell, const Index (&c)[D]) {
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
      };
      // Each colour is one loop of the Host backend; a loop returns when all its cells are done,
      // which orders the colours.
      const int threads = host_threads_for(v.n, cell_loop_particles_per_thread);
      host_loop(v.n, 4096, threads, [&](Index t) { out[t] = T::init(f); });
      for (int col = 0; col < colours; ++col) {
        Index first[D], step[D], count[D];
        Index cells = 1;
        for (int d = 0, rest = col; d < D; ++d) {
          axis_class(d, rest % ncol[d], first[d], step[d], count[d]);
          rest /= ncol[d];
          cells *= count[d];
        }
        // about 8 chunks per thread: enough to balance, few enough that handing them out (an
        // atomic on a shared counter) costs little next to the cells' pairs
        const Index grain = std::max<Index>(1, cells / (8 * threads));
        host_loop(cells, grain, threads, [&](Index k) {
          Index c[D];
          for (int d = 0; d < D; ++d) {
            c[d] = first[d] + step[d] * (k % count[d]);
            k /= count[d];
          }
          half_shell(g.linear(c), c);
        });
      }
    }
    return {};
  }
};

}  // namespace cellint::detail
