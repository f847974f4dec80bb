// Par-Cell and Par-Cell-SM (paper 4.3, 4.4) against the double-precision oracle and against
// Par-Part-NoLoop: 2D/3D, open/periodic, float/double/mixed, 1/10/100 particles per cell, every
// distribution, grids with fewer than 3 cells, wide cells, the tuning knobs (block size, grid
// size, staging buffer, shared-memory budget), launch shapes and refusals.
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
#include "support/plans.hpp"
#include "support/strategy_check.hpp"


namespace {
namespace par_cell_test {

using Backend = CELLINT_TEST_BACKEND;
using cellint::Index;
using cellint::StrategyKind;
using cellint::Tuning;
using cellint::test::Case;
using cellint::test::Distribution;
using cellint::test::Outcome;

constexpr StrategyKind both[] = {StrategyKind::ParCell, StrategyKind::ParCellSM};

/// check_strategy must run and pass (neither strategy refuses a grid for its M_C).
template <class Real, int Dim, class Acc = Real>
void expect_pass(StrategyKind k, const Case& c, const Tuning& t = {}) {
  CHECK(cellint::test::check_strategy<Backend, Real, Dim, Acc>(k, c, t) == Outcome::Passed);
}

using cellint::test::CountCandidates;
using cellint::test::IdMix;

/// Bit-for-bit agreement with Par-Part-NoLoop (tests/support/exact_check.hpp).
template <class Real, int Dim, class F>
void agree_with_par_part(StrategyKind k, const Case& c, const F& f, const Tuning& t = {}) {
  cellint::test::agree_with_par_part<Backend, Real, Dim>(k, c, f, t);
}

/// The message of the Unsupported that interact_with throws for `k` with tuning `t` ("" if none).
template <class Real, int Dim>
std::string refusal(StrategyKind k, const Tuning& t) {
  cellint::Box<Real, Dim> box;
  for (int d = 0; d < Dim; ++d) {
    box.origin[d] = 0;
    box.lengths[d] = 4;
    box.periodic[d] = false;
  }
  cellint::CellGrid<Backend, Real, Dim> grid(box, Real(1));
  grid.build(cellint::test::make_positions(grid.geometry(), 2, Distribution::Uniform, 7));
  grid.attach(std::vector<Real>(static_cast<std::size_t>(grid.size()), Real(1)).data());
  cellint::test::Probe<Real, Dim> f{Real(1)};
  f.charge = grid.template attribute_handle<Real>(0);
  cellint::Buffer<Backend, typename cellint::test::Probe<Real, Dim>::Accum> out(static_cast<std::size_t>(grid.size()));
  if (cellint::supports(k, grid, f, t).ok) return "";
  try {
    cellint::interact_with(k, grid, f, out.data(), t);
  } catch (const cellint::Unsupported& e) {
    return e.what();
  }
  return "supports() said no but interact_with ran";
}

// The uniform oracle sweep, tiny and empty grids, wide cells and stable binning: the conformance
// test (conformance_test.hpp). Here: what is particular to one block per cell.

TEST_CASE("par-cell and par-cell-sm on clustered, lattice and on-face particles",
          CELLINT_TEST_TAG "[par-cell][par-cell-sm]") {
  for (StrategyKind k : both) {
    for (bool periodic : {false, true}) {
      // Clustered: a few cells hold 20x the average (200 or 2000 particles: several rounds of
      // 128 targets and, for par-cell-sm, several 512-particle chunks per source cell); M_C
      // never limits these strategies, so both must run.
      expect_pass<float, 3>(k, Case{4, 10, Distribution::Clustered, periodic});
      expect_pass<double, 2>(k, Case{4, 10, Distribution::Clustered, periodic});
      expect_pass<float, 2, double>(k, Case{3, 50, Distribution::Clustered, periodic});
      expect_pass<float, 3>(k, Case{4, 8, Distribution::Lattice, periodic});
      expect_pass<double, 2>(k, Case{5, 9, Distribution::Lattice, periodic});
      expect_pass<float, 3>(k, Case{4, 10, Distribution::OnFaces, periodic});
      expect_pass<double, 3>(k, Case{3, 10, Distribution::OnFaces, periodic});
      expect_pass<float, 2, double>(k, Case{5, 10, Distribution::OnFaces, periodic});
#if defined(CELLINT_TEST_GPU)
      expect_pass<float, 3>(k, Case{24, 10, Distribution::Clustered, periodic});
      expect_pass<float, 3>(k, Case{16, 27, Distribution::Lattice, periodic});
      expect_pass<float, 3>(k, Case{16, 10, Distribution::OnFaces, periodic});
#endif
    }
  }
}

TEST_CASE("par-cell and par-cell-sm tuning knobs: block size, grid stride, staging buffer, budget",
          CELLINT_TEST_TAG "[par-cell][par-cell-sm]") {
  for (StrategyKind k : both) {
    for (unsigned threads : {1u, 32u, 96u, 256u}) {
      Tuning t;
      t.threads = threads;
      expect_pass<float, 2>(k, Case{3, 100, Distribution::Uniform, true}, t);  // ~100 targets: 1..100 rounds
      expect_pass<float, 3>(k, Case{2, 60, Distribution::OnFaces, false}, t);
      expect_pass<double, 2>(k, Case{4, 10, Distribution::Clustered, false}, t);
    }
    for (unsigned blocks : {1u, 5u, 26u}) {  // fewer blocks than cells: grid-stride over cells
      Tuning t;
      t.blocks = blocks;
      expect_pass<float, 3>(k, Case{3, 10, Distribution::Clustered, true}, t);
      expect_pass<float, 2, double>(k, Case{5, 10, Distribution::Uniform, false}, t);
    }
  }
  for (unsigned chunk : {1u, 7u, 128u, 200u, 1000u}) {  // chunks smaller, equal and larger than cells/blocks
    Tuning t;
    t.sm_particles = chunk;
    expect_pass<float, 3>(StrategyKind::ParCellSM, Case{3, 20, Distribution::Uniform, true}, t);
    expect_pass<double, 2, double>(StrategyKind::ParCellSM, Case{4, 10, Distribution::Clustered, false}, t);
    t.threads = 64;
    expect_pass<float, 3, double>(StrategyKind::ParCellSM, Case{2, 60, Distribution::OnFaces, false}, t);
  }
  {
    Tuning t;  // a 1000-byte budget: the default buffer shrinks to what fits (62 float particles + payload)
    t.shared_bytes = 1000;
    t.threads = 32;
    expect_pass<float, 2>(StrategyKind::ParCellSM, Case{3, 100, Distribution::Uniform, true}, t);
    t.shared_bytes = 100 * 1024;  // above 48 KiB: needs the opt-in limit
    t.sm_particles = 4000;  // 4000 x 24 bytes = 96000
    expect_pass<double, 2>(StrategyKind::ParCellSM, Case{3, 50, Distribution::Clustered, false}, t);
  }
}

TEST_CASE("par-cell and par-cell-sm agree exactly with par-part-noloop for payload-free, cutoff-free and padded-payload functors",
          CELLINT_TEST_TAG "[par-cell][par-cell-sm]") {
  for (StrategyKind k : both) {
    for (bool periodic : {false, true}) {
      Tuning t;
      agree_with_par_part<float, 3>(k, Case{4, 10, Distribution::Uniform, periodic}, cellint::NeighborCount<float, 3>{});
      agree_with_par_part<double, 2>(k, Case{5, 10, Distribution::OnFaces, periodic}, cellint::NeighborCount<double, 2>{});
      agree_with_par_part<float, 3>(k, Case{4, 10, Distribution::Clustered, periodic}, CountCandidates<float, 3>{});
      agree_with_par_part<double, 2>(k, Case{3, 30, Distribution::Uniform, periodic}, CountCandidates<double, 2>{});
      agree_with_par_part<float, 3>(k, Case{4, 10, Distribution::Uniform, periodic}, IdMix<float, 3>{});
      t.sm_particles = 7;  // odd count: the payload array starts after 7 x 3 floats, padded to 8 bytes
      agree_with_par_part<float, 3>(k, Case{3, 20, Distribution::Clustered, periodic}, IdMix<float, 3>{}, t);
      agree_with_par_part<float, 2>(k, Case{4, 20, Distribution::OnFaces, periodic}, IdMix<float, 2>{}, t);
    }
  }
}

TEST_CASE("par-cell and par-cell-sm launch shapes (paper 7.1)", CELLINT_TEST_TAG "[par-cell][par-cell-sm]") {
    cellint::Box<float, 3> box;
  for (int d = 0; d < 3; ++d) {
    box.origin[d] = 0;
    box.lengths[d] = 5;
    box.periodic[d] = d != 1;
  }
  cellint::CellGrid<Backend, float, 3> grid(box, 1.0f);  // 5 x 5 x 5 = 125 cells
  cellint::test::Probe<float, 3> probe{1.0f};               // 12 bytes of coordinates + 4 of payload
  cellint::NeighborCount<float, 3> count;                   // coordinates only
  cellint::DeviceProperties p;                              // 48 KiB default, 48 KiB opt-in
  p.multiprocessors = 132;
  p.shared_per_block_optin = 227 * 1024;

  auto s = cellint::test::PlanOf<cellint::ParCell>::shape(grid, probe, p, Tuning{});
  CHECK(s.grid == 125);
  CHECK(s.block == 128);
  CHECK(s.shared_bytes == 0);
  s = cellint::test::PlanOf<cellint::ParCellSM>::shape(grid, probe, p, Tuning{});
  CHECK(s.grid == 125);
  CHECK(s.block == 128);
  CHECK(s.shared_bytes == 512 * 16);
  CHECK(cellint::test::PlanOf<cellint::ParCellSM>::shape(grid, count, p, Tuning{}).shared_bytes == 512 * 12);

  Tuning t;
  t.threads = 64;
  t.blocks = 7;
  t.sm_particles = 100;
  s = cellint::test::PlanOf<cellint::ParCellSM>::shape(grid, probe, p, t);
  CHECK(s.grid == 7);
  CHECK(s.block == 64);
  CHECK(s.shared_bytes == 100 * 16);

  Tuning small;  // 1000 bytes hold 62 particles of 16 bytes; not shrunk to a multiple of 128
  small.shared_bytes = 1000;
  CHECK(cellint::test::PlanOf<cellint::ParCellSM>::shape(grid, probe, p, small).shared_bytes == 62 * 16);
  small.threads = 32;  // 62 -> 32, a multiple of the block size
  CHECK(cellint::test::PlanOf<cellint::ParCellSM>::shape(grid, probe, p, small).shared_bytes == 32 * 16);

  // A payload that does not fit the default budget 512 times shrinks the buffer to what fits.
  cellint::DeviceProperties tiny = p;
  tiny.shared_per_block = 4096;
  CHECK(cellint::test::PlanOf<cellint::ParCellSM>::shape(grid, probe, tiny, Tuning{}).shared_bytes == 256 * 16);

  // Padded payload: 7 x 3 floats = 84 bytes, payload (alignof 8) at 88, 7 x 16 bytes.
  Tuning seven;
  seven.sm_particles = 7;
  CHECK(cellint::test::PlanOf<cellint::ParCellSM>::shape(grid, IdMix<float, 3>{}, p, seven).shared_bytes == 88 + 7 * 16);
}

TEST_CASE("par-cell and par-cell-sm refuse what cannot run, with the reason", CELLINT_TEST_TAG "[par-cell][par-cell-sm]") {
  for (StrategyKind k : both) {
    Tuning t;
    t.threads = 2048;
    const std::string r = refusal<float, 3>(k, t);
    INFO(r);
    CHECK(r.find("cannot run") != std::string::npos);
    CHECK(r.find("Tuning::threads = 2048") != std::string::npos);
    CHECK(refusal<float, 3>(k, Tuning{}).empty());
  }
  {
    Tuning t;
    t.sm_particles = 100000;  // 1.6 MB of staging
    const std::string r = refusal<float, 3>(StrategyKind::ParCellSM, t);
    INFO(r);
    CHECK(r.find("Tuning::sm_particles = 100000") != std::string::npos);
    CHECK(r.find("use at most") != std::string::npos);
    CHECK(refusal<float, 3>(StrategyKind::ParCell, t).empty());  // par-cell ignores the buffer
  }
  {
    Tuning t;
    t.shared_bytes = 8;  // less than one particle (12 + 4 bytes)
    const std::string r = refusal<float, 3>(StrategyKind::ParCellSM, t);
    INFO(r);
    CHECK(r.find("more than the 8-byte shared-memory budget") != std::string::npos);
  }
  {
    Tuning t;
    t.shared_bytes = 1u << 30;
    const std::string r = refusal<double, 2>(StrategyKind::ParCellSM, t);
    INFO(r);
    CHECK(r.find("exceeds the device's per-block limit") != std::string::npos);
  }
  {
    Tuning t;
    t.blocks = 0xFFFFFFFFu;
    CHECK(refusal<double, 2>(StrategyKind::ParCell, t).find("exceeds the grid limit") != std::string::npos);
  }
  {  // the Host backend runs no block kernels
    cellint::Box<float, 2> box;
    box.origin[0] = box.origin[1] = 0;
    box.lengths[0] = box.lengths[1] = 3;
    box.periodic[0] = box.periodic[1] = false;
    cellint::CellGrid<cellint::Host, float, 2> host(box, 1.0f);
    for (StrategyKind k : both) {
      const cellint::Support s = cellint::supports(k, host, cellint::NeighborCount<float, 2>{});
      CHECK_FALSE(s.ok);
      CHECK(s.reason.find("GPU-like backend") != std::string::npos);
    }
  }
}

#if !defined(CELLINT_TEST_GPU)
TEST_CASE("par-cell and par-cell-sm under shuffled thread orders with several seeds",
          CELLINT_TEST_TAG "[par-cell][par-cell-sm]") {
  cellint::EmulatedOptions& o = Backend::options();
  const cellint::EmulatedOptions saved = o;
  o.shuffle = true;
  for (std::uint64_t seed : {1ull, 424242ull, 987654321ull}) {
    o.seed = seed;
    Tuning t;
    t.sm_particles = 13;
    t.threads = 48;
    expect_pass<float, 3>(StrategyKind::ParCellSM, Case{3, 15, Distribution::Clustered, true}, t);
    expect_pass<double, 2>(StrategyKind::ParCellSM, Case{4, 20, Distribution::OnFaces, false}, Tuning{});
    expect_pass<float, 3>(StrategyKind::ParCell, Case{3, 15, Distribution::Clustered, true}, t);
  }
  o = saved;
}
#endif

}  // namespace par_cell_test
}  // namespace
