#pragma once
/// @file
/// Domain decomposition over MPI ranks (the optional `cellint::mpi` component: `find_package(cellint COMPONENTS MPI)`,
/// target `cellint::mpi`; the core never includes this header). Each rank owns the particles of one sub-box of a
/// Cartesian decomposition (decomposition.hpp) and holds, besides them, a ghost layer: copies of its neighbours'
/// particles within `ghost` (the cutoff, + the skin with neighbour lists) of its faces, shifted by the box length where
/// they come through a periodic boundary. The rank's CellGrid spans its sub-box plus the layer, open on the split axes
/// (the ghosts stand for everything beyond), so every strategy sees ghosts as it sees any particle, and the sums of an
/// owned particle are those of the single-rank run (the same pairs; sums to rounding, in another order).
///
/// One step of a simulation: move the owned particles (the integrator, on `particles()`), `migrate()` (particles that
/// left the sub-box go to their new owner with all their fields), `exchange()` (the ghost layer, then the grid), then
/// `interact()` (results for the owned particles, in `particles()` order) and `sum()` for global energies.
///
/// Two ways to run:
///  - On the host: particles() holds the state; exchange() rebuilds the rank's grid from it (MPI_Sendrecv along each
///    split axis in turn, so that corner ghosts travel through the faces; migration by counts exchanged between
///    neighbours, beside an MPI_Iallreduce of the errors (MPI_Alltoall only for the first distribution, from anywhere),
///    and messages between the ranks that exchange particles). Any backend; on GPUs the whole own set crosses PCIe at
///    every exchange.
///  - On the backend (GPU simulations): after the first exchange() the state stays in the grid. update_ghosts() sends
///    the same ghosts' new positions every step (packed by kernels; GPU to GPU within a node, device pointers to a
///    CUDA-aware MPI, or page-locked host buffers), and redistribute() migrates and chooses a new ghost layer by
///    kernels, only the leaving particles and the ghosts crossing between ranks.
///
/// Errors (a communicator whose size is not the decomposition's, a sub-box thinner than the ghost layer, a NaN or
/// infinite position, a particle outside an open box, one that moved more than one sub-box between migrations) are
/// agreed on by all ranks before anyone throws: every rank throws the same InvalidArgument, naming the particle's id
/// and the reporting rank, and no rank is left waiting in a collective.

#include <algorithm>
#include <array>
#include <climits>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <map>
#include <memory>
#include <mpi.h>
#if __has_include(<mpi-ext.h>)
#include <mpi-ext.h>  // Open MPI: MPIX_CUDA_AWARE_SUPPORT
#endif
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "cellint/grid/cell_grid.hpp"
#include "cellint/interact.hpp"
#include "cellint/mpi/decomposition.hpp"

namespace cellint::mpi {

/// A rank's particles on the host: ids, positions, and `fields` doubles per particle (velocities, masses, types...)
/// that travel with the particle when it migrates and are copied into the ghost layer.
template <class Real, int Dim>
struct Particles {
  std::vector<std::uint64_t> id;         ///< global ids (any unique values)
  std::array<std::vector<Real>, Dim> x;  ///< positions
  int fields = 0;                        ///< doubles per particle in `field`
  std::vector<double> field;             ///< field values, particle-major (field[i * fields + k])

  /// Number of particles.
  std::size_t size() const { return id.size(); }
  /// Appends a particle (`f`: `fields` values, or null for zeros).
  void push(std::uint64_t i, const Real* xi, const double* f = nullptr) {
    id.push_back(i);
    for (int d = 0; d < Dim; ++d) x[d].push_back(xi[d]);
    for (int k = 0; k < fields; ++k) field.push_back(f ? f[k] : 0.0);
  }
  /// Removes every particle (fields per particle unchanged).
  void clear() {
    id.clear();
    for (auto& a : x) a.clear();
    field.clear();
  }
};

namespace detail {

template <class T>
MPI_Datatype datatype();
template <>
inline MPI_Datatype datatype<float>() {
  return MPI_FLOAT;
}
template <>
inline MPI_Datatype datatype<double>() {
  return MPI_DOUBLE;
}
template <>
inline MPI_Datatype datatype<std::uint64_t>() {
  return MPI_UINT64_T;
}
template <>
inline MPI_Datatype datatype<long long>() {
  return MPI_LONG_LONG;
}
template <>
inline MPI_Datatype datatype<int>() {
  return MPI_INT;
}

/// Collective: every rank passes its own error message ("" for none); when any rank has one, every rank throws the
/// message of the lowest such rank (with that rank named), so that no rank goes on into a collective alone.
inline void agree(MPI_Comm comm, const std::string& mine) {
  int rank = 0;
  MPI_Comm_rank(comm, &rank);
  int bad = mine.empty() ? INT_MAX : rank, first = INT_MAX;
  MPI_Allreduce(&bad, &first, 1, MPI_INT, MPI_MIN, comm);
  if (first == INT_MAX) return;
  int len = rank == first ? static_cast<int>(mine.size()) : 0;
  MPI_Bcast(&len, 1, MPI_INT, first, comm);
  std::string msg = rank == first ? mine : std::string(static_cast<std::size_t>(len), ' ');
  MPI_Bcast(&msg[0], len, MPI_CHAR, first, comm);
  throw InvalidArgument(cellint::detail::cat(msg, " (rank ", first, ")"));
}

/// Runs `work`; returns the message of what it throws ("" when it returns).
template <class Work>
std::string error_of(Work&& work) {
  try {
    work();
  } catch (const std::exception& e) {
    return *e.what() ? e.what() : "cellint::mpi: an error without a message";
  }
  return {};
}

/// Runs `work` and turns what it throws into an agreed error (see agree()).
template <class Work>
void agreed(MPI_Comm comm, Work&& work) {
  agree(comm, error_of(work));
}

/// DistributedGrid::update_ghosts()'s packing: the positions as they are in the grid.
struct AsThey {
  template <class Real, int Dim>
  CELLINT_HD void operator()(Index, Real (&)[Dim]) const {}
};

/// Halo packing on the backend: out[d * n + j] = position d of slot `slot[j]` (after `advance`, see
/// DistributedGrid::send_ghosts_ahead()), plus `shift` along `axis`.
template <class Real, int Dim, class Advance = AsThey>
struct HaloGather {
  const Real* pos[Dim];
  const Index* slot;
  Index n;
  int axis;
  Real shift;
  Real* out;
  Advance advance{};
  template <class A>
  CELLINT_HD void operator()(A&, Index j) const {
    const Index i = slot[j];
    Real x[Dim];
    for (int d = 0; d < Dim; ++d) x[d] = pos[d][i];
    advance(i, x);
    for (int d = 0; d < Dim; ++d) out[static_cast<std::size_t>(d) * n + j] = x[d] + (d == axis ? shift : Real(0));
  }
};

/// Halo unpacking on the backend: position d of slot `slot[j]` = in[d * n + j].
template <class Real, int Dim>
struct HaloScatter {
  Real* pos[Dim];
  const Index* slot;
  Index n;
  const Real* in;
  template <class A>
  CELLINT_HD void operator()(A&, Index j) const {
    const Index i = slot[j];
    for (int d = 0; d < Dim; ++d) pos[d][i] = in[static_cast<std::size_t>(d) * n + j];
  }
};

/// Both messages of an axis packed by one kernel straight into their receivers' buffers (part[0]'s threads, then
/// part[1]'s), and then, once every block's stores are out, each receiver's flag (null: none) set to `value` by the
/// last block to finish: the packing and its signal in one launch (DistributedGrid's peer flags).
template <class Real, int Dim, class Advance = AsThey>
struct HaloGatherSignal {
  HaloGather<Real, Dim, Advance> part[2];
  unsigned* flag[2];
  unsigned value;
  unsigned* done;  ///< blocks finished: zero between launches (the last block sets it back)
  template <class Block>
  CELLINT_HD void operator()(Block& b) const {
    const Index j = static_cast<Index>(b.block_rank() * b.block_size() + b.thread_rank());
    if (j < part[0].n)
      part[0](b, j);
    else if (j - part[0].n < part[1].n)
      part[1](b, j - part[0].n);
#if defined(CELLINT_DEVICE_PASS)
    __threadfence_system();  // (each thread's stores out before its block counts itself done)
#endif
    b.sync();
    if (b.thread_rank() != 0 || b.atomic_add(done, 1u) + 1u != b.grid_size()) return;
#if defined(CELLINT_DEVICE_PASS)
    __threadfence_system();
#endif
    for (int q = 0; q < 2; ++q)
      if (flag[q]) *static_cast<volatile unsigned*>(flag[q]) = value;
    *done = 0;
  }
};

/// Both messages of an axis unpacked by one kernel (part[0]'s threads, then part[1]'s).
template <class Real, int Dim>
struct HaloScatterPair {
  HaloScatter<Real, Dim> part[2];
  template <class A>
  CELLINT_HD void operator()(A& a, Index j) const {
    if (j < part[0].n)
      part[0](a, j);
    else
      part[1](a, j - part[0].n);
  }
};

/// The owner of a position, on the backend (the same edges as Decomposition's, computed once on the host).
template <class Real, int Dim>
struct Owners {
  Real origin[Dim], length[Dim], width[Dim];
  bool periodic[Dim];
  int ranks[Dim], coords[Dim];
  const Real* edges[Dim];  ///< lo(d, c) for c = 0 .. ranks[d] - 1, then the box's end
  /// x wrapped into the box on a periodic axis.
  CELLINT_HD Real wrap(int d, Real x) const {
    if (!periodic[d]) return x;
    Real u = x - origin[d];
    u -= length[d] * round_down(u / length[d]);
    if (u >= length[d] || u < Real(0)) u = Real(0);  // (rounding at the ends)
    return origin[d] + u;
  }
  /// The owner's coordinate along d of a wrapped position (-1 outside an open box or for NaN).
  CELLINT_HD int coord_of(int d, Real w) const {
    const Real u = w - origin[d];
    if (!(u >= Real(0)) || !(u < length[d] || (!periodic[d] && u == length[d]))) return -1;
    int c = static_cast<int>(u / width[d]);
    if (c >= ranks[d]) c = ranks[d] - 1;
    while (c > 0 && w < edges[d][c]) --c;
    while (c + 1 < ranks[d] && w >= edges[d][c + 1]) ++c;
    return c;
  }
  /// Whether c is this rank's coordinate along d or one of its neighbours' (through a periodic boundary too).
  CELLINT_HD bool adjacent(int d, int c) const {
    int diff = c > coords[d] ? c - coords[d] : coords[d] - c;
    if (periodic[d] && ranks[d] - diff < diff) diff = ranks[d] - diff;
    return diff <= 1;
  }
};

/// Words of the resident rebuild's classification.
struct RebuildWord {
  static constexpr int leave = 0;  ///< owned particles leaving
  static constexpr int keep = 1;   ///< owned particles staying
  static constexpr int bad = 2;    ///< the lowest slot with a bad position (UINT_MAX: none)
  static constexpr int count = 4;
};

/// Each owned slot (user index < owned) is wrapped into the box, and listed as staying or leaving (with its new owner,
/// counted in words[RebuildWord::count + group_of[owner]]); a non-finite position, one outside an open box or one more
/// than a sub-box away is flagged.
template <class Real, int Dim>
struct Classify {
  Owners<Real, Dim> o;
  Real* pos[Dim];
  const Index* original;
  Index owned;
  unsigned* words;
  Index* keep;
  Index* leave;
  int* dest;
  const int* group_of;  ///< by rank: its place among this rank's neighbours (DistributedGrid's mig_ranks_)
  template <class A>
  CELLINT_HD void operator()(A& a, Index s) const {
    if (original[s] >= owned) return;
    int r = 0, stride = 1;
    bool mine = true, bad = false;
    for (int d = 0; d < Dim; ++d) {
      const Real x = pos[d][s];
      if (!(x - x == Real(0))) {
        bad = true;
        break;
      }
      const Real w = o.wrap(d, x);
      pos[d][s] = w;
      const int c = o.coord_of(d, w);
      if (c < 0 || !o.adjacent(d, c)) {
        bad = true;
        break;
      }
      mine = mine && c == o.coords[d];
      r += c * stride;
      stride *= o.ranks[d];
    }
    if (bad) {
      a.atomic_min(&words[RebuildWord::bad], static_cast<unsigned>(s));
    } else if (mine) {
      keep[a.atomic_add(&words[RebuildWord::keep], 1u)] = s;
    } else {
      const unsigned j = a.atomic_add(&words[RebuildWord::leave], 1u);
      leave[j] = s;
      dest[j] = r;
      a.atomic_add(&words[RebuildWord::count + group_of[r]], 1u);
    }
  }
};

/// The leaving particles grouped by new owner: group g's slots (counted in count[g] by Classify) at the sum of the
/// earlier groups' counts in `grouped`, in no particular order within a group.
struct GroupLeave {
  const Index* leave;
  const int* dest;
  const int* group_of;
  const unsigned* count;
  unsigned* cursor;  ///< one per group, zero before
  Index* grouped;
  template <class A>
  CELLINT_HD void operator()(A& a, Index j) const {
    const int g = group_of[dest[j]];
    unsigned at = 0;
    for (int h = 0; h < g; ++h) at += count[h];
    grouped[at + a.atomic_add(&cursor[g], 1u)] = leave[j];
  }
};

/// Lists the particles i < n whose coordinate x is below `below` (into lower) or at or above `above` (into upper).
template <class Real>
struct SelectFaces {
  const Real* x;
  Real below, above;
  bool lower_on, upper_on;
  unsigned* count;  ///< [0]: lower, [1]: upper
  Index* lower;
  Index* upper;
  template <class A>
  CELLINT_HD void operator()(A& a, Index i) const {
    const Real xi = x[i];
    if (lower_on && xi < below) lower[a.atomic_add(&count[0], 1u)] = i;
    if (upper_on && xi >= above) upper[a.atomic_add(&count[1], 1u)] = i;
  }
};

/// A growing host buffer for messages to and from device memory: page-locked on backends with device memory (copies at
/// the bus's speed, no staging copy), plain memory otherwise.
template <class Backend, class T>
class HostStaging {
 public:
  HostStaging() = default;
  HostStaging(const HostStaging&) = delete;
  HostStaging& operator=(const HostStaging&) = delete;
  ~HostStaging() { release(); }
  /// Room for n values (contents not kept when it grows).
  T* reserve(std::size_t n) {
    if (n > cap_) {
      const std::size_t cap = std::max(n, cap_ + cap_ / 2);
      release();
      if constexpr (Backend::device_memory)
        p_ = static_cast<T*>(Backend::allocate_pinned(cap * sizeof(T)));
      else
        p_ = static_cast<T*>(::operator new(cap * sizeof(T)));
      cap_ = cap;
    }
    return p_;
  }

