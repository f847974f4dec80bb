#pragma once
/// @file
/// NeighborList: Verlet lists with a skin over a CellGrid's slots, rebuilt on the backend when a particle has moved
/// more than half the skin, and interact() over them.

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <string>
#include <type_traits>
#include <vector>

#include "cellint/backend/buffer.hpp"
#include "cellint/backend/detail/parallel_for.hpp"
#include "cellint/core/error.hpp"
#include "cellint/grid/cell_grid.hpp"
#include "cellint/lists/detail/kernels.hpp"
#include "cellint/potentials/counting.hpp"
#include "cellint/strategies/strategy.hpp"

namespace cellint {

/// Where entry k of row i is stored.
enum class ListLayout {
  Auto,     ///< Columns on GPU-like backends, Rows on the Host backend
  Rows,     ///< i * capacity + k: a row is contiguous (one CPU thread walks it)
  Columns,  ///< k * stride + i: entry k of neighbouring targets is contiguous (one GPU thread per target, coalesced)
};

/// A part of a list's rows, for overlapping work with the arrival of particles that are sources only (an MPI rank's
/// ghosts: see NeighborList::set_targets()). Interior rows read the targets' positions only; border rows are those of
/// targets with a non-target in one of the list cells around their own, and the non-targets' own (empty) rows. Without
/// set_targets() every row is interior.
enum class ListPart {
  All,       ///< every row
  Interior,  ///< rows that read no non-target's position
  Border,    ///< the other rows
};

/// How update() decides that a list's rows must be rebuilt (ListOptions::trigger, when ListOptions::check is on). Both
/// keep every pair within the cutoff in the rows.
enum class RebuildTrigger {
  /// Pairs for lists of NeighborList::pairs_from particles or more, else HalfSkin: the pair check costs a launch per
  /// update and a walk over the cells around each particle past skin / 2, which pays where rebuilds cost more than
  /// that (in.lj on an H200: +1.9 % at 256,000 atoms, +4 % at 2M; -13 % at 62,500; see docs/lists.md).
  Auto,
  /// A particle that moved more than skin / 2 since the last rebuild asks for a rebuild only when, with a particle of
  /// the cells around it, it moved (relative to that particle) by as much as their distance at the last rebuild less
  /// the cutoff - so that no pair that the rows do not hold can have come within the cutoff - or when it moved farther
  /// than (narrowest list cell - cutoff) / 2. Rebuilds less often than HalfSkin.
  Pairs,
  /// Any particle that moved more than skin / 2 since the last rebuild (LAMMPS `neigh_modify check yes`).
  HalfSkin,
};

/// How a NeighborList is kept. The defaults check the displacements at every update(), like LAMMPS's
/// `neigh_modify every 1 delay 0 check yes` (with RebuildTrigger::Auto's pair check on large lists).
struct ListOptions {
  bool half = false;   ///< each pair once (Newton's third law): needs the functor's symmetric() and an addable Accum
  int every = 1;       ///< look at the displacements (or rebuild, without `check`) only at every k-th update()
  bool check = true;   ///< false: rebuild at every k-th update() unconditionally (LAMMPS `check no`)
  RebuildTrigger trigger = RebuildTrigger::Auto;  ///< what the displacement check looks at (with `check`)
  Index capacity = 0;  ///< row entries to start with (0: estimated from the density); rows grow when one overflows
  ListLayout layout = ListLayout::Auto;  ///< row layout
  /// GPU full lists: threads per row in interact() (1, 2, 4 or 8; 0: chosen from the particle count, so that the
  /// threads fill the GPU). More than one needs an addable Accum (see interact()).
  int row_threads = 0;
  /// Rows in a fixed order, the same run after run for the same grid slots: each list cell's particles in slot order
  /// (a sort per cell after the rebuild's atomic binning; see interact() with Tuning::reproducible).
  bool stable = false;
  /// List cells along X per cutoff + skin (1, 2 or 3; 0: automatic, which is 2). A row's candidates are the cells
  /// within `x_split` of its own along X and one along the others: 2 + 1 / x_split cell widths along X instead of 3,
  /// in as many runs of list positions.
  int x_split = 0;
};

/// What check() found.
struct ListStats {
  long builds = 0;               ///< rebuilds since the list was made (the first build included)
  long updates = 0;              ///< update() calls so far
  Index longest = 0;             ///< the longest row of the rebuilds since the previous check()
  Index capacity = 0;            ///< row entries now
  bool grew = false;             ///< a row overflowed: the rows grew and the list was rebuilt
  std::vector<long> rebuilt_at;  ///< update numbers of the rebuilds since the previous check() (the last 4096)
};

/// A Verlet neighbour list of the particles of a CellGrid: for each particle, the particles within cutoff + skin (all
/// of them, or with ListOptions::half each pair once), found through a cell grid of its own whose cells are at least
/// cutoff + skin wide. interact(list, grid, f, out) then evaluates the pairs within the cutoff from the rows; the rows
/// stay valid while no particle moves more than skin / 2 (or, with RebuildTrigger::Pairs, while no two particles that
/// the rows do not pair can have come within the cutoff), which update() checks on the backend. On the backend the
/// rows are kept in *list order* (particles ordered by list cell at the last rebuild); rows() shows them by slot.
///
/// A time step calls update(grid) after moving the positions (grid.positions(d), in place) and then interact():
///  - update() issues the displacement check and the four rebuild kernels; the rebuild kernels return at once unless
///    the check asked for a rebuild. Nothing waits for the device: a step needs no host round trip.
///  - A row longer than the capacity is never cut short in effect: interact() scans the list's cells for that target
///    instead (correct, slower), and check() - which waits for the device - grows the rows and rebuilds. Call check()
///    when the host looks at results anyway (thermo output), or every few hundred steps.
///  - grid.rebuild() permutes the slots; the next update() then rebuilds the list at once (on the host's side: the
///    re-binning already synchronised). interact() over a list older than the grid's binning throws.
///
/// Positions may leave the box between grid rebuilds (periodic axes wrap in the list's cells and pairs use the minimum
/// image); a non-finite position is reported by check() and by grid.rebuild(). interact() reads the positions as the
/// last update() (or build()) packed them: call update() after moving the particles.
///
/// @tparam Backend Host, Emulated, Cuda or Hip; @tparam Real float or double; @tparam Dim 2 or 3
template <class Backend, class Real, int Dim>
class NeighborList {
 public:
  using Grid = CellGrid<Backend, Real, Dim>;  ///< the grid whose slots the rows hold

