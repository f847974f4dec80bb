#pragma once
/// @file
/// Running a named strategy: supports() and interact_with(), the front door below Auto. The only
/// place where a strategy's "no" becomes an Unsupported exception.

#include "cellint/core/pair_functor.hpp"
#include "cellint/grid/cell_grid.hpp"
#include "cellint/strategies/registry.hpp"

namespace cellint {

namespace detail {
/// What every interaction call checks first: a built grid, and the Attribute handles that the
/// functor holds belong to it (cheap: a scan of the functor's bytes).
template <class B, class R, int D, class F>
void check_call(const CellGrid<B, R, D>& grid, const F& f, const char* who) {
  CELLINT_EXPECTS(grid.built(), "cellint::", who, ": the grid holds no binned particles; call grid.build() first");
  grid.check_functor_attributes(f);
}

/// The plan strategy S makes for `grid` with itself on a device of properties `p`.
template <class S, class B, class R, int D, class F>
typename StrategyImpl<S>::Plan plan_for(const CellGrid<B, R, D>& grid, const F& f, const DeviceProperties& p,
                                        const Tuning& t = {}) {
  return StrategyImpl<S>::plan(make_call(grid, p), f, t);
}

/// Plans strategy S for call `c` once, and runs it when it can (nothing to launch without
/// targets). The front door of every named strategy.
/// @throws Unsupported with the strategy's reason when it cannot run
template <class S, class B, class R, int D, class F>
Report run_strategy(const Call<B, R, D>& c, const F& f, typename FunctorTraits<F, R, D>::Accum* out,
                    const Tuning& t) {
  const auto plan = StrategyImpl<S>::plan(c, f, t);
  if (!plan.support.ok) throw Unsupported(cat("cellint: strategy ", S::name, " cannot run: ", plan.support.reason));
  if (c.targets() > 0) StrategyImpl<S>::run(c, f, out, plan);
  Report rep;
  rep.strategy = S::kind;
  rep.shape = plan.shape;
  return rep;
}
}  // namespace detail

/// Whether strategy `k` can run `f` on `grid` with tuning `t`, and why not.
template <class B, class R, int D, class F>
Support supports(StrategyKind k, const CellGrid<B, R, D>& grid, const F& f, const Tuning& t = {}) {
  if (k == StrategyKind::Auto) return Support::yes();
  const auto c = detail::make_call(grid, B::properties());
  return detail::dispatch(k, [&](auto tag) { return detail::StrategyImpl<decltype(tag)>::plan(c, f, t).support; });
}

/// Runs strategy `k` (not Auto): for every particle t, out[t] = the accumulation over its
/// neighbours within the cutoff (sorted order; see CellGrid::to_user_order). Asynchronous on
/// GPU backends: synchronise the grid's stream before reading `out` on the host.
/// @throws Unsupported with the strategy's reason when it cannot run on this grid/device
template <class B, class R, int D, class F>
Report interact_with(StrategyKind k, const CellGrid<B, R, D>& grid, const F& f,
                     typename FunctorTraits<F, R, D>::Accum* out, const Tuning& t = {}) {
  detail::check_call(grid, f, "interact");
  const auto c = detail::make_call(grid, B::properties());
  return detail::dispatch(k, [&](auto tag) { return detail::run_strategy<decltype(tag)>(c, f, out, t); });
}

}  // namespace cellint