 private:
  void release() noexcept {
    if (!p_) return;
    if constexpr (Backend::device_memory)
      Backend::deallocate_pinned(p_);
    else
      ::operator delete(p_);
    p_ = nullptr;
    cap_ = 0;
  }
  T* p_ = nullptr;
  std::size_t cap_ = 0;
};

/// Whether a backend has interprocess memory handles (the GPU backends).
template <class B, class = void>
struct HasIpc : std::false_type {};
template <class B>
struct HasIpc<B, std::void_t<decltype(B::ipc_open(std::declval<const typename B::IpcHandle&>()))>> : std::true_type {};

/// The backend's interprocess events (GPU backends: IpcEvent, OpenedIpcEvent and their handle), or empty stand-ins.
template <class B, class = void>
struct IpcEventsOf {
  struct Own {};
  struct Opened {};
  struct Handle {};
  static constexpr bool value = false;
};
template <class B>
struct IpcEventsOf<B, std::void_t<typename B::IpcEvent, typename B::OpenedIpcEvent, typename B::IpcEventHandle>> {
  using Own = typename B::IpcEvent;
  using Opened = typename B::OpenedIpcEvent;
  using Handle = typename B::IpcEventHandle;
  static constexpr bool value = true;
};

/// Whether a backend's streams can wait for a word in device memory (Backend::wait_value(): the GPU backends).
template <class B, class = void>
struct HasWaitValue : std::false_type {};
template <class B>
struct HasWaitValue<
    B, std::void_t<decltype(B::wait_value(std::declval<typename B::Stream>(), std::declval<const unsigned*>(), 0u))>>
    : std::true_type {};

/// Stores `value` into flag[j] (null: none) after a system-wide fence: a kernel enqueued after the ones that wrote
/// messages into their receivers' buffers, so that a receiver whose stream waits for the value (Backend::wait_value())
/// sees the data (DistributedGrid's peer flags).
struct SignalKernel {
  unsigned* flag[2];
  unsigned value;
  template <class A>
  CELLINT_HD void operator()(A&, Index j) const {
#if defined(CELLINT_DEVICE_PASS)
    __threadfence_system();
#endif
    if (flag[j]) *static_cast<volatile unsigned*>(flag[j]) = value;
  }
};

/// The backend's SideStream (GPU backends), or an empty stand-in: update_ghosts(meanwhile) then runs in order.
template <class B, class = void>
struct SideStreamOf {
  struct type {};
  static constexpr bool value = false;
};
template <class B>
struct SideStreamOf<B, std::void_t<typename B::SideStream>> {
  using type = typename B::SideStream;
  static constexpr bool value = true;
};

/// Whether environment variable `name` is set to `value`.
inline bool env_is(const char* name, const char* value) {
  const char* v = std::getenv(name);
  return v && std::strcmp(v, value) == 0;
}

/// Whether the MPI library accepts device pointers (Open MPI's MPIX_Query_cuda_support(), where the library was built
/// with CUDA; false for any other MPI, which is then staged through host memory).
inline bool mpi_accepts_device_pointers() {
#if defined(MPIX_CUDA_AWARE_SUPPORT) && MPIX_CUDA_AWARE_SUPPORT
  return MPIX_Query_cuda_support() == 1;
#else
  return false;
#endif
}

}  // namespace detail

/// A rank's share of a decomposed particle system: its particles, the ghost layer and the grid over both.
/// @tparam Backend Host, Emulated, Cuda or Hip; @tparam Real position type; @tparam Dim 2 or 3.
template <class Backend, class Real, int Dim>
class DistributedGrid {
 public:
  using Grid = CellGrid<Backend, Real, Dim>;  ///< the rank's grid (owned particles, then ghosts)

  /// Decomposes `global` over the ranks of `comm` (collective).
  /// @param comm the ranks (duplicated: the grid's messages never mix with the caller's)
  /// @param global the whole box
  /// @param cutoff the interaction cutoff; the ghost layer is cutoff + skin wide
  /// @param ranks ranks per axis; 0 on an axis lets balanced_ranks() choose
  /// @param skin extra width of the ghost layer (neighbour lists)
  /// @throws InvalidArgument on every rank when the decomposition does not fit (see Decomposition::check())
  DistributedGrid(MPI_Comm comm, const Box<Real, Dim>& global, Real cutoff, std::array<int, Dim> ranks = {},
                  Real skin = 0)
      : cutoff_(cutoff) {
    MPI_Comm_dup(comm, &comm_);
    MPI_Comm_rank(comm_, &rank_);
    MPI_Comm_size(comm_, &size_);
    {  // each rank's node (its lowest rank), for copies between GPUs of one node
      MPI_Comm node;
      MPI_Comm_split_type(comm_, MPI_COMM_TYPE_SHARED, rank_, MPI_INFO_NULL, &node);
      int first = rank_;
      MPI_Allreduce(&rank_, &first, 1, MPI_INT, MPI_MIN, node);
      MPI_Comm_free(&node);
      node_of_.resize(static_cast<std::size_t>(size_));
      MPI_Allgather(&first, 1, MPI_INT, node_of_.data(), 1, MPI_INT, comm_);
    }
    try {
      detail::agreed(comm_, [&] {
        dec_.global = global;
        dec_.ghost = cutoff + skin;
        dec_.ranks = balanced_ranks<Real, Dim>(size_, global, ranks);
        dec_.check(size_);
        coords_ = dec_.coords_of(rank_);
        grid_ = std::make_unique<Grid>(local_box(), cutoff);
      });
    } catch (...) {
      MPI_Comm_free(&comm_);  // (no destructor runs for a constructor that throws)
      throw;
    }
  }
  ~DistributedGrid() {
    int finalized = 0;
    MPI_Finalized(&finalized);
    if (!finalized) quiesce_peers();
    close_peers();
    if (!finalized) MPI_Comm_free(&comm_);
  }
  DistributedGrid(const DistributedGrid&) = delete;
  DistributedGrid& operator=(const DistributedGrid&) = delete;

  /// The decomposition (the same on every rank).
  const Decomposition<Real, Dim>& decomposition() const { return dec_; }
  /// The interaction cutoff (the ghost layer is decomposition().ghost wide).
  Real cutoff() const { return cutoff_; }
  /// This rank's coordinates in it.
  const std::array<int, Dim>& coords() const { return coords_; }
  /// This rank.
  int rank() const { return rank_; }
  /// Number of ranks.
  int size() const { return size_; }
  /// The grid's communicator (a duplicate of the one given).
  MPI_Comm comm() const { return comm_; }
  /// The box of the rank's grid: its sub-box widened by the ghost layer on split axes (open there), the whole box
  /// along an axis with one rank (periodic there when the box is).
  Box<Real, Dim> local_box() const {
    Box<Real, Dim> b = dec_.global;
    for (int d = 0; d < Dim; ++d)
      if (dec_.ranks[d] > 1) {
        // a little more than the layer, so that a ghost shifted by L and rounded still lies inside
        const Real pad = dec_.ghost * Real(1.001);
        b.origin[d] = dec_.lo(d, coords_[d]) - pad;
        b.lengths[d] = dec_.hi(d, coords_[d]) - dec_.lo(d, coords_[d]) + 2 * pad;
        b.periodic[d] = false;
      }
    return b;
  }

  /// The rank's own particles (host), for the caller to read and move between migrations. Set `fields` before the
  /// first push.
  Particles<Real, Dim>& particles() { return own_; }
  /// The rank's own particles.
  const Particles<Real, Dim>& particles() const { return own_; }
  /// The ghost layer of the last exchange().
  const Particles<Real, Dim>& ghosts() const { return ghost_; }
  /// The grid of the last exchange(): owned particles at user indices [0, n), ghosts at [n, n + ghosts).
  const Grid& grid() const { return *grid_; }
  /// The grid, for attach().
  Grid& grid() { return *grid_; }

  /// Sends every owned particle to the rank whose sub-box holds it, with its fields (collective). Positions are
  /// wrapped into the box on periodic axes first. With `anywhere` false (the default), a particle may have moved at
  /// most one sub-box along each axis since the last migration (else the time step is too long for the
  /// decomposition): an error names it. Pass true for the first distribution, where any rank may hold any particle.
  /// Every rank passes the same `anywhere`: it chooses how the counts travel (between neighbours, or every rank to
  /// every rank).
  /// @throws InvalidArgument on every rank for a NaN or infinite position, a particle outside an open box, or one that
  /// moved too far
  void migrate(bool anywhere = false) {
    const std::size_t n = own_.size();
    std::vector<int> dest(n);
    std::string err;
    for (std::size_t i = 0; i < n && err.empty(); ++i) {
      Real xi[Dim];
      for (int d = 0; d < Dim; ++d) xi[d] = own_.x[d][i];
      std::array<int, Dim> c{};
      err = place(own_.id[i], xi, anywhere, c);
      for (int d = 0; d < Dim; ++d) own_.x[d][i] = xi[d];
      if (err.empty()) dest[i] = dec_.rank_of(c);
    }
    Particles<Real, Dim> in;
    to_owners(
        own_, dest, err, in, nullptr, nullptr, [](int, int) { return false; }, anywhere ? nullptr : &count_peers());
    own_ = std::move(in);
  }

  /// Fills the ghost layer from the neighbours (positions, ids and fields) and rebuilds the grid over the owned
  /// particles and the ghosts (collective). The grid's attributes are dropped: attach them again (attach_field()).
  void exchange() {
    if (ahead_ != 0) update_ghosts();  // (send_ghosts_ahead()'s exchange finished first)
    ghost_.clear();
    ghost_.fields = own_.fields;
    std::vector<HaloMessage> plan;
    std::vector<Index> users;  // each message's particles (user order: owned, then ghosts): sent, then received
    for (int d = 0; d < Dim; ++d) {
      if (dec_.ranks[d] == 1) continue;  // the whole axis is here: periodic in the grid itself, or open
      const Real lo = dec_.lo(d, coords_[d]), hi = dec_.hi(d, coords_[d]), g = dec_.ghost;
      // candidates: owned particles and the ghosts of the axes before (corners travel through two faces), not those
      // this axis brings in
      const std::size_t before = ghost_.size();
      for (int dir : {-1, +1}) {
        Real shift = 0;
        const int to = dec_.neighbor(coords_, d, dir, &shift);
        const int from = dec_.neighbor(coords_, d, -dir);
        Particles<Real, Dim> out;
        out.fields = own_.fields;
        HaloMessage msg;
        msg.axis = d;
        msg.shift = shift;
        msg.to = to < 0 ? MPI_PROC_NULL : to;
        msg.from = from < 0 ? MPI_PROC_NULL : from;
        msg.tag = dir < 0 ? 11 : 12;
        auto pick = [&](const Particles<Real, Dim>& p, std::size_t count, std::size_t base) {
          for (std::size_t i = 0; i < count; ++i) {
            const Real xd = p.x[d][i];
            if (dir < 0 ? xd < lo + g : xd >= hi - g) {
              Real xi[Dim];
              for (int a = 0; a < Dim; ++a) xi[a] = p.x[a][i];
              xi[d] += shift;
              out.push(p.id[i], xi, p.fields ? &p.field[i * static_cast<std::size_t>(p.fields)] : nullptr);
              users.push_back(static_cast<Index>(base + i));
              ++msg.sends;
            }
          }
        };
        if (to >= 0) {
          pick(own_, own_.size(), 0);
          pick(ghost_, before, own_.size());
        }
        msg.recv_at = static_cast<Index>(own_.size() + ghost_.size());
        sendrecv(out, msg.to, msg.from, msg.tag);
        msg.recv = static_cast<Index>(own_.size() + ghost_.size()) - msg.recv_at;
        for (Index j = 0; j < msg.recv; ++j) users.push_back(msg.recv_at + j);
        plan.push_back(msg);
      }
    }
    detail::agreed(comm_, [&] {
      const std::size_t n = own_.size(), m = ghost_.size();
      std::array<std::vector<Real>, Dim> all;
      for (int d = 0; d < Dim; ++d) {
        all[d].reserve(n + m);
        all[d].insert(all[d].end(), own_.x[d].begin(), own_.x[d].end());
        all[d].insert(all[d].end(), ghost_.x[d].begin(), ghost_.x[d].end());
      }
      grid_->detach_attributes();  // (another set of particles, even where the count is the same)
      grid_->build(all);
      resident_ = -1;
      std::vector<std::uint64_t> ids(own_.id);
      ids.insert(ids.end(), ghost_.id.begin(), ghost_.id.end());
      user_id_.resize(std::max<std::size_t>(ids.size(), 1));
      if (!ids.empty()) user_id_.upload(ids.data(), grid_->stream());
      user_list_.resize(std::max<std::size_t>(users.size(), 1));
      if (!users.empty()) user_list_.upload(users.data(), grid_->stream());
    });
    set_plan(std::move(plan), static_cast<Index>(users.size()));  // (collective: after the agreement, not in it)
  }

  /// Sends the ghosts of the last exchange() again, at their owners' current positions in the grid (backend, slot
  /// order): between neighbour-list rebuilds a simulation moves the grid's positions in place, and while no particle
  /// has moved more than half the skin the same particles make up the ghost layer, so that only positions need to
  /// travel (LAMMPS's forward communication). Packing and unpacking run on the backend; the messages go from device
  /// memory where the MPI accepts device pointers (and from host memory on the Host and Emulated backends), else
  /// through host buffers. Collective; ghosts' slots keep their order, so lists and attributes stay valid.
  void update_ghosts() {
    auto nothing = [] {};
    exchange_ghosts(grid_->stream(), nothing);
  }

  /// update_ghosts() overlapped with `meanwhile()`, work that reads no ghost's position: the interior of a step's pair
  /// computation (cellint::ListPart::Interior rows of a NeighborList with owned() targets). meanwhile() is called once,
  /// as soon as the first messages are under way, and enqueues its work on the grid's stream as usual; the exchange
  /// goes on beside it:
  ///  - GPU backends: on a second stream of the highest priority (Backend::SideStream), ordered after the work enqueued
  ///    on the grid's stream before the call; on return the grid's stream waits for the ghosts' arrival, so that work
  ///    enqueued after it sees them. Nothing else waits for the device.
  ///  - Host and Emulated: meanwhile() runs while the first axis's messages are in flight (non-blocking MPI).
  /// meanwhile() must not move owned particles (their positions are being sent) nor read ghosts' positions. It may
  /// wait for the grid's stream and call collectives on comm() (every rank calls update_ghosts() and so meanwhile() at
  /// the same point): a simulation's vote on rebuilding its lists, for example, whose latency the exchange then hides
  /// (with GPU peer copies ordered by flags or events the positions are already on their way when meanwhile() is
  /// called: ghosts_enqueued()). Successive exchanges must be ordered on the device, as the grid's stream orders them:
  /// keep the grid on one stream between them (a grid().set_stream() to a stream not ordered after the last exchange
  /// would let the next one overwrite ghosts that a neighbour is still reading).
  ///
  ///     list.update(g.grid(), ListPart::Interior);
  ///     g.update_ghosts([&] { interact(list, g.grid(), f, out, ListPart::Interior); });
  ///     list.update(g.grid(), ListPart::Border);
  ///     interact(list, g.grid(), f, out, ListPart::Border);
  template <class Meanwhile>
  void update_ghosts(Meanwhile&& meanwhile) {
    update_ghosts(meanwhile, [] {});
  }

  /// update_ghosts(meanwhile), and then() for the work that needs the ghosts (the border rows): on GPU backends then()
  /// is called once the ghosts' arrival is enqueued on the exchange's stream, with the grid's stream() set to that
  /// stream, so that the work it enqueues through the grid starts as soon as the ghosts are in, at the side stream's
  /// high priority, beside meanwhile()'s (its blocks take the multiprocessors as the interior kernel's retire, instead
  /// of running after its last block). then() must write nothing that meanwhile()'s work reads or writes; on return
  /// the grid's stream (restored) waits for both. On the Host and Emulated backends then() runs after the exchange.
  ///
  ///     list.update(g.grid(), ListPart::Interior);
  ///     g.update_ghosts([&] { interact(list, g.grid(), f, out, ListPart::Interior); },
  ///                     [&] {
  ///                       list.update(g.grid(), ListPart::Border);
  ///                       interact(list, g.grid(), f, out, ListPart::Border);
  ///                     });
  template <class Meanwhile, class Then>
  void update_ghosts(Meanwhile&& meanwhile, Then&& then) {
    if constexpr (detail::SideStreamOf<Backend>::value) {
      if (!side_) side_ = std::make_unique<Side>();
      const auto main = grid_->stream();
      side_->fork(main);
      exchange_ghosts(side_->get(), meanwhile);
      grid_->set_stream(side_->get());
      auto back = [&] {  // the grid's stream again, after the exchange and then()'s work
        grid_->set_stream(main);
        side_->join(main);
      };
      try {
        then();
      } catch (...) {
        back();
        throw;
      }
      back();
    } else {
      exchange_ghosts(grid_->stream(), meanwhile);
      then();
    }
  }

