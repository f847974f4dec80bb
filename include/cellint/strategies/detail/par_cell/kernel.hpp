#pragma once
// Par-Cell and Par-Cell-SM: kernels and plans (see strategies/par_cell.hpp).

#include <algorithm>
#include <cstddef>
#include <cstdint>

#include "cellint/strategies/detail/neighbors.hpp"
#include "cellint/strategies/par_cell.hpp"  // the tag and its policy
#include "cellint/strategies/strategy.hpp"

namespace cellint::detail {

/// Par-Cell kernel (paper 4.3, Algorithm 2).
///
/// Phases: block b takes target cells b, b + gridDim, ...; thread i of the block takes the cell's particles i, i +
/// blockDim, ..., keeps the target's position, payload and accumulator in registers, and walks the neighbour cells
/// reading sources from global memory (all threads of a block read the same sources, so the loads are broadcast and
/// cached). X-adjacent neighbour cells are walked as one contiguous range of up to 3 cells; the periodic image shift is
/// resolved once per range. No shared memory, no barriers, so threads without a target leave at once.
template <class F, class Real, int Dim>
struct ParCellInteract {
  using T = FunctorTraits<F, Real, Dim>;
  PairViews<Real, Dim> v;       ///< targets and sources
  F f;                          ///< the pair functor
  typename T::Accum* out;       ///< one accumulator per target slot

  template <class Block>
  CELLINT_HD void operator()(Block& b) const {
    const GridView<Real, Dim>& tv = v.targets;
    const Index ncell = tv.geo.cell_count();
    const Index tid = static_cast<Index>(b.thread_rank());
    const Index threads = static_cast<Index>(b.block_size());
    const Index blocks = static_cast<Index>(b.grid_size());
    for (Index cell = static_cast<Index>(b.block_rank()); cell < ncell; cell += blocks) {
      const Index end = tv.cell_start[cell + 1];
      const Index first = tv.cell_start[cell] + tid;
      if (first >= end) continue;
      Index c[Dim];
      tv.geo.coords(cell, c);
      for (Index t = first; t < end; t += threads) {
        auto acc = T::init(f);
        accumulate_neighbors<true, T>(v.sources, f, c, v.excluded(t), tv.position(t), T::load(f, tv, t), acc);
        out[t] = acc;
      }
    }
  }
};

/// Par-Cell-SM kernel (paper 4.4, Algorithm 3).
///
/// Shared memory (`chunk` particles): Dim arrays of `chunk` source coordinates (SoA, the periodic image shift already
/// added), then, unless the functor is position-only, `chunk` payloads (aligned to alignof(Payload)). See
/// par_cell_sm_bytes().
///
/// Phases, per target cell of the block (b, b + gridDim, ...; a cell with no particles is skipped by the whole block,
/// its bounds are block-uniform): rounds of blockDim targets (round r: thread i holds target r * blockDim + i in
/// registers when it exists, thread_compute in the paper); in each round, for each of the 3^Dim source cells, for each
/// chunk of at most `chunk` of its particles: all threads copy the chunk from global memory, barrier, the threads
/// holding a target accumulate over the chunk (a shared-memory broadcast, every thread reads the same entry), barrier
/// (the next copy overwrites the buffer). Every loop that contains a barrier has a block-uniform trip count (cell
/// bounds, cell_start and `chunk` only), so every thread reaches every barrier: 2 per chunk.
template <class F, class Real, int Dim>
struct ParCellSMInteract {
  using T = FunctorTraits<F, Real, Dim>;
  using Payload = typename T::SourcePayload;  ///< what is staged: the sources' payload
  static_assert(alignof(Payload) <= 16, "cellint: Par-Cell-SM stages the sources' payload in shared memory, which "
                                        "is 16-byte aligned; the payload needs alignof <= 16");
  PairViews<Real, Dim> v;       ///< targets and sources
  F f;                          ///< the pair functor
  typename T::Accum* out;       ///< one accumulator per target slot
  Index chunk;                  ///< staging buffer capacity in particles

  /// Byte offset of the payload array behind `s` staged positions.
  CELLINT_HD static std::size_t payload_offset(std::size_t s) {
    const std::size_t a = alignof(Payload);
    return (Dim * s * sizeof(Real) + a - 1) / a * a;
  }

