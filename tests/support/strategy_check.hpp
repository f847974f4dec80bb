#pragma once
// check_strategy(): one strategy on one backend against the double-precision oracle.

#include <catch2/catch.hpp>

#include <random>

#include "support/oracle.hpp"

namespace cellint::test {

/// One test case: geometry, density, distribution, boundaries.
struct Case {
  int cells = 4;            ///< cells per axis (cell width = cutoff = 1, unless width > 1)
  double ppc = 10;          ///< particles per cell on average
  Distribution dist = Distribution::Uniform;
  bool periodic = false;
  double width = 1.0;       ///< cell width in cutoffs (>= 1)
  bool stable = false;      ///< stable binning
};

/// Outcome of check_strategy.
enum class Outcome { Passed, Unsupported };

/// Runs strategy `k` for `c` on `Backend` with Real positions and Acc accumulation and compares
/// every particle with the oracle (exact neighbour counts up to a rounding band at the cutoff,
/// values within tolerance<Real> of the sum of magnitudes). Returns Unsupported when the
/// strategy says it cannot run (the caller decides whether that is expected).
template <class Backend, class Real, int Dim, class Acc = Real>
Outcome check_strategy(StrategyKind k, const Case& c, const Tuning& t = {}) {
  const std::uint64_t seed = fresh_seed();
  INFO("strategy " << to_string(k) << ", " << Dim << "D, " << (c.periodic ? "periodic" : "open") << ", "
                   << c.cells << " cells/axis, " << c.ppc << " per cell, " << to_string(c.dist)
                   << (sizeof(Real) == 4 ? ", float" : ", double") << (sizeof(Acc) > sizeof(Real) ? "/double" : "")
                   << ", seed " << seed << " (CELLINT_TEST_SEED replays it)");
  const Real cutoff = 1;
  Box<Real, Dim> box;
  for (int d = 0; d < Dim; ++d) {
    box.origin[d] = Real(-1.5) + Real(0.25) * d;
    box.lengths[d] = static_cast<Real>(c.cells * c.width) * (d == 1 ? Real(1.0) : Real(1.0));
    box.periodic[d] = c.periodic;
  }
  GridOptions<Real> opts;
  opts.min_cell_width = static_cast<Real>(c.width);
  opts.stable = c.stable;
  CellGrid<Backend, Real, Dim> grid(box, cutoff, opts);
  const auto pos = make_positions(grid.geometry(), c.ppc, c.dist, seed);
  const Index n = static_cast<Index>(pos[0].size());
  std::vector<Real> q(static_cast<std::size_t>(n));
  std::mt19937_64 rng(seed ^ 0xABCDEFull);
  std::uniform_real_distribution<double> u(0.5, 1.5);
  for (auto& v : q) v = static_cast<Real>(u(rng));
  grid.build(pos);
  Probe<Real, Dim, Acc> f{cutoff * cutoff};
  f.charge = grid.attach(q.data());
  using Accum = typename Probe<Real, Dim, Acc>::Accum;
  if (const Support s = supports(k, grid, f, t); !s.ok) {
    UNSCOPED_INFO(to_string(k) << " unsupported: " << s.reason);  // shown if the caller expected a pass
    return Outcome::Unsupported;
  }
  Buffer<Backend, Accum> out(static_cast<std::size_t>(std::max<Index>(n, 1)));
  out.fill_bytes(0xFF);  // poison: every slot must be written
  interact_with(k, grid, f, out.data(), t);
  Backend::synchronize();
  const auto got = grid.to_user_order(out.data());
  const Index stride = std::max<Index>(1, n / 4000);  // O(N * N/stride) oracle work
  double max_abs = 0;
  for (int d = 0; d < Dim; ++d)
    max_abs = std::max({max_abs, std::abs(double(box.origin[d])), std::abs(double(box.origin[d]) + box.lengths[d])});
  const auto ref = reference(box, cutoff, pos, q, 1e-5, stride, position_eps<Real>(max_abs));
  const std::string msg = compare(got, ref, tolerance<Real>());
  INFO(msg);
  CHECK(msg.empty());
  return Outcome::Passed;
}

}  // namespace cellint::test