  /// A list of the pairs within grid.cutoff() + `skin`, built now; with `targets` >= 0, rows for the grid's first
  /// `targets` particles only (see set_targets()).
  /// @throws InvalidArgument for a negative or non-finite skin, an unbuilt grid, or a periodic axis with room for fewer
  ///         than 3 cells of width cutoff + skin (enlarge the box or reduce the skin)
  NeighborList(const Grid& grid, Real skin, const ListOptions& o = {}, Index targets = -1)
      : skin_(skin), opts_(o), geo_(list_geometry(grid, skin)) {
    set_targets(targets);
    CELLINT_EXPECTS(o.x_split >= 0 && o.x_split <= 3,
                    "cellint::NeighborList: ListOptions::x_split must be 0 (automatic), 1, 2 or 3, got ", o.x_split);
    // cells 1 / split_ of the reach wide along X: fewer candidates in as many runs
    split_ = o.x_split > 0 ? o.x_split : 2;
    geo_.cells[0] *= split_;
    geo_.width[0] /= static_cast<Real>(split_);
    geo_.inv_width[0] *= static_cast<Real>(split_);
    CELLINT_EXPECTS(o.every >= 1, "cellint::NeighborList: ListOptions::every must be >= 1, got ", o.every);
    CELLINT_EXPECTS(o.capacity >= 0, "cellint::NeighborList: ListOptions::capacity must be >= 0, got ", o.capacity);
    CELLINT_EXPECTS(
        o.row_threads == 0 || o.row_threads == 1 || o.row_threads == 2 || o.row_threads == 4 || o.row_threads == 8,
        "cellint::NeighborList: ListOptions::row_threads must be 0 (automatic), 1, 2, 4 or 8, got ", o.row_threads);
    columns_ = o.layout == ListLayout::Columns || (o.layout == ListLayout::Auto && Backend::is_gpu_like);
    const auto nc = static_cast<std::size_t>(geo_.cell_count());
    count_.resize(nc + 1);
    start_.resize(nc + 1);
    late_.resize(nc);
    count_.fill_bytes(0, grid.stream());
    tile_word_.resize(2 * ((nc + detail::list_scan_tile - 1) / detail::list_scan_tile));
    ctrl_.resize(detail::ListWord::count);
    log_.resize(log_size);
    reset_control(grid);
    build(grid);
  }

  /// Rebuilds the rows now from the grid's current positions (waits for the device once; grows the rows if needed).
  /// @throws NonFinitePosition naming a particle whose position is not finite
  void build(const Grid& grid) {
    CELLINT_EXPECTS(grid.built(),
                    "cellint::NeighborList::build: the grid holds no binned particles; call "
                    "grid.build() first");
    CELLINT_EXPECTS(grid.geometry().cutoff == geo_.cutoff && same_box(grid.geometry().box),
                    "cellint::NeighborList::build: the grid's box or cutoff differ from the ones the list was made "
                    "for; make a new list for this grid");
    if (grid.size() != n_) resize(grid.size(), grid.stream());
    built_targets_ = targets_;
    built_parts_ = parts_;
    grid_serial_ = grid.serial();
    grid_binning_ = grid.binning_count();
    if (capacity_ == 0) capacity_ = initial_capacity(grid.size());
    allocate_rows();
    for (;;) {
      set_longest(grid, 0);
      detail::parallel_for<Backend>(1, detail::ListRequest{ctrl_.data()}, grid.stream());
      enqueue_rebuild(grid);
      const Index longest = read_longest(grid);
      if (longest <= capacity_) break;
      capacity_ = grown(longest);
      allocate_rows();
      grew_ = true;
    }
    compact_parts(grid);
  }

  /// One step's list maintenance, issued without waiting for the device: checks the displacements since the last
  /// rebuild (every ListOptions::every calls) and rebuilds on the backend when a particle moved more than skin / 2
  /// (RebuildTrigger::HalfSkin) or when a pair may have come within the cutoff (RebuildTrigger::Pairs).
  /// After grid.rebuild() or grid.build() it rebuilds at once.
  void update(const Grid& grid) {
    ++updates_;
    if (stale(grid)) {
      build(grid);
      return;
    }
    const bool look = updates_ % opts_.every == 0;
    pack(grid, look && opts_.check, true);
    if (!look) return;
    if (!opts_.check)
      detail::parallel_for<Backend>(1, detail::ListRequest{ctrl_.data()}, grid.stream());
    else if (checks_pairs())
      check_movers(grid);
    enqueue_rebuild(grid);
    parts_known_ = false;  // (the backend may rebuild: the parts' row lists of build() would be stale)
  }

  /// Packs the positions one part of the rows reads, for interact(list, grid, f, out, part): ListPart::Interior packs
  /// the targets' positions, ListPart::Border the other particles' (ListPart::All: update(grid)). So that interior rows
  /// can be computed while the non-targets' positions are still on their way (cellint::mpi's
  /// DistributedGrid::update_ghosts(meanwhile)):
  ///
  ///     list.update(grid, ListPart::Interior);  interact(list, grid, f, out, ListPart::Interior);
  ///     ... the non-targets' positions arrive ...
  ///     list.update(grid, ListPart::Border);    interact(list, grid, f, out, ListPart::Border);
  ///
  /// Never rebuilds: the caller decides when the rows are rebuilt (build(grid)), as cellint::mpi does by a vote of the
  /// ranks. With `check`, the packing also looks at the displacements since the last build as update(grid) does (the
  /// particles past skin / 2 listed for the pair check, or a rebuild asked for), and once both parts are packed so,
  /// rebuild_needed() says whether the rows still hold every pair that may be within the cutoff. The Interior call
  /// counts the update.
  /// @throws InvalidArgument when the rows are older than the grid's binning (call build(grid))
  void update(const Grid& grid, ListPart part, bool check = false) {
    if (part == ListPart::All) {
      update(grid);
      return;
    }
    expect_current(grid, "update");
    if (part == ListPart::Interior) ++updates_;
    const auto s = shape(grid);
    if (!s.sources) {  // no non-targets: every position is a target's
      if (part == ListPart::Interior) pack(grid, check, true);
      return;
    }
    if (part == ListPart::Border) {  // the non-targets, by their list positions (the rebuild's scatter lists them)
      detail::parallel_for<Backend>(
          n_ - s.targets, detail::ListPack<Real, Dim>{s, half_skin2(), check, false, 2, s.sources}, grid.stream());
      return;
    }
    pack(grid, check, true, 1);
  }

  /// After update(grid, ListPart::Interior, true) and update(grid, ListPart::Border, true): whether the rows may miss a
  /// pair within the cutoff (RebuildTrigger::Pairs: the pair check of the listed particles against their neighbours,
  /// pairs of two particles without rows left out; HalfSkin: a particle moved more than skin / 2). Waits for the
  /// grid's stream; does not rebuild (build(grid) does, and only it clears a request). Clears the listed particles for
  /// the next check.
  /// @throws InvalidArgument when the rows are older than the grid's binning (call build(grid))
  bool rebuild_needed(const Grid& grid) {
    expect_current(grid, "rebuild_needed");
    if (checks_pairs()) check_movers(grid);
    unsigned w[detail::ListWord::count];
    ctrl_.download(w, grid.stream());
    Backend::fill_bytes(ctrl_.data() + detail::ListWord::movers, 0, sizeof(unsigned), grid.stream());
    return w[detail::ListWord::request] != 0;
  }

  /// How far a particle may move from its place at the last build before the displacement check asks for a rebuild:
  /// skin / 2, or with the pair check up to the narrowest gap between list cells that are not neighbours less the
  /// cutoff and skin / 2 (a listed particle farther than that rebuilds at once). Depends on the list's cells and the
  /// particle count (RebuildTrigger::Auto).
  Real max_move() const {
    const Real half = Real(0.5) * skin_;
    if (!checks_pairs()) return half;
    return std::max(half, static_cast<Real>(far_move(far_slack())));
  }

  /// The list positions of one part's rows in list order, as the last build() found them (`rows` in backend memory),
  /// or {nullptr, -1} when unknown: without set_targets(), for ListPart::All, or after an update() that may have
  /// rebuilt the rows on the backend (build() finds them again).
  struct PartRows {
    const Index* rows;  ///< list positions (backend memory)
    Index count;        ///< how many
  };
  /// See PartRows.
  PartRows part_rows(ListPart part) const {
    if (!parts_known_ || part == ListPart::All) return {nullptr, -1};
    return part == ListPart::Interior ? PartRows{part_rows_.data(), parts_interior_}
                                      : PartRows{part_rows_.data() + parts_interior_, n_ - parts_interior_};
  }

