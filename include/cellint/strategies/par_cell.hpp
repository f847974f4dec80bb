#pragma once
/// @file
/// Par-Cell and Par-Cell-SM (paper sections 4.3 and 4.4, Algorithms 2 and 3): one thread block
/// per target cell (a grid-stride loop over cells when there are fewer blocks than cells), one
/// thread per target particle of the cell (looping when the cell holds more particles than the
/// block has threads), the target kept in registers. Par-Cell reads the sources of the 3^Dim
/// neighbour cells from global memory; Par-Cell-SM stages each source cell through a
/// shared-memory buffer of `Tuning::sm_particles` particles (512 by default), one chunk at a time.
///
/// Launch shapes (paper 7.1): 128 threads per block (`Tuning::threads`), as many blocks as cells
/// (`Tuning::blocks` overrides; the count is capped at the device's grid limit, the kernels
/// stride over the remaining cells). Neither strategy depends on M_C: a crowded cell only costs
/// more rounds of targets and more chunks of sources.

#include <algorithm>
#include <cstddef>
#include <cstdint>

#include "cellint/core/pair_functor.hpp"
#include "cellint/grid/cell_grid.hpp"
#include "cellint/strategies/strategy.hpp"

namespace cellint::detail {

/// The up to 3^Dim neighbour cells of one target cell (its coordinates; neighbour coordinates
/// and image shifts are derived per row of cells, never per pair).
template <class Real, int Dim>
struct ParCellNeighborhood {
  Index c[Dim];  ///< coordinates of the target cell

  /// Neighbourhood of linear cell `cell` of grid `g`.
  CELLINT_HD ParCellNeighborhood(const GridGeometry<Real, Dim>& g, Index cell) { g.coords(cell, c); }

  /// Neighbour at offset `o` (-1, 0, +1) along axis `d`: false past an open face, else its
  /// coordinate `x` (wrapped on a periodic axis) and the shift `s` to add to its positions.
  CELLINT_HD bool axis(const GridGeometry<Real, Dim>& g, int d, int o, Index& x, Real& s) const {
    x = c[d] + o;
    s = Real(0);
    if (x >= 0 && x < g.cells[d]) return true;
    if (!g.box.periodic[d]) return false;
    s = x < 0 ? -g.box.lengths[d] : g.box.lengths[d];
    x = x < 0 ? x + g.cells[d] : x - g.cells[d];
    return true;
  }

  /// Calls fn(first_cell, end_cell, shift) for the source cells in the order z, y, x (x fastest,
  /// as Par-Part visits them). With MergeX, neighbours adjacent along X in memory (same row, no
  /// periodic wrap between them) come as one range [first_cell, end_cell) of up to 3 cells, else
  /// every call is one cell. Particles of cells [first_cell, end_cell) are the contiguous slots
  /// [cell_start[first_cell], cell_start[end_cell]).
  template <bool MergeX, class Fn>
  CELLINT_HD void for_each(const GridGeometry<Real, Dim>& g, Fn&& fn) const {
    constexpr int rows = Dim == 3 ? 9 : 3;
    for (int r = 0; r < rows; ++r) {
      Vec<Real, Dim> s;
      Index y;
      if (!axis(g, 1, r % 3 - 1, y, s[1])) continue;
      Index row = y;
      if constexpr (Dim == 3) {
        Index z;
        if (!axis(g, 2, r / 3 - 1, z, s[2])) continue;
        row += z * g.cells[1];
      }
      row *= g.cells[0];
      for (int ox = -1; ox <= 1;) {
        Index x;
        if (!axis(g, 0, ox, x, s[0])) {
          ++ox;
          continue;
        }
        Index last = x;
        int e = ox + 1;
        if constexpr (MergeX) {
          for (; e <= 1; ++e) {
            Index x2;
            Real s2;
            if (!axis(g, 0, e, x2, s2) || x2 != last + 1) break;
            last = x2;
          }
        }
        fn(row + x, row + last + 1, s);
        ox = e;
      }
    }
  }
};

/// Par-Cell kernel (paper 4.3, Algorithm 2).
///
/// Phases: block b takes target cells b, b + gridDim, ...; thread i of the block takes the
/// cell's particles i, i + blockDim, ..., keeps the target's position, payload and accumulator in
/// registers, and walks the neighbour cells reading sources from global memory (all threads of a
/// block read the same sources, so the loads are broadcast and cached). X-adjacent neighbour
/// cells are walked as one contiguous range of up to 3 cells; the periodic image shift is
/// resolved once per range. No shared memory, no barriers, so threads without a target leave
/// at once.
template <class F, class Real, int Dim>
struct ParCellInteract {
  using T = FunctorTraits<F, Real, Dim>;
  GridView<Real, Dim> v;        ///< the grid
  F f;                          ///< the pair functor
  typename T::Accum* out;       ///< one accumulator per sorted slot

