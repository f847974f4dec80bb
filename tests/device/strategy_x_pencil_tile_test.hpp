// X-pencil-tile against the double-precision oracle and against Par-Part-NoLoop: 2D/3D,
// open/periodic, float/double/mixed, 1/10/100 particles per cell, every distribution, tiles
// inside one cell and straddling cells, warps that loop over several tiles, grid-stride
// blocks, pencil lengths, refusals and launch shapes; and the FastMath policy of the LJ
// functors against ExactMath.
//
// Compiled once per backend by tests/CMakeLists.txt (see strategy_x_pencil_test.hpp).
#pragma once

#include <algorithm>
#include <catch2/catch.hpp>

#include <limits>
#include <cmath>
#include <string>
#include <vector>

#include "support/device_backend.hpp"

#include "cellint/interact.hpp"
#include "cellint/potentials/lennard_jones.hpp"
#include "support/exact_check.hpp"
#include "support/plans.hpp"
#include "support/strategy_check.hpp"

namespace {
namespace x_pencil_tile_test {

using Backend = CELLINT_TEST_BACKEND;
using cellint::Index;
using cellint::StrategyKind;
using cellint::Tuning;
using cellint::test::Case;
using cellint::test::Distribution;
using cellint::test::Outcome;

constexpr StrategyKind kTile = StrategyKind::XPencilTile;

template <class Real, int Dim, class Acc = Real>
void expect_pass(const Case& c, const Tuning& t = {}) {
  CHECK(cellint::test::check_strategy<Backend, Real, Dim, Acc>(kTile, c, t) == Outcome::Passed);
}

/// The default shape, a length that splits rows unevenly, a whole row (both X ghosts wrap when
/// periodic), and one warp per block (every warp loops over several tiles).
inline std::vector<Tuning> shapes(int cells) {
  std::vector<Tuning> r(4);
  r[1].pencil_length = 2;
  r[2].pencil_length = cells;
  r[3].threads = 32;
  return r;
}

/// Shapes for clustered particles (M_C 20x the mean): explicit long pencils would not fit the
/// shared memory, so only the default length, with many warps and with one.
inline std::vector<Tuning> cluster_shapes() { return {shapes(4)[0], shapes(4)[3]}; }

template <class Real, class Acc>
void sweep() {
  for (bool periodic : {false, true}) {
    for (const Tuning& t : shapes(5)) {
      expect_pass<Real, 2, Acc>(Case{5, 1, Distribution::Uniform, periodic}, t);
      expect_pass<Real, 2, Acc>(Case{5, 10, Distribution::Uniform, periodic}, t);
    }
    for (const Tuning& t : shapes(4)) {
      expect_pass<Real, 3, Acc>(Case{4, 1, Distribution::Uniform, periodic}, t);
      expect_pass<Real, 3, Acc>(Case{4, 10, Distribution::Uniform, periodic}, t);
    }
    for (const Tuning& t : shapes(3)) {
      expect_pass<Real, 2, Acc>(Case{3, 100, Distribution::Uniform, periodic}, t);
      expect_pass<Real, 3, Acc>(Case{3, 100, Distribution::Uniform, periodic}, t);
    }
#if defined(CELLINT_TEST_GPU)
    expect_pass<Real, 2, Acc>(Case{64, 10, Distribution::Uniform, periodic});
    expect_pass<Real, 3, Acc>(Case{32, 10, Distribution::Uniform, periodic});
    expect_pass<Real, 3, Acc>(Case{8, 100, Distribution::Uniform, periodic});
    expect_pass<Real, 3, Acc>(Case{16, 30, Distribution::Uniform, periodic}, shapes(4)[1]);
#endif
  }
}

TEST_CASE("x-pencil-tile matches the oracle (uniform, 2D/3D, open/periodic, float/double/mixed)",
          CELLINT_TEST_TAG "[x-pencil-tile]") {
  sweep<float, float>();
  sweep<double, double>();
  sweep<float, double>();
}

TEST_CASE("x-pencil-tile on clustered, lattice and on-face particles, wide cells, tiny grids",
          CELLINT_TEST_TAG "[x-pencil-tile]") {
  for (bool periodic : {false, true}) {
    for (const Tuning& t : shapes(4)) {
      expect_pass<float, 3>(Case{4, 8, Distribution::Lattice, periodic}, t);
      expect_pass<double, 3>(Case{4, 10, Distribution::OnFaces, periodic}, t);
    }
    for (const Tuning& t : cluster_shapes()) {
      // Clustered: a few cells hold 20x the average, so a pencil has many more tiles than warps.
      expect_pass<float, 3>(Case{4, 10, Distribution::Clustered, periodic}, t);
      expect_pass<float, 2, double>(Case{4, 40, Distribution::Clustered, periodic}, t);
    }
    expect_pass<float, 3>(Case{3, 10, Distribution::Uniform, periodic, 1.5});
    expect_pass<float, 3>(Case{4, 10, Distribution::Uniform, periodic, 1.0, true});  // stable binning
#if defined(CELLINT_TEST_GPU)
    // (a 24^3 grid: 864 cluster cells of 60 particles among cells of about 3)
    expect_pass<float, 3>(Case{24, 3, Distribution::Clustered, periodic});
    expect_pass<float, 3>(Case{16, 27, Distribution::Lattice, periodic});
#endif
  }
  for (int cells : {1, 2}) {
    expect_pass<float, 2>(Case{cells, 10, Distribution::Uniform, false});
    expect_pass<float, 3>(Case{cells, 40, Distribution::Uniform, false});
  }
  expect_pass<float, 3>(Case{4, 0, Distribution::Uniform, false});
  expect_pass<float, 3>(Case{4, 1.0 / 64, Distribution::Uniform, true});
  Tuning few;
  few.blocks = 3;  // grid-stride over the pencils
  expect_pass<float, 3>(Case{4, 20, Distribution::Uniform, true}, few);
  few.threads = 40;  // rounded up to whole warps
  expect_pass<double, 2>(Case{5, 20, Distribution::Clustered, false}, few);
}

TEST_CASE("x-pencil-tile agrees exactly with par-part-noloop (no payload, no cutoff test, padded payload)",
          CELLINT_TEST_TAG "[x-pencil-tile]") {
  using cellint::test::agree_with_par_part;
  using cellint::test::CountCandidates;
  using cellint::test::IdMix;
  for (bool periodic : {false, true}) {
    for (const Tuning& t : shapes(4)) {
      agree_with_par_part<Backend, float, 3>(kTile, Case{4, 40, Distribution::Uniform, periodic},
                                             CountCandidates<float, 3>{}, t);
      agree_with_par_part<Backend, double, 3>(kTile, Case{4, 10, Distribution::OnFaces, periodic},
                                              IdMix<double, 3>{}, t);
    }
    // (in 2D: a 32-byte record of clustered particles, M_C up to about 270, fills 3D's 9 rows)
    for (const Tuning& t : cluster_shapes())
      agree_with_par_part<Backend, float, 2>(kTile, Case{4, 10, Distribution::Clustered, periodic},
                                             IdMix<float, 2>{}, t);
    agree_with_par_part<Backend, float, 2>(kTile, Case{5, 30, Distribution::Uniform, periodic},
                                           CountCandidates<float, 2>{});
  }
}

/// A grid of `cells` per axis (open, cutoff 1) with `ppc` particles per cell.
template <class Real, int Dim>
cellint::CellGrid<Backend, Real, Dim> make_grid(int cells, double ppc, Distribution dist = Distribution::Uniform) {
  cellint::Box<Real, Dim> box;
  for (int d = 0; d < Dim; ++d) {
    box.origin[d] = 0;
    box.lengths[d] = static_cast<Real>(cells);
    box.periodic[d] = false;
  }
  cellint::CellGrid<Backend, Real, Dim> grid(box, Real(1));
  grid.build(cellint::test::make_positions(grid.geometry(), ppc, dist, 7));
  return grid;
}

TEST_CASE("x-pencil-tile launch shapes and refusals", CELLINT_TEST_TAG "[x-pencil-tile]") {
  using XT = cellint::test::PlanOf<cellint::XPencilTile>;
  using F = cellint::LennardJonesPaper<float, 3>;
  using Rec = cellint::detail::StagedParticle<float, 3, cellint::NoPayload>;
  STATIC_REQUIRE(sizeof(Rec) == 16);  // one 16-byte broadcast load per pair
  const auto grid = make_grid<float, 3>(8, 100);
  const Index mc = grid.max_per_cell();
  INFO("M_C = " << mc);
  cellint::DeviceProperties p = Backend::properties();
  p.multiprocessors = 1;
  // The longest pencil whose 9 rows fit a third of the multiprocessor's shared memory.
  const std::size_t budget = p.shared_per_multiprocessor / 3 - 1024;
  const Index l = XT::pencil_length(grid, F{}, p, {});
  CHECK(l >= 1);
  CHECK(cellint::detail::PencilLayout::make<Rec>(l, mc, 9).bytes <= budget);
  if (l < 8) CHECK(cellint::detail::PencilLayout::make<Rec>(l + 1, mc, 9).bytes > budget);
  cellint::LaunchShape s = XT::shape(grid, F{}, p, {});
  CHECK(s.block % 32 == 0);
  CHECK(s.block >= static_cast<unsigned>(std::min<long>(1024, cellint::detail::pencil_expected_targets(
                                                                    grid.size() / 512.0, l, mc))));
  CHECK(s.shared_bytes == cellint::detail::PencilLayout::make<Rec>(l, mc, 9).bytes);
  // Many multiprocessors: one cell per pencil, one block each.
  p.multiprocessors = 100000;
  CHECK(XT::pencil_length(grid, F{}, p, {}) == 1);
  CHECK(XT::shape(grid, F{}, p, {}).grid == 512u);
  // Overrides.
  Tuning t;
  t.pencil_length = 3;
  t.threads = 70;
  t.blocks = 5;
  s = XT::shape(grid, F{}, p, t);
  CHECK(XT::pencil_length(grid, F{}, p, t) == 3);
  CHECK(s.block == 96u);
  CHECK(s.grid == 5u);
  // Refusals, with the numbers.
  Tuning small;
  small.shared_bytes = 4096;
  std::string why = cellint::supports(kTile, grid, F{}, small).reason;
  INFO(why);
  CHECK(why.find("x-pencil-tile") != std::string::npos);
  CHECK(why.find("M_C = " + std::to_string(mc)) != std::string::npos);
  CHECK(why.find("4096") != std::string::npos);
  Tuning huge;
  huge.shared_bytes = std::size_t(1) << 30;
  CHECK(cellint::supports(kTile, grid, F{}, huge).reason.find("exceeds") != std::string::npos);
  Tuning neg;
  neg.pencil_length = -2;
  CHECK(!cellint::supports(kTile, grid, F{}, neg).ok);
  Tuning longer;
  longer.pencil_length = 8;
  longer.shared_bytes = 64 * 1024;
  CHECK(cellint::supports(kTile, grid, F{}, longer).reason.find("pencil_length") != std::string::npos);
#if !defined(CELLINT_TEST_GPU)
  cellint::Box<float, 3> box{};
  for (int d = 0; d < 3; ++d) box.lengths[d] = 4;
  cellint::CellGrid<cellint::Host, float, 3> host(box, 1.0f);
  host.build(cellint::test::make_positions(host.geometry(), 2, Distribution::Uniform, 3));
  CHECK(!cellint::supports(kTile, host, F{}).ok);
#endif
}

/// The paper's LJ energy and the LJ force with FastMath against ExactMath on the same strategy
/// and grid: the approximate reciprocal (about 1 ulp on GPUs, exact on the CPU) moves each pair
/// term by a few ulp, so the sums agree to a small multiple of float epsilon.
template <class FExact, class FFast, class Acc>
void fast_matches_exact(StrategyKind k, const FExact& fe, const FFast& ff, Acc (*value)(const typename FExact::Accum&),
                        double tol) {
  const auto grid = make_grid<float, 3>(6, 30);
  const std::size_t n = static_cast<std::size_t>(grid.size());
  cellint::Buffer<Backend, typename FExact::Accum> oe(n);
  cellint::Buffer<Backend, typename FFast::Accum> of(n);
  cellint::interact_with(k, grid, fe, oe.data());
  cellint::interact_with(k, grid, ff, of.data());
  std::vector<typename FExact::Accum> he(n), hf(n);
  Backend::copy(he.data(), oe.data(), n * sizeof(he[0]), cellint::CopyKind::DeviceToHost, grid.stream());
  Backend::copy(hf.data(), of.data(), n * sizeof(hf[0]), cellint::CopyKind::DeviceToHost, grid.stream());
  Backend::synchronize(grid.stream());
  double worst = 0;
  for (std::size_t i = 0; i < n; ++i) {
    const double a = value(he[i]), b = value(hf[i]);
    worst = std::max(worst, std::abs(a - b) / std::max(1.0, std::abs(a)));
  }
  INFO(cellint::to_string(k) << ": worst relative difference " << worst);
  CHECK(worst <= tol);
}

TEST_CASE("FastMath LJ functors agree with ExactMath", CELLINT_TEST_TAG "[x-pencil-tile][math]") {
  using Paper = cellint::LennardJonesPaper<float, 3>;
  using PaperFast = cellint::LennardJonesPaper<float, 3, float, cellint::FastMath>;
  using LJ = cellint::LennardJones<float, 3>;
  using LJFast = cellint::LennardJones<float, 3, float, cellint::FastMath>;
  for (StrategyKind k : {StrategyKind::ParPartNoLoop, kTile}) {
    fast_matches_exact(k, Paper{}, PaperFast{}, +[](const float& e) { return static_cast<double>(e); }, 1e-4);
    fast_matches_exact(k, LJ::make(1, 0.4f, 1, true, 0.1f), LJFast::make(1, 0.4f, 1, true, 0.1f),
                       +[](const LJ::Accum& a) { return static_cast<double>(a.energy); }, 1e-4);
  }
  // The reciprocal itself: exact in double and on the CPU; approximate in float device code.
  CHECK(cellint::FastMath::rcp(4.0) == 0.25);
  CHECK(cellint::ExactMath::rcp(3.0f) == 1.0f / 3.0f);
}

TEST_CASE("Auto times every GPU strategy, X-pencil and X-pencil-tile at three pencil lengths each",
          CELLINT_TEST_TAG "[x-pencil-tile][auto]") {
  const auto grid = make_grid<float, 3>(4, 10);
  using F = cellint::LennardJones<float, 3>;
  const F lj = F::make(1, 0.4f, 1, true);
  cellint::Buffer<Backend, F::Accum> out(static_cast<std::size_t>(grid.size()));
  cellint::Autotuner& tuner = cellint::Autotuner::instance();
  tuner.clear();
  tuner.set_repetitions(1);
  tuner.set_time_budget(std::numeric_limits<double>::infinity());  // every candidate, however slow the machine
  const cellint::Report r = cellint::interact(grid, lj, out.data());
  tuner.set_repetitions(3);
  tuner.set_time_budget(-1);
  CHECK(r.tuning_ms > 0);
  const auto table = tuner.table();
  REQUIRE(table.size() == 1);
  const auto& timings = table.begin()->second.timings;
  std::vector<int> xp, xt;
  for (const auto& c : timings) {
    CHECK(c.ms >= 0);
    if (c.strategy == StrategyKind::XPencil) xp.push_back(c.tuning.pencil_length);
    if (c.strategy == StrategyKind::XPencilTile) xt.push_back(c.tuning.pencil_length);
  }
  CHECK(xp == std::vector<int>{0, 1, 2});
  CHECK(xt == std::vector<int>{0, 2, 4});
  CHECK(r.strategy == table.begin()->second.strategy);
  tuner.clear();
}

#if !defined(CELLINT_TEST_GPU)
TEST_CASE("x-pencil-tile with other shuffled thread orders", CELLINT_TEST_TAG "[x-pencil-tile]") {
  cellint::EmulatedOptions& o = Backend::options();
  const cellint::EmulatedOptions saved = o;
  REQUIRE(o.shuffle);
  for (std::uint64_t seed : {3ull, 123456789ull}) {
    o.seed = seed;
    for (const Tuning& t : shapes(4)) expect_pass<float, 3>(Case{4, 20, Distribution::Uniform, true}, t);
    expect_pass<float, 2>(Case{5, 30, Distribution::Clustered, false}, shapes(5)[3]);
  }
  o = saved;
}
#endif

}  // namespace x_pencil_tile_test
}  // namespace