  /// Waits for the device and reports: rebuilds, the longest row, and the rebuilds' update numbers since the last
  /// check(). A row that overflowed makes the rows grow (capacity from the longest row found, plus room) and the list
  /// is rebuilt.
  /// @throws NonFinitePosition naming a particle whose position is not finite
  ListStats check(const Grid& grid) {
    unsigned w[detail::ListWord::count];
    ctrl_.download(w, grid.stream());
    report_bad(grid, w[detail::ListWord::bad]);
    ListStats st;
    st.longest = static_cast<Index>(w[detail::ListWord::longest]);
    const long builds = static_cast<long>(w[detail::ListWord::builds]);
    std::vector<Index> log(static_cast<std::size_t>(log_size));
    log_.download(log.data(), grid.stream());
    for (long b = std::max(logged_, builds - log_size); b < builds; ++b)
      st.rebuilt_at.push_back(static_cast<long>(log[static_cast<std::size_t>(b % log_size)]));
    logged_ = builds;
    set_longest(grid, 0);
    if (st.longest > capacity_ && !stale(grid)) build(grid);  // grows the rows
    st.grew = grew_;
    grew_ = false;
    ctrl_.download(w, grid.stream());
    st.builds = static_cast<long>(w[detail::ListWord::builds]);
    st.updates = static_cast<long>(w[detail::ListWord::updates]);
    st.capacity = capacity_;
    return st;
  }

  /// Particles from which RebuildTrigger::Auto chooses Pairs.
  static constexpr Index pairs_from = 250000;
  /// Whether the displacement check looks at pairs (RebuildTrigger::Pairs, or Auto for this many particles).
  bool checks_pairs() const {
    return opts_.trigger == RebuildTrigger::Pairs || (opts_.trigger == RebuildTrigger::Auto && n_ >= pairs_from);
  }
  /// The interaction cutoff (the grid's).
  Real cutoff() const { return geo_.cutoff; }
  /// The skin: rows hold the pairs within cutoff() + skin().
  Real skin() const { return skin_; }
  /// Whether each pair is stored once.
  bool half() const { return opts_.half; }
  /// Row entries.
  Index capacity() const { return capacity_; }
  /// Particles (rows).
  Index size() const { return n_; }
  /// The options the list was made with.
  const ListOptions& options() const { return opts_; }
  /// The list's cells: at least cutoff + skin wide; a particle's candidates are the 3^Dim cells around its own.
  const GridGeometry<Real, Dim>& geometry() const { return geo_; }
  /// Whether the grid was re-binned (or is another grid) since the last build: its slots are not the rows' slots.
  bool stale(const Grid& grid) const {
    return grid.serial() != grid_serial_ || grid.binning_count() != grid_binning_ || grid.size() != n_;
  }

  /// Rows only for the grid's first `k` particles in the user's order (the order of grid.build()'s arrays); the others
  /// get empty rows, so that interact() gives them the functor's zero accumulator and spends nothing on them. For a
  /// grid that holds particles that are sources only, such as an MPI rank's ghost layer (cellint::mpi). Takes effect at
  /// the next build() (rebuilds on the backend between builds keep the last build's targets): call it before build().
  /// k < 0 or k >= size(): every particle (the default).
  /// A half list keeps each pair with a target once (LAMMPS's `newton off` across ranks): a pair of two targets in
  /// one of their rows, a pair of a target and another particle in the target's row; pairs of two other particles
  /// are left out. interact() then adds both sides of each pair, so the other particles' outputs hold their shares
  /// of their pairs with targets, not sums to read: only the targets' outputs are complete. A half list computes
  /// every row at once (interact() over one part throws).
  /// With `parts` (the default) each rebuild also sorts the rows into interior and border ones (ListPart), for
  /// interact(list, grid, f, out, part); without, the rebuild skips that (three kernels, a scan and a wait for the
  /// device), for a caller that computes every row at once: update(grid, part) works either way, interact() over one
  /// part throws.
  void set_targets(Index k, bool parts = true) {
    targets_ = k;
    parts_ = parts;
  }
  /// Whether rebuilds from the next build() on sort the rows into interior and border ones (set_targets()).
  bool marks_parts() const { return parts_; }
  /// The target count set by set_targets() (< 0: every particle).
  Index targets() const { return targets_; }

  /// Threads per row of a GPU full-list interact() over n particles: ListOptions::row_threads, or the fewest of 1, 2,
  /// 4 and 8 that put a quarter of the GPU's resident threads in flight (the best of the four on the H100 for in.lj at
  /// 32,000 .. 2M atoms: see docs/lists.md).
  /// (`fill`: 4 for a quarter of the resident threads, 1 for all of them.)
  Index row_threads_for(Index n, int fill = 4) const {
    if (opts_.row_threads > 0) return opts_.row_threads;
    const DeviceProperties p = Backend::properties();
    const long long want = static_cast<long long>(p.multiprocessors) * p.max_threads_per_multiprocessor / fill;
    Index g = 1;
    while (g < 8 && static_cast<long long>(n) * g < want) g *= 2;
    return g;
  }

  /// The rows on the host, by the grid's slots (slot -> neighbour slots, in stored order), for inspection and tests.
  /// Waits for the device. (On the backend rows are kept by list position: slots ordered by list cell at the last
  /// rebuild, so that neighbouring threads walk neighbouring particles.)
  std::vector<std::vector<Index>> rows(const Grid& grid) const {
    expect_current(grid, "rows");
    std::vector<Index> len(static_cast<std::size_t>(n_)), nbr(nbr_.size()), ids(static_cast<std::size_t>(n_));
    if (n_) {
      len_.download(len.data(), grid.stream());
      nbr_.download(nbr.data(), grid.stream());
      ids_.download(ids.data(), grid.stream());
    }
    const auto s = shape(grid);
    std::vector<std::vector<Index>> r(static_cast<std::size_t>(n_));
    for (Index t = 0; t < n_; ++t) {
      auto& row = r[static_cast<std::size_t>(ids[static_cast<std::size_t>(t)])];
      for (Index k = 0; k < std::min(len[static_cast<std::size_t>(t)], capacity_); ++k)
        row.push_back(ids[static_cast<std::size_t>(s.entry_position(nbr[s.at(t, k)]))]);
    }
    return r;
  }
  /// The row lengths by slot, as found by the last rebuild (a length above capacity() marks a row that overflowed).
  std::vector<Index> row_lengths(const Grid& grid) const {
    expect_current(grid, "row_lengths");
    std::vector<Index> len(static_cast<std::size_t>(n_)), ids(static_cast<std::size_t>(n_)),
        by_slot(static_cast<std::size_t>(n_));
    if (n_) {
      len_.download(len.data(), grid.stream());
      ids_.download(ids.data(), grid.stream());
    }
    for (std::size_t t = 0; t < len.size(); ++t) by_slot[static_cast<std::size_t>(ids[t])] = len[t];
    return by_slot;
  }

