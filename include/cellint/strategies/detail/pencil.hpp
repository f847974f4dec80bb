#pragma once
// What X-pencil and X-pencil-reg (paper sections 5.2 and 5.3) share: the record a source particle occupies in shared
// memory, the particle ranges of one X-pencil of cells (a row segment plus a ghost cell at each end, wrapping around a
// periodic X face), staging such a pencil into shared memory with its periodic image shift added once at copy time, and
// the host-side sizing helpers.
//
// Shared-memory order of a staged pencil of target cells x0..x1-1 in row `row`:
//   [left ghost, only when it wraps]  [cells max(x0-1,0) .. min(x1,nx-1): one contiguous range]
//   [right ghost, only when it wraps]
// so local cell k (global x = x0-1+k, k = 0..len+1) occupies [starts[k], starts[k+1]), and the three source cells of a
// target in local cell k are the single window [starts[k-1], starts[k+2]).

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <string>
#include <type_traits>

#include "cellint/strategies/detail/neighbors.hpp"
#include "cellint/strategies/strategy.hpp"

namespace cellint::detail {

/// Minimum of two indices (device code does not use std::min).
CELLINT_HD constexpr Index pencil_min(Index a, Index b) { return a < b ? a : b; }
/// Maximum of two indices.
CELLINT_HD constexpr Index pencil_max(Index a, Index b) { return a < b ? b : a; }

/// Position and (unless the functor is position-only) payload of one staged source particle.
template <class Real, int Dim, class Payload,
          bool HasPayload = !std::is_same<Payload, NoPayload>::value>
struct StagedFields {
  Real x[Dim];  ///< position, image shift applied
  Payload p;    ///< payload
  /// The payload (what the pair term reads).
  CELLINT_HD const Payload& payload() const { return p; }
};
template <class Real, int Dim, class Payload>
struct StagedFields<Real, Dim, Payload, false> {
  Real x[Dim];  ///< position, image shift applied
  /// No payload.
  CELLINT_HD NoPayload payload() const { return {}; }
};

/// Alignment that lets one staged record be read with one (or two) vector loads: 4, 8 or 16.
template <class Fields>
constexpr std::size_t staged_alignment() {
  constexpr std::size_t raw = sizeof(Fields) <= 4 ? 4 : sizeof(Fields) <= 8 ? 8 : 16;
  return raw > alignof(Fields) ? raw : alignof(Fields);
}

/// A staged source in shared memory: padded to 8 or a multiple of 16 bytes so that the inner loop reads it with vector
/// loads (float 3D + 4-byte payload: one 16-byte load).
template <class Real, int Dim, class Payload>
struct alignas(staged_alignment<StagedFields<Real, Dim, Payload>>()) StagedParticle
    : StagedFields<Real, Dim, Payload> {};

/// Particle ranges of one staged X-pencil (see the file comment): a left ghost that wraps around the periodic X face,
/// the contiguous middle, a right ghost that wraps.
struct PencilSpan {
  Index left_begin = 0, left_count = 0;    ///< wrapped left ghost (cell nx-1 of the row)
  Index mid_begin = 0, mid_count = 0;      ///< cells mid_x .. mid_end_x-1 of the row
  Index right_begin = 0, right_count = 0;  ///< wrapped right ghost (cell 0 of the row)
  Index mid_x = 0, mid_end_x = 0;          ///< cell range of the middle
  /// Particles of the staged pencil.
  CELLINT_HD Index total() const { return left_count + mid_count + right_count; }
};

/// The pencil of target cells [x0, x1) of the row whose cell_start entries begin at `cs`.
template <class Real, int Dim>
CELLINT_HD inline PencilSpan pencil_span(const GridGeometry<Real, Dim>& g, const Index* cs,
                                         Index x0, Index x1) {
  const Index nx = g.cells[0];
  PencilSpan s;
  s.mid_x = x0 > 0 ? x0 - 1 : 0;
  s.mid_end_x = x1 < nx ? x1 + 1 : nx;
  s.mid_begin = cs[s.mid_x];
  s.mid_count = cs[s.mid_end_x] - s.mid_begin;
  if (g.box.periodic[0]) {
    if (x0 == 0) {
      s.left_begin = cs[nx - 1];
      s.left_count = cs[nx] - s.left_begin;
    }
    if (x1 == nx) {
      s.right_begin = cs[0];
      s.right_count = cs[1] - s.right_begin;
    }
  }
  return s;
}

/// Offset in the staged pencil of the boundary before global cell x (x0-1 <= x <= x1+1).
CELLINT_HD inline Index pencil_boundary(const PencilSpan& s, const Index* cs, Index x) {
  if (x < s.mid_x) return 0;
  if (x > s.mid_end_x) return s.total();
  return s.left_count + cs[x] - s.mid_begin;
}

/// One thread's share of staging a pencil, held in registers between the global loads and the shared-memory stores so
/// that the loads of the next pencil overlap the computation on the current one. The thread copies slots tid + r x
/// block_size (r < R) and boundary tid; slots beyond R x block_size (a pencil longer than the block expects) are copied
/// directly by store().
template <class Rec, int R>
struct PencilCopy {
  Rec rec[R];
  Index slot[R];
  Index boundary;

