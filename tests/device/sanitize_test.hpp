// One small case per GPU strategy, float and double, open and periodic: the set that
// compute-sanitizer (memcheck, racecheck) runs over on the GPU (tools/device_check.sh).
#pragma once
#include <catch2/catch.hpp>

#include "support/device_backend.hpp"
#include "support/strategy_check.hpp"

namespace {
namespace sanitize_test {
using namespace cellint;
using namespace cellint::test;
using B = CELLINT_TEST_BACKEND;

TEST_CASE("every GPU strategy on a small grid", CELLINT_TEST_TAG "[sanitize]") {
  for (StrategyKind k : strategies_for<B>())
    for (bool periodic : {false, true}) {
      Case c;
      c.cells = 4;
      c.ppc = 6;
      c.periodic = periodic;
      c.dist = Distribution::Clustered;
      c.ppc = 3;  // dense cells of ~60: every shared-memory strategy still fits
      CHECK(check_strategy<B, float, 3>(k, c) != Outcome::Unsupported);
      c.dist = Distribution::Uniform;
      c.ppc = 6;
      CHECK(check_strategy<B, double, 2>(k, c) != Outcome::Unsupported);
    }
}

}  // namespace sanitize_test
}  // namespace
