#pragma once
// X-pencil: kernel and plan (see strategies/x_pencil.hpp).

#include <algorithm>
#include <string>

#include "cellint/strategies/detail/pencil.hpp"
#include "cellint/strategies/x_pencil.hpp"  // the tag and its policy
#include "cellint/strategies/strategy.hpp"

namespace cellint::detail {

/// Kernel `x_pencil_interact`: one block per X-pencil of `length` target cells (grid-stride).
///
/// Phases per pencil (and per pass of block_size targets when a pencil holds more targets than threads; thread i's
/// target is the i-th particle of the pencil's cells x0..x1-1, one contiguous range): for the own row first and its Y/Z
/// neighbours after it, every thread loads its share of the row's pencil of cells x0-1..x1 (one contiguous range, plus
/// the wrapped ghost cell at a periodic X end) into registers, adding the image shift once per copied particle; then
/// computes on the previously staged pencil (so the loads are in flight meanwhile), stores what it loaded into shared
/// memory, barrier. After the own row's barrier each thread reads its target (position, payload) from shared memory and
/// finds its cell; the computation on a pencil is one loop over the window of the target's three source cells (split
/// around the target itself in the own row), no per-pair index arithmetic.
///
/// Shared memory (PencilLayout): `buffers` x M_C x (L+2) staged particles (StagedParticle: position and payload, padded
/// for vector loads), then `buffers` x (L+3) local cell boundaries. Barriers: one per staged pencil with two buffers
/// (the store goes to the buffer nobody reads); with one buffer a second one before each store.
template <class F, class Real, int Dim, bool Same = true>
struct XPencilInteract {
  using T = FunctorTraits<F, Real, Dim>;
  using Rec = StagedParticle<Real, Dim, typename T::SourcePayload>;  // staged sources
  PairViews<Real, Dim> views;  ///< targets and sources
  F f;                         ///< the pair functor
  typename T::Accum* out;      ///< one accumulator per target slot
  PencilLayout layout;         ///< staging buffers and boundaries
  Index length;     ///< L: target cells per pencil
  Index pencils_x;  ///< pencils per row: ceil(nx / L)
  Index pencils;    ///< pencils in the grid

