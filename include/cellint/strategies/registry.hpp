#pragma once
/// @file
/// The strategy registry: one list of the strategy tags, from which the names (to_string(), the one parser
/// strategy_from_name()), dispatch of a run-time StrategyKind, strategies_for<B>() and Auto's candidates (each tag's
/// candidates()) are derived. A new strategy is one header (tag + policy + documentation; its kernel and plan in
/// `strategies/detail/<name>/`), one StrategyKind value and one entry in AllStrategies.

#include <algorithm>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "cellint/core/error.hpp"
#include "cellint/strategies/all_in_sm.hpp"
#include "cellint/strategies/all_pairs.hpp"
#include "cellint/strategies/brute_force.hpp"
#include "cellint/strategies/cell_loop.hpp"
#include "cellint/strategies/par_cell.hpp"
#include "cellint/strategies/par_part.hpp"
#include "cellint/strategies/strategy.hpp"
#include "cellint/strategies/x_pencil.hpp"
#include "cellint/strategies/x_pencil_reg.hpp"
#include "cellint/strategies/x_pencil_tile.hpp"

namespace cellint {

namespace detail {
/// A list of types.
template <class... T>
struct TypeList {};
}  // namespace detail

/// Every strategy tag but Auto, in the order Auto times them (GPU-like strategies first, then the CPU ones);
/// strategies_for<B>() keeps this order.
using AllStrategies = detail::TypeList<ParPartNoLoop, ParPartLoop, ParCell, ParCellSM, AllInSM, XPencil, XPencilReg,
                                       XPencilTile, AllPairs, CellLoop, CellLoopHalf, BruteForce>;

namespace detail {
/// Calls f(S{}) for every tag S of the list, in order.
template <class... S, class F>
constexpr void for_each_strategy(TypeList<S...>, F&& f) {
  (f(S{}), ...);
}

/// Whether the tags of the list have distinct kinds and distinct names, and none is Auto's.
template <class... S>
constexpr bool distinct(TypeList<S...>) {
  const StrategyKind kinds[] = {S::kind...};
  const char* const names[] = {S::name...};
  constexpr int n = sizeof...(S);
  for (int i = 0; i < n; ++i) {
    if (kinds[i] == StrategyKind::Auto) return false;
    for (int j = i + 1; j < n; ++j) {
      if (kinds[i] == kinds[j]) return false;
      std::string_view a = names[i], b = names[j];
      if (a == b) return false;
    }
  }
  return true;
}
static_assert(distinct(AllStrategies{}), "cellint: every registered strategy needs its own StrategyKind and name");

/// op(S{}) for the tag S of the list whose kind is `k`.
template <class Op, class S, class... Rest>
decltype(auto) dispatch_in(StrategyKind k, Op& op, TypeList<S, Rest...>) {
  if (k == S::kind) return op(S{});
  if constexpr (sizeof...(Rest) > 0) {
    return dispatch_in(k, op, TypeList<Rest...>{});
  } else {
    throw InvalidArgument("cellint: Auto cannot be dispatched directly");
  }
}

/// The one place that maps a run-time StrategyKind to the compile-time strategy: op(tag).
/// @throws InvalidArgument for Auto
template <class Op>
decltype(auto) dispatch(StrategyKind k, Op&& op) {
  return dispatch_in(k, op, AllStrategies{});
}
}  // namespace detail

/// Readable name of a strategy (for logs, benchmark output and the cache file): the tag's `name`.
inline const char* to_string(StrategyKind k) {
  if (k == Auto::kind) return Auto::name;
  const char* r = "?";
  detail::for_each_strategy(AllStrategies{}, [&](auto tag) {
    if (k == decltype(tag)::kind) r = decltype(tag)::name;
  });
  return r;
}

/// The strategy named `name` (a to_string() name, "auto" included); nullopt for anything else.
inline std::optional<StrategyKind> strategy_from_name(std::string_view name) {
  if (name == Auto::name) return StrategyKind::Auto;
  std::optional<StrategyKind> r;
  detail::for_each_strategy(AllStrategies{}, [&](auto tag) {
    if (name == decltype(tag)::name) r = decltype(tag)::kind;
  });
  return r;
}

/// The names strategy_from_name() reads, comma-separated, "auto" last (for error messages).
inline std::string strategy_names() {
  std::string r;
  detail::for_each_strategy(AllStrategies{}, [&](auto tag) { (r += decltype(tag)::name) += ", "; });
  return r + Auto::name;
}

/// The strategies that can exist on backend B, in the order Auto times them: the GPU-like ones on GPU-like backends,
/// the CPU ones otherwise; those that Auto does not time (BruteForce) are left out. (GPU-like backends also run the CPU
/// strategies when their memory is host memory, as on Emulated.)
template <class B>
std::vector<StrategyKind> strategies_for() {
  std::vector<StrategyKind> r;
  detail::for_each_strategy(AllStrategies{}, [&](auto tag) {
    using S = decltype(tag);
    if (S::auto_candidate && S::gpu_like == B::is_gpu_like) r.push_back(S::kind);
  });
  return r;
}

/// Whether Auto times strategy `k` for these targets and sources (its tag's auto_eligible(); Auto also asks
/// supports()).
template <class Real, int Dim>
bool auto_eligible(StrategyKind k, const GridView<Real, Dim>& targets, const GridView<Real, Dim>& sources) {
  bool r = false;
  detail::for_each_strategy(AllStrategies{}, [&](auto tag) {
    if (k == decltype(tag)::kind) r = decltype(tag)::auto_eligible(targets, sources);
  });
  return r;
}

/// Auto's candidates on backend B, in the order it times them: every strategy's first shape (the rule's), then the
/// other shapes of each tag's candidates(); the half-shell cell loop before the cell loop.
template <class B>
std::vector<std::pair<StrategyKind, Tuning>> auto_candidates(const Tuning& user) {
  std::vector<std::pair<StrategyKind, Tuning>> first, more;
  detail::for_each_strategy(AllStrategies{}, [&](auto tag) {
    using S = decltype(tag);
    if (!S::auto_candidate || S::gpu_like != B::is_gpu_like) return;
    const std::vector<Tuning> shapes = S::candidates(user);
    for (std::size_t i = 0; i < shapes.size(); ++i) (i == 0 ? first : more).emplace_back(S::kind, shapes[i]);
  });
  std::stable_partition(first.begin(), first.end(),
                        [](const std::pair<StrategyKind, Tuning>& c) { return c.first == StrategyKind::CellLoopHalf; });
  first.insert(first.end(), more.begin(), more.end());
  return first;
}

}  // namespace cellint