  template <class Block>
  CELLINT_HD void operator()(Block& b) const {
    const GridView<Real, Dim>& tv = v.targets;
    const GridView<Real, Dim>& sv = v.sources;
    unsigned char* smem = b.template shared<unsigned char>();
    SoaSources<Real, Dim, Payload> staged;
    for (int d = 0; d < Dim; ++d) staged.x[d] = reinterpret_cast<Real*>(smem) + d * chunk;
    Payload* sp = T::position_only ? nullptr : reinterpret_cast<Payload*>(smem + payload_offset(chunk));
    staged.p = sp;

    const Index ncell = tv.geo.cell_count();
    const Index tid = static_cast<Index>(b.thread_rank());
    const Index threads = static_cast<Index>(b.block_size());
    const Index blocks = static_cast<Index>(b.grid_size());
    const Real rc2 = cutoff2(sv.geo);
    for (Index cell = static_cast<Index>(b.block_rank()); cell < ncell; cell += blocks) {
      const Index begin = tv.cell_start[cell];
      const Index end = tv.cell_start[cell + 1];
      if (begin == end) continue;  // block-uniform
      Index c[Dim];
      tv.geo.coords(cell, c);
      for (Index round = begin; round < end; round += threads) {
        const Index t = round + tid;
        const bool compute = t < end;
        const Index mine = compute ? t : begin;  // idle threads load a valid slot they never use
        const Vec<Real, Dim> xt = tv.position(mine);
        const typename T::Payload pt = T::load(f, tv, mine);
        const Index skip = v.excluded(t);
        auto acc = T::init(f);
        for_each_neighbor_range<false>(sv.geo, c, [&](Index c0, Index c1, const Vec<Real, Dim>& shift) {
          const Index s_end = sv.cell_start[c1];
          for (Index s0 = sv.cell_start[c0]; s0 < s_end; s0 += chunk) {
            const Index m = s_end - s0 < chunk ? s_end - s0 : chunk;
            for (Index k = tid; k < m; k += threads) {
              for (int d = 0; d < Dim; ++d) staged.x[d][k] = sv.pos[d][s0 + k] + shift[d];
              if constexpr (!T::position_only) sp[k] = T::load_source(f, sv, s0 + k);
            }
            b.sync();
            if (compute) accumulate_except<T>(f, staged, Index(0), m, skip - s0, xt, pt, rc2, acc);
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

/// Blocks a 1-D launch of `threads` threads per block may have: 2^31 - 1 (CUDA's gridDim.x) and fewer than 2^32 threads
/// in all (HIP).
inline unsigned par_cell_max_blocks(unsigned threads) {
  const std::uint64_t by_threads = 0xFFFFFFFFull / (threads ? threads : 1);
  return static_cast<unsigned>(std::min<std::uint64_t>(0x7FFFFFFFull, by_threads));
}

/// What Par-Cell and Par-Cell-SM decide before a launch.
struct ParCellPlan {
  Support support;            ///< whether it can run
  LaunchShape shape;          ///< blocks = cells (capped), threads, shared bytes
  std::size_t particles = 0;  ///< Par-Cell-SM: staging buffer capacity (the kernel's chunk)
};

/// Launch shape and checks shared by Par-Cell and Par-Cell-SM.
template <class Tag>
struct ParCellCommon {
  /// Threads per block: Tuning::threads or the tag's default (paper 7.1: 128).
  static unsigned threads(const Tuning& t) { return t.threads ? t.threads : Tag::default_threads; }
  /// The shape both strategies share and the checks of a legal launch: a GPU-like backend, a block size the device and
  /// the kernel's registers allow, a grid within the limit. Blocks: Tuning::blocks, else one per target cell, capped at
  /// the grid limit (the kernels stride).
  template <class B, class R, int D, class K>
  static ParCellPlan common(const Call<B, R, D>& c, const Tuning& t, const K& kernel) {
    ParCellPlan pl;
    const char* name = Tag::name;
    const DeviceProperties& p = c.props;
    const unsigned n = threads(t);
    const std::int64_t cells = c.geometry().cell_count();
    const std::int64_t blocks = std::max<std::int64_t>(1, std::min<std::int64_t>(cells, par_cell_max_blocks(n)));
    pl.shape = {t.blocks ? t.blocks : static_cast<unsigned>(blocks), n, 0};
    if (!B::is_gpu_like) {
      pl.support = Support::no(cat(name, " needs a GPU-like backend (Emulated, Cuda or Hip); ", B::name(),
                                   " runs the CPU strategies (cell-loop)"));
    } else if (static_cast<long>(n) > p.max_threads_per_block) {
      pl.support = Support::no(cat(name, ": Tuning::threads = ", n, " exceeds the device's ", p.max_threads_per_block,
                                   " threads per block; use at most that (default 128)"));
    } else if (t.blocks > par_cell_max_blocks(n)) {
      pl.support = Support::no(cat(name, ": Tuning::blocks = ", t.blocks, " exceeds the grid limit of ",
                                   par_cell_max_blocks(n), " blocks of ", n, " threads; use fewer (0 = one per cell)"));
    }
    if constexpr (B::is_gpu_like) {
      if (pl.support.ok && n > 128) {  // any kernel fits 128 threads; above that registers may not
        const int limit = B::max_threads_for(kernel);
        if (static_cast<long>(n) > limit)
          pl.support = Support::no(cat(name, ": Tuning::threads = ", n, " exceeds the ", limit,
                                       " threads per block this kernel can run with (register-limited) on this "
                                       "device; use at most that"));
      }
    } else {
      (void)kernel;
    }
    return pl;
  }
};

/// Par-Cell (paper 4.3): one block per cell, sources read from global memory.
template <>
struct StrategyImpl<ParCell> : ParCellCommon<ParCell> {
  using Plan = ParCellPlan;  ///< support and shape
  /// {blocks = cells (capped; Tuning::blocks), threads = 128 (Tuning::threads), no shared memory}; any M_C works.
  template <class B, class R, int D, class F>
  static Plan plan(const Call<B, R, D>& c, const F& f, const Tuning& t) {
    return common(c, t, ParCellInteract<F, R, D>{c.views, f, nullptr});
  }
  template <class B, class R, int D, class F>
  static void run(const Call<B, R, D>& c, const F& f, typename FunctorTraits<F, R, D>::Accum* out, const Plan& p) {
    if constexpr (B::is_gpu_like) B::launch(p.shape, ParCellInteract<F, R, D>{c.views, f, out}, c.stream);
  }
};

/// Par-Cell-SM (paper 4.4): one block per cell, each source cell staged through shared memory.
template <>
struct StrategyImpl<ParCellSM> : ParCellCommon<ParCellSM> {
  using Plan = ParCellPlan;  ///< support, shape and the staging capacity

  /// The shape of Par-Cell, and the staging buffer: Tuning::sm_particles if set (must fit Tuning::shared_bytes, or the
  /// device's opt-in limit), else 512 particles (paper 7.1), shrunk to fit Tuning::shared_bytes or the default 48 KiB
  /// (to a multiple of the block size when at least one block's worth fits). Any M_C works: cells are staged in chunks.
  template <class B, class R, int D, class F>
  static Plan plan(const Call<B, R, D>& c, const F& f, const Tuning& t) {
    using Tr = FunctorTraits<F, R, D>;
    Plan r = common(c, t, ParCellSMInteract<F, R, D>{c.views, f, nullptr, 1});
    if (!r.support.ok) return r;
    const DeviceProperties& p = c.props;
    const std::size_t per = D * sizeof(R) + (Tr::position_only ? 0 : sizeof(typename Tr::SourcePayload));
    const char* what = Tr::position_only ? " coordinates" : " coordinates + payload";
    if (t.shared_bytes > p.shared_per_block_optin)
      return refuse(r, cat("par-cell-sm: Tuning::shared_bytes = ", t.shared_bytes,
                           " exceeds the device's per-block limit of ", p.shared_per_block_optin, " bytes"));
    std::size_t s = t.sm_particles;
    if (s) {
      const std::size_t limit = t.shared_bytes ? t.shared_bytes : p.shared_per_block_optin;
      if (par_cell_sm_bytes<F, R, D>(s) > limit)
        return refuse(r, cat("par-cell-sm: Tuning::sm_particles = ", t.sm_particles, " particles of ", per, " bytes (",
                             D, what, ") need ", par_cell_sm_bytes<F, R, D>(s),
                             " bytes of shared memory, more than the ", limit, "-byte budget (",
                             t.shared_bytes ? "Tuning::shared_bytes" : "device opt-in limit", "); use at most ",
                             limit / per, " particles"));
    } else {
      const std::size_t budget = t.shared_bytes ? t.shared_bytes : p.shared_per_block;
      s = std::min<std::size_t>(ParCellSM::default_sm_particles, budget / per);
      while (s > 0 && par_cell_sm_bytes<F, R, D>(s) > budget) --s;
      if (s == 0)
        return refuse(r, cat("par-cell-sm: one staged particle takes ", per, " bytes (", D, what, "), more than the ",
                             budget, "-byte shared-memory budget; raise Tuning::shared_bytes (up to ",
                             p.shared_per_block_optin, ") or use par-cell"));
      const std::size_t n = r.shape.block;
      if (s < ParCellSM::default_sm_particles && s > n) s = s / n * n;
    }
    r.particles = s;
    r.shape.shared_bytes = par_cell_sm_bytes<F, R, D>(s);
    return r;
  }
  template <class B, class R, int D, class F>
  static void run(const Call<B, R, D>& c, const F& f, typename FunctorTraits<F, R, D>::Accum* out, const Plan& p) {
    if constexpr (B::is_gpu_like)
      B::launch(p.shape, ParCellSMInteract<F, R, D>{c.views, f, out, static_cast<Index>(p.particles)}, c.stream);
  }
};

}  // namespace cellint::detail
