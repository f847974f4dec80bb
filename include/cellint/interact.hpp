#pragma once
/// @file
/// The front door: interact<Strategy>(grid, functor, out).

#include "cellint/tune/autotuner.hpp"

namespace cellint {

/// Computes, for every particle t of `grid`, the functor's accumulation over all source particles s != t within the
/// cutoff (periodic images included) and stores it at out[t] (sorted slot order, backend memory of at least grid.size()
/// elements). The pointer form does not know the size of `out`: prefer the Buffer or std::vector overloads, which check
/// it; the pointer form is for memory the caller owns and sized.
///
/// @tparam Strategy a strategy tag (ParPartNoLoop, XPencil, ... or Auto, the default: the fastest eligible strategy,
///         timed once per functor / grid shape / device and cached)
/// @throws Unsupported if an explicitly named strategy cannot run here (the reason says why)
/// @throws InvalidArgument before grid.build(), or for an Attribute handle in `f` that is unset, of another grid, or
///         dropped by a build()
template <class Strategy = Auto, class B, class R, int D, class F>
Report interact(const CellGrid<B, R, D>& grid, const F& f, typename FunctorTraits<F, R, D>::Accum* out,
                const Tuning& t = {}) {
  (void)sizeof(FunctorTraits<F, R, D>);  // readable contract errors first
  if constexpr (std::is_same<Strategy, Auto>::value) {
    detail::check_call(grid, f, "interact");  // before any tuning (interact_with checks its own calls)
    return Autotuner::instance().run(grid, f, out, t);
  } else {
    return interact_with(Strategy::kind, grid, f, out, t);
  }
}

/// interact() into a backend Buffer of at least grid.size() elements (checked).
template <class Strategy = Auto, class B, class R, int D, class F>
Report interact(const CellGrid<B, R, D>& grid, const F& f, Buffer<B, typename FunctorTraits<F, R, D>::Accum>& out,
                const Tuning& t = {}) {
  detail::expect_room(out.size(), grid.size(), "interact", "the output buffer");
  return interact<Strategy>(grid, f, out.data(), t);
}

/// interact() into a host vector of at least grid.size() elements (checked; backends whose memory is host memory: Host,
/// Emulated).
template <class Strategy = Auto, class B, class R, int D, class F>
Report interact(const CellGrid<B, R, D>& grid, const F& f, std::vector<typename FunctorTraits<F, R, D>::Accum>& out,
                const Tuning& t = {}) {
  static_assert(!B::device_memory, "cellint::interact(std::vector): this backend computes in device memory; "
                "pass a cellint::Buffer (or a device pointer)");
  detail::expect_room(out.size(), grid.size(), "interact", "the output vector");
  return interact<Strategy>(grid, f, out.data(), t);
}

}  // namespace cellint
