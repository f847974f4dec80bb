#pragma once
/// @file
/// The strategy registry: one list of the strategy tags, from which the names (to_string(), the
/// one parser strategy_from_name()), dispatch of a run-time StrategyKind and strategies_for<B>()
/// (Auto's candidates, in their order) are derived. A new strategy is a tag in strategy.hpp, its
/// StrategyImpl and one entry here.

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "cellint/core/error.hpp"
#include "cellint/strategies/strategy.hpp"

namespace cellint {

namespace detail {
/// A list of types.
template <class... T>
struct TypeList {};
}  // namespace detail

/// Every strategy tag but Auto, in the order Auto times them (GPU-like strategies first, then
/// the CPU ones); strategies_for<B>() keeps this order.
using AllStrategies = detail::TypeList<ParPartNoLoop, ParPartLoop, ParCell, ParCellSM, AllInSM, XPencil, XPencilReg,
                                       XPencilTile, CellLoop, CellLoopHalf, BruteForce>;

namespace detail {
/// Calls f(S{}) for every tag S of the list, in order.
template <class... S, class F>
constexpr void for_each_strategy(TypeList<S...>, F&& f) {
  (f(S{}), ...);
}

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

/// The strategies that can exist on backend B, in the order Auto times them: the GPU-like ones
/// on GPU-like backends, the CPU ones otherwise; those that Auto does not time (BruteForce) are
/// left out. (GPU-like backends also run the CPU strategies when their memory is host memory,
/// as on Emulated.)
template <class B>
std::vector<StrategyKind> strategies_for() {
  std::vector<StrategyKind> r;
  detail::for_each_strategy(AllStrategies{}, [&](auto tag) {
    using S = decltype(tag);
    if (S::auto_candidate && S::gpu_like == B::is_gpu_like) r.push_back(S::kind);
  });
  return r;
}

}  // namespace cellint