  /// The next update_ghosts() begun before the caller moves the particles, so that the exchange's latency hides
  /// behind the move instead of following it. The first axis's messages are packed now, each sent particle's position
  /// taken after `advance`: a backend functor called as advance(slot, x) with the slot's current position in
  /// `Real x[Dim]`, which sets x to the position the caller's move will give that slot, bit for bit (the same
  /// arithmetic on the same values: a ghost must be where its owner is). With GPU peer copies ordered by flags ("peer
  /// copies and flags") those messages also travel, and are unpacked on update_ghosts(meanwhile)'s side stream,
  /// beside the move. The next update_ghosts() (any form) finishes the exchange: the first axis needs no packing then,
  /// and the axes after it, which forward ghosts, go as before. Enqueued on the grid's stream, which is ordered after
  /// the packing, so the move may follow at once.
  /// Every rank calls it before the same update_ghosts(). Between the two the caller moves owned particles and
  /// nothing else changes the grid; the move must neither write nor read ghosts' positions, which may be arriving
  /// (a kernel over the grid's slots skips those whose user index, grid().original_index()[slot], is owned() or
  /// more). A redistribute() or exchange() that comes first finishes the exchange itself.
  ///
  ///     g.send_ghosts_ahead(drift);  // drift(slot, x): x += dt (v + dt F / m), as the kick computes it
  ///     kick_drift(g.grid());        // v += dt F / m; x += dt v, on the owned particles' slots
  ///     g.update_ghosts([&] { ... }, [&] { ... });
  /// @throws InvalidArgument where the last send_ghosts_ahead()'s update_ghosts() has not come
  template <class Advance>
  void send_ghosts_ahead(const Advance& advance) {
    CELLINT_EXPECTS(ahead_ == 0,
                    "cellint::mpi::DistributedGrid::send_ghosts_ahead: the last one's exchange is not finished (call "
                    "update_ghosts() between two)");
    if (plan_.empty()) return;  // (one rank: no messages)
    const auto main = grid_->stream();
    if (ipc_ && ipc_flags_) {
      if constexpr (detail::HasWaitValue<Backend>::value && detail::SideStreamOf<Backend>::value) {
        if (!side_) side_ = std::make_unique<Side>();
        side_->fork(main);
        ahead_seq_ = ++seq_;
        send_axis_flagged(0, ahead_seq_, side_->get(), advance);
        side_->join(main);  // (the move waits for the packing only)
        ahead_ = 2;
        receive_axis_flagged(0, ahead_seq_, side_->get());
      }
      return;
    }
    std::size_t send_at[3];
    axis_offsets(0, send_at);
    pack_axis(0, send_at, main, advance);
    ahead_ = 1;
  }

  /// The owned particles' values of a per-slot backend array of the grid (an attribute, a result), in particles()
  /// order, on the host: for bringing a simulation's state back before migrate().
  template <class T>
  std::vector<T> owned_values(const T* sorted_backend) const {
    std::vector<T> v = grid_->to_user_order(sorted_backend);
    v.resize(static_cast<std::size_t>(owned()));
    return v;
  }
  /// Copies the owned particles' ids and positions from the grid (as an integrator left them on the backend) into
  /// particles(): before migrate(), and after redistribute() to read them on the host (fields are not brought back:
  /// there the carried attributes hold the state; particles() then has zero fields and is the state migrate() and
  /// exchange() start from).
  void pull_positions() {
    const Index n = owned();
    own_.id = owned_values(static_cast<const std::uint64_t*>(slot_id_.data()));
    for (int d = 0; d < Dim; ++d) own_.x[d] = owned_values(static_cast<const Real*>(grid_->positions(d)));
    if (resident_ >= 0) own_.field.assign(static_cast<std::size_t>(n) * static_cast<std::size_t>(own_.fields), 0.0);
    resident_ = -1;
  }
  /// How update_ghosts() moves positions: "peer copies" (GPU to GPU on one node, interprocess memory, ordered by the
  /// hosts; "peer copies and flags" where each receiver's stream waits for a word its sender's GPU writes after the
  /// data, so that neither host takes part; "peer copies and events" where interprocess events order them, the hosts
  /// only saying that the events are recorded), "MPI on device memory" (a CUDA-aware MPI), "host buffers" (staged
  /// through page-locked memory), "host memory" (Host and Emulated backends), or "none" (one rank: the grid itself
  /// holds the periodic images, no ghost travels).
  const char* halo_transport() const {
    if (size_ == 1) return "none";
    if (!Backend::device_memory) return "host memory";
    if (ipc_) return ipc_flags_ ? "peer copies and flags" : ipc_events_ ? "peer copies and events" : "peer copies";
    return detail::mpi_accepts_device_pointers() ? "MPI on device memory" : "host buffers";
  }
  /// Whether update_ghosts() on a GPU backend only enqueues work, no host waiting for its GPU ("peer copies and flags"
  /// or "and events", or "none": one rank, whose periodic images the grid itself holds):
  /// the whole exchange is then on its way when meanwhile() is called.
  bool ghosts_enqueued() const { return size_ == 1 || (ipc_ && (ipc_flags_ || ipc_events_)); }
  /// Number of particles this rank owns (particles().size(), or after redistribute() the count in the grid).
  Index owned() const { return resident_ >= 0 ? resident_ : static_cast<Index>(own_.size()); }
  /// Number of ghosts in the grid.
  Index ghost_count() const { return grid_->size() - owned(); }

