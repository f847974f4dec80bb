#pragma once
// The definitions of the calls declared in grid.hpp: each runs one built-in functor through
// cellint::interact_with() and writes its results in the user's order.

#include "cpu_pairs.hpp"
#include "grid.hpp"

namespace cellint::py {

/// Runs `f` with the request's strategy and options into a sorted Buffer, then `put` writes the user-order outputs.
template <class B, class R, int D, class F, class Put>
CallReport run_functor(Grid<B, R, D>& g, const Request& r, const F& f, const Put& put) {
  using Accum = typename FunctorTraits<F, R, D>::Accum;
  const Index n = g.grid.size();
  Accum* out = g.template accumulator_space<Accum>(n);
  Tuning t;
  t.statistics = r.statistics;
  t.reproducible = r.reproducible;
  const Report rep = interact_with(strategy_named(r.strategy), g.grid, f, out, t);
  detail::parallel_for<B>(n, WriteUser<Accum, Put>{out, g.grid.original_index(), put}, g.grid.stream());
  B::synchronize(g.grid.stream());
  return flatten(rep);
}

template <class B, class R, int D>
CallReport call_lennard_jones(Grid<B, R, D>& g, const Request& r) {
  const auto lj = LennardJones<R, D>::make(static_cast<R>(r.epsilon), static_cast<R>(r.sigma), g.grid.cutoff(),
                                           r.shifted, static_cast<R>(r.softening));
  return run_functor(g, r, lj,
                     PutForces<R, D>{static_cast<R*>(r.force), static_cast<R*>(r.energy), static_cast<R*>(r.virial)});
}

template <class B, class R, int D>
CallReport call_count(Grid<B, R, D>& g, const Request& r) {
  return run_functor(g, r, NeighborCount<R, D>{},
                     PutScalar<std::int32_t, R>{static_cast<std::int32_t*>(r.scalar), nullptr, R(0), R(0)});
}

template <class B, class R, int D>
CallReport call_density(Grid<B, R, D>& g, const Request& r) {
  const auto w = SmoothingKernel<R, D>::make(r.kernel, r.h);
  const R w0 = r.self_term ? w(R(0)) : R(0);
  R* out = static_cast<R*>(r.scalar);
  if (r.per_particle) {
    CELLINT_EXPECTS(g.handles[0].has_value(),
                    "cellint.Density: the grid's masses were dropped (a build() with another particle "
                    "count); attach('mass', values) again");
    Density<R, D, true> f;
    f.w = w;
    f.values = *g.handles[0];
    return run_functor(g, r, f, PutScalar<R, R>{out, g.grid.attribute(*g.handles[0]), R(0), w0});
  }
  Density<R, D, false> f;
  f.w = w;
  f.mass = static_cast<R>(r.mass);
  return run_functor(g, r, f, PutScalar<R, R>{out, nullptr, f.mass, w0});
}

template <class B, class R, int D>
CallReport call_soft_sphere(Grid<B, R, D>& g, const Request& r) {
  const PutForces<R, D> put{static_cast<R*>(r.force), static_cast<R*>(r.energy), nullptr};
  auto set = [&](auto& f) {
    f.epsilon = static_cast<R>(r.epsilon);
    f.sigma = static_cast<R>(r.sigma);
    f.alpha = static_cast<R>(r.alpha);
  };
  if (r.per_particle) {
    CELLINT_EXPECTS(g.handles[1].has_value(),
                    "cellint.SoftSphere(sigma=None): the grid's radii were dropped (a build() with "
                    "another particle count); attach('radius', values) again");
    SoftSphere<R, D, true> f;
    set(f);
    f.values = *g.handles[1];
    return run_functor(g, r, f, put);
  }
  SoftSphere<R, D, false> f;
  set(f);
  return run_functor(g, r, f, put);
}

template <class B, class R, int D>
std::uint64_t count_pairs_gpu(Grid<B, R, D>& g);
template <class B, class R, int D>
void fill_pairs_gpu(Grid<B, R, D>& g, const PairsOut& o);

/// The GPU pair search runs one thread-per-target strategy in both passes: its pair term is called once for each
/// candidate of each real target, which the writer's side effects need. (The CPU has its own search, cpu_pairs.hpp.)
using PairStrategy = ParPartLoop;

template <class B, class R, int D>
std::uint64_t call_count_pairs(Grid<B, R, D>& g, double cutoff, bool half) {
  const auto cut = static_cast<R>(cutoff);
  // the largest r^2 bound whose every distance below it rounds to less than the cutoff: d < cutoff holds for the
  // distances returned, not only for the squares tested
  R rc2 = cut * cut;
  while (rc2 > R(0) && std::sqrt(std::nextafter(rc2, R(0))) >= cut) rc2 = std::nextafter(rc2, R(0));
  g.rule.rc2 = rc2;
  g.rule.half = half;
  if constexpr (std::is_same<B, Host>::value)
    g.pair_total = g.cpu_pairs.find(g.grid.view(), g.rule.rc2, half);
  else
    g.pair_total = count_pairs_gpu(g);
  g.pairs_counted = true;
  return g.pair_total;
}

/// The GPU's first pass: each target's count in the user's order, the rows' offsets and the total.
template <class B, class R, int D>
std::uint64_t count_pairs_gpu(Grid<B, R, D>& g) {
  const Index n = g.grid.size();
  g.pair_count.resize(static_cast<std::size_t>(std::max<Index>(n, 1)));
  g.pair_offset.resize(static_cast<std::size_t>(std::max<Index>(n, 1)));
  PairCounter<R, D> f;
  static_cast<PairRule<R, D>&>(f) = g.rule;
  g.pair_rows.resize(static_cast<std::size_t>(std::max<Index>(n, 1)));
  interact<PairStrategy>(g.grid, f, g.pair_rows.data());
  // the counts in the user's order: row t of the output is user particle t
  detail::parallel_for<B>(
      n, detail::ScatterKernel<std::uint32_t>{g.pair_rows.data(), g.grid.original_index(), g.pair_count.data()},
      g.grid.stream());
  std::uint64_t bound = static_cast<std::uint64_t>(n) * static_cast<std::uint64_t>(g.grid.max_per_cell());
  for (int d = 0; d < D; ++d) bound *= 3;
  g.small.resize(2);
  return exclusive_offsets<B>(g.pair_count.data(), g.pair_offset.data(), n, bound, g.small.data(), g.grid.stream());
}

template <class B, class R, int D>
void call_fill_pairs(Grid<B, R, D>& g, const PairsOut& o) {
  if constexpr (std::is_same<B, Host>::value)
    g.cpu_pairs.write(g.grid.view(), g.wraps.data(), o);
  else
    fill_pairs_gpu(g, o);
  g.pairs_counted = false;
}

/// The GPU's second pass (packed slots into each target's row), the row check, then a thread per pair writes the
/// outputs.
template <class B, class R, int D>
void fill_pairs_gpu(Grid<B, R, D>& g, const PairsOut& o) {
  const Index n = g.grid.size();
  const std::uint64_t total = g.pair_total;
  PairWriter<R, D> f;
  static_cast<PairRule<R, D>&>(f) = g.rule;
  f.offset = g.pair_offset.data();
  f.count = g.pair_count.data();
  g.pair_packed.resize(static_cast<std::size_t>(std::max<std::uint64_t>(total, 1)));
  f.packed = g.pair_packed.data();
  g.pair_rows.resize(static_cast<std::size_t>(std::max<Index>(n, 1)));
  interact<PairStrategy>(g.grid, f, g.pair_rows.data());
  // every row must be exactly as long as counted: the two passes share the rule and the strategy
  int* bad = reinterpret_cast<int*>(g.small.data());
  B::fill_bytes(bad, 0xff, sizeof(int), g.grid.stream());  // -1
  detail::parallel_for<B>(n, RowCheck{g.pair_rows.data(), g.pair_count.data(), g.grid.original_index(), bad},
                          g.grid.stream());
  int first = -1;
  B::copy(&first, bad, sizeof(int), CopyKind::DeviceToHost, g.grid.stream());
  B::synchronize(g.grid.stream());
  if (first >= 0)  // (before the expansion, which would read the rows' unwritten words)
    throw Error(detail::cat("cellint.neighbor_pairs: particle ", first,
                            " has another number of pairs in the second "
                            "pass than in the first; please report this"));
  PairExpand<R, D> e{};
  e.packed = g.pair_packed.data();
  e.original = g.grid.original_index();
  const auto& box = g.grid.geometry().box;
  for (int d = 0; d < D; ++d) {
    e.pos[d] = g.grid.positions(d);
    e.length[d] = box.lengths[d];
    e.half_length[d] = box.periodic[d] ? R(0.5) * box.lengths[d] : R(0);
  }
  e.i = o.i;
  e.j = o.j;
  e.distance = static_cast<R*>(o.distance);
  e.vector = static_cast<R*>(o.vector);
  e.shift = o.shift;
  e.wraps = g.wraps.data();
  e.n = n;
  const std::uint64_t step = std::uint64_t(1) << 30;  // (parallel_for counts in 32-bit indices)
  for (e.base = 0; e.base < total; e.base += step)
    detail::parallel_for<B>(static_cast<Index>(std::min(step, total - e.base)), e, g.grid.stream());
  B::synchronize(g.grid.stream());
}

}  // namespace cellint::py

