#pragma once
/// @file
/// X-pencil-tile: a variant of X-pencil (paper section 5.2) whose threads work in warp-wide tiles
/// of targets that sweep the same sources in lock-step.
///
/// A block owns a pencil of L target cells along X. It stages, once, the pencil of L+2 cells of
/// every one of the 3^(Dim-1) rows around it (its own row and the rows at Y/Z +-1, image shifts
/// added at copy time, as X-pencil does) into shared memory: all the sources any of its targets
/// needs. One barrier. Then each warp takes tiles of `warp size` consecutive targets of the own
/// row (tile w, w + warps, ...): every lane holds one target in registers, and the warp loops
/// over the union of its lanes' source windows, row after row. When the tile lies in one cell
/// (most tiles, with tens of particles per cell) that union is exactly each lane's window of 3
/// cells per row, every lane reads the same source in the same iteration (a shared-memory
/// broadcast), and the trip count is the same for the whole warp: no divergence, no bank
/// conflicts, no per-pair index test except the target itself in the own row. A tile that
/// straddles cells loops over the union of its cells' windows with a per-lane window test.
///
/// Where X-pencil gives each thread its own window (lanes of a warp in different cells read
/// different addresses and run different trip counts), this variant trades idle lanes at cell
/// boundaries for lock-step execution. Measured on an H100 (docs/strategies.md): it wins for
/// functors with a cutoff test on small grids at 10-100 particles per cell, and loses on large
/// grids, where nine staged rows take so much shared memory per block that few warps fit a
/// multiprocessor (X-pencil's warps of one cell already run in lock-step), and at 1 particle per
/// cell, where most tiles straddle many cells.
///
/// Launch shape (each part overridable through Tuning):
///  - L (Tuning::pencil_length): the longest pencil whose staged rows, 3^(Dim-1) x (L+2) x M_C
///    records, fit the budget of three blocks per multiprocessor (so that the staging of one
///    block overlaps the computation of the others), and whose expected targets (Poisson mean
///    + 3 standard deviations) fit 1024 threads; shortened while there are fewer than 4 pencils
///    per multiprocessor, evened out along the row. When even L = 1 exceeds that budget the
///    opt-in limit is used.
///  - threads (Tuning::threads, rounded up to the warp size): one warp per expected tile of a
///    pencil (expected targets / warp size, rounded up); a pencil with more tiles loops.
///  - blocks (Tuning::blocks): one per pencil (grid-stride loop when fewer).
///  - shared memory (Tuning::shared_bytes is the budget): the layout above.
/// supports() says no on the Host backend and when one pencil of 3 cells does not fit the budget
/// (Tuning::shared_bytes, else the opt-in limit), with the numbers.

#include <algorithm>
#include <string>

#include "cellint/core/pair_functor.hpp"
#include "cellint/grid/cell_grid.hpp"
#include "cellint/strategies/detail/pencil.hpp"
#include "cellint/strategies/strategy.hpp"

namespace cellint::detail {

/// The tile's inner loop over the staged sources [lo, hi) of one row. `Window`: only sources in
/// this lane's window [mlo, mhi) count (a tile straddling cells); `Self`: skip slot `self` (the
/// own row holds the target itself).
template <bool Window, bool Self, class T, class F, class Real, int Dim, class Rec>
CELLINT_HD CELLINT_INLINE void tile_accumulate(const F& f, const Rec* buf, Index lo, Index hi, Index mlo,
                                               Index mhi, Index self, const Vec<Real, Dim>& xt,
                                               const typename T::Payload& pt, Real rc2,
                                               typename T::Accum& acc) {
  CELLINT_DETAIL_UNROLL4
  for (Index j = lo; j < hi; ++j) {
    const Rec r = buf[j];
    Vec<Real, Dim> dr;
    for (int d = 0; d < Dim; ++d) dr[d] = xt[d] - r.x[d];
    const Real r2 = norm2(dr);
    bool take = !T::cutoff_test || r2 < rc2;
    if (Window) take = take && static_cast<unsigned>(j - mlo) < static_cast<unsigned>(mhi - mlo);
    if (Self) take = take && j != self;
    if (take) {
      if constexpr (T::position_only)
        f(acc, pt, pt, dr, r2);
      else
        f(acc, pt, r.p, dr, r2);
    }
  }
}

/// Kernel `x_pencil_tile_interact`: one block per X-pencil of `length` target cells
/// (grid-stride); shared memory is a PencilLayout with one staging buffer and one boundary array
/// per row. Per pencil: barrier (the previous pencil is done), stage every row, barrier, tiles
/// (see the file comment). Row k of the 3^(Dim-1) lies at Y + (k % 3 - 1), Z + (k / 3 - 1);
/// k = 3^(Dim-1) / 2 is the own row.
template <class F, class Real, int Dim>
struct XPencilTileInteract {
  using T = FunctorTraits<F, Real, Dim>;
  using Rec = StagedParticle<Real, Dim, typename T::Payload>;
  static constexpr int rows = Dim == 3 ? 9 : 3;
  static constexpr int own = rows / 2;
  GridView<Real, Dim> v;
  F f;
  typename T::Accum* out;
  PencilLayout layout;  ///< one buffer per row: buffers = 3^(Dim-1)
  Index length;     ///< L: target cells per pencil
  Index pencils_x;  ///< pencils per row: ceil(nx / L)
  Index pencils;    ///< pencils in the grid
  Index tile;       ///< targets per tile: the warp size