  /// Which rows are border rows (see ListPart), by the grid's slots: 1 for a border row, 0 for an interior one (all 0
  /// without set_targets()). Waits for the device.
  /// @throws InvalidArgument after set_targets(k, false) with non-targets (rows not sorted into parts)
  std::vector<std::uint8_t> border_rows(const Grid& grid) const {
    expect_current(grid, "border_rows");
    std::vector<std::uint8_t> by_slot(static_cast<std::size_t>(n_), 0);
    const auto s = shape(grid);
    expect_parts(s, "border_rows");
    if (!n_ || !s.border) return by_slot;
    std::vector<std::uint32_t> b(static_cast<std::size_t>(n_));
    std::vector<Index> ids(static_cast<std::size_t>(n_));
    Backend::copy(b.data(), border_.data(), sizeof(std::uint32_t) * b.size(), CopyKind::DeviceToHost, grid.stream());
    ids_.download(ids.data(), grid.stream());
    for (std::size_t t = 0; t < b.size(); ++t) by_slot[static_cast<std::size_t>(ids[t])] = b[t] ? 1 : 0;
    return by_slot;
  }

  /// What the kernels see, with the grid's current positions.
  detail::ListShape<Real, Dim> shape(const Grid& grid) const {
    detail::ListShape<Real, Dim> s{};
    s.geo = geo_;
    s.split = split_;
    const Real reach = geo_.cutoff + skin_;
    s.reach2 = reach * reach;
    for (int d = 0; d < Dim; ++d) s.inv_len[d] = Real(1) / geo_.box.lengths[d];
    s.n = n_;
    s.capacity = capacity_;
    s.stride = columns_ ? padded(n_) : 0;
    s.half = opts_.half;
    s.nbr = const_cast<Index*>(nbr_.data());
    s.len = const_cast<Index*>(len_.data());
    s.cell_of = const_cast<std::uint32_t*>(cell_of_.data());
    s.rank = const_cast<std::uint32_t*>(rank_.data());
    s.count = const_cast<std::uint32_t*>(count_.data());
    s.start = const_cast<std::uint32_t*>(start_.data());
    s.ids = const_cast<Index*>(ids_.data());
    s.packed = const_cast<detail::Packed<Real>*>(packed_.data());
    for (int d = 0; d < Dim; ++d) {
      s.pos[d] = grid.positions(d);
      s.ref[d] = const_cast<Real*>(ref_[d].data());
    }
    s.ctrl = const_cast<unsigned*>(ctrl_.data());
    s.log = const_cast<Index*>(log_.data());
    s.log_size = log_size;
    s.original = grid.original_index();
    // (the targets and parts of the last build(): what sources_, late_ and border_ were written for)
    s.targets = built_targets_ < 0 || built_targets_ > n_ ? n_ : built_targets_;
    const bool split = s.targets < n_;
    s.sources = split ? const_cast<Index*>(sources_.data()) : nullptr;
    s.late = split && built_parts_ ? const_cast<std::uint8_t*>(late_.data()) : nullptr;
    s.border = split && built_parts_ ? const_cast<std::uint32_t*>(border_.data()) : nullptr;
    s.movers = checks_pairs() && n_ ? const_cast<Index*>(movers_.data()) : nullptr;
    s.mover_cap = static_cast<Index>(movers_.size());
    s.slack = far_slack();
    const double far = far_move(s.slack);
    const double near = std::max(0.0, 0.5 * cell_gap() - static_cast<double>(s.slack));
    s.far2 = static_cast<Real>(far * far);
    s.near2 = static_cast<Real>(near * near);
    return s;
  }
  /// Throws where rows are asked for by part (ListPart) but a rebuild does not sort them (set_targets(k, false)).
  static void expect_parts(const detail::ListShape<Real, Dim>& s, const char* what) {
    CELLINT_EXPECTS(!s.sources || s.border, "cellint::NeighborList::", what,
                    ": the list's rows are not sorted into interior and border ones (set_targets(k, false)); call "
                    "set_targets(k, true) and rebuild, or compute every row (ListPart::All)");
  }
  /// Throws unless the rows belong to the grid's current binning.
  void expect_current(const Grid& grid, const char* who) const {
    CELLINT_EXPECTS(!stale(grid), "cellint::", who, ": the neighbour list was built for ",
                    grid.serial() != grid_serial_ ? "another grid"
                                                  : "an older binning of this grid (build() or "
                                                    "rebuild() permuted the slots since)",
                    "; call list.update(grid) or list.build(grid) first");
  }

 private:
  static constexpr Index log_size = 4096;
  // The pair check's bounds: the narrowest gap between list cells that are not adjacent, less the cutoff (pairs of
  // such cells are a cell apart at least; along X the cells beyond `split` of a particle's own, split cells wide at
  // least); the rounding allowance (a few ulps of the box's coordinates); and how far a listed particle may move before
  // it rebuilds at once (far2), the others having moved skin / 2 at most.
  double cell_gap() const {
    double narrowest = static_cast<double>(geo_.width[0]) * split_;
    for (int d = 1; d < Dim; ++d) narrowest = std::min(narrowest, static_cast<double>(geo_.width[d]));
    return narrowest - static_cast<double>(geo_.cutoff);
  }
  Real far_slack() const {
    double box_extent = 0;
    for (int d = 0; d < Dim; ++d)
      box_extent = std::max(box_extent, std::abs(static_cast<double>(geo_.box.origin[d])) +
                                            static_cast<double>(geo_.box.lengths[d]));
    return static_cast<Real>(16 * std::numeric_limits<Real>::epsilon() * box_extent);
  }
  double far_move(Real slack) const {
    return std::max(0.0, cell_gap() - 0.5 * static_cast<double>(skin_) - static_cast<double>(slack));
  }
  Real half_skin2() const { return Real(0.25) * skin_ * skin_; }
  // particles the pair check looks at in one update (more: rebuild): 1,024, or one in 512 of many
  static std::size_t mover_room(std::size_t n) { return std::max<std::size_t>(1024, n / 512); }

  static GridGeometry<Real, Dim> list_geometry(const Grid& grid, Real skin) {
    CELLINT_EXPECTS(std::isfinite(skin) && skin >= 0, "cellint::NeighborList: the skin must be >= 0 and finite, got ",
                    skin);
    CELLINT_EXPECTS(grid.built(),
                    "cellint::NeighborList: the grid holds no binned particles; call grid.build() "
                    "first");
    return make_geometry(grid.geometry().box, grid.cutoff(), grid.cutoff() + skin);
  }
  bool same_box(const Box<Real, Dim>& b) const {
    for (int d = 0; d < Dim; ++d)
      if (b.origin[d] != geo_.box.origin[d] || b.lengths[d] != geo_.box.lengths[d] ||
          b.periodic[d] != geo_.box.periodic[d])
        return false;
    return true;
  }
  static Index padded(Index n) { return (n + 31) / 32 * 32; }
  // Neighbours expected within cutoff + skin at the mean density, with room for fluctuations.
  Index initial_capacity(Index n) const {
    double volume = 1;
    for (int d = 0; d < Dim; ++d) volume *= static_cast<double>(geo_.box.lengths[d]);
    const double reach = static_cast<double>(geo_.cutoff) + static_cast<double>(skin_);
    const double ball = Dim == 3 ? 4.18879020478639 * reach * reach * reach : 3.14159265358979 * reach * reach;
    const double mean = static_cast<double>(n) / volume * ball * (opts_.half ? 0.5 : 1.0);
    return opts_.capacity > 0 ? opts_.capacity : round8(1.2 * mean + 8);
  }
  static Index round8(double x) { return static_cast<Index>(std::min(2.0e9, std::ceil(x / 8) * 8)); }
  static Index grown(Index longest) { return round8(1.15 * longest + 8); }