  /// Loads this thread's records of the staged pencil `s` (target cells x0 .. x0+len-1 of the row whose cell_start
  /// entries begin at `cs`), adding `shift` to every position and -/+ the box length along X to the wrapped ghosts.
  /// Sources with a global index in [skip_begin, skip_end) are left out: their owners write them from registers.
  template <class T, class F, class Real, int Dim, class Block>
  CELLINT_HD CELLINT_INLINE void load(const Block& b, const GridView<Real, Dim>& v, const F& f,
                                      const PencilSpan& s, const Index* cs, Index x0, Index len,
                                      const Vec<Real, Dim>& shift, Index skip_begin,
                                      Index skip_end) {
    const Index tid = static_cast<Index>(b.thread_rank());
    const Index bs = static_cast<Index>(b.block_size());
    CELLINT_DETAIL_UNROLL
    for (int r = 0; r < R; ++r) {
      slot[r] = -1;
      const Index i = tid + r * bs;
      if (i < s.total()) fetch<T>(v, f, s, shift, skip_begin, skip_end, i, rec[r], slot[r]);
    }
    boundary = tid <= len + 2 ? pencil_boundary(s, cs, x0 - 1 + tid) : 0;
  }

  /// Writes what load() fetched into `buf` and `starts`, and copies the rest of the pencil (same arguments as load()).
  /// No barrier inside.
  template <class T, class F, class Real, int Dim, class Block>
  CELLINT_HD CELLINT_INLINE void store(const Block& b, const GridView<Real, Dim>& v, const F& f,
                                       const PencilSpan& s, const Index* cs, Index x0, Index len,
                                       const Vec<Real, Dim>& shift, Index skip_begin,
                                       Index skip_end, Rec* buf, Index* starts) const {
    const Index tid = static_cast<Index>(b.thread_rank());
    const Index bs = static_cast<Index>(b.block_size());
    CELLINT_DETAIL_UNROLL
    for (int r = 0; r < R; ++r)
      if (slot[r] >= 0) buf[slot[r]] = rec[r];
    for (Index i = tid + R * bs; i < s.total(); i += bs) {
      Rec x;
      Index at = -1;
      fetch<T>(v, f, s, shift, skip_begin, skip_end, i, x, at);
      if (at >= 0) buf[at] = x;
    }
    if (tid <= len + 2) starts[tid] = boundary;
    for (Index k = tid + bs; k <= len + 2; k += bs) starts[k] = pencil_boundary(s, cs, x0 - 1 + k);
  }

