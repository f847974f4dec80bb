// The strategy registry: names, the parser, dispatch and strategies_for<B>(), all derived from
// the one list of strategy tags.
#include <catch2/catch.hpp>

#include <string>
#include <type_traits>
#include <vector>

#include "cellint/cellint.hpp"

using namespace cellint;

namespace {
/// Every StrategyKind, Auto included (the enum has no end marker: Auto is last).
std::vector<StrategyKind> every_kind() {
  std::vector<StrategyKind> r;
  for (int i = 0; i <= static_cast<int>(StrategyKind::Auto); ++i) r.push_back(static_cast<StrategyKind>(i));
  return r;
}
}  // namespace

TEST_CASE("every StrategyKind round-trips through to_string and strategy_from_name", "[host][registry]") {
  for (StrategyKind k : every_kind()) {
    INFO("kind " << static_cast<int>(k) << " = " << to_string(k));
    CHECK(std::string(to_string(k)) != "?");
    const auto back = strategy_from_name(to_string(k));
    REQUIRE(back.has_value());
    CHECK(*back == k);
  }
  // The names are unchanged (benchmark output, cache files and command lines use them).
  CHECK(std::string(to_string(StrategyKind::ParPartNoLoop)) == "par-part-noloop");
  CHECK(std::string(to_string(StrategyKind::ParPartLoop)) == "par-part-loop");
  CHECK(std::string(to_string(StrategyKind::ParCell)) == "par-cell");
  CHECK(std::string(to_string(StrategyKind::ParCellSM)) == "par-cell-sm");
  CHECK(std::string(to_string(StrategyKind::AllInSM)) == "all-in-sm");
  CHECK(std::string(to_string(StrategyKind::XPencil)) == "x-pencil");
  CHECK(std::string(to_string(StrategyKind::XPencilReg)) == "x-pencil-reg");
  CHECK(std::string(to_string(StrategyKind::XPencilTile)) == "x-pencil-tile");
  CHECK(std::string(to_string(StrategyKind::AllPairs)) == "all-pairs");
  CHECK(std::string(to_string(StrategyKind::CellLoop)) == "cell-loop");
  CHECK(std::string(to_string(StrategyKind::CellLoopHalf)) == "cell-loop-half");
  CHECK(std::string(to_string(StrategyKind::BruteForce)) == "brute-force");
  CHECK(std::string(to_string(StrategyKind::Auto)) == "auto");
  CHECK(strategy_from_name("auto") == StrategyKind::Auto);
}

TEST_CASE("strategy_from_name rejects unknown names", "[host][registry]") {
  for (const char* s :
       {"", "all", "x-pencil-", "X-PENCIL", " cell-loop", "cell-loop ", "cell-loop-quarter", "4", "?"}) {
    INFO("name '" << s << "'");
    CHECK_FALSE(strategy_from_name(s).has_value());
  }
}

TEST_CASE("strategy_names lists every name once, auto last", "[host][registry]") {
  const std::string names = strategy_names();
  for (StrategyKind k : every_kind()) {
    const std::string n = to_string(k);
    INFO(n << " in: " << names);
    // Each name appears as a whole entry of the comma-separated list.
    const std::string list = ", " + names + ",";
    CHECK(list.find(", " + n + ",") != std::string::npos);
  }
  CHECK(names.size() >= 4);
  CHECK(names.substr(names.size() - 4) == "auto");
}

TEST_CASE("strategies_for keeps the backends' lists and their order", "[host][registry]") {
  using K = StrategyKind;
  const std::vector<K> gpu = {K::ParPartNoLoop, K::ParPartLoop, K::ParCell,    K::ParCellSM,
                              K::AllInSM,       K::XPencil,     K::XPencilReg, K::XPencilTile,
                              K::AllPairs};
  const std::vector<K> cpu = {K::CellLoop, K::CellLoopHalf};
  CHECK(strategies_for<Host>() == cpu);
  CHECK(strategies_for<Emulated>() == gpu);
}

TEST_CASE("dispatch maps every kind but Auto to its tag", "[host][registry]") {
  for (StrategyKind k : every_kind()) {
    INFO(to_string(k));
    if (k == StrategyKind::Auto) {
      CHECK_THROWS_AS(detail::dispatch(k, [](auto) { return 0; }), InvalidArgument);
      continue;
    }
    CHECK(detail::dispatch(k, [](auto tag) { return decltype(tag)::kind; }) == k);
    CHECK(std::string(detail::dispatch(k, [](auto tag) { return decltype(tag)::name; })) == to_string(k));
  }
  // Only BruteForce is left out of Auto's candidates; the CPU strategies are exactly these three.
  for (StrategyKind k : every_kind()) {
    if (k == StrategyKind::Auto) continue;
    const bool cand = detail::dispatch(k, [](auto tag) { return decltype(tag)::auto_candidate; });
    const bool gpu = detail::dispatch(k, [](auto tag) { return decltype(tag)::gpu_like; });
    CHECK(cand == (k != StrategyKind::BruteForce));
    CHECK(gpu == (k != StrategyKind::CellLoop && k != StrategyKind::CellLoopHalf && k != StrategyKind::BruteForce));
  }
}
