// All-in-SM (paper 5.1) against the double-precision oracle and against Par-Part-NoLoop:
// 2D/3D, open/periodic, float/double/mixed, 1/10/100 particles per cell, every distribution,
// grids with fewer than 3 cells, wide cells, sub-boxes that do not divide the grid, the tuning
// knobs (sub-box, threads, shared-memory budget), the sizing rules (power-of-3 box, shrinking
// for parallelism, threads) and the refusals.
//
// Compiled once per backend by tests/CMakeLists.txt, with CELLINT_TEST_BACKEND (the backend
// type), CELLINT_TEST_TAG (e.g. "[emulated]") and, for real GPUs, CELLINT_TEST_GPU defined.
#pragma once

#include <catch2/catch.hpp>

#include <cstring>
#include <string>
#include <vector>

#include "support/device_backend.hpp"

#include "cellint/interact.hpp"
#include "cellint/potentials/counting.hpp"
#include "support/exact_check.hpp"
#include "support/strategy_check.hpp"


namespace {
namespace all_in_sm_test {

using Backend = CELLINT_TEST_BACKEND;
using cellint::Index;
using cellint::StrategyKind;
using cellint::Tuning;
using cellint::test::Case;
using cellint::test::Distribution;
using cellint::test::Outcome;

constexpr StrategyKind kAll = StrategyKind::AllInSM;

/// A Tuning with the target sub-box fixed (0 = the rule decides that axis).
inline Tuning subbox(int x, int y, int z = 0) {
  Tuning t;
  t.subbox[0] = x;
  t.subbox[1] = y;
  t.subbox[2] = z;
  return t;
}

/// check_strategy must run and pass.
template <class Real, int Dim, class Acc = Real>
void expect_pass(const Case& c, const Tuning& t = {}) {
  INFO("sub-box " << t.subbox[0] << "," << t.subbox[1] << "," << t.subbox[2] << ", threads " << t.threads
                  << ", shared_bytes " << t.shared_bytes);
  CHECK(cellint::test::check_strategy<Backend, Real, Dim, Acc>(kAll, c, t) == Outcome::Passed);
}

/// check_strategy must report that All-in-SM refuses the case.
template <class Real, int Dim, class Acc = Real>
void expect_unsupported(const Case& c, const Tuning& t = {}) {
  CHECK(cellint::test::check_strategy<Backend, Real, Dim, Acc>(kAll, c, t) == Outcome::Unsupported);
}

/// Uniform particles, open and periodic, 1, 10 and 100 per cell, with the default launch (on the
/// emulator's 132 multiprocessors small grids shrink to one target cell per block) and with
/// larger sub-boxes that do not divide the grid (clipped last blocks, ghosts wrapped on both ends).
template <class Real, class Acc>
void sweep() {
  for (bool periodic : {false, true}) {
    expect_pass<Real, 2, Acc>(Case{6, 1, Distribution::Uniform, periodic});
    expect_pass<Real, 2, Acc>(Case{5, 10, Distribution::Uniform, periodic});
    expect_pass<Real, 2, Acc>(Case{3, 100, Distribution::Uniform, periodic});
    expect_pass<Real, 3, Acc>(Case{5, 1, Distribution::Uniform, periodic});
    expect_pass<Real, 3, Acc>(Case{4, 10, Distribution::Uniform, periodic});
    expect_pass<Real, 3, Acc>(Case{periodic ? 3 : 2, 100, Distribution::Uniform, periodic});

    expect_pass<Real, 2, Acc>(Case{7, 1, Distribution::Uniform, periodic}, subbox(3, 2));
    expect_pass<Real, 2, Acc>(Case{5, 10, Distribution::Uniform, periodic}, subbox(5, 2));
    expect_pass<Real, 3, Acc>(Case{5, 1, Distribution::Uniform, periodic}, subbox(2, 2, 2));
    expect_pass<Real, 3, Acc>(Case{4, 10, Distribution::Uniform, periodic}, subbox(3, 4, 1));
    // Enough cells for the default rule to keep several target cells per block on 132
    // multiprocessors (2D: 24 x 24 -> 2 x 2 targets, 144 blocks; 3D: 8^3 -> 2 x 1 x 1, 256 blocks).
    expect_pass<Real, 2, Acc>(Case{24, 1, Distribution::Uniform, periodic});
    expect_pass<Real, 3, Acc>(Case{8, 1, Distribution::Uniform, periodic});
#if defined(CELLINT_TEST_GPU)
    expect_pass<Real, 2, Acc>(Case{64, 10, Distribution::Uniform, periodic});
    expect_pass<Real, 3, Acc>(Case{32, 10, Distribution::Uniform, periodic});
    expect_pass<Real, 3, Acc>(Case{16, 1, Distribution::Uniform, periodic});
    expect_pass<Real, 3, Acc>(Case{8, 100, Distribution::Uniform, periodic});
    expect_pass<Real, 3, Acc>(Case{32, 1, Distribution::Uniform, periodic}, subbox(4, 3, 5));
    expect_pass<Real, 2, Acc>(Case{100, 1, Distribution::Uniform, periodic}, subbox(30, 7));
#endif
  }
}

using cellint::test::CountCandidates;
using cellint::test::IdMix;

/// Bit-for-bit agreement of All-in-SM with Par-Part-NoLoop (tests/support/exact_check.hpp).
template <class Real, int Dim, class F>
void agree_with_par_part(const Case& c, const F& f, const Tuning& t = {}) {
  cellint::test::agree_with_par_part<Backend, Real, Dim>(kAll, c, f, t);
}

/// A grid of `cells` per axis (open) with `per_cell` particles in every cell, so M_C = per_cell.
template <class Real, int Dim>
void fill_grid(cellint::CellGrid<Backend, Real, Dim>& grid, int cells, int per_cell) {
  std::array<std::vector<Real>, Dim> xyz;
  const int total = [&] {
    int n = 1;
    for (int d = 0; d < Dim; ++d) n *= cells;
    return n;
  }();
  for (int c = 0; c < total; ++c) {
    for (int k = 0; k < per_cell; ++k) {
      int rest = c;
      for (int d = 0; d < Dim; ++d) {
        xyz[d].push_back(static_cast<Real>(rest % cells + (k + 0.5) / (per_cell + 1.0)));
        rest /= cells;
      }
    }
  }
  grid.build(xyz);
  grid.attach(std::vector<Real>(static_cast<std::size_t>(grid.size()), Real(1)).data());
}

/// The message of the Unsupported that interact_with throws for All-in-SM ("" if it runs),
/// on an open grid of `cells` per axis with exactly `per_cell` particles in every cell.
template <class Real, int Dim>
std::string refusal(int cells, int per_cell, const Tuning& t) {
  cellint::Box<Real, Dim> box;
  for (int d = 0; d < Dim; ++d) {
    box.origin[d] = 0;
    box.lengths[d] = static_cast<Real>(cells);
    box.periodic[d] = false;
  }
  cellint::CellGrid<Backend, Real, Dim> grid(box, Real(1));
  fill_grid(grid, cells, per_cell);
  REQUIRE(grid.max_per_cell() == per_cell);
  cellint::test::Probe<Real, Dim> f{Real(1)};
  f.charge = grid.template attribute_handle<Real>(0);
  cellint::Buffer<Backend, typename cellint::test::Probe<Real, Dim>::Accum> out(
      static_cast<std::size_t>(std::max<Index>(grid.size(), 1)));
  if (cellint::supports(kAll, grid, f, t).ok) return "";
  try {
    cellint::interact_with(kAll, grid, f, out.data(), t);
  } catch (const cellint::Unsupported& e) {
    return e.what();
  }
  return "supports() said no but interact_with ran";
}

TEST_CASE("all-in-sm matches the oracle (uniform, 2D/3D, open/periodic, float/double/mixed)",
          CELLINT_TEST_TAG "[all-in-sm]") {
  sweep<float, float>();
  sweep<double, double>();
  sweep<float, double>();
}

TEST_CASE("all-in-sm on clustered, lattice and on-face particles", CELLINT_TEST_TAG "[all-in-sm]") {
  for (bool periodic : {false, true}) {
    // Clustered on fewer than 32 cells: one dense cell of 20 x ppc particles, so M_C is about
    // 20 x ppc. ppc 1: ~20 per cell, fits 48 KiB with room for several target cells.
    expect_pass<float, 3>(Case{3, 1, Distribution::Clustered, periodic});
    expect_pass<double, 2>(Case{5, 1, Distribution::Clustered, periodic}, subbox(3, 2));
    // ppc 10: M_C >= 200; 27 x 200 x 16 bytes > 48 KiB: refused under a 48 KiB budget, and run
    // by default with the opt-in budget (half a multiprocessor for float, the opt-in limit for double).
    Tuning budget48;
    budget48.shared_bytes = 48 * 1024;
    expect_unsupported<float, 3>(Case{3, 10, Distribution::Clustered, periodic}, budget48);
    expect_pass<float, 3>(Case{3, 10, Distribution::Clustered, periodic});
    expect_pass<double, 3>(Case{3, 10, Distribution::Clustered, periodic});
    expect_pass<float, 2, double>(Case{4, 10, Distribution::Clustered, periodic});
    // ppc 100: M_C >= 2000; 27 x 2000 x 16 bytes (3D) and 9 x 2000 x 24 bytes (2D double) exceed
    // even the 227 KiB opt-in limit: the documented refusal; par-part-noloop or x-pencil apply.
    expect_unsupported<float, 3>(Case{3, 100, Distribution::Clustered, periodic});
    expect_unsupported<double, 2>(Case{4, 100, Distribution::Clustered, periodic});

    expect_pass<float, 3>(Case{4, 8, Distribution::Lattice, periodic});
    expect_pass<double, 2>(Case{5, 9, Distribution::Lattice, periodic}, subbox(2, 3));
    expect_pass<float, 3, double>(Case{4, 27, Distribution::Lattice, periodic}, subbox(2, 2, 2));
    expect_pass<float, 3>(Case{4, 10, Distribution::OnFaces, periodic});
    expect_pass<double, 3>(Case{3, 10, Distribution::OnFaces, periodic}, subbox(3, 3, 3));
    expect_pass<float, 2, double>(Case{5, 10, Distribution::OnFaces, periodic}, subbox(2, 5));
#if defined(CELLINT_TEST_GPU)
    expect_pass<float, 3>(Case{24, 2, Distribution::Clustered, periodic});
    expect_pass<float, 3>(Case{16, 27, Distribution::Lattice, periodic});
    expect_pass<float, 3>(Case{16, 10, Distribution::OnFaces, periodic});
    expect_pass<double, 3>(Case{20, 10, Distribution::OnFaces, periodic}, subbox(3, 2, 2));
#endif
  }
}

TEST_CASE("all-in-sm on grids with fewer than 3 cells, wide cells, stable binning", CELLINT_TEST_TAG "[all-in-sm]") {
  for (int cells : {1, 2}) {
    expect_pass<float, 3>(Case{cells, 10, Distribution::Uniform, false});
    expect_pass<double, 2>(Case{cells, 10, Distribution::OnFaces, false});
    expect_pass<float, 2, double>(Case{cells, 30, Distribution::Uniform, false});
    expect_pass<float, 3>(Case{cells, 10, Distribution::Uniform, false}, subbox(2, 2, 2));
  }
  for (bool periodic : {false, true}) {
    expect_pass<float, 3>(Case{3, 10, Distribution::Uniform, periodic, 1.5});
    expect_pass<float, 3>(Case{5, 3, Distribution::Uniform, periodic, 1.7}, subbox(2, 2, 2));
    expect_pass<double, 2>(Case{4, 10, Distribution::OnFaces, periodic, 2.5}, subbox(3, 3));
    expect_pass<double, 3>(Case{4, 5, Distribution::Uniform, periodic, 1.0, true}, subbox(4, 1, 2));
  }
}

TEST_CASE("all-in-sm with no particles and with one particle", CELLINT_TEST_TAG "[all-in-sm]") {
  expect_pass<float, 3>(Case{3, 0, Distribution::Uniform, true});
  expect_pass<double, 2>(Case{4, 0, Distribution::Uniform, false});
  expect_pass<float, 3>(Case{3, 1.0 / 27, Distribution::Uniform, true});
  expect_pass<float, 2>(Case{3, 1.0 / 9, Distribution::Uniform, false}, subbox(3, 3));
}

TEST_CASE("all-in-sm tuning knobs: threads, sub-box, shared-memory budget", CELLINT_TEST_TAG "[all-in-sm]") {
  for (unsigned threads : {1u, 7u, 32u, 100u, 512u, 1024u}) {
    Tuning t = subbox(2, 3, 2);
    t.threads = threads;
    expect_pass<float, 3>(Case{5, 10, Distribution::Uniform, true}, t);  // more particles than threads
    t = subbox(4, 2);
    t.threads = threads;
    expect_pass<double, 2>(Case{5, 10, Distribution::Clustered, false}, t);
  }
  // Only some axes fixed: the others follow the rule (and shrink for parallelism).
  expect_pass<float, 3>(Case{4, 10, Distribution::Uniform, true}, subbox(3, 0, 0));
  expect_pass<float, 2>(Case{6, 10, Distribution::Uniform, false}, subbox(0, 4));
  // A sub-box larger than the grid is clipped to it: one block holds everything.
  expect_pass<double, 3>(Case{3, 10, Distribution::Uniform, true}, subbox(9, 9, 9));
  expect_pass<float, 3>(Case{2, 10, Distribution::Uniform, false}, subbox(9, 9, 9));
  {
    Tuning t;  // a small budget: the box holds only 27 cells of M_C particles
    t.shared_bytes = 12 * 1024;
    expect_pass<float, 3>(Case{4, 5, Distribution::Uniform, false}, t);
    t.shared_bytes = 100 * 1024;  // above 48 KiB: opted in
    expect_pass<double, 3>(Case{3, 30, Distribution::Uniform, true}, t);
    t = subbox(2, 1, 1);  // 4 x 3 x 3 cells of ~130 particles: needs the opt-in limit
    t.shared_bytes = 200 * 1024;
    expect_pass<float, 3>(Case{3, 100, Distribution::Uniform, true}, t);
  }
}

TEST_CASE("all-in-sm agrees exactly with par-part-noloop for payload-free, cutoff-free and padded-payload functors",
          CELLINT_TEST_TAG "[all-in-sm]") {
  for (bool periodic : {false, true}) {
    agree_with_par_part<float, 3>(Case{4, 10, Distribution::Uniform, periodic}, cellint::NeighborCount<float, 3>{});
    agree_with_par_part<double, 2>(Case{5, 10, Distribution::OnFaces, periodic}, cellint::NeighborCount<double, 2>{},
                                   subbox(2, 2));
    agree_with_par_part<float, 3>(Case{4, 3, Distribution::Clustered, periodic}, CountCandidates<float, 3>{},
                                  subbox(3, 2, 2));
    agree_with_par_part<double, 2>(Case{3, 30, Distribution::Uniform, periodic}, CountCandidates<double, 2>{});
    agree_with_par_part<float, 3>(Case{4, 10, Distribution::Uniform, periodic}, IdMix<float, 3>{}, subbox(2, 2, 1));
    agree_with_par_part<float, 2>(Case{4, 20, Distribution::OnFaces, periodic}, IdMix<float, 2>{}, subbox(3, 1));
    agree_with_par_part<float, 3>(Case{3, 1, Distribution::Uniform, periodic}, IdMix<float, 3>{}, subbox(3, 3, 3));
  }
}

TEST_CASE("all-in-sm sizing: the paper's power-of-3 rule", CELLINT_TEST_TAG "[all-in-sm][sizing]") {
  using cellint::detail::all_in_sm_box;
  int b[3];
  // 2D (Figure 2): 20 cells -> 5 x 4 (target 3 x 2).
  REQUIRE(all_in_sm_box<2>(20, b));
  CHECK((b[0] == 5 && b[1] == 4));
  REQUIRE(all_in_sm_box<2>(9, b));
  CHECK((b[0] == 3 && b[1] == 3));
  REQUIRE(all_in_sm_box<2>(12, b));
  CHECK((b[0] == 4 && b[1] == 3));
  REQUIRE(all_in_sm_box<2>(15, b));
  CHECK((b[0] == 5 && b[1] == 3));
  REQUIRE(all_in_sm_box<2>(16, b));
  CHECK((b[0] == 4 && b[1] == 4));
  CHECK_FALSE(all_in_sm_box<2>(8, b));
  // 3D (section 5.1): 96 cells -> 4 x 4 x 6 (the long side on x here).
  REQUIRE(all_in_sm_box<3>(96, b));
  CHECK((b[0] == 6 && b[1] == 4 && b[2] == 4));
  REQUIRE(all_in_sm_box<3>(100, b));
  CHECK((b[0] == 5 && b[1] == 5 && b[2] == 4));
  REQUIRE(all_in_sm_box<3>(27, b));
  CHECK((b[0] == 3 && b[1] == 3 && b[2] == 3));
  REQUIRE(all_in_sm_box<3>(44, b));
  CHECK((b[0] == 4 && b[1] == 3 && b[2] == 3));
  REQUIRE(all_in_sm_box<3>(45, b));
  CHECK((b[0] == 5 && b[1] == 3 && b[2] == 3));
  REQUIRE(all_in_sm_box<3>(48, b));
  CHECK((b[0] == 4 && b[1] == 4 && b[2] == 3));
  REQUIRE(all_in_sm_box<3>(63, b));
  CHECK((b[0] == 4 && b[1] == 4 && b[2] == 3));
  REQUIRE(all_in_sm_box<3>(64, b));
  CHECK((b[0] == 4 && b[1] == 4 && b[2] == 4));
  REQUIRE(all_in_sm_box<3>(1000000, b));
  CHECK((b[0] == 100 && b[1] == 100 && b[2] == 100));
  CHECK_FALSE(all_in_sm_box<3>(26, b));

  // Section 7.1: B = 2,2,2 with 12 blocks on 40 multiprocessors -> 2,1,1 (48 blocks).
  const Index cells[3] = {6, 4, 4};
  int sub[3] = {2, 2, 2};
  const bool fixed[3] = {false, false, false};
  cellint::detail::all_in_sm_shrink<3>(cells, sub, fixed, 40);
  CHECK((sub[0] == 2 && sub[1] == 1 && sub[2] == 1));
  int per_axis[3];
  CHECK(cellint::detail::all_in_sm_blocks<3>(cells, sub, per_axis) == 48);
}

TEST_CASE("all-in-sm launch shapes", CELLINT_TEST_TAG "[all-in-sm]") {
  using cellint::detail::all_in_sm_plan;
  using cellint::detail::AllInSMSizes;
  cellint::DeviceProperties p;  // 48 KiB per block, 227 KiB opt-in, 228 KiB per multiprocessor
  p.multiprocessors = 1;
  p.shared_per_block_optin = 227 * 1024;
  p.shared_per_multiprocessor = 228 * 1024;
  AllInSMSizes probe3;  // float 3D positions and a 4-byte payload: 16 bytes per particle
  probe3.real = 4;
  probe3.payload = 4;
  probe3.row = sizeof(cellint::detail::AllInSMRow<float, 3>);
  const Index big3[3] = {100, 100, 100};
  AllInSMSizes probe2 = probe3;  // float 2D: 12 bytes per particle
  probe2.row = sizeof(cellint::detail::AllInSMRow<float, 2>);

  // Section 5.1's numbers: M_C = 16, 32 bytes per particle, 48 KiB -> 96 cells (6 x 4 x 4) for
  // the particles alone; the offsets and row records take the rest of the 96th cell's room, so
  // the rule runs again with 95 cells: 5 x 4 x 4 = 80 (target 3 x 2 x 2).
  AllInSMSizes eight;
  eight.real = 4;
  eight.payload = 20;
  eight.row = sizeof(cellint::detail::AllInSMRow<float, 3>);
  auto pl = all_in_sm_plan<3>(big3, 16, eight, p, Tuning{});
  REQUIRE(pl.support.ok);
  CHECK(pl.layout.sub[0] == 3);
  CHECK(pl.layout.sub[1] == 2);
  CHECK(pl.layout.sub[2] == 2);
  CHECK(pl.shape.block == 512);                     // min(16 x 80, 512)
  CHECK(pl.shape.shared_bytes <= 48 * 1024);
  CHECK(pl.shape.grid == 34u * 50u * 50u);          // ceil(100 / 3) x 50 x 50

  // M_C = 1: threads = box cells rounded up to a warp; one cell per particle of 16 bytes.
  pl = all_in_sm_plan<3>(big3, 1, probe3, p, Tuning{});
  REQUIRE(pl.support.ok);
  const long box = static_cast<long>(pl.layout.sub[0] + 2) * (pl.layout.sub[1] + 2) * (pl.layout.sub[2] + 2);
  CHECK(box > 27 * 50);  // a large box: 48 KiB hold ~2500 cells of 16 bytes
  CHECK(pl.shape.shared_bytes <= 48 * 1024);
  CHECK(pl.shape.block == 512);

  // Few cells: the box is clipped to the grid, and shrinks until blocks >= multiprocessors.
  const Index small3[3] = {6, 4, 4};
  pl = all_in_sm_plan<3>(small3, 1, probe3, p, Tuning{});
  CHECK((pl.layout.sub[0] == 6 && pl.layout.sub[1] == 4 && pl.layout.sub[2] == 4));
  CHECK(pl.shape.grid == 1);
  CHECK(pl.shape.block == 288);  // 8 x 6 x 6 cells x M_C = 1, already a warp multiple
  p.multiprocessors = 40;
  pl = all_in_sm_plan<3>(small3, 1, probe3, p, Tuning{});
  CHECK(pl.shape.grid >= 40);
  p.multiprocessors = 132;
  pl = all_in_sm_plan<3>(small3, 1, probe3, p, Tuning{});
  CHECK((pl.layout.sub[0] == 1 && pl.layout.sub[1] == 1 && pl.layout.sub[2] == 1));
  CHECK(pl.shape.grid == 96);
  CHECK(pl.shape.block == 32);  // 27 x 1 -> 32
  const Index grid2[2] = {24, 24};
  pl = all_in_sm_plan<2>(grid2, 1, probe2, p, Tuning{});
  CHECK((pl.layout.sub[0] == 2 && pl.layout.sub[1] == 2));
  CHECK(pl.shape.grid == 144);
  const Index grid3[3] = {8, 8, 8};
  pl = all_in_sm_plan<3>(grid3, 1, probe3, p, Tuning{});
  CHECK((pl.layout.sub[0] == 2 && pl.layout.sub[1] == 1 && pl.layout.sub[2] == 1));
  CHECK(pl.shape.grid == 256);
  p.multiprocessors = 1;

  // Tuning: the sub-box and threads as given (clipped to the grid).
  Tuning t = subbox(2, 3, 50);
  t.threads = 77;
  pl = all_in_sm_plan<3>(small3, 4, probe3, p, t);
  REQUIRE(pl.support.ok);
  CHECK((pl.layout.sub[0] == 2 && pl.layout.sub[1] == 3 && pl.layout.sub[2] == 4));
  CHECK(pl.shape.grid == 3 * 2 * 1);
  CHECK(pl.shape.block == 77);

  // M_C too large for 48 KiB: the budget grows to half a multiprocessor (two blocks resident).
  pl = all_in_sm_plan<3>(big3, 150, probe3, p, Tuning{});  // 27 x 150 x 16 = 64800 bytes
  REQUIRE(pl.support.ok);
  CHECK(pl.budget == 114 * 1024);
  CHECK(pl.shape.shared_bytes > 48 * 1024);
  CHECK(pl.shape.shared_bytes <= 114 * 1024);
  pl = all_in_sm_plan<3>(big3, 400, probe3, p, Tuning{});  // 27 x 400 x 16 = 172800 bytes
  REQUIRE(pl.support.ok);
  CHECK(pl.budget == 227 * 1024);
  pl = all_in_sm_plan<3>(big3, 600, probe3, p, Tuning{});  // 259200 bytes: beyond the opt-in limit
  CHECK_FALSE(pl.support.ok);

  // 2D: the box grows along x first.
  const Index big2[2] = {1000, 1000};
  pl = all_in_sm_plan<2>(big2, 100, probe2, p, Tuning{});  // 1200 B a cell: 40 cells -> 6 x 6 (7 x 6 > 40)
  REQUIRE(pl.support.ok);
  CHECK((pl.layout.sub[0] == 4 && pl.layout.sub[1] == 4));
  CHECK(pl.shape.shared_bytes <= 48 * 1024);
}

TEST_CASE("all-in-sm refuses what cannot run, with the reason", CELLINT_TEST_TAG "[all-in-sm]") {
  {  // 27 cells x 200 particles x 16 bytes = 86400 bytes > 48 KiB
    Tuning t;
    t.shared_bytes = 48 * 1024;
    const std::string r = refusal<float, 3>(3, 200, t);
    INFO(r);
    CHECK(r.find("cannot run") != std::string::npos);
    CHECK(r.find("M_C = 200") != std::string::npos);
    CHECK(r.find("16 bytes per particle") != std::string::npos);
    CHECK(r.find("budget of 49152 bytes") != std::string::npos);
    CHECK(r.find("use x-pencil") != std::string::npos);
    CHECK(refusal<float, 3>(3, 200, Tuning{}).empty());  // the default budget opts in
  }
  {  // 27 x 700 x 16 = 302400 bytes: more than the opt-in limit
    const std::string r = refusal<float, 3>(3, 700, Tuning{});
    INFO(r);
    CHECK(r.find("M_C = 700") != std::string::npos);
    CHECK(r.find("budget of 232448 bytes") != std::string::npos);
  }
  {
    Tuning t;
    t.threads = 2048;
    const std::string r = refusal<float, 2>(4, 2, t);
    INFO(r);
    CHECK(r.find("Tuning::threads = 2048") != std::string::npos);
  }
  {
    Tuning t;
    t.shared_bytes = 1u << 30;
    const std::string r = refusal<double, 3>(4, 2, t);
    INFO(r);
    CHECK(r.find("exceeds the device's opt-in limit") != std::string::npos);
  }
  {  // a fixed sub-box too large for the budget
    Tuning t = subbox(6, 6, 6);
    t.shared_bytes = 8 * 1024;
    const std::string r = refusal<float, 3>(6, 10, t);
    INFO(r);
    CHECK(r.find("Tuning::subbox {6, 6, 6}") != std::string::npos);
  }
  {
    const std::string r = refusal<float, 3>(4, 2, subbox(-1, 0, 0));
    CHECK(r.find("negative") != std::string::npos);
  }
  {  // the Host backend runs no block kernels
    cellint::Box<float, 2> box;
    box.origin[0] = box.origin[1] = 0;
    box.lengths[0] = box.lengths[1] = 3;
    box.periodic[0] = box.periodic[1] = false;
    cellint::CellGrid<cellint::Host, float, 2> host(box, 1.0f);
    const cellint::Support s = cellint::supports(kAll, host, cellint::NeighborCount<float, 2>{});
    CHECK_FALSE(s.ok);
    CHECK(s.reason.find("GPU-like backend") != std::string::npos);
  }
}

#if !defined(CELLINT_TEST_GPU)
TEST_CASE("all-in-sm under shuffled thread orders with several seeds", CELLINT_TEST_TAG "[all-in-sm]") {
  cellint::EmulatedOptions& o = Backend::options();
  const cellint::EmulatedOptions saved = o;
  o.shuffle = true;
  for (std::uint64_t seed : {1ull, 424242ull, 987654321ull}) {
    o.seed = seed;
    Tuning t = subbox(2, 2, 2);
    t.threads = 48;
    expect_pass<float, 3>(Case{5, 3, Distribution::Clustered, true}, t);
    expect_pass<double, 2>(Case{5, 20, Distribution::OnFaces, false}, subbox(3, 2));
    expect_pass<float, 3>(Case{3, 5, Distribution::Uniform, false});
  }
  o = saved;
}
#endif

}  // namespace all_in_sm_test
}  // namespace
