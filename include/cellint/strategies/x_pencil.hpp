#pragma once
/// @file
/// X-pencil (paper section 5.2, Algorithm 5, Figure 4): a block owns a pencil of L target cells
/// along X plus one ghost cell at each end. The pencil is staged in shared memory, every thread
/// keeps one target particle in registers, computes against it, then the 3^(Dim-1) - 1
/// neighbour pencils (rows Y/Z +-1, same X range) are staged one after another.
///
/// Launch shape (paper 7.1, adapted from measurements; each part overridable through Tuning):
///  - L (Tuning::pencil_length): the longest pencil, at most the cells of a row, whose expected
///    targets (mean + 3 standard deviations of a Poisson count at the grid's mean particles per
///    cell) fit a block of 512 threads and whose M_C x (L+2) staged particles fit the
///    shared-memory budget; shortened while there are fewer than 4 pencils per multiprocessor
///    (the paper: fewer than 1), then evened out so that the pencils of a row differ by at most
///    one cell.
///  - threads (Tuning::threads): the expected targets of one pencil rounded up to the warp size,
///    at most 1024 and the kernel's register limit (where that limit is below 1024 the
///    preferred block is at most half of it). Threads map to target particles only (ghost
///    cells are copied by a strided loop); a pencil with more targets than threads (a cluster)
///    is processed in several passes, so no particle count is ever too large for a block. The
///    paper's M_C x (L+2) threads measured up to 1.6x slower: most of those threads idle.
///  - blocks (Tuning::blocks): one per pencil (a grid-stride loop covers fewer blocks).
///  - shared memory (Tuning::shared_bytes is the budget): two staging buffers of M_C x (L+2)
///    particles when they fit the budget (one barrier per pencil), else one (two barriers per
///    pencil); the budget is 48 KiB (DeviceProperties::shared_per_block) unless even one pencil
///    of 3 cells needs more, then the opt-in limit.
/// supports() says no only when a pencil of L+2 cells (L = 1 by default) of M_C particles
/// cannot fit the budget: Tuning::shared_bytes, else the device's opt-in limit.

#include <algorithm>
#include <string>

#include "cellint/core/pair_functor.hpp"
#include "cellint/grid/cell_grid.hpp"
#include "cellint/strategies/detail/pencil.hpp"
#include "cellint/strategies/strategy.hpp"

namespace cellint::detail {

/// Kernel `x_pencil_interact`: one block per X-pencil of `length` target cells (grid-stride).
///
/// Phases per pencil (and per pass of block_size targets when a pencil holds more targets than
/// threads; thread i's target is the i-th particle of the pencil's cells x0..x1-1, one
/// contiguous range): for the own row first and its Y/Z neighbours after it, every thread
/// loads its share of the row's pencil of cells x0-1..x1 (one contiguous range, plus the
/// wrapped ghost cell at a periodic X end) into registers, adding the image shift once per
/// copied particle; then computes on the previously staged pencil (so the loads are in flight
/// meanwhile), stores what it loaded into shared memory, barrier. After the own row's barrier
/// each thread reads its target (position, payload) from shared memory and finds its cell; the
/// computation on a pencil is one loop over the window of the target's three source cells
/// (split around the target itself in the own row), no per-pair index arithmetic.
///
/// Shared memory (PencilLayout): `buffers` x M_C x (L+2) staged particles (StagedParticle:
/// position and payload, padded for vector loads), then `buffers` x (L+3) local cell
/// boundaries. Barriers: one per staged pencil with two buffers (the store goes to the buffer
/// nobody reads); with one buffer a second one before each store.
template <class F, class Real, int Dim>
struct XPencilInteract {
  using T = FunctorTraits<F, Real, Dim>;
  using Rec = StagedParticle<Real, Dim, typename T::Payload>;
  GridView<Real, Dim> v;
  F f;
  typename T::Accum* out;
  PencilLayout layout;
  Index length;     ///< L: target cells per pencil
  Index pencils_x;  ///< pencils per row: ceil(nx / L)
  Index pencils;    ///< pencils in the grid

