#pragma once
/// @file
/// BruteForce: every pair, minimum-image convention, on the CPU. The O(N^2) oracle that every
/// other strategy is tested against (use it in double precision).

#include <cmath>

#include "cellint/backend/host.hpp"
#include "cellint/core/pair_functor.hpp"
#include "cellint/grid/cell_grid.hpp"
#include "cellint/strategies/strategy.hpp"

namespace cellint::detail {

template <>
struct StrategyImpl<BruteForce> {
  template <class B, class R, int D, class F>
  static Support supports(const CellGrid<B, R, D>&, const F&, const DeviceProperties&, const Tuning&) {
    if (B::device_memory) return Support::no("brute-force runs on host memory (Host or Emulated backend)");
    if (!FunctorTraits<F, R, D>::cutoff_test)
      return Support::no("brute-force evaluates pairs within the cutoff; this functor asks for every candidate "
                         "pair of the neighbour cells (cutoff_test = false), which only cell strategies define");
    return Support::yes();
  }
  template <class B, class R, int D, class F>
  static LaunchShape run(const CellGrid<B, R, D>& grid, const F& f, typename F::Accum* out, const Tuning&) {
    if constexpr (!B::device_memory) {
      using T = FunctorTraits<F, R, D>;
      const auto v = grid.view();
      const R rc2 = v.geo.cutoff * v.geo.cutoff;
      host_for(v.n, [&](Index t) {
        auto acc = T::init(f);
        const auto xt = v.position(t);
        const auto pt = T::load(f, v, t);
        for (Index s = 0; s < v.n; ++s) {
          if (s == t) continue;
          Vec<R, D> dr;
          for (int d = 0; d < D; ++d) {
            dr[d] = xt[d] - v.pos[d][s];
            if (v.geo.box.periodic[d]) dr[d] -= v.geo.box.lengths[d] * std::nearbyint(dr[d] / v.geo.box.lengths[d]);
          }
          const R r2 = norm2(dr);
          if (r2 < rc2) f(acc, pt, T::load(f, v, s), dr, r2);
        }
        out[t] = acc;
      });
    }
    return {};
  }
};

}  // namespace cellint::detail
