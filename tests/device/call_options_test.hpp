// The call options of interact(): per-call statistics (Tuning::statistics -> Report::stats) against exact pair counts,
// and the reproducible mode (Tuning::reproducible): bit-identical results from grids built afresh, with Auto's
// decisions forgotten in between (as in a second run of a program).
#pragma once
#include <catch2/catch.hpp>

#include <cmath>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "cellint/lists/neighbor_list.hpp"

#include "support/device_backend.hpp"
#include "support/strategy_check.hpp"

namespace {
namespace call_options_test {
using namespace cellint;
using namespace cellint::test;
using B = CELLINT_TEST_BACKEND;

/// A force-like sum whose bits depend on the order of the terms: sum (rc^2 - r^2)^2 dr / (r^2 + 0.1).
template <class Real, int Dim>
struct Smooth {
  struct Accum {
    Real v[Dim + 1];
  };
  using AccumScalar = Real;
  Real rc2;
  CELLINT_HD void operator()(Accum& a, const NoPayload&, const NoPayload&, const Vec<Real, Dim>& dr, Real r2) const {
    const Real h = rc2 - r2;
    const Real w = h * h / (r2 + Real(0.1));
    a.v[Dim] += w;
    for (int d = 0; d < Dim; ++d) a.v[d] += w * dr[d];
  }
  CELLINT_HD void symmetric(Accum& ai, Accum& aj, const NoPayload& p, const NoPayload& q, const Vec<Real, Dim>& dr,
                            Real r2) const {
    (*this)(ai, p, q, dr, r2);
    (*this)(aj, q, p, Vec<Real, Dim>{} - dr, r2);
  }
};

/// On the Emulated backend, another thread order for run `r` (the shuffle seed: as a GPU runs its threads in another
/// order each time); nothing on the others. Restored by the returned guard.
struct ThreadOrder {
  std::uint64_t saved = 0;
  bool set = false;
  template <class BB>
  auto apply(int r, int) -> decltype(BB::options().seed, void()) {
    saved = BB::options().seed;
    set = true;
    BB::options().seed = saved + 7919u * static_cast<std::uint64_t>(r + 1);
  }
  template <class BB>
  void apply(int, long) {}
  template <class BB>
  auto restore(int) -> decltype(BB::options().seed, void()) {
    if (set) BB::options().seed = saved;
  }
  template <class BB>
  void restore(long) {}
};
template <int Unused = 0>
struct Reordered {
  ThreadOrder o;
  explicit Reordered(int r) { o.apply<B>(r, 0); }
  ~Reordered() { o.restore<B>(0); }
};

template <class Real, int Dim>
Box<Real, Dim> cube(int cells, bool periodic) {
  Box<Real, Dim> box;
  for (int d = 0; d < Dim; ++d) {
    box.origin[d] = Real(0.25) * d;
    box.lengths[d] = static_cast<Real>(cells) * Real(1.1);
    box.periodic[d] = periodic;
  }
  return box;
}

/// Statistics of every strategy on B (one set and two sets) against pair counts made here: the pairs within the
/// cutoff by an O(N^2) loop in double (pairs within 1e-6 of the cutoff may go either way), the candidates from the
/// cells each particle falls in.
template <class Real, int Dim>
void check_stats(bool periodic, bool two, Distribution dist) {
  const std::uint64_t seed = fresh_seed();
  INFO(Dim << "D, " << (periodic ? "periodic" : "open") << (two ? ", two sets" : ", one set") << ", " << to_string(dist)
           << ", seed " << seed);
  const Box<Real, Dim> box = cube<Real, Dim>(5, periodic);
  CellGrid<B, Real, Dim> tg(box, Real(1)), sg(box, Real(1));
  const auto tp = make_positions(tg.geometry(), 4, dist, seed);
  const auto sp = two ? make_positions(sg.geometry(), 7, Distribution::Uniform, seed + 1) : tp;
  tg.build(tp);
  sg.build(sp);
  const CellGrid<B, Real, Dim>& src = two ? sg : tg;
  const auto& g = tg.geometry();
  const std::uint64_t nt = tp[0].size(), ns = sp[0].size();
  std::uint64_t lo = 0, hi = 0, cand = 0;
  for (std::uint64_t t = 0; t < nt; ++t)
    for (std::uint64_t s = 0; s < ns; ++s) {
      if (!two && s == t) continue;
      double r2 = 0;
      bool near = true;
      for (int d = 0; d < Dim; ++d) {
        double dr = double(tp[d][t]) - double(sp[d][s]);
        const double L = box.lengths[d];
        if (periodic) dr -= L * std::nearbyint(dr / L);
        r2 += dr * dr;
        const Index a = g.axis_cell(tp[d][t], d), b = g.axis_cell(sp[d][s], d);
        Index k = a > b ? a - b : b - a;
        if (periodic) k = std::min<Index>(k, g.cells[d] - k);
        near = near && k <= 1;
      }
      cand += near;
      lo += r2 < 1 - 1e-6;
      hi += r2 < 1 + 1e-6;
    }
  const Smooth<Real, Dim> f{Real(1)};
  Tuning on;
  on.statistics = true;
  int ran = 0;
  auto check = [&](StrategyKind k) {
    INFO("strategy " << to_string(k));
    if (!supports(k, tg, src, f).ok) return;
    Buffer<B, typename Smooth<Real, Dim>::Accum> out(static_cast<std::size_t>(nt));
    const Report off = interact_with(k, tg, src, f, out.data());
    CHECK_FALSE(off.stats.collected);
    CHECK(off.stats.pairs_within + off.stats.pairs_examined + off.stats.min_bytes == 0);
    const Report r = interact_with(k, tg, src, f, out.data(), on);
    B::synchronize();
    ++ran;
    const CallStats& st = r.stats;
    CHECK(st.collected);
    CHECK(st.targets == nt);
    CHECK(st.sources == ns);
    const StrategyKind ran_kind = r.strategy;
    const bool once = ran_kind == StrategyKind::CellLoopHalf;  // each pair once: half the (target, source) pairs
    CHECK(st.each_pair_once == once);
    CHECK(st.pairs_within >= (once ? lo / 2 : lo));
    CHECK(st.pairs_within <= (once ? hi / 2 : hi));
    const std::uint64_t want = ran_kind == StrategyKind::AllPairs || ran_kind == StrategyKind::BruteForce
                                   ? nt * ns - (two ? 0 : nt)
                               : ran_kind == StrategyKind::CellLoopHalf ? cand / 2
                                                                        : cand;
    CHECK(st.pairs_examined == want);
    CHECK(st.min_bytes >= nt * (Dim * sizeof(Real) + sizeof(typename Smooth<Real, Dim>::Accum)));
    CHECK(st.ms > 0);
    CHECK(st.hit_rate() > 0);
    CHECK(st.hit_rate() <= 1);
  };
  detail::for_each_strategy(AllStrategies{}, [&](auto tag) {
    using S = decltype(tag);
    if (S::gpu_like ? B::is_gpu_like : !B::device_memory) check(S::kind);
  });
  check(StrategyKind::Auto);
  CHECK(ran >= 3);
}

TEST_CASE("statistics: pair counts, bytes and time of every strategy against exact counts",
          CELLINT_TEST_TAG "[stats]") {
  for (bool periodic : {false, true})
    for (bool two : {false, true}) {
      check_stats<float, 3>(periodic, two, Distribution::Clustered);
      check_stats<double, 2>(periodic, two, Distribution::OnFaces);
    }
}

/// Bit-identical results from two grids built afresh from the same input, with Auto's decisions forgotten in between;
/// every strategy and Auto, one set and two sets.
template <class Real, int Dim>
void check_reproducible(bool periodic, bool two) {
  const std::uint64_t seed = fresh_seed();
  INFO(Dim << "D, " << (periodic ? "periodic" : "open") << (two ? ", two sets" : ", one set") << ", seed " << seed);
  const Box<Real, Dim> box = cube<Real, Dim>(6, periodic);
  GridOptions<Real> stable;
  stable.stable = true;
  const auto probe = CellGrid<B, Real, Dim>(box, Real(1)).geometry();
  const auto tp = make_positions(probe, 6, Distribution::Clustered, seed);
  const auto sp = make_positions(probe, 3, Distribution::Uniform, seed + 7);
  const Smooth<Real, Dim> f{Real(1)};
  using Accum = typename Smooth<Real, Dim>::Accum;
  Tuning rep;
  rep.reproducible = true;
  int runs = 0;
  auto run = [&](StrategyKind k, StrategyKind* chosen) {
    const Reordered<> order(runs++);
    CellGrid<B, Real, Dim> tg(box, Real(1), stable), sg(box, Real(1), stable);
    tg.build(tp);
    sg.build(sp);
    const CellGrid<B, Real, Dim>& src = two ? sg : tg;
    Autotuner::instance().clear();
    Buffer<B, Accum> out(static_cast<std::size_t>(tg.size()));
    const Report r = interact_with(k, tg, src, f, out.data(), rep);
    if (chosen) *chosen = r.strategy;
    return tg.to_user_order(out.data());
  };
  int ran = 0;
  auto check = [&](StrategyKind k) {
    INFO("strategy " << to_string(k));
    {
      CellGrid<B, Real, Dim> tg(box, Real(1), stable), sg(box, Real(1), stable);
      tg.build(tp);
      sg.build(sp);
      if (k != StrategyKind::Auto && !supports(k, tg, two ? sg : tg, f).ok) return;
    }
    StrategyKind a = StrategyKind::Auto, b = StrategyKind::Auto;
    const auto x = run(k, &a), y = run(k, &b);
    ++ran;
    CHECK(a == b);
    if (k == StrategyKind::Auto) {  // the first of the fixed order that can run
      CellGrid<B, Real, Dim> tg(box, Real(1), stable), sg(box, Real(1), stable);
      tg.build(tp);
      sg.build(sp);
      for (StrategyKind o : Autotuner::reproducible_order<B>(double(tg.size()) / tg.cell_count()))
        if (supports(o, tg, two ? sg : tg, f).ok) {
          CHECK(a == o);
          break;
        }
    }
    REQUIRE(x.size() == y.size());
    CHECK(std::memcmp(x.data(), y.data(), x.size() * sizeof(Accum)) == 0);
  };
  detail::for_each_strategy(AllStrategies{}, [&](auto tag) {
    using S = decltype(tag);
    if (S::gpu_like ? B::is_gpu_like : !B::device_memory) check(S::kind);
  });
  check(StrategyKind::Auto);
  CHECK(ran >= 3);
}

TEST_CASE("reproducible: bit-identical results from grids built afresh, Auto included",
          CELLINT_TEST_TAG "[reproducible]") {
  for (bool periodic : {false, true})
    for (bool two : {false, true}) {
      check_reproducible<float, 3>(periodic, two);
      check_reproducible<float, 2>(periodic, two);
    }
}

TEST_CASE("reproducible: a grid built without GridOptions::stable is refused", CELLINT_TEST_TAG "[reproducible]") {
  const Box<float, 3> box = cube<float, 3>(4, true);
  GridOptions<float> stable;
  stable.stable = true;
  CellGrid<B, float, 3> loose(box, 1.0f), firm(box, 1.0f, stable);
  loose.build(make_positions(loose.geometry(), 3, Distribution::Uniform, 11));
  firm.build(make_positions(firm.geometry(), 3, Distribution::Uniform, 12));
  Tuning t;
  t.reproducible = true;
  const Smooth<float, 3> f{1.0f};
  Buffer<B, Smooth<float, 3>::Accum> out(static_cast<std::size_t>(std::max(loose.size(), firm.size())));
  CHECK_THROWS_WITH(interact(loose, f, out.data(), t), Catch::Contains("GridOptions::stable"));
  CHECK_THROWS_WITH(interact(firm, loose, f, out.data(), t), Catch::Contains("source grid"));
  CHECK_NOTHROW(interact(firm, f, out.data(), t));
  B::synchronize();
}

/// Neighbour lists: statistics against exact counts; with ListOptions::stable and Tuning::reproducible the same bits
/// from lists made afresh, also after the particles moved and the list was rebuilt on the backend; the refusals.
template <class Real, int Dim>
void check_lists(bool periodic, bool half) {
  const std::uint64_t seed = fresh_seed();
  INFO(Dim << "D, " << (periodic ? "periodic" : "open") << (half ? ", half" : ", full") << " list, seed " << seed);
  const Box<Real, Dim> box = cube<Real, Dim>(6, periodic);
  GridOptions<Real> stable;
  stable.stable = true;
  const auto probe = CellGrid<B, Real, Dim>(box, Real(1)).geometry();
  const auto p0 = make_positions(probe, 5, Distribution::Clustered, seed);
  const Smooth<Real, Dim> f{Real(1)};
  using Accum = typename Smooth<Real, Dim>::Accum;
  const Real skin = Real(0.3);
  ListOptions lo;
  lo.half = half;
  lo.stable = true;
  const bool refused = half && B::is_gpu_like;  // a half list adds with atomics there
  // Builds grid and list from p0, moves every particle by up to 0.4 skin (a rebuild on the backend), and returns the
  // sums of the reproducible call (empty when refused) and the statistics of a call with them.
  int runs = 0;
  auto run = [&](CallStats* st) {
    const Reordered<> order(runs++);
    CellGrid<B, Real, Dim> g(box, Real(1), stable);
    g.build(p0);
    NeighborList<B, Real, Dim> list(g, skin, lo);
    Positions<Real, Dim> p;
    for (int d = 0; d < Dim; ++d) {
      p[d].resize(static_cast<std::size_t>(g.size()));
      B::copy(p[d].data(), g.positions(d), sizeof(Real) * p[d].size(), CopyKind::DeviceToHost);
    }
    std::mt19937_64 rng(seed + 3);
    std::uniform_real_distribution<double> u(-0.23, 0.23);
    for (int d = 0; d < Dim; ++d)
      for (Real& x : p[d]) x += static_cast<Real>(u(rng) * double(skin));
    for (int d = 0; d < Dim; ++d)
      B::copy(g.positions(d), p[d].data(), sizeof(Real) * p[d].size(), CopyKind::HostToDevice);
    B::synchronize();
    list.update(g);
    CHECK(list.check(g).builds == 2);
    Buffer<B, Accum> out(static_cast<std::size_t>(g.size()));
    Tuning t;
    t.reproducible = true;
    std::vector<Accum> r;
    if (refused) {
      CHECK_THROWS_WITH(interact(list, g, f, out.data(), t), Catch::Contains("full list"));
    } else {
      interact(list, g, f, out.data(), t);
      r = g.to_user_order(out.data());
    }
    if (st) {
      Tuning s;
      s.statistics = true;
      *st = interact(list, g, f, out.data(), s).stats;
      std::uint64_t entries = 0;
      for (Index len : list.row_lengths(g)) entries += static_cast<std::uint64_t>(len);
      CHECK(st->pairs_examined == entries);
      // the pairs within the cutoff, from the moved positions (slot order)
      std::uint64_t lo2 = 0, hi2 = 0;
      for (Index i = 0; i < g.size(); ++i)
        for (Index j = 0; j < g.size(); ++j) {
          if (i == j) continue;
          double r2 = 0;
          for (int d = 0; d < Dim; ++d) {
            double dx = double(p[d][i]) - double(p[d][j]);
            if (periodic) dx -= box.lengths[d] * std::nearbyint(dx / box.lengths[d]);
            r2 += dx * dx;
          }
          lo2 += r2 < 1 - 1e-6;
          hi2 += r2 < 1 + 1e-6;
        }
      CHECK(st->each_pair_once == half);
      CHECK(st->pairs_within >= (half ? lo2 / 2 : lo2));
      CHECK(st->pairs_within <= (half ? hi2 / 2 : hi2));
      CHECK(st->collected);
      CHECK(st->ms > 0);
    }
    return r;
  };
  CallStats st;
  const auto a = run(&st), b = run(nullptr);
  REQUIRE(a.size() == b.size());
  if (!a.empty()) CHECK(std::memcmp(a.data(), b.data(), a.size() * sizeof(Accum)) == 0);

  // The refusals: a list that is not stable, a grid that is not.
  CellGrid<B, Real, Dim> g(box, Real(1), stable), loose(box, Real(1));
  g.build(p0);
  loose.build(p0);
  ListOptions plain;
  plain.half = half;
  NeighborList<B, Real, Dim> l1(g, skin, plain), l2(loose, skin, lo);
  Buffer<B, Accum> out(static_cast<std::size_t>(g.size()));
  Tuning t;
  t.reproducible = true;
  CHECK_THROWS_WITH(interact(l1, g, f, out.data(), t), Catch::Contains("ListOptions::stable"));
  CHECK_THROWS_WITH(interact(l2, loose, f, out.data(), t), Catch::Contains("GridOptions::stable"));
  B::synchronize();
}

TEST_CASE("reproducible and statistics: neighbour lists", CELLINT_TEST_TAG "[reproducible][stats][lists]") {
  for (bool periodic : {false, true})
    for (bool half : {false, true}) {
      check_lists<float, 3>(periodic, half);
      check_lists<double, 2>(periodic, half);
    }
}

}  // namespace call_options_test
}  // namespace
