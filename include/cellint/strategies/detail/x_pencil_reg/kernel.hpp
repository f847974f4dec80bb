#pragma once
// X-pencil-reg: kernel and plan (see strategies/x_pencil_reg.hpp).

#include <algorithm>
#include <string>

#include "cellint/strategies/detail/pencil.hpp"
#include "cellint/strategies/x_pencil_reg.hpp"  // the tag and its policy
#include "cellint/strategies/strategy.hpp"

namespace cellint::detail {

/// Kernel `x_pencil_reg_interact`: one block per sub-box of target cells (grid-stride).
///
/// Phases per sub-box: (1) the targets of its Sy x Sz rows are numbered row after row (each row's targets are one
/// contiguous particle range); thread r writes the prefix offset of row r into shared memory; barrier. (2) per pass of
/// block_size x K targets: every thread loads its K targets (numbers tid + k * block_size) into registers and locates
/// their row and cell; then for every row of the sub-box plus its ghost layer: load this thread's share of the row's
/// pencil of cells x0-1..x1 into registers (global memory for ghosts, the wrapped X ghost and image-shifted rows, with
/// the shift added once per copy; nothing for this pass's targets of a sub-box row), compute on the previously staged
/// pencil while the loads are in flight, store the loads and, in a sub-box row, the targets from registers, barrier. A
/// target whose row is adjacent to the staged one loops over the window of its three source cells; the others skip.
///
/// Shared memory (PencilLayout): `buffers` x capacity staged particles, `buffers` x (Sx+3) local cell boundaries, then
/// Sy x Sz + 1 row offsets. Two buffers: the next pencil is staged while the current one is used, one barrier per
/// pencil; one buffer: two barriers per pencil.
template <class F, class Real, int Dim>
struct XPencilRegInteract {
  using T = FunctorTraits<F, Real, Dim>;
  using Rec = StagedParticle<Real, Dim, typename T::Payload>;
  static constexpr int K = XPencilReg::targets_per_thread;
  PairViews<Real, Dim> views;  ///< one set (the plan refuses two)
  F f;                         ///< the pair functor
  typename T::Accum* out;      ///< one accumulator per slot
  PencilLayout layout;         ///< staging buffers, boundaries, row offsets
  Index sub[3];     ///< target cells per sub-box along x, y, z (z: 1 in 2D)
  Index boxes[3];   ///< sub-boxes along x, y, z
  Index box_count;  ///< sub-boxes in the grid