  template <class Block>
  CELLINT_HD void operator()(Block& b) const {
    const Index ncell = v.geo.cell_count();
    const Index tid = static_cast<Index>(b.thread_rank());
    const Index threads = static_cast<Index>(b.block_size());
    const Index blocks = static_cast<Index>(b.grid_size());
    const Real rc2 = v.geo.cutoff * v.geo.cutoff;
    for (Index cell = static_cast<Index>(b.block_rank()); cell < ncell; cell += blocks) {
      const Index end = v.cell_start[cell + 1];
      const Index first = v.cell_start[cell] + tid;
      if (first >= end) continue;
      const ParCellNeighborhood<Real, Dim> nb(v.geo, cell);
      for (Index t = first; t < end; t += threads) {
        const Vec<Real, Dim> xt = v.position(t);
        const typename T::Payload pt = T::load(f, v, t);
        auto acc = T::init(f);
        nb.template for_each<true>(v.geo, [&](Index c0, Index c1, const Vec<Real, Dim>& shift) {
          const Index s_end = v.cell_start[c1];
          for (Index s = v.cell_start[c0]; s < s_end; ++s) {
            if (s == t) continue;
            Vec<Real, Dim> dr;
            for (int d = 0; d < Dim; ++d) dr[d] = xt[d] - (v.pos[d][s] + shift[d]);
            const Real r2 = norm2(dr);
            if (!T::cutoff_test || r2 < rc2) f(acc, pt, T::load(f, v, s), dr, r2);
          }
        });
        out[t] = acc;
      }
    }
  }
};

/// Par-Cell-SM kernel (paper 4.4, Algorithm 3).
///
/// Shared memory (`chunk` particles): Dim arrays of `chunk` source coordinates (SoA, the periodic
/// image shift already added), then, unless the functor is position-only, `chunk` payloads
/// (aligned to alignof(Payload)). See par_cell_sm_bytes().
///
/// Phases, per target cell of the block (b, b + gridDim, ...; a cell with no particles is
/// skipped by the whole block, its bounds are block-uniform): rounds of blockDim targets
/// (round r: thread i holds target r * blockDim + i in registers when it exists,
/// thread_compute in the paper); in each round, for each of the 3^Dim source cells, for each
/// chunk of at most `chunk` of its particles: all threads copy the chunk from global memory,
/// barrier, the threads holding a target accumulate over the chunk (a shared-memory broadcast,
/// every thread reads the same entry), barrier (the next copy overwrites the buffer). Every loop
/// that contains a barrier has a block-uniform trip count (cell bounds, cell_start and `chunk`
/// only), so every thread reaches every barrier: 2 per chunk.
template <class F, class Real, int Dim>
struct ParCellSMInteract {
  using T = FunctorTraits<F, Real, Dim>;
  using Payload = typename T::Payload;
  static_assert(alignof(Payload) <= 16, "cellint: Par-Cell-SM stages F::Payload in shared memory, which is "
                                        "16-byte aligned; the payload needs alignof <= 16");
  GridView<Real, Dim> v;        ///< the grid
  F f;                          ///< the pair functor
  typename T::Accum* out;       ///< one accumulator per sorted slot
  Index chunk;                  ///< staging buffer capacity in particles

