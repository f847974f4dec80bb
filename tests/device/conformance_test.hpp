// Conformance: every registered strategy (cellint::AllStrategies) that can exist on the backend
// under test, through one oracle sweep (tests/support/strategy_check.hpp): 2D and 3D, open and
// periodic, float, double and float positions with double accumulation, uniform, clustered,
// lattice and on-face particles at 1, 10 and 30 per cell, cells wider than the cutoff, stable
// binning, grids of 1 and 2 cells per axis, empty and single-particle grids (default Tuning).
// Registering a strategy puts it under this test without touching this file; a strategy that
// says Unsupported for any case of the sweep fails it, by name.
//
// Which strategies can exist on a backend: a GPU-like tag only on an `is_gpu_like` backend, a CPU
// tag only where the memory is host memory (`!device_memory`). On Emulated: all of them; on
// Cuda/Hip: the GPU-like ones; on Host (if a tests/host/*.cpp includes this header): the CPU ones.
//
// The sweep is chosen so that no documented supports() limit applies (see cases()): clustered
// grids keep M_C within what the shared-memory strategies stage, and Probe tests the cutoff and
// has symmetric(), as brute-force and cell-loop-half need.
//
// Compiled once per backend by tests/CMakeLists.txt, with CELLINT_TEST_BACKEND (the backend
// type), CELLINT_TEST_TAG (e.g. "[emulated]") and, for real GPUs, CELLINT_TEST_GPU defined.
// Select with "[conformance]".
#pragma once

#include <catch2/catch.hpp>

#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "support/device_backend.hpp"

#include "cellint/interact.hpp"
#include "cellint/strategies/registry.hpp"
#include "support/strategy_check.hpp"