  /// Migration and a new ghost layer for particles whose state lives in the grid on the backend (collective): the
  /// device-resident counterpart of pull_positions() + migrate() + exchange(), where only the particles that change
  /// ranks and the ghosts cross between ranks (the ghosts GPU to GPU within a node, where they fit the receiver's
  /// buffer).
  ///  - The owned particles (the grid's first owned() in user order) are wrapped into the box on periodic axes and
  ///    classified on the backend; those that left the sub-box go to their new owners with their ids and `carried`
  ///    attributes, grouped by owner: between GPUs of one node a group is written straight into its owner's inbox (a
  ///    part of the owner's receive buffer for each neighbour that sends it ghosts) where it fits, else it travels
  ///    through the host to that owner only. The counts go between neighbours only, with an MPI_Iallreduce of the
  ///    errors beside them (the errors' agreement).
  ///  - The ghost layer is chosen on the backend, axis by axis as exchange() does, and its positions and ids travel.
  ///  - The grid is rebuilt on the backend over the new owned particles (staying ones, then arrivals) and ghosts; the
  ///    carried attributes are attached again (handles replaced; ghosts get zeros), the others are dropped.
  /// Start from exchange() (after the first migrate(true)); then update_ghosts() every step and redistribute() when a
  /// particle may have moved more than half the skin. particles() is not kept up to date (pull_positions()).
  /// @throws InvalidArgument on every rank for a NaN or infinite position, a particle outside an open box, or one that
  /// moved more than a sub-box (as migrate())
  template <class T, std::size_t K>
  void redistribute(std::array<Attribute<T>, K>& carried) {
    static_assert(std::is_arithmetic<T>::value, "cellint::mpi::redistribute: carried attributes are numbers");
    CELLINT_EXPECTS(grid_->built(), "cellint::mpi::DistributedGrid::redistribute: call exchange() first");
    if (ahead_ != 0) update_ghosts();  // (send_ghosts_ahead()'s exchange finished first)
    Grid& grid = *grid_;
    const auto st = grid.stream();
    double clock = profile_ ? MPI_Wtime() : 0;
    part_ = 0;
    struct NoPart {  // (after the call, thrown or not, MPI time goes to no part)
      int& part;
      ~NoPart() { part = 4; }
    } no_part{part_};
    auto lap = [&](double& part) {  // (profile(true): each part's time, waiting for the backend at its end)
      if (!profile_) return;
      Backend::synchronize(st);
      const double now = MPI_Wtime();
      part += now - clock;
      clock = now;
      ++part_;
    };
    ++times_.calls;
    const Index total = grid.size(), owned_now = owned();
    // 1. each owned particle: staying or leaving (to which rank, counted by group: mig_ranks_), or bad
    if (!groups_set_) detail::agreed(comm_, [&] { set_up_groups(); });  // (once, on every rank: a collective)
    const std::size_t groups = mig_ranks_.size(), at_group = detail::RebuildWord::count;
    {
      std::vector<unsigned>& w0 = words_host_;
      w0.assign(at_group + 2 * groups, 0u);
      w0[detail::RebuildWord::bad] = UINT_MAX;
      words_.resize(w0.size());
      words_.upload(w0.data(), st);
    }
    const std::size_t cap = static_cast<std::size_t>(std::max<Index>(owned_now, 1));
    // (with room: these counts creep up and down from one call to the next, and a release waits for the device)
    keep_.resize_with_room(cap);
    leave_.resize_with_room(cap);
    dest_.resize_with_room(cap);
    {
      detail::Classify<Real, Dim> k{owners(),        {},           grid.original_index(), owned_now,
                                    words_.data(),   keep_.data(), leave_.data(),         dest_.data(),
                                    group_of_.data()};
      for (int d = 0; d < Dim; ++d) k.pos[d] = grid.positions(d);
      cellint::detail::parallel_for<Backend>(total, k, st);
    }
    std::vector<unsigned>& w = words_host_;
    words_.download(w.data(), st);
    std::string err;
    if (w[detail::RebuildWord::bad] != UINT_MAX) {  // the message migrate() would give, from the host's arithmetic
      const Index slot = static_cast<Index>(w[detail::RebuildWord::bad]);
      Real x[Dim];
      std::uint64_t id = 0;
      for (int d = 0; d < Dim; ++d)
        Backend::copy(&x[d], grid.positions(d) + slot, sizeof(Real), CopyKind::DeviceToHost, st);
      Backend::copy(&id, slot_id_.data() + slot, sizeof id, CopyKind::DeviceToHost, st);
      std::array<int, Dim> c{};
      err = place(id, x, false, c);
      if (err.empty()) err = cellint::detail::cat("cellint::mpi: particle ", id, " is on a sub-box edge");
    }
    for (std::size_t k = 0; k < K && err.empty(); ++k)  // (read below only where particles leave: checked here)
      if (const std::string e = detail::error_of([&] { (void)grid.attribute(carried[k]); }); !e.empty())
        err = cellint::detail::cat("cellint::mpi::DistributedGrid::redistribute: carried attribute ", k, ": ", e);
    lap(times_.classify);  // (an error is agreed on with the migration's counts, before any other collective)
    double sub = clock;    // (profile(true): the parts of the migration and of the build, as lap())
    auto mark = [&](double& part) {
      if (!profile_) return;
      Backend::synchronize(st);
      const double now = MPI_Wtime();
      part += now - sub;
      sub = now;
    };
    const Index nl = static_cast<Index>(w[detail::RebuildWord::leave]),
                nk = static_cast<Index>(w[detail::RebuildWord::keep]);
    // 2. the leaving particles to their owners, a group per rank: between GPUs of one node straight into the receiver's
    //    inbox where the group fits it (no host, no record), else through the host (page-locked, memory kept between
    //    calls). An error (memory, the backend) is agreed on with the counts, as every error before them.
    Particles<Real, Dim>& out = leaving_;
    std::vector<int>& dest = leaving_dest_;
    std::vector<int>& to_inbox = inbox_sent_;  // (by rank) particles put in that rank's inbox
    to_inbox.assign(static_cast<std::size_t>(size_), 0);
    out.fields = static_cast<int>(K);
    out.id.clear();
    for (auto& a : out.x) a.clear();
    out.field.clear();
    dest.clear();
    if (err.empty() && nl > 0)
      err = detail::error_of([&] {
        grouped_.resize_with_room(static_cast<std::size_t>(nl));
        cellint::detail::parallel_for<Backend>(
            nl,
            detail::GroupLeave{leave_.data(), dest_.data(), group_of_.data(), words_.data() + at_group,
                               words_.data() + at_group + groups, grouped_.data()},
            st);
        // each group's receiver's inbox where it fits, and each group's place on the backend: those for the host first
        // (one copy), then those for inboxes this GPU's kernels do not reach (written by copies)
        std::vector<Peer*> inbox(groups, nullptr);
        for (std::size_t g = 0; g < groups; ++g) {
          const auto p = peers_.find(mig_ranks_[g]);
          if (ipc_ && w[at_group + g] > 0 && p != peers_.end() && p->second.inbox &&
              block_bytes<T>(w[at_group + g], K) <= p->second.inbox_bytes)
            inbox[g] = &p->second;
        }
        std::vector<std::size_t> at(groups, 0);
        std::size_t staged = 0, host_bytes = 0, host_m = 0;
        for (const bool host : {true, false}) {
          for (std::size_t g = 0; g < groups; ++g)
            if (w[at_group + g] > 0 && (inbox[g] == nullptr) == host && !(inbox[g] && inbox[g]->direct)) {
              at[g] = staged;
              staged += block_bytes<T>(w[at_group + g], K);
              if (host) host_m += w[at_group + g];
            }
          if (host) host_bytes = staged;
        }
        if (scratch_.size() < staged) scratch_.resize_with_room(staged);
        const Index* slots = grouped_.data();
        for (std::size_t g = 0; g < groups; ++g) {
          const std::size_t c = w[at_group + g];
          if (c > 0) {
            unsigned char* there = inbox[g] ? static_cast<unsigned char*>(inbox[g]->inbox) : nullptr;
            unsigned char* here = inbox[g] && inbox[g]->direct ? there : scratch_.data() + at[g];
            pack_leaving(slots, static_cast<Index>(c), carried, here, st);
            if (here != there && there) Backend::copy(there, here, block_bytes<T>(c, K), CopyKind::DeviceToDevice, st);
            if (inbox[g]) to_inbox[static_cast<std::size_t>(mig_ranks_[g])] = static_cast<int>(c);
          }
          slots += c;
        }
        if (host_bytes == 0) {
          Backend::synchronize(st);  // (the inboxes are written before their counts go out)
          return;
        }
        unsigned char* h = leaving_host_.reserve(host_bytes);  // (page-locked; the copy waits for the inboxes too)
        Backend::copy(h, scratch_.data(), host_bytes, CopyKind::DeviceToHost, st);
        out.id.resize(host_m);
        for (auto& a : out.x) a.resize(host_m);
        out.field.resize(host_m * K);
        dest.resize(host_m);
        std::size_t i0 = 0;
        for (std::size_t g = 0; g < groups; ++g) {
          const std::size_t c = w[at_group + g];
          if (c == 0 || inbox[g]) continue;
          const unsigned char* b = h + at[g];
          for (int d = 0; d < Dim; ++d)
            std::memcpy(out.x[d].data() + i0, b + sizeof(Real) * static_cast<std::size_t>(d) * c, sizeof(Real) * c);
          std::memcpy(out.id.data() + i0, b + block_at_id(c), sizeof(std::uint64_t) * c);
          for (std::size_t k = 0; k < K; ++k)
            for (std::size_t i = 0; i < c; ++i) {
              T v;
              std::memcpy(&v, b + block_at_val(c) + sizeof(T) * (k * c + i), sizeof(T));
              out.field[(i0 + i) * K + k] = static_cast<double>(v);
            }
          std::fill(dest.begin() + static_cast<std::ptrdiff_t>(i0), dest.begin() + static_cast<std::ptrdiff_t>(i0 + c),
                    mig_ranks_[g]);
          i0 += c;
        }
      });
    mark(times_.migrate_parts[0]);
    std::vector<int>& from_inbox = inbox_got_;  // (by rank) particles that rank put in this rank's inbox
    to_owners(
        out, dest, err, arrived_, &to_inbox, &from_inbox,
        [&](int from, int count) {
          if (!ipc_ || inbox_of_.count(from) == 0) return false;
          const std::size_t bytes = block_bytes<T>(static_cast<std::size_t>(count), K);
          if (bytes > inbox_bytes_) inbox_want_ = std::max(inbox_want_, 2 * bytes);  // (a larger one at the next call)
          return bytes <= inbox_bytes_;
        },
        &count_peers());
    const Particles<Real, Dim>& in = arrived_;
    mark(times_.migrate_parts[1]);
    // 3. the new owned particles in user order on the backend: those staying, then the arrivals through the host, then
    //    those in the inbox
    Index by_inbox = 0;
    for (int c : from_inbox) by_inbox += static_cast<Index>(c);
    const Index arrived = static_cast<Index>(in.size()), n_new = nk + arrived + by_inbox;
    times_.arrivals[0] += by_inbox;
    times_.arrivals[1] += arrived;
    reserve_users<T>(n_new + ghost_count() + ghost_count() / 4, K, false);  // (room for about as many ghosts)
    for (int d = 0; d < Dim; ++d)
      cellint::detail::parallel_for<Backend>(
          nk, cellint::detail::GatherKernel<Real>{grid.positions(d), keep_.data(), upos_[d].data()}, st);
    cellint::detail::parallel_for<Backend>(
        nk, cellint::detail::GatherKernel<std::uint64_t>{slot_id_.data(), keep_.data(), user_id_.data()}, st);
    T* uattr = reinterpret_cast<T*>(uattr_.data());
    for (std::size_t k = 0; k < K; ++k)
      cellint::detail::parallel_for<Backend>(
          nk, cellint::detail::GatherKernel<T>{grid.attribute(carried[k]), keep_.data(), uattr + k * attr_cap_}, st);
    if (arrived > 0) {  // from page-locked memory: copies that do not wait for the device, as pageable ones do
      const std::size_t m = static_cast<std::size_t>(arrived);
      const std::size_t at_id = align8(sizeof(Real) * Dim * m), at_val = at_id + sizeof(std::uint64_t) * m;
      unsigned char* h = arrivals_.reserve(at_val + sizeof(T) * K * m);
      for (int d = 0; d < Dim; ++d) {
        unsigned char* x = h + sizeof(Real) * static_cast<std::size_t>(d) * m;
        std::memcpy(x, in.x[d].data(), sizeof(Real) * m);
        Backend::copy(upos_[d].data() + nk, x, sizeof(Real) * m, CopyKind::HostToDevice, st);
      }
      std::memcpy(h + at_id, in.id.data(), sizeof(std::uint64_t) * m);
      Backend::copy(user_id_.data() + nk, h + at_id, sizeof(std::uint64_t) * m, CopyKind::HostToDevice, st);
      for (std::size_t k = 0; k < K; ++k) {
        T* v = reinterpret_cast<T*>(h + at_val) + k * m;  // (at_val: a multiple of 8)
        for (std::size_t i = 0; i < m; ++i) v[i] = static_cast<T>(in.field[i * K + k]);
        Backend::copy(uattr + k * attr_cap_ + nk, v, sizeof(T) * m, CopyKind::HostToDevice, st);
      }
    }
    {  // from the inbox: a block per sender (see pack_leaving())
      Index to = nk + arrived;
      for (const auto& [from, place] : inbox_of_) {
        const std::size_t c = static_cast<std::size_t>(from_inbox[static_cast<std::size_t>(from)]);
        if (c == 0) continue;
        const unsigned char* b = reinterpret_cast<const unsigned char*>(ipc_recv_.data()) + place;
        for (int d = 0; d < Dim; ++d)
          Backend::copy(upos_[d].data() + to, b + sizeof(Real) * static_cast<std::size_t>(d) * c, sizeof(Real) * c,
                        CopyKind::DeviceToDevice, st);
        Backend::copy(user_id_.data() + to, b + block_at_id(c), sizeof(std::uint64_t) * c, CopyKind::DeviceToDevice,
                      st);
        for (std::size_t k = 0; k < K; ++k)
          Backend::copy(uattr + k * attr_cap_ + to, b + block_at_val(c) + sizeof(T) * k * c, sizeof(T) * c,
                        CopyKind::DeviceToDevice, st);
        to += static_cast<Index>(c);
      }
    }
    mark(times_.migrate_parts[2]);
    lap(times_.migrate);
    // 4. the ghost layer, axis by axis (corners through two faces, as exchange()): positions and ids, both faces of
    //    an axis at once (one wait for the selection's counts, one for the copies into the neighbours' buffers)
    std::vector<HaloMessage> plan;
    Index n = n_new;    // particles so far (owned, then ghosts)
    Index entries = 0;  // plan entries so far (in user_list_)
    for (int d = 0; d < Dim; ++d) {
      if (dec_.ranks[d] == 1) continue;
      const Real lo = dec_.lo(d, coords_[d]), hi = dec_.hi(d, coords_[d]), g = dec_.ghost;
      Real shift[2] = {0, 0};
      const int to[2] = {dec_.neighbor(coords_, d, -1, &shift[0]), dec_.neighbor(coords_, d, +1, &shift[1])};
      const int from[2] = {dec_.neighbor(coords_, d, +1), dec_.neighbor(coords_, d, -1)};
      const Index before = n;
      select_.resize_with_room(std::max<std::size_t>(2 * static_cast<std::size_t>(before), 2));
      counts_.resize(2);
      counts_.fill_bytes(0, st);
      cellint::detail::parallel_for<Backend>(
          before,
          detail::SelectFaces<Real>{upos_[d].data(), lo + g, hi - g, to[0] >= 0, to[1] >= 0, counts_.data(),
                                    select_.data(), select_.data() + before},
          st);
      unsigned picked[2];
      counts_.download(picked, st);
      HaloMessage msg[2];
      const Index* sel[2] = {select_.data(), select_.data() + before};
      std::size_t ns[2], first[2];  // each face's count and place among this axis's outgoing records
      for (int side = 0; side < 2; ++side) {
        msg[side].axis = d;
        msg[side].shift = shift[side];
        msg[side].to = to[side] < 0 ? MPI_PROC_NULL : to[side];
        msg[side].from = from[side] < 0 ? MPI_PROC_NULL : from[side];
        msg[side].tag = side == 0 ? 11 : 12;
        msg[side].sends = static_cast<Index>(picked[side]);
        ns[side] = static_cast<std::size_t>(picked[side]);
      }
      first[0] = 0;
      first[1] = ns[0];
      // positions (shifted) and ids of both faces, face 0's records then face 1's
      send_buf_.resize_with_room(std::max(send_buf_.size(), static_cast<std::size_t>(Dim) * (ns[0] + ns[1])));
      std::uint64_t* ids = scratch_ids(ns[0] + ns[1]);
      for (int side = 0; side < 2; ++side) {
        if (ns[side] == 0) continue;
        detail::HaloGather<Real, Dim> k{{}, sel[side],       msg[side].sends,
                                        d,  msg[side].shift, send_buf_.data() + Dim * first[side]};
        for (int a = 0; a < Dim; ++a) k.pos[a] = upos_[a].data();
        cellint::detail::parallel_for<Backend>(msg[side].sends, k, st);
        cellint::detail::parallel_for<Backend>(
            msg[side].sends,
            cellint::detail::GatherKernel<std::uint64_t>{user_id_.data(), sel[side], ids + first[side]}, st);
      }
      // both faces' counts at once
      int n_out[2] = {static_cast<int>(ns[0]), static_cast<int>(ns[1])}, n_in[2] = {0, 0};
      {
        MPI_Request req[4];
        for (int side = 0; side < 2; ++side) {
          MPI_Irecv(&n_in[side], 1, MPI_INT, msg[side].from, msg[side].tag, comm_, &req[side]);
          MPI_Isend(&n_out[side], 1, MPI_INT, msg[side].to, msg[side].tag, comm_, &req[2 + side]);
        }
        in_mpi([&] { MPI_Waitall(4, req, MPI_STATUSES_IGNORE); });
      }
      // the plan's user indices: face 0's sent, face 0's received, face 1's sent, face 1's received
      const Index at_send[2] = {entries, entries + msg[0].sends + static_cast<Index>(n_in[0])};
      reserve_list(at_send[1] + msg[1].sends + static_cast<Index>(n_in[1]));
      for (int side = 0; side < 2; ++side)
        Backend::copy(user_list_.data() + at_send[side], sel[side], sizeof(Index) * ns[side], CopyKind::DeviceToDevice,
                      st);
      // between GPUs of one node, straight into the receiver's buffer (face 0's message in its first half, face 1's in
      // its second) where the message fits (both sides know: the receiver told its size at the last rebuild), else
      // through the host
      bool peer_out[2], peer_in[2];
      std::vector<Real> xs[2], xr[2];
      std::vector<std::uint64_t> is[2], ir[2];
      const std::size_t half_in = ipc_ghost_bytes_ / 2;
      for (int side = 0; side < 2; ++side) {
        const HaloMessage& m = msg[side];
        peer_out[side] = ipc_ && m.to != MPI_PROC_NULL && peer_fits(peers_[m.to].capacity, ns[side]);
        peer_in[side] =
            ipc_ && m.from != MPI_PROC_NULL && peer_fits(ipc_ghost_bytes_, static_cast<std::size_t>(n_in[side]));
        const std::size_t pos_bytes = sizeof(Real) * static_cast<std::size_t>(Dim) * ns[side];
        const Real* x_out = send_buf_.data() + Dim * first[side];
        if (peer_out[side]) {
          if (ns[side] > 0) {
            char* there = static_cast<char*>(peers_[m.to].base) + (side == 0 ? 0 : peers_[m.to].capacity / 2);
            Backend::copy(there, x_out, pos_bytes, CopyKind::DeviceToDevice, st);
            Backend::copy(there + align8(pos_bytes), ids + first[side], sizeof(std::uint64_t) * ns[side],
                          CopyKind::DeviceToDevice, st);
          }
        } else {
          xs[side].resize(static_cast<std::size_t>(Dim) * ns[side]);
          is[side].resize(ns[side]);
          Backend::copy(xs[side].data(), x_out, pos_bytes, CopyKind::DeviceToHost, st);
          Backend::copy(is[side].data(), ids + first[side], sizeof(std::uint64_t) * ns[side], CopyKind::DeviceToHost,
                        st);
        }
        if (!peer_in[side]) {
          xr[side].resize(static_cast<std::size_t>(Dim) * static_cast<std::size_t>(n_in[side]));
          ir[side].resize(static_cast<std::size_t>(n_in[side]));
        }
      }
      Backend::synchronize(st);  // (the copies into the receivers' buffers are done)
      {  // host messages of both faces, and for peer copies a message of no bytes: "your data is there"
        MPI_Request req[12];
        int r = 0;
        char none_out = 0, none_in[2] = {0, 0};
        for (int side = 0; side < 2; ++side) {
          const HaloMessage& m = msg[side];
          if (peer_in[side]) {
            MPI_Irecv(&none_in[side], 0, MPI_BYTE, m.from, m.tag + 20, comm_, &req[r++]);
          } else {
            MPI_Irecv(xr[side].data(), Dim * n_in[side], detail::datatype<Real>(), m.from, m.tag, comm_, &req[r++]);
            MPI_Irecv(ir[side].data(), n_in[side], MPI_UINT64_T, m.from, m.tag + 4, comm_, &req[r++]);
          }
          if (peer_out[side]) {
            MPI_Isend(&none_out, 0, MPI_BYTE, m.to, m.tag + 20, comm_, &req[r++]);
          } else {
            MPI_Isend(xs[side].data(), Dim * n_out[side], detail::datatype<Real>(), m.to, m.tag, comm_, &req[r++]);
            MPI_Isend(is[side].data(), n_out[side], MPI_UINT64_T, m.to, m.tag + 4, comm_, &req[r++]);
          }
        }
        in_mpi([&] { MPI_Waitall(r, req, MPI_STATUSES_IGNORE); });
      }
      // the arrivals: face 0's after the particles so far, then face 1's
      reserve_users<T>(n + static_cast<Index>(n_in[0]) + static_cast<Index>(n_in[1]), K, true);
      uattr = reinterpret_cast<T*>(uattr_.data());
      for (int side = 0; side < 2; ++side) {
        HaloMessage& m = msg[side];
        const std::size_t count = static_cast<std::size_t>(n_in[side]);
        m.recv_at = n;
        m.recv = static_cast<Index>(n_in[side]);
        if (peer_in[side]) {  // from this rank's receive buffer
          const char* here = reinterpret_cast<const char*>(ipc_recv_.data()) + (side == 0 ? 0 : half_in);
          for (int a = 0; a < Dim; ++a)
            Backend::copy(upos_[a].data() + n, here + sizeof(Real) * static_cast<std::size_t>(a) * count,
                          sizeof(Real) * count, CopyKind::DeviceToDevice, st);
          Backend::copy(user_id_.data() + n, here + align8(sizeof(Real) * static_cast<std::size_t>(Dim) * count),
                        sizeof(std::uint64_t) * count, CopyKind::DeviceToDevice, st);
        } else {  // (copies from pageable host memory return once the source may be released)
          for (int a = 0; a < Dim; ++a)
            Backend::copy(upos_[a].data() + n, xr[side].data() + static_cast<std::size_t>(a) * count,
                          sizeof(Real) * count, CopyKind::HostToDevice, st);
          Backend::copy(user_id_.data() + n, ir[side].data(), sizeof(std::uint64_t) * count, CopyKind::HostToDevice,
                        st);
        }
        cellint::detail::parallel_for<Backend>(
            m.recv, cellint::detail::IotaKernel{user_list_.data() + at_send[side] + m.sends, n}, st);
        n += m.recv;
        plan.push_back(m);
      }
      entries = at_send[1] + msg[1].sends + static_cast<Index>(n_in[1]);
    }
    lap(times_.ghosts);
    sub = clock;
    // 5. the grid over them, the carried attributes (ghosts: zeros), the plan by slot
    const std::size_t per = attr_cap_;
    for (std::size_t k = 0; k < K; ++k)
      if (n > n_new)
        Backend::fill_bytes(uattr + k * per + n_new, 0, sizeof(T) * static_cast<std::size_t>(n - n_new), st);
    grid.detach_attributes();
    std::array<const Real*, Dim> xyz{};
    for (int d = 0; d < Dim; ++d) xyz[d] = upos_[d].data();
    {
      const std::string failed = detail::error_of([&] { grid.build_from_backend(xyz, n); });
      in_mpi([&] { detail::agree(comm_, failed); });
    }
    mark(times_.build_parts[0]);
    for (std::size_t k = 0; k < K; ++k) carried[k] = grid.attach_from_backend(static_cast<const T*>(uattr + k * per));
    mark(times_.build_parts[1]);
    set_plan(std::move(plan), entries);
    mark(times_.build_parts[2]);
    own_.clear();
    ghost_.clear();
    resident_ = n_new;
    lap(times_.build);
  }

