// CellGrid on the Host backend: binning invariants, permutation, attributes, user order, errors.
#include <catch2/catch.hpp>

#include <algorithm>
#include <numeric>

#include "cellint/backend/host.hpp"
#include "cellint/grid/cell_grid.hpp"
#include "support/generators.hpp"

using namespace cellint;
using namespace cellint::test;

namespace {
template <class Real, int Dim>
void check_invariants(const CellGrid<Host, Real, Dim>& g, const typename identity<Positions<Real, Dim>>::type& user) {
  const Index n = g.size();
  const Index nc = g.cell_count();
  const Index* start = g.cell_start();
  REQUIRE(start[0] == 0);
  REQUIRE(start[nc] == n);
  Index mc = 0;
  for (Index c = 0; c < nc; ++c) {
    REQUIRE(start[c] <= start[c + 1]);
    mc = std::max(mc, start[c + 1] - start[c]);
    for (Index s = start[c]; s < start[c + 1]; ++s) {
      const auto v = g.view();
      CHECK(v.cell_of(v.position(s)) == c);  // each particle in the cell of its position
    }
  }
  CHECK(g.max_per_cell() == mc);
  std::vector<Index> perm(g.original_index(), g.original_index() + n);
  std::vector<Index> sorted = perm;
  std::sort(sorted.begin(), sorted.end());
  std::vector<Index> iota(static_cast<std::size_t>(n));
  std::iota(iota.begin(), iota.end(), 0);
  CHECK(sorted == iota);  // a bijection
  for (Index s = 0; s < n; ++s)
    for (int d = 0; d < Dim; ++d)
      if (!g.geometry().box.periodic[d]) CHECK(g.positions(d)[s] == user[d][perm[s]]);
}
}  // namespace

TEMPLATE_TEST_CASE("binning invariants hold for every distribution", "[host][binning]", float, double) {
  for (bool periodic : {false, true})
    for (auto dist : {Distribution::Uniform, Distribution::Clustered, Distribution::Lattice, Distribution::OnFaces}) {
      const auto seed = fresh_seed();
      INFO("seed " << seed << " " << to_string(dist) << (periodic ? " periodic" : " open"));
      CellGrid<Host, TestType, 3> g(Box<TestType, 3>::cube(-2, 6, periodic), 1);
      const auto p = make_positions(g.geometry(), 5.0, dist, seed);
      g.build(p);
      check_invariants(g, p);
      CellGrid<Host, TestType, 2> g2(Box<TestType, 2>::cube(0, 7, periodic), 1);
      const auto p2 = make_positions(g2.geometry(), 5.0, dist, seed);
      g2.build(p2);
      check_invariants(g2, p2);
    }
}

TEST_CASE("periodic positions are wrapped into the box", "[host][binning]") {
  CellGrid<Host, double, 2> g(Box<double, 2>::cube(0, 4, true), 1);
  std::array<std::vector<double>, 2> p{{{-0.5, 4.25, 8.0, -1e-17}, {1.0, -3.0, 2.0, 0.5}}};
  g.build(p);
  const auto u = g.positions_user_order();
  CHECK(u[0][0] == Approx(3.5));
  CHECK(u[0][1] == Approx(0.25));
  CHECK(u[0][2] == Approx(0.0));
  CHECK(u[0][3] >= 0.0);
  CHECK(u[0][3] < 4.0);
  CHECK(u[1][1] == Approx(1.0));
}

TEST_CASE("attributes follow the particles and results return to user order", "[host][binning]") {
  CellGrid<Host, float, 3> g(Box<float, 3>::cube(0, 5, false), 1);
  const auto p = make_positions(g.geometry(), 3.0, Distribution::Uniform, fresh_seed());
  const Index n = static_cast<Index>(p[0].size());
  std::vector<int> id(static_cast<std::size_t>(n));
  std::iota(id.begin(), id.end(), 0);
  g.build(p);
  const auto k = g.attach(id.data());
  for (Index s = 0; s < n; ++s) CHECK(g.attribute(k)[s] == g.original_index()[s]);
  CHECK(g.to_user_order(g.attribute(k)) == id);
  // move every particle a little, rebuild, and check attributes and permutation still agree
  for (int d = 0; d < 3; ++d)
    for (Index s = 0; s < n; ++s) g.positions(d)[s] = std::min(4.99f, g.positions(d)[s] * 0.9f + 0.3f);
  g.rebuild();
  for (Index s = 0; s < n; ++s) CHECK(g.attribute(k)[s] == g.original_index()[s]);
  std::vector<int> back(static_cast<std::size_t>(n));
  g.from_user_order(id.data(), back.data());
  for (Index s = 0; s < n; ++s) CHECK(back[s] == g.original_index()[s]);
}

namespace {
// The Host backend, counting its allocations.
struct CountingHost : Host {
  static inline long allocations = 0;
  static void* allocate(std::size_t bytes) {
    ++allocations;
    return Host::allocate(bytes);
  }
};
}  // namespace

