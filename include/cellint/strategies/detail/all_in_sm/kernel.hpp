#pragma once
// All-in-SM: sizing rules, kernel and plan (see strategies/all_in_sm.hpp).

#include <algorithm>
#include <cmath>
#include <cstddef>

#include "cellint/primitives/block_scan.hpp"
#include "cellint/strategies/detail/neighbors.hpp"
#include "cellint/strategies/all_in_sm.hpp"  // the tag and its policy
#include "cellint/strategies/strategy.hpp"

namespace cellint::detail {

/// One X-row of cells of a block's box, as the kernel keeps it in shared memory. A row is, in shared memory, the
/// particles of its (wrapped) left ghost cell, then those of the in-grid cells it covers (one contiguous range of
/// global slots), then those of its (wrapped) right ghost cell. A ghost cell that is in the grid belongs to the in-grid
/// range; one outside an open grid is absent.
template <class Real, int Dim>
struct AllInSMRow {
  Index base;               ///< global cell index of x = 0 in this row; -1 if the row is outside an open grid
  Index g_left;             ///< global slot of the first particle of the wrapped left ghost cell
  Index g_mid;              ///< global slot of the first particle of the in-grid range
  Index g_right;            ///< global slot of the first particle of the wrapped right ghost cell
  Index n_left;             ///< particles of the wrapped left ghost cell (0 if none)
  Index n_mid;              ///< particles of the in-grid range
  Real shift[Dim - 1];      ///< image shift of the row along y (and z)
};

/// Shared-memory layout and decomposition of one All-in-SM launch (byte offsets from the start of the block's dynamic
/// shared memory; every section 16-byte aligned).
struct AllInSMLayout {
  int sub[3] = {1, 1, 1};          ///< target cells per block along x, y, z (the last block of an axis may have fewer)
  int blocks[3] = {1, 1, 1};       ///< blocks along x, y, z
  Index capacity = 0;              ///< particle slots: M_C x cells of the box (ghosts included)
  Index pos_stride = 0;            ///< elements from one position array to the next
  int rows = 0;                    ///< X-rows of the box: prod over y, z of (sub + 2)
  int target_rows = 0;             ///< X-rows of target cells: prod over y, z of sub
  std::size_t off_rows = 0;        ///< AllInSMRow[rows]
  std::size_t off_cstart = 0;      ///< Index[rows x (sub[0] + 3)]: local start of each box cell, plus the row end
  std::size_t off_pos = 0;         ///< Real[Dim][pos_stride]: positions (image shift applied)
  std::size_t off_payload = 0;     ///< Payload[capacity] (absent for position-only functors)
  std::size_t bytes = 0;           ///< total dynamic shared memory
};

/// Sizes of what one box keeps per particle and per row (from Real, Dim and the functor).
struct AllInSMSizes {
  std::size_t real = 4;     ///< sizeof(Real)
  std::size_t payload = 0;  ///< sizeof(Payload), 0 for position-only functors
  std::size_t row = 0;      ///< sizeof(AllInSMRow<Real, Dim>)
};

/// The launch decided on the host: whether it can run, its shape and its layout.
struct AllInSMPlan {
  Support support;          ///< whether it can run, and why not
  LaunchShape shape;        ///< grid, threads and shared bytes
  AllInSMLayout layout;     ///< decomposition and shared-memory layout
  std::size_t budget = 0;   ///< the shared-memory budget the box was sized against
};

/// Rounds up to a multiple of 16 bytes.
constexpr std::size_t all_in_sm_align(std::size_t x) { return (x + 15) / 16 * 16; }

/// Fills the shared-memory layout for target extents `sub` (sub[d] >= 1) and M_C = `mc`.
template <int Dim>
AllInSMLayout all_in_sm_layout(const int (&sub)[3], Index mc, const AllInSMSizes& s) {
  AllInSMLayout l;
  long cells = 1, rows = 1, trows = 1;
  for (int d = 0; d < Dim; ++d) {
    l.sub[d] = sub[d];
    cells *= sub[d] + 2;
    if (d > 0) {
      rows *= sub[d] + 2;
      trows *= sub[d];
    }
  }
  l.capacity = static_cast<Index>(cells * mc);
  l.pos_stride = static_cast<Index>((l.capacity + 3) / 4 * 4);
  l.rows = static_cast<int>(rows);
  l.target_rows = static_cast<int>(trows);
  std::size_t off = all_in_sm_align(sizeof(Index) * static_cast<std::size_t>(rows + trows + 1));
  l.off_rows = off;
  off += all_in_sm_align(s.row * static_cast<std::size_t>(rows));
  l.off_cstart = off;
  off += all_in_sm_align(sizeof(Index) * static_cast<std::size_t>(rows * (sub[0] + 3)));
  l.off_pos = off;
  off += all_in_sm_align(s.real * Dim * static_cast<std::size_t>(l.pos_stride));
  l.off_payload = off;
  off += all_in_sm_align(s.payload * static_cast<std::size_t>(l.capacity));
  l.bytes = off;
  return l;
}

/// The paper's power-of-3 rule (section 5.1), in Dim dimensions: the box (ghosts included) that holds the most cells,
/// at most `max_cells`, among p^Dim and its near-cubes. p is the largest integer with p^Dim <= max_cells (the paper's
/// "closest power of 3 not greater than the memory limit", read as "the largest cube", which its own example confirms:
/// 96 cells -> 4 x 4 x 6). Candidates: 3D p^3, (p+1) p^2, (p+2) p^2, (p+1)^2 p; 2D p^2, (p+1) p, (p+2) p ((p+1)^2
/// exceeds the limit by the choice of p). The longer extents go to x (rows along x are contiguous in global memory).
/// Returns false when p < 3, i.e. not even 3^Dim cells fit.
template <int Dim>
bool all_in_sm_box(long max_cells, int (&box)[3]) {
  long p = static_cast<long>(std::floor(std::pow(static_cast<double>(max_cells), 1.0 / Dim)));
  auto power = [](long a) {
    long r = 1;
    for (int d = 0; d < Dim; ++d) r *= a;
    return r;
  };
  while (p > 0 && power(p) > max_cells) --p;  // guard against pow's rounding
  while (power(p + 1) <= max_cells) ++p;
  box[0] = box[1] = box[2] = 1;
  if (p < 3) return false;
  for (int d = 0; d < Dim; ++d) box[d] = static_cast<int>(p);
  const long base = power(p);
  const long x1 = base / p * (p + 1);  // (p+1) p^(Dim-1)
  const long x2 = base / p * (p + 2);  // (p+2) p^(Dim-1)
  const long xy = Dim == 3 ? (p + 1) * (p + 1) * p : x2 + 1;
  if (Dim == 3 && xy <= max_cells) {
    box[0] = box[1] = static_cast<int>(p + 1);
  } else if (x2 <= max_cells) {
    box[0] = static_cast<int>(p + 2);
  } else if (x1 <= max_cells) {
    box[0] = static_cast<int>(p + 1);
  }
  return true;
}

/// Blocks needed to cover `cells` with target extents `sub`, per axis and in total.
template <int Dim>
long all_in_sm_blocks(const Index (&cells)[Dim], const int (&sub)[3], int (&per_axis)[3]) {
  long total = 1;
  per_axis[0] = per_axis[1] = per_axis[2] = 1;
  for (int d = 0; d < Dim; ++d) {
    per_axis[d] = static_cast<int>((cells[d] + sub[d] - 1) / sub[d]);
    total *= per_axis[d];
  }
  return total;
}

/// Shrinks the target extents not fixed by the caller (`fixed[d]`) one cell at a time, the largest first (z before y
/// before x on ties), while `more()` holds and some free extent exceeds 1.
template <int Dim, class More>
void all_in_sm_shrink_while(int (&sub)[3], const bool (&fixed)[3], const More& more) {
  while (more()) {
    int pick = -1;
    for (int d = Dim - 1; d >= 0; --d)
      if (!fixed[d] && sub[d] > 1 && (pick < 0 || sub[d] > sub[pick])) pick = d;
    if (pick < 0) return;
    --sub[pick];
  }
}

/// Shrinks the free target extents (all_in_sm_shrink_while) while there are fewer blocks than `min_blocks` (paper 7.1:
/// B = 2,2,2 with 12 blocks on 40 multiprocessors -> 2,2,1 -> 2,1,1, 48 blocks).
template <int Dim>
void all_in_sm_shrink(const Index (&cells)[Dim], int (&sub)[3], const bool (&fixed)[3], long min_blocks) {
  int per_axis[3];
  all_in_sm_shrink_while<Dim>(sub, fixed, [&] { return all_in_sm_blocks<Dim>(cells, sub, per_axis) < min_blocks; });
}

/// Plans an All-in-SM launch for a grid of `cells` with M_C = `mc` (see the file comment for the rules). Independent of
/// the backend, so the rules can be checked for any device.
template <int Dim>
AllInSMPlan all_in_sm_plan(const Index (&cells)[Dim], Index mc, const AllInSMSizes& s, const DeviceProperties& p,
                           const Tuning& t) {
  AllInSMPlan plan;
  const Index m = mc > 0 ? mc : 1;
  const std::size_t per_particle = Dim * s.real + s.payload;
  const int ones[3] = {1, 1, 1};
  // The smallest box that can run: one target cell, or the fixed extents of Tuning::subbox.
  int least[3] = {1, 1, 1};
  bool fixed[3] = {false, false, false};
  for (int d = 0; d < Dim; ++d) {
    if (t.subbox[d] < 0)
      return refuse(plan, cat("Tuning::subbox[", d, "] = ", t.subbox[d], " is negative; use 0 (the rule "
                              "decides) or a number of target cells"));
    if (t.subbox[d] > 0) {
      fixed[d] = true;
      least[d] = static_cast<int>(std::min<Index>(t.subbox[d], cells[d] > 0 ? cells[d] : 1));
    }
  }
  const std::size_t need = all_in_sm_layout<Dim>(least, m, s).bytes;
  if (t.threads > static_cast<unsigned>(p.max_threads_per_block))
    return refuse(plan, cat("Tuning::threads = ", t.threads, " exceeds the device's ", p.max_threads_per_block,
                            " threads per block"));
  if (t.shared_bytes > p.shared_per_block_optin)
    return refuse(plan, cat("Tuning::shared_bytes = ", t.shared_bytes, " exceeds the device's opt-in limit of ",
                            p.shared_per_block_optin, " bytes of shared memory per block"));
  plan.budget = t.shared_bytes ? t.shared_bytes : p.shared_per_block;
  if (!t.shared_bytes && need > plan.budget) {
    const std::size_t two_per_mp = std::min(p.shared_per_block_optin, p.shared_per_multiprocessor / 2);
    plan.budget = need <= two_per_mp ? two_per_mp : p.shared_per_block_optin;
  }
  const std::size_t smallest = all_in_sm_layout<Dim>(ones, m, s).bytes;
  const bool any_fixed = fixed[0] || fixed[1] || fixed[2];
  const char* which = t.shared_bytes ? " (Tuning::shared_bytes)" : "";
  if (need > plan.budget && any_fixed && smallest <= plan.budget)
    return refuse(plan, cat("Tuning::subbox {", least[0], ", ", least[1], Dim == 3 ? cat(", ", least[2]) : "",
                            "} (clipped to the grid) with M_C = ", mc, " x ", per_particle,
                            " bytes per particle needs ", need, " bytes of shared memory, more than the budget of ",
                            plan.budget, " bytes", which, "; use a smaller sub-box"));
  if (need > plan.budget)
    return refuse(plan, cat("a box of 3^", Dim, " = ", Dim == 3 ? 27 : 9, " cells (one target cell and its ghosts) "
                            "of M_C = ", mc, " particles x ", per_particle, " bytes per particle (positions and "
                            "payload), with its offsets, needs ", smallest, " bytes of shared memory, more than the "
                            "budget of ", plan.budget, " bytes", which, " (device: ", p.shared_per_block,
                            " per block, ", p.shared_per_block_optin, " after opting in); use x-pencil (3 cells of "
                            "M_C particles) or par-part-noloop (no shared memory)"));

  // The box the budget holds (power-of-3 rule), decreasing the cell count until it really fits.
  int sub[3] = {1, 1, 1};
  long max_cells = static_cast<long>(plan.budget / (static_cast<std::size_t>(m) * per_particle));
  for (int box[3]; all_in_sm_box<Dim>(max_cells, box);) {
    int cand[3] = {1, 1, 1};
    long count = 1;
    for (int d = 0; d < Dim; ++d) {
      cand[d] = box[d] - 2;
      count *= box[d];
    }
    if (all_in_sm_layout<Dim>(cand, m, s).bytes <= plan.budget) {
      for (int d = 0; d < Dim; ++d) sub[d] = cand[d];
      break;
    }
    max_cells = count - 1;
  }
  for (int d = 0; d < Dim; ++d)
    sub[d] = static_cast<int>(std::min<Index>(fixed[d] ? least[d] : sub[d], cells[d] > 0 ? cells[d] : 1));
  // Free axes give way when fixed ones made the box too large for the budget (it terminates: with every free axis at 1
  // the box is `least`, which fits).
  all_in_sm_shrink_while<Dim>(sub, fixed, [&] { return all_in_sm_layout<Dim>(sub, m, s).bytes > plan.budget; });
  all_in_sm_shrink<Dim>(cells, sub, fixed, p.multiprocessors);

  plan.layout = all_in_sm_layout<Dim>(sub, m, s);
  const long blocks = all_in_sm_blocks<Dim>(cells, sub, plan.layout.blocks);
  unsigned threads = t.threads;
  if (!threads) {
    const long warp = p.warp_size > 0 ? p.warp_size : 32;
    const long want = (static_cast<long>(plan.layout.capacity) + warp - 1) / warp * warp;
    threads = static_cast<unsigned>(std::min<long>({want, 512L, static_cast<long>(p.max_threads_per_block)}));
  }
  plan.shape = LaunchShape{static_cast<unsigned>(blocks), threads, plan.layout.bytes};
  plan.support = Support::yes();
  return plan;
}

/// All-in-SM kernel (paper section 5.1, Algorithm 4, Figure 3). Block k owns the target sub-box number k (x fastest) of
/// extents t = min(sub, cells - origin) and the box of extents w = t + 2 around it.
///
/// Shared memory (AllInSMLayout, R = box rows = prod_{y,z} w, TR = target rows = prod_{y,z} t):
///   scan[R + TR + 1]       particles per box row, then targets per target row; scanned in place
///   rows[R]                AllInSMRow: global ranges and image shifts of each box row
///   cstart[R][w_x + 1]     local start of every box cell in the particle arrays, then the row end
///   pos[Dim][capacity]     positions, periodic image shift applied (SoA)
///   payload[capacity]      the functor's payload (absent when position-only)
///
/// Phases and barriers:
///   1. Row setup: each box row finds its global cell range (an X-row is contiguous in global
///      memory; a ghost cell wrapped across a periodic x face is a separate one-cell range) and
///      image shift, and writes its particle count (the difference of two global offsets, Figure 3);
///      each target row writes its target count.                                  -> barrier
///   2. Block exclusive scan of the R + TR counts (primitives/block_scan.hpp): where each row's
///      particles go in shared memory and each target row's first target.          -> barriers inside
///   3. Local offsets of every box cell (cstart) and the copy of the box's particles: slot j finds
///      its row by binary search over the scanned row starts, its global slot from the row's
///      ranges; the image shift is added here, once per particle.                 -> barrier
///   4. Interactions: target k (block-strided) finds its target row by binary search, its cell by binary search in the
///      row's cstart, and loops over the 3^(Dim-1) neighbour rows, each three cells = one contiguous slot range; it
///      writes out[global slot]. (The paper keeps a shared slot -> global slot array; a target always lies in its row's
///      in-grid range, which gives the global slot by one addition, so that array's 4 bytes a particle are left for
///      more cells.)
/// Every loop around a barrier has the same trip count in every thread.
template <class F, class Real, int Dim>
struct AllInSMInteract {
  using T = FunctorTraits<F, Real, Dim>;
  using Payload = typename T::Payload;
  using Row = AllInSMRow<Real, Dim>;
  PairViews<Real, Dim> views;  ///< one set (the plan refuses two)
  F f;                         ///< the pair functor
  typename T::Accum* out;      ///< one accumulator per slot
  AllInSMLayout lay;           ///< decomposition and shared-memory layout

