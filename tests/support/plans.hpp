#pragma once
// PlanOf<S>: a strategy's plan for a grid with itself on given device properties, and the parts
// of it the launch-shape tests check (shape, pencil length, sub-box).

#include <array>

#include "cellint/strategies/run.hpp"

namespace cellint::test {

template <class S>
struct PlanOf {
  template <class G, class F>
  static auto plan(const G& g, const F& f, const DeviceProperties& p, const Tuning& t) {
    return detail::plan_for<S>(g, f, p, t);
  }
  template <class G, class F>
  static LaunchShape shape(const G& g, const F& f, const DeviceProperties& p, const Tuning& t) {
    return plan(g, f, p, t).shape;
  }
  template <class G, class F>
  static Index pencil_length(const G& g, const F& f, const DeviceProperties& p, const Tuning& t) {
    return plan(g, f, p, t).length;
  }
  template <class G, class F>
  static std::array<Index, 3> subbox(const G& g, const F& f, const DeviceProperties& p, const Tuning& t) {
    const auto pl = plan(g, f, p, t);
    return {pl.sub[0], pl.sub[1], pl.sub[2]};
  }
};

}  // namespace cellint::test
