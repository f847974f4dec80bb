// Neighbour lists: the rows against a double-precision all-pairs oracle (every pair within cutoff + skin present, each
// pair once in half lists, nothing beyond cutoff + skin), interaction over the rows against the oracle before and
// after the particles move, the rebuild trigger, overflow growth, and bad input.
#pragma once
#include <catch2/catch.hpp>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "cellint/backend/graph.hpp"
#include "cellint/lists/neighbor_list.hpp"
#include "cellint/potentials/counting.hpp"
#include "cellint/potentials/lennard_jones.hpp"

#include "support/device_backend.hpp"
#include "support/oracle.hpp"

namespace {
namespace neighbor_list_test {
using namespace cellint;
using namespace cellint::test;
using B = CELLINT_TEST_BACKEND;

/// The grid's positions in slot order, on the host.
template <class Real, int Dim>
Positions<Real, Dim> sorted_positions(const CellGrid<B, Real, Dim>& g) {
  Positions<Real, Dim> p;
  for (int d = 0; d < Dim; ++d) {
    p[d].resize(static_cast<std::size_t>(g.size()));
    if (g.size()) B::copy(p[d].data(), g.positions(d), sizeof(Real) * p[d].size(), CopyKind::DeviceToHost);
  }
  return p;
}
/// Writes slot-order positions back into the grid (as an integrator would, without re-binning).
template <class Real, int Dim>
void set_positions(CellGrid<B, Real, Dim>& g, const typename identity<Positions<Real, Dim>>::type& p) {
  for (int d = 0; d < Dim; ++d)
    if (g.size()) B::copy(g.positions(d), p[d].data(), sizeof(Real) * p[d].size(), CopyKind::HostToDevice);
  B::synchronize();
}
/// Squared minimum-image distance in double.
template <class Real, int Dim>
double dist2(const Box<Real, Dim>& box, const typename identity<Positions<Real, Dim>>::type& p, Index i, Index j) {
  double r2 = 0;
  for (int d = 0; d < Dim; ++d) {
    double dx = double(p[d][i]) - double(p[d][j]);
    if (box.periodic[d]) dx -= box.lengths[d] * std::nearbyint(dx / box.lengths[d]);
    r2 += dx * dx;
  }
  return r2;
}

template <class Real, int Dim>
Box<Real, Dim> make_box(int cells, bool periodic) {
  Box<Real, Dim> box;
  for (int d = 0; d < Dim; ++d) {
    box.origin[d] = Real(-0.25) * d;
    box.lengths[d] = static_cast<Real>(cells) * Real(1.5) + Real(0.5) * d;
    box.periodic[d] = periodic;
  }
  return box;
}

/// Rows against the oracle: complete within cutoff + skin (what later steps rely on), nothing beyond it, no self, no
/// duplicate, and in a half list each pair in exactly one of its two rows.
template <class Real, int Dim>
void check_rows(const CellGrid<B, Real, Dim>& g, const NeighborList<B, Real, Dim>& list) {
  const auto rows = list.rows(g);
  const auto len = list.row_lengths(g);
  const auto p = sorted_positions(g);
  const Index n = g.size();
  const auto& box = g.geometry().box;
  const double rc = g.cutoff(), reach = rc + list.skin();
  const double eps = sizeof(Real) == 4 ? 1e-5 : 1e-12;
  std::vector<std::set<Index>> have(static_cast<std::size_t>(n));
  int bad = 0;
  for (Index i = 0; i < n && bad < 5; ++i) {
    const auto& r = rows[static_cast<std::size_t>(i)];
    if (static_cast<Index>(r.size()) != len[static_cast<std::size_t>(i)]) {
      ++bad;
      UNSCOPED_INFO("row " << i << " stores " << r.size() << " entries, length " << len[static_cast<std::size_t>(i)]);
    }
    auto& h = have[static_cast<std::size_t>(i)];
    h.insert(r.begin(), r.end());
    if (h.size() != r.size() || h.count(i)) {
      ++bad;
      UNSCOPED_INFO("row " << i << " has a duplicate or itself");
    }
    for (Index j : r)
      if (dist2(box, p, i, j) >= reach * reach * (1 + eps)) {
        ++bad;
        UNSCOPED_INFO("row " << i << " holds " << j << " at distance " << std::sqrt(dist2(box, p, i, j)));
      }
  }
  for (Index i = 0; i < n && bad < 5; ++i)
    for (Index j = 0; j < n; ++j) {
      if (j == i || dist2(box, p, i, j) >= reach * reach * (1 - eps)) continue;
      const int found =
          int(have[static_cast<std::size_t>(i)].count(j)) + int(have[static_cast<std::size_t>(j)].count(i));
      if (list.half() ? found != 1 : !have[static_cast<std::size_t>(i)].count(j)) {
        ++bad;
        UNSCOPED_INFO("pair " << i << ", " << j << " at distance " << std::sqrt(dist2(box, p, i, j)) << " is in "
                              << found << " of its rows");
      }
    }
  CHECK(bad == 0);
}

/// The grid's current positions in the user's order.
template <class Real, int Dim>
Positions<Real, Dim> user_positions(const CellGrid<B, Real, Dim>& g) {
  const auto sorted = sorted_positions(g);
  std::vector<Index> orig(static_cast<std::size_t>(g.size()));
  if (g.size()) B::copy(orig.data(), g.original_index(), sizeof(Index) * orig.size(), CopyKind::DeviceToHost);
  Positions<Real, Dim> user;
  for (int d = 0; d < Dim; ++d) {
    user[d].resize(orig.size());
    for (std::size_t s = 0; s < orig.size(); ++s) user[d][static_cast<std::size_t>(orig[s])] = sorted[d][s];
  }
  return user;
}

/// Interaction over the list against the oracle at the grid's current positions.
template <class Real, int Dim>
void check_interaction(const CellGrid<B, Real, Dim>& g, const NeighborList<B, Real, Dim>& list,
                       const Attribute<Real>& charge_handle, const std::vector<Real>& charge_user,
                       Index targets = -1) {
  using F = Probe<Real, Dim>;
  const F f{g.cutoff() * g.cutoff(), false, charge_handle};
  Buffer<B, typename F::Accum> out(static_cast<std::size_t>(std::max<Index>(g.size(), 1)));
  interact(list, g, f, out.data());
  const auto got = g.to_user_order(out.data());
  // the oracle at the current positions, in the user's order
  const auto user = user_positions(g);
  double max_abs = 0;
  for (int d = 0; d < Dim; ++d)
    for (Real x : user[d]) max_abs = std::max(max_abs, std::abs(double(x)));
  auto ref = reference<Real, Dim>(g.geometry().box, g.cutoff(), user, charge_user, 1e-5, 1,
                                  position_eps<Real>(max_abs + 2 * g.geometry().box.lengths[0]));
  if (targets >= 0) {  // rows for the first `targets` particles only (set_targets): the others' sums are empty
    Reference<Dim> some;
    for (std::size_t k = 0; k < ref.sampled.size(); ++k) {
      if (ref.sampled[k] >= targets) {  // (a half list gives them their shares of their pairs with targets)
        if (!list.half()) CHECK(got[static_cast<std::size_t>(ref.sampled[k])].count == 0u);
        continue;
      }
      some.sampled.push_back(ref.sampled[k]);
      some.value.push_back(ref.value[k]);
      some.scale.push_back(ref.scale[k]);
      some.slack.push_back(ref.slack[k]);
      some.count_lo.push_back(ref.count_lo[k]);
      some.count_hi.push_back(ref.count_hi[k]);
    }
    ref = some;
  }
  const std::string err = compare(got, ref, 4 * tolerance<Real>());
  INFO(err);
  CHECK(err.empty());
}

/// Moves every particle by a random vector of length below `max_step` (slot order, in place). With `images`, each
/// periodic coordinate is also moved by -1, 0 or +1 box lengths at random (an integrator that wraps positions back
/// into the box, or never does: the same particles).
template <class Real, int Dim>
void jiggle(CellGrid<B, Real, Dim>& g, double max_step, std::uint64_t seed, bool images = false) {
  auto p = sorted_positions(g);
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> u(-1, 1);
  const double per_axis = max_step / std::sqrt(double(Dim));
  const auto& box = g.geometry().box;
  for (std::size_t i = 0; i < p[0].size(); ++i)
    for (int d = 0; d < Dim; ++d) {
      double x = double(p[d][i]) + per_axis * u(rng);
      if (!box.periodic[d]) x = std::min(std::max(x, double(box.origin[d])), double(box.origin[d] + box.lengths[d]));
      if (images && box.periodic[d]) x += double(box.lengths[d]) * double(static_cast<int>(rng() % 3) - 1);
      p[d][i] = static_cast<Real>(x);
    }
  set_positions(g, p);
}

/// Charges in [0.5, 1.5) for the grid's particles (user order), from `seed`.
template <class Real, int Dim>
std::vector<Real> random_charges(const CellGrid<B, Real, Dim>& g, std::uint64_t seed) {
  std::vector<Real> q(static_cast<std::size_t>(g.size()));
  std::mt19937_64 rng(seed);
  for (Real& v : q) v = static_cast<Real>(std::uniform_real_distribution<double>(0.5, 1.5)(rng));
  return q;
}

template <class Real, int Dim>
void check_case(int cells, double ppc, Distribution dist, bool periodic, bool half, int row_threads = 0,
                ListLayout layout = ListLayout::Auto, int x_split = 0) {
  const std::uint64_t seed = fresh_seed();
  INFO(Dim << "D " << (sizeof(Real) == 4 ? "float" : "double") << ", " << cells << " cells/axis, " << ppc
           << " per cell, " << to_string(dist) << (periodic ? ", periodic" : ", open") << (half ? ", half" : ", full")
           << " list, " << row_threads << " threads per row (0: automatic), layout "
           << (layout == ListLayout::Auto   ? "auto"
               : layout == ListLayout::Rows ? "rows"
                                            : "columns")
           << ", x split " << x_split << ", seed " << seed);
  const Real rc = 1, skin = Real(0.3);
  CellGrid<B, Real, Dim> g(make_box<Real, Dim>(cells, periodic), rc);
  g.build(make_positions(g.geometry(), ppc, dist, seed));
  const auto q = random_charges(g, seed ^ 0xC4A9);
  const auto charge = g.attach(q);
  ListOptions o;
  o.half = half;
  o.row_threads = row_threads;
  o.layout = layout;
  o.x_split = x_split;
  NeighborList<B, Real, Dim> list(g, skin, o);
  check_rows(g, list);
  check_interaction(g, list, charge, q);

  // moves below skin / 2, some particles at other periodic images: no rebuild, the rows still serve the cutoff
  const long builds0 = list.check(g).builds;
  jiggle(g, 0.49 * skin, seed + 1, true);
  list.update(g);
  CHECK(list.check(g).builds == builds0);
  check_interaction(g, list, charge, q);

  // a further move past skin / 2 (from the last build): rebuilt on the backend
  jiggle(g, 0.5 * skin, seed + 2);
  list.update(g);
  const ListStats st = list.check(g);
  check_interaction(g, list, charge, q);
  if (st.builds > builds0) check_rows(g, list);
}

TEST_CASE("neighbour lists: rows and interaction against the oracle, before and after the particles move",
          CELLINT_TEST_TAG "[lists]") {
  for (bool half : {false, true})
    for (bool periodic : {true, false}) {
      check_case<float, 3>(4, 6, Distribution::Uniform, periodic, half);
      check_case<double, 3>(3, 4, Distribution::Clustered, periodic, half);
      check_case<float, 2>(6, 5, Distribution::OnFaces, periodic, half);
      check_case<double, 2>(5, 3, Distribution::Clustered, periodic, half);
      check_case<float, 3>(8, 1, Distribution::Uniform, periodic, half);  // > 4096 list cells: several scan tiles
    }
}

TEST_CASE("neighbour lists: list cells 1, 1/2 and 1/3 of the reach wide along X (x_split)", CELLINT_TEST_TAG "[lists]") {
  for (int split : {1, 2, 3})  // (0, the default, is 2)
    for (bool half : {false, true})
      for (bool periodic : {true, false}) {
        check_case<float, 3>(4, 6, Distribution::Uniform, periodic, half, 0, ListLayout::Auto, split);
        check_case<double, 2>(5, 3, Distribution::Clustered, periodic, half, 0, ListLayout::Auto, split);
        check_case<float, 2>(6, 5, Distribution::OnFaces, periodic, half, 0, ListLayout::Auto, split);
      }
}

// The cell scan is one kernel whose blocks find the tiles before theirs by look-back, in words that alternate between
// two sets by the rebuild count's parity: a sparse box of over 160 tiles, rebuilt several times in a row (a word left
// over from a rebuild before, or a tile summed twice or not at all, misplaces whole cells of rows).
TEST_CASE("neighbour lists: the cell scan over many tiles, rebuild after rebuild", CELLINT_TEST_TAG "[lists]") {
  for (bool periodic : {true, false}) {
    const std::uint64_t seed = fresh_seed();
    INFO((periodic ? "periodic" : "open") << ", seed " << seed);
    using Real = float;
    CellGrid<B, Real, 3> g(make_box<Real, 3>(60, periodic), Real(1));
    g.build(make_positions(g.geometry(), 0.004, Distribution::Clustered, seed));
    const auto q = random_charges(g, seed ^ 0x5CA7);
    const auto charge = g.attach(q);
    NeighborList<B, Real, 3> list(g, Real(0.3));
    REQUIRE(list.geometry().cell_count() > 160 * cellint::detail::list_scan_tile);
    check_rows(g, list);
    check_interaction(g, list, charge, q);
    for (int round = 0; round < 3; ++round) {
      const long builds0 = list.check(g).builds;
      jiggle(g, 0.9 * 0.3, seed + 1 + static_cast<std::uint64_t>(round));  // (past skin / 2: a rebuild)
      list.update(g);
      CHECK(list.check(g).builds == builds0 + 1);
      check_rows(g, list);
      check_interaction(g, list, charge, q);
    }
  }
}

/// The cell scan kernel alone (ListScanCells, the one the list launches): dense random counts over more than a
/// thousand tiles and a last partial one, idle updates between rebuilds (which must leave every word alone), and
/// look-back windows of 1, 8 and 32 tiles, on the GPU-like backends. Each rebuild must give the exclusive scan, the total, the
/// counts at zero, `active` set, `request` and the tickets cleared, and the update logged. A kernel that read the
/// other parity's words, summed a window twice or stopped at a tile's own count would fail it.
/// (The Host backend scans on the calling thread, with the scan that every grid uses: no kernel to test.)
#ifndef CELLINT_TEST_HOST_LOOPS
template <class Backend>
void check_scan_kernel() {
  const std::uint64_t seed = fresh_seed();
  INFO("seed " << seed);
  std::mt19937_64 rng(seed);
  constexpr Index tile = cellint::detail::list_scan_tile;
#ifdef CELLINT_TEST_GPU
  const Index tiles = 4000;
  const unsigned threads = 1024;
#else
  const Index tiles = 1100;
  const unsigned threads = 64;
#endif
  const Index cells = tiles * tile - 64 * static_cast<Index>(1 + rng() % 63);  // a last tile part full, 64 | cells
  using W = cellint::detail::ListWord;
  for (int window : {1, 8, 32}) {
    INFO("window " << window);
    cellint::detail::ListShape<float, 3> s{};
    s.geo.cells[0] = cells / 64;
    s.geo.cells[1] = 64;
    s.geo.cells[2] = 1;
    REQUIRE(s.geo.cell_count() == cells);
    Buffer<Backend, std::uint32_t> count(static_cast<std::size_t>(cells) + 1),
        start(static_cast<std::size_t>(cells) + 1);
    Buffer<Backend, unsigned> ctrl(W::count);
    Buffer<Backend, Index> log(4);
    Buffer<Backend, unsigned long long> words(2 * static_cast<std::size_t>(tiles));
    words.fill_bytes(0);
    count.fill_bytes(0);
    start.fill_bytes(0);
    ctrl.fill_bytes(0);
    s.count = count.data();
    s.start = start.data();
    s.ctrl = ctrl.data();
    s.log = log.data();
    s.log_size = 4;
    const cellint::detail::ListScanCells<float, 3> scan{s, words.data(), tiles, window};
    std::vector<unsigned> c(ctrl.size());
    std::vector<std::uint32_t> before = start.to_host();
    unsigned builds = 0;
    for (int round = 0; round < 7; ++round) {
      INFO("round " << round);
      const bool rebuild = round % 3 != 1;  // (rebuilds back to back, and idle updates between)
      std::vector<std::uint32_t> n(static_cast<std::size_t>(cells) + 1, 0u);  // (an idle update's too: left alone)
      for (Index k = 0; k < cells; ++k) n[static_cast<std::size_t>(k)] = static_cast<std::uint32_t>(rng() % 9);
      count.upload(n.data());
      c = ctrl.to_host();
      c[W::request] = rebuild ? 1u : 0u;
      c[W::active] = 7u;  // (the scan overwrites it either way)
      c[W::updates] = static_cast<unsigned>(10 + round);
      ctrl.upload(c.data());
      Backend::launch(LaunchShape{static_cast<unsigned>(tiles), threads, scan.shared_bytes()}, scan);
      Backend::synchronize();
      const std::vector<std::uint32_t> got = start.to_host(), left = count.to_host();
      c = ctrl.to_host();
      CHECK(c[W::request] == 0u);
      CHECK(c[W::active] == (rebuild ? 1u : 0u));
      CHECK(c[W::tickets] == 0u);
      if (rebuild) {
        ++builds;
        CHECK(c[W::builds] == builds);
        CHECK(log.to_host()[(builds - 1) % 4] == 10 + round);
        std::uint32_t sum = 0;
        Index wrong = 0, first = -1;
        for (Index k = 0; k <= cells; ++k) {
          if (got[static_cast<std::size_t>(k)] != sum && !wrong++) first = k;
          sum += n[static_cast<std::size_t>(k)];
        }
        CHECK(wrong == 0);
        CHECK(first == -1);  // (the first cell whose start is wrong: its tile is first / list_scan_tile)
        CHECK(std::count(left.begin(), left.begin() + cells, 0u) == cells);
      } else {
        CHECK(c[W::builds] == builds);
        CHECK(got == before);  // an idle update writes no start and clears no count
        CHECK(left == n);
      }
      before = got;
    }
  }
}

TEST_CASE("neighbour lists: the cell scan kernel over a thousand tiles, rebuilds and idle updates",
          CELLINT_TEST_TAG "[lists]") {
  check_scan_kernel<B>();
}
#endif

TEST_CASE("neighbour lists: rows and columns on every backend", CELLINT_TEST_TAG "[lists]") {
  // (each backend's own layout is the other one's default: Columns on GPU-like backends, Rows on the Host)
  for (ListLayout layout : {ListLayout::Rows, ListLayout::Columns})
    for (bool half : {false, true}) {
      check_case<float, 3>(4, 6, Distribution::Uniform, true, half, 0, layout);
      check_case<double, 2>(5, 3, Distribution::Clustered, false, half, 2, layout);
    }
}

TEST_CASE("neighbour lists: full rows evaluated by 1, 2, 4 and 8 threads per target", CELLINT_TEST_TAG "[lists]") {
  // (the small test systems choose 8 on GPU-like backends; the Host backend ignores the option)
  for (int threads : {1, 2, 4, 8}) {
    check_case<float, 3>(4, 6, Distribution::Clustered, true, false, threads);
    check_case<double, 2>(5, 3, Distribution::Uniform, false, false, threads);
  }
}

/// A branch-free functor (LennardJonesForces: called for every stored pair, with r2 = +infinity beyond the cutoff)
/// over full rows by one thread and by a group per row, and over half rows, against forces summed in double over
/// every pair within the cutoff; before and after a move, 2D and 3D, periodic and open. A row loop that passed r2 as
/// it is beyond the cutoff would add the forces of pairs between cutoff and cutoff + skin.
template <class Real, int Dim>
void check_branch_free(bool periodic, Distribution dist) {
  const std::uint64_t seed = fresh_seed();
  INFO(Dim << "D " << (sizeof(Real) == 4 ? "float" : "double") << (periodic ? ", periodic" : ", open") << ", "
           << to_string(dist) << ", seed " << seed);
  using F = LennardJonesForces<Real, Dim, Real, FastMath>;
  static_assert(FunctorTraits<F, Real, Dim>::branch_free, "LennardJonesForces is branch-free");
  static_assert(!FunctorTraits<LennardJones<Real, Dim>, Real, Dim>::branch_free, "an energy shift is not");
  const Real rc = 1;
  const F f = F::make(Real(1), Real(0.4), rc, false, Real(0.3));  // (softened: random positions come close)
  CellGrid<B, Real, Dim> g(make_box<Real, Dim>(5, periodic), rc);
  g.build(make_positions(g.geometry(), Dim == 3 ? 5 : 8, dist, seed));
  const auto& box = g.geometry().box;
  auto expected = [&] {  // user order, in double
    const auto sorted = sorted_positions(g);
    std::vector<Index> orig(static_cast<std::size_t>(g.size()));
    B::copy(orig.data(), g.original_index(), sizeof(Index) * orig.size(), CopyKind::DeviceToHost);
    const std::size_t n = orig.size();
    std::vector<std::array<double, Dim>> x(n), force(n);
    for (std::size_t s = 0; s < n; ++s)
      for (int d = 0; d < Dim; ++d) x[static_cast<std::size_t>(orig[s])][d] = double(sorted[d][s]);
    for (std::size_t i = 0; i < n; ++i) {
      force[i].fill(0);
      for (std::size_t j = 0; j < n; ++j) {
        if (j == i) continue;
        double dr[Dim], r2 = 0;
        for (int d = 0; d < Dim; ++d) {
          dr[d] = x[i][d] - x[j][d];
          if (box.periodic[d]) dr[d] -= double(box.lengths[d]) * std::nearbyint(dr[d] / double(box.lengths[d]));
          r2 += dr[d] * dr[d];
        }
        if (r2 >= double(rc) * double(rc)) continue;
        const double u = 1 / (r2 + 0.09), s6 = std::pow(0.16, 3), c = 4 * s6;
        const double fr = u * u * u * u * (12 * c * s6 * u * u * u - 6 * c);
        for (int d = 0; d < Dim; ++d) force[i][d] += fr * dr[d];
      }
    }
    return force;
  };
  auto check = [&](const NeighborList<B, Real, Dim>& list) {
    Buffer<B, typename F::Accum> out(static_cast<std::size_t>(g.size()));
    interact(list, g, f, out.data());
    const auto got = g.to_user_order(out.data());
    const auto want = expected();
    double scale = 0, worst = 0;
    for (const auto& w : want)
      for (double c : w) scale = std::max(scale, std::abs(c));
    for (std::size_t i = 0; i < want.size(); ++i)
      for (int d = 0; d < Dim; ++d) worst = std::max(worst, std::abs(double(got[i].force[d]) - want[i][d]));
    INFO("largest force " << scale << ", largest error " << worst);
    CHECK(scale > 0);
    CHECK(worst <= 1e4 * double(std::numeric_limits<Real>::epsilon()) * scale);
  };
  ListOptions one, group, half;
  one.row_threads = 1;
  group.row_threads = 4;
  half.half = true;
  NeighborList<B, Real, Dim> l1(g, Real(0.3), one), l4(g, Real(0.3), group), lh(g, Real(0.3), half);
  for (int round = 0; round < 2; ++round) {
    INFO("round " << round);
    check(l1);
    check(l4);
    check(lh);
    jiggle(g, 0.1, seed + 7);
    for (auto* l : {&l1, &l4, &lh}) l->update(g);
  }
}

TEST_CASE("neighbour lists: a branch-free functor (LennardJonesForces) against forces summed in double",
          CELLINT_TEST_TAG "[lists]") {
  check_branch_free<float, 3>(true, Distribution::Uniform);
  check_branch_free<double, 3>(false, Distribution::Clustered);
  check_branch_free<float, 2>(false, Distribution::Uniform);
  check_branch_free<double, 2>(true, Distribution::Clustered);
}

/// An epilogue that records what it is handed (the sum and the number of calls per slot) and moves the target by
/// dt * F, writing the grid's positions while other rows are still being summed, as a kick and drift would.
template <class Real, int Dim, class Accum>
struct MoveByForce {
  Real* x[Dim];
  Accum* got;
  unsigned* calls;
  Real dt;
  CELLINT_HD void operator()(Index slot, const Accum& a) const {
    got[slot] = a;
    ++calls[slot];
    for (int d = 0; d < Dim; ++d) x[d][slot] += dt * a.force[d];
  }
};

/// interact(list, grid, f, epilogue(fn)): fn gets each target's sum once, the same bits as the stored output, with one
/// thread and a group per row; it may move the grid's positions meanwhile (the rows read the list's packed copy: a
/// kernel that read the grid's positions would sum some rows at moved positions, and differ); a half list refuses it.
template <class Real, int Dim>
void check_epilogue(bool periodic, Distribution dist, int row_threads) {
  const std::uint64_t seed = fresh_seed();
  INFO(Dim << "D " << (sizeof(Real) == 4 ? "float" : "double") << (periodic ? ", periodic" : ", open") << ", "
           << to_string(dist) << ", " << row_threads << " threads per row, seed " << seed);
  using F = LennardJonesForces<Real, Dim, Real, FastMath>;
  using Accum = typename F::Accum;
  const F f = F::make(Real(1), Real(0.4), Real(1), false, Real(0.3));
  CellGrid<B, Real, Dim> g(make_box<Real, Dim>(5, periodic), Real(1));
  g.build(make_positions(g.geometry(), Dim == 3 ? 5 : 8, dist, seed));
  ListOptions o;
  o.row_threads = row_threads;
  NeighborList<B, Real, Dim> list(g, Real(0.3), o);
  const std::size_t n = static_cast<std::size_t>(g.size());
  const Real dt = Real(1e-3);
  for (int round = 0; round < 2; ++round) {
    INFO("round " << round);
    Buffer<B, Accum> stored(n), got(n);
    Buffer<B, unsigned> calls(n);
    calls.fill_bytes(0);
    interact(list, g, f, stored.data());
    const auto before = sorted_positions(g);
    MoveByForce<Real, Dim, Accum> move{{}, got.data(), calls.data(), dt};
    for (int d = 0; d < Dim; ++d) move.x[d] = g.positions(d);
    interact(list, g, f, epilogue(move));
    const auto after = sorted_positions(g);
    const auto s = stored.to_host(), a = got.to_host();
    const auto c = calls.to_host();
    int differ = 0, not_once = 0, misplaced = 0;
    double largest = 0;
    for (std::size_t i = 0; i < n; ++i) {
      differ += std::memcmp(&s[i], &a[i], sizeof(Accum)) != 0;
      not_once += c[i] != 1;
      for (int d = 0; d < Dim; ++d) {
        const double want = double(before[d][i]) + double(dt) * double(s[i].force[d]);
        const double err = std::abs(double(after[d][i]) - want);
        misplaced += err > 4 * double(std::numeric_limits<Real>::epsilon()) * (std::abs(want) + 1);
        largest = std::max(largest, std::abs(double(s[i].force[d])));
      }
    }
    CHECK(largest > 0);
    CHECK(differ == 0);
    CHECK(not_once == 0);
    CHECK(misplaced == 0);
    list.update(g);
  }
  ListOptions ho;
  ho.half = true;
  NeighborList<B, Real, Dim> half(g, Real(0.3), ho);
  Buffer<B, Accum> got(n);
  Buffer<B, unsigned> calls(n);
  MoveByForce<Real, Dim, Accum> move{{}, got.data(), calls.data(), dt};
  for (int d = 0; d < Dim; ++d) move.x[d] = g.positions(d);
  CHECK_THROWS_AS(interact(half, g, f, epilogue(move)), Unsupported);
}

TEST_CASE("neighbour lists: an epilogue gets each target's sum and may move the grid's positions",
          CELLINT_TEST_TAG "[lists]") {
  for (int threads : {1, 4}) {
    check_epilogue<float, 3>(true, Distribution::Clustered, threads);
    check_epilogue<double, 3>(false, Distribution::Uniform, threads);
    check_epilogue<float, 2>(false, Distribution::Uniform, threads);
    check_epilogue<double, 2>(true, Distribution::Clustered, threads);
  }
}

/// Each particle's neighbours within the cutoff by the list (NeighborCount), in the user's order.
template <class Real, int Dim>
std::vector<unsigned> neighbour_counts(const NeighborList<B, Real, Dim>& list, const CellGrid<B, Real, Dim>& g) {
  Buffer<B, unsigned> c(static_cast<std::size_t>(std::max<Index>(g.size(), 1)));
  interact(list, g, NeighborCount<Real, Dim>{}, c.data());
  return g.to_user_order(c.data());
}

/// Two lists of one grid after moves below skin / 2 (no rebuild; then `moved()`), and after further moves past it
/// (rebuilt on the backend; then `rebuilt()`).
template <class Real, int Dim, class Moved, class Rebuilt>
void move_and_rebuild(CellGrid<B, Real, Dim>& g, NeighborList<B, Real, Dim>& all, NeighborList<B, Real, Dim>& some,
                      std::uint64_t seed, Moved&& moved, Rebuilt&& rebuilt) {
  jiggle(g, 0.45 * 0.3, seed + 1);
  all.update(g);
  some.update(g);
  moved();
  jiggle(g, 0.6 * 0.3, seed + 2);
  all.update(g);
  some.update(g);
  all.check(g);
  CHECK(some.check(g).builds >= 2);
  rebuilt();
}

/// set_targets(k): the rows of the first k particles (user order) are the full list's, the others are empty, and the
/// interaction gives the targets the oracle's sums (check_interaction's) and the others zero.
template <class Real, int Dim>
void check_targets(int cells, double ppc, Distribution dist, bool periodic) {
  const std::uint64_t seed = fresh_seed();
  INFO(Dim << "D " << (sizeof(Real) == 4 ? "float" : "double") << ", " << to_string(dist)
           << (periodic ? ", periodic" : ", open") << ", seed " << seed);
  CellGrid<B, Real, Dim> g(make_box<Real, Dim>(cells, periodic), Real(1));
  g.build(make_positions(g.geometry(), ppc, dist, seed));
  const Index n = g.size(), k = n * 2 / 3;
  NeighborList<B, Real, Dim> all(g, Real(0.3));
  NeighborList<B, Real, Dim> some(g, Real(0.3), ListOptions{}, k);
  CHECK(some.targets() == k);
  std::vector<Index> orig(static_cast<std::size_t>(n));
  B::copy(orig.data(), g.original_index(), sizeof(Index) * orig.size(), CopyKind::DeviceToHost);
  auto compare_rows = [&] {
    const auto ra = all.rows(g), rs = some.rows(g);
    int bad = 0;
    for (std::size_t slot = 0; slot < orig.size(); ++slot) {
      const std::set<Index> a(ra[slot].begin(), ra[slot].end()), b(rs[slot].begin(), rs[slot].end());
      if (orig[slot] < k ? a != b : !b.empty()) ++bad;
    }
    CHECK(bad == 0);
  };
  auto compare_counts = [&] {
    const auto a = neighbour_counts(all, g), b = neighbour_counts(some, g);
    int bad = 0, pairs = 0;
    for (Index i = 0; i < n; ++i) {
      pairs += static_cast<int>(a[static_cast<std::size_t>(i)]);
      if (b[static_cast<std::size_t>(i)] != (i < k ? a[static_cast<std::size_t>(i)] : 0u)) ++bad;
    }
    CHECK(pairs > 0);
    CHECK(bad == 0);
  };
  compare_rows();
  compare_counts();
  move_and_rebuild(g, all, some, seed, compare_counts, [&] {
    compare_rows();
    compare_counts();
  });
}

TEST_CASE("neighbour lists: rows for the first k particles only (set_targets)", CELLINT_TEST_TAG "[lists]") {
  check_targets<float, 3>(4, 6, Distribution::Clustered, true);
  check_targets<double, 3>(4, 4, Distribution::Uniform, false);
  check_targets<float, 2>(6, 5, Distribution::OnFaces, false);
  check_targets<double, 2>(5, 3, Distribution::Uniform, true);
}

/// A half list with set_targets(k): each pair with a target once (two targets in one of their rows, a target and a
/// non-target in the target's row), none of two non-targets, the non-targets' rows empty; the interaction gives the
/// targets the oracle's sums (check_interaction's) and the full list's neighbour counts, and each non-target its count
/// of target neighbours (its shares); the same after moves without and with a rebuild on the backend. One part's rows
/// throw.
template <class Real, int Dim>
void check_targets_half(int cells, double ppc, Distribution dist, bool periodic) {
  const std::uint64_t seed = fresh_seed();
  INFO(Dim << "D " << (sizeof(Real) == 4 ? "float" : "double") << ", " << to_string(dist)
           << (periodic ? ", periodic" : ", open") << ", seed " << seed);
  CellGrid<B, Real, Dim> g(make_box<Real, Dim>(cells, periodic), Real(1));
  g.build(make_positions(g.geometry(), ppc, dist, seed));
  const Index n = g.size(), k = n / 2;
  const auto charges = random_charges(g, seed ^ 0xC4A9);
  const auto charge = g.attach(charges);
  ListOptions ho;
  ho.half = true;
  NeighborList<B, Real, Dim> all(g, Real(0.3));  // full, every particle
  NeighborList<B, Real, Dim> some(g, Real(0.3), ho, k);
  std::vector<Index> orig(static_cast<std::size_t>(n));
  B::copy(orig.data(), g.original_index(), sizeof(Index) * orig.size(), CopyKind::DeviceToHost);
  auto target = [&](std::size_t slot) { return orig[slot] < k; };
  auto compare_rows = [&] {
    const auto ra = all.rows(g), rs = some.rows(g);
    int bad = 0, mixed = 0;
    for (std::size_t i = 0; i < orig.size(); ++i) {
      if (!target(i) && !rs[i].empty()) ++bad;
      for (Index j : rs[i])  // (nothing beyond the full list's reach)
        if (std::count(ra[i].begin(), ra[i].end(), j) != 1) ++bad;
      for (Index jj : ra[i]) {
        const auto j = static_cast<std::size_t>(jj);
        if (j < i) continue;  // (each pair once, from its lower slot)
        const bool in_i = std::count(rs[i].begin(), rs[i].end(), static_cast<Index>(j)) == 1,
                   in_j = std::count(rs[j].begin(), rs[j].end(), static_cast<Index>(i)) == 1;
        const bool ok = !target(i) && !target(j) ? !in_i && !in_j
                        : target(i) && target(j) ? in_i != in_j
                                                 : (target(i) ? in_i && !in_j : in_j && !in_i);
        mixed += target(i) != target(j) ? 1 : 0;
        if (!ok) ++bad;
      }
    }
    CHECK(mixed > 0);
    CHECK(bad == 0);
  };
  auto compare_counts = [&] {
    const auto a = neighbour_counts(all, g), b = neighbour_counts(some, g);
    // each non-target's pairs with targets, from the full list's rows within the cutoff (NeighborCount's test)
    const auto user = user_positions(g);
    const auto ra = all.rows(g);
    std::vector<unsigned> shares(static_cast<std::size_t>(n), 0u);
    const double c2 = double(g.cutoff()) * double(g.cutoff());
    int edge = 0;
    for (std::size_t i = 0; i < orig.size(); ++i) {
      if (target(i)) continue;
      for (Index j : ra[i]) {
        if (!target(static_cast<std::size_t>(j))) continue;
        const double r2 = dist2(g.geometry().box, user, orig[i], orig[static_cast<std::size_t>(j)]);
        if (std::abs(r2 - c2) < 1e-4 * c2) ++edge;  // (rounding decides: left out of the comparison below)
        shares[static_cast<std::size_t>(orig[i])] += r2 < c2 ? 1u : 0u;
      }
    }
    int bad = 0, pairs = 0;
    for (Index i = 0; i < n; ++i) {
      const auto u = static_cast<std::size_t>(i);
      pairs += static_cast<int>(a[u]);
      if (b[u] != (i < k ? a[u] : shares[u])) ++bad;
    }
    CHECK(pairs > 0);
    CHECK(bad <= edge);
  };
  auto both = [&] {
    compare_counts();
    check_interaction(g, some, charge, charges, k);
  };
  compare_rows();
  both();
  move_and_rebuild(g, all, some, seed, both, [&] {
    compare_rows();
    both();
  });
  Buffer<B, unsigned> c(static_cast<std::size_t>(n));
  CHECK_THROWS_WITH(interact(some, g, NeighborCount<Real, Dim>{}, c.data(), ListPart::Interior),
                    Catch::Contains("ListPart::All"));
}

TEST_CASE("neighbour lists: a half list with rows for the first k particles only", CELLINT_TEST_TAG "[lists]") {
  check_targets_half<float, 3>(4, 6, Distribution::Clustered, true);
  check_targets_half<double, 3>(4, 4, Distribution::Uniform, false);
  check_targets_half<float, 2>(6, 5, Distribution::OnFaces, false);
  check_targets_half<double, 2>(5, 3, Distribution::Uniform, true);
}

/// ListPart: with the particles of the lower 60 % of the x axis as targets (first in user order) and the rest as
/// sources only, interior rows hold targets only; interior plus border rows give every row's sums exactly; and after
/// the particles move, each part's packing brings the positions its rows read (the other part's outputs left alone).
template <class Real, int Dim>
void check_parts(int cells, double ppc, Distribution dist, bool periodic, bool stable = false) {
  const std::uint64_t seed = fresh_seed();
  INFO(Dim << "D " << (sizeof(Real) == 4 ? "float" : "double") << ", " << to_string(dist)
           << (periodic ? ", periodic" : ", open") << (stable ? ", stable" : "") << ", seed " << seed);
  ListOptions opts;
  opts.stable = stable;  // (cells sorted by slot after the scatter: the non-targets' list positions move too)
  const Real skin = Real(0.3);
  CellGrid<B, Real, Dim> g(make_box<Real, Dim>(cells, periodic), Real(1));
  auto raw = make_positions(g.geometry(), ppc, dist, seed);
  const auto& box = g.geometry().box;
  const double split = double(box.origin[0]) + 0.6 * double(box.lengths[0]);
  Positions<Real, Dim> p;  // targets (x below the split), then the others
  Index k = 0;
  for (int side = 0; side < 2; ++side)
    for (std::size_t i = 0; i < raw[0].size(); ++i)
      if ((double(raw[0][i]) < split) == (side == 0)) {
        for (int d = 0; d < Dim; ++d) p[d].push_back(raw[d][i]);
        if (side == 0) ++k;
      }
  g.build(p);
  const Index n = g.size();
  NeighborList<B, Real, Dim> list(g, skin, opts, k);
  std::vector<Index> orig(static_cast<std::size_t>(n));
  B::copy(orig.data(), g.original_index(), sizeof(Index) * orig.size(), CopyKind::DeviceToHost);
  // interior rows read targets only; non-targets' rows are border rows; both kinds of target rows exist
  const auto border = list.border_rows(g);
  const auto rows = list.rows(g);
  int interior = 0, border_targets = 0, wrong = 0;
  for (std::size_t slot = 0; slot < orig.size(); ++slot) {
    if (orig[slot] >= k) {
      if (!border[slot]) ++wrong;
      continue;
    }
    if (border[slot]) {
      ++border_targets;
      continue;
    }
    ++interior;
    for (Index j : rows[slot])
      if (orig[static_cast<std::size_t>(j)] >= k) ++wrong;
  }
  CHECK(wrong == 0);
  CHECK(interior > 0);
  CHECK(border_targets > 0);
  // the two parts write, together, what one call over every row writes (the same arithmetic: the same bits)
  const NeighborCount<Real, Dim> count{};
  auto parts_match = [&](bool move) {
    Buffer<B, unsigned> whole(static_cast<std::size_t>(n)), split_out(static_cast<std::size_t>(n));
    const std::vector<unsigned> sentinel(static_cast<std::size_t>(n), 12345u);
    split_out.upload(sentinel.data());
    if (move) {
      jiggle(g, 0.45 * double(skin), seed + 7);
      list.update(g, ListPart::Interior);
    }
    interact(list, g, count, split_out, ListPart::Interior);
    const std::vector<unsigned> half_done = split_out.to_host();
    if (move) list.update(g, ListPart::Border);
    interact(list, g, count, split_out, ListPart::Border);
    interact(list, g, count, whole);
    const std::vector<unsigned> a = whole.to_host(), b = split_out.to_host();
    int bad_interior = 0, untouched = 0, differ = 0;
    for (std::size_t slot = 0; slot < a.size(); ++slot) {
      if (border[slot])
        untouched += half_done[slot] == 12345u;
      else
        bad_interior += half_done[slot] != a[slot];
      differ += a[slot] != b[slot];
    }
    CHECK(bad_interior == 0);
    CHECK(untouched == static_cast<int>(std::count(border.begin(), border.end(), std::uint8_t(1))));
    CHECK(differ == 0);
  };
  // build() lists each part's rows (the calls launch over those); after an update() that may rebuild on the backend
  // the calls filter every row instead: both ways give the same
  CHECK(list.part_rows(ListPart::Interior).rows != nullptr);
  CHECK(list.part_rows(ListPart::Interior).count == interior);
  CHECK(list.part_rows(ListPart::Border).count == n - interior);
  parts_match(false);
  parts_match(true);  // moved: the Interior and Border updates packed what their rows read
  list.update(g);
  CHECK(list.part_rows(ListPart::Border).rows == nullptr);
  parts_match(false);
  parts_match(true);
  list.build(g);
  CHECK(list.part_rows(ListPart::Border).rows != nullptr);
  // against the oracle's counts after the move (the targets; the others zero)
  Buffer<B, unsigned> got(static_cast<std::size_t>(n));
  interact(list, g, count, got, ListPart::Interior);
  interact(list, g, count, got, ListPart::Border);
  const auto by_user = g.to_user_order(got.data());
  const auto now = sorted_positions(g);
  int bad = 0;
  const double eps = 1e-5;  // pairs this close to the cutoff may count either way in float
  for (std::size_t si = 0; si < orig.size(); ++si) {
    const Index ui = orig[si];
    unsigned lo = 0, hi = 0;
    if (ui < k)
      for (std::size_t sj = 0; sj < orig.size(); ++sj) {
        const double r2 = sj == si ? 9.0 : dist2<Real, Dim>(box, now, static_cast<Index>(si), static_cast<Index>(sj));
        lo += r2 < 1.0 - eps;
        hi += r2 < 1.0 + eps;
      }
    const unsigned got_i = by_user[static_cast<std::size_t>(ui)];
    bad += got_i < lo || got_i > hi;
  }
  CHECK(bad == 0);
  // statistics count every row: refused for a part
  Tuning t;
  t.statistics = true;
  CHECK_THROWS_WITH(interact(list, g, count, got, ListPart::Interior, t), Catch::Contains("ListPart::All"));
  // set_targets(k, false): rebuilds sort no rows into parts; the two parts' packing (the non-targets' from the list
  // of them that the rebuild's scatter keeps) still brings every position the rows read, as a whole update() does
  NeighborList<B, Real, Dim> plain(g, skin, opts);
  plain.set_targets(k, false);
  plain.build(g);
  CHECK_FALSE(plain.marks_parts());
  CHECK(plain.part_rows(ListPart::Border).rows == nullptr);
  jiggle(g, 0.45 * double(skin), seed + 11);
  plain.update(g, ListPart::Interior);
  plain.update(g, ListPart::Border);
  list.update(g);
  Buffer<B, unsigned> mine(static_cast<std::size_t>(n)), ref(static_cast<std::size_t>(n));
  interact(plain, g, count, mine);
  interact(list, g, count, ref);
  CHECK(mine.to_host() == ref.to_host());
  CHECK_THROWS_WITH(interact(plain, g, count, mine, ListPart::Interior), Catch::Contains("set_targets(k, true)"));
  CHECK_THROWS_WITH(plain.border_rows(g), Catch::Contains("set_targets(k, true)"));
  // new targets take effect at the next build(): until then the parts' packing and the rows are the last build's
  plain.set_targets(k / 2, true);
  plain.update(g, ListPart::Interior);
  plain.update(g, ListPart::Border);
  interact(plain, g, count, mine);
  CHECK(mine.to_host() == ref.to_host());
  CHECK_THROWS_WITH(interact(plain, g, count, mine, ListPart::Interior), Catch::Contains("set_targets(k, true)"));
}

TEST_CASE("neighbour lists: interior and border rows (ListPart)", CELLINT_TEST_TAG "[lists]") {
  check_parts<float, 3>(6, 4, Distribution::Uniform, true);
  check_parts<double, 3>(6, 4, Distribution::Clustered, false);
  check_parts<float, 2>(10, 5, Distribution::OnFaces, true);
  check_parts<double, 2>(10, 4, Distribution::Uniform, false);
  check_parts<float, 3>(6, 4, Distribution::Clustered, true, true);
  check_parts<double, 2>(10, 4, Distribution::Clustered, false, true);
}

TEST_CASE("neighbour lists: the rebuild trigger", CELLINT_TEST_TAG "[lists][sanitize]") {
  const float rc = 1, skin = 0.4f;
  // the narrowest list cell is cutoff + skin wide (7 / 5 along z): with the pair check too, any particle past skin / 2
  // rebuilds (see the next test case for the pairs)
  CellGrid<B, float, 3> g(make_box<float, 3>(4, true), rc);
  g.build(make_positions(g.geometry(), 3, Distribution::Uniform, fresh_seed()));
  NeighborList<B, float, 3> list(g, skin);
  const long b0 = list.check(g).builds;  // 1, or 2 when the first rows grew
  CHECK(b0 >= 1);
  auto p = sorted_positions(g);
  const float x0 = p[0][7];
  p[0][7] = x0 + 0.49f * skin;  // below skin / 2
  set_positions(g, p);
  list.update(g);
  CHECK(list.check(g).builds == b0);
  p[0][7] = x0 + 0.51f * skin;  // past it
  set_positions(g, p);
  list.update(g);
  ListStats st = list.check(g);
  CHECK(st.builds == b0 + 1);
  REQUIRE(st.rebuilt_at.size() == 1);
  CHECK(st.rebuilt_at[0] == 2);  // the second update
  list.update(g);
  CHECK(list.check(g).builds == b0 + 1);  // measured from the new reference

  // every 5, no check: rebuilt at updates 5 and 10 whatever moved
  ListOptions o;
  o.every = 5;
  o.check = false;
  NeighborList<B, float, 3> fixed(g, skin, o);
  const long f0 = fixed.check(g).builds;
  for (int k = 0; k < 10; ++k) fixed.update(g);
  st = fixed.check(g);
  CHECK(st.builds == f0 + 2);
  CHECK(st.rebuilt_at == std::vector<long>{5, 10});

  // grid.rebuild() permutes the slots: interact() refuses the old rows, update() rebuilds them
  g.rebuild();
  const NeighborCount<float, 3> count{};
  Buffer<B, NeighborCount<float, 3>::Accum> out(static_cast<std::size_t>(g.size()));
  CHECK_THROWS_WITH(interact(list, g, count, out), Catch::Contains("older binning"));
  list.update(g);
  CHECK_NOTHROW(interact(list, g, count, out));
}

/// Slot of the particle with user index `user`.
template <class Real, int Dim>
Index slot_of(const CellGrid<B, Real, Dim>& g, Index user) {
  std::vector<Index> orig(static_cast<std::size_t>(g.size()));
  B::copy(orig.data(), g.original_index(), sizeof(Index) * orig.size(), CopyKind::DeviceToHost);
  return static_cast<Index>(std::find(orig.begin(), orig.end(), user) - orig.begin());
}

/// The pair check (RebuildTrigger::Pairs): a particle past skin / 2 rebuilds only together with a particle that closed
/// in on it (in a cell next to its own, or, both listed, in any cell), or when it moved farther than narrowest cell -
/// cutoff - skin / 2; the interaction stays exact throughout.
template <class Real>
void check_pair_trigger(bool half, int x_split = 0) {
  const std::uint64_t seed = fresh_seed();
  INFO((sizeof(Real) == 4 ? "float" : "double")
       << (half ? ", half" : ", full") << " list, x split " << x_split << ", seed " << seed);
  const Real rc = 1, skin = Real(0.3);
  // list cells of 1.5 in a periodic cube of 6: a particle may move 1.5 - 1 - 0.15 = 0.35 before it rebuilds alone, and
  // two particles (1.5 - 1) / 2 = 0.25 each before they are checked against each other
  CellGrid<B, Real, 3> g(Box<Real, 3>::cube(Real(0), Real(6), true), rc);
  Positions<Real, 3> p;
  // 0 and 1: 1.32 apart (beyond the reach of 1.3: no row holds the pair); 2 and 3: 0.9; 4 and 5: 1.6, in cells two
  // apart along x, and where they move to
  const double at[6][3] = {{1.2, 1.1, 1.3}, {2.52, 1.1, 1.3}, {4.2, 4.1, 4.3},
                           {4.2, 5.0, 4.3}, {1.45, 3.4, 0.6}, {3.05, 3.4, 0.6}};
  const double to[2][3] = {{1.76, 3.4, 0.6}, {2.74, 3.4, 0.6}};
  for (const auto& x : at)
    for (int d = 0; d < 3; ++d) p[d].push_back(static_cast<Real>(x[d]));
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> u(0, 6);
  auto apart = [](const double* x, const double* y) {  // nearest-image distance >= 1.7
    double r2 = 0;
    for (int d = 0; d < 3; ++d) r2 += std::pow(std::remainder(x[d] - y[d], 6.0), 2);
    return r2 >= 1.7 * 1.7;
  };
  for (int k = 0; k < 60;) {  // others, which stay where they are (none near 4 and 5, which move the farthest)
    const double x[3] = {u(rng), u(rng), u(rng)};
    if (!apart(x, at[4]) || !apart(x, at[5]) || !apart(x, to[0]) || !apart(x, to[1])) continue;
    for (int d = 0; d < 3; ++d) p[d].push_back(static_cast<Real>(x[d]));
    ++k;
  }
  g.build(p);
  std::vector<Real> q(static_cast<std::size_t>(g.size()), Real(1));
  const auto charge = g.attach(q);
  ListOptions o;
  o.half = half;
  o.x_split = x_split;  // (2: cells 0.75 wide along X, two of them on each side: the same bounds)
  const NeighborList<B, Real, 3> automatic(g, skin, o);
  CHECK_FALSE(automatic.checks_pairs());  // (Auto: pairs from NeighborList::pairs_from particles)
  o.trigger = RebuildTrigger::Pairs;
  NeighborList<B, Real, 3> list(g, skin, o);
  CHECK(list.checks_pairs());
  o.trigger = RebuildTrigger::HalfSkin;
  NeighborList<B, Real, 3> plain(g, skin, o);  // any particle past skin / 2 rebuilds
  const long b0 = list.check(g).builds, p0 = plain.check(g).builds;
  auto move = [&](Index user, int axis, double by) {
    auto sp = sorted_positions(g);
    const Index s = slot_of(g, user);
    sp[axis][static_cast<std::size_t>(s)] = static_cast<Real>(double(sp[axis][static_cast<std::size_t>(s)]) + by);
    set_positions(g, sp);
    list.update(g);
    plain.update(g);
  };
  move(0, 0, 0.18);  // towards 1, past skin / 2: alone it cannot close the 0.32 between the pair and the cutoff
  CHECK(list.check(g).builds == b0);
  CHECK(plain.check(g).builds == p0 + 1);
  check_interaction(g, list, charge, q);
  move(1, 0, -0.16);  // 1 towards 0: together 0.34, the pair (now 0.98 apart) is within the cutoff
  CHECK(list.check(g).builds == b0 + 1);
  check_interaction(g, list, charge, q);
  move(2, 2, 0.2);  // past skin / 2 with a partner the rows hold: no rebuild
  CHECK(list.check(g).builds == b0 + 1);
  check_interaction(g, list, charge, q);
  move(2, 2, 0.08);  // 0.28 from its place at the rebuild: past (1.5 - 1) / 2, not past 1.5 - 1 - 0.15
  CHECK(list.check(g).builds == b0 + 1);
  check_interaction(g, list, charge, q);
  move(2, 2, 0.08);  // 0.36: past 1.5 - 1 - 0.15
  CHECK(list.check(g).builds == b0 + 2);
  check_interaction(g, list, charge, q);
  move(4, 0, 0.31);  // towards 5 (two cells away), past (1.5 - 1) / 2: alone it cannot close the 0.6 to the cutoff
  CHECK(list.check(g).builds == b0 + 2);
  check_interaction(g, list, charge, q);
  move(5, 0, -0.31);  // 5 towards 4: together 0.62, the pair (0.98 apart) is within the cutoff; neither one's cells
  CHECK(list.check(g).builds == b0 + 3);  // hold the other: the two listed particles are checked against each other
  check_interaction(g, list, charge, q);
  check_rows(g, list);
}

/// The pair check under random moves: a dense system in cells with room (a particle may move 0.25 alone), moved in
/// small random steps (2D and 3D, periodic and open); after every update the interaction against the oracle, whether
/// the list rebuilt or not.
template <class Real, int Dim>
void check_pair_trigger_random(bool half, Distribution dist, bool periodic, int x_split = 0) {
  const std::uint64_t seed = fresh_seed();
  INFO(Dim << "D " << (sizeof(Real) == 4 ? "float" : "double") << (half ? ", half" : ", full") << " list, "
           << to_string(dist) << (periodic ? ", periodic" : ", open") << ", x split " << x_split << ", seed " << seed);
  CellGrid<B, Real, Dim> g(Box<Real, Dim>::cube(Real(0), Real(6), periodic), Real(1));
  g.build(make_positions(g.geometry(), Dim == 3 ? 4 : 6, dist, seed));
  const auto q = random_charges(g, seed ^ 0x51D);
  const auto charge = g.attach(q);
  ListOptions o;
  o.half = half;
  o.x_split = x_split;
  o.trigger = RebuildTrigger::Pairs;
  NeighborList<B, Real, Dim> list(g, Real(0.3), o);
  o.trigger = RebuildTrigger::HalfSkin;
  NeighborList<B, Real, Dim> plain(g, Real(0.3), o);
  long spared = 0;  // updates where a particle past skin / 2 rebuilt the plain list but not this one
  for (int round = 0; round < 8; ++round) {
    INFO("round " << round);
    jiggle(g, 0.1, seed + 1 + static_cast<std::uint64_t>(round), round % 3 == 2);
    const long b = list.check(g).builds, pb = plain.check(g).builds;
    list.update(g);
    plain.update(g);
    spared += plain.check(g).builds > pb && list.check(g).builds == b;
    check_interaction(g, list, charge, q);
  }
  INFO("updates spared a rebuild: " << spared);
  // (a rebuild the pair check defers also shifts the ones after it: over eight rounds it may rebuild once more than
  // the half-skin list, about one run in 60 with random moves; never twice more in those runs)
  CHECK(list.check(g).builds <= plain.check(g).builds + 1);
}

/// The box of the two tests below: periodic, 5.3 x 6 x 6 (4 cells of 1.325 along X for a reach of 1.3, 8 when split),
/// and the options of their lists: the pair check, cells split in two along X.
template <class Real>
Box<Real, 3> narrow_x_box() {
  Box<Real, 3> box = Box<Real, 3>::cube(Real(0), Real(6), true);
  box.lengths[0] = Real(5.3);
  return box;
}
inline ListOptions split_pair_check(bool half) {
  ListOptions o;
  o.half = half;
  o.x_split = 2;
  o.trigger = RebuildTrigger::Pairs;
  return o;
}

/// Positions of the given points, in that order.
template <class Real>
Positions<Real, 3> points(const std::vector<std::array<double, 3>>& at) {
  Positions<Real, 3> p;
  for (const auto& x : at)
    for (int d = 0; d < 3; ++d) p[d].push_back(static_cast<Real>(x[d]));
  return p;
}

/// The pair check's bound where the list cells are split along X (ListOptions::x_split = 2) and X is the shortest axis:
/// the particles a row's walk leaves out are two X cells (1.325) away, not one cell of the other axes (1.5), so a
/// listed particle rebuilds past 1.325 - 1 - 0.15 = 0.175 alone. Two particles 1.4 apart along X, three split cells
/// apart, each moved 0.2 and 0.21 towards each other: within the cutoff, seen by neither walk.
template <class Real>
void check_pair_trigger_split(bool half) {
  INFO((sizeof(Real) == 4 ? "float" : "double") << (half ? ", half" : ", full") << " list");
  CellGrid<B, Real, 3> g(narrow_x_box<Real>(), Real(1));
  g.build(points<Real>({{0.6, 3.0, 3.0}, {2.0, 3.0, 3.0}}));
  std::vector<Real> q(2, Real(1));
  const auto charge = g.attach(q);
  NeighborList<B, Real, 3> list(g, Real(0.3), split_pair_check(half));
  const long b0 = list.check(g).builds;
  auto move = [&](Index user, double by) {
    auto sp = sorted_positions(g);
    const auto s = static_cast<std::size_t>(slot_of(g, user));
    sp[0][s] = static_cast<Real>(double(sp[0][s]) + by);
    set_positions(g, sp);
    list.update(g);
  };
  move(0, 0.17);  // listed (past 0.15), below 0.175: no rebuild
  CHECK(list.check(g).builds == b0);
  check_interaction(g, list, charge, q);
  move(0, 0.03);  // 0.2: past 0.175, rebuilds alone
  CHECK(list.check(g).builds == b0 + 1);
  move(0, -0.2);  // back where it was, rebuilt again
  CHECK(list.check(g).builds == b0 + 2);
  move(0, 0.2);    // past 0.175 again: rebuilt (with a bound of 0.35, listed only)
  move(1, -0.21);  // 0.99 apart; B is listed too, and neither walk holds the other
  check_interaction(g, list, charge, q);
  check_rows(g, list);
}

/// Listed particles checked against each other (RebuildTrigger::Pairs, x_split = 2, the narrow X box): A and
/// B 1.335 apart, three split cells, move 0.17 each, past (1.325 - 1) / 2 and below 1.325 - 1 - 0.15: only the
/// check of listed particles against each other sees them come within the cutoff (0.995 apart). 24 other particles,
/// far from everything, move 0.16 each at the same update, so that a particle's walk over the listed ones takes
/// several batches.
template <class Real>
void check_listed_pairs(bool half) {
  INFO((sizeof(Real) == 4 ? "float" : "double") << (half ? ", half" : ", full") << " list");
  CellGrid<B, Real, 3> g(narrow_x_box<Real>(), Real(1));
  std::vector<std::array<double, 3>> at = {{0.655, 3.0, 3.0}, {1.99, 3.0, 3.0}};
  for (double x : {0.3, 2.1, 3.9})  // 1.4 apart at least, and 1.7 from A and B
    for (double y : {0.3, 4.7})
      for (double z : {0.3, 1.7, 3.1, 4.5}) at.push_back({x, y, z});
  const Positions<Real, 3> p = points<Real>(at);
  g.build(p);
  std::vector<Real> q(static_cast<std::size_t>(g.size()), Real(1));
  const auto charge = g.attach(q);
  NeighborList<B, Real, 3> list(g, Real(0.3), split_pair_check(half));
  const long b0 = list.check(g).builds;
  std::vector<Index> orig(static_cast<std::size_t>(g.size()));
  B::copy(orig.data(), g.original_index(), sizeof(Index) * orig.size(), CopyKind::DeviceToHost);
  auto sp = sorted_positions(g);
  for (std::size_t s = 0; s < orig.size(); ++s)
    if (orig[s] != 1) sp[0][s] = static_cast<Real>(double(sp[0][s]) + (orig[s] == 0 ? 0.17 : 0.16));
  set_positions(g, sp);
  list.update(g);  // A and the others listed: no pair at risk
  CHECK(list.check(g).builds == b0);
  check_interaction(g, list, charge, q);
  for (std::size_t s = 0; s < orig.size(); ++s)
    if (orig[s] == 1) sp[0][s] = static_cast<Real>(double(sp[0][s]) - 0.17);
  set_positions(g, sp);
  list.update(g);  // B too: A and B within the cutoff
  CHECK(list.check(g).builds == b0 + 1);
  check_interaction(g, list, charge, q);
}

/// The caller's rebuild decision (update(grid, part, true) for both parts, then rebuild_needed(), as cellint_lj_mpi
/// does with an MPI rank's ghosts as sources), in the narrow X box where A and B, 1.335 apart along X (three split
/// cells), each move 0.17 towards each other: listed, below the bound of 0.175, and within the cutoff together. With A
/// a target and B a source the list asks for a rebuild (B listed by the sources' packing); with both sources (no row
/// needs the pair) it does not; with both targets it does. A target C far from both stays put.
template <class Real>
void check_caller_decides_pairs() {
  INFO((sizeof(Real) == 4 ? "float" : "double"));
  for (int targets : {1, 2, 3}) {  // C only; C and A; all three (user order C, A, B)
    INFO("targets " << targets);
    CellGrid<B, Real, 3> g(narrow_x_box<Real>(), Real(1));
    g.build(points<Real>({{4.0, 0.5, 0.5}, {0.655, 3.0, 3.0}, {1.99, 3.0, 3.0}}));
    ListOptions o = split_pair_check(false);
    o.every = 1000000;  // (update(grid) would not look: the caller decides)
    NeighborList<B, Real, 3> list(g, Real(0.3), o, targets);
    auto sp = sorted_positions(g);
    const auto a = static_cast<std::size_t>(slot_of(g, 1)), b = static_cast<std::size_t>(slot_of(g, 2));
    auto step = [&] {
      set_positions(g, sp);
      list.update(g, ListPart::Interior, true);
      list.update(g, ListPart::Border, true);
      return list.rebuild_needed(g);
    };
    sp[0][a] = static_cast<Real>(double(sp[0][a]) + 0.17);
    CHECK_FALSE(step());  // A alone: nothing within reach
    sp[0][b] = static_cast<Real>(double(sp[0][b]) - 0.17);
    CHECK(step() == (targets >= 2));  // 0.995 apart: needed where A or B has a row
    CHECK(step() == (targets >= 2));  // (again: the same verdict)
    sp[0][a] = static_cast<Real>(double(sp[0][a]) - 0.17);
    sp[0][b] = static_cast<Real>(double(sp[0][b]) + 0.17);
    CHECK(step() == (targets >= 2));  // back where they were: a request stays until build()
    list.build(g);
    CHECK_FALSE(step());
    CHECK(list.max_move() == Approx(0.175).epsilon(1e-3));
    g.rebuild();  // (the slots permuted: the listed particles' indices would name others)
    CHECK_THROWS_WITH(list.rebuild_needed(g), Catch::Contains("older binning"));
  }
  // the half-skin trigger: any particle past skin / 2, row or not
  CellGrid<B, Real, 3> g(narrow_x_box<Real>(), Real(1));
  g.build(points<Real>({{4.0, 0.5, 0.5}, {0.655, 3.0, 3.0}}));
  ListOptions o;
  o.trigger = RebuildTrigger::HalfSkin;
  NeighborList<B, Real, 3> list(g, Real(0.3), o, 1);
  CHECK(list.max_move() == Approx(0.15));
  auto sp = sorted_positions(g);
  const auto s = static_cast<std::size_t>(slot_of(g, 1));
  sp[1][s] = static_cast<Real>(double(sp[1][s]) + 0.16);
  set_positions(g, sp);
  list.update(g, ListPart::Interior, true);
  list.update(g, ListPart::Border, true);
  CHECK(list.rebuild_needed(g));
}

/// The caller's rebuild decision under random moves, a third of the particles sources only: after each round of moves,
/// both parts packed with the check, rebuilt where rebuild_needed() says so; the targets' sums then agree with the
/// oracle's at the positions of the moment, and the sources' are empty.
template <class Real, int Dim>
void check_caller_decides_random(Distribution dist, bool periodic) {
  const std::uint64_t seed = fresh_seed();
  INFO(Dim << "D " << (sizeof(Real) == 4 ? "float" : "double") << ", " << to_string(dist)
           << (periodic ? ", periodic" : ", open") << ", seed " << seed);
  CellGrid<B, Real, Dim> g(Box<Real, Dim>::cube(Real(0), Real(6), periodic), Real(1));
  g.build(make_positions(g.geometry(), Dim == 3 ? 4 : 6, dist, seed));
  const Index k = g.size() * 2 / 3;
  const auto q = random_charges(g, seed ^ 0x51D);
  const auto charge = g.attach(q);
  ListOptions o;
  o.trigger = RebuildTrigger::Pairs;
  o.every = 1000000;
  NeighborList<B, Real, Dim> list(g, Real(0.3), o, k);
  int rebuilt = 0, kept = 0;
  for (int round = 0; round < 12; ++round) {
    INFO("round " << round);
    jiggle(g, 0.08, seed + 1 + static_cast<std::uint64_t>(round), round % 3 == 2);
    list.update(g, ListPart::Interior, true);
    list.update(g, ListPart::Border, true);
    if (list.rebuild_needed(g)) {
      list.build(g);
      ++rebuilt;
    } else {
      ++kept;
    }
    check_interaction(g, list, charge, q, k);
  }
  INFO("rebuilt " << rebuilt << ", kept " << kept);
  CHECK(rebuilt > 0);
  CHECK(kept > 0);
}

TEST_CASE("neighbour lists: the caller decides on rebuilds (update with the check, rebuild_needed)",
          CELLINT_TEST_TAG "[lists]") {
  check_caller_decides_pairs<float>();
  check_caller_decides_pairs<double>();
  check_caller_decides_random<float, 3>(Distribution::Uniform, true);
  check_caller_decides_random<double, 3>(Distribution::Clustered, false);
  check_caller_decides_random<float, 2>(Distribution::Clustered, true);
  check_caller_decides_random<double, 2>(Distribution::Uniform, false);
}

TEST_CASE("neighbour lists: the rebuild trigger looks at pairs", CELLINT_TEST_TAG "[lists][sanitize]") {
  check_pair_trigger_split<float>(false);
  check_pair_trigger_split<double>(true);
  check_listed_pairs<float>(false);
  check_listed_pairs<double>(true);
  for (bool half : {false, true}) {
    check_pair_trigger<float>(half);
    check_pair_trigger<double>(half);
    check_pair_trigger_random<float, 3>(half, Distribution::Uniform, true);
    check_pair_trigger_random<double, 3>(half, Distribution::Clustered, true);
    check_pair_trigger_random<float, 2>(half, Distribution::Uniform, false);
    check_pair_trigger_random<double, 2>(half, Distribution::Clustered, true);
    check_pair_trigger<float>(half, 1);  // (0, the default, is 2)
    check_pair_trigger_random<float, 3>(half, Distribution::Uniform, true, 1);
    check_pair_trigger_random<double, 3>(half, Distribution::Clustered, false, 3);
    check_pair_trigger_random<float, 2>(half, Distribution::Clustered, true, 1);
  }
}

TEST_CASE("neighbour lists: rows that overflow are served from the cells, then grow",
          CELLINT_TEST_TAG "[lists][sanitize]") {
  // full, half, and half with rows for the first half of the particles only (a target's row scanned from the cells
  // also holds the rowless particles before it)
  for (int mode = 0; mode < 3; ++mode) {
    const bool half = mode > 0;
    INFO((mode == 0 ? "full" : mode == 1 ? "half" : "half, targets"));
    const std::uint64_t seed = fresh_seed();
    const double rc = 1, skin = 0.3;
    CellGrid<B, double, 3> g(make_box<double, 3>(5, true), rc);
    g.build(make_positions(g.geometry(), 2, Distribution::Uniform, seed));
    std::vector<double> q(static_cast<std::size_t>(g.size()), 1.0);
    const auto charge = g.attach(q);
    ListOptions o;
    o.half = half;
    o.capacity = 2;  // far too small: the first build grows at once
    const Index k = mode == 2 ? g.size() / 2 : -1;
    NeighborList<B, double, 3> list(g, skin, o, k);
    CHECK(list.capacity() > 2);
    const Index cap = list.capacity();
    auto check_rows_of = [&] {
      if (k < 0) check_rows(g, list);  // (with targets: check_interaction() below, against the oracle)
    };
    check_rows_of();
    // squeeze every particle towards the box centre by 40 %: rows far longer than the capacity, rebuilt on the
    // backend without the host looking
    auto p = sorted_positions(g);
    const auto& box = g.geometry().box;
    for (int d = 0; d < 3; ++d)
      for (double& x : p[d]) {
        const double c = box.origin[d] + 0.5 * box.lengths[d];
        x = c + 0.6 * (x - c);
      }
    set_positions(g, p);
    list.update(g);
    check_interaction(g, list, charge, q, k);  // overflowed rows scanned from the cells: still exact
    const ListStats st = list.check(g);
    CHECK(st.grew);
    CHECK(st.longest > cap);
    CHECK(list.capacity() >= st.longest);
    check_rows_of();
    check_interaction(g, list, charge, q, k);
  }
}

/// How many particles' sums differ in their bits between two backend outputs of grid g.
template <class Real, int Dim, class Accum>
int bits_differ(const CellGrid<B, Real, Dim>& g, const Buffer<B, Accum>& x, const Buffer<B, Accum>& y) {
  const auto a = g.to_user_order(x.data()), b = g.to_user_order(y.data());
  int differ = 0;
  for (std::size_t i = 0; i < a.size(); ++i) differ += std::memcmp(&a[i], &b[i], sizeof(Accum)) != 0;
  return differ;
}

/// A list over a 3D periodic grid on `stream`, unit charges, the Probe functor and two outputs (the two cases below).
struct ProbeCase {
  ProbeCase(typename B::Stream stream, Distribution dist, std::uint64_t seed)
      : g(make_box<float, 3>(4, true), 1.0f, {}, stream),
        q(built(g, dist, seed), 1.0f),
        charge(g.attach(q)),
        list(g, 0.3f),
        f{1.0f, false, charge},
        out(static_cast<std::size_t>(g.size())),
        direct(static_cast<std::size_t>(g.size())) {}
  /// Bins 4 particles per cell into g; returns how many.
  static std::size_t built(CellGrid<B, float, 3>& g, Distribution dist, std::uint64_t seed) {
    g.build(make_positions(g.geometry(), 4, dist, seed));
    return static_cast<std::size_t>(g.size());
  }
  using F = Probe<float, 3>;
  CellGrid<B, float, 3> g;
  std::vector<float> q;
  Attribute<float> charge;
  NeighborList<B, float, 3> list;
  F f;
  Buffer<B, F::Accum> out, direct;
};

TEST_CASE("neighbour lists: a recorded step (StepGraph) replays the device-side rebuild decision",
          CELLINT_TEST_TAG "[lists][sanitize]") {
  const std::uint64_t seed = fresh_seed();
  INFO("seed " << seed);
  OwnStream<B> own;  // (the default stream cannot be recorded)
  ProbeCase c(own.get(), Distribution::Uniform, seed);
  auto& g = c.g;
  auto& list = c.list;
  const auto& f = c.f;
  auto &out = c.out, &direct = c.direct;
  StepGraph<B> step(g.stream());
  const long b0 = list.check(g).builds;
  for (int round = 0; round < 4; ++round) {
    jiggle(g, 0.45 * 0.3, seed + 10 + round);  // within two rounds some particle has moved past skin / 2
    step.run([&] {
      list.update(g);
      interact(list, g, f, out);
    });
    B::synchronize(g.stream());
    interact(list, g, f, direct);  // the same kernel outside the recording
    CHECK(bits_differ(g, out, direct) == 0);
    check_interaction(g, list, c.charge, c.q);
  }
  CHECK(step.recordings() == (has_graphs_v<B> ? 1 : 0));
  const ListStats st = list.check(g);
  CHECK(st.updates == 4);
  CHECK(st.builds > b0);  // rebuilt inside a replay
}

TEST_CASE("neighbour lists: CellGrid::set_stream() sends a list's update and interact() to another stream",
          CELLINT_TEST_TAG "[lists]") {
  const std::uint64_t seed = fresh_seed();
  INFO("seed " << seed);
  OwnStream<B> first, second;
  ProbeCase c(first.get(), Distribution::Clustered, seed);
  auto& g = c.g;
  auto& list = c.list;
  const auto& f = c.f;
  auto &out = c.out, &direct = c.direct;
  jiggle(g, 0.45 * 0.3, seed + 1);
  B::synchronize(g.stream());
  const auto was = g.set_stream(second.get());
  CHECK(was == first.get());
  CHECK(g.stream() == second.get());
  list.update(g);
  interact(list, g, f, out);
  B::synchronize(second.get());
  CHECK(g.set_stream(was) == second.get());
  interact(list, g, f, direct);
  B::synchronize(g.stream());
  CHECK(bits_differ(g, out, direct) == 0);
  check_interaction(g, list, c.charge, c.q);
}

/// A functor without symmetric().
struct NoSym {
  struct Accum {
    float n;
  };
  CELLINT_HD void operator()(Accum& a, const NoPayload&, const NoPayload&, const Vec<float, 3>&, float) const {
    a.n += 1;
  }
};

TEST_CASE("neighbour lists: bad input", CELLINT_TEST_TAG "[lists]") {
  CellGrid<B, float, 3> g(make_box<float, 3>(4, true), 1.0f);
  g.build(make_positions(g.geometry(), 3, Distribution::Uniform, fresh_seed()));
  using List = NeighborList<B, float, 3>;
  CHECK_THROWS_WITH(List(g, -0.1f), Catch::Contains("skin"));
  CHECK_THROWS_WITH(List(g, 3.0f), Catch::Contains("at least 3 cells"));
  ListOptions three;
  three.row_threads = 3;
  CHECK_THROWS_WITH(List(g, 0.3f, three), Catch::Contains("row_threads"));
  for (int split : {-1, 4}) {
    ListOptions o;
    o.x_split = split;
    CHECK_THROWS_WITH(List(g, 0.3f, o), Catch::Contains("x_split must be 0 (automatic), 1, 2 or 3"));
  }
  NeighborList<B, float, 3> list(g, 0.3f);
  // a position that is not finite: the backend flags it, check() names the particle
  auto p = sorted_positions(g);
  p[1][5] = std::nanf("");
  set_positions(g, p);
  list.update(g);
  CHECK_THROWS_AS(list.check(g), NonFinitePosition);
  // half lists need symmetric() and an addable Accum
  p = sorted_positions(g);
  p[1][5] = 0.5f;
  set_positions(g, p);
  ListOptions o;
  o.half = true;
  NeighborList<B, float, 3> half(g, 0.3f, o);
  Buffer<B, NoSym::Accum> out(static_cast<std::size_t>(g.size()));
  CHECK_THROWS_AS(interact(half, g, NoSym{}, out), Unsupported);
}

}  // namespace neighbor_list_test
}  // namespace
