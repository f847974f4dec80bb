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

// The oracle sweep of both strategies is the conformance test's (conformance_test.hpp).

TEST_CASE("par-part-loop matches the oracle with few blocks", CELLINT_TEST_TAG "[par-part-loop]") {
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