  /// Where redistribute()'s time goes, summed over its calls since profile(true) (seconds on this rank).
  struct RebuildTimes {
    double classify = 0;  ///< the classification kernel and the agreement on errors
    double migrate = 0;   ///< the leaving particles to their new owners and the new owned set on the backend
    double ghosts = 0;    ///< the ghost layer, axis by axis
    double build = 0;     ///< the grid over owned particles and ghosts, attributes, the update plan and peers
    std::array<double, 3> build_parts{};  ///< build's parts: the grid, the attributes, the update plan and peers
    /// migrate's parts: the leaving particles packed (into the receivers' inboxes, or to the host), the counts and the
    /// host's messages, the new owned set on the backend
    std::array<double, 3> migrate_parts{};
    /// Particles that arrived from other ranks: through the GPUs' memory (a neighbour wrote them into this rank's
    /// inbox), and through the host.
    std::array<long, 2> arrivals{};
    /// Of each part (classify, migrate, ghosts, build), the time spent in MPI calls: mostly waiting for the other
    /// ranks to reach the same point.
    std::array<double, 4> in_mpi{};
    long calls = 0;  ///< redistribute() calls
  };
  /// Turns the timing of redistribute()'s parts on or off and clears the sums. While on, each part ends by waiting
  /// for the backend (a little slower: for finding where a rebuild's time goes, not for production runs).
  void profile(bool on) {
    profile_ = on;
    times_ = {};
  }
  /// The sums since profile(true).
  const RebuildTimes& rebuild_times() const { return times_; }

  /// Field k of the owned particles and the ghosts as an attribute of the grid (after exchange(); valid until the next
  /// one), converted to T.
  template <class T = Real>
  Attribute<T> attach_field(int k) {
    std::vector<T> v;
    v.reserve(own_.size() + ghost_.size());
    for (const Particles<Real, Dim>* p : {&own_, &ghost_})
      for (std::size_t i = 0; i < p->size(); ++i)
        v.push_back(static_cast<T>(p->field[i * static_cast<std::size_t>(p->fields) + static_cast<std::size_t>(k)]));
    return grid_->attach(v);
  }

  /// Interaction of every owned particle with the owned particles and the ghosts within the cutoff: the functor's
  /// accumulator per owned particle, in particles() order (after exchange()). The grid's one-set call computes the
  /// ghosts' sums too (partial, dropped): a fraction of the work equal to the ghosts' share of the grid.
  template <class F>
  std::vector<typename FunctorTraits<F, Real, Dim>::Accum> interact(const F& f, StrategyKind k = StrategyKind::Auto,
                                                                    const Tuning& t = {}) {
    using Accum = typename FunctorTraits<F, Real, Dim>::Accum;
    std::vector<Accum> mine;
    detail::agreed(comm_, [&] {
      Buffer<Backend, Accum> out(static_cast<std::size_t>(grid_->size()));
      interact_with(k, *grid_, f, out.data(), t);
      std::vector<Accum> all = grid_->to_user_order(out.data());
      all.resize(static_cast<std::size_t>(owned()));
      mine = std::move(all);
    });
    return mine;
  }

  /// The sum of `local` over the ranks (collective; every rank gets it).
  template <class T>
  T sum(T local) const {
    T total{};
    MPI_Allreduce(&local, &total, 1, detail::datatype<T>(), MPI_SUM, comm_);
    return total;
  }
  /// Owned particles over all ranks.
  std::uint64_t global_count() const { return sum<std::uint64_t>(static_cast<std::uint64_t>(owned())); }
  /// One value per owned particle (in particles() order) from every rank, by id, on rank 0 (collective; empty on the
  /// other ranks). For output and checks: it brings the whole system to one rank. T: trivially copyable.
  template <class T>
  std::map<std::uint64_t, T> gather(const std::vector<T>& values) const {
    static_assert(std::is_trivially_copyable<T>::value, "cellint::mpi: gather() copies values as bytes");
    const int n = static_cast<int>(owned());
    const std::vector<std::uint64_t> mine =
        resident_ >= 0 ? owned_values(static_cast<const std::uint64_t*>(slot_id_.data())) : own_.id;
    std::vector<int> counts(static_cast<std::size_t>(size_)), at(static_cast<std::size_t>(size_) + 1, 0);
    MPI_Gather(&n, 1, MPI_INT, counts.data(), 1, MPI_INT, 0, comm_);
    for (int r = 0; r < size_; ++r) at[static_cast<std::size_t>(r) + 1] = at[static_cast<std::size_t>(r)] + counts[r];
    std::vector<std::uint64_t> ids(static_cast<std::size_t>(at.back()));
    MPI_Gatherv(mine.data(), n, MPI_UINT64_T, ids.data(), counts.data(), at.data(), MPI_UINT64_T, 0, comm_);
    const int bytes = static_cast<int>(sizeof(T));
    for (int& c : counts) c *= bytes;
    for (int& c : at) c *= bytes;
    std::vector<T> all(ids.size());
    MPI_Gatherv(values.data(), n * bytes, MPI_BYTE, all.data(), counts.data(), at.data(), MPI_BYTE, 0, comm_);
    std::map<std::uint64_t, T> by_id;
    if (rank_ == 0)
      for (std::size_t i = 0; i < all.size(); ++i) by_id.emplace(ids[i], all[i]);
    return by_id;
  }

 private:
  // What Classify needs to find owners on the backend.
  detail::Owners<Real, Dim> owners() {
    detail::Owners<Real, Dim> o{};
    std::vector<Real> edges;
    for (int d = 0; d < Dim; ++d)
      for (int c = 0; c <= dec_.ranks[d]; ++c) edges.push_back(c < dec_.ranks[d] ? dec_.lo(d, c) : dec_.hi(d, c - 1));
    edges_.resize(edges.size());
    edges_.upload(edges.data(), grid_->stream());
    std::size_t at = 0;
    for (int d = 0; d < Dim; ++d) {
      o.origin[d] = dec_.global.origin[d];
      o.length[d] = dec_.global.lengths[d];
      o.width[d] = dec_.width(d);
      o.periodic[d] = dec_.global.periodic[d];
      o.ranks[d] = dec_.ranks[d];
      o.coords[d] = coords_[d];
      o.edges[d] = edges_.data() + at;
      at += static_cast<std::size_t>(dec_.ranks[d]) + 1;
    }
    return o;
  }
  // Each rank's group on the backend (its place in mig_ranks_, count_peers()'s neighbours; -1: none); once.
  void set_up_groups() {
    if (groups_set_) return;
    count_peers();
    std::vector<int> group_of(static_cast<std::size_t>(size_), -1);
    for (std::size_t g = 0; g < mig_ranks_.size(); ++g)
      group_of[static_cast<std::size_t>(mig_ranks_[g])] = static_cast<int>(g);
    group_of_.resize(group_of.size());
    group_of_.upload(group_of.data(), grid_->stream());
    groups_set_ = true;
  }
  // The ranks that exchange migration counts with this one (to_owners() after the first distribution): mig_ranks_, the
  // ranks a particle can move to in one migration (each neighbour once, by rank: redistribute()'s groups), and this
  // rank; found once, on the host.
  const std::vector<int>& count_peers() {
    if (!count_peers_.empty()) return count_peers_;
    std::array<int, Dim> step{};
    for (int d = 0; d < Dim; ++d) step[d] = -1;
    for (;;) {  // every step of -1, 0 or +1 along each axis
      std::array<int, Dim> c = coords_;
      bool inside = true;
      for (int d = 0; d < Dim; ++d) {
        c[d] += step[d];
        if (c[d] < 0 || c[d] >= dec_.ranks[d]) {
          inside = inside && dec_.global.periodic[d];
          c[d] = (c[d] + dec_.ranks[d]) % dec_.ranks[d];
        }
      }
      const int r = dec_.rank_of(c);
      if (inside && r != rank_ && std::find(mig_ranks_.begin(), mig_ranks_.end(), r) == mig_ranks_.end())
        mig_ranks_.push_back(r);
      int d = 0;
      while (d < Dim && step[d] == 1) step[d++] = -1;
      if (d == Dim) break;
      ++step[d];
    }
    std::sort(mig_ranks_.begin(), mig_ranks_.end());
    count_peers_ = mig_ranks_;
    count_peers_.insert(std::lower_bound(count_peers_.begin(), count_peers_.end(), rank_), rank_);
    return count_peers_;
  }
  // A block of c migrating particles carrying K values of T each (redistribute()): positions (Dim runs), ids, values.
  static std::size_t block_at_id(std::size_t c) { return align8(sizeof(Real) * Dim * c); }
  static std::size_t block_at_val(std::size_t c) { return block_at_id(c) + sizeof(std::uint64_t) * c; }
  template <class T>
  static std::size_t block_bytes(std::size_t c, std::size_t K) {
    return align8(block_at_val(c) + sizeof(T) * K * c);
  }
  // Packs the particles of grid slots slot[0, c) into a block at dst (device memory, here or a neighbour's).
  template <class T, std::size_t K>
  void pack_leaving(const Index* slot, Index c, std::array<Attribute<T>, K>& carried, unsigned char* dst,
                    typename Backend::Stream st) {
    const std::size_t n = static_cast<std::size_t>(c);
    detail::HaloGather<Real, Dim> k{{}, slot, c, -1, Real(0), reinterpret_cast<Real*>(dst)};
    for (int d = 0; d < Dim; ++d) k.pos[d] = grid_->positions(d);
    cellint::detail::parallel_for<Backend>(c, k, st);
    cellint::detail::parallel_for<Backend>(
        c,
        cellint::detail::GatherKernel<std::uint64_t>{slot_id_.data(), slot,
                                                     reinterpret_cast<std::uint64_t*>(dst + block_at_id(n))},
        st);
    T* values = reinterpret_cast<T*>(dst + block_at_val(n));
    for (std::size_t k = 0; k < K; ++k)
      cellint::detail::parallel_for<Backend>(
          c, cellint::detail::GatherKernel<T>{grid_->attribute(carried[k]), slot, values + k * n}, st);
  }
  // Room for n particles by user index (positions, ids, K carried attributes of T), keeping what is there with `keep`.
  template <class T>
  void reserve_users(Index n, std::size_t K, bool keep) {
    const std::size_t want = static_cast<std::size_t>(std::max<Index>(n, 1));
    const auto st = grid_->stream();
    auto grow = [&](auto& buf) {
      if (buf.size() >= want) return;
      std::remove_reference_t<decltype(buf)> bigger(std::max(want, buf.size() * 3 / 2));
      if (keep && buf.size() > 0)
        Backend::copy(bigger.data(), buf.data(), sizeof(*buf.data()) * buf.size(), CopyKind::DeviceToDevice, st);
      buf = std::move(bigger);
    };
    for (auto& b : upos_) grow(b);
    grow(user_id_);
    const std::size_t runs = std::max<std::size_t>(K, 1), laid = runs * attr_cap_ * sizeof(T);
    if (attr_cap_ >= want && uattr_.size() == laid) return;
    const std::size_t cap = std::max(want, attr_cap_ * 3 / 2);
    Buffer<Backend, unsigned char> bigger(runs * cap * sizeof(T));
    if (keep && uattr_.size() == laid && attr_cap_ > 0)
      for (std::size_t r = 0; r < runs; ++r)
        Backend::copy(bigger.data() + r * cap * sizeof(T), uattr_.data() + r * attr_cap_ * sizeof(T),
                      attr_cap_ * sizeof(T), CopyKind::DeviceToDevice, st);
    uattr_ = std::move(bigger);
    attr_cap_ = cap;
  }
  static std::size_t align8(std::size_t bytes) { return (bytes + 7) / 8 * 8; }
  // Runs MPI calls; with profile(true) their time is added to the current part's (inside redistribute()).
  template <class Calls>
  void in_mpi(Calls&& calls) const {
    if (!profile_ || part_ >= 4) {
      calls();
      return;
    }
    const double t = MPI_Wtime();
    calls();
    times_.in_mpi[static_cast<std::size_t>(part_)] += MPI_Wtime() - t;
  }
  // Room for n ids on the backend, kept between rebuilds (an allocation and its release would wait for the device).
  std::uint64_t* scratch_ids(std::size_t n) {
    if (scratch_id_.size() < std::max<std::size_t>(n, 1)) scratch_id_.resize_with_room(std::max<std::size_t>(n, 1));
    return scratch_id_.data();
  }
  // Whether `count` ghosts (positions and ids) fit half of a receive buffer of `capacity` bytes.
  static bool peer_fits(std::size_t capacity, std::size_t count) {
    return align8(sizeof(Real) * static_cast<std::size_t>(Dim) * count) + sizeof(std::uint64_t) * count <= capacity / 2;
  }
  // Room for n plan entries in user_list_, keeping what is there.
  void reserve_list(Index n) {
    const std::size_t want = static_cast<std::size_t>(std::max<Index>(n, 1));
    if (user_list_.size() >= want) return;
    Buffer<Backend, Index> bigger(std::max(want, user_list_.size() * 3 / 2));
    Backend::copy(bigger.data(), user_list_.data(), sizeof(Index) * user_list_.size(), CopyKind::DeviceToDevice,
                  grid_->stream());
    user_list_ = std::move(bigger);
  }
  // Each rank's send_count[r] to rank r's recv_count[this rank] (collective): with `peers` (count_peers(): sorted, this
  // rank among them) between those ranks only, with an MPI_Iallreduce of `bad` beside the messages (O(neighbours)
  // messages and O(log P) steps), else by MPI_Alltoall (O(P)). Returns whether any rank is bad (its counts are -1).
  bool exchange_counts(std::vector<int>& send_count, std::vector<int>& recv_count, bool bad,
                       const std::vector<int>* peers) const {
    if (!peers) {
      in_mpi([&] { MPI_Alltoall(send_count.data(), 1, MPI_INT, recv_count.data(), 1, MPI_INT, comm_); });
      return bad || *std::min_element(recv_count.begin(), recv_count.end()) < 0;
    }
    int mine = bad ? 1 : 0, any = 0;
    std::vector<MPI_Request> req(2 * peers->size() + 1);
    MPI_Iallreduce(&mine, &any, 1, MPI_INT, MPI_MAX, comm_, &req[0]);
    for (std::size_t k = 0; k < peers->size(); ++k) {
      const int r = (*peers)[k];
      MPI_Irecv(&recv_count[static_cast<std::size_t>(r)], 1, MPI_INT, r, 34, comm_, &req[1 + 2 * k]);
      MPI_Isend(&send_count[static_cast<std::size_t>(r)], 1, MPI_INT, r, 34, comm_, &req[2 + 2 * k]);
    }
    in_mpi([&] { MPI_Waitall(static_cast<int>(req.size()), req.data(), MPI_STATUSES_IGNORE); });
    return any != 0;
  }
  // Sends particle i of p to rank dest[i] (collective: the counts (exchange_counts()), then messages of records of
  // id, position and fields as bytes between the ranks that have any); `in` gets what this rank received, grouped by
  // sender (its memory reused). Where (*to_inbox)[r] more particles (not in p) are already in rank r's inbox
  // (redistribute()), their count travels with the others', and (*from_inbox)[r] gets the count of those rank r put in
  // this rank's inbox, the senders `inbox(r, count)` says. With `peers` (count_peers()) every dest is among them and
  // only they exchange counts; without, every rank with every rank (the first distribution). A rank with an error
  // (`err`: its message) sends counts of -1, and then every rank throws the agreed error (agree()).
  template <class InInbox>
  void to_owners(const Particles<Real, Dim>& p, const std::vector<int>& dest, std::string err, Particles<Real, Dim>& in,
                 const std::vector<int>* to_inbox, std::vector<int>* from_inbox, InInbox&& inbox,
                 const std::vector<int>* peers) const {
    const std::size_t n = p.size();
    const int nf = p.fields;
    // a record: id, position, fields
    const std::size_t at_x = sizeof(std::uint64_t), at_f = at_x + sizeof(Real) * Dim,
                      rec = at_f + sizeof(double) * static_cast<std::size_t>(nf);
    std::vector<int> send_count(static_cast<std::size_t>(size_), 0), recv_count(send_count.size(), 0);
    if (err.empty()) {
      for (int r : dest) ++send_count[static_cast<std::size_t>(r)];
      if (to_inbox)
        for (std::size_t r = 0; r < send_count.size(); ++r) send_count[r] += (*to_inbox)[r];
      if (peers)
        for (std::size_t r = 0; r < send_count.size() && err.empty(); ++r)
          if (send_count[r] > 0 && !std::binary_search(peers->begin(), peers->end(), static_cast<int>(r)))
            err = cellint::detail::cat("cellint::mpi: ", send_count[r], " particles go to rank ", r,
                                       ", which is not a neighbour of rank ", rank_, " (an internal error)");
    }
    if (!err.empty()) std::fill(send_count.begin(), send_count.end(), -1);
    if (exchange_counts(send_count, recv_count, !err.empty(), peers)) detail::agree(comm_, err);
    if (to_inbox)
      for (std::size_t r = 0; r < send_count.size(); ++r) send_count[r] -= (*to_inbox)[r];
    if (from_inbox) {
      from_inbox->assign(recv_count.size(), 0);
      for (std::size_t r = 0; r < recv_count.size(); ++r)
        if (recv_count[r] > 0 && inbox(static_cast<int>(r), recv_count[r])) {
          (*from_inbox)[r] = recv_count[r];
          recv_count[r] = 0;
        }
    }
    std::vector<int> send_at(send_count.size() + 1, 0), recv_at(recv_count.size() + 1, 0);
    for (std::size_t r = 0; r < send_count.size(); ++r) {
      send_at[r + 1] = send_at[r] + send_count[r];
      recv_at[r + 1] = recv_at[r] + recv_count[r];
    }
    // records grouped by destination, in the particles' order (the record buffers are kept between calls)
    std::vector<unsigned char>& out = send_records_;
    std::vector<unsigned char>& got = recv_records_;
    out.resize(n * rec);
    got.resize(static_cast<std::size_t>(recv_at.back()) * rec);
    {
      std::vector<int> fill(send_at.begin(), send_at.end() - 1);
      for (std::size_t i = 0; i < n; ++i) {
        unsigned char* r = out.data() + static_cast<std::size_t>(fill[static_cast<std::size_t>(dest[i])]++) * rec;
        std::memcpy(r, &p.id[i], sizeof(std::uint64_t));
        for (int d = 0; d < Dim; ++d) std::memcpy(r + at_x + sizeof(Real) * d, &p.x[d][i], sizeof(Real));
        if (nf > 0) std::memcpy(r + at_f, &p.field[i * nf], rec - at_f);
      }
    }
    {  // (each rank knows whom it receives from: messages between those ranks only)
      std::vector<MPI_Request> req;
      for (std::size_t r = 0; r < recv_count.size(); ++r)
        if (recv_count[r] > 0) {
          req.emplace_back();
          MPI_Irecv(got.data() + static_cast<std::size_t>(recv_at[r]) * rec, recv_count[r] * static_cast<int>(rec),
                    MPI_BYTE, static_cast<int>(r), 33, comm_, &req.back());
        }
      for (std::size_t r = 0; r < send_count.size(); ++r)
        if (send_count[r] > 0) {
          req.emplace_back();
          MPI_Isend(out.data() + static_cast<std::size_t>(send_at[r]) * rec, send_count[r] * static_cast<int>(rec),
                    MPI_BYTE, static_cast<int>(r), 33, comm_, &req.back());
        }
      in_mpi([&] { MPI_Waitall(static_cast<int>(req.size()), req.data(), MPI_STATUSES_IGNORE); });
    }
    const std::size_t m = got.size() / rec;
    in.fields = nf;
    in.id.resize(m);
    for (auto& a : in.x) a.resize(m);
    in.field.resize(m * static_cast<std::size_t>(nf));
    for (std::size_t i = 0; i < m; ++i) {
      const unsigned char* r = got.data() + i * rec;
      std::memcpy(&in.id[i], r, sizeof(std::uint64_t));
      for (int d = 0; d < Dim; ++d) std::memcpy(&in.x[d][i], r + at_x + sizeof(Real) * d, sizeof(Real));
      if (nf > 0) std::memcpy(&in.field[i * nf], r + at_f, rec - at_f);
    }
  }
  // Wraps x into the box on periodic axes and finds its owner's coordinates c; returns what is wrong with it ("" for
  // nothing): a non-finite coordinate, a position outside an open box, or (unless `anywhere`) one more than a sub-box
  // away from this rank's.
  std::string place(std::uint64_t id, Real (&x)[Dim], bool anywhere, std::array<int, Dim>& c) const {
    for (int d = 0; d < Dim; ++d) {
      if (!std::isfinite(static_cast<double>(x[d])))
        return cellint::detail::cat("cellint::mpi: particle ", id, " has a non-finite position (", x[d], " along axis ",
                                    d, "); check the integrator's time step and forces");
      x[d] = dec_.wrap(d, x[d]);
      c[d] = dec_.coord_of(d, x[d]);
      if (c[d] < 0)
        return cellint::detail::cat("cellint::mpi: particle ", id, " is at ", x[d], " along axis ", d,
                                    ", outside the open box [", dec_.global.origin[d], ", ",
                                    dec_.global.origin[d] + dec_.global.lengths[d],
                                    "); make the axis periodic or the box larger");
      if (!anywhere && !adjacent(d, coords_[d], c[d]))
        return cellint::detail::cat("cellint::mpi: particle ", id, " moved from sub-box ", coords_[d], " to ", c[d],
                                    " along axis ", d,
                                    " since the last migration, more than one sub-box; migrate every step, shorten "
                                    "the time step or use fewer ranks along that axis");
    }
    return {};
  }
  // whether sub-box c2 is c1 or a neighbour of it along axis d (through the periodic boundary too)
  bool adjacent(int d, int c1, int c2) const {
    const int p = dec_.ranks[d];
    int diff = std::abs(c1 - c2);
    if (dec_.global.periodic[d]) diff = std::min(diff, p - diff);
    return diff <= 1;
  }
  // sends `out` to rank `to` and appends what rank `from` sends to the ghosts (MPI_PROC_NULL: nothing)
  void sendrecv(const Particles<Real, Dim>& out, int to, int from, int tag) {
    int n_out = static_cast<int>(out.size()), n_in = 0;
    MPI_Sendrecv(&n_out, 1, MPI_INT, to, tag, &n_in, 1, MPI_INT, from, tag, comm_, MPI_STATUS_IGNORE);
    const std::size_t base = ghost_.size(), m = static_cast<std::size_t>(n_in);
    const int nf = own_.fields;
    ghost_.id.resize(base + m);
    MPI_Sendrecv(out.id.data(), n_out, MPI_UINT64_T, to, tag, ghost_.id.data() + base, n_in, MPI_UINT64_T, from, tag,
                 comm_, MPI_STATUS_IGNORE);
    for (int d = 0; d < Dim; ++d) {
      ghost_.x[d].resize(base + m);
      MPI_Sendrecv(out.x[d].data(), n_out, detail::datatype<Real>(), to, tag, ghost_.x[d].data() + base, n_in,
                   detail::datatype<Real>(), from, tag, comm_, MPI_STATUS_IGNORE);
    }
    ghost_.field.resize((base + m) * static_cast<std::size_t>(nf));
    if (nf > 0)
      MPI_Sendrecv(out.field.data(), n_out * nf, MPI_DOUBLE, to, tag,
                   ghost_.field.data() + base * static_cast<std::size_t>(nf), n_in * nf, MPI_DOUBLE, from, tag, comm_,
                   MPI_STATUS_IGNORE);
  }