  template <class Block>
  CELLINT_HD void operator()(Block& b) const {
    const GridView<Real, Dim>& v = views.sources;
    const GridGeometry<Real, Dim>& g = v.geo;
    const Index* cs = v.cell_start;
    const int tid = static_cast<int>(b.thread_rank());
    const int bs = static_cast<int>(b.block_size());

    // This block's sub-box: origin o, target extents t, box extents w.
    int o[Dim], t[Dim], w[Dim];
    {
      int rest = static_cast<int>(b.block_rank());
      for (int d = 0; d < Dim; ++d) {
        const int k = rest % lay.blocks[d];
        rest /= lay.blocks[d];
        o[d] = k * lay.sub[d];
        t[d] = lay.sub[d] < g.cells[d] - o[d] ? lay.sub[d] : static_cast<int>(g.cells[d] - o[d]);
        w[d] = t[d] + 2;
      }
    }
    int R = 1, TR = 1;
    for (int d = 1; d < Dim; ++d) {
      R *= w[d];
      TR *= t[d];
    }
    const int rl = w[0] + 1;  // cstart entries per row
    const Index nx = g.cells[0];
    const bool px = g.box.periodic[0];

    unsigned char* sm = b.template shared<unsigned char>();
    Index* scan = reinterpret_cast<Index*>(sm);
    Row* rows = reinterpret_cast<Row*>(sm + lay.off_rows);
    Index* cstart = reinterpret_cast<Index*>(sm + lay.off_cstart);
    Real* sx[Dim];
    for (int d = 0; d < Dim; ++d) sx[d] = reinterpret_cast<Real*>(sm + lay.off_pos) + d * lay.pos_stride;
    Payload* sp = reinterpret_cast<Payload*>(sm + lay.off_payload);

    // Phase 1: rows and counts.
    for (int r = tid; r < R; r += bs) {
      Row row{};
      row.base = -1;
      Index gc[Dim];
      gc[0] = 0;
      bool inside = true;
      int rest = r;
      for (int d = 1; d < Dim; ++d) {
        Index q = o[d] - 1 + rest % w[d];
        rest /= w[d];
        if (!wrap_axis(g, d, q, row.shift[d - 1])) inside = false;
        gc[d] = q;
      }
      Index count = 0;
      if (inside) {
        row.base = g.linear(gc);
        const Index lo = o[0] > 0 ? o[0] - 1 : 0;
        const Index hi = o[0] + t[0] < nx ? o[0] + t[0] : nx - 1;
        row.g_mid = cs[row.base + lo];
        row.n_mid = cs[row.base + hi + 1] - row.g_mid;
        if (px && o[0] == 0) {
          row.g_left = cs[row.base + nx - 1];
          row.n_left = cs[row.base + nx] - row.g_left;
        }
        Index n_right = 0;
        if (px && o[0] + t[0] == nx) {
          row.g_right = cs[row.base];
          n_right = cs[row.base + 1] - row.g_right;
        }
        count = row.n_left + row.n_mid + n_right;
      }
      rows[r] = row;
      scan[r] = count;
    }
    for (int i = tid; i < TR; i += bs) {
      Index gc[Dim];
      gc[0] = 0;
      int rest = i;
      for (int d = 1; d < Dim; ++d) {
        gc[d] = o[d] + rest % t[d];
        rest /= t[d];
      }
      const Index base = g.linear(gc);
      scan[R + i] = cs[base + o[0] + t[0]] - cs[base + o[0]];
    }
    b.sync();

    // Phase 2: row starts and target-row starts.
    block_exclusive_scan_inplace(b, scan, R + TR, scan + R + TR);
    const Index box_particles = scan[R];
    const Index targets = scan[R + TR] - box_particles;

    // Phase 3: local cell offsets, and the copy into shared memory.
    for (int e = tid; e < R * rl; e += bs) {
      const int r = e / rl;
      const int x = e - r * rl;
      const Row& row = rows[r];
      const Index s = scan[r];
      const Index gx = o[0] - 1 + x;
      Index c;
      if (row.base < 0 || gx < 0) c = s;
      else if (x == w[0]) c = scan[r + 1];
      else if (gx >= nx) c = s + row.n_left + row.n_mid;
      else c = s + row.n_left + (cs[row.base + gx] - row.g_mid);
      cstart[e] = c;
    }
    for (Index j = tid; j < box_particles; j += bs) {
      const int r = last_le(scan, 0, R - 1, j);
      const Row& row = rows[r];
      Index k = j - scan[r];
      Index src;
      Real sh0 = Real(0);
      if (k < row.n_left) {
        src = row.g_left + k;
        sh0 = -g.box.lengths[0];
      } else if ((k -= row.n_left) < row.n_mid) {
        src = row.g_mid + k;
      } else {
        src = row.g_right + (k - row.n_mid);
        sh0 = g.box.lengths[0];
      }
      sx[0][j] = v.pos[0][src] + sh0;
      for (int d = 1; d < Dim; ++d) sx[d][j] = v.pos[d][src] + row.shift[d - 1];
      if constexpr (!T::position_only) sp[j] = T::load(f, v, src);
    }
    b.sync();

    // Phase 4: interactions of the targets, sources from shared memory.
    const Real rc2 = cutoff2(g);
    for (Index k = tid; k < targets; k += bs) {
      const int i = last_le(scan + R, 0, TR - 1, box_particles + k);
      int r = 0, stride = 1, rest = i;
      for (int d = 1; d < Dim; ++d) {
        r += (rest % t[d] + 1) * stride;
        rest /= t[d];
        stride *= w[d];
      }
      const Index* crow = cstart + r * rl;
      const Index j = crow[1] + (box_particles + k - scan[R + i]);
      const int x = 1 + last_le(crow + 1, 0, t[0] - 1, j);
      const Row& row = rows[r];
      const Index gslot = row.g_mid + (j - scan[r] - row.n_left);

      Vec<Real, Dim> xt;
      for (int d = 0; d < Dim; ++d) xt[d] = sx[d][j];
      Payload pt{};
      if constexpr (!T::position_only) pt = sp[j];
      auto acc = T::init(f);
      SoaSources<Real, Dim, Payload> src;
      for (int d = 0; d < Dim; ++d) src.x[d] = sx[d];
      src.p = sp;
      constexpr int neighbour_rows = Dim == 3 ? 9 : 3;
      for (int n = 0; n < neighbour_rows; ++n) {
        const int dy = n % 3 - 1;
        const int dz = Dim == 3 ? n / 3 - 1 : 0;
        const Index* nrow = crow + (dy + dz * w[1]) * rl;
        if (dy == 0 && dz == 0)  // the own row holds the target itself (slot j)
          accumulate_around<T>(f, src, nrow[x - 1], nrow[x + 2], j, xt, pt, rc2, acc);
        else
          accumulate<T>(f, src, nrow[x - 1], nrow[x + 2], xt, pt, rc2, acc);
      }
      out[gslot] = acc;
    }
  }
};

/// All-in-SM: the plan and the launch (paper 5.1; sizing rules in strategies/all_in_sm.hpp).
template <>
struct StrategyImpl<AllInSM> {
  using Plan = AllInSMPlan;  ///< support, shape, layout, budget

