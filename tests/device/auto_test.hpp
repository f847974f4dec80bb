// Auto on a GPU-like backend: a decision made for one grid is shared by every grid with the
// same key (cells, mean particles per cell, M_C in the same octave); when another grid's fullest
// cell no longer fits the chosen strategy's shared memory, Auto tunes again instead of throwing,
// from the fast path of later calls as from the table (a cache file).
//
// Compiled once per backend by tests/CMakeLists.txt (see strategy_x_pencil_test.hpp).
#pragma once

#include <catch2/catch.hpp>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iomanip>
#include <random>
#include <string>
#include <vector>

#include "support/device_backend.hpp"

#include "cellint/interact.hpp"
#include "support/generators.hpp"

namespace {
namespace auto_test {

using Backend = CELLINT_TEST_BACKEND;
using cellint::Index;
using cellint::StrategyKind;

/// A pair functor whose payload (384 bytes) makes shared-memory staging expensive: All-in-SM's
/// 27 cells of M_C particles fit the 227 KiB a block can have up to M_C of about 21.
struct FatPayload {
  struct Payload {
    float q;
    float pad[95];
  };
  struct Accum {
    float count;
    float w;
  };
  float rc2 = 1;
  template <class View>
  CELLINT_HD Payload load(const View&, Index i) const {
    Payload p{};
    p.q = 1.0f + 0.125f * static_cast<float>(i % 4);
    return p;
  }
  CELLINT_HD void operator()(Accum& a, const Payload&, const Payload& s, const cellint::Vec<float, 3>&,
                             float r2) const {
    a.count += 1.0f;
    a.w += s.q * (rc2 - r2);
  }
};

/// An open 3x3x3 grid of unit cells with 108 particles: `dense` of them in cell 0, the others
/// spread over the remaining 26 cells (at most 4 each). Same key for every `dense` in 17..32.
inline cellint::CellGrid<Backend, float, 3> make_grid(int dense) {
  cellint::Box<float, 3> box;
  for (int d = 0; d < 3; ++d) {
    box.origin[d] = 0;
    box.lengths[d] = 3;
    box.periodic[d] = false;
  }
  cellint::CellGrid<Backend, float, 3> grid(box, 1.0f);
  std::mt19937 rng(static_cast<unsigned>(dense));
  std::uniform_real_distribution<float> u(0.02f, 0.98f);
  cellint::test::Positions<float, 3> p;
  auto put = [&](int cell, int count) {
    const int c[3] = {cell % 3, cell / 3 % 3, cell / 9};
    for (int k = 0; k < count; ++k)
      for (int d = 0; d < 3; ++d) p[d].push_back(static_cast<float>(c[d]) + u(rng));
  };
  put(0, dense);
  int left = 108 - dense;
  for (int cell = 1; cell < 27; ++cell) {
    const int count = std::min(4, (left + (27 - cell) - 1) / (27 - cell));
    put(cell, count);
    left -= count;
  }
  grid.build(p);
  return grid;
}

/// "" when `out` (backend memory, sorted order) agrees with brute force on the host; brute
/// force needs host memory, so on GPU backends the check compares with Par-Part-NoLoop.
inline std::string agrees(const cellint::CellGrid<Backend, float, 3>& g, const FatPayload& f,
                          const cellint::Buffer<Backend, FatPayload::Accum>& out) {
  const std::size_t n = static_cast<std::size_t>(g.size());
  cellint::Buffer<Backend, FatPayload::Accum> ref(n);
#if defined(CELLINT_TEST_GPU)
  cellint::interact_with(StrategyKind::ParPartNoLoop, g, f, ref.data());
#else
  cellint::interact_with(StrategyKind::BruteForce, g, f, ref.data());
#endif
  std::vector<FatPayload::Accum> a(n), b(n);
  Backend::copy(a.data(), out.data(), n * sizeof(a[0]), cellint::CopyKind::DeviceToHost, g.stream());
  Backend::copy(b.data(), ref.data(), n * sizeof(b[0]), cellint::CopyKind::DeviceToHost, g.stream());
  Backend::synchronize(g.stream());
  for (std::size_t i = 0; i < n; ++i)
    if (a[i].count != b[i].count || std::abs(a[i].w - b[i].w) > 1e-4f * (1 + std::abs(b[i].w)))
      return "particle " + std::to_string(i) + ": count " + std::to_string(a[i].count) + " vs " +
             std::to_string(b[i].count) + ", w " + std::to_string(a[i].w) + " vs " + std::to_string(b[i].w);
  return "";
}

/// A cache file of its own (removed by the destructor).
struct CacheFile {
  std::string path;
  CacheFile(const std::string& key, const char* strategy) {
    static int count = 0;
    path = (std::filesystem::temp_directory_path() /
            ("cellint_auto_test_" + std::to_string(std::chrono::steady_clock::now().time_since_epoch().count()) + "_" +
             std::to_string(++count) + ".txt"))
               .string();
    std::ofstream(path) << std::quoted(key) << ' ' << strategy << " 0 0 0 0 0\n";
  }
  ~CacheFile() { std::remove(path.c_str()); }
  std::vector<std::string> lines() const {
    std::ifstream in(path);
    std::vector<std::string> r;
    for (std::string l; std::getline(in, l);) r.push_back(l);
    return r;
  }
};

TEST_CASE("Auto tunes again when the cached shared-memory strategy no longer fits the fullest cell",
          CELLINT_TEST_TAG "[auto]") {
  cellint::Autotuner& tuner = cellint::Autotuner::instance();
  const FatPayload f{};
  const auto fits = make_grid(20);     // M_C 20: all-in-sm fits
  const auto too_big = make_grid(30);  // M_C 30: same key, all-in-sm does not fit
  REQUIRE(fits.max_per_cell() == 20);
  REQUIRE(too_big.max_per_cell() == 30);
  const std::string key = cellint::Autotuner::key(fits, f);
  REQUIRE(cellint::Autotuner::key(too_big, f) == key);
#if defined(CELLINT_TEST_GPU)
  if (!cellint::supports(StrategyKind::AllInSM, fits, f).ok) {
    WARN("this device's shared memory per block is too small for the test's All-in-SM box: skipped");
    return;
  }
#endif
  REQUIRE(cellint::supports(StrategyKind::AllInSM, fits, f).ok);
  INFO(cellint::supports(StrategyKind::AllInSM, too_big, f).reason);
  REQUIRE_FALSE(cellint::supports(StrategyKind::AllInSM, too_big, f).ok);
  const std::size_t n = static_cast<std::size_t>(too_big.size());
  REQUIRE(static_cast<std::size_t>(fits.size()) == n);
  cellint::Buffer<Backend, FatPayload::Accum> out(n);
  tuner.set_repetitions(1);

  SECTION("the decision on the fast path of later calls") {
    CacheFile file(key, std::to_string(static_cast<int>(StrategyKind::AllInSM)).c_str());
    tuner.clear();
    tuner.set_cache_file(file.path);
    const cellint::Report a = cellint::interact(fits, f, out.data());
    CHECK(a.strategy == StrategyKind::AllInSM);
    CHECK(a.tuning_ms == 0);
    CHECK(agrees(fits, f, out) == "");
    cellint::Report b;
    REQUIRE_NOTHROW(b = cellint::interact(too_big, f, out.data()));
    CHECK(b.strategy != StrategyKind::AllInSM);
    CHECK(b.tuning_ms > 0);
    CHECK(agrees(too_big, f, out) == "");
    // The new decision replaces the old one: in the table, in later calls, in the file.
    CHECK(tuner.table().at(key).strategy == b.strategy);
    const cellint::Report b2 = cellint::interact(too_big, f, out.data());
    CHECK(b2.strategy == b.strategy);
    CHECK(b2.tuning_ms == 0);
    const auto lines = file.lines();
    REQUIRE(lines.size() == 2);
    CHECK(lines[1].find(std::string("\" ") + cellint::to_string(b.strategy) + " ") != std::string::npos);
  }
  SECTION("the decision from the cache file, by number and by name") {
    for (const std::string& stale :
         {std::to_string(static_cast<int>(StrategyKind::AllInSM)), std::string("all-in-sm")}) {
      CacheFile file(key, stale.c_str());
      tuner.clear();
      tuner.set_cache_file(file.path);
      REQUIRE(tuner.table().at(key).strategy == StrategyKind::AllInSM);
      cellint::Report b;
      REQUIRE_NOTHROW(b = cellint::interact(too_big, f, out.data()));
      CHECK(b.strategy != StrategyKind::AllInSM);
      CHECK(b.tuning_ms > 0);
      CHECK(agrees(too_big, f, out) == "");
      CHECK(tuner.table().at(key).strategy == b.strategy);
    }
  }
  tuner.set_cache_file("");
  tuner.clear();
  tuner.set_repetitions(3);
}

}  // namespace auto_test
}  // namespace