namespace {
namespace conformance_test {

using Backend = CELLINT_TEST_BACKEND;
using cellint::StrategyKind;
using cellint::test::Case;
using cellint::test::Distribution;
using cellint::test::Outcome;

/// Whether strategy tag S can exist on Backend (see the file comment).
template <class S>
constexpr bool runs_here() {
  return S::gpu_like ? Backend::is_gpu_like : !Backend::device_memory;
}

/// f(tag) for every registered strategy that can exist on Backend, in registry order: the one
/// list both the sweep and the coverage test walk.
template <class F>
void for_each_strategy_here(F&& f) {
  cellint::detail::for_each_strategy(cellint::AllStrategies{}, [&](auto tag) {
    if constexpr (runs_here<decltype(tag)>()) f(tag);
  });
}

/// Positions and accumulation precision of one part of the sweep.
enum class Precision { Float, Double, Mixed };

inline const char* to_string(Precision p) {
  switch (p) {
    case Precision::Float:
      return "float";
    case Precision::Double:
      return "double";
    case Precision::Mixed:
      return "float/double";
  }
  return "?";
}

/// A case's name for its SECTION.
inline std::string describe(Precision p, const Case& c) {
  std::ostringstream s;
  s << to_string(p) << ", " << (c.periodic ? "periodic" : "open") << ", " << cellint::test::to_string(c.dist) << ", "
    << c.ppc << "/cell, " << c.cells << " cells/axis";
  if (c.width != 1.0) s << ", width " << c.width;
  if (c.stable) s << ", stable binning";
  return s.str();
}

/// The cases of one dimension and precision: every boundary x distribution x density on 3 to 6
/// cells per axis, then cells wider than the cutoff, stable binning, grids of 1 and 2 cells per
/// axis, no particle and a single particle. Clustered grids have one dense cell (fewer than 32
/// cells) of 20x the mean, so M_C is about 20 x ppc: 600 in 2D at 30 per cell (several chunks
/// and rounds of a block); in 3D the densities are 1, 5 and 10 per cell (M_C about 200), since
/// All-in-SM's 27 cells, and X-pencil-tile's 9 rows of 3, of M_C double particles must fit the
/// opt-in shared memory (M_C <= 268 on an H100).
template <int Dim>
std::vector<Case> cases(Precision p) {
  std::vector<Case> r;
  for (bool periodic : {false, true}) {
    for (Distribution dist :
         {Distribution::Uniform, Distribution::Clustered, Distribution::Lattice, Distribution::OnFaces}) {
      const bool clustered = dist == Distribution::Clustered;
      for (double ppc : {1.0, 10.0, 30.0}) {
        Case c;
        c.dist = dist;
        c.periodic = periodic;
        c.ppc = clustered && Dim == 3 ? (ppc == 10 ? 5 : ppc == 30 ? 10 : 1) : ppc;
        c.cells = Dim == 2 ? (periodic && !clustered ? 6 : 5) : (clustered ? 3 : 4);
        r.push_back(c);
      }
    }
  }
  // Cells wider than the cutoff: the 3^Dim neighbour cells cover more than the cutoff sphere.
  for (bool periodic : {false, true}) {
    Case c;
    c.cells = Dim == 2 ? 5 : 3;
    c.ppc = 10;
    c.periodic = periodic;
    c.width = periodic ? 1.5 : 2.5;
    c.dist = periodic ? Distribution::Uniform : Distribution::OnFaces;
    r.push_back(c);
  }
  const bool periodic = p != Precision::Double;
  // Stable binning (another order inside each cell).
  r.push_back(Case{4, 10, Distribution::Uniform, periodic, 1.0, true});
  // Fewer than 3 cells per axis (open: a periodic axis needs 3): neighbour cells fall outside.
  r.push_back(Case{1, 10, Distribution::Uniform, false});
  r.push_back(Case{2, 30, Distribution::OnFaces, false});
  // Nothing to do, and a lonely particle.
  r.push_back(Case{4, 0, Distribution::Uniform, periodic});
  r.push_back(Case{3, 1.0 / (Dim == 2 ? 9 : 27), Distribution::Uniform, periodic});
#if defined(CELLINT_TEST_GPU)
  // On a real GPU, grids that fill it (the oracle checks a sample of the particles). Clustered:
  // 1 cell in 16 holds 20x the mean, and on 4096 cells two dense cells can coincide (40x): 3 per
  // cell keeps M_C near 120, within what All-in-SM and X-pencil-tile stage in double 3D.
  r.push_back(Case{Dim == 2 ? 64 : 16, 10, Distribution::Uniform, true});
  r.push_back(Case{Dim == 2 ? 64 : 16, 3, Distribution::Clustered, false});
  r.push_back(Case{Dim == 2 ? 16 : 8, 100, Distribution::Uniform, p == Precision::Float});
#endif
  return r;
}

/// One SECTION per case: the strategy must report Passed (check_strategy CHECKs the values).
template <class Real, int Dim, class Acc>
void run_cases(StrategyKind k, const char* name, Precision p) {
  for (const Case& c : cases<Dim>(p)) {
    const std::string what = describe(p, c);
    DYNAMIC_SECTION(what) {
      const Outcome o = cellint::test::check_strategy<Backend, Real, Dim, Acc>(k, c);
      if (o == Outcome::Unsupported)
        FAIL_CHECK(name << " reported Unsupported for " << Dim << "D, " << what << ": every strategy that can exist on "
                        << Backend::name() << " must run the conformance sweep (see the reason above)");
    }
  }
}

/// Every strategy that can exist on Backend, one SECTION each, over every case of Dim.
template <int Dim>
void sweep() {
  for_each_strategy_here([&](auto tag) {
    using S = decltype(tag);
    DYNAMIC_SECTION(S::name) {
      run_cases<float, Dim, float>(S::kind, S::name, Precision::Float);
      run_cases<double, Dim, double>(S::kind, S::name, Precision::Double);
      run_cases<float, Dim, double>(S::kind, S::name, Precision::Mixed);
    }
  });
}

TEST_CASE("conformance: every registered strategy matches the oracle in 2D", CELLINT_TEST_TAG "[conformance]") {
  sweep<2>();
}

TEST_CASE("conformance: every registered strategy matches the oracle in 3D", CELLINT_TEST_TAG "[conformance]") {
  sweep<3>();
}

/// The number of tags in a TypeList.
template <class... S>
constexpr int count(cellint::detail::TypeList<S...>) {
  return static_cast<int>(sizeof...(S));
}

TEST_CASE("conformance: the sweep covers every registered strategy the backend can run",
          CELLINT_TEST_TAG "[conformance]") {
  const int registered = count(cellint::AllStrategies{});
  int gpu_like = 0, cpu = 0;
  cellint::detail::for_each_strategy(cellint::AllStrategies{},
                                     [&](auto tag) { ++(decltype(tag)::gpu_like ? gpu_like : cpu); });
  REQUIRE(gpu_like + cpu == registered);

  std::set<StrategyKind> swept;
  std::set<std::string> names;
  for_each_strategy_here([&](auto tag) {
    swept.insert(decltype(tag)::kind);
    names.insert(decltype(tag)::name);
  });
  const int expected = (Backend::is_gpu_like ? gpu_like : 0) + (Backend::device_memory ? 0 : cpu);
  INFO(Backend::name() << ": " << registered << " registered strategies (" << gpu_like << " GPU-like, " << cpu
                       << " CPU), " << swept.size() << " swept");
  CHECK(static_cast<int>(swept.size()) == expected);
  // Distinct names: one SECTION each.
  CHECK(names.size() == swept.size());
  if (Backend::is_gpu_like && !Backend::device_memory)  // Emulated: every registered strategy
    CHECK(static_cast<int>(swept.size()) == registered);
  // Every strategy Auto may pick on this backend is under test.
  for (StrategyKind k : cellint::strategies_for<Backend>()) {
    INFO("Auto candidate " << cellint::to_string(k));
    CHECK(swept.count(k) == 1);
  }

  // The rule above agrees with the library: on a small grid the strategies kept say yes, those
  // left out say no (so none is left out of the sweep that could run here).
  cellint::Box<float, 3> box;
  for (int d = 0; d < 3; ++d) {
    box.origin[d] = 0;
    box.lengths[d] = 4;
    box.periodic[d] = true;
  }
  cellint::CellGrid<Backend, float, 3> grid(box, 1.0f);
  grid.build(cellint::test::make_positions(grid.geometry(), 2, Distribution::Uniform, 11));
  std::vector<float> q(static_cast<std::size_t>(grid.size()), 1.0f);
  cellint::test::Probe<float, 3> f{1.0f};
  f.charge = grid.attach(q.data());
  cellint::detail::for_each_strategy(cellint::AllStrategies{}, [&](auto tag) {
    using S = decltype(tag);
    const cellint::Support s = cellint::supports(S::kind, grid, f);
    INFO(S::name << (runs_here<S>() ? " (swept)" : " (not swept)") << ": " << (s.ok ? "supported" : s.reason));
    CHECK(s.ok == runs_here<S>());
  });
}

}  // namespace conformance_test
}  // namespace