  /// Record `i` of the staged pencil (at = i), or nothing (at unchanged) when it is skipped.
  template <class T, class F, class Real, int Dim>
  CELLINT_HD CELLINT_INLINE static void fetch(const GridView<Real, Dim>& v, const F& f,
                                              const PencilSpan& s, const Vec<Real, Dim>& shift,
                                              Index skip_begin, Index skip_end, Index i, Rec& out,
                                              Index& at) {
    const Index mid_end = s.left_count + s.mid_count;
    Index g;
    Real sx = shift[0];
    if (i < s.left_count) {
      g = s.left_begin + i;
      sx -= v.geo.box.lengths[0];
    } else if (i < mid_end) {
      g = s.mid_begin + (i - s.left_count);
      if (g >= skip_begin && g < skip_end) return;
    } else {
      g = s.right_begin + (i - mid_end);
      sx += v.geo.box.lengths[0];
    }
    out.x[0] = v.pos[0][g] + sx;
    for (int d = 1; d < Dim; ++d) out.x[d] = v.pos[d][g] + shift[d];
    if constexpr (!T::position_only) out.p = T::load_source(f, v, g);
    at = i;
  }
};

/// Records each thread prefetches into registers (PencilCopy).
inline constexpr int pencil_prefetch = 2;

/// Writes a target held in registers (position xt, payload pt, global index t in the middle of the staged pencil `s`)
/// into its shared-memory slot.
template <class T, class Real, int Dim, class Rec>
CELLINT_HD CELLINT_INLINE void stage_from_registers(const PencilSpan& s, Index t,
                                                    const Vec<Real, Dim>& xt,
                                                    const typename T::Payload& pt, Rec* buf) {
  Rec r;
  for (int d = 0; d < Dim; ++d) r.x[d] = xt[d];
  if constexpr (!T::position_only) r.p = pt;
  (void)pt;
  buf[s.left_count + (t - s.mid_begin)] = r;
}

/// Local cell (1 .. len) of the staged slot `slot`: the last k with starts[k] <= slot.
CELLINT_HD inline Index staged_cell(const Index* starts, Index len, Index slot) {
  return last_le(starts, Index(1), len, slot);
}

/// Shared-memory layout of the pencil strategies: `buffers` staging buffers of `capacity` records, then `buffers`
/// arrays of `starts_len` cell boundaries, then `extra` Index values. X-pencil uses one or two buffers (double
/// buffering), X-pencil-tile one per neighbour row.
struct PencilLayout {
  Index capacity = 0;     ///< records per staging buffer: M_C x (cells + 2)
  Index starts_len = 0;   ///< boundaries per buffer: cells + 3
  Index extra = 0;        ///< trailing Index values (X-pencil-reg: row offsets)
  int buffers = 1;        ///< X-pencil: 2 = double buffering; X-pencil-tile: 3^(Dim-1) rows
  std::size_t bytes = 0;  ///< dynamic shared memory in total

