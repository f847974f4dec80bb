// CellGrid's life cycle on every backend (Host in the Emulated unit, Emulated, Cuda/Hip on a
// GPU): attributes across build() / rebuild(), the state after an exception, calls out of
// order, typed attribute handles, sized outputs and counts that do not fit 32 bits.
#pragma once
#include <catch2/catch.hpp>

#include <cmath>
#include <cstdint>
#include <limits>
#include <numeric>
#include <random>

#include "support/device_backend.hpp"
#include "cellint/backend/host.hpp"
#include "cellint/interact.hpp"
#include "cellint/potentials/counting.hpp"
#include "support/generators.hpp"

namespace {
namespace lifecycle_test {
using namespace cellint;
using namespace cellint::test;
using Catch::Matchers::Contains;

// Host runs beside Emulated in the CPU unit.
#if defined(CELLINT_TEST_GPU)
#  define LIFECYCLE_BACKENDS CELLINT_TEST_BACKEND
#else
#  define LIFECYCLE_BACKENDS CELLINT_TEST_BACKEND, cellint::Host
#endif

/// Three attribute types: a plain int, a double and a 16-byte struct.
struct Tag3 {
  float a, b;
  std::int64_t id;
  bool operator==(const Tag3& o) const { return a == o.a && b == o.b && id == o.id; }
};

/// Sums the masses of the neighbours (an attribute read through a typed handle).
template <class Real, int Dim>
struct MassSum {
  using Accum = double;
  struct Payload {
    double m;
  };
  Attribute<double> mass{};
  template <class View>
  CELLINT_HD Payload load(const View& v, Index i) const {
    return {v.attribute(mass)[i]};
  }
  CELLINT_HD void operator()(double& a, const Payload&, const Payload& s, const Vec<Real, Dim>&, Real) const {
    a += s.m;
  }
};

template <class B>
constexpr StrategyKind simple_strategy() {
  return B::is_gpu_like ? StrategyKind::ParPartNoLoop : StrategyKind::CellLoop;
}

/// The per-particle results of MassSum in the user's order.
template <class B, class Real, int Dim>
std::vector<double> mass_sums(const CellGrid<B, Real, Dim>& g, const MassSum<Real, Dim>& f) {
  Buffer<B, double> out(static_cast<std::size_t>(std::max<Index>(g.size(), 1)));
  interact_with(simple_strategy<B>(), g, f, out.data());
  B::synchronize();
  return g.to_user_order(out.data());
}

template <class Real, int Dim>
Box<Real, Dim> test_box(bool periodic) {
  return Box<Real, Dim>::cube(Real(0), Real(6), periodic);
}

/// Moves every particle by a random step (wrapping on periodic axes, clamping on open ones).
template <class Real, int Dim>
std::array<std::vector<Real>, Dim> jiggle(std::array<std::vector<Real>, Dim> p, std::uint64_t seed, bool periodic) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> u(-0.7, 0.7);
  for (int d = 0; d < Dim; ++d)
    for (auto& x : p[d]) {
      double v = x + u(rng);
      if (periodic) v = v - 6.0 * std::floor(v / 6.0);
      else v = std::min(std::max(v, 0.0), 6.0);
      x = static_cast<Real>(v);
    }
  return p;
}

template <class B, class Real, int Dim>
void attributes_follow_their_particles(bool periodic) {
  const auto seed = fresh_seed();
  INFO("seed " << seed << (periodic ? ", periodic" : ", open"));
  CellGrid<B, Real, Dim> g(test_box<Real, Dim>(periodic), Real(1));
  CellGrid<B, Real, Dim> fresh(test_box<Real, Dim>(periodic), Real(1));
  const auto p0 = make_positions(g.geometry(), 3.0, Distribution::Clustered, seed);
  const std::size_t n = p0[0].size();
  std::vector<int> tag(n);
  std::vector<double> mass(n);
  std::vector<Tag3> t3(n);
  std::mt19937_64 rng(seed + 1);
  std::uniform_real_distribution<double> u(0.5, 2.0);
  for (std::size_t i = 0; i < n; ++i) {
    tag[i] = static_cast<int>(i) * 7 + 3;
    mass[i] = std::round(u(rng) * 64) / 64;  // dyadic: sums exact in any order
    t3[i] = Tag3{static_cast<float>(i), -static_cast<float>(i), static_cast<std::int64_t>(i) << 33};
  }
  g.build(p0);
  const Attribute<int> h_tag = g.attach(tag);
  const Attribute<double> h_mass = g.attach(mass);
  const Attribute<Tag3> h_t3 = g.attach(t3.data());
  MassSum<Real, Dim> f;
  f.mass = h_mass;

  auto expect_attributes_in_user_order = [&](const char* when) {
    INFO(when);
    CHECK(g.to_user_order(g.attribute(h_tag)) == tag);
    CHECK(g.to_user_order(g.attribute(h_mass)) == mass);
    CHECK(g.to_user_order(g.attribute(h_t3)) == t3);
  };
  auto expect_same_as_fresh = [&](const std::array<std::vector<Real>, Dim>& p, const char* when) {
    INFO(when);
    fresh.build(p);
    MassSum<Real, Dim> ff;
    ff.mass = fresh.attach(mass);
    CHECK(mass_sums(g, f) == mass_sums(fresh, ff));
  };

  expect_attributes_in_user_order("after build + attach");
  // the same positions again: attributes stay with their particles
  g.build(p0);
  expect_attributes_in_user_order("after a second build() of the same positions");
  expect_same_as_fresh(p0, "second build, same positions");
  // new positions, same count: attribute i stays with particle i
  const auto p1 = jiggle<Real, Dim>(p0, seed + 2, periodic);
  g.build(p1);
  expect_attributes_in_user_order("after build() of new positions");
  expect_same_as_fresh(p1, "build of new positions");
  // moved in place, then rebuild()
  const auto p2 = jiggle<Real, Dim>(p1, seed + 3, periodic);
  for (int d = 0; d < Dim; ++d) g.from_user_order(p2[d], g.positions(d));
  g.rebuild();
  expect_attributes_in_user_order("after rebuild()");
  expect_same_as_fresh(p2, "rebuild");
  // from backend arrays in the user's order: the same rule
  std::array<Buffer<B, Real>, Dim> dev;
  std::array<const Real*, Dim> ptr;
  for (int d = 0; d < Dim; ++d) {
    dev[d] = to_backend<B>(p1[d]);
    ptr[d] = dev[d].data();
  }
  g.build_from_backend(ptr, n);
  expect_attributes_in_user_order("after build_from_backend()");
  expect_same_as_fresh(p1, "build_from_backend");
}

TEMPLATE_TEST_CASE("a second build() keeps attributes with their particles", CELLINT_TEST_TAG "[grid][lifecycle]",
                   LIFECYCLE_BACKENDS) {
  for (bool periodic : {false, true}) {
    attributes_follow_their_particles<TestType, float, 3>(periodic);
    attributes_follow_their_particles<TestType, double, 2>(periodic);
  }
}

TEMPLATE_TEST_CASE("a build() with another count drops attributes and rejects their handles", CELLINT_TEST_TAG "[grid][lifecycle]", LIFECYCLE_BACKENDS) {
  using B = TestType;
  CellGrid<B, double, 3> g(test_box<double, 3>(true), 1.0);
  auto p = make_positions(g.geometry(), 2.0, Distribution::Uniform, fresh_seed());
  g.build(p);
  MassSum<double, 3> f;
  f.mass = g.attach(std::vector<double>(static_cast<std::size_t>(g.size()), 1.0));
  for (int d = 0; d < 3; ++d) p[d].pop_back();
  g.build(p);
  CHECK_THROWS_WITH(g.attribute(f.mass), Contains("dropped by a build() with another particle count"));
  Buffer<B, double> out(static_cast<std::size_t>(g.size()));
  CHECK_THROWS_WITH(interact(g, f, out), Contains("dropped by a build() with another particle count"));
  f.mass = g.attach(std::vector<double>(static_cast<std::size_t>(g.size()), 1.0));
  CHECK_NOTHROW(interact_with(simple_strategy<B>(), g, f, out.data()));
}

TEMPLATE_TEST_CASE("detach_attributes() drops attributes for a build() of other particles of the same count",
                   CELLINT_TEST_TAG "[grid][lifecycle]", LIFECYCLE_BACKENDS) {
  using B = TestType;
  CellGrid<B, double, 3> g(test_box<double, 3>(true), 1.0);
  const auto p = make_positions(g.geometry(), 2.0, Distribution::Uniform, fresh_seed());
  g.build(p);
  MassSum<double, 3> f;
  f.mass = g.attach(std::vector<double>(static_cast<std::size_t>(g.size()), 1.0));
  CHECK(g.attribute_count() == 1);
  g.detach_attributes();
  CHECK(g.attribute_count() == 0);
  g.build(p);
  CHECK_THROWS_WITH(g.attribute(f.mass), Contains("or by detach_attributes()"));
  // (room for max_attributes again)
  for (int k = 0; k < 8; ++k) f.mass = g.attach(std::vector<double>(static_cast<std::size_t>(g.size()), 2.0));
  CHECK(g.attribute_count() == 8);
  Buffer<B, double> out(static_cast<std::size_t>(g.size()));
  CHECK_NOTHROW(interact_with(simple_strategy<B>(), g, f, out.data()));
}

template <class B, class Real, int Dim>
void usable_after_a_rejected_rebuild(bool periodic) {
  const auto seed = fresh_seed();
  INFO("seed " << seed << (periodic ? ", periodic" : ", open"));
  CellGrid<B, Real, Dim> g(test_box<Real, Dim>(periodic), Real(1));
  const auto p0 = make_positions(g.geometry(), 4.0, Distribution::Uniform, seed);
  const std::size_t n = p0[0].size();
  std::vector<double> mass(n);
  for (std::size_t i = 0; i < n; ++i) mass[i] = 1.0 + static_cast<double>(i % 13);
  g.build(p0);
  MassSum<Real, Dim> f;
  f.mass = g.attach(mass);
  const auto start_before = g.max_per_cell();

  // an integrator produced a NaN (or, on an open box, a particle outside)
  auto bad = jiggle<Real, Dim>(p0, seed + 1, periodic);
  const std::size_t victim = n / 3;
  if (periodic) bad[Dim - 1][victim] = std::numeric_limits<Real>::quiet_NaN();
  else bad[0][victim] = Real(-1);
  for (int d = 0; d < Dim; ++d) g.from_user_order(bad[d], g.positions(d));
  if (periodic) CHECK_THROWS_AS(g.rebuild(), NonFinitePosition);
  else CHECK_THROWS_AS(g.rebuild(), OutsideBox);
  CHECK(g.built());
  CHECK(g.max_per_cell() == start_before);

  // repair the positions in the user's order and go on
  const auto good = jiggle<Real, Dim>(p0, seed + 2, periodic);
  for (int d = 0; d < Dim; ++d) g.from_user_order(good[d], g.positions(d));
  g.rebuild();
  CellGrid<B, Real, Dim> fresh(test_box<Real, Dim>(periodic), Real(1));
  fresh.build(good);
  MassSum<Real, Dim> ff;
  ff.mass = fresh.attach(mass);
  const auto pg = g.positions_user_order(), pf = fresh.positions_user_order();
  for (int d = 0; d < Dim; ++d) CHECK(pg[d] == pf[d]);
  CHECK(g.max_per_cell() == fresh.max_per_cell());
  CHECK(g.to_user_order(g.attribute(f.mass)) == mass);
  CHECK(mass_sums(g, f) == mass_sums(fresh, ff));
}

TEMPLATE_TEST_CASE("a grid stays usable after rebuild() rejected a position", CELLINT_TEST_TAG "[grid][lifecycle]",
                   LIFECYCLE_BACKENDS) {
  for (bool periodic : {false, true}) {
    usable_after_a_rejected_rebuild<TestType, float, 3>(periodic);
    usable_after_a_rejected_rebuild<TestType, double, 2>(periodic);
  }
}

TEMPLATE_TEST_CASE("a failed build() leaves the grid unbuilt, attributes kept for the same count", CELLINT_TEST_TAG "[grid][lifecycle]", LIFECYCLE_BACKENDS) {
  using B = TestType;
  CellGrid<B, float, 3> g(test_box<float, 3>(false), 1.0f);
  auto p = make_positions(g.geometry(), 2.0, Distribution::Uniform, fresh_seed());
  const std::size_t n = p[0].size();
  std::vector<int> tag(n);
  std::iota(tag.begin(), tag.end(), 100);
  g.build(p);
  const auto h = g.attach(tag);
  auto bad = p;
  bad[1][n / 2] = std::numeric_limits<float>::infinity();
  CHECK_THROWS_AS(g.build(bad), NonFinitePosition);
  CHECK_FALSE(g.built());
  CHECK(g.size() == 0);
  CHECK_THROWS_WITH(g.rebuild(), Contains("call build() first"));
  CHECK_THROWS_WITH(g.to_user_order(g.attribute(h)), Contains("call build() first"));
  g.build(p);
  CHECK(g.to_user_order(g.attribute(h)) == tag);
}

TEMPLATE_TEST_CASE("calls before build() are errors that say what to do", CELLINT_TEST_TAG "[grid][lifecycle][errors]", LIFECYCLE_BACKENDS) {
  using B = TestType;
  CellGrid<B, float, 3> g(test_box<float, 3>(true), 1.0f);
  Buffer<B, unsigned> out(16);
  CHECK_THROWS_WITH(interact(g, NeighborCount<float, 3>{}, out.data()), Contains("call grid.build() first"));
  CHECK_THROWS_WITH(interact_with(simple_strategy<B>(), g, NeighborCount<float, 3>{}, out.data()),
                    Contains("call grid.build() first"));
  CHECK_THROWS_WITH(g.rebuild(), Contains("call build() first"));
  CHECK_THROWS_WITH(g.to_user_order(out.data()), Contains("call build() first"));
  CHECK_THROWS_WITH(g.positions_user_order(), Contains("call build() first"));
  std::vector<unsigned> host(16);
  CHECK_THROWS_WITH(g.from_user_order(host, out.data()), Contains("call build() first"));
  CHECK_FALSE(g.built());
}

TEMPLATE_TEST_CASE("attribute handles are checked at interact()", CELLINT_TEST_TAG "[grid][lifecycle][errors]", LIFECYCLE_BACKENDS) {
  using B = TestType;
  CellGrid<B, double, 2> g(test_box<double, 2>(true), 1.0), other(test_box<double, 2>(true), 1.0);
  const auto p = make_positions(g.geometry(), 2.0, Distribution::Uniform, fresh_seed());
  g.build(p);
  other.build(p);
  const std::vector<double> m(p[0].size(), 1.0);
  Buffer<B, double> out(p[0].size());
  MassSum<double, 2> f;  // handle never set
  CHECK_THROWS_WITH(interact(g, f, out), Contains("Attribute handle at byte") && Contains("is unset"));
  f.mass = other.attach(m);
  CHECK_THROWS_WITH(interact(g, f, out), Contains("attached to another grid"));
  CHECK_THROWS_WITH(g.attribute(f.mass), Contains("attached to another grid"));
  g.attach(std::vector<int>(p[0].size(), 1));  // attribute 0 is an int
  CHECK_THROWS_WITH(g.template attribute_handle<double>(0), Contains("not"));
  CHECK_THROWS_WITH(g.template attribute_handle<int>(3), Contains("no attribute 3"));
  f.mass = g.attach(m);
  CHECK_NOTHROW(interact_with(simple_strategy<B>(), g, f, out.data()));
}

TEMPLATE_TEST_CASE("sized outputs are checked, pointers are not", CELLINT_TEST_TAG "[grid][lifecycle][errors]", LIFECYCLE_BACKENDS) {
  using B = TestType;
  CellGrid<B, float, 3> g(test_box<float, 3>(true), 1.0f);
  g.build(make_positions(g.geometry(), 2.0, Distribution::Uniform, fresh_seed()));
  const std::size_t n = static_cast<std::size_t>(g.size());
  Buffer<B, unsigned> small(n - 1), right(n);
  CHECK_THROWS_WITH(interact(g, NeighborCount<float, 3>{}, small), Contains("holds " + std::to_string(n - 1)));
  CHECK_THROWS_WITH(g.to_user_order(small), Contains("size it to grid.size()"));
  CHECK_THROWS_WITH(g.from_user_order(std::vector<unsigned>(n + 1), right), Contains("one value per particle"));
  CHECK_THROWS_WITH(g.attach(std::vector<int>(n - 1)), Contains("one value per particle"));
#if !defined(CELLINT_TEST_GPU)
  std::vector<unsigned> v(n - 1);
  CHECK_THROWS_WITH(interact(g, NeighborCount<float, 3>{}, v), Contains("output vector holds"));
  v.resize(n);
  interact_with(simple_strategy<B>(), g, NeighborCount<float, 3>{}, v.data());
  CHECK(g.to_user_order(v).size() == n);
#endif
  interact_with(simple_strategy<B>(), g, NeighborCount<float, 3>{}, right.data());
  CHECK(g.to_user_order(right).size() == n);
}

TEMPLATE_TEST_CASE("particle counts are checked at the API, not truncated", CELLINT_TEST_TAG "[grid][lifecycle][errors]", LIFECYCLE_BACKENDS) {
  using B = TestType;
  CellGrid<B, float, 3> g(test_box<float, 3>(true), 1.0f);
  const std::array<const float*, 3> none{nullptr, nullptr, nullptr};
  CHECK_THROWS_WITH(g.build(none, Index(-5)), Contains("must be >= 0, got -5"));
  CHECK_THROWS_WITH(g.build(none, std::int64_t(1) << 31), Contains("2147483648 particles exceed the largest"));
  CHECK_THROWS_WITH(g.build(none, (std::size_t(1) << 32) + 1000), Contains("4294968296 particles exceed"));
  CHECK_THROWS_WITH(g.build_from_backend(none, std::uint64_t(3000000000u)), Contains("32-bit"));
  CHECK(CellGrid<B, float, 3>::max_size() > 2000000000);
  CHECK_FALSE(g.built());
}

}  // namespace lifecycle_test
}  // namespace