  // One message of the ghost exchange: `sends` particles go to `to`, `recv` come from `from` and are the ghosts of
  // user indices recv_at .. recv_at + recv - 1; their grid slots are at send_slots and recv_slots in slots_.
  struct HaloMessage {
    int axis = 0, to = MPI_PROC_NULL, from = MPI_PROC_NULL, tag = 0;
    Real shift = 0;
    Index sends = 0, recv_at = 0, recv = 0;
    std::size_t send_slots = 0, recv_slots = 0;
  };
  // Keeps the exchange's messages, with the grid slots of their particles (user_list_: each message's sent, then
  // received, particles by user index, `entries` in all) on the backend; after the grid's build. Also the ids by slot.
  void set_plan(std::vector<HaloMessage> plan, Index entries) {
    // (an error here, memory or the backend, is agreed on before the peers' collectives)
    detail::agreed(comm_, [&] { place_plan(std::move(plan), entries); });
    setup_peers();
  }
  void place_plan(std::vector<HaloMessage> plan, Index entries) {
    const Index total = grid_->size();
    const auto stream = grid_->stream();
    slot_of_.resize_with_room(std::max<std::size_t>(static_cast<std::size_t>(total), 1));
    cellint::detail::parallel_for<Backend>(
        total, cellint::detail::InverseKernel{grid_->original_index(), slot_of_.data()}, stream);
    slots_.resize_with_room(std::max<std::size_t>(static_cast<std::size_t>(entries), 1));
    cellint::detail::parallel_for<Backend>(
        entries, cellint::detail::GatherKernel<Index>{slot_of_.data(), user_list_.data(), slots_.data()}, stream);
    slot_id_.resize_with_room(std::max<std::size_t>(static_cast<std::size_t>(total), 1));
    cellint::detail::parallel_for<Backend>(
        total, cellint::detail::GatherKernel<std::uint64_t>{user_id_.data(), grid_->original_index(), slot_id_.data()},
        stream);
    std::size_t at = 0;
    for (HaloMessage& m : plan) {
      m.send_slots = at;
      m.recv_slots = at + static_cast<std::size_t>(m.sends);
      at = m.recv_slots + static_cast<std::size_t>(m.recv);
    }
    plan_ = std::move(plan);
    Backend::synchronize(stream);
  }

  // update_ghosts() on `stream`, calling meanwhile() once as soon as the first messages are under way.
  // After send_ghosts_ahead() (ahead_ 1: the first axis packed in send_buf_; 2: its messages on their way, with
  // flags) only the rest.
  template <class Meanwhile>
  void exchange_ghosts(typename Backend::Stream stream, Meanwhile& meanwhile) {
    const bool direct = !Backend::device_memory || detail::mpi_accepts_device_pointers();
    const int ahead = std::exchange(ahead_, 0);
    bool called = false;
    auto start_meanwhile = [&] {
      if (!called) meanwhile();
      called = true;
    };
    if (ipc_) {
      update_ghosts_peer(stream, start_meanwhile, ahead);
      start_meanwhile();
      return;
    }
    // the two messages of an axis together: one packing, one copy each way, both exchanges in flight at once
    for (std::size_t i = 0; i < plan_.size(); i += 2) {
      const HaloMessage* m[2] = {&plan_[i], &plan_[i + 1]};
      std::size_t send_at[3] = {0, 0, 0}, recv_at[3] = {0, 0, 0};  // (in Reals)
      axis_offsets(i, send_at);
      for (int k = 0; k < 2; ++k)
        recv_at[k + 1] = recv_at[k] + static_cast<std::size_t>(Dim) * static_cast<std::size_t>(m[k]->recv);
      if (recv_buf_.size() < recv_at[2]) recv_buf_.resize_with_room(recv_at[2]);
      if (!(i == 0 && ahead == 1)) pack_axis(i, send_at, stream);
      Real* out = send_buf_.data();
      Real* in = recv_buf_.data();
      if (direct) {
        Backend::synchronize(stream);
      } else {  // through page-locked host buffers
        out = host_send_.reserve(send_at[2]);
        in = host_recv_.reserve(recv_at[2]);
        Backend::copy(out, send_buf_.data(), sizeof(Real) * send_at[2], CopyKind::DeviceToHost, stream);
      }
      MPI_Request req[4];
      for (int k = 0; k < 2; ++k) {
        MPI_Irecv(in + recv_at[k], static_cast<int>(recv_at[k + 1] - recv_at[k]), detail::datatype<Real>(), m[k]->from,
                  m[k]->tag, comm_, &req[k]);
        MPI_Isend(out + send_at[k], static_cast<int>(send_at[k + 1] - send_at[k]), detail::datatype<Real>(), m[k]->to,
                  m[k]->tag, comm_, &req[2 + k]);
      }
      start_meanwhile();  // (the first axis's messages are in flight)
      MPI_Waitall(4, req, MPI_STATUSES_IGNORE);
      if (!direct) {
        Backend::copy(recv_buf_.data(), in, sizeof(Real) * recv_at[2], CopyKind::HostToDevice, stream);
      }
      for (int k = 0; k < 2; ++k)
        if (m[k]->recv > 0) {
          detail::HaloScatter<Real, Dim> sc{
              {}, slots_.data() + m[k]->recv_slots, m[k]->recv, recv_buf_.data() + recv_at[k]};
          for (int d = 0; d < Dim; ++d) sc.pos[d] = grid_->positions(d);
          cellint::detail::parallel_for<Backend>(m[k]->recv, sc, stream);
        }
      if (!direct) Backend::synchronize(stream);  // (the pinned buffer is reused by the next axis)
    }
    start_meanwhile();  // (no messages)
  }

