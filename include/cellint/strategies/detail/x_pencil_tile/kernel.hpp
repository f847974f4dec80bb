#pragma once
// X-pencil-tile: kernel and plan (see strategies/x_pencil_tile.hpp).

#include <algorithm>
#include <string>

#include "cellint/strategies/detail/pencil.hpp"
#include "cellint/strategies/x_pencil_tile.hpp"  // the tag and its policy
#include "cellint/strategies/strategy.hpp"

namespace cellint::detail {

/// The tile's pair loop over the staged sources [lo, hi) of one row, every lane over the same range (predicated, no
/// divergence). `Window`: only sources in this lane's window [mlo, mhi) count (a tile straddling cells); `Self`: skip
/// slot `self` (the own row holds the target).
template <bool Window, bool Self, class T, class F, class Real, int Dim, class Rec>
CELLINT_HD CELLINT_INLINE void tile_accumulate(const F& f, const Rec* buf, Index lo, Index hi, Index mlo,
                                               Index mhi, Index self, const Vec<Real, Dim>& xt,
                                               const typename T::Payload& pt, Real rc2,
                                               typename T::Accum& acc) {
  CELLINT_DETAIL_UNROLL4
  for (Index j = lo; j < hi; ++j) {
    const Rec r = buf[j];
    bool keep = true;
    if (Window) keep = static_cast<unsigned>(j - mlo) < static_cast<unsigned>(mhi - mlo);
    if (Self) keep = keep && j != self;
    accumulate_pair<T>(f, r, xt, pt, rc2, acc, keep);
  }
}

/// Kernel `x_pencil_tile_interact`: one block per X-pencil of `length` target cells (grid-stride); shared memory is a
/// PencilLayout with one staging buffer and one boundary array per row. Per pencil: barrier (the previous pencil is
/// done), stage every row, barrier, tiles (see the file comment). Row k of the 3^(Dim-1) lies at Y + (k % 3 - 1), Z +
/// (k / 3 - 1); k = 3^(Dim-1) / 2 is the own row.
template <class F, class Real, int Dim>
struct XPencilTileInteract {
  using T = FunctorTraits<F, Real, Dim>;
  using Rec = StagedParticle<Real, Dim, typename T::Payload>;
  static constexpr int rows = Dim == 3 ? 9 : 3;
  static constexpr int own = rows / 2;
  PairViews<Real, Dim> views;  ///< one set (the plan refuses two)
  F f;                         ///< the pair functor
  typename T::Accum* out;      ///< one accumulator per slot
  PencilLayout layout;  ///< one buffer per row: buffers = 3^(Dim-1)
  Index length;     ///< L: target cells per pencil
  Index pencils_x;  ///< pencils per row: ceil(nx / L)
  Index pencils;    ///< pencils in the grid
  Index tile;       ///< targets per tile: the warp size

