// CellGrid on GPU-like backends (Emulated in CI, Cuda/Hip on a GPU): the binning kernels
// (cell index + count, scan, max, scatter or stable radix sort), attributes, user order, rebuild,
// and bad positions detected on the device.
#pragma once
#include <catch2/catch.hpp>

#include <algorithm>
#include <numeric>

#include "support/device_backend.hpp"
#include "cellint/grid/cell_grid.hpp"
#include "support/generators.hpp"

namespace {
namespace grid_test {
using namespace cellint;
using namespace cellint::test;
using B = CELLINT_TEST_BACKEND;

template <class Real, int Dim>
void check_binning(bool periodic, Distribution dist, double ppc, int cells, bool stable) {
  const auto seed = fresh_seed();
  INFO("seed " << seed << ", " << to_string(dist) << (periodic ? ", periodic" : ", open") << ", stable " << stable);
  GridOptions<Real> o;
  o.stable = stable;
  CellGrid<B, Real, Dim> g(Box<Real, Dim>::cube(Real(-0.5), static_cast<Real>(cells), periodic), Real(1), o);
  const auto p = make_positions(g.geometry(), ppc, dist, seed);
  const Index n = static_cast<Index>(p[0].size());
  std::vector<int> tag(static_cast<std::size_t>(n));
  std::iota(tag.begin(), tag.end(), 0);
  for (int round = 0; round < 2; ++round) {
    if (round == 0) {
      g.build(p);
      g.attach(tag.data());
    } else {
      // move every particle on the device-side sorted arrays (through a host round trip) and rebuild
      for (int d = 0; d < Dim; ++d) {
        std::vector<Real> x(static_cast<std::size_t>(n));
        B::copy(x.data(), g.positions(d), sizeof(Real) * n, CopyKind::DeviceToHost);
        for (auto& v : x) v = periodic ? v + Real(0.77) : std::min(v * Real(0.5) + Real(0.1), g.geometry().box.origin[d] + g.geometry().box.lengths[d]);
        B::copy(g.positions(d), x.data(), sizeof(Real) * n, CopyKind::HostToDevice);
      }
      g.rebuild();
    }
    const Index nc = g.cell_count();
    std::vector<Index> start(static_cast<std::size_t>(nc) + 1), id(static_cast<std::size_t>(n));
    B::copy(start.data(), g.cell_start(), sizeof(Index) * (nc + 1), CopyKind::DeviceToHost);
    B::copy(id.data(), g.original_index(), sizeof(Index) * n, CopyKind::DeviceToHost);
    std::array<std::vector<Real>, Dim> x;
    for (int d = 0; d < Dim; ++d) {
      x[d].resize(static_cast<std::size_t>(n));
      B::copy(x[d].data(), g.positions(d), sizeof(Real) * n, CopyKind::DeviceToHost);
    }
    REQUIRE(start[0] == 0);
    REQUIRE(start[nc] == n);
    Index mc = 0;
    for (Index c = 0; c < nc; ++c) {
      REQUIRE(start[c] <= start[c + 1]);
      mc = std::max(mc, start[c + 1] - start[c]);
      for (Index s = start[c]; s < start[c + 1]; ++s) {
        Index cc[Dim];
        for (int d = 0; d < Dim; ++d) cc[d] = g.geometry().axis_cell(x[d][s], d);
        REQUIRE(g.geometry().linear(cc) == c);
        if (stable && s > start[c]) REQUIRE(id[s - 1] < id[s]);
      }
    }
    CHECK(g.max_per_cell() == mc);
    std::vector<Index> sorted = id;
    std::sort(sorted.begin(), sorted.end());
    for (Index i = 0; i < n; ++i) REQUIRE(sorted[i] == i);
    std::vector<int> t(static_cast<std::size_t>(n));
    B::copy(t.data(), g.attribute(g.template attribute_handle<int>(0)), sizeof(int) * n, CopyKind::DeviceToHost);
    for (Index s = 0; s < n; ++s) REQUIRE(t[s] == id[s]);  // the attribute moved with its particle
    CHECK(g.to_user_order(g.attribute(g.template attribute_handle<int>(0))) == tag);
  }
}

TEMPLATE_TEST_CASE("device binning keeps every invariant", CELLINT_TEST_TAG "[binning]", float, double) {
#if defined(CELLINT_TEST_GPU)
  const int cells = 32;
#else
  const int cells = 5;
#endif
  for (bool periodic : {false, true})
    for (bool stable : {false, true})
      for (auto dist : {Distribution::Uniform, Distribution::Clustered, Distribution::OnFaces}) {
        check_binning<TestType, 3>(periodic, dist, 4.0, cells, stable);
        check_binning<TestType, 2>(periodic, dist, 4.0, cells + 2, stable);
      }
}

TEST_CASE("device binning reports the first bad particle", CELLINT_TEST_TAG "[binning][errors]") {
  using Catch::Matchers::Contains;
  CellGrid<B, float, 3> g(Box<float, 3>::cube(0, 4, false), 1);
  std::array<std::vector<float>, 3> p;
  for (int d = 0; d < 3; ++d) p[d].assign(1000, 1.5f);
  p[0][700] = std::nanf("");
  p[1][900] = -1.0f;
  CHECK_THROWS_AS(g.build(p), NonFinitePosition);
  CHECK_THROWS_WITH(g.build(p), Contains("particle 700"));
  p[0][700] = 1.0f;
  CHECK_THROWS_AS(g.build(p), OutsideBox);
  CHECK_THROWS_WITH(g.build(p), Contains("particle 900") && Contains("along y"));
  p[1][900] = 1.0f;
  CHECK_NOTHROW(g.build(p));
  CHECK(g.max_per_cell() == 1000);
}

TEST_CASE("device binning of zero and one particle", CELLINT_TEST_TAG "[binning]") {
  CellGrid<B, double, 2> g(Box<double, 2>::cube(0, 3, true), 1);
  g.build(std::array<std::vector<double>, 2>{});
  CHECK(g.size() == 0);
  CHECK(g.max_per_cell() == 0);
  g.build(std::array<std::vector<double>, 2>{{{2.5}, {-0.5}}});
  CHECK(g.max_per_cell() == 1);
  CHECK(g.positions_user_order()[1][0] == Approx(2.5));
}

}  // namespace grid_test
}  // namespace
