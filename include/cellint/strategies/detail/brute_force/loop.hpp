#pragma once
// BruteForce: every (target, source) pair with the minimum image (see strategies/brute_force.hpp).

#include <cmath>

#include "cellint/backend/host.hpp"
#include "cellint/strategies/detail/pairs.hpp"
#include "cellint/strategies/brute_force.hpp"  // the tag and its policy
#include "cellint/strategies/strategy.hpp"

namespace cellint::detail {

template <>
struct StrategyImpl<BruteForce> {
  using Plan = BasicPlan;  ///< support only
  template <class B, class R, int D, class F>
  static Plan plan(const Call<B, R, D>&, const F&, const Tuning&) {
    Plan p;
    if (B::device_memory) p.support = Support::no("brute-force runs on host memory (Host or Emulated backend)");
    return p;
  }
  template <class B, class R, int D, class F>
  static void run(const Call<B, R, D>& c, const F& f, typename FunctorTraits<F, R, D>::Accum* out, const Plan&) {
    if constexpr (!B::device_memory) {
      using T = FunctorTraits<F, R, D>;
      const GridView<R, D>& tv = c.views.targets;
      const GridView<R, D>& sv = c.views.sources;
      const auto& box = sv.geo.box;
      const R rc2 = cutoff2(sv.geo);
      host_for(tv.n, [&](Index t) {
        auto acc = T::init(f);
        const auto xt = tv.position(t);
        const auto pt = T::load(f, tv, t);
        const Index skip = c.views.excluded(t);
        for (Index s = 0; s < sv.n; ++s) {
          if (s == skip) continue;
          // the minimum image: the source's position seen from the target
          Vec<R, D> shift{};
          for (int d = 0; d < D; ++d)
            if (box.periodic[d]) shift[d] = box.lengths[d] * std::nearbyint((xt[d] - sv.pos[d][s]) / box.lengths[d]);
          accumulate_pair<T>(f, GlobalSources<T, F, R, D>{sv, f, shift}[s], xt, pt, rc2, acc);
        }
        out[t] = acc;
      });
    }
  }
};

}  // namespace cellint::detail
