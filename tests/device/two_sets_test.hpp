// Targets and sources from two grids over one cell geometry (interact(targets, sources, f, out)): every
// registered strategy either runs two sets and agrees with a double-precision all-pairs oracle
// (nothing excluded), or refuses with a reason that names the strategies that can.
#pragma once
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "cellint/potentials/counting.hpp"
#include "support/device_backend.hpp"
#include "support/strategy_check.hpp"

namespace {
namespace two_sets_test {
using namespace cellint;
using namespace cellint::test;
using B = CELLINT_TEST_BACKEND;

/// Position-only smooth weights: count, sum w and sum w dr with w = (rc^2 - r^2)^2.
template <class Real, int Dim>
struct Weights {
  struct Accum {
    Real count, w, wx[Dim];
  };
  Real rc2;
  CELLINT_HD void operator()(Accum& a, const NoPayload&, const NoPayload&, const Vec<Real, Dim>& dr, Real r2) const {
    const Real h = rc2 - r2;
    const Real w = h * h;
    a.count += Real(1);
    a.w += w;
    for (int d = 0; d < Dim; ++d) a.wx[d] += w * dr[d];
  }
  // (a symmetric form, so that cell-loop-half gets as far as the one-set rule)
  CELLINT_HD void symmetric(Accum& ai, Accum& aj, const NoPayload& p, const NoPayload& q, const Vec<Real, Dim>& dr,
                            Real r2) const {
    (*this)(ai, p, q, dr, r2);
    (*this)(aj, q, p, Vec<Real, Dim>{} - dr, r2);
  }
};

/// The strategies that cannot run two sets (their plans say "one set").
inline bool one_set_only(StrategyKind k) {
  return k == StrategyKind::AllInSM || k == StrategyKind::XPencilReg || k == StrategyKind::XPencilTile ||
         k == StrategyKind::CellLoopHalf;
}

/// Targets at `tppc` and sources at `sppc` particles per cell on `cells`^Dim cells; every strategy
/// that exists on B against the oracle.
template <class Real, int Dim>
void check_sets(int cells, double tppc, double sppc, Distribution dist, bool periodic) {
  const std::uint64_t seed = fresh_seed();
  INFO(Dim << "D, " << cells << " cells/axis, targets " << tppc << " / sources " << sppc << " per cell, "
           << to_string(dist) << (periodic ? ", periodic" : ", open") << ", seed " << seed);
  Box<Real, Dim> box;
  for (int d = 0; d < Dim; ++d) {
    box.origin[d] = Real(-0.5) * d;
    box.lengths[d] = static_cast<Real>(cells);
    box.periodic[d] = periodic;
  }
  const Real rc = 1;
  CellGrid<B, Real, Dim> targets(box, rc), sources(box, rc);
  const auto tp = make_positions(targets.geometry(), tppc, dist, seed);
  const auto sp = make_positions(sources.geometry(), sppc, Distribution::Uniform, seed ^ 0x5157ull);
  targets.build(tp);
  sources.build(sp);
  const Index nt = targets.size(), ns = sources.size();
  INFO(nt << " targets, " << ns << " sources");

  // The oracle in double, user order; pairs within a relative 1e-5 of the cutoff may go either way.
  struct Ref {
    int lo = 0, hi = 0;
    double w = 0, wx[Dim] = {}, scale = 0;
  };
  std::vector<Ref> ref(static_cast<std::size_t>(nt));
  for (Index t = 0; t < nt; ++t)
    for (Index s = 0; s < ns; ++s) {
      double dr[Dim], r2 = 0;
      for (int d = 0; d < Dim; ++d) {
        dr[d] = double(tp[d][t]) - double(sp[d][s]);
        if (periodic) dr[d] -= box.lengths[d] * std::nearbyint(dr[d] / box.lengths[d]);
        r2 += dr[d] * dr[d];
      }
      if (r2 < 1 + 1e-5) ++ref[t].hi;
      if (r2 >= 1 - 1e-5) continue;
      ++ref[t].lo;
      const double w = (1 - r2) * (1 - r2);
      ref[t].w += w;
      ref[t].scale += w * (1 + std::sqrt(r2));
      for (int d = 0; d < Dim; ++d) ref[t].wx[d] += w * dr[d];
    }

  const Weights<Real, Dim> f{rc * rc};
  using Accum = typename Weights<Real, Dim>::Accum;
  int ran = 0;
  // Runs strategy k (Auto included) and compares with the oracle.
  auto check = [&](StrategyKind k) {
    INFO("strategy " << to_string(k));
    Buffer<B, Accum> out(static_cast<std::size_t>(std::max<Index>(nt, 1)));
    out.fill_bytes(0xFF);
    if (one_set_only(k)) {
      try {
        interact_with(k, targets, sources, f, out.data());
        FAIL("expected Unsupported");
      } catch (const Unsupported& e) {
        CHECK(std::string(e.what()).find("one set") != std::string::npos);
      }
      return;
    }
    const Report rep = interact_with(k, targets, sources, f, out.data());
    B::synchronize();
    if (k == StrategyKind::Auto) CHECK_FALSE(one_set_only(rep.strategy));
    ++ran;
    const auto got = targets.to_user_order(out.data());
    const double tol = sizeof(Real) == 4 ? 2e-5 : 1e-11;
    int bad = 0;
    for (Index t = 0; t < nt && bad < 5; ++t) {
      const Ref& r = ref[t];
      const Accum& a = got[t];
      bool ok = a.count >= r.lo && a.count <= r.hi && std::abs(a.w - r.w) <= tol * (r.scale + 1e-30) + 1e-6;
      for (int d = 0; d < Dim; ++d) ok = ok && std::abs(a.wx[d] - r.wx[d]) <= tol * (r.scale + 1e-30) + 1e-6;
      if (!ok) {
        ++bad;
        UNSCOPED_INFO("target " << t << ": count " << a.count << " (oracle " << r.lo << ".." << r.hi << "), w "
                                << a.w << " (oracle " << r.w << ")");
      }
    }
    CHECK(bad == 0);
  };
  detail::for_each_strategy(AllStrategies{}, [&](auto tag) {
    using S = decltype(tag);
    if (S::gpu_like ? B::is_gpu_like : !B::device_memory) check(S::kind);  // those that exist on B
  });
  check(StrategyKind::Auto);
  CHECK(ran > 1);
}

TEST_CASE("two sets: every strategy runs them against the oracle or says it runs one set",
          CELLINT_TEST_TAG "[two-sets][sanitize]") {
  for (bool periodic : {false, true}) {
    check_sets<float, 3>(4, 3, 8, Distribution::Uniform, periodic);
    check_sets<double, 2>(6, 5, 2, Distribution::Clustered, periodic);
    check_sets<float, 2>(5, 0.4, 40, Distribution::OnFaces, periodic);   // few targets, many sources
    check_sets<double, 3>(3, 30, 0.4, Distribution::Uniform, periodic);  // many targets, few sources
    check_sets<float, 3>(3, 4, 0, Distribution::Uniform, periodic);      // no sources
    check_sets<float, 3>(3, 0, 4, Distribution::Uniform, periodic);      // no targets
  }
}

TEST_CASE("two sets: 10 targets in 10^5 sources and 10^5 targets around 10 sources", CELLINT_TEST_TAG "[two-sets]") {
  const int cells = 100;  // 10^4 cells: 10 per cell on the large side
  for (bool periodic : {false, true}) {
    check_sets<float, 2>(cells, 10.0 / (cells * cells), 10, Distribution::Uniform, periodic);
    check_sets<double, 2>(cells, 10, 10.0 / (cells * cells), Distribution::Clustered, periodic);
  }
  check_sets<float, 3>(12, 10.0 / (12 * 12 * 12), 12, Distribution::Uniform, true);  // 20,736 sources in 3D
}

/// Weighted pairs whose targets and sources read different attributes of different grids: load() the target's
/// weight, load_source() the source's mass. acc = sum w_t m_s (rc^2 - r^2).
template <class Real, int Dim>
struct Weighted {
  struct Payload {
    Real w;
  };
  using Accum = Real;
  Attribute<Real> weight;  ///< of the target grid
  Attribute<Real> mass;    ///< of the source grid
  Real rc2;
  template <class View>
  CELLINT_HD Payload load(const View& v, Index i) const {
    return {v.attribute(weight)[i]};
  }
  template <class View>
  CELLINT_HD Payload load_source(const View& v, Index j) const {
    return {v.attribute(mass)[j]};
  }
  CELLINT_HD void operator()(Real& a, const Payload& t, const Payload& s, const Vec<Real, Dim>&, Real r2) const {
    a += t.w * s.w * (rc2 - r2);
  }
};

/// Weighted with a payload type of its own for the sources (SourcePayload), larger than the targets' and read field by
/// field: acc = sum w_t (2m - m) (rc^2 - r^2).
template <class Real, int Dim>
struct WeightedTyped {
  struct Payload {
    Real w;
  };
  struct SourcePayload {
    Real m, two_m;
    int tag;
  };
  using Accum = Real;
  Attribute<Real> weight;  ///< of the target grid
  Attribute<Real> mass;    ///< of the source grid
  Real rc2;
  template <class View>
  CELLINT_HD Payload load(const View& v, Index i) const {
    return {v.attribute(weight)[i]};
  }
  template <class View>
  CELLINT_HD SourcePayload load_source(const View& v, Index j) const {
    const Real m = v.attribute(mass)[j];
    return {m, m + m, 7};
  }
  CELLINT_HD void operator()(Real& a, const Payload& t, const SourcePayload& s, const Vec<Real, Dim>&, Real r2) const {
    if (s.tag == 7) a += t.w * (s.two_m - s.m) * (rc2 - r2);
  }
};

/// The strategies that read each particle once for both sides.
inline bool one_record(StrategyKind k) {
  return k == StrategyKind::AllInSM || k == StrategyKind::XPencilReg || k == StrategyKind::XPencilTile ||
         k == StrategyKind::CellLoopHalf;
}

template <class Real, int Dim, template <class, int> class Functor = Weighted>
void check_load_source(bool periodic, bool one) {
  const std::uint64_t seed = fresh_seed();
  INFO(Dim << "D, " << (periodic ? "periodic" : "open") << (one ? ", one set" : ", two sets") << ", seed " << seed);
  Box<Real, Dim> box;
  for (int d = 0; d < Dim; ++d) {
    box.lengths[d] = 5;
    box.periodic[d] = periodic;
  }
  CellGrid<B, Real, Dim> tg(box, Real(1)), sg(box, Real(1));
  const auto tp = make_positions(tg.geometry(), 3, Distribution::Clustered, seed);
  const auto sp = one ? tp : make_positions(sg.geometry(), 6, Distribution::Uniform, seed + 1);
  tg.build(tp);
  sg.build(sp);
  const CellGrid<B, Real, Dim>& src = one ? tg : sg;
  const Index nt = tg.size(), ns = src.size();
  std::vector<Real> w(static_cast<std::size_t>(nt)), m(static_cast<std::size_t>(ns));
  for (Index i = 0; i < nt; ++i) w[i] = Real(1) + Real(i % 7) / 8;
  for (Index j = 0; j < ns; ++j) m[j] = Real(2) - Real(j % 5) / 4;
  Functor<Real, Dim> f{tg.template attach<Real>(w), {}, Real(1)};
  if (!one) sg.template attach<Real>(std::vector<Real>(static_cast<std::size_t>(ns), Real(0)));  // mass: index 1
  f.mass = one ? tg.template attach<Real>(m) : sg.template attach<Real>(m);
  std::vector<double> ref(static_cast<std::size_t>(nt), 0.0), scale(ref.size(), 0.0);
  for (Index t = 0; t < nt; ++t)
    for (Index s = 0; s < ns; ++s) {
      if (one && s == t) continue;
      double r2 = 0;
      for (int d = 0; d < Dim; ++d) {
        double dr = double(tp[d][t]) - double(sp[d][s]);
        if (periodic) dr -= 5 * std::nearbyint(dr / 5);
        r2 += dr * dr;
      }
      if (r2 >= 1) continue;
      ref[t] += double(w[t]) * double(m[s]) * (1 - r2);
      scale[t] += double(w[t]) * double(m[s]);
    }
  int ran = 0;
  detail::for_each_strategy(AllStrategies{}, [&](auto tag) {
    using S = decltype(tag);
    if (S::gpu_like ? !B::is_gpu_like : B::device_memory) return;
    INFO("strategy " << S::name);
    Buffer<B, Real> out(static_cast<std::size_t>(nt));
    if (one_record(S::kind)) {
      CHECK_THROWS_WITH(interact_with(S::kind, tg, src, f, out.data()), Catch::Contains("load_source"));
      return;
    }
    interact_with(S::kind, tg, src, f, out.data());
    B::synchronize();
    ++ran;
    const auto got = tg.to_user_order(out.data());
    const double tol = sizeof(Real) == 4 ? 2e-5 : 1e-11;
    int bad = 0;
    for (Index t = 0; t < nt; ++t)
      if (std::abs(double(got[t]) - ref[t]) > tol * (scale[t] + 1e-30) + 1e-5) ++bad;
    CHECK(bad == 0);
  });
  CHECK(ran >= (B::is_gpu_like ? 6 : 2));
}

TEST_CASE("two sets: targets and sources read their own attributes and payload types (load, load_source)",
          CELLINT_TEST_TAG "[two-sets]") {
  for (bool periodic : {false, true})
    for (bool one : {false, true}) {
      check_load_source<float, 3>(periodic, one);
      check_load_source<double, 2>(periodic, one);
      check_load_source<float, 2, WeightedTyped>(periodic, one);
      check_load_source<double, 3, WeightedTyped>(periodic, one);
    }
  // A handle of a third grid is refused, naming the handle.
  Box<float, 2> box;
  box.lengths[0] = box.lengths[1] = 4;
  CellGrid<B, float, 2> a(box, 1.0f), b(box, 1.0f), c(box, 1.0f);
  for (auto* g : {&a, &b, &c}) g->build(make_positions(g->geometry(), 2, Distribution::Uniform, 5));
  const std::vector<float> ones(static_cast<std::size_t>(c.size()), 1.0f);
  Weighted<float, 2> f{a.attach<float>(std::vector<float>(static_cast<std::size_t>(a.size()), 1.0f)),
                       c.attach<float>(ones), 1.0f};
  Buffer<B, float> out(static_cast<std::size_t>(a.size()));
  const StrategyKind k = B::is_gpu_like ? StrategyKind::ParPartNoLoop : StrategyKind::CellLoop;
  CHECK_THROWS_WITH(interact_with(k, a, b, f, out.data()), Catch::Contains("attached to another grid"));
  f.mass = b.attach<float>(std::vector<float>(static_cast<std::size_t>(b.size()), 2.0f));
  CHECK_NOTHROW(interact_with(k, a, b, f, out.data()));
  B::synchronize();
}

/// Reads one attribute on both sides with load() (no load_source()): acc = sum m_t m_s.
template <class Real, int Dim>
struct BothSides {
  struct Payload {
    Real m;
  };
  using Accum = Real;
  Attribute<Real> mass;
  template <class View>
  CELLINT_HD Payload load(const View& v, Index i) const {
    return {v.attribute(mass)[i]};
  }
  CELLINT_HD void operator()(Real& a, const Payload& t, const Payload& s, const Vec<Real, Dim>&, Real) const {
    a += t.m * s.m;
  }
};

TEST_CASE("two sets: a functor without load_source() needs the same attributes on both grids",
          CELLINT_TEST_TAG "[two-sets]") {
  Box<float, 2> box;
  box.lengths[0] = box.lengths[1] = 4;
  CellGrid<B, float, 2> a(box, 1.0f), b(box, 1.0f), c(box, 1.0f), d(box, 1.0f);
  for (auto* g : {&a, &b, &c, &d}) g->build(make_positions(g->geometry(), 2, Distribution::Uniform, 9));
  const auto ones = [](const CellGrid<B, float, 2>& g, float v) {
    return std::vector<float>(static_cast<std::size_t>(g.size()), v);
  };
  const BothSides<float, 2> f{a.attach<float>(ones(a, 2.0f))};
  Buffer<B, float> out(static_cast<std::size_t>(a.size()));
  const StrategyKind k = B::is_gpu_like ? StrategyKind::ParPartNoLoop : StrategyKind::CellLoop;
  // b holds no attribute; c holds an int at index 0: both refused, naming load_source()
  c.attach<int>(std::vector<int>(static_cast<std::size_t>(c.size()), 1));
  CHECK_THROWS_WITH(interact_with(k, a, b, f, out.data()), Catch::Contains("load_source"));
  CHECK_THROWS_WITH(interact_with(k, a, c, f, out.data()), Catch::Contains("load_source"));
  // d attaches a float at index 0: both sides read their own masses
  d.attach<float>(ones(d, 3.0f));
  interact_with(k, a, d, f, out.data());
  B::synchronize();
  Buffer<B, unsigned> n(static_cast<std::size_t>(a.size()));
  interact_with(k, a, d, NeighborCount<float, 2>{}, n.data());
  B::synchronize();
  const auto got = a.to_user_order(out.data());
  const auto count = a.to_user_order(n.data());
  for (std::size_t t = 0; t < got.size(); ++t) CHECK(got[t] == 6.0f * static_cast<float>(count[t]));
}

TEST_CASE("two sets: grids over another geometry are refused", CELLINT_TEST_TAG "[two-sets]") {
  Box<float, 3> a, b;
  for (int d = 0; d < 3; ++d) a.lengths[d] = b.lengths[d] = 4;
  b.lengths[2] = 5;
  CellGrid<B, float, 3> ga(a, 1.0f), gb(b, 1.0f), gc(a, 1.0f, GridOptions<float>{}), gw(a, 1.0f, [] {
    GridOptions<float> o;
    o.min_cell_width = 2;
    return o;
  }());
  for (auto* g : {&ga, &gb, &gc, &gw}) g->build(make_positions(g->geometry(), 2, Distribution::Uniform, 3));
  const Weights<float, 3> f{1.0f};
  Buffer<B, Weights<float, 3>::Accum> out(static_cast<std::size_t>(ga.size() + 1));
  const StrategyKind k = B::is_gpu_like ? StrategyKind::ParPartNoLoop : StrategyKind::CellLoop;
  CHECK_THROWS_WITH(interact_with(k, ga, gb, f, out.data()), Catch::Contains("one box with one cutoff"));
  CHECK_THROWS_WITH(interact_with(k, ga, gw, f, out.data()), Catch::Contains("cell size"));
  CHECK_NOTHROW(interact_with(k, ga, gc, f, out.data()));
  B::synchronize();
}

}  // namespace two_sets_test
}  // namespace