  /// Byte offset of the payload array behind `s` staged positions.
  CELLINT_HD static std::size_t payload_offset(std::size_t s) {
    const std::size_t a = alignof(Payload);
    return (Dim * s * sizeof(Real) + a - 1) / a * a;
  }

  template <class Block>
  CELLINT_HD void operator()(Block& b) const {
    unsigned char* smem = b.template shared<unsigned char>();
    Real* sx[Dim];
    for (int d = 0; d < Dim; ++d) sx[d] = reinterpret_cast<Real*>(smem) + d * chunk;
    Payload* sp = nullptr;
    if constexpr (!T::position_only) sp = reinterpret_cast<Payload*>(smem + payload_offset(chunk));

    const Index ncell = v.geo.cell_count();
    const Index tid = static_cast<Index>(b.thread_rank());
    const Index threads = static_cast<Index>(b.block_size());
    const Index blocks = static_cast<Index>(b.grid_size());
    const Real rc2 = v.geo.cutoff * v.geo.cutoff;
    for (Index cell = static_cast<Index>(b.block_rank()); cell < ncell; cell += blocks) {
      const Index begin = v.cell_start[cell];
      const Index end = v.cell_start[cell + 1];
      if (begin == end) continue;  // block-uniform
      const ParCellNeighborhood<Real, Dim> nb(v.geo, cell);
      for (Index round = begin; round < end; round += threads) {
        const Index t = round + tid;
        const bool compute = t < end;
        const Index mine = compute ? t : begin;  // idle threads load a valid slot they never use
        const Vec<Real, Dim> xt = v.position(mine);
        const Payload pt = T::load(f, v, mine);
        auto acc = T::init(f);
        nb.template for_each<false>(v.geo, [&](Index c0, Index c1, const Vec<Real, Dim>& shift) {
          const Index s_end = v.cell_start[c1];
          for (Index s0 = v.cell_start[c0]; s0 < s_end; s0 += chunk) {
            const Index m = s_end - s0 < chunk ? s_end - s0 : chunk;
            for (Index k = tid; k < m; k += threads) {
              for (int d = 0; d < Dim; ++d) sx[d][k] = v.pos[d][s0 + k] + shift[d];
              if constexpr (!T::position_only) sp[k] = T::load(f, v, s0 + k);
            }
            b.sync();
            if (compute) {
              const Index self = t - s0;  // in [0, m) only for the target's own chunk
              for (Index k = 0; k < m; ++k) {
                if (k == self) continue;
                Vec<Real, Dim> dr;
                for (int d = 0; d < Dim; ++d) dr[d] = xt[d] - sx[d][k];
                const Real r2 = norm2(dr);
                if (!T::cutoff_test || r2 < rc2) {
                  if constexpr (T::position_only) f(acc, pt, pt, dr, r2);
                  else f(acc, pt, sp[k], dr, r2);
                }
              }
            }
            b.sync();
          }
        });
        if (compute) out[t] = acc;
      }
    }
  }
};

/// Shared-memory bytes Par-Cell-SM needs to stage `s` particles for functor F.
template <class F, class Real, int Dim>
std::size_t par_cell_sm_bytes(std::size_t s) {
  using K = ParCellSMInteract<F, Real, Dim>;
  if (FunctorTraits<F, Real, Dim>::position_only) return Dim * s * sizeof(Real);
  return K::payload_offset(s) + s * sizeof(typename K::Payload);
}

/// Blocks a 1-D launch of `threads` threads per block may have: 2^31 - 1 (CUDA's gridDim.x) and
/// fewer than 2^32 threads in all (HIP).
inline unsigned par_cell_max_blocks(unsigned threads) {
  const std::uint64_t by_threads = 0xFFFFFFFFull / (threads ? threads : 1);
  return static_cast<unsigned>(std::min<std::uint64_t>(0x7FFFFFFFull, by_threads));
}

/// Launch shape and checks shared by Par-Cell and Par-Cell-SM.
struct ParCellCommon {
  /// Threads per block: Tuning::threads or 128 (paper 7.1).
  static unsigned threads(const Tuning& t) { return t.threads ? t.threads : 128u; }
  /// Blocks: Tuning::blocks, else one per cell, capped at the grid limit (the kernels stride).
  static unsigned blocks(Index cells, unsigned threads, const Tuning& t) {
    if (t.blocks) return t.blocks;
    return static_cast<unsigned>(std::max<std::int64_t>(1, std::min<std::int64_t>(cells, par_cell_max_blocks(threads))));
  }
  /// The checks both strategies share: a GPU-like backend, a legal block and grid size.
  template <class B, class K>
  static Support check(const char* name, const DeviceProperties& p, const Tuning& t, const K& kernel) {
    if (!B::is_gpu_like) return Support::no(cat(name, " needs a GPU-like backend (Emulated, Cuda or Hip); ", B::name(),
                                                " runs the CPU strategies (cell-loop)"));
    const unsigned n = threads(t);
    if (static_cast<long>(n) > p.max_threads_per_block)
      return Support::no(cat(name, ": Tuning::threads = ", n, " exceeds the device's ", p.max_threads_per_block,
                             " threads per block; use at most that (default 128)"));
    if (t.blocks > par_cell_max_blocks(n))
      return Support::no(cat(name, ": Tuning::blocks = ", t.blocks, " exceeds the grid limit of ",
                             par_cell_max_blocks(n), " blocks of ", n, " threads; use fewer (0 = one per cell)"));
    if constexpr (B::is_gpu_like) {
      if (n > 128) {  // any kernel fits 128 threads; above that registers may not
        const int limit = B::max_threads_for(kernel);
        if (static_cast<long>(n) > limit)
          return Support::no(cat(name, ": Tuning::threads = ", n, " exceeds the ", limit,
                                 " threads per block this kernel can run with (register-limited) on this device; "
                                 "use at most that"));
      }
    } else {
      (void)kernel;
    }
    return Support::yes();
  }
};

/// Par-Cell (paper 4.3): one block per cell, sources read from global memory.
template <>
struct StrategyImpl<ParCell> : ParCellCommon {
  /// Whether Par-Cell can run: a GPU-like backend and a legal launch (any M_C works).
  template <class B, class R, int D, class F>
  static Support supports(const CellGrid<B, R, D>& grid, const F& f, const DeviceProperties& p, const Tuning& t) {
    return check<B>("par-cell", p, t, ParCellInteract<F, R, D>{grid.view(), f, nullptr});
  }
  /// {blocks = cells (capped; Tuning::blocks), threads = 128 (Tuning::threads), no shared memory}.
  template <class B, class R, int D, class F>
  static LaunchShape shape(const CellGrid<B, R, D>& grid, const F&, const DeviceProperties&, const Tuning& t) {
    const unsigned n = threads(t);
    return {blocks(grid.cell_count(), n, t), n, 0};
  }
  /// Launches the kernel on the grid's stream (asynchronous); returns the shape.
  template <class B, class R, int D, class F>
  static LaunchShape run(const CellGrid<B, R, D>& grid, const F& f, typename F::Accum* out, const Tuning& t) {
    LaunchShape s{};
    if constexpr (B::is_gpu_like) {
      s = shape(grid, f, B::properties(), t);
      if (grid.size() == 0) return s;
      B::launch(s, ParCellInteract<F, R, D>{grid.view(), f, out}, grid.stream());
    }
    return s;
  }
};

/// Par-Cell-SM (paper 4.4): one block per cell, each source cell staged through shared memory.
template <>
struct StrategyImpl<ParCellSM> : ParCellCommon {
  /// Staging capacity in particles and its bytes, or why there is none.
  struct Plan {
    std::size_t particles = 0;  ///< staging buffer capacity (the kernel's chunk)
    std::size_t bytes = 0;      ///< dynamic shared memory per block
    Support support;            ///< whether it fits
  };