TEST_CASE("a grid rebuilt over a count that creeps up reallocates rarely, attributes included", "[host][binning]") {
  // (an MPI rank's grid: owned particles and ghosts, a few more at each redistribution, attributes attached again;
  // on a GPU each release waits for the device)
  CellGrid<CountingHost, double, 3> g(Box<double, 3>::cube(0, 6, true), 1);
  const auto p = make_positions(g.geometry(), 4.0, Distribution::Uniform, fresh_seed());
  const std::size_t all = p[0].size(), first = all - all / 20;  // (growth under 1/16)
  REQUIRE(first > 200);
  std::vector<double> v(all, 1.5);
  long before = 0;
  for (std::size_t n = first, k = 0; n <= all; n += (all - first) / 40 + 1, ++k) {
    g.detach_attributes();
    g.build({p[0].data(), p[1].data(), p[2].data()}, n);
    Attribute<double> h[3];
    for (auto& a : h) a = g.attach(v.data());
    CHECK(g.attribute(h[2])[n - 1] == 1.5);
    if (k == 0) before = CountingHost::allocations;
  }
  // the first build's buffers, with 1/16 room, hold all the others: nothing allocated after it (the grid's buffers and
  // the six of the attributes each reallocated at every larger build before they had room)
  CHECK(CountingHost::allocations == before);

  // a count past the room, with every attribute slot in use: the kept memory (16 buffers, full) must give way to the
  // new, larger buffers, so that the next build of that count allocates nothing
  auto attach_all = [&](std::size_t n) {
    g.detach_attributes();
    g.build({p[0].data(), p[1].data(), p[2].data()}, n);
    for (int k = 0; k < max_attributes; ++k) g.attach(v.data());
  };
  const std::size_t small = all / 2;
  attach_all(small);
  attach_all(small);  // (the 16 kept buffers of the small count)
  attach_all(all);    // (16 new ones; the small ones go as these are dropped)
  const long grown = CountingHost::allocations;
  attach_all(all);
  CHECK(CountingHost::allocations == grown);
}

TEST_CASE("stable binning orders each cell by original index, also after rebuild", "[host][binning]") {
  GridOptions<double> o;
  o.stable = true;
  CellGrid<Host, double, 3> g(Box<double, 3>::cube(0, 4, true), 1, o);
  const auto p = make_positions(g.geometry(), 8.0, Distribution::Clustered, fresh_seed());
  g.build(p);
  auto check_sorted = [&] {
    for (Index c = 0; c < g.cell_count(); ++c)
      for (Index s = g.cell_start()[c] + 1; s < g.cell_start()[c + 1]; ++s)
        REQUIRE(g.original_index()[s - 1] < g.original_index()[s]);
  };
  check_sorted();
  for (Index s = 0; s < g.size(); ++s) g.positions(0)[s] += 1.37;  // shifts cells, wraps
  g.rebuild();
  check_sorted();
}

TEST_CASE("zero and one particle are valid", "[host][binning]") {
  CellGrid<Host, double, 3> g(Box<double, 3>::cube(0, 3, true), 1);
  g.build(std::array<std::vector<double>, 3>{});
  CHECK(g.size() == 0);
  CHECK(g.max_per_cell() == 0);
  g.build(std::array<std::vector<double>, 3>{{{0.5}, {0.5}, {2.9}}});
  CHECK(g.size() == 1);
  CHECK(g.max_per_cell() == 1);
}

TEST_CASE("bad positions name the particle and what to do", "[host][binning][errors]") {
  using Catch::Matchers::Contains;
  CellGrid<Host, float, 3> g(Box<float, 3>::cube(0, 4, false), 1);
  std::array<std::vector<float>, 3> p{{{1, 2, 3, 1}, {1, 2, 3, 1}, {1, 2, 3, 1}}};
  p[1][2] = std::nanf("");
  CHECK_THROWS_AS(g.build(p), NonFinitePosition);
  CHECK_THROWS_WITH(g.build(p), Contains("particle 2") && Contains("not finite"));
  p[1][2] = 2;
  p[2][3] = std::numeric_limits<float>::infinity();
  CHECK_THROWS_WITH(g.build(p), Contains("particle 3") && Contains("coordinate z"));
  p[2][3] = 4.5f;
  CHECK_THROWS_AS(g.build(p), OutsideBox);
  CHECK_THROWS_WITH(g.build(p), Contains("particle 3") && Contains("outside the open box along z") &&
                                    Contains("enlarge the box"));
  p[2][3] = 4.0f;  // the upper face of an open box is inside
  CHECK_NOTHROW(g.build(p));
}

TEST_CASE("attaching before build is an error that says what to do", "[host][binning][errors]") {
  CellGrid<Host, double, 2> g(Box<double, 2>::cube(0, 3, true), 1);
  std::vector<double> m(4, 1.0);
  CHECK_THROWS_WITH(g.attach(m.data()), Catch::Matchers::Contains("call build() first"));
}