  template <class Block>
  CELLINT_HD void operator()(Block& b) const {
    constexpr int rows_around = Dim == 3 ? 9 : 3;  // the own row and its Y/Z neighbours
    unsigned char* base = b.template shared<unsigned char>();
    const bool two = layout.buffers == 2;
    const Index tid = static_cast<Index>(b.thread_rank());
    const Index bs = static_cast<Index>(b.block_size());
    const Index nx = v.geo.cells[0], ny = v.geo.cells[1];
    const Real rc2 = v.geo.cutoff * v.geo.cutoff;
    int cur = 0;
    for (Index p = static_cast<Index>(b.block_rank()); p < pencils;
         p += static_cast<Index>(b.grid_size())) {
      const Index row = p / pencils_x;
      const Index x0 = (p - row * pencils_x) * length;
      const Index x1 = x0 + length < nx ? x0 + length : nx;
      const Index len = x1 - x0;
      const Index y = row % ny, z = row / ny;
      const Index first = v.cell_start[row * nx + x0];
      const Index count = v.cell_start[row * nx + x1] - first;
      for (Index pass = 0; pass < count; pass += bs) {  // block-uniform trip count
        const Index t = first + pass + tid;
        const bool active = pass + tid < count;
        Vec<Real, Dim> xt{};
        typename T::Payload pt{};
        auto acc = T::init(f);
        Index lx = 0, self = 0;  // the target's local cell and its slot in the own pencil
        // Uses the pencil staged in buffer `slot`; in the own row, skips the target itself.
        auto compute = [&](int slot, bool own) {
          if (!active) return;
          const Rec* buf = layout.buffer<Rec>(base, slot);
          const Index* starts = layout.starts<Rec>(base, slot);
          const Index lo = starts[lx - 1], hi = starts[lx + 2];
          if (own) {
            accumulate_staged<T>(f, buf, lo, self, xt, pt, rc2, acc);
            accumulate_staged<T>(f, buf, self + 1, hi, xt, pt, rc2, acc);
          } else {
            accumulate_staged<T>(f, buf, lo, hi, xt, pt, rc2, acc);
          }
        };
        bool pending = false, pending_own = false;
        int pending_slot = 0;
        for (int j = 0; j < rows_around; ++j) {
          const int k = (j + rows_around / 2) % rows_around;  // j == 0: the own row
          Index nrow = 0;
          Vec<Real, Dim> shift;
          const Index dz = Dim == 3 ? k / 3 - 1 : 0;
          if (!pencil_row(v.geo, y + (k % 3 - 1), z + dz, nrow, shift)) continue;  // block-uniform
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
          // The own row holds the target (unshifted): read it from there, find its cell.
          if (j == 0 && active) {
            self = s.left_count + (t - s.mid_begin);
            const Rec r = buf[self];
            for (int d = 0; d < Dim; ++d) xt[d] = r.x[d];
            if constexpr (!T::position_only) pt = r.p;
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

/// Launch plan of X-pencil, shared by supports(), shape() and run().
struct XPencilPlan {
  Support support;
  LaunchShape shape;
  PencilLayout layout;
  Index length = 1, pencils_x = 1, pencils = 0;
};

/// The launch-shape rule of the file comment.
template <class B, class R, int D, class F>
XPencilPlan plan_x_pencil(const CellGrid<B, R, D>& grid, const F& f, const DeviceProperties& p,
                          const Tuning& t) {
  using K = XPencilInteract<F, R, D>;
  using Rec = typename K::Rec;
  XPencilPlan plan;
  if (!B::is_gpu_like) {
    plan.support = Support::no("x-pencil needs a GPU-like backend (Emulated, Cuda or Hip)");
    return plan;
  }
  const auto& g = grid.geometry();
  const Index nx = g.cells[0];
  const Index rows = g.cell_count() / nx;
  const Index mc = std::max<Index>(1, grid.max_per_cell());
  const double mean = static_cast<double>(grid.size()) / static_cast<double>(g.cell_count());
  const unsigned cap = pencil_thread_cap<B>(p, K{grid.view(), f, nullptr, {}, 1, 1, 0});
  if (t.pencil_length < 0) {
    plan.support =
        Support::no(cat("x-pencil: Tuning::pencil_length = ", t.pencil_length, " is negative"));
    return plan;
  }
  if (t.shared_bytes > p.shared_per_block_optin) {
    plan.support = Support::no(cat("x-pencil: Tuning::shared_bytes = ", t.shared_bytes,
                                   " exceeds the device's shared memory per block (",
                                   p.shared_per_block_optin, " bytes after opting in)"));
    return plan;
  }
  const std::size_t budget_default = t.shared_bytes ? t.shared_bytes : p.shared_per_block;
  const std::size_t budget_max = t.shared_bytes ? t.shared_bytes : p.shared_per_block_optin;
  // The largest L allowed by each budget and buffer count.
  const Index fit2 = pencil_cells_that_fit<Rec>(budget_default, mc, 2);
  const Index fit1 = pencil_cells_that_fit<Rec>(budget_default, mc, 1);
  const Index fit2_max = pencil_cells_that_fit<Rec>(budget_max, mc, 2);
  const Index fit1_max = pencil_cells_that_fit<Rec>(budget_max, mc, 1);
  Index length = 0;
  int buffers = 2;
  if (t.pencil_length > 0) {
    length = std::min<Index>(t.pencil_length, nx);
    buffers = fit2 >= length ? 2 : fit1 >= length ? 1 : fit2_max >= length ? 2 : 1;
    if (fit1_max < length) {
      plan.support =
          Support::no(cat("x-pencil: Tuning::pencil_length = ", length, " needs ", length + 2,
                          " cells x M_C = ", mc, " particles x ", sizeof(Rec),
                          " bytes = ", PencilLayout::make<Rec>(length, mc, 1).bytes,
                          " bytes of shared memory, more than the budget of ", budget_max,
                          " bytes; choose a shorter pencil or leave pencil_length at 0"));
      return plan;
    }
  } else {
    if (fit1_max < 1) {
      plan.support = Support::no(
          cat("x-pencil: one pencil of 3 cells (1 target cell and 2 ghosts) with M_C = ", mc,
              " particles per cell needs 3 x ", mc, " x ", sizeof(Rec),
              " bytes + boundaries = ", PencilLayout::make<Rec>(1, mc, 1).bytes,
              " bytes of shared memory, more than the budget of ", budget_max, " bytes",
              t.shared_bytes ? " (Tuning::shared_bytes)" : " (the device's opt-in limit)",
              "; use smaller cells (fewer particles per cell)",
              t.shared_bytes ? ", raise Tuning::shared_bytes" : "",
              " or a strategy that streams cells (par-cell-sm, par-part-noloop)"));
      return plan;
    }
    // Longest pencil whose expected targets fit the preferred block size (at least one cell).
    const unsigned pref = pencil_preferred<B>(cap);
    Index want = 1;
    while (want < nx && pencil_expected_targets(mean, want + 1, mc) <= static_cast<long>(pref))
      ++want;
    // Two buffers in the default budget, else one; the opt-in budget only when needed.
    const Index fit = fit2 >= 1 ? fit2 : fit1 >= 1 ? fit1 : fit2_max >= 1 ? fit2_max : fit1_max;
    buffers = fit2 >= 1 || (fit1 < 1 && fit2_max >= 1) ? 2 : 1;
    length = std::min(want, fit);
    // Shrink while there are few pencils per multiprocessor (paper 7.1: fewer than one), then
    // even out the pencils of a row.
    while (length > 1 && static_cast<long>((nx + length - 1) / length) * rows <
                             static_cast<long>(pencil_blocks_per_sm) * p.multiprocessors)
      --length;
    const Index per_row = (nx + length - 1) / length;
    length = (nx + per_row - 1) / per_row;
  }
  plan.length = length;
  plan.pencils_x = (nx + length - 1) / length;
  plan.pencils = plan.pencils_x * rows;
  plan.layout = PencilLayout::make<Rec>(length, mc, buffers);
  const unsigned threads =
      t.threads ? std::min(t.threads, cap)
                : pencil_round_threads<B>(pencil_expected_targets(mean, length, mc), cap);
  const unsigned blocks = t.blocks
                              ? std::min<unsigned>(t.blocks, static_cast<unsigned>(plan.pencils))
                              : static_cast<unsigned>(plan.pencils);
  plan.shape = {std::max(1u, blocks), std::max(1u, threads), plan.layout.bytes};
  return plan;
}

template <>
struct StrategyImpl<XPencil> {
  /// Whether X-pencil can run: a GPU-like backend and one pencil of L+2 cells of M_C particles
  /// in the shared-memory budget (L = Tuning::pencil_length, or 1 by default).
  template <class B, class R, int D, class F>
  static Support supports(const CellGrid<B, R, D>& grid, const F& f, const DeviceProperties& p,
                          const Tuning& t) {
    return plan_x_pencil(grid, f, p, t).support;
  }
  /// The launch shape (see the file comment).
  template <class B, class R, int D, class F>
  static LaunchShape shape(const CellGrid<B, R, D>& grid, const F& f, const DeviceProperties& p,
                           const Tuning& t) {
    return plan_x_pencil(grid, f, p, t).shape;
  }
  /// The pencil length L the rule picks.
  template <class B, class R, int D, class F>
  static Index pencil_length(const CellGrid<B, R, D>& grid, const F& f, const DeviceProperties& p,
                             const Tuning& t) {
    return plan_x_pencil(grid, f, p, t).length;
  }
  /// Launches the kernel on the grid's stream (asynchronous); returns the launch shape.
  template <class B, class R, int D, class F>
  static LaunchShape run(const CellGrid<B, R, D>& grid, const F& f,
                         typename FunctorTraits<F, R, D>::Accum* out, const Tuning& t) {
    LaunchShape s{};
    if constexpr (B::is_gpu_like) {
      const XPencilPlan plan = plan_x_pencil(grid, f, B::properties(), t);
      s = plan.shape;
      if (grid.size() == 0 || !plan.support.ok) return s;
      B::launch(s,
                XPencilInteract<F, R, D>{grid.view(), f, out, plan.layout, plan.length,
                                         plan.pencils_x, plan.pencils},
                grid.stream());
    }
    return s;
  }
};

}  // namespace cellint::detail