  /// The layout for `cells` target cells along X with `per_cell` (M_C) particles per cell.
  template <class Rec>
  static PencilLayout make(Index cells, Index per_cell, int buffers, Index extra = 0) {
    PencilLayout l;
    l.capacity = per_cell * (cells + 2);
    l.starts_len = cells + 3;
    l.extra = extra;
    l.buffers = buffers;
    const std::size_t ints = static_cast<std::size_t>(buffers) * l.starts_len + static_cast<std::size_t>(extra);
    l.bytes = static_cast<std::size_t>(buffers) * l.capacity * sizeof(Rec) + (ints * sizeof(Index) + 15) / 16 * 16;
    return l;
  }
  /// Staging buffer k (0 or 1).
  template <class Rec>
  CELLINT_HD Rec* buffer(unsigned char* base, int k) const {
    return reinterpret_cast<Rec*>(base) + static_cast<std::size_t>(k) * capacity;
  }
  /// Boundary array k (0 or 1).
  template <class Rec>
  CELLINT_HD Index* starts(unsigned char* base, int k) const {
    return reinterpret_cast<Index*>(reinterpret_cast<Rec*>(base) +
                                    static_cast<std::size_t>(buffers) * capacity) +
           k * starts_len;
  }
  /// The trailing Index values.
  template <class Rec>
  CELLINT_HD Index* tail(unsigned char* base) const {
    return starts<Rec>(base, 0) + buffers * starts_len;
  }
};

/// Largest number of target cells along X whose layout fits `budget` bytes (0 if none).
template <class Rec>
inline Index pencil_cells_that_fit(std::size_t budget, Index per_cell, int buffers, Index extra = 0) {
  // bytes(c) grows with c: solve approximately, then correct.
  const std::size_t per =
      static_cast<std::size_t>(buffers) * (static_cast<std::size_t>(per_cell) * sizeof(Rec) + sizeof(Index));
  Index c = static_cast<Index>(std::min<std::size_t>(budget / (per ? per : 1), 1u << 30));
  while (c > 0 && PencilLayout::make<Rec>(c, per_cell, buffers, extra).bytes > budget) --c;
  // make() also counts the two ghosts: the estimate above ignored them, so c is an upper bound
  return c;
}

/// Threads a block may have for kernel K on backend B (register limit included), a multiple of the warp size.
template <class B, class K>
inline unsigned pencil_thread_cap(const DeviceProperties& p, const K& k) {
  unsigned cap = static_cast<unsigned>(std::max(1, std::min(p.max_threads_per_block, 1024)));
  if constexpr (B::is_gpu_like)
    cap = std::min(cap, static_cast<unsigned>(std::max(1, B::max_threads_for(k))));
  const unsigned w = static_cast<unsigned>(B::warp_size);
  return cap >= w ? cap / w * w : cap;
}

/// The targets a block should expect from `cells` cells when the grid holds `mean` particles per cell on average: the
/// mean of a Poisson count plus three standard deviations (blocks with more, e.g. around clusters, take extra passes),
/// at most cells x M_C.
inline long pencil_expected_targets(double mean, long cells, long per_cell) {
  const double mu = mean * static_cast<double>(cells);
  const long e = static_cast<long>(std::ceil(mu + 3 * std::sqrt(mu) + 1));
  return std::max<long>(1, std::min(e, cells * per_cell));
}

/// Block size the pencil strategies aim at by default: measured on an H200 (paper grids, float LJ), blocks of at most
/// 512 threads beat larger ones that hold a longer pencil.
inline constexpr unsigned pencil_preferred_threads = 512;

/// The preferred block size for a kernel whose register use allows `cap` threads per block: 512, or half of `cap` when
/// that is less, so that two blocks' registers fit a multiprocessor (X-pencil-reg at 91 registers a thread, 32^3 cells
/// x 10 on an H100: 281 us with 384 threads per block, one block per multiprocessor, against 225 us with 128).
template <class B>
inline unsigned pencil_preferred(unsigned cap) {
  const unsigned w = static_cast<unsigned>(B::warp_size);
  const unsigned half = cap / 2 / w * w;
  return std::min(pencil_preferred_threads, std::max(w, half));
}

/// Pencils (sub-boxes) per multiprocessor below which the default rules shorten them: the paper shrinks below one;
/// measured on an H200 (paper grids, float LJ), blocks here are short and latency-bound and four per multiprocessor run
/// faster (8^3 cells x 100: 216 us at L = 1 against 282 us at L = 3; elsewhere within 5% of the best pencil length).
inline constexpr int pencil_blocks_per_sm = 4;

/// `n` rounded up to a multiple of the warp size, at most `cap`.
template <class B>
inline unsigned pencil_round_threads(long n, unsigned cap) {
  const long w = B::warp_size;
  const long r = std::max<long>(w, (n + w - 1) / w * w);
  return static_cast<unsigned>(std::min<long>(r, cap));
}

/// The checks every pencil strategy makes first: a GPU-like backend, a pencil length that is not negative (where the
/// strategy reads it: `length_knob`), a shared-memory budget within the device's opt-in limit.
template <class B>
Support pencil_checks(const char* name, const Tuning& t, const DeviceProperties& p, bool length_knob = true) {
  if (!B::is_gpu_like) return Support::no(cat(name, " needs a GPU-like backend (Emulated, Cuda or Hip)"));
  if (length_knob && t.pencil_length < 0)
    return Support::no(cat(name, ": Tuning::pencil_length = ", t.pencil_length, " is negative"));
  if (t.shared_bytes > p.shared_per_block_optin)
    return Support::no(cat(name, ": Tuning::shared_bytes = ", t.shared_bytes,
                           " exceeds the device's shared memory per block (", p.shared_per_block_optin,
                           " bytes after opting in)"));
  return Support::yes();
}

/// Why X-pencil or X-pencil-tile says no when its pencil does not fit the largest budget: `need` says what needs
/// `bytes` (the pencil of Tuning::pencil_length cells, else the smallest one), `instead` which strategies to use.
inline std::string pencil_too_big(const std::string& need, std::size_t bytes, std::size_t budget, const Tuning& t,
                                  const char* instead) {
  const std::string head = cat(need, bytes, " bytes of shared memory, more than the budget of ", budget, " bytes");
  if (t.pencil_length > 0) return head + "; choose a shorter pencil or leave pencil_length at 0";
  return cat(head, t.shared_bytes ? " (Tuning::shared_bytes)" : " (the device's opt-in limit)",
             "; use smaller cells (fewer particles per cell)", t.shared_bytes ? ", raise Tuning::shared_bytes" : "",
             " or a strategy that ", instead);
}

/// The longest pencils (target cells along X) that each budget and buffer count hold, for the pencil strategies with
/// one or two staging buffers (X-pencil, X-pencil-reg): two buffers in the default budget (Tuning::shared_bytes, else
/// 48 KiB), else one; the opt-in limit only when the default budget holds no pencil.
struct PencilFit {
  Index fit2 = 0, fit1 = 0;          ///< in the default budget, with two and one buffers
  Index fit2_max = 0, fit1_max = 0;  ///< in the largest budget (Tuning::shared_bytes, else opt-in)
  std::size_t budget_max = 0;        ///< the largest budget