  template <class Block>
  CELLINT_HD void operator()(Block& b) const {
    unsigned char* base = b.template shared<unsigned char>();
    const Index tid = static_cast<Index>(b.thread_rank());
    const Index bs = static_cast<Index>(b.block_size());
    const Index warps = bs / tile, warp = tid / tile, lane = tid - warp * tile;
    const Index nx = v.geo.cells[0], ny = v.geo.cells[1];
    const Real rc2 = v.geo.cutoff * v.geo.cutoff;
    for (Index p = static_cast<Index>(b.block_rank()); p < pencils; p += static_cast<Index>(b.grid_size())) {
      const Index row = p / pencils_x;
      const Index x0 = (p - row * pencils_x) * length;
      const Index x1 = x0 + length < nx ? x0 + length : nx;
      const Index len = x1 - x0;
      const Index y = row % ny, z = row / ny;
      if (p != static_cast<Index>(b.block_rank())) b.sync();  // the previous pencil is done
      // ---- stage every row's pencil of cells x0-1 .. x1 -----------------------------------------
      PencilSpan own_span;
      for (int k = 0; k < rows; ++k) {
        Rec* buf = layout.buffer<Rec>(base, k);
        Index* st = layout.starts<Rec>(base, k);
        Index nrow = 0;
        Vec<Real, Dim> shift;
        const Index dz = Dim == 3 ? k / 3 - 1 : 0;
        if (!pencil_row(v.geo, y + (k % 3 - 1), z + dz, nrow, shift)) {  // off an open face
          for (Index c = tid; c <= len + 2; c += bs) st[c] = 0;
          continue;
        }
        const Index* cs = v.cell_start + nrow * nx;
        const PencilSpan s = pencil_span(v.geo, cs, x0, x1);
        if (k == own) own_span = s;
        for (Index i = tid; i < s.total(); i += bs) {
          Rec r;
          Index at = -1;
          PencilCopy<Rec, 1>::template fetch<T>(v, f, s, shift, Index(0), Index(0), i, r, at);
          buf[at] = r;
        }
        for (Index c = tid; c <= len + 2; c += bs) st[c] = pencil_boundary(s, cs, x0 - 1 + c);
      }
      b.sync();
      // ---- tiles of the own row's targets --------------------------------------------------------
      const Rec* obuf = layout.buffer<Rec>(base, own);
      const Index* ost = layout.starts<Rec>(base, own);
      const Index first = ost[1], end = ost[len + 1];
      for (Index t0 = first + warp * tile; t0 < end; t0 += warps * tile) {  // warp-uniform
        const Index last = (t0 + tile < end ? t0 + tile : end) - 1;
        const Index cmin = staged_cell(ost, len, t0), cmax = staged_cell(ost, len, last);
        const bool active = t0 + lane <= last;
        const Index self = active ? t0 + lane : t0;  // idle lanes shadow the first target
        const Index lx = cmin == cmax ? cmin : staged_cell(ost, len, self);
        const Rec tr = obuf[self];
        Vec<Real, Dim> xt;
        for (int d = 0; d < Dim; ++d) xt[d] = tr.x[d];
        typename T::Payload pt{};
        if constexpr (!T::position_only) pt = tr.p;
        auto acc = T::init(f);
        for (int k = 0; k < rows; ++k) {
          const Rec* buf = layout.buffer<Rec>(base, k);
          const Index* st = layout.starts<Rec>(base, k);
          if (cmin == cmax) {  // one cell: every lane's window is [st[cmin-1], st[cmin+2])
            const Index lo = st[cmin - 1], hi = st[cmin + 2];
            if (k == own)
              tile_accumulate<false, true, T>(f, buf, lo, hi, lo, hi, self, xt, pt, rc2, acc);
            else
              tile_accumulate<false, false, T>(f, buf, lo, hi, lo, hi, self, xt, pt, rc2, acc);
          } else {  // the union of the cells' windows, each lane keeping to its own
            const Index lo = st[cmin - 1], hi = st[cmax + 2];
            const Index mlo = st[lx - 1], mhi = st[lx + 2];
            if (k == own)
              tile_accumulate<true, true, T>(f, buf, lo, hi, mlo, mhi, self, xt, pt, rc2, acc);
            else
              tile_accumulate<true, false, T>(f, buf, lo, hi, mlo, mhi, self, xt, pt, rc2, acc);
          }
        }
        if (active) out[own_span.mid_begin + (self - own_span.left_count)] = acc;
      }
    }
  }
};

/// Launch plan of X-pencil-tile, shared by supports(), shape() and run().
struct XPencilTilePlan {
  Support support;
  LaunchShape shape;
  PencilLayout layout;  ///< one buffer per row: buffers = 3^(Dim-1)
  Index length = 1, pencils_x = 1, pencils = 0;
};

/// Blocks per multiprocessor the default budget of X-pencil-tile aims at.
inline constexpr int x_pencil_tile_blocks_per_sm = 3;

/// The launch-shape rule of the file comment.
template <class B, class R, int D, class F>
XPencilTilePlan plan_x_pencil_tile(const CellGrid<B, R, D>& grid, const F& f, const DeviceProperties& p,
                                   const Tuning& t) {
  using K = XPencilTileInteract<F, R, D>;
  using Rec = typename K::Rec;
  constexpr int rows = K::rows;
  XPencilTilePlan plan;
  if (!B::is_gpu_like) {
    plan.support = Support::no("x-pencil-tile needs a GPU-like backend (Emulated, Cuda or Hip)");
    return plan;
  }
  if (t.pencil_length < 0) {
    plan.support = Support::no(cat("x-pencil-tile: Tuning::pencil_length = ", t.pencil_length, " is negative"));
    return plan;
  }
  if (t.shared_bytes > p.shared_per_block_optin) {
    plan.support = Support::no(cat("x-pencil-tile: Tuning::shared_bytes = ", t.shared_bytes,
                                   " exceeds the device's shared memory per block (", p.shared_per_block_optin,
                                   " bytes after opting in)"));
    return plan;
  }
  const auto& g = grid.geometry();
  const Index nx = g.cells[0];
  const Index nrows = g.cell_count() / nx;
  const Index mc = std::max<Index>(1, grid.max_per_cell());
  const double mean = static_cast<double>(grid.size()) / static_cast<double>(g.cell_count());
  const unsigned w = static_cast<unsigned>(B::warp_size);
  const unsigned cap = pencil_thread_cap<B>(p, K{grid.view(), f, nullptr, {}, 1, 1, 0, 1});
  auto fits = [&](Index cells, std::size_t budget) { return PencilLayout::make<Rec>(cells, mc, rows).bytes <= budget; };
  // A third of the multiprocessor's shared memory, less the 1 KiB the runtime reserves per block.
  const std::size_t share = p.shared_per_multiprocessor / x_pencil_tile_blocks_per_sm;
  const std::size_t per_sm = share > 1024 ? share - 1024 : 0;
  const std::size_t budget_max = t.shared_bytes ? t.shared_bytes : p.shared_per_block_optin;
  std::size_t budget = t.shared_bytes ? t.shared_bytes : std::min(budget_max, per_sm);
  if (!fits(1, budget)) budget = budget_max;
  Index length = 0;
  if (t.pencil_length > 0) {
    length = std::min<Index>(t.pencil_length, nx);
    if (!fits(length, budget_max)) {
      plan.support = Support::no(cat("x-pencil-tile: Tuning::pencil_length = ", length, " stages ", rows, " rows x ",
                                     length + 2, " cells x M_C = ", mc, " particles x ", sizeof(Rec), " bytes = ",
                                     PencilLayout::make<Rec>(length, mc, rows).bytes,
                                     " bytes of shared memory, more than the budget of ", budget_max,
                                     " bytes; choose a shorter pencil or leave pencil_length at 0"));
      return plan;
    }
  } else {
    if (!fits(1, budget_max)) {
      plan.support = Support::no(
          cat("x-pencil-tile: one pencil of 3 cells in each of ", rows, " rows with M_C = ", mc,
              " particles per cell needs ", PencilLayout::make<Rec>(1, mc, rows).bytes,
              " bytes of shared memory, more than the budget of ", budget_max, " bytes",
              t.shared_bytes ? " (Tuning::shared_bytes)" : " (the device's opt-in limit)",
              "; use smaller cells (fewer particles per cell)", t.shared_bytes ? ", raise Tuning::shared_bytes" : "",
              " or a strategy that stages one row at a time (x-pencil, par-cell-sm, par-part-noloop)"));
      return plan;
    }
    length = 1;
    while (length < nx && fits(length + 1, budget) &&
           pencil_expected_targets(mean, length + 1, mc) <= static_cast<long>(cap))
      ++length;
    while (length > 1 &&
           static_cast<long>((nx + length - 1) / length) * nrows < static_cast<long>(pencil_blocks_per_sm) * p.multiprocessors)
      --length;
    const Index per_row = (nx + length - 1) / length;
    length = (nx + per_row - 1) / per_row;
  }
  plan.length = length;
  plan.pencils_x = (nx + length - 1) / length;
  plan.pencils = plan.pencils_x * nrows;
  plan.layout = PencilLayout::make<Rec>(length, mc, rows);
  unsigned threads = t.threads ? t.threads : pencil_round_threads<B>(pencil_expected_targets(mean, length, mc), cap);
  threads = std::min(std::max(w, (threads + w - 1) / w * w), std::max(w, cap));
  const unsigned blocks =
      t.blocks ? std::min<unsigned>(t.blocks, static_cast<unsigned>(plan.pencils)) : static_cast<unsigned>(plan.pencils);
  plan.shape = {std::max(1u, blocks), threads, plan.layout.bytes};
  return plan;
}

template <>
struct StrategyImpl<XPencilTile> {
  /// Whether X-pencil-tile can run: a GPU-like backend and one pencil of 3 cells in each row
  /// around it within the shared-memory budget.
  template <class B, class R, int D, class F>
  static Support supports(const CellGrid<B, R, D>& grid, const F& f, const DeviceProperties& p, const Tuning& t) {
    return plan_x_pencil_tile(grid, f, p, t).support;
  }
  /// The launch shape (see the file comment).
  template <class B, class R, int D, class F>
  static LaunchShape shape(const CellGrid<B, R, D>& grid, const F& f, const DeviceProperties& p, const Tuning& t) {
    return plan_x_pencil_tile(grid, f, p, t).shape;
  }
  /// The pencil length L the rule picks.
  template <class B, class R, int D, class F>
  static Index pencil_length(const CellGrid<B, R, D>& grid, const F& f, const DeviceProperties& p,
                             const Tuning& t) {
    return plan_x_pencil_tile(grid, f, p, t).length;
  }
  /// Launches the kernel on the grid's stream (asynchronous); returns the launch shape.
  template <class B, class R, int D, class F>
  static LaunchShape run(const CellGrid<B, R, D>& grid, const F& f, typename FunctorTraits<F, R, D>::Accum* out,
                         const Tuning& t) {
    LaunchShape s{};
    if constexpr (B::is_gpu_like) {
      const XPencilTilePlan plan = plan_x_pencil_tile(grid, f, B::properties(), t);
      s = plan.shape;
      if (grid.size() == 0 || !plan.support.ok) return s;
      B::launch(s,
                XPencilTileInteract<F, R, D>{grid.view(), f, out, plan.layout, plan.length, plan.pencils_x,
                                             plan.pencils, static_cast<Index>(B::warp_size)},
                grid.stream());
    }
    return s;
  }
};

}  // namespace cellint::detail
