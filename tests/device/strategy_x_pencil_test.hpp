// X-pencil and X-pencil-reg (paper 5.2, 5.3) against the double-precision oracle and against
// Par-Part-NoLoop: 2D/3D, open/periodic, float/double/mixed, 1/10/100 particles per cell, every
// distribution, grids with fewer than 3 cells, wide cells, pencil lengths and sub-boxes that
// split rows unevenly or cover a whole periodic axis, the tuning knobs (threads, blocks,
// shared-memory budget), launch shapes and refusals.
//
// Compiled once per backend by tests/CMakeLists.txt, with CELLINT_TEST_BACKEND (the backend
// type), CELLINT_TEST_TAG (e.g. "[emulated]") and, for real GPUs, CELLINT_TEST_GPU defined.
#pragma once

#include <algorithm>
#include <catch2/catch.hpp>
#include <cstring>
#include <string>
#include <vector>

#include "support/device_backend.hpp"

#include "cellint/interact.hpp"
#include "support/exact_check.hpp"
#include "support/plans.hpp"
#include "support/strategy_check.hpp"


namespace {
namespace x_pencil_test {

using Backend = CELLINT_TEST_BACKEND;
using cellint::Index;
using cellint::StrategyKind;
using cellint::Tuning;
using cellint::test::Case;
using cellint::test::Distribution;
using cellint::test::Outcome;

constexpr StrategyKind both[] = {StrategyKind::XPencil, StrategyKind::XPencilReg};

/// check_strategy must run and pass.
template <class Real, int Dim, class Acc = Real>
void expect_pass(StrategyKind k, const Case& c, const Tuning& t = {}) {
  CHECK(cellint::test::check_strategy<Backend, Real, Dim, Acc>(k, c, t) == Outcome::Passed);
}

/// A tuning with a pencil length (X-pencil) or a sub-box (X-pencil-reg).
inline Tuning pencil(int length) {
  Tuning t;
  t.pencil_length = length;
  return t;
}
inline Tuning subbox(int x, int y, int z = 0) {
  Tuning t;
  t.subbox[0] = x;
  t.subbox[1] = y;
  t.subbox[2] = z;
  return t;
}

/// The launch-shape variants that exercise multi-cell pencils and sub-boxes on `cells` cells
/// per axis (the default rule shrinks them to one cell on small grids with many multiprocessors):
/// a length that splits rows unevenly, and one covering a whole row (both X ghosts wrap when
/// periodic).
template <int Dim>
std::vector<Tuning> shapes(StrategyKind k, int cells) {
  std::vector<Tuning> r{Tuning{}};
  if (k == StrategyKind::XPencil) {
    r.push_back(pencil(2));
    r.push_back(pencil(cells));
  } else {
    r.push_back(subbox(2, 2, Dim == 3 ? 2 : 0));
    r.push_back(subbox(cells, Dim == 3 ? 1 : 3, 0));
    r.push_back(subbox(cells, cells, Dim == 3 ? cells : 0));  // whole grid: Y/Z ghosts wrap too
  }
  return r;
}

/// Uniform particles, open and periodic, at 1, 10 and 100 particles per cell.
template <class Real, class Acc>
void sweep(StrategyKind k) {
  for (bool periodic : {false, true}) {
    for (const Tuning& t : shapes<2>(k, 5)) {
      expect_pass<Real, 2, Acc>(k, Case{5, 1, Distribution::Uniform, periodic}, t);
      expect_pass<Real, 2, Acc>(k, Case{5, 10, Distribution::Uniform, periodic}, t);
    }
    for (const Tuning& t : shapes<3>(k, 4)) {
      expect_pass<Real, 3, Acc>(k, Case{4, 1, Distribution::Uniform, periodic}, t);
      expect_pass<Real, 3, Acc>(k, Case{4, 10, Distribution::Uniform, periodic}, t);
    }
    for (const Tuning& t : shapes<2>(k, 3))
      expect_pass<Real, 2, Acc>(k, Case{3, 100, Distribution::Uniform, periodic}, t);
    for (const Tuning& t : shapes<3>(k, 3))
      expect_pass<Real, 3, Acc>(k, Case{3, 100, Distribution::Uniform, periodic}, t);
#if defined(CELLINT_TEST_GPU)
    expect_pass<Real, 2, Acc>(k, Case{64, 10, Distribution::Uniform, periodic});
    expect_pass<Real, 3, Acc>(k, Case{32, 10, Distribution::Uniform, periodic});
    expect_pass<Real, 3, Acc>(k, Case{32, 1, Distribution::Uniform, periodic});
    expect_pass<Real, 3, Acc>(k, Case{8, 100, Distribution::Uniform, periodic});
    for (const Tuning& t : shapes<3>(k, 16))
      expect_pass<Real, 3, Acc>(k, Case{16, 10, Distribution::Uniform, periodic}, t);
#endif
  }
}

using cellint::test::CountCandidates;
using cellint::test::IdMix;

/// Bit-for-bit agreement with Par-Part-NoLoop (tests/support/exact_check.hpp).
template <class Real, int Dim, class F>
void agree_with_par_part(StrategyKind k, const Case& c, const F& f, const Tuning& t = {}) {
  cellint::test::agree_with_par_part<Backend, Real, Dim>(k, c, f, t);
}

/// A grid of `cells` per axis (open, cutoff 1) with `ppc` uniform particles per cell and one
/// attribute, as check_strategy builds it.
template <class Real, int Dim>
cellint::CellGrid<Backend, Real, Dim> make_grid(int cells, double ppc,
                                                Distribution dist = Distribution::Uniform,
                                                bool periodic = false) {
  cellint::Box<Real, Dim> box;
  for (int d = 0; d < Dim; ++d) {
    box.origin[d] = 0;
    box.lengths[d] = static_cast<Real>(cells);
    box.periodic[d] = periodic;
  }
  cellint::CellGrid<Backend, Real, Dim> grid(box, Real(1));
  grid.build(cellint::test::make_positions(grid.geometry(), ppc, dist, 7));
  grid.attach(std::vector<Real>(static_cast<std::size_t>(grid.size()), Real(1)).data());
  return grid;
}

/// The message of the Unsupported that interact_with throws for `k` with tuning `t` ("" if it
/// runs).
template <class Real, int Dim>
std::string refusal(StrategyKind k, const cellint::CellGrid<Backend, Real, Dim>& grid,
                    const Tuning& t) {
  cellint::test::Probe<Real, Dim> f{Real(1)};
  f.charge = grid.template attribute_handle<Real>(0);
  cellint::Buffer<Backend, typename cellint::test::Probe<Real, Dim>::Accum> out(
      static_cast<std::size_t>(std::max<Index>(grid.size(), 1)));
  if (cellint::supports(k, grid, f, t).ok) return "";
  try {
    cellint::interact_with(k, grid, f, out.data(), t);
  } catch (const cellint::Unsupported& e) {
    return e.what();
  }
  return "supports() said no but interact_with ran";
}

TEST_CASE("x-pencil matches the oracle (uniform, 2D/3D, open/periodic, float/double/mixed)",
          CELLINT_TEST_TAG "[x-pencil]") {
  sweep<float, float>(StrategyKind::XPencil);
  sweep<double, double>(StrategyKind::XPencil);
  sweep<float, double>(StrategyKind::XPencil);
}

TEST_CASE("x-pencil-reg matches the oracle (uniform, 2D/3D, open/periodic, float/double/mixed)",
          CELLINT_TEST_TAG "[x-pencil-reg]") {
  sweep<float, float>(StrategyKind::XPencilReg);
  sweep<double, double>(StrategyKind::XPencilReg);
  sweep<float, double>(StrategyKind::XPencilReg);
}

TEST_CASE("x-pencil and x-pencil-reg on clustered, lattice and on-face particles",
          CELLINT_TEST_TAG "[x-pencil][x-pencil-reg]") {
  for (StrategyKind k : both) {
    for (bool periodic : {false, true}) {
      for (const Tuning& t : shapes<3>(k, 4)) {
        // Clustered: a few cells hold 20x the average (M_C about 200; at 100 per cell about 2000,
        // more targets than one block of 1024 threads: several passes). Both fit the opt-in
        // shared memory, so they must run.
        expect_pass<float, 3>(k, Case{4, 10, Distribution::Clustered, periodic}, t);
        expect_pass<float, 3>(k, Case{4, 8, Distribution::Lattice, periodic}, t);
        expect_pass<float, 3>(k, Case{4, 10, Distribution::OnFaces, periodic}, t);
      }
      for (const Tuning& t : shapes<2>(k, 4)) {
        expect_pass<double, 2>(k, Case{4, 10, Distribution::Clustered, periodic}, t);
        expect_pass<float, 2, double>(k, Case{4, 10, Distribution::OnFaces, periodic}, t);
      }
      expect_pass<float, 2, double>(k, Case{3, 100, Distribution::Clustered, periodic});
      expect_pass<double, 2>(k, Case{5, 9, Distribution::Lattice, periodic});
      expect_pass<double, 3>(k, Case{3, 10, Distribution::OnFaces, periodic});
#if defined(CELLINT_TEST_GPU)
      expect_pass<float, 3>(k, Case{24, 10, Distribution::Clustered, periodic});
      expect_pass<float, 3>(k, Case{16, 27, Distribution::Lattice, periodic});
      expect_pass<float, 3>(k, Case{16, 10, Distribution::OnFaces, periodic});
#endif
    }
  }
}

TEST_CASE("x-pencil and x-pencil-reg with dense clusters beyond a small shared-memory budget",
          CELLINT_TEST_TAG "[x-pencil][x-pencil-reg]") {
  // Clustered at 10 per cell: M_C is about 200, so one pencil of 3 cells needs about 3 x 200 x
  // 16 = 9.6 KB (float 3D + 4-byte payload). A 4 KB budget must be refused, a 64 KB one run.
  for (StrategyKind k : both) {
    Tuning small;
    small.shared_bytes = 4096;
    CHECK(cellint::test::check_strategy<Backend, float, 3>(
              k, Case{4, 10, Distribution::Clustered, false}, small) == Outcome::Unsupported);
    Tuning large;
    large.shared_bytes = 64 * 1024;
    expect_pass<float, 3>(k, Case{4, 10, Distribution::Clustered, false}, large);
    expect_pass<float, 3>(k, Case{4, 10, Distribution::Clustered, true}, large);
  }
}

TEST_CASE(
    "x-pencil and x-pencil-reg on grids with fewer than 3 cells, wide cells, empty and "
    "single-particle grids",
    CELLINT_TEST_TAG "[x-pencil][x-pencil-reg]") {
  for (StrategyKind k : both) {
    for (int cells : {1, 2}) {
      expect_pass<float, 2>(k, Case{cells, 10, Distribution::Uniform, false});
      expect_pass<float, 3>(k, Case{cells, 10, Distribution::Uniform, false});
      expect_pass<double, 3>(k, Case{cells, 5, Distribution::OnFaces, false},
                             shapes<3>(k, cells).back());
    }
    // Cells wider than the cutoff.
    expect_pass<float, 3>(k, Case{4, 10, Distribution::Uniform, false, 1.5});
    expect_pass<double, 3>(k, Case{3, 10, Distribution::Uniform, true, 1.5});
    expect_pass<float, 2>(k, Case{4, 10, Distribution::Uniform, true, 2.5}, shapes<2>(k, 4).back());
    // Nothing to do, and a lonely particle.
    expect_pass<float, 3>(k, Case{4, 0, Distribution::Uniform, false});
    expect_pass<float, 3>(k, Case{4, 1.0 / 64, Distribution::Uniform, true});
    // Stable binning changes only the order inside a cell.
    expect_pass<float, 3>(k, Case{4, 10, Distribution::Uniform, true, 1.0, true});
  }
}

TEST_CASE("x-pencil and x-pencil-reg tuning knobs: threads, blocks, one staging buffer",
          CELLINT_TEST_TAG "[x-pencil][x-pencil-reg]") {
  for (StrategyKind k : both) {
    for (bool periodic : {false, true}) {
      // Fewer threads than targets: several passes per pencil / sub-box.
      for (Tuning t : shapes<3>(k, 4)) {
        t.threads = 32;
        expect_pass<float, 3>(k, Case{4, 10, Distribution::Uniform, periodic}, t);
      }
      for (Tuning t : shapes<2>(k, 4)) {
        t.threads = 40;  // not a multiple of the warp size
        expect_pass<double, 2>(k, Case{4, 10, Distribution::Uniform, periodic}, t);
      }
      // Fewer blocks than pencils / sub-boxes: grid-stride loop.
      for (Tuning t : shapes<3>(k, 4)) {
        t.blocks = 3;
        expect_pass<float, 3>(k, Case{4, 10, Distribution::Uniform, periodic}, t);
      }
      for (Tuning t : shapes<2>(k, 5)) {
        t.blocks = 3;
        expect_pass<float, 2>(k, Case{5, 10, Distribution::Clustered, periodic}, t);
      }
      // A budget that holds one staging buffer but not two (two barriers per pencil); a lattice
      // has the same M_C (8) in every draw.
      for (Tuning t : shapes<3>(k, 4)) {
        auto grid = make_grid<float, 3>(4, 8, Distribution::Lattice, periodic);
        cellint::test::Probe<float, 3> f{1.0f};
        const Index length =
            k == StrategyKind::XPencil ? std::max(t.pencil_length, 1) : std::max(t.subbox[0], 1);
        const Index rows = k == StrategyKind::XPencil
                               ? 0
                               : std::max(t.subbox[1], 1) * std::max(t.subbox[2], 1) + 1;
        using Rec =
            cellint::detail::StagedParticle<float, 3, cellint::test::Probe<float, 3>::Payload>;
        t.shared_bytes =
            cellint::detail::PencilLayout::make<Rec>(length, grid.max_per_cell(), 1, rows).bytes;
        REQUIRE(
            t.shared_bytes <
            cellint::detail::PencilLayout::make<Rec>(length, grid.max_per_cell(), 2, rows).bytes);
        const cellint::LaunchShape s =
            cellint::supports(k, grid, f, t).ok
                ? (k == StrategyKind::XPencil
                       ? cellint::test::PlanOf<cellint::XPencil>::shape(
                             grid, f, Backend::properties(), t)
                       : cellint::test::PlanOf<cellint::XPencilReg>::shape(
                             grid, f, Backend::properties(), t))
                : cellint::LaunchShape{};
        CHECK(s.shared_bytes == t.shared_bytes);
        expect_pass<float, 3>(k, Case{4, 8, Distribution::Lattice, periodic}, t);
      }
    }
  }
}

TEST_CASE(
    "x-pencil and x-pencil-reg agree exactly with par-part-noloop (no payload, no cutoff test, "
    "padded payload)",
    CELLINT_TEST_TAG "[x-pencil][x-pencil-reg]") {
  for (StrategyKind k : both) {
    for (bool periodic : {false, true}) {
      for (const Tuning& t : shapes<3>(k, 4)) {
        agree_with_par_part<float, 3>(k, Case{4, 10, Distribution::Uniform, periodic},
                                      CountCandidates<float, 3>{}, t);
        agree_with_par_part<double, 3>(k, Case{4, 10, Distribution::OnFaces, periodic},
                                       IdMix<double, 3>{}, t);
        agree_with_par_part<float, 3>(k, Case{4, 10, Distribution::Clustered, periodic},
                                      IdMix<float, 3>{}, t);
      }
      for (const Tuning& t : shapes<2>(k, 5)) {
        agree_with_par_part<float, 2>(k, Case{5, 10, Distribution::Uniform, periodic},
                                      IdMix<float, 2>{}, t);
        agree_with_par_part<double, 2>(k, Case{5, 10, Distribution::Uniform, periodic},
                                       CountCandidates<double, 2>{}, t);
      }
    }
  }
}

TEST_CASE("x-pencil and x-pencil-reg refuse what they cannot run, with the reason",
          CELLINT_TEST_TAG "[x-pencil][x-pencil-reg]") {
  auto grid = make_grid<float, 3>(4, 10, Distribution::Clustered);
  INFO("M_C = " << grid.max_per_cell());
  for (StrategyKind k : both) {
    Tuning t;
    t.shared_bytes = 1024;  // less than one pencil of 3 cells
    const std::string why = refusal(k, grid, t);
    INFO(why);
    CHECK(why.find(cellint::to_string(k)) != std::string::npos);
    CHECK(why.find("M_C = " + std::to_string(grid.max_per_cell())) != std::string::npos);
    CHECK(why.find("1024") != std::string::npos);
    t.shared_bytes = 1u << 30;  // more than the device has
    CHECK(refusal(k, grid, t).find("exceeds") != std::string::npos);
  }
  Tuning neg;
  neg.pencil_length = -1;
  CHECK(!refusal(StrategyKind::XPencil, grid, neg).empty());
  Tuning bad = subbox(2, 2, -1);
  CHECK(!refusal(StrategyKind::XPencilReg, grid, bad).empty());
  // A pencil longer than the budget allows.
  Tuning longer = pencil(4);
  longer.shared_bytes = 8 * 1024;
  CHECK(refusal(StrategyKind::XPencil, grid, longer).find("pencil_length") != std::string::npos);
  // A 2D grid has no z extent.
  auto flat = make_grid<float, 2>(4, 10);
  CHECK(!refusal(StrategyKind::XPencilReg, flat, subbox(2, 2, 2)).empty());
  CHECK(refusal(StrategyKind::XPencilReg, flat, subbox(2, 2, 1)).empty());
#if !defined(CELLINT_TEST_GPU)
  // Not a GPU-like backend.
  cellint::Box<float, 3> box{};
  for (int d = 0; d < 3; ++d) box.lengths[d] = 4;
  cellint::CellGrid<cellint::Host, float, 3> host(box, 1.0f);
  host.build(cellint::test::make_positions(host.geometry(), 2, Distribution::Uniform, 3));
  cellint::test::Probe<float, 3> f{1.0f};
  f.charge = host.attach(std::vector<float>(static_cast<std::size_t>(host.size()), 1.0f));
  cellint::Buffer<cellint::Host, cellint::test::Probe<float, 3>::Accum> out(
      static_cast<std::size_t>(host.size()));
  for (StrategyKind k : both)
    CHECK_THROWS_AS(cellint::interact_with(k, host, f, out.data()), cellint::Unsupported);
#endif
}

TEST_CASE("x-pencil and x-pencil-reg launch shapes follow the paper's rules",
          CELLINT_TEST_TAG "[x-pencil][x-pencil-reg]") {
  using XP = cellint::test::PlanOf<cellint::XPencil>;
  using XR = cellint::test::PlanOf<cellint::XPencilReg>;
  const auto grid = make_grid<float, 3>(8, 10);
  const Index mc = grid.max_per_cell();
  cellint::test::Probe<float, 3> f{1.0f};
  using Rec = cellint::detail::StagedParticle<float, 3, cellint::test::Probe<float, 3>::Payload>;
  STATIC_REQUIRE(sizeof(Rec) == 16);
  INFO("M_C = " << mc);
  const double mean = static_cast<double>(grid.size()) / grid.cell_count();
  cellint::DeviceProperties p = Backend::properties();
  p.multiprocessors = 1;
  // Few multiprocessors: the longest pencil whose expected targets (mean + 3 sigma) fit the
  // preferred block size of 512 threads; the block holds that many threads.
  Index want = 1;
  while (want < 8 && cellint::detail::pencil_expected_targets(mean, want + 1, mc) <= 512) ++want;
  CHECK(want == 8);
  CHECK(XP::pencil_length(grid, f, p, {}) == want);
  cellint::LaunchShape s = XP::shape(grid, f, p, {});
  CHECK(s.block % 32 == 0);
  CHECK(s.block >= cellint::detail::pencil_expected_targets(mean, want, mc));
  CHECK(s.block < cellint::detail::pencil_expected_targets(mean, want, mc) + 32);
  CHECK(s.grid == static_cast<unsigned>((8 + want - 1) / want * 64));
  CHECK(s.shared_bytes <= p.shared_per_block);
  CHECK(s.shared_bytes >= 2 * static_cast<std::size_t>(mc) * (want + 2) * sizeof(Rec));
  // Fewer than 4 pencils per multiprocessor: L shrinks until there are enough (or L = 1).
  p.multiprocessors = 40;
  CHECK(XP::pencil_length(grid, f, p, {}) ==
        3);  // 3 pencils per row x 64 rows = 192 >= 160; L = 4: 128
  CHECK(XP::shape(grid, f, p, {}).grid == 192u);
  // A budget for 5 cells: rows of 8 are split evenly, 4 + 4 rather than 5 + 3.
  p.multiprocessors = 1;
  Tuning five;
  five.shared_bytes = cellint::detail::PencilLayout::make<Rec>(5, mc, 2).bytes;
  CHECK(XP::pencil_length(grid, f, p, five) == 4);
  p.multiprocessors = 100000;
  CHECK(XP::pencil_length(grid, f, p, {}) == 1);
  // Overrides.
  Tuning t;
  t.pencil_length = 5;
  t.threads = 96;
  t.blocks = 7;
  s = XP::shape(grid, f, p, t);
  CHECK(XP::pencil_length(grid, f, p, t) == 5);
  CHECK(s.block == 96u);
  CHECK(s.grid == 7u);
  // X-pencil-reg: by default one row of cells whose expected targets fit the preferred block.
  p.multiprocessors = 1;
  const auto sb = XR::subbox(grid, f, p, {});
  INFO("sub-box " << sb[0] << "x" << sb[1] << "x" << sb[2]);
  CHECK(sb == std::array<Index, 3>{8, 1, 1});
  CHECK(cellint::detail::pencil_expected_targets(mean, static_cast<long>(sb[0]) * sb[1] * sb[2],
                                                 mc) <= 512);
  s = XR::shape(grid, f, p, {});
  CHECK(s.block <= 1024u);
  CHECK(s.shared_bytes <= p.shared_per_block);
  t = subbox(3, 2, 1);
  CHECK(XR::subbox(grid, f, p, t) == std::array<Index, 3>{3, 2, 1});
  CHECK(XR::shape(grid, f, p, t).grid == static_cast<unsigned>(3 * 4 * 8));
  // Sub-box components left at 0 are chosen by the rule.
  t = subbox(4, 0, 0);
  CHECK(XR::subbox(grid, f, p, t)[0] == 4);
  p.multiprocessors = 100000;
  const auto tiny = XR::subbox(grid, f, p, {});
  CHECK(tiny[0] * tiny[1] * tiny[2] == 1);
}

#if !defined(CELLINT_TEST_GPU)
TEST_CASE("x-pencil and x-pencil-reg with other shuffled thread orders",
          CELLINT_TEST_TAG "[x-pencil][x-pencil-reg]") {
  cellint::EmulatedOptions& o = Backend::options();
  const cellint::EmulatedOptions saved = o;
  REQUIRE(o.shuffle);
  for (std::uint64_t seed : {1ull, 987654321ull}) {
    o.seed = seed;
    for (StrategyKind k : both) {
      for (const Tuning& t : shapes<3>(k, 4))
        expect_pass<float, 3>(k, Case{4, 10, Distribution::Uniform, true}, t);
      for (Tuning t : shapes<2>(k, 5)) {
        t.threads = 64;
        expect_pass<float, 2>(k, Case{5, 10, Distribution::Clustered, false}, t);
      }
    }
  }
  o = saved;
}
#endif

}  // namespace x_pencil_test
}  // namespace
