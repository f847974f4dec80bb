// X-pencil-sieve against the double-precision oracle and against Par-Part-NoLoop: 2D/3D,
// open/periodic, float/double/mixed, 1/10/100 particles per cell (windows shorter than, equal to
// and longer than the 32-source chunk), every distribution, pencil lengths, one warp per block,
// grid-stride blocks; exact agreement for integer functors with a cutoff test (with and without
// a payload); and the refusal of functors without a cutoff test.
//
// Compiled once per backend by tests/CMakeLists.txt (see strategy_x_pencil_test.hpp).
#pragma once

#include <catch2/catch.hpp>
#include <string>
#include <vector>

#include "support/device_backend.hpp"

#include "cellint/interact.hpp"
#include "cellint/potentials/lennard_jones.hpp"
#include "support/exact_check.hpp"
#include "support/strategy_check.hpp"

namespace {
namespace x_pencil_sieve_test {

using Backend = CELLINT_TEST_BACKEND;
using cellint::Index;
using cellint::StrategyKind;
using cellint::Tuning;
using cellint::test::Case;
using cellint::test::Distribution;
using cellint::test::Outcome;

constexpr StrategyKind kSieve = StrategyKind::XPencilSieve;

template <class Real, int Dim, class Acc = Real>
void expect_pass(const Case& c, const Tuning& t = {}) {
  CHECK(cellint::test::check_strategy<Backend, Real, Dim, Acc>(kSieve, c, t) == Outcome::Passed);
}

/// The default shape, two pencil lengths (one covering a whole row) and one warp per block.
inline std::vector<Tuning> shapes(int cells) {
  std::vector<Tuning> r(4);
  r[1].pencil_length = 2;
  r[2].pencil_length = cells;
  r[3].threads = 32;
  return r;
}

/// Counts the pairs inside the cutoff (exact), no payload.
template <class Real, int Dim>
struct CountNeighbours {
  using Accum = unsigned;
  CELLINT_HD void operator()(unsigned& n, const cellint::NoPayload&, const cellint::NoPayload&,
                             const cellint::Vec<Real, Dim>&, Real) const {
    ++n;
  }
};

/// IdMix (support/exact_check.hpp) restricted to the pairs inside the cutoff: a 16-byte payload.
template <class Real, int Dim>
struct IdMixInside : cellint::test::IdMix<Real, Dim> {
  static constexpr bool cutoff_test = true;
};

template <class Real, class Acc>
void sweep() {
  for (bool periodic : {false, true}) {
    for (const Tuning& t : shapes(5)) {
      expect_pass<Real, 2, Acc>(Case{5, 1, Distribution::Uniform, periodic}, t);
      expect_pass<Real, 2, Acc>(Case{5, 10, Distribution::Uniform, periodic}, t);
    }
    for (const Tuning& t : shapes(4)) {
      expect_pass<Real, 3, Acc>(Case{4, 1, Distribution::Uniform, periodic}, t);
      expect_pass<Real, 3, Acc>(Case{4, 10, Distribution::Uniform, periodic}, t);
    }
    for (const Tuning& t : shapes(3)) {
      expect_pass<Real, 2, Acc>(Case{3, 100, Distribution::Uniform, periodic}, t);
      expect_pass<Real, 3, Acc>(Case{3, 100, Distribution::Uniform, periodic}, t);
    }
#if defined(CELLINT_TEST_GPU)
    expect_pass<Real, 2, Acc>(Case{64, 10, Distribution::Uniform, periodic});
    expect_pass<Real, 3, Acc>(Case{32, 10, Distribution::Uniform, periodic});
    expect_pass<Real, 3, Acc>(Case{8, 100, Distribution::Uniform, periodic});
#endif
  }
}

TEST_CASE("x-pencil-sieve matches the oracle (uniform, 2D/3D, open/periodic, float/double/mixed)",
          CELLINT_TEST_TAG "[x-pencil-sieve]") {
  sweep<float, float>();
  sweep<double, double>();
  sweep<float, double>();
}

TEST_CASE("x-pencil-sieve on clustered, lattice and on-face particles, wide cells, tiny grids",
          CELLINT_TEST_TAG "[x-pencil-sieve]") {
  for (bool periodic : {false, true}) {
    for (const Tuning& t : shapes(4)) {
      expect_pass<float, 3>(Case{4, 8, Distribution::Lattice, periodic}, t);
      expect_pass<double, 3>(Case{4, 10, Distribution::OnFaces, periodic}, t);
    }
    expect_pass<float, 3>(Case{4, 10, Distribution::Clustered, periodic});
    expect_pass<float, 2, double>(Case{4, 40, Distribution::Clustered, periodic}, shapes(4)[3]);
    // Cells wider than the cutoff: fewer sources inside, more chunks with few bits set.
    expect_pass<float, 3>(Case{3, 10, Distribution::Uniform, periodic, 1.7});
    expect_pass<float, 3>(Case{4, 10, Distribution::Uniform, periodic, 1.0, true});  // stable binning
#if defined(CELLINT_TEST_GPU)
    expect_pass<float, 3>(Case{24, 10, Distribution::Clustered, periodic});
#endif
  }
  for (int cells : {1, 2}) expect_pass<float, 3>(Case{cells, 40, Distribution::Uniform, false});
  expect_pass<float, 3>(Case{4, 0, Distribution::Uniform, false});
  expect_pass<float, 3>(Case{4, 1.0 / 64, Distribution::Uniform, true});
  Tuning few;
  few.blocks = 3;
  expect_pass<float, 3>(Case{4, 20, Distribution::Uniform, true}, few);
}

TEST_CASE("x-pencil-sieve agrees exactly with par-part-noloop, and refuses functors without a cutoff test",
          CELLINT_TEST_TAG "[x-pencil-sieve]") {
  using cellint::test::agree_with_par_part;
  for (bool periodic : {false, true}) {
    for (const Tuning& t : shapes(4)) {
      agree_with_par_part<Backend, float, 3>(kSieve, Case{4, 40, Distribution::Uniform, periodic},
                                             CountNeighbours<float, 3>{}, t);
      agree_with_par_part<Backend, double, 3>(kSieve, Case{4, 10, Distribution::OnFaces, periodic},
                                              IdMixInside<double, 3>{}, t);
    }
    agree_with_par_part<Backend, float, 2>(kSieve, Case{5, 30, Distribution::Clustered, periodic},
                                           IdMixInside<float, 2>{});
  }
  cellint::Box<float, 3> box{};
  for (int d = 0; d < 3; ++d) box.lengths[d] = 4;
  cellint::CellGrid<Backend, float, 3> grid(box, 1.0f);
  grid.build(cellint::test::make_positions(grid.geometry(), 10, Distribution::Uniform, 5));
  const std::string why = cellint::supports(kSieve, grid, cellint::LennardJonesPaper<float, 3>{}).reason;
  INFO(why);
  CHECK(why.find("cutoff test") != std::string::npos);
  CHECK(cellint::supports(kSieve, grid, cellint::LennardJones<float, 3>{}).ok);
  Tuning small;
  small.shared_bytes = 256;  // less than one pencil of 3 cells
  CHECK(cellint::supports(kSieve, grid, cellint::LennardJones<float, 3>{}, small).reason.find("x-pencil-sieve") !=
        std::string::npos);
}

#if !defined(CELLINT_TEST_GPU)
TEST_CASE("x-pencil-sieve with other shuffled thread orders", CELLINT_TEST_TAG "[x-pencil-sieve]") {
  cellint::EmulatedOptions& o = Backend::options();
  const cellint::EmulatedOptions saved = o;
  REQUIRE(o.shuffle);
  for (std::uint64_t seed : {5ull, 424242ull}) {
    o.seed = seed;
    for (const Tuning& t : shapes(4)) expect_pass<float, 3>(Case{4, 20, Distribution::Uniform, true}, t);
  }
  o = saved;
}
#endif

}  // namespace x_pencil_sieve_test
}  // namespace