  template <class Stream>
  void resize(Index n, Stream stream) {
    n_ = n;
    parts_known_ = false;
    const std::size_t m = static_cast<std::size_t>(std::max<Index>(n, 1));
    for (auto* b : {&len_, &ids_}) b->resize_with_room(m);  // (room: a count that creeps up)
    for (auto* b : {&cell_of_, &rank_}) b->resize_with_room(m);
    // records past the end for the row build's batches (ListBuildRowsStaged::find_lane), zeroed
    constexpr std::size_t pad = detail::ListBuildRowsStaged<Real, Dim>::padding;
    packed_.resize_with_room(m + pad);
    Backend::fill_bytes(packed_.data() + m, 0, pad * sizeof(detail::Packed<Real>), stream);
    border_.resize_with_room(m + 1);  // (one past the end: 0, where the scan of compact_parts() ends)
    sources_.resize_with_room(m);
    movers_.resize_with_room(std::min(m, mover_room(m)));
    for (auto& r : ref_) r.resize_with_room(m);
  }
  void allocate_rows() {
    const std::size_t rows = columns_ ? static_cast<std::size_t>(padded(n_)) : static_cast<std::size_t>(n_);
    nbr_.resize_with_room(std::max<std::size_t>(1, rows * static_cast<std::size_t>(capacity_)));
  }
  void set_longest(const Grid& grid, unsigned v) {
    Backend::copy(ctrl_.data() + detail::ListWord::longest, &v, sizeof v, CopyKind::HostToDevice, grid.stream());
  }
  void reset_control(const Grid& grid) {
    unsigned w[detail::ListWord::count] = {};
    w[detail::ListWord::bad] = static_cast<unsigned>(INT_MAX);
    ctrl_.upload(w, grid.stream());
    tile_word_.fill_bytes(0, grid.stream());  // (the cell scan's words follow the rebuild count's parity)
  }
  Index read_longest(const Grid& grid) {
    unsigned w[detail::ListWord::count];
    ctrl_.download(w, grid.stream());
    report_bad(grid, w[detail::ListWord::bad]);
    return static_cast<Index>(w[detail::ListWord::longest]);
  }
  void report_bad(const Grid& grid, unsigned bad) {
    if (bad == static_cast<unsigned>(INT_MAX)) return;
    reset_control(grid);
    Index id = static_cast<Index>(bad);
    Real x[Dim];
    for (int d = 0; d < Dim; ++d)
      Backend::copy(&x[d], grid.positions(d) + bad, sizeof(Real), CopyKind::DeviceToHost, grid.stream());
    Backend::copy(&id, grid.original_index() + bad, sizeof(Index), CopyKind::DeviceToHost, grid.stream());
    std::string where = detail::cat("cellint::NeighborList: particle ", id, " (slot ", bad, ") is at (");
    for (int d = 0; d < Dim; ++d) where += detail::cat(d ? ", " : "", x[d]);
    throw NonFinitePosition(where +
                            "): a coordinate is not finite; in a simulation this usually means the time "
                            "step is too large");
  }

  // Packs the positions for interact(); with `check`, raises a rebuild request on the backend when a particle moved
  // more than skin / 2 (with the pair check: lists it for check_movers(), unless it moved too far for that).
  // `which`: 0 every position, 1 the targets', 2 the others' (see update(grid, part)).
  void pack(const Grid& grid, bool check, bool count, int which = 0) {
    if (!n_) return;
    detail::parallel_for<Backend>(
        n_, detail::ListPack<Real, Dim>{shape(grid), half_skin2(), check, count, which}, grid.stream());
  }

  // The pair check (RebuildTrigger::Pairs): the particles that the pack listed, against their neighbours. On GPUs a
  // warp per listed particle (on most updates none is listed, and every thread returns at once; with 1,024 threads
  // in all, a few hundred listed particles took longer than the rest of a step at 62,500 atoms).
  void check_movers(const Grid& grid) {
    if (!n_) return;
    const Index lanes = Backend::is_gpu_like ? (Backend::device_memory ? 32 : 8) : 1;
    const Index threads =
        Backend::is_gpu_like ? (Backend::device_memory ? lanes * static_cast<Index>(movers_.size()) : 64) : 1;
    detail::parallel_for<Backend>(threads, detail::ListCheckMovers<Real, Dim>{shape(grid), threads, lanes},
                                  grid.stream());
  }

  // The rebuild sequence: each kernel returns at once unless a rebuild was requested.
  void enqueue_rebuild(const Grid& grid) {
    if (!n_) return;
    const auto s = shape(grid);
    const auto stream = grid.stream();
    detail::parallel_for<Backend>(n_, detail::ListBinCount<Real, Dim>{s}, stream);
    scan_cells(s, stream);
    detail::parallel_for<Backend>(n_, detail::ListScatter<Real, Dim>{s}, stream);
    if (opts_.stable) detail::parallel_for<Backend>(geo_.cell_count(), detail::ListSortCells<Real, Dim>{s}, stream);
    if (s.border) {  // interior and border rows (ListPart)
      detail::parallel_for<Backend>(geo_.cell_count(), detail::ListMarkLate<Real, Dim>{s}, stream);
      detail::parallel_for<Backend>(n_, detail::ListMarkBorder<Real, Dim>{s}, stream);
    }
    // rows staged in shared memory where they fit (column-major rows on GPU-like backends), else written directly;
    // a row costs about 3^Dim cells of candidates
    if constexpr (Backend::is_gpu_like) {
      using Staged = detail::ListBuildRowsStaged<Real, Dim>;
      const int rows = Backend::device_memory ? 64 : 8;
      const std::size_t bytes = Staged::shared_bytes(capacity_, rows);
      if (columns_ && bytes <= 48 * 1024) {
        // at most two waves of blocks, each taking chunks of rows until none is left (ListBuildRowsStaged): fewer
        // than the chunks where those are many (an update that does not rebuild returns at once), all of them where
        // they are few (one wave less a few blocks would leave those few a second chunk each: -0.7 % at 62,500 atoms);
        // on the Emulated backend four blocks, which take most chunks from the counter
        const unsigned threads = static_cast<unsigned>(rows * Staged::lanes);
        const DeviceProperties p = Backend::properties();
        const long per_sm = std::max(1L, std::min(static_cast<long>(p.max_threads_per_multiprocessor / threads),
                                                  static_cast<long>(p.shared_per_multiprocessor / (bytes + 1024))));
        const long chunks = (static_cast<long>(n_) + rows - 1) / rows;
        const long grid = Backend::device_memory ? 2 * per_sm * p.multiprocessors : 4;
        Backend::launch(LaunchShape{static_cast<unsigned>(std::min(chunks, grid)), threads, bytes}, Staged{s}, stream);
        return;
      }
    }
    if constexpr (Backend::is_gpu_like)
      detail::parallel_for<Backend>(n_, detail::ListBuildRows<Real, Dim>{s}, stream, 125);
    else
      detail::parallel_for<Backend>(n_, detail::ListBuildRowsHost<Real, Dim>{s}, stream, 125);
  }
  // After a build() with targets < n: the interior rows' list positions, then the border rows' (part_rows()).
  void compact_parts(const Grid& grid) {
    parts_known_ = false;
    const auto s = shape(grid);
    if (!s.border || !n_) return;
    const auto stream = grid.stream();
    const std::size_t m = static_cast<std::size_t>(n_);
    part_scan_.resize_with_room(m + 1);
    part_rows_.resize_with_room(m);
    Backend::fill_bytes(s.border + m, 0, sizeof(std::uint32_t), stream);  // (the scan's total follows)
    Backend::exclusive_scan(s.border, part_scan_.data(), n_ + 1, stream);
    detail::parallel_for<Backend>(n_, detail::ListCompactParts<Real, Dim>{s, part_scan_.data(), part_rows_.data()},
                                  stream);
    std::uint32_t border = 0;
    Backend::copy(&border, part_scan_.data() + m, sizeof border, CopyKind::DeviceToHost, stream);
    parts_interior_ = n_ - static_cast<Index>(border);
    parts_known_ = true;
  }
  void scan_cells(const detail::ListShape<Real, Dim>& s, typename Backend::Stream stream) {
    if constexpr (Backend::is_gpu_like) {
      // one kernel, a block per tile of cells (a kernel launched and returning at once costs ~2 us a step on an H100);
      // the look-back reads 32 tiles at once on GPUs, one on the Emulated backend (whose few blocks in flight would
      // otherwise never make it look past a first window)
      constexpr unsigned threads = Backend::device_memory ? 1024 : 64;  // (Emulated: fewer, cheaper threads)
      constexpr int window = Backend::device_memory ? 32 : 1;
      static_assert(window <= static_cast<int>(threads), "the look-back reads a window with one thread per tile");
      const Index tiles = (geo_.cell_count() + detail::list_scan_tile - 1) / detail::list_scan_tile;
      const detail::ListScanCells<Real, Dim> scan{s, tile_word_.data(), tiles, window};
      Backend::launch(LaunchShape{static_cast<unsigned>(tiles), threads, scan.shared_bytes()}, scan, stream);
    } else {  // host memory: the same steps on the calling thread (count_ has one spare zero at the end)
      if (!s.decide()) return;
      Backend::exclusive_scan(s.count, s.start, geo_.cell_count() + 1, stream);
      count_.fill_bytes(0, stream);
    }
  }

