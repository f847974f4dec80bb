#pragma once
// Neighbour-list kernels (see lists/neighbor_list.hpp): the displacement check, the binning of slots into the list's
// cells, the row build, and the pair loops over rows. Every kernel that belongs to a rebuild first reads a control word
// on the backend and returns at once when no rebuild was asked for: the host issues the same sequence every update and
// never waits for the decision.

#include <climits>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <limits>

#include "cellint/core/math.hpp"
#include "cellint/core/pair_functor.hpp"
#include "cellint/grid/grid_view.hpp"
#include "cellint/primitives/block_scan.hpp"
#include "cellint/strategies/detail/neighbors.hpp"
#include "cellint/strategies/detail/pairs.hpp"

namespace cellint::detail {

/// The control words of a list, in backend memory.
struct ListWord {
  static constexpr int request = 0;  ///< raised by the displacement check or a forced rebuild
  static constexpr int active = 1;   ///< this update rebuilds (the cell scan copies `request` here and clears it)
  static constexpr int builds = 2;   ///< rebuilds so far
  static constexpr int longest = 3;  ///< the longest row the rebuilds found since the host last looked
  static constexpr int bad = 4;      ///< the lowest slot whose position is not finite (INT_MAX: none)
  static constexpr int updates = 5;  ///< update() calls (counted on the backend, so that recorded steps count too)
  static constexpr int movers = 6;   ///< particles past skin / 2 listed by this update's pack (the pair check)
  static constexpr int chunks = 7;   ///< chunks of rows handed out by the row build (ListBuildRowsStaged)
  static constexpr int tickets = 8;  ///< tiles handed out by the cell scan (ListScanCells)
  static constexpr int count = 9;    ///< words allocated
};

/// A position packed for one vector load, with a slot index in the fourth word (its bits).
template <class Real>
struct alignas(4 * sizeof(Real)) Packed {
  Real v[4];  ///< x, y, z (0 in 2D), slot bits
  /// The slot stored in the fourth word.
  CELLINT_HD Index slot() const {
    if constexpr (sizeof(Real) == 4) {
      Index j;
      __builtin_memcpy(&j, &v[3], sizeof j);
      return j;
    } else {
      long long j;
      __builtin_memcpy(&j, &v[3], sizeof j);
      return static_cast<Index>(j);
    }
  }
  /// Packs a position and a slot.
  template <int Dim>
  CELLINT_HD static Packed make(const Vec<Real, Dim>& x, Index j) {
    Packed p;
    for (int d = 0; d < 3; ++d) p.v[d] = d < Dim ? x[d] : Real(0);
    if constexpr (sizeof(Real) == 4) {
      __builtin_memcpy(&p.v[3], &j, sizeof j);
    } else {
      const long long w = j;
      __builtin_memcpy(&p.v[3], &w, sizeof w);
    }
    return p;
  }
};

/// What the list kernels see: the list's cells and rows, and the grid's current positions.
template <class Real, int Dim>
struct ListShape {
  GridGeometry<Real, Dim> geo;  ///< the list's cells (width >= (cutoff + skin) / split along X, >= cutoff + skin on the
                                ///< others); geo.cutoff is the interaction cutoff
  int split;                    ///< list cells along X per cutoff + skin: a row's candidates lie within `split` cells
  Real reach2;                  ///< (cutoff + skin)^2: the pairs a row holds
  Real inv_len[Dim];            ///< 1 / box length per axis (minimum image)
  Index n;                      ///< particles (grid slots)
  Index capacity;               ///< entries per row
  Index stride;            ///< column-major rows: entry k of row i at k * stride + i; 0: row-major, i * capacity + k
  bool half;               ///< each pair once: row t holds only list positions u > t (a target: rowless ones too)
  Index* nbr;              ///< the rows, by list position; entries are list positions
  Index* len;              ///< row lengths as found (a length above `capacity` marks an overflowed row)
  std::uint32_t* cell_of;  ///< slot -> list cell at the last rebuild
  std::uint32_t* rank;     ///< slot -> rank inside its cell (binning scratch)
  std::uint32_t* count;    ///< per-cell counts (kept at zero between rebuilds)
  std::uint32_t* start;    ///< cell c holds the list positions start[c] .. start[c + 1] - 1
  Index* ids;              ///< list position -> slot (slots ordered by list cell at the last rebuild)
  Packed<Real>* packed;    ///< positions and slots by list position, as the last update() saw them
  const Real* pos[Dim];    ///< the grid's positions (current)
  Real* ref[Dim];          ///< positions at the last rebuild, by list position
  unsigned* ctrl;          ///< ListWord words
  Index* log;              ///< update number of each rebuild (ring of log_size entries)
  Index log_size;          ///< entries in `log`
  const Index* original;   ///< grid slot -> user index (read only when targets < n)
  Index targets;           ///< rows only for the slots of user index < targets (n: every slot)
  Index* sources;          ///< per non-target, by user index - targets: its list position (targets < n; else null)
  std::uint8_t* late;      ///< per list cell: it holds a non-target (targets < n and parts marked; else null)
  std::uint32_t* border;   ///< per list position: 1 for a border row (see ListPart), 0 for an interior one; or null
  Index* movers;           ///< the pair check's particles (list positions; RebuildTrigger::Pairs), or null
  Index mover_cap;         ///< room in `movers`: more such particles rebuild at once
  Real far2;               ///< a move past sqrt(far2) rebuilds at once: (narrowest cell - cutoff - skin / 2 - slack)^2
  Real near2;              ///< a listed particle past sqrt(near2) is checked against the other listed ones too:
                           ///< ((narrowest cell - cutoff) / 2 - slack)^2
  Real slack;              ///< rounding allowance of the pair check (a few ulps of the box's coordinates)

  /// A row entry is a list position, with this bit set when the pair crosses a periodic face (its source is used at
  /// the image nearest the target; the other entries are used as stored, with no image arithmetic per pair).
  static constexpr std::uint32_t image_bit = 0x80000000u;
  /// The list position of a row entry.
  CELLINT_HD static Index entry_position(Index e) {
    std::uint32_t j = static_cast<std::uint32_t>(e);
#if defined(__CUDA_ARCH__)
    // (the mask in 32 bits, out of the optimizer's sight: in `packed[entry_position(e)]` it otherwise widens the entry
    // first and masks the 64-bit offset, six instructions per entry of the pair kernel instead of two)
    asm("and.b32 %0, %0, 0x7fffffff;" : "+r"(j));
#else
    j &= ~image_bit;
#endif
    return static_cast<Index>(j);
  }

