// All-pairs (tiled) beyond the conformance sweep: tiles that do not divide the particle counts, every pair for
// functors without a cutoff test (against a double O(N^2) sum, open and periodic), Plummer gravity's momentum
// balance, Auto's eligibility rule and the refusals.
#pragma once
#include <catch2/catch.hpp>

#include <array>
#include <cmath>
#include <random>
#include <vector>

#include "cellint/potentials/gravity.hpp"

#include "support/device_backend.hpp"
#include "support/exact_check.hpp"
#include "support/strategy_check.hpp"

namespace {
namespace all_pairs_test {
using namespace cellint;
using namespace cellint::test;
using B = CELLINT_TEST_BACKEND;

TEST_CASE("all-pairs matches the oracle with tiles that do not divide the particle count",
          CELLINT_TEST_TAG "[all-pairs]") {
  for (unsigned threads : {32u, 64u, 128u}) {
    Tuning t;
    t.threads = threads;
    t.targets_per_thread = threads == 32 ? 1 : threads == 64 ? 4 : 2;
    t.source_splits = threads == 64 ? 2 : 0;  // (sums of two runs of sources, added with atomics)
    INFO(threads << " threads, " << t.targets_per_thread << " targets each, splits " << t.source_splits);
    Case c;
    c.cells = 5;
    c.ppc = 7.3;  // (a count that no tile size divides)
    for (bool periodic : {false, true}) {
      c.periodic = periodic;
      REQUIRE(check_strategy<B, float, 3>(StrategyKind::AllPairs, c, t) == Outcome::Passed);
      REQUIRE(check_strategy<B, double, 2>(StrategyKind::AllPairs, c, t) == Outcome::Passed);
    }
  }
}

/// n uniform random positions in `box`.
template <class Real, int Dim>
std::array<std::vector<Real>, Dim> random_positions(const Box<Real, Dim>& box, int n, std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::array<std::vector<Real>, Dim> x;
  for (auto& a : x) a.resize(static_cast<std::size_t>(n));
  for (int d = 0; d < Dim; ++d) {
    std::uniform_real_distribution<double> u(box.origin[d], box.origin[d] + box.lengths[d]);
    for (auto& v : x[static_cast<std::size_t>(d)]) v = static_cast<Real>(u(rng));
  }
  return x;
}

TEST_CASE("all-pairs calls a functor without a cutoff test for every pair, at the nearest image",
          CELLINT_TEST_TAG "[all-pairs]") {
  const std::uint64_t seed = fresh_seed();
  INFO("seed " << seed);
  for (bool periodic : {false, true}) {
    INFO((periodic ? "periodic" : "open"));
    Box<double, 2> box;
    for (int d = 0; d < 2; ++d) {
      box.origin[d] = -2.0 + d;
      box.lengths[d] = 7.0 + d;
      box.periodic[d] = periodic;
    }
    CellGrid<B, double, 2> grid(box, 1.0);  // 7 x 8 cells: the cell strategies would see a fraction of the pairs
    const int n = 777;
    const auto x = random_positions<double, 2>(box, n, seed + (periodic ? 1 : 0));
    grid.build(x);
    std::vector<double> m(static_cast<std::size_t>(n));
    std::mt19937_64 rng(seed ^ 0x5A5Aull);
    std::uniform_real_distribution<double> u(0.5, 2.0);
    for (auto& v : m) v = u(rng);
    PlummerGravity<double, 2> f;
    f.softening2 = 0.01;
    f.mass = grid.attach(m.data());
    using Accum = PlummerGravity<double, 2>::Accum;
    Buffer<B, Accum> out(static_cast<std::size_t>(n));
    out.fill_bytes(0xFF);
    Tuning per;
    per.targets_per_thread = periodic ? 4 : 1;  // (the default, 2, runs in the count below)
    per.threads = 32;
    per.source_splits = 3;  // three runs of sources per target, added with atomics into zeroed sums
    const Report report = interact_with(StrategyKind::AllPairs, grid, f, out.data(), per);
    const unsigned groups = (n + 32u * per.targets_per_thread - 1) / (32u * per.targets_per_thread);
    CHECK(report.shape.grid == 3 * groups);
    B::synchronize();
    const auto got = grid.to_user_order(out.data());
    double worst = 0;
    Vec<double, 2> total{};  // sum of m_i a_i: zero by Newton's third law
    for (int i = 0; i < n; ++i) {
      double a[2] = {0, 0}, scale = 0;
      for (int j = 0; j < n; ++j) {
        if (j == i) continue;
        double dr[2], r2 = f.softening2;
        for (int d = 0; d < 2; ++d) {
          dr[d] = x[static_cast<std::size_t>(d)][static_cast<std::size_t>(i)] -
                  x[static_cast<std::size_t>(d)][static_cast<std::size_t>(j)];
          if (periodic) dr[d] -= box.lengths[d] * std::nearbyint(dr[d] / box.lengths[d]);
          r2 += dr[d] * dr[d];
        }
        const double w = m[static_cast<std::size_t>(j)] / (r2 * std::sqrt(r2));
        for (int d = 0; d < 2; ++d) a[d] -= w * dr[d];
        scale += w * std::sqrt(r2);
      }
      for (int d = 0; d < 2; ++d) {
        worst = std::max(worst, std::abs(got[static_cast<std::size_t>(i)].a[d] - a[d]) / scale);
        total[d] += m[static_cast<std::size_t>(i)] * got[static_cast<std::size_t>(i)].a[d];
      }
    }
    CHECK(worst < 1e-12);
    CHECK(std::abs(total[0]) < 1e-9);
    CHECK(std::abs(total[1]) < 1e-9);
    // every pair: n - 1 sources per target, whatever the cells
    CountCandidates<double, 2> count;
    Buffer<B, unsigned> counts(static_cast<std::size_t>(n));
    interact_with(StrategyKind::AllPairs, grid, count, counts.data());
    B::synchronize();
    const auto c = grid.to_user_order(counts.data());
    int wrong = 0;
    for (unsigned v : c) wrong += v != static_cast<unsigned>(n - 1);
    CHECK(wrong == 0);
  }
}

TEST_CASE("all-pairs: Auto's eligibility and the refusals", CELLINT_TEST_TAG "[all-pairs]") {
  Box<float, 3> box;
  for (int d = 0; d < 3; ++d) {
    box.origin[d] = 0;
    box.lengths[d] = 10;
    box.periodic[d] = false;
  }
  CellGrid<B, float, 3> grid(box, 1.0f);
  grid.build(random_positions<float, 3>(box, 5000, 3));
  // 10^3 cells and 2.5e7 pairs: the cells win by far, Auto does not time it
  CHECK_FALSE(AllPairs::auto_eligible(grid.view(), grid.view()));
  grid.build(random_positions<float, 3>(box, 4000, 4));  // 1.6e7 pairs: cheap to time
  CHECK(AllPairs::auto_eligible(grid.view(), grid.view()));
  CellGrid<B, float, 3> wide(box, 5.0f);  // 2 cells per open axis: every pair is a candidate
  wide.build(random_positions<float, 3>(box, 20000, 5));
  CHECK(AllPairs::auto_eligible(wide.view(), wide.view()));
  CHECK(auto_eligible(StrategyKind::AllPairs, wide.view(), wide.view()));
  CHECK(auto_eligible(StrategyKind::ParPartNoLoop, grid.view(), grid.view()));

  CountCandidates<float, 3> f;
  Tuning t;
  t.threads = 48;  // not a multiple of the warp size
  const Support s = supports(StrategyKind::AllPairs, grid, f, t);
  CHECK_FALSE(s.ok);
  CHECK(s.reason.find("multiple of the warp size") != std::string::npos);
  t.threads = 2048;
  CHECK_FALSE(supports(StrategyKind::AllPairs, grid, f, t).ok);
  t.threads = 0;
  t.targets_per_thread = 3;
  const Support three = supports(StrategyKind::AllPairs, grid, f, t);
  CHECK_FALSE(three.ok);
  CHECK(three.reason.find("1, 2 or 4") != std::string::npos);
  t.targets_per_thread = 0;
  t.source_splits = -1;
  CHECK_FALSE(supports(StrategyKind::AllPairs, grid, f, t).ok);
}

}  // namespace all_pairs_test
}  // namespace