  template <class Block>
  CELLINT_HD void operator()(Block& b) const {
    constexpr int rows_around = Dim == 3 ? 9 : 3;  // the own row and its Y/Z neighbours
    const GridView<Real, Dim>& tv = views.targets;
    const GridView<Real, Dim>& v = views.sources;
    unsigned char* base = b.template shared<unsigned char>();
    const bool two = layout.buffers == 2;
    const Index tid = static_cast<Index>(b.thread_rank());
    const Index bs = static_cast<Index>(b.block_size());
    const Index nx = v.geo.cells[0], ny = v.geo.cells[1];
    const Real rc2 = cutoff2(v.geo);
    int cur = 0;
    for (Index p = static_cast<Index>(b.block_rank()); p < pencils;
         p += static_cast<Index>(b.grid_size())) {
      const Index row = p / pencils_x;
      const Index x0 = (p - row * pencils_x) * length;
      const Index x1 = x0 + length < nx ? x0 + length : nx;
      const Index len = x1 - x0;
      const Index y = row % ny, z = row / ny;
      const Index* tcs = tv.cell_start + row * nx;
      const Index first = tcs[x0];
      const Index count = tcs[x1] - first;
      for (Index pass = 0; pass < count; pass += bs) {  // block-uniform trip count
        const Index t = first + pass + tid;
        const bool active = pass + tid < count;
        Vec<Real, Dim> xt{};
        typename T::Payload pt{};
        auto acc = T::init(f);
        Index lx = 0, self = -1;  // the target's local cell and its slot in the own pencil (one set)
        if constexpr (!Same) {  // two sets: the target comes from its own view
          if (active) {
            xt = tv.position(t);
            pt = T::load(f, tv, t);
            lx = last_le(tcs, x0, x1 - 1, t) - x0 + 1;
          }
        }
        // Uses the pencil staged in buffer `slot`; in the own row, skips the target itself.
        auto compute = [&](int slot, bool own) {
          if (!active) return;
          const Rec* buf = layout.buffer<Rec>(base, slot);
          const Index* starts = layout.starts<Rec>(base, slot);
          const Index lo = starts[lx - 1], hi = starts[lx + 2];
          if (Same && own)  // the own row holds the target itself
            accumulate_around<T>(f, buf, lo, hi, self, xt, pt, rc2, acc);
          else
            accumulate<T>(f, buf, lo, hi, xt, pt, rc2, acc);
        };
        bool pending = false, pending_own = false;
        int pending_slot = 0;
        for (int j = 0; j < rows_around; ++j) {
          const int k = (j + rows_around / 2) % rows_around;  // j == 0: the own row
          Index nrow = 0;
          Vec<Real, Dim> shift;
          const Index dz = Dim == 3 ? k / 3 - 1 : 0;
          if (!neighbor_row(v.geo, y + (k % 3 - 1), z + dz, nrow, shift)) continue;  // block-uniform
          const Index* cs = v.cell_start + nrow * nx;
          const PencilSpan s = pencil_span(v.geo, cs, x0, x1);
          PencilCopy<Rec, pencil_prefetch> copy;
          copy.template load<T>(b, v, f, s, cs, x0, len, shift, Index(0), Index(0));
          if (pending) compute(pending_slot, pending_own);  // overlaps the loads above
          if (pending && !two) b.sync();  // one buffer: used up before overwriting
          Rec* buf = layout.buffer<Rec>(base, cur);
          Index* starts = layout.starts<Rec>(base, cur);
          copy.template store<T>(b, v, f, s, cs, x0, len, shift, Index(0), Index(0), buf, starts);
          b.sync();
          // In one set the own row holds the target (unshifted): read it from there, find its cell.
          if (Same && j == 0 && active) {
            self = s.left_count + (t - s.mid_begin);
            const Rec r = buf[self];
            for (int d = 0; d < Dim; ++d) xt[d] = r.x[d];
            if constexpr (loads_sources_apart<F, Real, Dim>)
              pt = T::load(f, tv, t);  // the staged record is the source's (load_source)
            else if constexpr (!T::position_only)
              pt = r.p;
            lx = staged_cell(starts, len, self);
          }
          pending = true;
          pending_own = j == 0;
          pending_slot = cur;
          if (two) cur ^= 1;
        }
        if (pending) {
          compute(pending_slot, pending_own);
          if (!two) b.sync();  // two buffers: the next staging goes to the other buffer
        }
        if (active) out[t] = acc;
      }
    }
  }
};

/// The launch-shape rule of strategies/x_pencil.hpp.
template <class B, class R, int D, class F>
PencilPlan plan_x_pencil(const Call<B, R, D>& c, const F& f, const Tuning& t) {
  using K = XPencilInteract<F, R, D>;
  using Rec = typename K::Rec;
  PencilPlan plan;
  const DeviceProperties& p = c.props;
  if (!(plan.support = pencil_checks<B>("x-pencil", t, p)).ok) return plan;
  const Index nx = c.geometry().cells[0];
  const Index rows = c.geometry().cell_count() / nx;
  const Index mc = c.source_max_per_cell();
  const double mean = c.mean_targets_per_cell();
  const unsigned cap = c.views.same ? pencil_thread_cap<B>(p, K{c.views, f, nullptr, {}, 1, 1, 0})
                                    : pencil_thread_cap<B>(p, XPencilInteract<F, R, D, false>{c.views, f, nullptr, {}, 1, 1, 0});
  const PencilFit fit = PencilFit::make<Rec>(t, p, mc);
  Index length = t.pencil_length > 0 ? std::min<Index>(t.pencil_length, nx) : 1;
  if (fit.fit1_max < length) {
    const std::string need =
        t.pencil_length > 0
            ? cat("x-pencil: Tuning::pencil_length = ", length, " needs ", length + 2, " cells x M_C = ", mc,
                  " particles x ", sizeof(Rec), " bytes = ")
            : cat("x-pencil: one pencil of 3 cells (1 target cell and 2 ghosts) with M_C = ", mc,
                  " particles per cell needs 3 x ", mc, " x ", sizeof(Rec), " bytes + boundaries = ");
    return refuse(plan, pencil_too_big(need, PencilLayout::make<Rec>(length, mc, 1).bytes, fit.budget_max, t,
                                       "streams cells (par-cell-sm, par-part-noloop)"));
  }
  int buffers = fit.buffers_for(length);
  if (t.pencil_length == 0) {
    // The longest pencil whose expected targets fit the preferred block size (at least one cell) and the budget,
    // balanced over the multiprocessors.
    const unsigned pref = pencil_preferred<B>(cap);
    Index want = 1;
    while (want < nx && pencil_expected_targets(mean, want + 1, mc) <= static_cast<long>(pref)) ++want;
    buffers = fit.default_buffers();
    length = pencil_balance(std::min(want, fit.longest()), nx, rows, p.multiprocessors);
  }
  const unsigned threads =
      t.threads ? std::min(t.threads, cap) : pencil_round_threads<B>(pencil_expected_targets(mean, length, mc), cap);
  plan.finish(nx, rows, length, PencilLayout::make<Rec>(length, mc, buffers), threads, t);
  return plan;
}

template <>
struct StrategyImpl<XPencil> {
  using Plan = PencilPlan;  ///< support, shape, layout, pencil length
  /// The rule of strategies/x_pencil.hpp; no only when one pencil of L+2 cells of M_C particles does not fit the
  /// shared-memory budget (L = Tuning::pencil_length, or 1 by default).
  template <class B, class R, int D, class F>
  static Plan plan(const Call<B, R, D>& c, const F& f, const Tuning& t) {
    return plan_x_pencil(c, f, t);
  }
  template <class B, class R, int D, class F>
  static void run(const Call<B, R, D>& c, const F& f, typename FunctorTraits<F, R, D>::Accum* out, const Plan& p) {
    if constexpr (B::is_gpu_like) {
      if (c.views.same)
        B::launch(p.shape, XPencilInteract<F, R, D>{c.views, f, out, p.layout, p.length, p.pencils_x, p.pencils},
                  c.stream);
      else
        B::launch(p.shape, XPencilInteract<F, R, D, false>{c.views, f, out, p.layout, p.length, p.pencils_x, p.pencils},
                  c.stream);
    }
  }
};

}  // namespace cellint::detail