  Real skin_;
  ListOptions opts_;
  int split_ = 1;  // list cells along X per cutoff + skin
  GridGeometry<Real, Dim> geo_;
  bool columns_ = true;
  Index n_ = 0;
  Index capacity_ = 0;
  Index targets_ = -1;        // set_targets()
  Index built_targets_ = -1;  // targets_ at the last build() (the rows' and shape()'s)
  bool built_parts_ = true;   // parts_ at the last build()
  bool grew_ = false;
  long updates_ = 0;
  long logged_ = 0;
  std::uint32_t grid_serial_ = 0;
  std::uint64_t grid_binning_ = 0;
  Buffer<Backend, Index> nbr_, len_, ids_, log_, movers_;
  Buffer<Backend, std::uint32_t> cell_of_, rank_, count_, start_;
  Buffer<Backend, unsigned long long> tile_word_;  // the cell scan's look-back (ListScanCells)
  Buffer<Backend, unsigned> ctrl_;
  Buffer<Backend, Real> ref_[Dim];
  Buffer<Backend, detail::Packed<Real>> packed_;
  Buffer<Backend, std::uint8_t> late_;                 // list cells holding non-targets (ListPart)
  Buffer<Backend, std::uint32_t> border_, part_scan_;  // border rows as 1 / 0 (n + 1) and their scan (compact_parts())
  Buffer<Backend, Index> part_rows_;                   // interior rows' list positions, then the border rows'
  Index parts_interior_ = 0;                              // interior rows in part_rows_
  bool parts_ = true;                                     // rebuilds sort the rows into parts (set_targets())
  Buffer<Backend, Index> sources_;                        // the non-targets' list positions (ListShape::sources)
  bool parts_known_ = false;                              // part_rows_ matches the rows
};

/// What interact() over a full neighbour list does with each target's accumulation instead of storing it: fn(slot, acc)
/// runs on the backend as soon as the target's row is summed (the sum still in registers), once for every target,
/// concurrently and in no set order; `slot` is the target's slot in the grid's sorted order. The rows read the list's
/// own packed copy of the positions (NeighborList::update() made it), never the grid's, so fn may write the grid's
/// positions and any attribute the functor does not load: a second potential's sums added into the first's array, a
/// per-target reduction, a time step's kick and drift (cellint_lj --fuse; slower on an H100 than a kernel of its own,
/// docs/lists.md). Writing what the functor loads (its payload) races with the other rows. fn is copied to the backend
/// like a functor (CELLINT_HD, trivially copyable). Made by cellint::epilogue(fn).
template <class Fn>
struct Epilogue {
  Fn fn;  ///< called as fn(slot, acc) on the backend for every target
};

/// An Epilogue running fn(slot, acc) for every target (see Epilogue).
template <class Fn>
Epilogue<Fn> epilogue(Fn fn) {
  static_assert(std::is_trivially_copyable<Fn>::value,
                "cellint::epilogue: the function is copied to the backend like a functor: make it trivially copyable "
                "(pointers and values, no containers)");
  return Epilogue<Fn>{fn};
}

namespace detail {
/// half_row() on the host, in chunks of `K` entries: the sources within reach of the chunk are gathered first (their
/// dr, r2, slot and payload), then the functor runs over them in a loop without branches or dependences, which the
/// compiler vectorises (each pair into accumulators of its own, added afterwards in order), for the CPU's vector
/// width (CELLINT_DETAIL_HOST_CLONES). An overflowed row goes to half_row().
template <class T, int K, class F, class Real, int Dim, class Sink>
CELLINT_DETAIL_HOST_CLONES typename T::Accum half_row_chunked(const ListShape<Real, Dim>& s,
                                                              const GridView<Real, Dim>& v, const F& f, Index t,
                                                              Index* slot, Sink&& sink) {
  using Accum = typename T::Accum;
  const Index m = s.len[t];
  if (m > s.capacity) return half_row<T>(s, v, f, t, slot, sink);
  const Vec<Real, Dim> xi = s.packed_position(t, slot);
  const auto pi = T::load(f, v, *slot);
  const Real r2max = T::cutoff_test ? cutoff2(s.geo) : s.reach2;
  Accum acc{};
  Real dx[Dim][K], r2[K];
  Index js[K];
  typename T::Payload pj[K];
  Accum ai[K], aj[K];
  const Index* const row = s.nbr + s.at(t, 0);  // entry k at row[k * step]
  const std::size_t step = s.stride ? static_cast<std::size_t>(s.stride) : 1;
  const Packed<Real>* const packed = s.packed;
  for (Index k0 = 0; k0 < m; k0 += K) {
    const int chunk = m - k0 < K ? static_cast<int>(m - k0) : K;
    const Index* const entries = row + static_cast<std::size_t>(k0) * step;
    int kept = 0;
    for (int q = 0; q < chunk; ++q) {
      const Index e = entries[static_cast<std::size_t>(q) * step];
      const Packed<Real>& p = packed[s.entry_position(e)];
      Vec<Real, Dim> d;
      for (int c = 0; c < Dim; ++c) d[c] = xi[c] - p.v[c];
      if (e < 0) s.minimum_image(d);  // the pair crosses a periodic face
      const Real q2 = norm2(d);
      for (int c = 0; c < Dim; ++c) dx[c][kept] = d[c];
      r2[kept] = q2;
      js[kept] = p.slot();
      kept += q2 < r2max ? 1 : 0;
    }
    if constexpr (!T::position_only)
      for (int q = 0; q < kept; ++q) pj[q] = T::load(f, v, js[q]);
    CELLINT_DETAIL_SIMD
    for (int q = 0; q < kept; ++q) {
      Vec<Real, Dim> d;
      for (int c = 0; c < Dim; ++c) d[c] = dx[c][q];
      ai[q] = Accum{};
      aj[q] = Accum{};
      if constexpr (T::position_only)
        f.symmetric(ai[q], aj[q], pi, pi, d, r2[q]);
      else
        f.symmetric(ai[q], aj[q], pi, pj[q], d, r2[q]);
    }
    for (int q = 0; q < kept; ++q) {
      add_accum<T>(acc, ai[q]);
      sink(js[q], aj[q]);
    }
  }
  return acc;
}

/// Host half list: each thread walks a contiguous range of rows into accumulators of its own (thread 0 into `out`),
/// then the copies are added: no atomics, no colouring.
template <class B, class R, int D, class F>
void host_half_list(const ListShape<R, D>& s, const GridView<R, D>& v, const F& f,
                    typename FunctorTraits<F, R, D>::Accum* out) {
  using T = FunctorTraits<F, R, D>;
  using Accum = typename T::Accum;
  const Index n = s.n;
  const int threads = host_threads_for(static_cast<long long>(n) * 16, host_min_work);
  std::vector<Accum> extra(static_cast<std::size_t>(threads - 1) * static_cast<std::size_t>(n));
  host_loop(threads, 1, threads, [&](Index th) {
    Accum* o = th == 0 ? out : extra.data() + static_cast<std::size_t>(th - 1) * static_cast<std::size_t>(n);
    for (Index i = 0; i < n; ++i) o[i] = th == 0 ? T::init(f) : Accum{};
    const Index lo = static_cast<Index>(static_cast<long long>(n) * th / threads);
    const Index hi = static_cast<Index>(static_cast<long long>(n) * (th + 1) / threads);
    for (Index t = lo; t < hi; ++t) {  // only this thread writes its copy: plain adds
      Index slot;
      const Accum acc =
          half_row_chunked<T, 64>(s, v, f, t, &slot, [&](Index j, const Accum& aj) { add_accum<T>(o[j], aj); });
      add_accum<T>(o[slot], acc);
    }
  });
  if (threads > 1)
    host_loop(n, 4096, threads, [&](Index i) {  // each slot is summed by one thread
      for (int th = 1; th < threads; ++th) add_accum<T>(out[i], extra[static_cast<std::size_t>(th - 1) * n + i]);
    });
}

template <class Out>
struct is_epilogue : std::false_type {};
template <class Fn>
struct is_epilogue<Epilogue<Fn>> : std::true_type {};

/// interact() over a list, its statistics aside: into out[slot] (Out an Accum pointer) or through an Epilogue.
template <class B, class R, int D, class F, class Out>
Report interact_list(const NeighborList<B, R, D>& list, const CellGrid<B, R, D>& grid, const F& f, Out out,
                     ListPart which = ListPart::All) {
  using T = FunctorTraits<F, R, D>;
  constexpr bool then = is_epilogue<Out>::value;
  const auto sink = [&] {
    if constexpr (then)
      return out.fn;
    else
      return StoreAccum<typename T::Accum>{out};
  }();
  Report rep;
  const Index n = grid.size();
  if (!n) return rep;
  const auto s = list.shape(grid);
  const GridView<R, D> v = grid.view();
  CELLINT_EXPECTS(!list.half() || s.targets >= s.n || which == ListPart::All,
                  "cellint::interact: a half neighbour list with set_targets() adds each pair to both its particles, "
                  "whichever part its row is in, so its rows are computed at once: call interact() without a ListPart "
                  "(ListPart::All)");
  if (which != ListPart::All) NeighborList<B, R, D>::expect_parts(s, "interact");
  // without non-targets every row is interior
  if (!s.border && which == ListPart::Border) return rep;
  const int part = s.border ? static_cast<int>(which) : 0;  // (ListShape::in_part()'s numbering)
  if (list.half()) {
    if (which == ListPart::Border) return rep;  // (every particle is a target: every row is interior)
    if constexpr (then) {
      throw Unsupported(
          "cellint::interact: an epilogue needs a full neighbour list (a half list adds both sides of each pair into "
          "stored accumulators, so no target's sum is complete before the kernel ends); store into an array instead");
    } else if constexpr (loads_sources_apart<F, R, D>) {
      throw Unsupported(
          "cellint::interact: a half neighbour list reads each particle once for both sides of a pair: "
          "it cannot run a functor with load_source(); use a full list");
    } else if constexpr (T::symmetric && T::addable) {
      static_assert(sizeof(typename T::Accum) % sizeof(typename T::AccumScalar) == 0,
                    "cellint: the Accum's size is not a multiple of AccumScalar's");
      if constexpr (B::is_gpu_like) {
        detail::parallel_for<B>(n, detail::ListInit<F, R, D>{f, out}, grid.stream());
        rep.shape = LaunchShape{static_cast<unsigned>((n + 127) / 128), 128, 0};
        B::launch(rep.shape, detail::ListInteractHalf<F, R, D>{s, v, f, out}, grid.stream());
      } else {
        detail::host_half_list<B>(s, v, f, out);
      }
    } else {
      throw Unsupported(T::symmetric ? "cellint::interact: a half neighbour list adds both sides of a pair into "
                                       "accumulators: declare `using AccumScalar = float;` (or double) in the functor "
                                       "when its Accum is an array of that scalar, or use a full list"
                                     : "cellint::interact: a half neighbour list needs the functor's symmetric() "
                                       "(Newton's third law) form; add it or use a full list");
    }
    return rep;
  }
  // one part's rows from the list of them that build() made (else every row, filtered)
  const auto only = list.part_rows(which);
  const Index count = only.rows ? only.count : n;
  if (count <= 0) return rep;
  if constexpr (B::is_gpu_like) {
    Index group = 1;
    // (border rows are few: more threads per row, so that the GPU is full and they finish soon)
    if constexpr (T::addable) group = list.row_threads_for(count, which == ListPart::Border ? 1 : 4);
    const unsigned block = 128;
    // One thread per row without the group's shared memory (ListInteract<..., false>: 40 registers and 48 warps per
    // multiprocessor in float) where the rows fill the GPU's blocks four times over or more, or where one thread per
    // row was asked for. Measured on an H200 (in.lj, float): +3 % at 2,048,000 atoms, but -3 % at 256,000, where a
    // grid of 1.3 waves leaves the multiprocessors part empty in its last; there the group kernel, one thread a row.
    using Plain = detail::ListInteract<F, R, D>;
    const DeviceProperties p = B::properties();
    const long long per_sm = Plain::launch_min_blocks ? static_cast<long long>(Plain::launch_min_blocks) * block
                                                      : static_cast<long long>(p.max_threads_per_multiprocessor);
    const long long wave = static_cast<long long>(p.multiprocessors) * per_sm;  // threads resident at once
    const bool plain = !T::addable || (group == 1 && (list.options().row_threads == 1 || count >= 4 * wave));
    const std::size_t bytes = plain ? 0 : sizeof(typename T::Accum) * block;
    rep.shape =
        LaunchShape{static_cast<unsigned>((static_cast<long long>(count) * group + block - 1) / block), block, bytes};
    if constexpr (T::addable) {
      if (!plain) {
        using Grouped = detail::ListInteract<F, R, D, true, std::decay_t<decltype(sink)>>;
        B::launch(rep.shape, Grouped{s, v, f, sink, group, part, only.rows, count}, grid.stream());
        return rep;
      }
    }
    B::launch(
        rep.shape,
        detail::ListInteract<F, R, D, false, std::decay_t<decltype(sink)>>{s, v, f, sink, 1, part, only.rows, count},
        grid.stream());
  } else {
    const int threads = detail::host_threads_for(static_cast<long long>(count) * 16, detail::host_min_work);
    detail::host_loop(count, 256, threads, [&](Index k) {
      const Index t = only.rows ? only.rows[k] : k;
      if (!only.rows && !s.in_part(t, part)) return;
      Index slot;
      const auto acc = detail::row_accumulate<T>(s, v, f, t, &slot);
      sink(slot, acc);
    });
  }
  return rep;
}

/// What interact() over a list checks first.
template <class B, class R, int D, class F>
void expect_list_call(const NeighborList<B, R, D>& list, const CellGrid<B, R, D>& grid, const F& f, const Tuning& t) {
  list.expect_current(grid, "interact");
  grid.check_functor_attributes(f);
  if (t.reproducible) {
    CELLINT_EXPECTS(grid.options().stable && list.options().stable,
                    "cellint::interact: Tuning::reproducible over a "
                    "neighbour list needs the grid built with GridOptions::stable and the list made with "
                    "ListOptions::stable (rows in slot order)");
    if (B::is_gpu_like && list.half())
      throw Unsupported(
          "cellint::interact: a half neighbour list on a GPU-like backend adds both sides of each pair "
          "with atomics, in the order the threads run: with Tuning::reproducible use a full list (on the "
          "Host backend each thread sums its own rows, then the threads in order: reproducible)");
  }
}

/// interact() over a list with its checks, and with Tuning::statistics its timing and counts (Out as interact_list()).
template <class B, class R, int D, class F, class Out>
Report interact_list_call(const NeighborList<B, R, D>& list, const CellGrid<B, R, D>& grid, const F& f, Out out,
                          const Tuning& t) {
  using T = FunctorTraits<F, R, D>;
  expect_list_call(list, grid, f, t);
  if (!t.statistics) return interact_list(list, grid, f, out);
  Report rep;
  const double ms = call_ms<B>(grid.stream(), [&] { rep = interact_list(list, grid, f, out); });
  CallStats& s = rep.stats;
  s.collected = true;
  s.ms = ms;
  s.targets = s.sources = static_cast<std::uint64_t>(grid.size());
  if (!grid.size()) return rep;
  for (Index len : list.row_lengths(grid)) s.pairs_examined += static_cast<std::uint64_t>(len);
  const std::uint64_t payload = T::position_only ? 0 : sizeof(typename T::Payload);
  const std::uint64_t stored = is_epilogue<Out>::value ? 0 : sizeof(typename T::Accum);  // (an epilogue stores none)
  s.min_bytes = s.targets * (D * sizeof(R) + payload + stored) + s.pairs_examined * sizeof(Index);
  Buffer<B, unsigned> counts(static_cast<std::size_t>(grid.size()));
  interact_list(list, grid, NeighborCount<R, D>{}, counts.data());
  set_pairs_within(s, counts.to_host(grid.stream()), list.half());
  return rep;
}

}  // namespace detail

/// For every particle t of `grid`, the functor's accumulation over the pairs of the list within the cutoff, into
/// out[t] (sorted slot order, as interact(grid, f, out)). Same functor contract; a half list needs `symmetric()` and an
/// Accum that is an array of one scalar type (`using AccumScalar = ...;`, or an arithmetic Accum). A functor without
/// a cutoff test (`cutoff_test = false`) is called for every pair of the rows (within cutoff + skin).
/// @throws InvalidArgument when the list does not belong to the grid's current binning (call list.update(grid)), or
///         for an Attribute handle in `f` that does not belong to the grid
/// With Tuning::reproducible, the grid and the list must be stable (GridOptions::stable, ListOptions::stable), and on
/// GPU-like backends the list full (a half list adds with atomics); the sums are then the same bits run after run.
/// With Tuning::statistics (these two are the only fields read here), Report::stats: pairs_examined = the row entries
/// (each pair once in a half list: CallStats::each_pair_once), pairs_within by a counting pass over the list, min_bytes
/// adds 4 bytes per entry.
/// @throws Unsupported for a half list and a functor without symmetric(), without an addable Accum, or with
///         load_source()
template <class B, class R, int D, class F>
Report interact(const NeighborList<B, R, D>& list, const CellGrid<B, R, D>& grid, const F& f,
                typename FunctorTraits<F, R, D>::Accum* out, const Tuning& t = {}) {
  return detail::interact_list_call(list, grid, f, out, t);
}

/// interact() over a full list that hands each target's accumulation to then.fn(slot, acc) on the backend instead of
/// storing it (see Epilogue). Same checks and Tuning as above.
/// @throws Unsupported for a half list
template <class B, class R, int D, class F, class Fn>
Report interact(const NeighborList<B, R, D>& list, const CellGrid<B, R, D>& grid, const F& f, const Epilogue<Fn>& then,
                const Tuning& t = {}) {
  return detail::interact_list_call(list, grid, f, then, t);
}

/// interact() over one part of the rows (see ListPart and NeighborList::update(grid, part)): out[slot] is written for
/// the rows of that part only. Interior and Border together write what ListPart::All does. A half list without
/// targets (NeighborList::set_targets()) has interior rows only; one with targets takes ListPart::All only.
/// @throws InvalidArgument as interact(), for Tuning::statistics with a part other than ListPart::All, and for a part
///         of a half list with targets
template <class B, class R, int D, class F>
Report interact(const NeighborList<B, R, D>& list, const CellGrid<B, R, D>& grid, const F& f,
                typename FunctorTraits<F, R, D>::Accum* out, ListPart part, const Tuning& t = {}) {
  if (part == ListPart::All) return interact(list, grid, f, out, t);
  CELLINT_EXPECTS(!t.statistics,
                  "cellint::interact: Tuning::statistics counts every row: ask for it with ListPart::All");
  detail::expect_list_call(list, grid, f, t);
  return detail::interact_list(list, grid, f, out, part);
}

/// interact() over a list into a backend Buffer of at least grid.size() elements (checked).
template <class B, class R, int D, class F>
Report interact(const NeighborList<B, R, D>& list, const CellGrid<B, R, D>& grid, const F& f,
                Buffer<B, typename FunctorTraits<F, R, D>::Accum>& out, const Tuning& t = {}) {
  detail::expect_room(out.size(), grid.size(), "interact", "the output buffer");
  return interact(list, grid, f, out.data(), t);
}

/// interact() over one part of the rows into a backend Buffer of at least grid.size() elements (checked).
template <class B, class R, int D, class F>
Report interact(const NeighborList<B, R, D>& list, const CellGrid<B, R, D>& grid, const F& f,
                Buffer<B, typename FunctorTraits<F, R, D>::Accum>& out, ListPart part, const Tuning& t = {}) {
  detail::expect_room(out.size(), grid.size(), "interact", "the output buffer");
  return interact(list, grid, f, out.data(), part, t);
}

/// interact() over a list into a host vector of at least grid.size() elements (checked; Host and Emulated).
template <class B, class R, int D, class F>
Report interact(const NeighborList<B, R, D>& list, const CellGrid<B, R, D>& grid, const F& f,
                std::vector<typename FunctorTraits<F, R, D>::Accum>& out, const Tuning& t = {}) {
  static_assert(!B::device_memory,
                "cellint::interact(std::vector): this backend computes in device memory; "
                "pass a cellint::Buffer (or a device pointer)");
  detail::expect_room(out.size(), grid.size(), "interact", "the output vector");
  return interact(list, grid, f, out.data(), t);
}

}  // namespace cellint
