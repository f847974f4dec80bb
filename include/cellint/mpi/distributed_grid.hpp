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
/// This version stages on the host: particles() lives in host memory, exchange() rebuilds the rank's grid from it, and
/// the messages are host buffers (MPI_Sendrecv along each split axis in turn, so that corner ghosts travel through the
/// faces; migration by MPI_Alltoallv). It runs with every backend; on GPUs the whole own set crosses PCIe once per
/// exchange.
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

/// Runs `work` and turns what it throws into an agreed error (see agree()).
template <class Work>
void agreed(MPI_Comm comm, Work&& work) {
  std::string err;
  try {
    work();
  } catch (const std::exception& e) {
    err = e.what();
    if (err.empty()) err = "cellint::mpi: an error without a message";
  }
  agree(comm, err);
}

/// Halo packing on the backend: out[d * n + j] = position d of slot `slot[j]`, plus `shift` along `axis`.
template <class Real, int Dim>
struct HaloGather {
  const Real* pos[Dim];
  const Index* slot;
  Index n;
  int axis;
  Real shift;
  Real* out;
  template <class A>
  CELLINT_HD void operator()(A&, Index j) const {
    const Index i = slot[j];
    for (int d = 0; d < Dim; ++d) out[static_cast<std::size_t>(d) * n + j] = pos[d][i] + (d == axis ? shift : Real(0));
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
  /// @throws InvalidArgument on every rank for a NaN or infinite position, a particle outside an open box, or one that
  /// moved too far
  void migrate(bool anywhere = false) {
    const std::size_t n = own_.size();
    const int nf = own_.fields;
    std::vector<int> dest(n);
    std::string err;
    for (std::size_t i = 0; i < n && err.empty(); ++i) {
      std::array<int, Dim> c{};
      for (int d = 0; d < Dim; ++d) {
        Real& xd = own_.x[d][i];
        if (!std::isfinite(static_cast<double>(xd))) {
          err = cellint::detail::cat("cellint::mpi: particle ", own_.id[i], " has a non-finite position (", xd,
                                     " along axis ", d, "); check the integrator's time step and forces");
          break;
        }
        xd = dec_.wrap(d, xd);
        c[d] = dec_.coord_of(d, xd);
        if (c[d] < 0) {
          err = cellint::detail::cat("cellint::mpi: particle ", own_.id[i], " is at ", xd, " along axis ", d,
                                     ", outside the open box [", dec_.global.origin[d], ", ",
                                     dec_.global.origin[d] + dec_.global.lengths[d],
                                     "); make the axis periodic or the box larger");
          break;
        }
        if (!anywhere && !adjacent(d, coords_[d], c[d])) {
          err = cellint::detail::cat("cellint::mpi: particle ", own_.id[i], " moved from sub-box ", coords_[d], " to ",
                                     c[d], " along axis ", d,
                                     " since the last migration, more than one sub-box; migrate every step, shorten "
                                     "the time step or use fewer ranks along that axis");
          break;
        }
      }
      if (err.empty()) dest[i] = dec_.rank_of(c);
    }
    detail::agree(comm_, err);
    // counts, then ids, positions and fields by MPI_Alltoallv
    std::vector<int> send_count(static_cast<std::size_t>(size_), 0), recv_count(send_count.size());
    for (int r : dest) ++send_count[static_cast<std::size_t>(r)];
    MPI_Alltoall(send_count.data(), 1, MPI_INT, recv_count.data(), 1, MPI_INT, comm_);
    std::vector<int> send_at(send_count.size() + 1, 0), recv_at(recv_count.size() + 1, 0);
    for (std::size_t r = 0; r < send_count.size(); ++r) {
      send_at[r + 1] = send_at[r] + send_count[r];
      recv_at[r + 1] = recv_at[r] + recv_count[r];
    }
    std::vector<std::size_t> order(n);  // particles grouped by destination, in their order
    {
      std::vector<int> fill(send_at.begin(), send_at.end() - 1);
      for (std::size_t i = 0; i < n; ++i)
        order[static_cast<std::size_t>(fill[static_cast<std::size_t>(dest[i])]++)] = i;
    }
    const std::size_t m = static_cast<std::size_t>(recv_at.back());
    Particles<Real, Dim> in;
    in.fields = nf;
    in.id.resize(m);
    alltoallv(own_.id, order, 1, send_count, send_at, in.id, recv_count, recv_at);
    for (int d = 0; d < Dim; ++d) {
      in.x[d].resize(m);
      alltoallv(own_.x[d], order, 1, send_count, send_at, in.x[d], recv_count, recv_at);
    }
    if (nf > 0) {
      in.field.resize(m * static_cast<std::size_t>(nf));
      alltoallv(own_.field, order, nf, send_count, send_at, in.field, recv_count, recv_at);
    }
    own_ = std::move(in);
  }

  /// Fills the ghost layer from the neighbours (positions, ids and fields) and rebuilds the grid over the owned
  /// particles and the ghosts (collective). The grid's attributes are dropped: attach them again (attach_field()).
  void exchange() {
    ghost_.clear();
    ghost_.fields = own_.fields;
    std::vector<HaloMessage> plan;
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
              msg.send.push_back(static_cast<Index>(base + i));
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
        plan.push_back(std::move(msg));
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
      set_plan(std::move(plan));
    });
  }

  /// Sends the ghosts of the last exchange() again, at their owners' current positions in the grid (backend, slot
  /// order): between neighbour-list rebuilds a simulation moves the grid's positions in place, and while no particle
  /// has moved more than half the skin the same particles make up the ghost layer, so that only positions need to
  /// travel (LAMMPS's forward communication). Packing and unpacking run on the backend; the messages go from device
  /// memory where the MPI accepts device pointers (and from host memory on the Host and Emulated backends), else
  /// through host buffers. Collective; ghosts' slots keep their order, so lists and attributes stay valid.
  void update_ghosts() {
    const auto stream = grid_->stream();
    const bool direct = !Backend::device_memory || detail::mpi_accepts_device_pointers();
    for (const HaloMessage& m : plan_) {
      const Index ns = static_cast<Index>(m.send.size()), nr = m.recv;
      if (send_buf_.size() < static_cast<std::size_t>(Dim) * ns) send_buf_.resize(static_cast<std::size_t>(Dim) * ns);
      if (recv_buf_.size() < static_cast<std::size_t>(Dim) * nr) recv_buf_.resize(static_cast<std::size_t>(Dim) * nr);
      if (ns > 0) {
        detail::HaloGather<Real, Dim> k{{}, slots_.data() + m.send_slots, ns, m.axis, m.shift, send_buf_.data()};
        for (int d = 0; d < Dim; ++d) k.pos[d] = grid_->positions(d);
        cellint::detail::parallel_for<Backend>(ns, k, stream);
      }
      const int cs = Dim * static_cast<int>(ns), cr = Dim * static_cast<int>(nr);
      if (direct) {
        Backend::synchronize(stream);
        MPI_Sendrecv(send_buf_.data(), cs, detail::datatype<Real>(), m.to, m.tag, recv_buf_.data(), cr,
                     detail::datatype<Real>(), m.from, m.tag, comm_, MPI_STATUS_IGNORE);
      } else {
        host_send_.resize(static_cast<std::size_t>(cs));
        host_recv_.resize(static_cast<std::size_t>(cr));
        Backend::copy(host_send_.data(), send_buf_.data(), sizeof(Real) * host_send_.size(), CopyKind::DeviceToHost,
                      stream);
        MPI_Sendrecv(host_send_.data(), cs, detail::datatype<Real>(), m.to, m.tag, host_recv_.data(), cr,
                     detail::datatype<Real>(), m.from, m.tag, comm_, MPI_STATUS_IGNORE);
        Backend::copy(recv_buf_.data(), host_recv_.data(), sizeof(Real) * host_recv_.size(), CopyKind::HostToDevice,
                      stream);
      }
      if (nr > 0) {
        detail::HaloScatter<Real, Dim> k{{}, slots_.data() + m.recv_slots, nr, recv_buf_.data()};
        for (int d = 0; d < Dim; ++d) k.pos[d] = grid_->positions(d);
        cellint::detail::parallel_for<Backend>(nr, k, stream);
      }
    }
  }

  /// The owned particles' values of a per-slot backend array of the grid (an attribute, a result), in particles()
  /// order, on the host: for bringing a simulation's state back before migrate().
  template <class T>
  std::vector<T> owned_values(const T* sorted_backend) const {
    std::vector<T> v = grid_->to_user_order(sorted_backend);
    v.resize(own_.size());
    return v;
  }
  /// Copies the owned particles' positions from the grid (as an integrator left them on the backend) into
  /// particles().x, before migrate().
  void pull_positions() {
    for (int d = 0; d < Dim; ++d) own_.x[d] = owned_values(static_cast<const Real*>(grid_->positions(d)));
  }

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
      all.resize(own_.size());
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
  std::uint64_t global_count() const { return sum<std::uint64_t>(own_.size()); }
  /// One value per owned particle (in particles() order) from every rank, by id, on rank 0 (collective; empty on the
  /// other ranks). For output and checks: it brings the whole system to one rank. T: trivially copyable.
  template <class T>
  std::map<std::uint64_t, T> gather(const std::vector<T>& values) const {
    static_assert(std::is_trivially_copyable<T>::value, "cellint::mpi: gather() copies values as bytes");
    const int n = static_cast<int>(own_.size());
    std::vector<int> counts(static_cast<std::size_t>(size_)), at(static_cast<std::size_t>(size_) + 1, 0);
    MPI_Gather(&n, 1, MPI_INT, counts.data(), 1, MPI_INT, 0, comm_);
    for (int r = 0; r < size_; ++r) at[static_cast<std::size_t>(r) + 1] = at[static_cast<std::size_t>(r)] + counts[r];
    std::vector<std::uint64_t> ids(static_cast<std::size_t>(at.back()));
    MPI_Gatherv(own_.id.data(), n, MPI_UINT64_T, ids.data(), counts.data(), at.data(), MPI_UINT64_T, 0, comm_);
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
  // whether sub-box c2 is c1 or a neighbour of it along axis d (through the periodic boundary too)
  bool adjacent(int d, int c1, int c2) const {
    const int p = dec_.ranks[d];
    int diff = std::abs(c1 - c2);
    if (dec_.global.periodic[d]) diff = std::min(diff, p - diff);
    return diff <= 1;
  }
  template <class T>
  void alltoallv(const std::vector<T>& src, const std::vector<std::size_t>& order, int per, std::vector<int> scount,
                 std::vector<int> sat, std::vector<T>& dst, std::vector<int> rcount, std::vector<int> rat) const {
    std::vector<T> packed(order.size() * static_cast<std::size_t>(per));
    for (std::size_t j = 0; j < order.size(); ++j)
      for (int e = 0; e < per; ++e)
        packed[j * static_cast<std::size_t>(per) + static_cast<std::size_t>(e)] =
            src[order[j] * static_cast<std::size_t>(per) + static_cast<std::size_t>(e)];
    for (auto* v : {&scount, &sat, &rcount, &rat})
      for (int& c : *v) c *= per;
    MPI_Alltoallv(packed.data(), scount.data(), sat.data(), detail::datatype<T>(), dst.data(), rcount.data(),
                  rat.data(), detail::datatype<T>(), comm_);
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

  // One message of the ghost exchange: what goes to `to` (indices into owned then ghost particles, in user order),
  // and where what comes from `from` lands.
  struct HaloMessage {
    int axis = 0, to = MPI_PROC_NULL, from = MPI_PROC_NULL, tag = 0;
    Real shift = 0;
    std::vector<Index> send;                     // user indices (owned particles, then ghosts)
    Index recv_at = 0, recv = 0;                 // the received ghosts' user indices: recv_at .. recv_at + recv - 1
    std::size_t send_slots = 0, recv_slots = 0;  // offsets of their grid slots in slots_
  };
  // Keeps the exchange's messages with their particles' grid slots on the backend (after the grid's build).
  void set_plan(std::vector<HaloMessage> plan) {
    const Index total = grid_->size();
    std::vector<Index> slot_of(static_cast<std::size_t>(total)), by_slot(static_cast<std::size_t>(total));
    if (total > 0)
      Backend::copy(by_slot.data(), grid_->original_index(), sizeof(Index) * by_slot.size(), CopyKind::DeviceToHost,
                    grid_->stream());
    for (Index s = 0; s < total; ++s) slot_of[static_cast<std::size_t>(by_slot[static_cast<std::size_t>(s)])] = s;
    std::vector<Index> slots;
    for (HaloMessage& m : plan) {
      m.send_slots = slots.size();
      for (Index u : m.send) slots.push_back(slot_of[static_cast<std::size_t>(u)]);
      m.recv_slots = slots.size();
      for (Index j = 0; j < m.recv; ++j) slots.push_back(slot_of[static_cast<std::size_t>(m.recv_at + j)]);
    }
    slots_.resize(std::max<std::size_t>(slots.size(), 1));
    if (!slots.empty()) slots_.upload(slots.data(), grid_->stream());
    plan_ = std::move(plan);
  }

  MPI_Comm comm_ = MPI_COMM_NULL;
  int rank_ = 0, size_ = 1;
  Real cutoff_;  // the interaction cutoff
  Decomposition<Real, Dim> dec_;
  std::array<int, Dim> coords_{};
  std::unique_ptr<Grid> grid_;
  Particles<Real, Dim> own_, ghost_;
  std::vector<HaloMessage> plan_;  // the last exchange()'s messages
  Buffer<Backend, Index> slots_;   // their grid slots
  Buffer<Backend, Real> send_buf_, recv_buf_;
  std::vector<Real> host_send_, host_recv_;  // staging where the MPI takes host memory only
};

}  // namespace cellint::mpi
