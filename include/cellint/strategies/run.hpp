#pragma once
/// @file
/// Running a named strategy: supports() and interact_with(), the front door below Auto. The only place where a
/// strategy's "no" becomes an Unsupported exception.

#include "cellint/core/pair_functor.hpp"
#include "cellint/grid/cell_grid.hpp"
#include "cellint/strategies/registry.hpp"

namespace cellint {

namespace detail {
/// What every interaction call checks first: a built grid, and the Attribute handles that the functor holds belong to
/// it (cheap: a scan of the functor's bytes).
template <class B, class R, int D, class F>
void check_call(const CellGrid<B, R, D>& grid, const F& f, const char* who) {
  CELLINT_EXPECTS(grid.built(), "cellint::", who, ": the grid holds no binned particles; call grid.build() first");
  grid.check_functor_attributes(f);
}

/// What a two-set call checks first: both grids built, and each Attribute handle of the functor attached to one of
/// them (and, for a functor that reads both sides with load(), mirrored by an attribute of that type in the other).
template <class B, class R, int D, class F>
void check_sets(const CellGrid<B, R, D>& targets, const CellGrid<B, R, D>& sources, const F& f) {
  CELLINT_EXPECTS(targets.built(), "cellint::interact: the target grid holds no binned particles; call build() first");
  CELLINT_EXPECTS(sources.built(), "cellint::interact: the source grid holds no binned particles; call build() first");
  targets.check_functor_attributes(f, &sources, !loads_sources_apart<F, R, D>);
}

/// The plan strategy S makes for `grid` with itself on a device of properties `p`.
template <class S, class B, class R, int D, class F>
typename StrategyImpl<S>::Plan plan_for(const CellGrid<B, R, D>& grid, const F& f, const DeviceProperties& p,
                                        const Tuning& t = {}) {
  return StrategyImpl<S>::plan(make_call(grid, p), f, t);
}

/// The call of grid `targets` with grid `sources` (one set when they are the same object), for device properties `p`:
/// the seam of two-set interactions.
/// @throws InvalidArgument when the two grids do not share one cell geometry
template <class B, class R, int D>
Call<B, R, D> make_call(const CellGrid<B, R, D>& targets, const CellGrid<B, R, D>& sources, const DeviceProperties& p) {
  Call<B, R, D> c = make_call(targets, p);
  if (&targets == &sources) return c;
  const GridGeometry<R, D>& a = targets.geometry();
  const GridGeometry<R, D>& b = sources.geometry();
  bool same = a.cutoff == b.cutoff;
  for (int d = 0; d < D; ++d)
    same = same && a.cells[d] == b.cells[d] && a.box.origin[d] == b.box.origin[d] &&
           a.box.lengths[d] == b.box.lengths[d] && a.box.periodic[d] == b.box.periodic[d];
  CELLINT_EXPECTS(same, "cellint::interact: targets and sources must be grids over one box with one cutoff and one "
                  "cell size (same cells per axis, origin, lengths, periodicity); build both with the same box, "
                  "cutoff and GridOptions::min_cell_width");
  c.views.sources = sources.view();
  c.views.same = false;
  return c;
}

/// Plans strategy S for call `c` once and, when the plan says yes, runs it (nothing to launch without targets) and
/// fills `rep`. When it says no, runs nothing, returns false and leaves the reason in `why` (if given). The one place
/// a strategy is planned and run: the front door below and Auto's cached decisions use it.
template <class S, class B, class R, int D, class F>
bool try_run(const Call<B, R, D>& c, const F& f, typename FunctorTraits<F, R, D>::Accum* out, const Tuning& t,
             Report& rep, std::string* why = nullptr) {
  auto plan = StrategyImpl<S>::plan(c, f, t);
  if (!plan.support.ok) {
    if (why) *why = std::move(plan.support.reason);
    return false;
  }
  if (c.targets() > 0) StrategyImpl<S>::run(c, f, out, plan);
  rep.strategy = S::kind;
  rep.shape = plan.shape;
  rep.tuning_ms = 0;
  return true;
}

/// try_run() for strategy `k` chosen at run time (not Auto).
template <class B, class R, int D, class F>
bool try_run_kind(StrategyKind k, const Call<B, R, D>& c, const F& f, typename FunctorTraits<F, R, D>::Accum* out,
                  const Tuning& t, Report& rep) {
  return dispatch(k, [&](auto tag) { return try_run<decltype(tag)>(c, f, out, t, rep); });
}

/// try_run(), the front door of every named strategy: a "no" becomes Unsupported here.
/// @throws Unsupported with the strategy's reason when it cannot run
template <class S, class B, class R, int D, class F>
Report run_strategy(const Call<B, R, D>& c, const F& f, typename FunctorTraits<F, R, D>::Accum* out, const Tuning& t) {
  Report rep;
  std::string why;
  if (!try_run<S>(c, f, out, t, rep, &why)) throw Unsupported(cat("cellint: strategy ", S::name, " cannot run: ", why));
  return rep;
}

/// Whether strategy `k` (not Auto) can run call `c`, and why not.
template <class B, class R, int D, class F>
Support plan_support(StrategyKind k, const Call<B, R, D>& c, const F& f, const Tuning& t) {
  return dispatch(k, [&](auto tag) { return StrategyImpl<decltype(tag)>::plan(c, f, t).support; });
}

/// Runs strategy `k` (not Auto) for call `c`: the one dispatch below the front door (interact.hpp) and Auto.
/// @throws Unsupported with the strategy's reason when it cannot run
template <class B, class R, int D, class F>
Report run_kind(StrategyKind k, const Call<B, R, D>& c, const F& f, typename FunctorTraits<F, R, D>::Accum* out,
                const Tuning& t) {
  return dispatch(k, [&](auto tag) { return run_strategy<decltype(tag)>(c, f, out, t); });
}
}  // namespace detail

/// Whether strategy `k` can run `f` on `grid` with tuning `t`, and why not.
template <class B, class R, int D, class F>
Support supports(StrategyKind k, const CellGrid<B, R, D>& grid, const F& f, const Tuning& t = {}) {
  if (k == StrategyKind::Auto) return Support::yes();
  return detail::plan_support(k, detail::make_call(grid, B::properties()), f, t);
}

/// Whether strategy `k` can run `f` for the targets of one grid against the sources of another, and why not.
/// @throws InvalidArgument when the two grids do not share one cell geometry
template <class B, class R, int D, class F>
Support supports(StrategyKind k, const CellGrid<B, R, D>& targets, const CellGrid<B, R, D>& sources, const F& f,
                 const Tuning& t = {}) {
  if (k == StrategyKind::Auto) return Support::yes();
  return detail::plan_support(k, detail::make_call(targets, sources, B::properties()), f, t);
}

}  // namespace cellint
