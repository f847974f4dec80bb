// Par-Part-NoLoop (the in-library GPU reference) and Par-Part-Loop against the oracle.
#pragma once
#include <catch2/catch.hpp>

#include "support/device_backend.hpp"
#include "support/strategy_check.hpp"

namespace {
namespace par_part_test {
using namespace cellint;
using namespace cellint::test;
using B = CELLINT_TEST_BACKEND;

template <class Real, int Dim, class Acc = Real>
void sweep(StrategyKind k) {
#if defined(CELLINT_TEST_GPU)
  const int big = Dim == 3 ? 16 : 64;
#else
  const int big = Dim == 3 ? 4 : 6;
#endif
  for (bool periodic : {false, true})
    for (double ppc : {1.0, 10.0, 100.0})
      for (auto dist : {Distribution::Uniform, Distribution::Clustered, Distribution::OnFaces}) {
        Case c;
        c.cells = ppc > 50 ? 3 : big;
        c.ppc = ppc;
        c.dist = dist;
        c.periodic = periodic;
        REQUIRE(check_strategy<B, Real, Dim, Acc>(k, c) == Outcome::Passed);
      }
}

TEST_CASE("par-part-noloop matches the oracle", CELLINT_TEST_TAG "[par-part-noloop]") {
  sweep<float, 3>(StrategyKind::ParPartNoLoop);
  sweep<double, 3>(StrategyKind::ParPartNoLoop);
  sweep<float, 3, double>(StrategyKind::ParPartNoLoop);
  sweep<float, 2>(StrategyKind::ParPartNoLoop);
  sweep<double, 2>(StrategyKind::ParPartNoLoop);
}

TEST_CASE("par-part-loop matches the oracle with few blocks", CELLINT_TEST_TAG "[par-part-loop]") {
  sweep<float, 3>(StrategyKind::ParPartLoop);
  sweep<double, 2>(StrategyKind::ParPartLoop);
  Tuning t;
  t.blocks = 3;
  t.threads = 96;
  Case c;
  c.cells = 4;
  c.periodic = true;
  REQUIRE(check_strategy<B, float, 3>(StrategyKind::ParPartLoop, c, t) == Outcome::Passed);
}

#if defined(CELLINT_TEST_GPU)
TEST_CASE("par-part-noloop on 32^3 cells x 10 per cell", CELLINT_TEST_TAG "[par-part-noloop][large]") {
  Case c;
  c.cells = 32;
  c.ppc = 10;
  for (bool periodic : {false, true}) {
    c.periodic = periodic;
    REQUIRE(check_strategy<B, float, 3>(StrategyKind::ParPartNoLoop, c) == Outcome::Passed);
  }
}
#endif

}  // namespace par_part_test
}  // namespace