  template <class Block>
  CELLINT_HD void operator()(Block& b) const {
    const GridView<Real, Dim>& v = views.sources;
    unsigned char* base = b.template shared<unsigned char>();
    const Index tid = static_cast<Index>(b.thread_rank());
    const Index bs = static_cast<Index>(b.block_size());
    const Index warps = bs / tile, warp = tid / tile, lane = tid - warp * tile;
    const Index nx = v.geo.cells[0], ny = v.geo.cells[1];
    const Real rc2 = cutoff2(v.geo);
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
        if (!neighbor_row(v.geo, y + (k % 3 - 1), z + dz, nrow, shift)) {  // off an open face
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

/// The launch-shape rule of strategies/x_pencil_tile.hpp.
template <class B, class R, int D, class F>
PencilPlan plan_x_pencil_tile_once(const Call<B, R, D>& c, const F& f, const Tuning& t) {
  using K = XPencilTileInteract<F, R, D>;
  using Rec = typename K::Rec;
  constexpr int rows = K::rows;
  PencilPlan plan;
  const DeviceProperties& p = c.props;
  if (!(plan.support = pencil_checks<B>("x-pencil-tile", t, p)).ok) return plan;
  if (!c.views.same)
    return refuse(plan, "x-pencil-tile reads its targets from the staged own row: it runs one set only "
                        "(two sets: x-pencil, par-cell or par-part-noloop)");
  const Index nx = c.geometry().cells[0];
  const Index nrows = c.geometry().cell_count() / nx;
  const Index mc = c.source_max_per_cell();
  const double mean = c.mean_targets_per_cell();
  const unsigned w = static_cast<unsigned>(B::warp_size);
  const unsigned cap = pencil_thread_cap<B>(p, K{c.views, f, nullptr, {}, 1, 1, 0, 1});
  auto fits = [&](Index cells, std::size_t budget) { return PencilLayout::make<Rec>(cells, mc, rows).bytes <= budget; };
  // A third of the multiprocessor's shared memory, less the 1 KiB the runtime reserves per block.
  const std::size_t share = p.shared_per_multiprocessor / XPencilTile::blocks_per_sm;
  const std::size_t per_sm = share > 1024 ? share - 1024 : 0;
  const std::size_t budget_max = t.shared_bytes ? t.shared_bytes : p.shared_per_block_optin;
  std::size_t budget = t.shared_bytes ? t.shared_bytes : std::min(budget_max, per_sm);
  if (!fits(1, budget)) budget = budget_max;
  Index length = t.pencil_length > 0 ? std::min<Index>(t.pencil_length, nx) : 1;
  if (!fits(length, budget_max)) {
    const std::string need =
        t.pencil_length > 0 ? cat("x-pencil-tile: Tuning::pencil_length = ", length, " stages ", rows, " rows x ",
                                  length + 2, " cells x M_C = ", mc, " particles x ", sizeof(Rec), " bytes = ")
                            : cat("x-pencil-tile: one pencil of 3 cells in each of ", rows, " rows with M_C = ", mc,
                                  " particles per cell needs ");
    return refuse(plan, pencil_too_big(need, PencilLayout::make<Rec>(length, mc, rows).bytes, budget_max, t,
                                       "stages one row at a time (x-pencil, par-cell-sm, par-part-noloop)"));
  }
  if (t.pencil_length == 0) {
    while (length < nx && fits(length + 1, budget) &&
           pencil_expected_targets(mean, length + 1, mc) <= static_cast<long>(cap))
      ++length;
    length = pencil_balance(length, nx, nrows, p.multiprocessors);
  }
  unsigned threads = t.threads ? t.threads : pencil_round_threads<B>(pencil_expected_targets(mean, length, mc), cap);
  threads = std::min(std::max(w, (threads + w - 1) / w * w), std::max(w, cap));
  plan.finish(nx, nrows, length, PencilLayout::make<Rec>(length, mc, rows), threads, t);
  return plan;
}

/// The launch-shape rule of strategies/x_pencil_tile.hpp, or its refusal of a functor with load_source() (whose
/// kernel, which stages each particle once for both sides, is then not even instantiated).
template <class B, class R, int D, class F>
PencilPlan plan_x_pencil_tile(const Call<B, R, D>& c, const F& f, const Tuning& t) {
  if constexpr (loads_sources_apart<F, R, D>)
    return refuse(PencilPlan{}, reads_each_particle_once("x-pencil-tile"));
  else
    return plan_x_pencil_tile_once(c, f, t);
}

template <>
struct StrategyImpl<XPencilTile> {
  using Plan = PencilPlan;  ///< support, shape, layout, pencil length
  /// The rule of strategies/x_pencil_tile.hpp; no when one pencil of 3 cells in each row around it does not fit the
  /// shared-memory budget.
  template <class B, class R, int D, class F>
  static Plan plan(const Call<B, R, D>& c, const F& f, const Tuning& t) {
    return plan_x_pencil_tile(c, f, t);
  }
  template <class B, class R, int D, class F>
  static void run(const Call<B, R, D>& c, const F& f, typename FunctorTraits<F, R, D>::Accum* out, const Plan& p) {
    if constexpr (B::is_gpu_like && !loads_sources_apart<F, R, D>)
      B::launch(p.shape, XPencilTileInteract<F, R, D>{c.views, f, out, p.layout, p.length, p.pencils_x, p.pencils,
                                                      static_cast<Index>(B::warp_size)}, c.stream);
  }
};

}  // namespace cellint::detail