  /// Chooses the buffer: Tuning::sm_particles if set (must fit Tuning::shared_bytes, or the
  /// device's opt-in limit), else 512 particles (paper 7.1), shrunk to fit Tuning::shared_bytes
  /// or the default 48 KiB (to a multiple of the block size when at least one block's worth fits).
  template <class F, class R, int D>
  static Plan plan(const DeviceProperties& p, const Tuning& t) {
    using Tr = FunctorTraits<F, R, D>;
    Plan r;
    const std::size_t per = D * sizeof(R) + (Tr::position_only ? 0 : sizeof(typename Tr::Payload));
    const char* what = Tr::position_only ? " coordinates" : " coordinates + payload";
    if (t.shared_bytes > p.shared_per_block_optin) {
      r.support = Support::no(cat("par-cell-sm: Tuning::shared_bytes = ", t.shared_bytes,
                                  " exceeds the device's per-block limit of ", p.shared_per_block_optin, " bytes"));
      return r;
    }
    if (t.sm_particles) {
      const std::size_t limit = t.shared_bytes ? t.shared_bytes : p.shared_per_block_optin;
      r.particles = t.sm_particles;
      r.bytes = par_cell_sm_bytes<F, R, D>(r.particles);
      if (r.bytes > limit)
        r.support = Support::no(cat("par-cell-sm: Tuning::sm_particles = ", t.sm_particles, " particles of ", per,
                                    " bytes (", D, what, ") need ", r.bytes, " bytes of shared memory, more than the ",
                                    limit, "-byte budget (", t.shared_bytes ? "Tuning::shared_bytes" : "device opt-in limit",
                                    "); use at most ", limit / per, " particles"));
      return r;
    }
    const std::size_t budget = t.shared_bytes ? t.shared_bytes : p.shared_per_block;
    std::size_t s = std::min<std::size_t>(512, budget / per);
    while (s > 0 && par_cell_sm_bytes<F, R, D>(s) > budget) --s;
    if (s == 0) {
      r.support = Support::no(cat("par-cell-sm: one staged particle takes ", per, " bytes (", D, what,
                                  "), more than the ", budget,
                                  "-byte shared-memory budget; raise Tuning::shared_bytes (up to ",
                                  p.shared_per_block_optin, ") or use par-cell"));
      return r;
    }
    const std::size_t n = threads(t);
    if (s < 512 && s > n) s = s / n * n;
    r.particles = s;
    r.bytes = par_cell_sm_bytes<F, R, D>(s);
    return r;
  }