  /// Records list position `at` of slot i in `sources` where i is a non-target (a rebuild's placing of particles).
  CELLINT_HD void note_source(Index i, Index at) const {
    if (!sources) return;
    const Index u = original[i];
    if (u >= targets) sources[u - targets] = at;
  }
  /// Where entry k of row i lives.
  CELLINT_HD std::size_t at(Index i, Index k) const {
    return stride ? static_cast<std::size_t>(k) * static_cast<std::size_t>(stride) + static_cast<std::size_t>(i)
                  : static_cast<std::size_t>(i) * static_cast<std::size_t>(capacity) + static_cast<std::size_t>(k);
  }
  /// The coordinate difference `dr` folded to the nearest periodic image (positions need not lie in the box).
  CELLINT_HD void minimum_image(Vec<Real, Dim>& dr) const {
    for (int d = 0; d < Dim; ++d)
      if (geo.box.periodic[d]) dr[d] -= geo.box.lengths[d] * round_nearest(dr[d] * inv_len[d]);
  }
  /// Position of slot i.
  CELLINT_HD Vec<Real, Dim> position(Index i) const {
    Vec<Real, Dim> x;
    for (int d = 0; d < Dim; ++d) x[d] = pos[d][i];
    return x;
  }
  /// The list cell of position x (periodic axes wrap any coordinate; open axes clamp), and x moved by whole box
  /// lengths into the box on periodic axes (`wrapped`); false for a non-finite x.
  CELLINT_HD bool cell_of_position(const Vec<Real, Dim>& x, Index& cell, Vec<Real, Dim>* wrapped = nullptr) const {
    Index c[Dim];
    if (wrapped) *wrapped = x;
    for (int d = 0; d < Dim; ++d) {
      if (!(x[d] - x[d] == Real(0))) {  // NaN or infinite
        cell = 0;
        return false;
      }
      const Real t = (x[d] - geo.box.origin[d]) * geo.inv_width[d];
      if (geo.box.periodic[d]) {
        const Real k = round_down(t / geo.cells[d]);  // box lengths to go back
        const Real w = t - geo.cells[d] * k;          // in [0, cells]
        c[d] = static_cast<Index>(w);
        c[d] = c[d] >= geo.cells[d] ? geo.cells[d] - 1 : c[d];
        if (wrapped) (*wrapped)[d] = x[d] - k * geo.box.lengths[d];
      } else {
        c[d] = t < Real(0) ? 0 : static_cast<Index>(t);
        c[d] = c[d] >= geo.cells[d] ? geo.cells[d] - 1 : c[d];
      }
    }
    cell = geo.linear(c);
    return true;
  }
  /// Calls fn(u, j, dr, r2, image) for every list position u (slot j) of the list cells around the cell of list
  /// position t, with r2 = |dr|^2 < r2max and dr = x_t - x_u, x_u taken at the image of its cell next to t's (`image`:
  /// that image is not x_u itself); positions are `packed`'s. u == t is left out, and with `half` every u < t too.
  /// Complete for r2max <= reach2 while no particle has moved more than skin / 2 since the last rebuild (packed
  /// positions are the rebuild's positions, wrapped into the box, plus the displacements since: they stay next to
  /// their cells). Cells adjacent along X are one contiguous range of list positions, with one image shift.
  /// `Batch` records are loaded before any is used (8 for the rebuild; 1 for the rare overflow scan inside the pair
  /// kernels, where eight would cost registers in every thread).
  template <int Batch = 1, class Fn>
  CELLINT_HD void for_each_candidate(Index t, const Vec<Real, Dim>& xt, Real r2max, Fn&& fn) const {
    for_each_candidate_run(t, xt, [&](Index u, Index u1, const Vec<Real, Dim>& xs, bool image) {
      auto visit = [&](Index v, const Packed<Real>& p) {
        if (v == t) return;
        Vec<Real, Dim> dr;
        for (int d = 0; d < Dim; ++d) dr[d] = xs[d] - p.v[d];
        const Real r2 = norm2(dr);
        if (r2 < r2max) fn(v, p.slot(), dr, r2, image);
      };
      // records loaded in batches before any is used: the loop is bound by their latency, not by the arithmetic
      if constexpr (Batch > 1) {
        for (; u + (Batch - 1) < u1; u += Batch) {
          Packed<Real> p[Batch];
          for (int q = 0; q < Batch; ++q) p[q] = packed[u + q];
          for (int q = 0; q < Batch; ++q) visit(u + q, p[q]);
        }
      }
      for (; u < u1; ++u) visit(u, packed[u]);
    });
  }
  /// Calls fn(c0, c1, shift) for the ranges of list cells [c0, c1) around cell coordinates c, one image each: the
  /// cells within `split` along X and one along the other axes.
  template <class Fn>
  CELLINT_HD void for_each_cell_range(const Index (&c)[Dim], Fn&& fn) const {
    for_each_neighbor_range<true>(geo, c, fn, split);
  }
  /// Calls fn(u0, u1, xs, image) for each run [u0, u1) of candidate list positions around list position t (the list
  /// cells adjacent along X, one image each; with `half` only u > t, and for a target of a list with targets < n also
  /// the particles without rows before it, in runs of them): xs = xt less the run's image shift, so that dr = xs - x_u,
  /// and `image` whether that shift is not zero. The run may hold t itself (full lists).
  template <class Fn>
  CELLINT_HD void for_each_candidate_run(Index t, const Vec<Real, Dim>& xt, Fn&& fn) const {
    Index c[Dim];
    geo.coords(static_cast<Index>(cell_of[ids[t]]), c);
    const bool rowless_too = half && targets < n && has_row(t);
    for_each_cell_range(c, [&](Index c0, Index c1, const Vec<Real, Dim>& shift) {
      Vec<Real, Dim> xs;
      bool image = false;
      for (int d = 0; d < Dim; ++d) {
        xs[d] = xt[d] - shift[d];
        image = image || shift[d] != Real(0);
      }
      Index u = static_cast<Index>(start[c0]);
      const Index u1 = static_cast<Index>(start[c1]);
      if (half && u <= t) {
        // A half row holds later list positions only: skip the rest of the range. With targets, a pair of a target
        // and a particle without a row is the target's alone (that particle's row is empty): the target's row also
        // holds those before it.
        if (rowless_too) {
          const Index before = t < u1 ? t : u1;
          for (Index w = u; w < before;) {
            if (has_row(w)) {
              ++w;
              continue;
            }
            Index e = w + 1;
            while (e < before && !has_row(e)) ++e;
            fn(w, e, xs, image);
            w = e;
          }
        }
        u = t + 1;
      }
      fn(u, u1, xs, image);
    });
  }
  /// The continuous position of list position t: its position at the last rebuild (wrapped into the box) plus its
  /// minimum-image displacement since, x_t - ref_t folded to the nearest periodic image. Particles that the caller
  /// wraps back into the box do not jump: the images the rows recorded stay right.
  CELLINT_HD Vec<Real, Dim> continued(Index t, const Vec<Real, Dim>& x, Real& moved2) const {
    Vec<Real, Dim> dx, y;
    for (int d = 0; d < Dim; ++d) dx[d] = x[d] - ref[d][t];
    minimum_image(dx);
    moved2 = norm2(dx);
    for (int d = 0; d < Dim; ++d) y[d] = ref[d][t] + dx[d];
    return y;
  }
  /// How far list position t has moved since the last rebuild, as the last update() packed it.
  CELLINT_HD Vec<Real, Dim> displacement(Index t) const {
    Vec<Real, Dim> d;
    for (int q = 0; q < Dim; ++q) d[q] = packed[t].v[q] - ref[q][t];
    return d;
  }
  /// The packed position of list position t (as the last update() saw it); its slot goes to *slot if given.
  CELLINT_HD Vec<Real, Dim> packed_position(Index t, Index* slot = nullptr) const {
    const Packed<Real> p = packed[t];
    Vec<Real, Dim> x;
    for (int d = 0; d < Dim; ++d) x[d] = p.v[d];
    if (slot) *slot = p.slot();
    return x;
  }
  /// Whether list position t is a target (see NeighborList::set_targets()): its row is found; the others stay empty.
  CELLINT_HD bool has_row(Index t) const { return targets >= n || original[ids[t]] < targets; }
  /// Whether row t belongs to part `part` (0: all rows; 1: interior; 2: border; see ListPart).
  CELLINT_HD bool in_part(Index t, int part) const {
    return part == 0 || (border ? static_cast<int>(border[t]) : 0) == part - 1;
  }
  /// Finds row t (the list positions within cutoff + skin), calls store(k, entry) for the first `capacity` it finds
  /// and returns how many it found.
  template <class Store>
  CELLINT_HD Index find_row(Index t, Store&& store) const {
    if (!has_row(t)) return 0;
    Index m = 0;
    for_each_candidate<8>(
        t, packed_position(t), reach2,
        [&](Index u, Index, const Vec<Real, Dim>&, Real, bool image) {
          if (m < capacity) store(m, image ? static_cast<Index>(static_cast<std::uint32_t>(u) | image_bit) : u);
          ++m;
        });
    return m;
  }
  /// Rebuild decision, by one thread: `request` becomes `active` and is cleared; a rebuild is counted and logged with
  /// the update number. Returns whether to rebuild.
  CELLINT_HD unsigned decide() const {
    const unsigned go = ctrl[ListWord::request];
    ctrl[ListWord::active] = go;
    ctrl[ListWord::chunks] = 0u;
    if (go) {  // (an idle update leaves `request` alone: other blocks of the cell scan may be reading it)
      ctrl[ListWord::request] = 0u;
      log[ctrl[ListWord::builds]++ % static_cast<unsigned>(log_size)] = static_cast<Index>(ctrl[ListWord::updates]);
    }
    return go;
  }
};

/// Packs the position of list position t (slot ids[t]) for interact(), continued from the last rebuild (see
/// ListShape::continued()), and with `check` looks at how far it moved since the last rebuild: past sqrt(limit2) (skin
/// / 2) it raises `request`, or, with the pair check (s.movers), lists t for ListCheckMovers unless it moved past
/// sqrt(s.far2) too (or is not finite, or the list is full: then `request`). `which`: 0 every list position, 1 the
/// targets only, 2 the other particles only.
template <class Real, int Dim>
struct ListPack {
  ListShape<Real, Dim> s;  ///< the list
  Real limit2;             ///< (skin / 2)^2
  bool check;              ///< test the displacement
  bool count;              ///< count an update
  int which = 0;           ///< the positions packed
  const Index* rows = nullptr;  ///< thread k packs list position rows[k] (null: k)
  template <class A>
  CELLINT_HD void operator()(A& a, Index k) const {
    if (count && k == 0) ++s.ctrl[ListWord::updates];
    const Index t = rows ? rows[k] : k;
    if (which != 0 && s.has_row(t) != (which == 1)) return;
    const Index i = s.ids[t];
    Real moved2;
    const Vec<Real, Dim> x = s.continued(t, s.position(i), moved2);
    s.packed[t] = Packed<Real>::template make<Dim>(x, i);
    if (check && !(moved2 <= limit2)) {
      if (s.movers && moved2 <= s.far2) {
        const unsigned k = a.atomic_add(&s.ctrl[ListWord::movers], 1u);
        if (k < static_cast<unsigned>(s.mover_cap)) {
          s.movers[k] = t;
          return;
        }
      }
      a.atomic_max(&s.ctrl[ListWord::request], 1u);
    }
  }
};

/// The pair check of update() (RebuildTrigger::Pairs), after the pack: for each particle t that moved more than skin
/// / 2 since the last rebuild, the particles u of the 3^Dim list cells around its cell. A pair that the rows do not
/// hold was at least cutoff + skin apart at the rebuild (r0); it can have come within the cutoff only if the two moved,
/// relative to each other, by r0 - cutoff or more (|x_t - x_u| >= r0 - |d_t - d_u|). Such a pair raises `request`.
/// Pairs of cells farther apart were at least the narrowest cell w apart. A particle that is not listed moved skin / 2
/// at most, and the pack bounds a listed one's move by w - cutoff - skin / 2 (far2): such a pair with one particle
/// not listed is safe. A pair of two listed particles is safe when both moved (w - cutoff) / 2 at most (near2); a
/// listed particle past that is checked against every other listed one as well, at the nearest image. Pairs of two
/// particles without rows (sources of a list with set_targets(), such as an MPI rank's ghosts) are skipped. `lanes`
/// threads share a particle's candidates; `threads` run in all (a small launch: most updates list no particle and
/// every thread returns at once).
template <class Real, int Dim>
struct ListCheckMovers {
  ListShape<Real, Dim> s;  ///< the list
  Index threads;           ///< threads launched
  Index lanes;             ///< threads per listed particle
  template <class A>
  CELLINT_HD void operator()(A& a, Index id) const {
    const unsigned listed = s.ctrl[ListWord::movers];
    const Index m = listed < static_cast<unsigned>(s.mover_cap) ? static_cast<Index>(listed) : s.mover_cap;
    if (m == 0 || s.ctrl[ListWord::request]) return;
    const Index lane = id % lanes, groups = threads / lanes;
    const Real held2 = s.reach2 * Real(0.99999);  // (pairs at the edge of the reach count as not held)
    for (Index k = id / lanes; k < m; k += groups) {
      if (static_cast<volatile unsigned*>(s.ctrl)[ListWord::request]) return;  // (another thread asked for a rebuild)
      const Index t = s.movers[k];
      const Vec<Real, Dim> dt = s.displacement(t);
      const bool rowless = s.targets < s.n && !s.has_row(t);  // (a pair of two particles without rows is not needed)
      // the pair (t, u), r0 = x_t - x_u at the rebuild: one the rows do not hold whose relative move may have closed
      // the room left to the cutoff raises the request
      auto check = [&](Index u, const Vec<Real, Dim>& r0) {
        const Vec<Real, Dim> du = s.displacement(u);  // (loaded before the tests: in flight with r0's loads)
        const Real r02 = norm2(r0);
        if (u == t || r02 < held2 || (rowless && !s.has_row(u))) return;
        Vec<Real, Dim> rel;
        for (int d = 0; d < Dim; ++d) rel[d] = dt[d] - du[d];
        const Real room = std::sqrt(r02) - s.geo.cutoff - s.slack;
        if (room <= Real(0) || norm2(rel) >= room * room) a.atomic_max(&s.ctrl[ListWord::request], 1u);
      };
      Index c[Dim];
      s.geo.coords(static_cast<Index>(s.cell_of[s.ids[t]]), c);
      s.for_each_cell_range(c, [&](Index c0, Index c1, const Vec<Real, Dim>& shift) {
        for (Index u = static_cast<Index>(s.start[c0]) + lane; u < static_cast<Index>(s.start[c1]); u += lanes) {
          Vec<Real, Dim> r0;
          for (int d = 0; d < Dim; ++d) r0[d] = (s.ref[d][t] - shift[d]) - s.ref[d][u];  // (as the row build found it)
          check(u, r0);
        }
      });
      if (!(norm2(dt) > s.near2)) continue;
      for (Index q = lane; q < m; q += lanes) {  // against the other listed particles, cells adjacent or not
        const Index u = s.movers[q];
        Vec<Real, Dim> r0;
        for (int d = 0; d < Dim; ++d) r0[d] = s.ref[d][t] - s.ref[d][u];
        s.minimum_image(r0);
        check(u, r0);
      }
    }
  }
};

/// Raises `request` (a rebuild asked for by the host: the first one, or LAMMPS-style `check no`).
struct ListRequest {
  unsigned* ctrl;  ///< ListWord words
  template <class A>
  CELLINT_HD void operator()(A&, Index) const {
    ctrl[ListWord::request] = 1u;
  }
};

/// Rebuild step 1: each slot's list cell and its rank among the slots of that cell.
template <class Real, int Dim>
struct ListBinCount {
  ListShape<Real, Dim> s;  ///< the list
  template <class A>
  CELLINT_HD void operator()(A& a, Index i) const {
    if (i == 0) s.ctrl[ListWord::movers] = 0u;  // (ListCheckMovers, which ran before, is done with them)
    if (!s.ctrl[ListWord::request]) return;
    Index cell;
    if (!s.cell_of_position(s.position(i), cell)) a.atomic_min(&s.ctrl[ListWord::bad], static_cast<unsigned>(i));
    s.cell_of[i] = static_cast<std::uint32_t>(cell);
    s.rank[i] = a.atomic_add(&s.count[cell], 1u);
  }
};

/// Cells per block of the cell scan (each thread of a 1024-thread block takes 4).
inline constexpr Index list_scan_tile = 4096;

/// Rebuild step 2, one kernel for the whole scan: start[c] for every list cell (exclusive prefix sums of the counts),
/// the total in start[cells], the counts left at zero for the next rebuild; its last block decides (request ->
/// active, request cleared, the rebuild logged). One block per tile of list_scan_tile cells, each scanning its tile in
/// shared memory (the paper's block scan) and finding the counts of the tiles before it by decoupled look-back: tiles
/// are numbered in the order blocks start (a ticket), so that every tile a block waits for belongs to a block that
/// runs. Each tile publishes one 64-bit word: status (1: its own count, 2: its count with every tile before it) above
/// its value. The words alternate between two sets by the parity of the rebuild count: a rebuild clears the set the
/// next one uses, which nothing reads meanwhile. An update that does not rebuild returns at once in every block.
template <class Real, int Dim>
struct ListScanCells {
  ListShape<Real, Dim> s;            ///< the list
  unsigned long long* tile_word;     ///< 2 * tiles words, zero at first
  Index tiles;                       ///< blocks launched
  int window;                        ///< tiles the look-back reads at once (at most the threads per block)
  /// Shared memory the kernel needs.
  constexpr std::size_t shared_bytes() const {
    return sizeof(unsigned) * (static_cast<std::size_t>(list_scan_tile) + 5 + 2 * static_cast<std::size_t>(window));
  }
  template <class Block>
  CELLINT_HD void operator()(Block& b) const {
    const int t = static_cast<int>(b.thread_rank()), threads = static_cast<int>(b.block_size());
    unsigned* sh = b.template shared<unsigned>();  // the tile's counts, its total, then the look-back's words
    unsigned* ctl = sh + list_scan_tile + 1;        // ticket, parity, the tiles' sum before this one, look-back state
    unsigned* st = ctl + 4;                         // the window's statuses and values
    unsigned* val = st + window;
    if (!s.ctrl[ListWord::request]) {
      if (b.block_rank() == 0 && t == 0) s.decide();  // (clears `active`; `request` is not written)
      return;
    }
    b.sync();  // every thread has read the request before the block takes its ticket
    if (t == 0) {
      ctl[1] = s.ctrl[ListWord::builds] & 1u;
      b.fence();  // the request and the rebuild count read before the ticket: the last block changes them
      ctl[0] = tiles > 1 ? b.atomic_add(&s.ctrl[ListWord::tickets], 1u) : 0u;
    }
    b.sync();
    const Index tile = static_cast<Index>(ctl[0]);
    const unsigned parity = ctl[1];
    const Index cells = s.geo.cell_count(), lo = tile * list_scan_tile;
    const int n = static_cast<int>(cells - lo < list_scan_tile ? cells - lo : list_scan_tile);
    for (int k = t; k < n; k += threads) sh[k] = s.count[lo + k];
    b.sync();
    block_exclusive_scan_inplace(b, sh, n, sh + list_scan_tile);
    const unsigned own = sh[list_scan_tile];
    unsigned long long* words = tile_word + parity * static_cast<unsigned long long>(tiles);
    if (t == 0 && tiles > 1) {
      tile_word[(1u - parity) * static_cast<unsigned long long>(tiles) + tile] = 0ull;  // the next rebuild's word
      b.atomic_add(&words[tile], (static_cast<unsigned long long>(tile == 0 ? 2u : 1u) << 32) | own);
      ctl[2] = 0u;
    }
    // look-back: windows of up to `window` tiles before this one, nearest first, summed up to the first inclusive
    // value; a window with a tile not yet published is read again
    for (Index hi = tile; hi > 0;) {
      const Index m = hi < window ? hi : window;
      if (t < m) {
        const unsigned long long w = b.atomic_add(&words[hi - 1 - t], 0ull);
        st[t] = static_cast<unsigned>(w >> 32);
        val[t] = static_cast<unsigned>(w);
      }
      b.sync();
      if (t == 0) {
        unsigned sum = 0, state = 1;  // 0: read again, 1: go on before this window, 2: done
        for (Index j = 0; j < m && state == 1; ++j) {
          if (st[j] == 0u) state = 0;
          else sum += val[j], state = st[j] == 2u ? 2u : 1u;
        }
        if (state != 0) ctl[2] += sum;
        ctl[3] = state;
      }
      b.sync();
      const unsigned state = ctl[3];
      if (state == 2u) break;
      if (state == 1u) hi -= m;
      b.sync();  // (the window's words are read again or replaced only after every thread has seen `state`)
    }
    const unsigned base = tile > 0 ? ctl[2] : 0u;
    if (t == 0 && tile > 0) b.atomic_add(&words[tile], (1ull << 32) + base);  // status 1 -> 2, value own -> base + own
    for (int k = t; k < n; k += threads) {
      s.start[lo + k] = base + sh[k];
      s.count[lo + k] = 0u;
    }
    if (t == 0 && tile == tiles - 1) {  // every block took its ticket (and read request and builds) before this one
      s.start[cells] = base + own;
      s.ctrl[ListWord::tickets] = 0u;
      b.fence();
      s.decide();
    }
  }
};

/// Rebuild step 3: slots in list-cell order (the list positions), their positions wrapped into the box and packed, the
/// reference positions.
template <class Real, int Dim>
struct ListScatter {
  ListShape<Real, Dim> s;  ///< the list
  template <class A>
  CELLINT_HD void operator()(A&, Index i) const {
    if (!s.ctrl[ListWord::active]) return;
    const std::uint32_t at = s.start[s.cell_of[i]] + s.rank[i];
    Vec<Real, Dim> x;
    Index cell;
    s.cell_of_position(s.position(i), cell, &x);  // x in the box, next to its cell
    s.ids[at] = i;
    s.packed[at] = Packed<Real>::template make<Dim>(x, i);
    for (int d = 0; d < Dim; ++d) s.ref[d][at] = x[d];
    s.note_source(i, static_cast<Index>(at));
  }
};

/// Rebuild step 3b (ListOptions::stable): the list positions of each cell in slot order, where step 1's atomics left
/// them in the order the threads happened to run; one thread per cell (a list cell holds a few dozen particles).
template <class Real, int Dim>
struct ListSortCells {
  ListShape<Real, Dim> s;  ///< the list
  template <class A>
  CELLINT_HD void operator()(A&, Index c) const {
    if (!s.ctrl[ListWord::active]) return;
    const Index lo = static_cast<Index>(s.start[c]), hi = static_cast<Index>(s.start[c + 1]);
    bool sorted = true;
    for (Index u = lo + 1; u < hi && sorted; ++u) sorted = s.ids[u - 1] < s.ids[u];
    if (sorted) return;
    for (Index u = lo + 1; u < hi; ++u) {  // insertion sort of the slots
      const Index i = s.ids[u];
      Index v = u;
      for (; v > lo && s.ids[v - 1] > i; --v) s.ids[v] = s.ids[v - 1];
      s.ids[v] = i;
    }
    for (Index u = lo; u < hi; ++u) {  // what step 3 wrote, again for the new order
      const Index i = s.ids[u];
      Vec<Real, Dim> x;
      Index cell;
      s.cell_of_position(s.position(i), cell, &x);
      s.packed[u] = Packed<Real>::template make<Dim>(x, i);
      for (int d = 0; d < Dim; ++d) s.ref[d][u] = x[d];
      s.note_source(i, u);
    }
  }
};

/// Rebuild step 5 (targets < n), per list cell: whether it holds a particle that is not a target.
template <class Real, int Dim>
struct ListMarkLate {
  ListShape<Real, Dim> s;  ///< the list
  template <class A>
  CELLINT_HD void operator()(A&, Index c) const {
    if (!s.ctrl[ListWord::active]) return;
    std::uint8_t late = 0;
    for (Index u = static_cast<Index>(s.start[c]); u < static_cast<Index>(s.start[c + 1]) && !late; ++u)
      late = s.has_row(u) ? 0 : 1;
    s.late[c] = late;
  }
};

/// Rebuild step 6 (targets < n), per list position: a border row (1) when the particle is not a target or a cell
/// around its own holds one, else an interior row (0): interior rows read the targets' positions only.
template <class Real, int Dim>
struct ListMarkBorder {
  ListShape<Real, Dim> s;  ///< the list
  template <class A>
  CELLINT_HD void operator()(A&, Index t) const {
    if (!s.ctrl[ListWord::active]) return;
    bool border = !s.has_row(t);
    if (!border) {
      Index c[Dim];
      s.geo.coords(static_cast<Index>(s.cell_of[s.ids[t]]), c);
      s.for_each_cell_range(c, [&](Index c0, Index c1, const Vec<Real, Dim>&) {
        for (Index k = c0; k < c1; ++k) border = border || s.late[k] != 0;
      });
    }
    s.border[t] = border ? 1u : 0u;
  }
};

/// After a rebuild with targets < n (host-driven: NeighborList::build()): the list positions of the interior rows in
/// list order, then those of the border rows, from the border marks and their exclusive scan (scan[n]: border rows).
template <class Real, int Dim>
struct ListCompactParts {
  ListShape<Real, Dim> s;     ///< the list
  const std::uint32_t* scan;  ///< exclusive scan of s.border, n + 1 entries
  Index* rows;                ///< out: n list positions
  template <class A>
  CELLINT_HD void operator()(A&, Index t) const {
    const Index before = static_cast<Index>(scan[t]), interior = s.n - static_cast<Index>(scan[s.n]);
    rows[s.border[t] ? interior + before : t - before] = t;
  }
};

/// Rebuild step 4: row t = the list positions within cutoff + skin of list position t (up to `capacity` stored, the
/// length counted in full). Neighbouring threads are neighbouring particles of one cell: they walk the same cells.
template <class Real, int Dim>
struct ListBuildRows {
  ListShape<Real, Dim> s;  ///< the list
  template <class A>
  CELLINT_HD void operator()(A& a, Index t) const {
    if (!s.ctrl[ListWord::active]) return;
    const Index m = s.find_row(t, [&](Index k, Index u) { s.nbr[s.at(t, k)] = u; });
    s.len[t] = m;
    if (m > 0) a.atomic_max(&s.ctrl[ListWord::longest], static_cast<unsigned>(m));
  }
};

/// Rebuild step 4 on the host: the rows of ListBuildRows, the same entries in the same order, found without a branch
/// per candidate. Each candidate range (cells adjacent along X, one image) is a run of list positions; every candidate
/// is written at the row's next free word and the count advances only for those within reach, so the loop carries no
/// unpredictable branch (about one candidate in six is kept). Past the capacity the writes go to a scratch word: the
/// row keeps its true length, and interact() scans an overflowed row's cells.
template <class Real, int Dim>
struct ListBuildRowsHost {
  ListShape<Real, Dim> s;  ///< the list
  template <class A>
  CELLINT_HD CELLINT_DETAIL_HOST_CLONES void operator()(A& a, Index t) const {
    if (!s.ctrl[ListWord::active]) return;
    Index m = 0;
    if (s.has_row(t)) {
      using U = std::uint32_t;
      Index* const row = s.nbr + s.at(t, 0);  // entry k at row[k * step]
      const std::size_t step = s.stride ? static_cast<std::size_t>(s.stride) : 1;
      const Index cap = s.capacity;
      Index scratch = 0;
      s.for_each_candidate_run(t, s.packed_position(t), [&](Index u, Index u1, const Vec<Real, Dim>& xs, bool image) {
        const U mark = image ? ListShape<Real, Dim>::image_bit : 0u;
        for (; u < u1; ++u) {
          const Packed<Real>& p = s.packed[u];
          Real r2 = 0;
          for (int d = 0; d < Dim; ++d) r2 += (xs[d] - p.v[d]) * (xs[d] - p.v[d]);
          Index* const to = m < cap ? row + static_cast<std::size_t>(m) * step : &scratch;
          *to = static_cast<Index>(static_cast<U>(u) | mark);
          m += (r2 < s.reach2) & (u != t);
        }
      });
    }
    s.len[t] = m;
    if (m > 0) a.atomic_max(&s.ctrl[ListWord::longest], static_cast<unsigned>(m));
  }
};

/// Rebuild step 4 on GPU-like backends, rows staged in shared memory: two threads find each row, the first walking the
/// even list positions of its candidate cells and the second the odd ones, each into its half of the row's `capacity`
/// words; then the block writes its rows out column by column, so that neighbouring targets' entries go out together
/// (found one by one, they would be scattered 4-byte writes). Two threads per row put twice as many loads in flight
/// as one for the same shared memory, which is what limits the blocks an SM holds. A row is its first thread's entries
/// in the order found, then its second thread's; a row that fits its capacity but not one of its halves (rare: the
/// halves split the candidates evenly) is found again by its first thread alone. A block does chunks of rows (a
/// chunk per block_size() / lanes rows), its own and then others from a counter, so that a grid of two waves does
/// every chunk: on the updates that do not rebuild, that grid returns at once, where one block per chunk took 21 us at
/// 2M atoms on an H200 (32,000 blocks; 2.3 us now).
template <class Real, int Dim>
struct ListBuildRowsStaged {
  ListShape<Real, Dim> s;  ///< the list (column-major rows)
  /// Threads per row.
  static constexpr int lanes = 2;
  /// Staged words per row: `capacity`, and after each lane's part one that takes the entries past it.
  CELLINT_HD static std::size_t row_words(Index capacity) { return static_cast<std::size_t>(capacity) + lanes; }
  /// Shared memory for a block of `rows` rows.
  static std::size_t shared_bytes(Index capacity, int rows) {
    return sizeof(Index) * (row_words(capacity) * rows + static_cast<std::size_t>(lanes) * rows + 2);
  }
  /// Records loaded before any is used.
  static constexpr int batch = 8;
  /// Records the list's `packed` holds past its last particle: what a batch may read past the end of its run.
  static constexpr std::size_t padding = batch * lanes;
  /// The candidates of row t on lane `lane` (list positions u with u % lanes == lane): those within reach are written
  /// to at[0], at[rows], ..., at[room * rows], the last word taking every entry past `room`; returns how many were
  /// found. No branch per candidate: the tests are predicates on the store and the count, and a batch's loads past the
  /// end of its run read the records after it (`packed` has batch * lanes records of padding), whose tests then fail.
  /// The loop is bound by instruction issue, not by its loads: the entries are formed with their image mark (`v`
  /// below; list positions are below 2^31, the mark is the top bit) and compared as such.
  CELLINT_HD Index find_lane(Index t, int lane, Index* at, Index room, int rows) const {
    using U = std::uint32_t;
    Index m = 0;
    const Real reach2 = s.reach2;
    s.for_each_candidate_run(t, s.packed_position(t), [&](Index u, Index u1, const Vec<Real, Dim>& xs, bool image) {
      const U mark = image ? ListShape<Real, Dim>::image_bit : 0u, self = static_cast<U>(t) | mark,
              end = static_cast<U>(u1) | mark;
      // N records from u on, each kept by a predicate (with Tail, also inside the run)
      auto batch_of = [&](auto n, auto tail) {
        constexpr int N = decltype(n)::value;
        const Packed<Real>* const from = s.packed + u;
        Packed<Real> p[N];
        for (int q = 0; q < N; ++q) p[q] = from[q * lanes];
        const U first = static_cast<U>(u) | mark;
        for (int q = 0; q < N; ++q) {
          const U v = first + static_cast<U>(q * lanes);
          Real r2 = 0;
          for (int d = 0; d < Dim; ++d) r2 += (xs[d] - p[q].v[d]) * (xs[d] - p[q].v[d]);
          bool keep = (r2 < reach2) & (v != self);
          if constexpr (decltype(tail)::value) keep = keep & (v < end);
          if (keep) at[(m < room ? m : room) * rows] = static_cast<Index>(v);
          m += keep ? 1 : 0;
        }
        u += N * lanes;
      };
      u += (lane - u % lanes + lanes) % lanes;
      for (; u + (batch - 1) * lanes < u1;) batch_of(std::integral_constant<int, batch>{}, std::false_type{});
      while (u < u1) batch_of(std::integral_constant<int, batch / 2>{}, std::true_type{});
    });
    return m;
  }
  /// A block's shared memory: word k of row r at words[k * rows + r]; then each row's count per lane; then the
  /// block's longest row and its chunk.
  struct Staging {
    Index* words;
    Index* found;
    unsigned* longest;
    unsigned* chunk;
    int rows;
    CELLINT_HD Index& word(Index k, int r) const { return words[static_cast<std::size_t>(k) * rows + r]; }
  };
  template <class Block>
  CELLINT_HD void operator()(Block& b) const {
    if (!s.ctrl[ListWord::active]) return;
    Staging m;
    m.rows = static_cast<int>(b.block_size()) / lanes;
    m.words = b.template shared<Index>();
    m.found = m.words + row_words(s.capacity) * m.rows;
    m.longest = reinterpret_cast<unsigned*>(m.found + lanes * m.rows);
    m.chunk = m.longest + 1;
    const bool first_thread = b.thread_rank() == 0;
    const unsigned chunks = static_cast<unsigned>((s.n + m.rows - 1) / m.rows);
    if (first_thread) *m.longest = 0u;  // (read after the barriers below)
    // chunk block_rank() first; then, where the grid is smaller than the chunks, the next from the counter (the same
    // for every thread of the block: thread 0 writes it again only past the two barriers of rows_of())
    const unsigned grid = b.grid_size();
    for (unsigned c = b.block_rank(); c < chunks;) {
      rows_of(b, m, static_cast<Index>(c) * m.rows);
      if (grid >= chunks) break;
      if (first_thread) *m.chunk = grid + b.atomic_add(&s.ctrl[ListWord::chunks], 1u);
      b.sync();
      c = *m.chunk;
    }
    // one atomic per block on the list's longest row (one per row, all on one word, queue up in the memory system)
    if (first_thread && *m.longest > 0u) b.atomic_max(&s.ctrl[ListWord::longest], *m.longest);
  }
  /// Rows first .. first + m.rows - 1 of a chunk: found, then written out.
  template <class Block>
  CELLINT_HD void rows_of(Block& b, const Staging& m, Index first) const {
    const int rows = m.rows, t = static_cast<int>(b.thread_rank()), r = t / lanes, lane = t % lanes;
    Index* const found = m.found;
    auto word = [&](Index k, int rr) -> Index& { return m.word(k, rr); };
    const Index row = first + r;
    // words [0, half) for the first lane and [half + 1, cap + 1) for the second, each followed by its overflow word
    const Index cap = s.capacity, half = (cap + 1) / 2;
    const Index base = lane == 0 ? 0 : half + 1, room = lane == 0 ? half : cap - half;
    found[lane * rows + r] = row < s.n && s.has_row(row) ? find_lane(row, lane, &word(base, r), room, rows) : 0;
    b.sync();
    if (row < s.n && lane == 0) {
      const Index m0 = found[r], m1 = found[rows + r], all = m0 + m1;
      s.len[row] = all;
      if (all > 0) b.atomic_max(m.longest, static_cast<unsigned>(all));
      if (all <= cap && (m0 > half || m1 > cap - half)) {  // a half overflowed: the whole row by this thread
        s.find_row(row, [&](Index k, Index u) { word(k, r) = u; });
        found[r] = all;
        found[rows + r] = 0;
      }
    }
    b.sync();
    // out, column by column: thread t writes entries t / rows, t / rows + lanes, ... of row t % rows (neighbouring
    // threads, neighbouring rows: the writes of an entry go out together); a row longer than the capacity is left
    // out: interact() scans its cells
    const int rr = t % rows;
    const Index front = found[rr], all = front + found[rows + rr];
    if (first + rr < s.n && all <= cap) {
      Index k = t / rows;
      Index* to = s.nbr + s.at(first + rr, k);
      const std::size_t next = static_cast<std::size_t>(lanes) * static_cast<std::size_t>(s.stride);
      for (; k < all; k += lanes, to += next) *to = word(k < front ? k : half + 1 + (k - front), rr);
    }
  }
};

/// Calls fn(x_u, j) for the entries k0, k0 + step, ... < m of row t: x_u the source's packed position (at the image
/// nearest xt for an entry across a periodic face: the shift applied to the source, so that the pair term forms dr
/// once; minimum_image() is the same rule on dr), j its slot. `Batch` entries and then their records are loaded
/// before any is used: the loop is bound by their latency and by instruction issue. Hence the entries are read through
/// a pointer that steps along the row, a record's address is formed in 32 bits, and a batch tests its image marks
/// once (a mark is rare: one branch per batch, not one per entry).
CELLINT_HD_WARNING_DISABLE
template <int Batch, class Real, int Dim, class Fn>
CELLINT_HD CELLINT_INLINE void for_each_entry(const ListShape<Real, Dim>& s, Index t, Index k0, Index m, Index step,
                                              const Vec<Real, Dim>& xt, Fn&& fn) {
  using U = std::uint32_t;
  constexpr U image = ListShape<Real, Dim>::image_bit;
  auto record = [&](Index e) -> const Packed<Real>& { return s.packed[ListShape<Real, Dim>::entry_position(e)]; };
  auto fold = [&](Packed<Real>& p) {  // the source at the image nearest xt
    for (int d = 0; d < Dim; ++d)
      if (s.geo.box.periodic[d]) p.v[d] += s.geo.box.lengths[d] * round_nearest((xt[d] - p.v[d]) * s.inv_len[d]);
  };
  auto use = [&](const Packed<Real>& p) {
    Vec<Real, Dim> x;
    for (int d = 0; d < Dim; ++d) x[d] = p.v[d];
    fn(x, p.slot());
  };
  if (k0 >= m) return;
  const std::ptrdiff_t next = static_cast<std::ptrdiff_t>(step) * (s.stride ? s.stride : 1);  // entry k to k + step
  const Index* at = s.nbr + s.at(t, k0);
  Index k = k0;
  for (; k + (Batch - 1) * step < m; k += Batch * step, at += Batch * next) {
    Index e[Batch];
    Packed<Real> p[Batch];
    for (int q = 0; q < Batch; ++q) e[q] = at[q * next];
    for (int q = 0; q < Batch; ++q) p[q] = record(e[q]);
    U marks = 0;
    for (int q = 0; q < Batch; ++q) marks |= static_cast<U>(e[q]);
    if (marks & image)
      for (int q = 0; q < Batch; ++q)
        if (static_cast<U>(e[q]) & image) fold(p[q]);
    for (int q = 0; q < Batch; ++q) use(p[q]);
  }
  for (; k < m; k += step, at += next) {
    const Index e = *at;
    Packed<Real> p = record(e);
    if (static_cast<U>(e) & image) fold(p);
    use(p);
  }
}

/// Adds accumulator b into a element by element (Accum is an array of AccumScalar).
template <class T>
CELLINT_HD CELLINT_INLINE void add_accum(typename T::Accum& a, const typename T::Accum& b) {
  using S = typename T::AccumScalar;
  constexpr int k = static_cast<int>(sizeof(typename T::Accum) / sizeof(S));
  S* x = reinterpret_cast<S*>(&a);
  const S* y = reinterpret_cast<const S*>(&b);
  for (int e = 0; e < k; ++e) x[e] += y[e];
}

/// The pair term for a known dr (the fallback scan of an overflowed row).
CELLINT_HD_WARNING_DISABLE
template <class T, class F, class Real, int Dim>
CELLINT_HD CELLINT_INLINE void pair_term(const F& f, const GridView<Real, Dim>& v, Index j, const Vec<Real, Dim>& dr,
                                         Real r2, const typename T::Payload& pt, typename T::Accum& acc) {
  if constexpr (T::position_only)
    f(acc, pt, pt, dr, r2);
  else
    f(acc, pt, T::load_source(f, v, j), dr, r2);
}

/// Adds into `acc` the full-list pairs of the target at list position t (position xt, payload pt) from the row entries
/// g, g + step, ... (a group of `step` threads shares a row); a row that overflowed is scanned from the list's cells
/// instead, by the group's first thread, so no pair is lost before the host grows the rows.
CELLINT_HD_WARNING_DISABLE
template <class T, class F, class Real, int Dim>
CELLINT_HD CELLINT_INLINE void row_add(const ListShape<Real, Dim>& s, const GridView<Real, Dim>& v, const F& f, Index t,
                                       const Vec<Real, Dim>& xt, const typename T::Payload& pt, Index g, Index step,
                                       typename T::Accum& acc) {
  const Real rc2 = cutoff2(s.geo);
  const Index m = s.len[t];
  if (m <= s.capacity) {
    // (four entries in flight, as the cell strategies' pair loop; eight measured slower on the H100: 621 against
    // 569 us per step at 2M atoms, with 72 registers against 48)
    for_each_entry<4>(s, t, g, m, step, xt, [&](const Vec<Real, Dim>& x, Index j) {
      if constexpr (T::branch_free) {  // most entries are within the cutoff: no branch around the pair term
        Vec<Real, Dim> dr;
        for (int d = 0; d < Dim; ++d) dr[d] = xt[d] - x[d];
        const Real r2 = norm2(dr);
        f(acc, pt, pt, dr, r2 < rc2 ? r2 : std::numeric_limits<Real>::infinity());
      } else {
        accumulate_pair<T>(f, GlobalSource<T, F, Real, Dim>{x, f, v, j}, xt, pt, rc2, acc);
      }
    });
  } else if (g == 0) {
    s.for_each_candidate(
        t, xt, T::cutoff_test ? rc2 : s.reach2,
        [&](Index, Index j, const Vec<Real, Dim>& dr, Real r2, bool) { pair_term<T>(f, v, j, dr, r2, pt, acc); });
  }
}

/// The full-list accumulation of the target at list position t, whose slot goes to *slot (every neighbour in its row).
CELLINT_HD_WARNING_DISABLE
template <class T, class F, class Real, int Dim>
CELLINT_HD CELLINT_INLINE typename T::Accum row_accumulate(const ListShape<Real, Dim>& s, const GridView<Real, Dim>& v,
                                                           const F& f, Index t, Index* slot) {
  const Vec<Real, Dim> xt = s.packed_position(t, slot);
  const auto pt = T::load(f, v, *slot);
  auto acc = T::init(f);
  row_add<T>(s, v, f, t, xt, pt, Index(0), Index(1), acc);
  return acc;
}

/// The output of interact() as an array: out[slot] = the target's accumulation.
template <class Accum>
struct StoreAccum {
  Accum* out;
  CELLINT_HD CELLINT_INLINE void operator()(Index slot, const Accum& acc) const { out[slot] = acc; }
};

/// out(slot, acc) with the full-list accumulation of each target (StoreAccum: out[slot] = acc; or an Epilogue's
/// function): one thread per list position, or, `Grouped`, `group` threads (1, 2, 4 or 8; neighbouring threads are
/// neighbouring particles). A group's threads take every group-th entry of the row and their partial sums meet in
/// shared memory (Accum addable; sizeof(Accum) x block_size() bytes): more threads in flight where the particles alone
/// would not fill the GPU. interact() chooses (see there). The rows read the list's packed positions only (and the
/// functor's payload from the grid).
template <class F, class Real, int Dim, bool Grouped = false,
          class Out = StoreAccum<typename FunctorTraits<F, Real, Dim>::Accum>>
struct ListInteract {
  using T = FunctorTraits<F, Real, Dim>;
  static constexpr unsigned launch_max_threads = 128;  ///< (interact_list's block)
  /// float positions: 48 warps per multiprocessor (at most 40 registers) with a thread per row and an accumulator of
  /// Dim floats or less (the loads in flight, not the registers, bound that loop), else 40 (48 registers)
  static constexpr unsigned launch_min_blocks =
      sizeof(Real) != 4 ? 0 : (!Grouped && sizeof(typename T::Accum) <= 3 * sizeof(float) ? 12 : 10);
  ListShape<Real, Dim> s;  ///< the list
  GridView<Real, Dim> v;   ///< the grid
  F f;                     ///< the functor
  Out out;                 ///< out(slot, acc): each target's accumulation
  Index group;             ///< threads per target (1 unless Grouped)
  int part;                ///< the rows computed (see ListShape::in_part()); the others' outputs are left alone
  const Index* rows;       ///< target k is list position rows[k] (null: k, filtered by `part`)
  Index count;             ///< targets: rows[0 .. count), or list positions 0 .. count
  template <class Block>
  CELLINT_HD void operator()(Block& b) const {
    const Index id = static_cast<Index>(b.block_rank() * b.block_size() + b.thread_rank());
    if constexpr (Grouped) {
      static_assert(T::addable, "cellint: threads share a row only for an addable Accum");
      using Accum = typename T::Accum;
      const Index k = id / group, g = id % group;
      const bool mine = k < count && (rows || s.in_part(k, part));
      const Index t = mine && rows ? rows[k] : k;
      Accum* sh = b.template shared<Accum>();
      Accum acc{};
      Index slot = 0;
      if (mine) {
        const Vec<Real, Dim> xt = s.packed_position(t, &slot);
        const auto pt = T::load(f, v, slot);
        if (g == 0) acc = T::init(f);
        row_add<T>(s, v, f, t, xt, pt, g, group, acc);
      }
      sh[b.thread_rank()] = acc;
      b.sync();
      if (mine && g == 0) {
        for (Index q = 1; q < group; ++q) add_accum<T>(acc, sh[b.thread_rank() + static_cast<unsigned>(q)]);
        out(slot, acc);
      }
    } else {
      if (id >= count) return;
      const Index t = rows ? rows[id] : id;
      if (!rows && !s.in_part(t, part)) return;
      Index slot;
      const auto acc = row_accumulate<T>(s, v, f, t, &slot);
      out(slot, acc);
    }
  }
};

/// Walks the half row of list position t (every pair once, Newton's third law): calls sink(j, acc_j) with the source
/// slot j's share of each pair and returns the target's share (its slot goes to *slot). Overflowed rows are scanned
/// from the list's cells.
CELLINT_HD_WARNING_DISABLE
template <class T, class F, class Real, int Dim, class Sink>
CELLINT_HD CELLINT_INLINE typename T::Accum half_row(const ListShape<Real, Dim>& s, const GridView<Real, Dim>& v,
                                                     const F& f, Index t, Index* slot, Sink&& sink) {
  const Vec<Real, Dim> xi = s.packed_position(t, slot);
  const auto pi = T::load(f, v, *slot);
  typename T::Accum acc{};
  const Real r2max = T::cutoff_test ? cutoff2(s.geo) : s.reach2;
  auto pair = [&](Index, Index j, const Vec<Real, Dim>& dr, Real r2, bool) {
    typename T::Accum aj{};
    if constexpr (T::position_only)
      f.symmetric(acc, aj, pi, pi, dr, r2);
    else
      f.symmetric(acc, aj, pi, T::load(f, v, j), dr, r2);
    sink(j, aj);
  };
  const Index m = s.len[t];
  if (m <= s.capacity) {
    for_each_entry<4>(s, t, Index(0), m, Index(1), xi, [&](const Vec<Real, Dim>& x, Index j) {
      Vec<Real, Dim> dr;
      for (int d = 0; d < Dim; ++d) dr[d] = xi[d] - x[d];
      const Real r2 = norm2(dr);
      if (r2 < r2max) pair(Index(0), j, dr, r2, false);
    });
  } else {
    s.for_each_candidate(t, xi, r2max, pair);
  }
  return acc;
}

/// out[i] = init (before the half-list kernel adds into it).
template <class F, class Real, int Dim>
struct ListInit {
  using T = FunctorTraits<F, Real, Dim>;
  F f;                     ///< the functor
  typename T::Accum* out;  ///< one accumulator per slot
  template <class A>
  CELLINT_HD void operator()(A&, Index i) const {
    out[i] = T::init(f);
  }
};

/// Half list on GPU-like backends: one thread per target, both sides of each pair added with atomics.
template <class F, class Real, int Dim>
struct ListInteractHalf {
  using T = FunctorTraits<F, Real, Dim>;
  ListShape<Real, Dim> s;  ///< the list
  GridView<Real, Dim> v;   ///< the grid
  F f;                     ///< the functor
  typename T::Accum* out;  ///< one accumulator per slot, holding init
  template <class Block>
  CELLINT_HD void operator()(Block& b) const {
    const Index t = static_cast<Index>(b.block_rank() * b.block_size() + b.thread_rank());
    if (t >= s.n) return;
    Index slot;
    const auto acc = half_row<T>(s, v, f, t, &slot,
                                 [&](Index j, const typename T::Accum& aj) { atomic_add_accum<T>(b, out + j, aj); });
    atomic_add_accum<T>(b, out + slot, acc);
  }
};

}  // namespace cellint::detail