  template <class Block>
  CELLINT_HD void operator()(Block& b) const {
    const GridView<Real, Dim>& v = views.sources;
    unsigned char* base = b.template shared<unsigned char>();
    Index* row_off = layout.tail<Rec>(base);
    const bool two = layout.buffers == 2;
    const Index tid = static_cast<Index>(b.thread_rank());
    const Index bs = static_cast<Index>(b.block_size());
    const Index nx = v.geo.cells[0], ny = v.geo.cells[1];
    const Index nz = Dim == 3 ? v.geo.cells[Dim - 1] : 1;
    const Real rc2 = cutoff2(v.geo);
    int cur = 0;
    for (Index box = static_cast<Index>(b.block_rank()); box < box_count;
         box += static_cast<Index>(b.grid_size())) {
      const Index bx = box % boxes[0], byz = box / boxes[0];
      const Index x0 = bx * sub[0], x1 = pencil_min(x0 + sub[0], nx), len = x1 - x0;
      const Index y0 = (byz % boxes[1]) * sub[1], ry = pencil_min(y0 + sub[1], ny) - y0;
      const Index z0 = (byz / boxes[1]) * sub[2], rz = pencil_min(z0 + sub[2], nz) - z0;
      const Index nrows = ry * rz;
      // Row r of the sub-box (y0 + r % ry, z0 + r / ry): cell_start entries of its cells.
      auto row_cs = [&](Index r) {
        return v.cell_start + ((y0 + r % ry) + ny * (z0 + r / ry)) * nx;
      };
      if (box != static_cast<Index>(b.block_rank()))
        b.sync();  // the previous sub-box is done with row_off
      for (Index r = tid; r <= nrows; r += bs) {
        Index sum = 0;
        for (Index q = 0; q < r; ++q) {
          const Index* cs = row_cs(q);
          sum += cs[x1] - cs[x0];
        }
        row_off[r] = sum;
      }
      b.sync();
      const Index total = row_off[nrows];
      for (Index pass = 0; pass < total; pass += bs * K) {  // block-uniform trip count
        Vec<Real, Dim> xt[K];
        typename T::Payload pt[K];
        typename T::Accum acc[K];
        Index t[K], lx[K], ly[K], lz[K];
        bool active[K];
        CELLINT_DETAIL_UNROLL
        for (int k = 0; k < K; ++k) {
          const Index i = pass + tid + k * bs;
          active[k] = i < total;
          acc[k] = T::init(f);
          xt[k] = Vec<Real, Dim>{};
          pt[k] = typename T::Payload{};
          t[k] = lx[k] = ly[k] = lz[k] = 0;
          if (!active[k]) continue;
          const Index lo = last_le(row_off, Index(0), nrows - 1, i);  // the row
          const Index* cs = row_cs(lo);
          ly[k] = lo % ry;
          lz[k] = lo / ry;
          t[k] = cs[x0] + (i - row_off[lo]);
          lx[k] = last_le(cs, x0, x1 - 1, t[k]) - x0 + 1;  // the cell
          xt[k] = v.position(t[k]);
          pt[k] = T::load(f, v, t[k]);
        }
        // Uses the pencil of sub-box row (py, pz) staged in buffer `slot`, whose middle range
        // begins at global index mid_begin and at slot left_count.
        auto compute = [&](int slot, Index py, Index pz, Index left_count, Index mid_begin) {
          const Rec* buf = layout.buffer<Rec>(base, slot);
          const Index* starts = layout.starts<Rec>(base, slot);
          CELLINT_DETAIL_UNROLL
          for (int k = 0; k < K; ++k) {
            const Index dy = ly[k] - py, dz = lz[k] - pz;
            if (!active[k] || dy < -1 || dy > 1 || dz < -1 || dz > 1) continue;
            const Index lo = starts[lx[k] - 1], hi = starts[lx[k] + 2];
            if (dy == 0 && dz == 0)  // the own row holds the target itself
              accumulate_around<T>(f, buf, lo, hi, left_count + (t[k] - mid_begin), xt[k], pt[k], rc2, acc[k]);
            else
              accumulate<T>(f, buf, lo, hi, xt[k], pt[k], rc2, acc[k]);
          }
        };
        bool pending = false;
        int pending_slot = 0;
        Index ppy = 0, ppz = 0, pleft = 0, pmid = 0;
        const Index zlo = Dim == 3 ? -1 : 0, zhi = Dim == 3 ? rz : 0;
        for (Index pz = zlo; pz <= zhi; ++pz) {
          for (Index py = -1; py <= ry; ++py) {
            Index nrow = 0;
            Vec<Real, Dim> shift;
            if (!neighbor_row(v.geo, y0 + py, z0 + pz, nrow, shift)) continue;  // block-uniform
            const Index* cs = v.cell_start + nrow * nx;
            const PencilSpan s = pencil_span(v.geo, cs, x0, x1);
            // A row of the sub-box: this pass's targets come from registers.
            const bool inner = py >= 0 && py < ry && pz >= 0 && pz < rz;
            Index skip_begin = 0, skip_end = 0;
            if (inner) {
              const Index r = py + ry * pz;
              const Index a = pencil_max(row_off[r], pass),
                          e = pencil_min(row_off[r + 1], pass + bs * K);
              if (a < e) {
                skip_begin = cs[x0] + (a - row_off[r]);
                skip_end = cs[x0] + (e - row_off[r]);
              }
            }
            PencilCopy<Rec, pencil_prefetch> copy;
            copy.template load<T>(b, v, f, s, cs, x0, len, shift, skip_begin, skip_end);
            if (pending) compute(pending_slot, ppy, ppz, pleft, pmid);  // overlaps the loads above
            if (pending && !two) b.sync();                              // one buffer: used up first
            Rec* buf = layout.buffer<Rec>(base, cur);
            copy.template store<T>(b, v, f, s, cs, x0, len, shift, skip_begin, skip_end, buf,
                                   layout.starts<Rec>(base, cur));
            if (inner) {
              CELLINT_DETAIL_UNROLL
              for (int k = 0; k < K; ++k)
                if (active[k] && ly[k] == py && lz[k] == pz)
                  stage_from_registers<T>(s, t[k], xt[k], pt[k], buf);
            }
            b.sync();
            pending = true;
            pending_slot = cur;
            ppy = py;
            ppz = pz;
            pleft = s.left_count;
            pmid = s.mid_begin;
            if (two) cur ^= 1;
          }
        }
        if (pending) {
          compute(pending_slot, ppy, ppz, pleft, pmid);
          if (!two) b.sync();  // two buffers: the next staging goes to the other buffer
        }
        CELLINT_DETAIL_UNROLL
        for (int k = 0; k < K; ++k)
          if (active[k]) out[t[k]] = acc[k];
      }
    }
  }
};

/// Launch plan of X-pencil-reg.
struct XPencilRegPlan {
  Support support;
  LaunchShape shape;
  PencilLayout layout;
  Index sub[3] = {1, 1, 1};
  Index boxes[3] = {1, 1, 1};
  Index box_count = 0;
};

/// The launch-shape rule of the file comment.
template <class B, class R, int D, class F>
XPencilRegPlan plan_x_pencil_reg_once(const Call<B, R, D>& c, const F& f, const Tuning& t) {
  using Kern = XPencilRegInteract<F, R, D>;
  using Rec = typename Kern::Rec;
  constexpr int K = Kern::K;
  XPencilRegPlan plan;
  const DeviceProperties& p = c.props;
  if (!(plan.support = pencil_checks<B>("x-pencil-reg", t, p, false)).ok) return plan;
  if (!c.views.same)
    return refuse(plan, "x-pencil-reg stages its targets from registers as sources: it runs one set only "
                        "(two sets: x-pencil, par-cell or par-part-noloop)");
  for (int d = 0; d < 3; ++d)
    if (t.subbox[d] < 0 || (d >= D && t.subbox[d] > 1))
      return refuse(plan, cat("x-pencil-reg: Tuning::subbox[", d, "] = ", t.subbox[d],
                              d >= D ? " must be 0 or 1 in 2D" : " is negative"));
  const auto& g = c.geometry();
  const Index n[3] = {g.cells[0], g.cells[1], D == 3 ? g.cells[D - 1] : 1};
  const Index mc = c.source_max_per_cell();
  const double mean = c.mean_targets_per_cell();
  const unsigned cap = pencil_thread_cap<B>(p, Kern{c.views, f, nullptr, {}, {1, 1, 1}, {1, 1, 1}, 0});
  // Rows per sub-box: one unless asked for (see strategies/x_pencil_reg.hpp for why).
  const Index sy = t.subbox[1] ? std::min<Index>(t.subbox[1], n[1]) : 1;
  const Index sz = t.subbox[2] ? std::min<Index>(t.subbox[2], n[2]) : 1;
  const Index extra = sy * sz + 1;
  const PencilFit fit = PencilFit::make<Rec>(t, p, mc, extra);
  Index sx = t.subbox[0] ? std::min<Index>(t.subbox[0], n[0]) : 1;
  if (fit.fit1_max < sx)
    return refuse(plan, cat("x-pencil-reg: one staged pencil of ", sx + 2, " cells (", sx,
                            " target cell(s) and 2 ghosts) with M_C = ", mc, " particles per cell needs ",
                            PencilLayout::make<Rec>(sx, mc, 1, extra).bytes,
                            " bytes of shared memory, more than the budget of ", fit.budget_max, " bytes",
                            t.shared_bytes ? " (Tuning::shared_bytes)" : " (the device's opt-in limit)",
                            "; use smaller cells (fewer particles per cell), ",
                            t.subbox[0] > 1 ? "a smaller Tuning::subbox[0], " : "",
                            t.shared_bytes ? "a larger Tuning::shared_bytes, " : "",
                            "or a strategy that streams cells (par-cell-sm, par-part-noloop)"));
  int buffers = fit.buffers_for(sx);
  if (!t.subbox[0]) {
    // The longest sub-box whose expected targets fit the registers of the preferred block size and the budget, balanced
    // over the multiprocessors.
    const long room = static_cast<long>(pencil_preferred<B>(cap)) * K;
    Index want = 1;
    while (want < n[0] && pencil_expected_targets(mean, static_cast<long>(want + 1) * sy * sz, mc) <= room) ++want;
    buffers = fit.default_buffers();
    const long rows = static_cast<long>((n[1] + sy - 1) / sy) * ((n[2] + sz - 1) / sz);
    sx = pencil_balance(std::min(want, fit.longest()), n[0], rows, p.multiprocessors);
  }
  const Index sub[3] = {sx, sy, sz};
  std::copy(sub, sub + 3, plan.sub);
  for (int d = 0; d < 3; ++d) plan.boxes[d] = (n[d] + sub[d] - 1) / sub[d];
  plan.box_count = plan.boxes[0] * plan.boxes[1] * plan.boxes[2];
  plan.layout = PencilLayout::make<Rec>(sx, mc, buffers, extra);
  const long targets = pencil_expected_targets(mean, static_cast<long>(sx) * sy * sz, mc);
  const unsigned threads = t.threads ? std::min(t.threads, cap) : pencil_round_threads<B>((targets + K - 1) / K, cap);
  const unsigned blocks = static_cast<unsigned>(plan.box_count);
  plan.shape = {std::max(1u, t.blocks ? std::min(t.blocks, blocks) : blocks), std::max(1u, threads), plan.layout.bytes};
  return plan;
}

/// The launch-shape rule of strategies/x_pencil_reg.hpp, or its refusal of a functor with load_source() (whose kernel,
/// which stages targets from registers as sources, is then not even instantiated).
template <class B, class R, int D, class F>
XPencilRegPlan plan_x_pencil_reg(const Call<B, R, D>& c, const F& f, const Tuning& t) {
  if constexpr (loads_sources_apart<F, R, D>)
    return refuse(XPencilRegPlan{}, reads_each_particle_once("x-pencil-reg"));
  else
    return plan_x_pencil_reg_once(c, f, t);
}

template <>
struct StrategyImpl<XPencilReg> {
  using Plan = XPencilRegPlan;  ///< support, shape, layout, sub-box
  /// The rule of strategies/x_pencil_reg.hpp; no when one pencil of Sx+2 cells of M_C particles (Sx =
  /// Tuning::subbox[0], or 1 by default) does not fit the shared-memory budget.
  template <class B, class R, int D, class F>
  static Plan plan(const Call<B, R, D>& c, const F& f, const Tuning& t) {
    return plan_x_pencil_reg(c, f, t);
  }
  template <class B, class R, int D, class F>
  static void run(const Call<B, R, D>& c, const F& f, typename FunctorTraits<F, R, D>::Accum* out, const Plan& p) {
    if constexpr (B::is_gpu_like && !loads_sources_apart<F, R, D>)
      B::launch(p.shape, XPencilRegInteract<F, R, D>{c.views, f, out, p.layout, {p.sub[0], p.sub[1], p.sub[2]},
                                                     {p.boxes[0], p.boxes[1], p.boxes[2]}, p.box_count}, c.stream);
  }
};

}  // namespace cellint::detail