  /// Whether Par-Cell-SM can run: a GPU-like backend, a legal launch, and a staging buffer of at
  /// least one particle within the shared-memory budget (any M_C works: cells are staged in chunks).
  template <class B, class R, int D, class F>
  static Support supports(const CellGrid<B, R, D>& grid, const F& f, const DeviceProperties& p, const Tuning& t) {
    const Plan pl = plan<F, R, D>(p, t);
    Support s = check<B>("par-cell-sm", p, t, ParCellSMInteract<F, R, D>{grid.view(), f, nullptr, 1});
    if (!s.ok) return s;
    return pl.support;
  }
  /// {blocks = cells (capped; Tuning::blocks), threads = 128 (Tuning::threads), shared = the plan's bytes}.
  template <class B, class R, int D, class F>
  static LaunchShape shape(const CellGrid<B, R, D>& grid, const F&, const DeviceProperties& p, const Tuning& t) {
    const unsigned n = threads(t);
    return {blocks(grid.cell_count(), n, t), n, plan<F, R, D>(p, t).bytes};
  }
  /// Launches the kernel on the grid's stream (asynchronous); returns the shape.
  template <class B, class R, int D, class F>
  static LaunchShape run(const CellGrid<B, R, D>& grid, const F& f, typename F::Accum* out, const Tuning& t) {
    LaunchShape s{};
    if constexpr (B::is_gpu_like) {
      const DeviceProperties p = B::properties();
      const Plan pl = plan<F, R, D>(p, t);
      s = shape(grid, f, p, t);
      if (grid.size() == 0) return s;
      B::launch(s, ParCellSMInteract<F, R, D>{grid.view(), f, out, static_cast<Index>(pl.particles)}, grid.stream());
    }
    return s;
  }
};

}  // namespace cellint::detail
