// The CPU strategies (cell loop, half-shell cell loop, brute force) against the oracle.
#include <catch2/catch.hpp>

#include "cellint/potentials/lennard_jones.hpp"
#include "support/strategy_check.hpp"

using namespace cellint;
using namespace cellint::test;


// The oracle sweep of cell-loop, cell-loop-half and brute-force on Host: the conformance test
// (tests/host/conformance_test.cpp).

TEST_CASE("cells wider than the cutoff, non-cubic and tiny grids", "[host][cell-loop]") {
  for (double w : {1.0, 1.7})
    for (int cells : {1, 2, 3, 4}) {
      Case c;
      c.cells = cells;
      c.width = w;
      c.periodic = cells >= 3;
      c.ppc = 12;
      REQUIRE(check_strategy<Host, double, 3>(StrategyKind::CellLoop, c) == Outcome::Passed);
      REQUIRE(check_strategy<Host, double, 3>(StrategyKind::CellLoopHalf, c) == Outcome::Passed);
    }
}

TEST_CASE("a test against the oracle can fail", "[host][oracle]") {
  // A deliberately wrong reference: drop one particle's neighbours; compare() must notice.
  CellGrid<Host, double, 3> g(Box<double, 3>::cube(0, 4, true), 1.0);
  const auto p = make_positions(g.geometry(), 6.0, Distribution::Uniform, fresh_seed());
  std::vector<double> q(p[0].size(), 1.0);
  g.build(p);
  Probe<double, 3> f{1.0};
  f.charge = g.attach(q.data());
  std::vector<Probe<double, 3>::Accum> out(p[0].size());
  interact_with(StrategyKind::CellLoop, g, f, out.data());
  auto got = g.to_user_order(out.data());
  auto ref = reference(Box<double, 3>::cube(0, 4, true), 1.0, p, q, 1e-9);
  CHECK(compare(got, ref, 1e-12).empty());
  got[3].w *= 1.0 + 1e-9;
  CHECK_FALSE(compare(got, ref, 1e-12).empty());
  got[3] = {};
  CHECK_FALSE(compare(got, ref, 1e-12).empty());
}

TEST_CASE("Lennard-Jones on the CPU: forces sum to zero, half shell agrees", "[host][lj]") {
  CellGrid<Host, double, 3> g(Box<double, 3>::cube(0, 8, true), 2.5);
  const auto p = make_positions(g.geometry(), 4.0, Distribution::Lattice, fresh_seed());
  g.build(p);
  const auto lj = LennardJones<double, 3>::make(1.0, 1.0, 2.5, true);
  using A = LennardJones<double, 3>::Accum;
  std::vector<A> full(p[0].size()), half(p[0].size());
  interact<CellLoop>(g, lj, full.data());
  interact<CellLoopHalf>(g, lj, half.data());
  double fsum[3] = {0, 0, 0}, e1 = 0, e2 = 0;
  for (std::size_t i = 0; i < full.size(); ++i) {
    for (int d = 0; d < 3; ++d) {
      fsum[d] += full[i].force[d];
      CHECK(full[i].force[d] == Approx(half[i].force[d]).margin(1e-9));
    }
    e1 += full[i].energy;
    e2 += half[i].energy;
  }
  for (double f : fsum) CHECK(std::abs(f) < 1e-8);
  CHECK(e1 == Approx(e2).epsilon(1e-12));
}

TEST_CASE("explicitly asking for a strategy that cannot run throws its reason", "[host][errors]") {
  using Catch::Matchers::Contains;
  CellGrid<Host, double, 3> g(Box<double, 3>::cube(0, 4, true), 1);
  g.build(make_positions(g.geometry(), 2.0, Distribution::Uniform, fresh_seed()));
  std::vector<LennardJonesPaper<double, 3>::Accum> out(static_cast<std::size_t>(g.size()));
  CHECK_THROWS_AS(interact<ParPartNoLoop>(g, LennardJonesPaper<double, 3>{}, out.data()), Unsupported);
  CHECK_THROWS_WITH(interact<CellLoopHalf>(g, LennardJonesPaper<double, 3>{}, out.data()),
                    Contains("symmetric"));
}

TEST_CASE("Auto picks a CPU strategy and caches it", "[host][auto]") {
  CellGrid<Host, double, 3> g(Box<double, 3>::cube(0, 6, true), 1);
  g.build(make_positions(g.geometry(), 10.0, Distribution::Uniform, fresh_seed()));
  const auto lj = LennardJones<double, 3>::make(1, 1, 1, true);
  std::vector<LennardJones<double, 3>::Accum> out(static_cast<std::size_t>(g.size()));
  Autotuner::instance().clear();
  const Report r1 = interact(g, lj, out.data());
  CHECK((r1.strategy == StrategyKind::CellLoop || r1.strategy == StrategyKind::CellLoopHalf));
  CHECK(r1.tuning_ms > 0);
  const Report r2 = interact(g, lj, out.data());
  CHECK(r2.strategy == r1.strategy);
  CHECK(r2.tuning_ms == 0);
  const auto table = Autotuner::instance().table();
  REQUIRE(table.size() == 1);
  CHECK(table.begin()->second.timings.size() == 2);
  // Another grid shape is a new decision; the first one is still known.
  CellGrid<Host, double, 3> g2(Box<double, 3>::cube(0, 5, true), 1);
  g2.build(make_positions(g2.geometry(), 10.0, Distribution::Uniform, fresh_seed()));
  std::vector<LennardJones<double, 3>::Accum> out2(static_cast<std::size_t>(g2.size()));
  CHECK(interact(g2, lj, out2.data()).tuning_ms > 0);
  CHECK(interact(g, lj, out.data()).tuning_ms == 0);
  CHECK(Autotuner::instance().table().size() == 2);
  // clear() forgets every decision, including those a call has already used.
  Autotuner::instance().clear();
  CHECK(interact(g, lj, out.data()).tuning_ms > 0);
  Autotuner::instance().clear();
}