  /// What a box keeps per particle and per row for functor F on Real positions in D dimensions.
  template <class R, int D, class F>
  static AllInSMSizes sizes() {
    using T = FunctorTraits<F, R, D>;
    return AllInSMSizes{sizeof(R), T::position_only ? 0 : sizeof(typename T::Payload), sizeof(AllInSMRow<R, D>)};
  }

  /// The launch: a GPU-like backend, one set, a box of 3^D cells of M_C particles in the shared-memory budget (and a
  /// valid Tuning); threads capped by the kernel's registers.
  template <class B, class R, int D, class F>
  static Plan plan(const Call<B, R, D>& c, const F& f, const Tuning& t) {
    if constexpr (loads_sources_apart<F, R, D>)  // (its kernel is then not instantiated)
      return refuse(Plan{}, reads_each_particle_once("all-in-sm"));
    else
      return plan_once(c, f, t);
  }
  /// plan() for a functor that reads both sides with load().
  template <class B, class R, int D, class F>
  static Plan plan_once(const Call<B, R, D>& c, const F& f, const Tuning& t) {
    static_assert(alignof(typename FunctorTraits<F, R, D>::Payload) <= 16,
                  "cellint: all-in-sm stages the payload in shared memory, which is 16-byte aligned");
    if (!B::is_gpu_like) return refuse(Plan{}, "all-in-sm needs a GPU-like backend (Emulated, Cuda or Hip)");
    if (!c.views.same)
      return refuse(Plan{}, "all-in-sm stages targets and sources as one box: it runs one set only "
                            "(two sets: par-cell, par-cell-sm or par-part-noloop)");
    Index cells[D];
    for (int d = 0; d < D; ++d) cells[d] = c.geometry().cells[d];
    Plan pl = all_in_sm_plan<D>(cells, c.views.sources.max_per_cell, sizes<R, D, F>(), c.props, t);
    if constexpr (B::is_gpu_like) {
      if (pl.support.ok) {
        const int cap = B::max_threads_for(AllInSMInteract<F, R, D>{c.views, f, nullptr, pl.layout});
        if (cap > 0 && pl.shape.block > static_cast<unsigned>(cap)) pl.shape.block = static_cast<unsigned>(cap);
      }
    }
    return pl;
  }

  template <class B, class R, int D, class F>
  static void run(const Call<B, R, D>& c, const F& f, typename FunctorTraits<F, R, D>::Accum* out, const Plan& p) {
    if constexpr (B::is_gpu_like && !loads_sources_apart<F, R, D>)
      B::launch(p.shape, AllInSMInteract<F, R, D>{c.views, f, out, p.layout}, c.stream);
  }
};

}  // namespace cellint::detail