  /// The fits for records Rec, M_C = `mc` and `extra` trailing Index values.
  template <class Rec>
  static PencilFit make(const Tuning& t, const DeviceProperties& p, Index mc, Index extra = 0) {
    PencilFit r;
    const std::size_t budget = t.shared_bytes ? t.shared_bytes : p.shared_per_block;
    r.budget_max = t.shared_bytes ? t.shared_bytes : p.shared_per_block_optin;
    r.fit2 = pencil_cells_that_fit<Rec>(budget, mc, 2, extra);
    r.fit1 = pencil_cells_that_fit<Rec>(budget, mc, 1, extra);
    r.fit2_max = pencil_cells_that_fit<Rec>(r.budget_max, mc, 2, extra);
    r.fit1_max = pencil_cells_that_fit<Rec>(r.budget_max, mc, 1, extra);
    return r;
  }
  /// Buffers for a pencil of `length` cells fixed by the caller (that fits fit1_max).
  int buffers_for(Index length) const {
    return fit2 >= length ? 2 : fit1 >= length ? 1 : fit2_max >= length ? 2 : 1;
  }
  /// The longest pencil the default choice of buffers holds (default_buffers()).
  Index longest() const { return fit2 >= 1 ? fit2 : fit1 >= 1 ? fit1 : fit2_max >= 1 ? fit2_max : fit1_max; }
  /// Buffers of the default choice.
  int default_buffers() const { return fit2 >= 1 || (fit1 < 1 && fit2_max >= 1) ? 2 : 1; }
};

/// Shortens pencils of `length` cells along rows of `nx` cells while there are fewer than pencil_blocks_per_sm per
/// multiprocessor (`rows` rows of pencils), then evens out the pencils of a row (8 cells with room for 5: 4 + 4, not
/// 5 + 3).
inline Index pencil_balance(Index length, Index nx, long rows, int multiprocessors) {
  const long want = static_cast<long>(pencil_blocks_per_sm) * multiprocessors;
  while (length > 1 && static_cast<long>((nx + length - 1) / length) * rows < want) --length;
  const Index per_row = (nx + length - 1) / length;
  return (nx + per_row - 1) / per_row;
}

/// The plan of the strategies with one block per X-pencil (X-pencil, X-pencil-tile).
struct PencilPlan {
  Support support;      ///< whether it can run
  LaunchShape shape;    ///< blocks, threads, shared bytes
  PencilLayout layout;  ///< staging buffers and boundaries
  Index length = 1;     ///< L: target cells per pencil
  Index pencils_x = 1;  ///< pencils per row: ceil(nx / L)
  Index pencils = 0;    ///< pencils in the grid

  /// Fills the decomposition and the shape for pencils of `length` cells in rows of `nx` cells (`rows` of them),
  /// `threads` per block; Tuning::blocks caps the blocks (one per pencil).
  void finish(Index nx, Index rows, Index len, const PencilLayout& l, unsigned threads, const Tuning& t) {
    length = len;
    pencils_x = (nx + len - 1) / len;
    pencils = pencils_x * rows;
    layout = l;
    const unsigned blocks = static_cast<unsigned>(pencils);
    shape = {std::max(1u, t.blocks ? std::min(t.blocks, blocks) : blocks), std::max(1u, threads), layout.bytes};
  }
};

}  // namespace cellint::detail