/// Instantiates every call of one group for backend B, real R, dimension D.
#define CELLINT_PY_INSTANTIATE(B, R, D, GROUP) CELLINT_PY_INSTANTIATE_##GROUP(B, R, D)
#define CELLINT_PY_INSTANTIATE_forces(B, R, D)                                                   \
  template cellint::py::CallReport cellint::py::call_lennard_jones(cellint::py::Grid<B, R, D>&,  \
                                                                   const cellint::py::Request&); \
  template cellint::py::CallReport cellint::py::call_soft_sphere(cellint::py::Grid<B, R, D>&,    \
                                                                 const cellint::py::Request&);
#define CELLINT_PY_INSTANTIATE_scalars(B, R, D)                                                                       \
  template cellint::py::CallReport cellint::py::call_count(cellint::py::Grid<B, R, D>&, const cellint::py::Request&); \
  template cellint::py::CallReport cellint::py::call_density(cellint::py::Grid<B, R, D>&, const cellint::py::Request&);
#define CELLINT_PY_INSTANTIATE_pairs(B, R, D)                                                      \
  template std::uint64_t cellint::py::call_count_pairs(cellint::py::Grid<B, R, D>&, double, bool); \
  template void cellint::py::call_fill_pairs(cellint::py::Grid<B, R, D>&, const cellint::py::PairsOut&);