  // Decides whether update_ghosts() copies between the GPUs directly (every rank on one node, a backend with device
  // memory and interprocess handles, an MPI that does not take device pointers itself, CELLINT_MPI_IPC not 0; all
  // ranks agree), and if so tells each sender where in this rank's receive buffer its messages go.
  void setup_peers() {
    if (ipc_agreed_) {  // (the neighbours and the transport do not change: the first agreement holds)
      set_up_peer_buffers();
      return;
    }
    // what this rank allows (every rank must): peer copies (1), ordered by interprocess events (2), by flags (4)
    int mine = 0;
    if constexpr (Backend::device_memory && detail::HasIpc<Backend>::value) {
      mine = !detail::mpi_accepts_device_pointers() && !detail::env_is("CELLINT_MPI_IPC", "0");
      if (IpcEvents::value && !detail::env_is("CELLINT_MPI_IPC_EVENTS", "0")) mine |= 2;
      // flags where the driver has stream waits; on HIP only when asked for (CELLINT_MPI_IPC_FLAGS=1: not yet run on
      // an AMD GPU, whose waits the documentation wants on signal memory)
      if constexpr (detail::HasWaitValue<Backend>::value)
        if (!detail::env_is("CELLINT_MPI_IPC_FLAGS", "0") &&
            (detail::env_is("CELLINT_MPI_IPC_FLAGS", "1") || std::strcmp(Backend::name(), "hip") != 0) &&
            Backend::can_wait_value())
          mine |= 4;
      for (const HaloMessage& m : plan_) {
        const int peers[2] = {m.to, m.from};
        for (int r : peers)
          if (r != MPI_PROC_NULL && node_of_[static_cast<std::size_t>(r)] != node_of_[static_cast<std::size_t>(rank_)])
            mine = 0;
      }
      if (!(mine & 1)) mine = 0;
    }
    int all = 0;
    in_mpi([&] { MPI_Allreduce(&mine, &all, 1, MPI_INT, MPI_BAND, comm_); });
    ipc_ = (all & 1) != 0;
    ipc_agreed_ = true;
    if (!((all & 4) && open_peer_flags()) && (all & 2)) open_peer_events();
    set_up_peer_buffers();
  }
  // The ranks of the plan's messages other than this one, each once.
  std::vector<int> neighbour_ranks() const {
    std::vector<int> ranks;
    for (const HaloMessage& m : plan_) {
      const int pair[2] = {m.to, m.from};
      for (int r : pair)
        if (r != MPI_PROC_NULL && r != rank_ && std::find(ranks.begin(), ranks.end(), r) == ranks.end())
          ranks.push_back(r);
    }
    return ranks;
  }
  // Peer copies ordered by flags (setup_peers()): this rank's flag words, one per message of the plan (the messages do
  // not change: once), zeroed, and its neighbours' mapped. True where every rank's GPU writes into every neighbour's
  // memory and no two neighbours share a GPU (agreed; else nothing is kept and the events order the copies): on a
  // shared GPU under MPS their streams may share a hardware queue, where one's wait would hold the other's packing
  // (CELLINT_MPI_IPC_FLAGS=1 allows it, for GPUs shared without MPS).
  bool open_peer_flags() {
    if constexpr (detail::HasWaitValue<Backend>::value) {
      struct Handle {  // the flags' memory and the GPU's PCI address
        typename Backend::IpcHandle memory;
        char bus[64];
      };
      const std::vector<int> ranks = neighbour_ranks();
      Handle mine{};
      const std::string bus = Backend::bus_id();
      std::strncpy(mine.bus, bus.c_str(), sizeof mine.bus - 1);
      std::string err = detail::error_of([&] {
        flags_ = Buffer<Backend, unsigned>(std::max<std::size_t>(plan_.size(), 1));
        flags_.fill_bytes(0, grid_->stream());
        done_ = Buffer<Backend, unsigned>(std::max<std::size_t>(plan_.size() / 2, 1));
        done_.fill_bytes(0, grid_->stream());
        Backend::synchronize(grid_->stream());
        mine.memory = Backend::ipc_handle(flags_.data());
      });
      std::vector<Handle> theirs(ranks.size());
      std::vector<MPI_Request> req(2 * ranks.size());
      for (std::size_t k = 0; k < ranks.size(); ++k) {
        MPI_Irecv(&theirs[k], static_cast<int>(sizeof(Handle)), MPI_BYTE, ranks[k], 72, comm_, &req[2 * k]);
        MPI_Isend(&mine, static_cast<int>(sizeof mine), MPI_BYTE, ranks[k], 72, comm_, &req[2 * k + 1]);
      }
      in_mpi([&] { MPI_Waitall(static_cast<int>(req.size()), req.data(), MPI_STATUSES_IGNORE); });
      int reach = 1;
      const bool shared_ok = detail::env_is("CELLINT_MPI_IPC_FLAGS", "1");
      if (err.empty())
        err = detail::error_of([&] {
          for (std::size_t k = 0; k < ranks.size(); ++k) {
            void* p = Backend::ipc_open(theirs[k].memory);
            peer_flags_[ranks[k]] = static_cast<unsigned*>(p);
            const bool shared = bus.empty() || std::strncmp(theirs[k].bus, mine.bus, sizeof mine.bus) == 0;
            reach = reach && Backend::ipc_reachable(p) && (shared_ok || !shared);
          }
        });
      detail::agree(comm_, err);
      int all = 0;
      in_mpi([&] { MPI_Allreduce(&reach, &all, 1, MPI_INT, MPI_MIN, comm_); });
      if (!all) {
        for (auto& f : peer_flags_) Backend::ipc_close(f.second);
        peer_flags_.clear();
        flags_ = Buffer<Backend, unsigned>();
        done_ = Buffer<Backend, unsigned>();
        return false;
      }
      ipc_flags_ = true;
      return true;
    } else {
      return false;
    }
  }
  // Peer copies ordered by interprocess events (setup_peers()): this rank's two events, and its neighbours' opened
  // (the neighbours do not change: once). Every rank of the plan's messages gets its handles at once.
  void open_peer_events() {
    if constexpr (IpcEvents::value) {
      using Handle = typename IpcEvents::Handle;
      std::string err = detail::error_of([&] {
        free_event_ = std::make_unique<typename IpcEvents::Own>();
        sent_event_ = std::make_unique<typename IpcEvents::Own>();
      });
      const std::vector<int> ranks = neighbour_ranks();
      Handle mine[2]{};
      if (err.empty())
        err = detail::error_of([&] {
          mine[0] = free_event_->handle();
          mine[1] = sent_event_->handle();
        });
      std::vector<Handle> theirs(2 * ranks.size());
      std::vector<MPI_Request> req(2 * ranks.size());
      for (std::size_t k = 0; k < ranks.size(); ++k) {
        MPI_Irecv(&theirs[2 * k], static_cast<int>(2 * sizeof(Handle)), MPI_BYTE, ranks[k], 70, comm_, &req[2 * k]);
        MPI_Isend(mine, static_cast<int>(sizeof mine), MPI_BYTE, ranks[k], 70, comm_, &req[2 * k + 1]);
      }
      in_mpi([&] { MPI_Waitall(static_cast<int>(req.size()), req.data(), MPI_STATUSES_IGNORE); });
      if (err.empty())
        err = detail::error_of([&] {
          for (std::size_t k = 0; k < ranks.size(); ++k) {
            PeerEvents& e = peer_events_[ranks[k]];
            e.free = std::make_unique<typename IpcEvents::Opened>(theirs[2 * k]);
            e.sent = std::make_unique<typename IpcEvents::Opened>(theirs[2 * k + 1]);
          }
        });
      detail::agree(comm_, err);
      ipc_events_ = true;
    }
  }
  // With peer copies: this rank's receive buffer for the current plan, and where each of its messages goes in the
  // receivers' buffers (a handle exchange with the neighbours).
  void set_up_peer_buffers() {
    if constexpr (Backend::device_memory && detail::HasIpc<Backend>::value) {
      if (!ipc_) return;
      // this rank's receive buffer: every message's positions, one after the other (kept, grown by half when short);
      // with flags twice, the exchanges alternating between the two (see update_ghosts_peer_flagged())
      std::size_t need = 0;
      recv_off_.clear();
      for (const HaloMessage& m : plan_) {
        recv_off_.push_back(need);
        need += static_cast<std::size_t>(Dim) * static_cast<std::size_t>(m.recv);
      }
      recv_off2_.clear();
      for (std::size_t k = 0; k < plan_.size(); ++k) recv_off2_.push_back(ipc_flags_ ? recv_off_[k] + need : 0);
      if (ipc_flags_) need *= 2;
      // (and room for a rebuild's ghosts with their ids, each side's in one half: see redistribute())
      std::size_t most = 0;
      for (const HaloMessage& m : plan_) most = std::max<std::size_t>(most, static_cast<std::size_t>(m.recv));
      const std::size_t rebuild_need = 2 * (align8(sizeof(Real) * Dim * most) + sizeof(std::uint64_t) * most);
      need = std::max(need, (rebuild_need + sizeof(Real) - 1) / sizeof(Real));
      // and at its end an inbox per neighbour that sends ghosts here, for the particles it hands over in a rebuild
      // (room for a quarter of the largest message's particles at 64 bytes each at first, or CELLINT_MPI_INBOX_BYTES;
      // twice the bytes of a group that did not fit after one did)
      inbox_of_.clear();
      for (const HaloMessage& m : plan_)
        if (m.from != MPI_PROC_NULL) inbox_of_.emplace(m.from, 0);
      const char* first = std::getenv("CELLINT_MPI_INBOX_BYTES");
      inbox_bytes_ =
          std::max({inbox_bytes_, inbox_want_,
                    align8(first ? std::strtoull(first, nullptr, 10) : 64 * std::max<std::size_t>(4096, most / 4))});
      const std::size_t tail = inbox_of_.size() * inbox_bytes_;
      need += (tail + sizeof(Real) - 1) / sizeof(Real) + 8 / sizeof(Real);
      if (ipc_recv_.size() < std::max<std::size_t>(need, 1)) {
        ipc_old_ = std::move(ipc_recv_);  // (freed at the next rebuild: the senders map the new one first)
        ipc_recv_ = Buffer<Backend, Real>(std::max<std::size_t>(need + need / 4, 1024));
        ++ipc_serial_;
      } else {
        ipc_old_ = Buffer<Backend, Real>();
      }
      ipc_ghost_bytes_ = (sizeof(Real) * ipc_recv_.size() - tail) / 8 * 8;  // (the rest: the inboxes)
      {
        std::size_t at = ipc_ghost_bytes_;
        for (auto& box : inbox_of_) {
          box.second = at;
          at += inbox_bytes_;
        }
      }
      struct Where {
        typename Backend::IpcHandle handle;
        unsigned long long offset, offset2, serial, capacity, inbox, inbox_bytes;
      };
      const Where here_base{
          Backend::ipc_handle(ipc_recv_.data()), 0, 0, ipc_serial_, ipc_ghost_bytes_, 0, inbox_bytes_};
      peer_dst_.assign(plan_.size(), nullptr);
      peer_dst2_.assign(plan_.size(), nullptr);
      std::vector<Where> here(plan_.size(), here_base), where(plan_.size());
      std::vector<MPI_Request> req(2 * plan_.size());
      for (std::size_t k = 0; k < plan_.size(); ++k) {  // (every message's at once)
        const HaloMessage& m = plan_[k];
        here[k].offset = recv_off_[k];
        here[k].offset2 = recv_off2_[k];
        if (m.from != MPI_PROC_NULL) here[k].inbox = inbox_of_.at(m.from);
        MPI_Irecv(&where[k], sizeof(Where), MPI_BYTE, m.to, 40 + static_cast<int>(k), comm_, &req[2 * k]);
        MPI_Isend(&here[k], sizeof(Where), MPI_BYTE, m.from, 40 + static_cast<int>(k), comm_, &req[2 * k + 1]);
      }
      in_mpi([&] { MPI_Waitall(static_cast<int>(req.size()), req.data(), MPI_STATUSES_IGNORE); });
      for (std::size_t k = 0; k < plan_.size(); ++k) {
        const HaloMessage& m = plan_[k];
        const Where& there = where[k];
        if (m.to == MPI_PROC_NULL) continue;
        Peer& p = peers_[m.to];
        if (p.base && p.serial != there.serial) {
          Backend::ipc_close(p.base);
          p.base = nullptr;
        }
        if (!p.base) {
          p.base = Backend::ipc_open(there.handle);
          p.serial = there.serial;
          // (CELLINT_MPI_IPC_DIRECT=0: pack here and copy, by the copy engines, even where kernels reach it)
          p.direct = Backend::ipc_reachable(p.base) && !detail::env_is("CELLINT_MPI_IPC_DIRECT", "0");
        }
        p.capacity = there.capacity;
        p.inbox = static_cast<char*>(p.base) + there.inbox;
        p.inbox_bytes = there.inbox_bytes;
        peer_dst_[k] = static_cast<Real*>(p.base) + there.offset;
        peer_dst2_[k] = static_cast<Real*>(p.base) + there.offset2;
      }
    }
  }
  // With peer copies ordered by events, update_ghosts() returns with packing into the neighbours' memory and waits
  // on their events still queued: before the buffers are unmapped and the events destroyed, this GPU finishes its
  // work and, unless an exception is unwinding (one rank alone: no message then), every neighbour says it has too.
  void quiesce_peers() noexcept {
    if (!ipc_events_ && !ipc_flags_) return;
    // (while an exception unwinds, a wait for a neighbour's flag may never be met: the neighbour may have stopped too)
    if (std::uncaught_exceptions() > 0 && ipc_flags_) return;
    try {
      Backend::synchronize();
    } catch (...) {
    }
    if (std::uncaught_exceptions() > 0) return;
    const std::vector<int> ranks = neighbour_ranks();
    std::vector<MPI_Request> req(2 * ranks.size());
    char none = 0;
    std::size_t k = 0;
    for (int r : ranks) {
      MPI_Irecv(&none, 0, MPI_BYTE, r, 71, comm_, &req[k++]);
      MPI_Isend(&none, 0, MPI_BYTE, r, 71, comm_, &req[k++]);
    }
    MPI_Waitall(static_cast<int>(req.size()), req.data(), MPI_STATUSES_IGNORE);
  }
  void close_peers() noexcept {
    if constexpr (Backend::device_memory && detail::HasIpc<Backend>::value)
      for (auto& peer : peers_) Backend::ipc_close(peer.second.base);
    if constexpr (Backend::device_memory && detail::HasIpc<Backend>::value)
      for (auto& f : peer_flags_) Backend::ipc_close(f.second);
    peer_flags_.clear();
    peers_.clear();
    peer_events_.clear();
  }
  // update_ghosts() between GPUs of one node: each rank packs its messages, and once its receivers say their buffers
  // are free, copies them straight into the receivers' GPU memory; a message of no bytes then tells each receiver that
  // its data is there. With interprocess events, update_ghosts_peer_ordered().
  // (`ahead`: as exchange_ghosts())
  template <class Started>
  void update_ghosts_peer(typename Backend::Stream stream, Started& started, int ahead) {
    if (ipc_flags_) {
      update_ghosts_peer_flagged(stream, started, ahead);
      return;
    }
    if constexpr (IpcEvents::value)
      if (ipc_events_) {
        update_ghosts_peer_ordered(stream, started, ahead);
        return;
      }
    for (std::size_t i = 0; i < plan_.size(); i += 2) {
      std::size_t send_at[3];
      axis_offsets(i, send_at);
      if (!(i == 0 && ahead == 1)) pack_axis(i, send_at, stream);
      started();                     // (the packing is enqueued)
      Backend::synchronize(stream);  // packed; and this rank's last unpacking from its buffer is done
      token(i, 50, true);            // receivers' buffers are free
      for (int k = 0; k < 2; ++k) {
        const std::size_t j = i + static_cast<std::size_t>(k);
        if (plan_[j].to != MPI_PROC_NULL && plan_[j].sends > 0)
          Backend::copy(peer_dst_[j], send_buf_.data() + send_at[k], sizeof(Real) * (send_at[k + 1] - send_at[k]),
                        CopyKind::DeviceToDevice, stream);
      }
      Backend::synchronize(stream);
      token(i, 60, false);  // the data is in the receivers' buffers
      for (std::size_t j = i; j < i + 2; ++j)
        if (plan_[j].recv > 0) unpack_peer(j, stream);
    }
  }
  // (ipc_events_) Each rank packs its messages straight into its receivers' buffers once their free events are
  // recorded (a message of no bytes says so) and passed on its stream, then records its sent event, and each receiver
  // unpacks once its senders' sent events are passed. No host waits for its GPU, so the whole exchange is enqueued
  // before meanwhile() (a vote, the interior rows) is called.
  template <class Started>
  void update_ghosts_peer_ordered(typename Backend::Stream stream, Started& started, int ahead) {
    if constexpr (IpcEvents::value) {
      // (after this rank's earlier unpacking from its buffer, on this stream or before it)
      free_event_->record(stream);
      for (std::size_t i = 0; i < plan_.size(); i += 2) {
        token(i, 50, true);  // every receiver's free event is recorded
        std::size_t send_at[3];
        axis_offsets(i, send_at);
        for (int k = 0; k < 2; ++k) {
          const std::size_t j = i + static_cast<std::size_t>(k);
          const HaloMessage& m = plan_[j];
          if (m.to == MPI_PROC_NULL || m.sends == 0) continue;
          if (m.to != rank_) peer_events_.at(m.to).free->wait(stream);
          if (i == 0 && ahead == 1)  // (packed by send_ghosts_ahead())
            Backend::copy(peer_dst_[j], send_buf_.data() + send_at[k], sizeof(Real) * (send_at[k + 1] - send_at[k]),
                          CopyKind::DeviceToDevice, stream);
          else
            pack_to_peer(j, gather_of(j, peer_dst_[j]), stream);
        }
        sent_event_->record(stream);
        token(i, 60, false);  // every sender's sent event is recorded
        for (int k = 0; k < 2; ++k) {
          const std::size_t j = i + static_cast<std::size_t>(k);
          const HaloMessage& m = plan_[j];
          if (m.recv == 0) continue;
          if (m.from != rank_) peer_events_.at(m.from).sent->wait(stream);
          unpack_peer(j, stream);
        }
      }
      started();  // (every message is on its way: nothing above waits for a GPU)
    }
  }
  // (ipc_flags_) Each rank packs its messages straight into its receivers' buffers, then a kernel stores the exchange's
  // number into each receiver's flag for the message (also for a message of no particles), and each receiver's stream
  // waits for its flags before unpacking: neither host takes part, nothing waits for a message. The exchanges
  // alternate between two halves of each receive buffer, and so need no "free" signal: a sender packs exchange k after
  // unpacking its receiver's exchange k - 1 (its stream's order), which that receiver sent after unpacking exchange
  // k - 2, the last one in the same half (every neighbour a rank sends to along an axis also sends to it). A rebuild
  // (redistribute(), exchange()) orders the ranks through the hosts.
  template <class Started>
  void update_ghosts_peer_flagged(typename Backend::Stream stream, Started& started, int ahead) {
    if constexpr (detail::HasWaitValue<Backend>::value) {
      if constexpr (detail::SideStreamOf<Backend>::value)
        if (ahead == 2) side_->join(stream);  // (the first axis's ghosts, unpacked on the side stream)
      const unsigned seq = ahead == 2 ? ahead_seq_ : ++seq_;
      for (std::size_t i = ahead == 2 ? 2 : 0; i < plan_.size(); i += 2) {
        send_axis_flagged(i, seq, stream);
        receive_axis_flagged(i, seq, stream);
      }
      started();  // (every message is on its way: nothing above waits for a GPU or a message)
    }
  }
  // (ipc_flags_) The two messages of the axis from plan_[i] packed into their receivers' buffers (the half of
  // exchange `seq`), and the receivers' flags set to seq: both messages and their flags in one kernel where this GPU
  // writes into both receivers' memory, else each message packed (and copied) on its own and the flags stored by a
  // kernel after them.
  template <class Advance = detail::AsThey>
  void send_axis_flagged(std::size_t i, unsigned seq, typename Backend::Stream stream, const Advance& advance = {}) {
    const bool second = (seq & 1u) == 0;
    detail::HaloGatherSignal<Real, Dim, Advance> g{};
    g.value = seq;
    g.done = done_.data() + i / 2;
    bool direct = true;
    for (int k = 0; k < 2; ++k) {
      const std::size_t j = i + static_cast<std::size_t>(k);
      const HaloMessage& m = plan_[j];
      if (m.to == MPI_PROC_NULL) continue;
      g.flag[k] = (m.to == rank_ ? flags_.data() : peer_flags_.at(m.to)) + j;
      g.part[k] = gather_of(j, second ? peer_dst2_[j] : peer_dst_[j], advance);
      direct = direct && (m.sends == 0 || peers_.at(m.to).direct);
    }
    if (direct) {
      const Index all = g.part[0].n + g.part[1].n;
      const Index blocks = std::max<Index>(1, (all + 255) / 256);  // (one at least: the flags)
      Backend::launch(LaunchShape{static_cast<unsigned>(blocks), 256, 0}, g, stream);
    } else {
      for (int k = 0; k < 2; ++k)
        if (g.part[k].n > 0) pack_to_peer(i + static_cast<std::size_t>(k), g.part[k], stream);
      cellint::detail::parallel_for<Backend>(2, detail::SignalKernel{{g.flag[0], g.flag[1]}, seq}, stream);
    }
  }
  // (ipc_flags_) The axis from plan_[i]: waits for its flags to reach `seq`, then unpacks both messages in one kernel.
  void receive_axis_flagged(std::size_t i, unsigned seq, typename Backend::Stream stream) {
    if constexpr (detail::HasWaitValue<Backend>::value) {
      const bool second = (seq & 1u) == 0;
      detail::HaloScatterPair<Real, Dim> sc{};
      for (int k = 0; k < 2; ++k) {
        const std::size_t j = i + static_cast<std::size_t>(k);
        if (plan_[j].from == MPI_PROC_NULL) continue;
        Backend::wait_value(stream, flags_.data() + j, seq);
        sc.part[k] = scatter_of(j, second);
      }
      const Index all = sc.part[0].n + sc.part[1].n;
      if (all > 0) cellint::detail::parallel_for<Backend>(all, sc, stream);
    }
  }
  // Packs message plan_[j] with `g` (its particles' positions, shifted) into its receiver's buffer at g.out: straight
  // there where this GPU reaches it, else here and copied.
  template <class Gather>
  void pack_to_peer(std::size_t j, Gather g, typename Backend::Stream stream) {
    const HaloMessage& m = plan_[j];
    const std::size_t count = static_cast<std::size_t>(Dim) * static_cast<std::size_t>(m.sends);
    Real* const dst = g.out;
    if (!peers_.at(m.to).direct) {
      if (send_buf_.size() < count) send_buf_.resize_with_room(count);
      g.out = send_buf_.data();
    }
    cellint::detail::parallel_for<Backend>(m.sends, g, stream);
    if (g.out != dst) Backend::copy(dst, g.out, sizeof(Real) * count, CopyKind::DeviceToDevice, stream);
  }
  // Unpacks message plan_[j] from this rank's peer receive buffer into its ghosts' positions.
  void unpack_peer(std::size_t j, typename Backend::Stream stream) {
    cellint::detail::parallel_for<Backend>(plan_[j].recv, scatter_of(j, false), stream);
  }
  // The packing of message plan_[j] into `out` (its particles' positions after `advance`, shifted).
  template <class Advance = detail::AsThey>
  detail::HaloGather<Real, Dim, Advance> gather_of(std::size_t j, Real* out, const Advance& advance = {}) const {
    const HaloMessage& m = plan_[j];
    detail::HaloGather<Real, Dim, Advance> g{{}, slots_.data() + m.send_slots, m.sends, m.axis, m.shift, out, advance};
    for (int d = 0; d < Dim; ++d) g.pos[d] = grid_->positions(d);
    return g;
  }
  // The unpacking of message plan_[j] from this rank's peer receive buffer (with flags, `second`: its second half).
  detail::HaloScatter<Real, Dim> scatter_of(std::size_t j, bool second) {
    const HaloMessage& m = plan_[j];
    detail::HaloScatter<Real, Dim> sc{
        {}, slots_.data() + m.recv_slots, m.recv, ipc_recv_.data() + (second ? recv_off2_[j] : recv_off_[j])};
    for (int d = 0; d < Dim; ++d) sc.pos[d] = grid_->positions(d);
    return sc;
  }
  // The offsets in send_buf_ (in Reals) of the two messages of the axis from plan_[i]: send_at[2] in all.
  void axis_offsets(std::size_t i, std::size_t (&send_at)[3]) const {
    send_at[0] = 0;
    for (int k = 0; k < 2; ++k)
      send_at[k + 1] = send_at[k] + static_cast<std::size_t>(Dim) * static_cast<std::size_t>(plan_[i + k].sends);
  }
  // Packs the two messages of an axis from plan_[i] (their owners' current positions, shifted) into send_buf_, at
  // the offsets send_at (in Reals; send_at[2] in all).
  template <class Advance = detail::AsThey>
  void pack_axis(std::size_t i, const std::size_t (&send_at)[3], typename Backend::Stream stream,
                 const Advance& advance = {}) {
    if (send_buf_.size() < send_at[2]) send_buf_.resize_with_room(send_at[2]);
    for (int k = 0; k < 2; ++k) {
      const std::size_t j = i + static_cast<std::size_t>(k);
      if (plan_[j].sends > 0)
        cellint::detail::parallel_for<Backend>(plan_[j].sends, gather_of(j, send_buf_.data() + send_at[k], advance),
                                               stream);
    }
  }
  // Messages of no bytes for the two messages of an axis from plan_[i]: `ready` from each receiver to its sender
  // (upstream), else from each sender to its receiver.
  void token(std::size_t i, int tag, bool ready) {
    MPI_Request req[4];
    char none = 0;
    for (int k = 0; k < 2; ++k) {
      const HaloMessage& m = plan_[i + static_cast<std::size_t>(k)];
      const int to = ready ? m.from : m.to, from = ready ? m.to : m.from;
      MPI_Irecv(&none, 0, MPI_BYTE, from, tag + k, comm_, &req[k]);
      MPI_Isend(&none, 0, MPI_BYTE, to, tag + k, comm_, &req[2 + k]);
    }
    MPI_Waitall(4, req, MPI_STATUSES_IGNORE);
  }

