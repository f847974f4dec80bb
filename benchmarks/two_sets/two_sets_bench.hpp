// Fluid and wall particles of a 2D dam-break tank, as one set or as two: what splitting the SPH demo's dynamic
// boundary particles into their own set would cost.
//
// One set: every particle (fluid and wall) a target of every other, one call (what examples/sph does: its walls are
// dynamic boundary particles whose densities evolve from their fluid neighbours, so they are targets too).
// Two sets: fluid <- fluid (one set), fluid <- wall and wall <- fluid (two sets): three calls for the same pairs less
// the wall <- wall ones. Each call is Auto's choice; density sums with the Wendland C2 kernel, float, 2D.
#pragma once

#include <cmath>
#include <cstdio>
#include <string>
#include <vector>

#include "cellint/cellint.hpp"

#include "common/timing.hpp"

namespace cellint::bench::two_sets {

/// Kernel density sum_j W(r, h) (Wendland C2 in 2D, unit mass).
struct Density {
  using Accum = float;
  static constexpr int flops = 12;
  float h, norm;  ///< smoothing length; 7 / (4 pi h^2)
  CELLINT_HD void operator()(float& rho, const NoPayload&, const NoPayload&, const Vec<float, 2>&, float r2) const {
    const float q = std::sqrt(r2) / h, a = 1 - 0.5f * q, a2 = a * a;
    rho += norm * a2 * a2 * (2 * q + 1);
  }
};

/// Runs the comparison on backend B for a tank whose fluid column is `res` particles wide; prints one JSON line.
template <class B>
int run(int res, int reps, const std::string& device) {
  const float dx = 1.0f / static_cast<float>(res), h = 1.3f * dx, rc = 2 * h;
  const float L = 4, H = 3;  // tank: length 4, wall height 3 (column 1 x 2)
  const int layers = 3;
  std::array<std::vector<float>, 2> fluid, wall, all;
  auto push = [](std::array<std::vector<float>, 2>& p, float x, float y) {
    p[0].push_back(x);
    p[1].push_back(y);
  };
  const float x0 = -layers * dx, y0 = -layers * dx;
  for (int i = 0;; ++i) {
    const float x = x0 + (i + 0.5f) * dx;
    if (x > L + layers * dx) break;
    for (int j = 0;; ++j) {
      const float y = y0 + (j + 0.5f) * dx;
      if (y > H) break;
      const bool in_tank = x > 0 && x < L && y > 0;
      if (!in_tank)
        push(wall, x, y);
      else if (x < 1 && y < 2)
        push(fluid, x, y);
    }
  }
  for (int d = 0; d < 2; ++d) {
    all[d] = fluid[d];
    all[d].insert(all[d].end(), wall[d].begin(), wall[d].end());
  }
  Box<float, 2> box;
  box.origin[0] = x0 - dx;
  box.origin[1] = y0 - dx;
  box.lengths[0] = L + 2 * layers * dx + 2 * dx;
  box.lengths[1] = H - y0 + 2 * dx;
  CellGrid<B, float, 2> g_all(box, rc), g_fluid(box, rc), g_wall(box, rc);
  g_all.build(all);
  g_fluid.build(fluid);
  g_wall.build(wall);
  const Density f{h, 7.0f / (4.0f * 3.14159265f * h * h)};
  Buffer<B, float> o_all(all[0].size()), o_fluid(fluid[0].size()), o_wall(wall[0].size());
  Tuning st;
  st.statistics = true;
  // Auto tunes each call once (untimed here), the statistics of each call, then the timing.
  const Report r_all = interact(g_all, f, o_all, st), r_ff = interact(g_fluid, f, o_fluid, st),
               r_fw = interact(g_fluid, g_wall, f, o_fluid, st), r_wf = interact(g_wall, g_fluid, f, o_wall, st);
  auto stream = g_all.stream();
  const Timing one = time_calls<B>([&] { interact(g_all, f, o_all); }, stream, reps, 5, 3, 2000);
  const Timing three = time_calls<B>(
      [&] {
        interact(g_fluid, f, o_fluid);
        interact(g_fluid, g_wall, f, o_fluid);  // (a real code would add into the fluid sums; timing only)
        interact(g_wall, g_fluid, f, o_wall);
      },
      stream, reps, 5, 3, 2000);
  std::printf(
      "{\"program\": \"two_sets_bench\", \"device\": \"%s\", \"backend\": \"%s\", \"fluid\": %zu, \"wall\": %zu, "
      "\"one_set_ms\": %.5g, \"three_calls_ms\": %.5g, \"ratio\": %.3f, "
      "\"one_set\": \"%s\", \"fluid_fluid\": \"%s\", \"fluid_wall\": \"%s\", \"wall_fluid\": \"%s\", "
      "\"pairs_within_one_set\": %.0f, \"pairs_within_three\": %.0f}\n",
      device.c_str(), B::name(), fluid[0].size(), wall[0].size(), one.median_ms, three.median_ms,
      three.median_ms / one.median_ms, describe(r_all).c_str(), describe(r_ff).c_str(), describe(r_fw).c_str(),
      describe(r_wf).c_str(), double(r_all.stats.pairs_within),
      double(r_ff.stats.pairs_within + r_fw.stats.pairs_within + r_wf.stats.pairs_within));
  return 0;
}

}  // namespace cellint::bench::two_sets
