#pragma once
// CellLoop and CellLoopHalf: the CPU cell loops (see strategies/cell_loop.hpp).

#include <algorithm>
#include <vector>

#include "cellint/backend/host.hpp"
#include "cellint/strategies/detail/neighbors.hpp"
#include "cellint/strategies/cell_loop.hpp"  // the tag and its policy
#include "cellint/strategies/strategy.hpp"

namespace cellint::detail {

template <>
struct StrategyImpl<CellLoop> {
  using Plan = BasicPlan;  ///< support only
  template <class B, class R, int D, class F>
  static Plan plan(const Call<B, R, D>&, const F&, const Tuning&) {
    Plan p;
    if (B::device_memory) p.support = Support::no("cell-loop runs on host memory (Host or Emulated backend)");
    return p;
  }
  template <class B, class R, int D, class F>
  static void run(const Call<B, R, D>& c, const F& f, typename FunctorTraits<F, R, D>::Accum* out, const Plan&) {
    if constexpr (!B::device_memory) {
      using T = FunctorTraits<F, R, D>;
      const GridView<R, D>& v = c.views.targets;
      // threads from the particle count (a few hundred particles each at least), cells handed out dynamically, about 8
      // chunks per thread and at most 64 cells per chunk
      const int threads = host_threads_for(v.n, CellLoop::particles_per_thread);
      const Index cells = v.geo.cell_count();
      // Few targets per cell (probes in a cloud, a few tracers): the cells that hold targets are handed out, not runs of
      // up to 64 consecutive cells, which would give all the targets of a row to one thread (the scan costs little
      // next to the pairs of fewer than 8 targets per cell).
      std::vector<Index> busy;
      if (threads > 1 && v.n < 8 * static_cast<long long>(cells))
        for (Index cell = 0; cell < cells; ++cell)
          if (v.cell_start[cell + 1] > v.cell_start[cell]) busy.push_back(cell);
      const Index items = busy.empty() ? cells : static_cast<Index>(busy.size());
      const Index grain = std::max<Index>(1, std::min<Index>(64, items / (8 * threads)));
      host_loop(items, grain, threads, [&](Index item) {
        const Index cell = busy.empty() ? item : busy[static_cast<std::size_t>(item)];
        Index coords[D];
        v.geo.coords(cell, coords);
        for (Index t = v.cell_start[cell]; t < v.cell_start[cell + 1]; ++t) {
          auto acc = T::init(f);
          accumulate_neighbors<false, T>(c.views.sources, f, coords, c.views.excluded(t), v.position(t), T::load(f, v, t),
                                         acc);
          out[t] = acc;
        }
      });
    }
  }
};

template <>
struct StrategyImpl<CellLoopHalf> {
  using Plan = BasicPlan;  ///< support only
  template <class B, class R, int D, class F>
  static Plan plan(const Call<B, R, D>& c, const F&, const Tuning&) {
    Plan p;
    if (B::device_memory)
      p.support = Support::no("cell-loop-half runs on host memory (Host or Emulated backend)");
    else if (loads_sources_apart<F, R, D>)
      p.support = Support::no(reads_each_particle_once("cell-loop-half") + "; cell-loop can");
    else if (!FunctorTraits<F, R, D>::symmetric)
      p.support = Support::no("cell-loop-half needs the functor's symmetric() (Newton's third law) form");
    else if (!c.views.same)
      p.support = Support::no("cell-loop-half writes both sides of a pair: it runs one set only (two sets: cell-loop)");
    return p;
  }
  template <class B, class R, int D, class F>
  static void run(const Call<B, R, D>& c, const F& f, typename FunctorTraits<F, R, D>::Accum* out, const Plan&) {
    using T = FunctorTraits<F, R, D>;
    if constexpr (!B::device_memory && T::symmetric) {
      const GridView<R, D>& v = c.views.sources;
      const auto& g = v.geo;
      // Colour per axis: c % 3 for the first 3*floor(n/3) cells, own colours 3 and 4 for the remaining ones;
      // same-coloured cells are >= 3 apart (also across a periodic face), so the +-1 cells that their half shells write
      // never overlap. An axis of fewer than 3 cells gives every cell its own colour.
      int ncol[D];
      for (int d = 0; d < D; ++d) ncol[d] = g.cells[d] < 3 ? static_cast<int>(g.cells[d]) : 3 + static_cast<int>(g.cells[d] % 3);
      int colours = 1;
      for (int d = 0; d < D; ++d) colours *= ncol[d];
      // along axis d, colour cd holds `count` coordinates first, first + step, ...
      auto axis_class = [&](int d, int cd, Index& first, Index& step, Index& count) {
        const Index n = g.cells[d], full = n / 3 * 3;
        if (n < 3)
          first = cd, step = 1, count = 1;
        else if (cd < 3)
          first = cd, step = 3, count = full / 3;
        else
          first = full + (cd - 3), step = 1, count = 1;
      };
      const R rc2 = g.cutoff * g.cutoff;
      // the half shell of one cell: each pair once, both sides written
      auto half_shell = [&](Index cell, const Index (&c)[D]) {
        for_each_neighbor_range<false>(g, c, [&](Index nb, Index, const Vec<R, D>& shift) {
          // half shell: the neighbour comes after the cell in linear order (self: j > i). With periodic wrap a
          // neighbour can appear under two offsets only when an axis has < 3 cells, which periodic axes exclude.
          if (nb < cell) return;
          for (Index i = v.cell_start[cell]; i < v.cell_start[cell + 1]; ++i) {
            const auto xi = v.position(i);
            const auto pi = T::load(f, v, i);
            const Index j0 = nb == cell ? i + 1 : v.cell_start[nb];
            const GlobalSources<T, F, R, D> src{v, f, shift};
            for (Index j = j0; j < v.cell_start[nb + 1]; ++j)
              accumulate_pair_symmetric<T>(f, src[j], xi, pi, rc2, out[i], out[j]);
          }
        });
      };
      // Each colour is one loop of the Host backend; a loop returns when all its cells are done, which orders the
      // colours.
      const int threads = host_threads_for(v.n, CellLoop::particles_per_thread);
      host_loop(v.n, 4096, threads, [&](Index t) { out[t] = T::init(f); });
      for (int col = 0; col < colours; ++col) {
        Index first[D], step[D], count[D];
        Index cells = 1;
        for (int d = 0, rest = col; d < D; ++d) {
          axis_class(d, rest % ncol[d], first[d], step[d], count[d]);
          rest /= ncol[d];
          cells *= count[d];
        }
        // about 8 chunks per thread: enough to balance, few enough that handing them out (an atomic on a shared
        // counter) costs little next to the cells' pairs
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
  }
};

}  // namespace cellint::detail