  MPI_Comm comm_ = MPI_COMM_NULL;
  int rank_ = 0, size_ = 1;
  Real cutoff_;  // the interaction cutoff
  Decomposition<Real, Dim> dec_;
  std::array<int, Dim> coords_{};
  std::unique_ptr<Grid> grid_;
  Particles<Real, Dim> own_, ghost_;
  std::vector<HaloMessage> plan_;                     // the last exchange()'s messages
  Buffer<Backend, Index> slots_;                      // their grid slots
  Buffer<Backend, Index> user_list_;                  // their user indices (see set_plan())
  Buffer<Backend, Index> slot_of_;                    // user index -> grid slot
  Buffer<Backend, std::uint64_t> user_id_, slot_id_;  // ids of the grid's particles, by user index and by slot
  Buffer<Backend, unsigned> words_, counts_;          // redistribute(): classification words, face counts
  Buffer<Backend, Index> keep_, leave_, select_;      // staying and leaving slots, chosen ghosts
  Buffer<Backend, int> dest_;                         // the leaving particles' new ranks
  Buffer<Backend, Real> upos_[Dim];                   // positions by user index (owned, then ghosts)
  Buffer<Backend, unsigned char> uattr_;              // carried attributes by user index, one run per attribute
  Buffer<Backend, std::uint64_t> scratch_id_;         // leaving particles' or a message's ids
  Buffer<Backend, unsigned char> scratch_;            // leaving particles' positions, ranks, ids and carried values
  std::size_t attr_cap_ = 0;                          // values per carried attribute in uattr_
  Buffer<Backend, Real> edges_;                       // sub-box edges per axis (Owners)
  std::vector<int> node_of_;                          // each rank's node (its lowest rank)
  bool ipc_ = false;                                  // update_ghosts() copies between the GPUs of one node
  bool ipc_agreed_ = false;                           // ipc_ is agreed on (setup_peers())
  Buffer<Backend, Real> ipc_recv_, ipc_old_;          // where the neighbours write this rank's ghosts' positions
  unsigned long long ipc_serial_ = 0;                 // changes when ipc_recv_ is reallocated
  std::size_t ipc_ghost_bytes_ = 0;                   // ipc_recv_'s part for ghosts (the rest: inboxes)
  std::map<int, std::size_t> inbox_of_;               // each neighbour's inbox in ipc_recv_ (bytes from its start)
  std::size_t inbox_bytes_ = 0, inbox_want_ = 0;      // an inbox's size; the size one did not fit (redistribute())
  std::vector<int> inbox_sent_, inbox_got_;           // redistribute(): particles by inbox, by rank
  std::vector<int> count_peers_;                      // count_peers(): the ranks that exchange migration counts
  std::vector<int> mig_ranks_;                        // the ranks a particle can move to in one migration
  bool groups_set_ = false;                           // mig_ranks_ and group_of_ are set
  Buffer<Backend, int> group_of_;                     // by rank: its place in mig_ranks_ (-1: none)
  Buffer<Backend, Index> grouped_;                    // redistribute(): the leaving slots, grouped by new owner
  std::vector<unsigned> words_host_;                  // redistribute(): the classification's words
  std::vector<std::size_t> recv_off_;                 // each message's place in ipc_recv_
  std::vector<std::size_t> recv_off2_;                // with flags, each message's place in the second half
  std::vector<Real*> peer_dst_, peer_dst2_;           // each message's place in its receiver's buffer (mapped here)
  struct Peer {
    void* base = nullptr;
    unsigned long long serial = 0;
    std::size_t capacity = 0;  // bytes (the ghosts' part)
    void* inbox = nullptr;     // this rank's inbox in it (redistribute()'s particles handed over)
    std::size_t inbox_bytes = 0;
    bool direct = false;       // this GPU's kernels write into it (peer to peer); else copies (ipc_reachable())
  };
  std::map<int, Peer> peers_;  // the receivers' buffers, mapped
  using IpcEvents = detail::IpcEventsOf<Backend>;
  struct PeerEvents {  // a neighbour's events, opened
    std::unique_ptr<typename IpcEvents::Opened> free, sent;
  };
  bool ipc_events_ = false;                              // peer copies ordered by interprocess events
  std::unique_ptr<typename IpcEvents::Own> free_event_;  // this rank's receive buffer is free
  std::unique_ptr<typename IpcEvents::Own> sent_event_;  // this rank's messages are in their receivers' buffers
  std::map<int, PeerEvents> peer_events_;                // the neighbours' (by rank)
  bool ipc_flags_ = false;                               // peer copies ordered by flags
  Buffer<Backend, unsigned> flags_;                      // this rank's flags, one per message of the plan
  Buffer<Backend, unsigned> done_;                       // per axis: blocks of its packing kernel done (flags)
  std::map<int, unsigned*> peer_flags_;                  // the neighbours' (by rank), mapped
  unsigned seq_ = 0;                                     // exchanges with flags so far
  int ahead_ = 0;           // send_ghosts_ahead(): 0 none; 1 the first axis packed in send_buf_; 2 sent (flags)
  unsigned ahead_seq_ = 0;  // with flags: its exchange's number
  Index resident_ = -1;  // owned particles after redistribute() (their state is in the grid only); -1: particles()
  Buffer<Backend, Real> send_buf_, recv_buf_;
  detail::HostStaging<Backend, Real> host_send_, host_recv_;  // where the MPI takes host memory only
  detail::HostStaging<Backend, unsigned char> arrivals_;      // redistribute(): the arrivals, page-locked
  detail::HostStaging<Backend, unsigned char> leaving_host_;  // redistribute(): the leaving particles, page-locked
  Particles<Real, Dim> leaving_, arrived_;                    // redistribute(): those on the host (memory kept)
  std::vector<int> leaving_dest_;                             // redistribute(): the leaving particles' new ranks
  mutable std::vector<unsigned char> send_records_, recv_records_;  // to_owners()' messages (memory kept)
  using Side = typename detail::SideStreamOf<Backend>::type;
  std::unique_ptr<Side> side_;  // update_ghosts(meanwhile)'s stream (GPU backends)
  bool profile_ = false;        // profile()
  mutable RebuildTimes times_;  // (in_mpi() adds to it from const members)
  mutable int part_ = 4;        // the part of redistribute() under way (RebuildTimes::in_mpi; 4: none)
};

}  // namespace cellint::mpi
