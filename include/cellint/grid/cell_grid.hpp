#pragma once
/// @file
/// CellGrid: owns particles as sorted structure-of-arrays buffers binned into a regular cell grid.

#include <array>
#include <climits>
#include <cmath>
#include <cstdint>
#include <vector>

#include "cellint/backend/buffer.hpp"
#include "cellint/core/error.hpp"
#include "cellint/core/grid_geometry.hpp"
#include "cellint/grid/detail/binning.hpp"
#include "cellint/grid/grid_view.hpp"

namespace cellint {

/// Particles binned into the cells of a regular grid over a Box, on one backend.
///
/// Binning follows the paper's section 2: cell index per particle (x-fastest cell order, so an
/// X-pencil of cells is one contiguous particle range) -> count per cell (atomics) -> exclusive
/// scan -> scatter into sorted SoA buffers. The grid keeps the permutation (sorted slot ->
/// original index), the per-cell offsets and M_C, the largest particle count of any cell.
/// Attached attributes (mass, velocity, ...) are permuted together with the positions.
///
/// All members synchronise with the host unless their name ends in `_async`.
///
/// @tparam Backend Host, Emulated, Cuda or Hip
/// @tparam Real    float or double: the type of positions
/// @tparam Dim     2 or 3
template <class Backend, class Real, int Dim>
class CellGrid {
  static_assert(Dim == 2 || Dim == 3, "cellint::CellGrid: Dim must be 2 or 3");
  static_assert(std::is_floating_point<Real>::value, "cellint::CellGrid: Real must be float or double");

 public:
  using backend_type = Backend;  ///< the backend
  using real_type = Real;        ///< position type
  static constexpr int dim = Dim;  ///< dimension
  using Stream = typename Backend::Stream;  ///< backend stream
  using View = GridView<Real, Dim>;         ///< what kernels see

  /// A grid over `box` whose cells are at least `cutoff` wide (and GridOptions::min_cell_width).
  /// @throws InvalidArgument for a non-positive cutoff, a cutoff larger than an open axis, or a
  ///         periodic axis with room for fewer than 3 cells.
  CellGrid(const Box<Real, Dim>& box, Real cutoff, const GridOptions<Real>& opts = {}, Stream s = {})
      : geo_(make_geometry(box, cutoff, opts.min_cell_width)), opts_(opts), stream_(s) {
    const auto nc = static_cast<std::size_t>(geo_.cell_count());
    start_.resize(nc + 1);
    count_.resize(nc + 1);
    scalars_.resize(2);
    start_.fill_bytes(0, stream_);
  }
  CellGrid(const CellGrid&) = delete;
  CellGrid& operator=(const CellGrid&) = delete;
  CellGrid(CellGrid&&) noexcept = default;
  CellGrid& operator=(CellGrid&&) noexcept = default;

  /// Bins `n` particles whose coordinates are host arrays `xyz[d][i]` (user order). Positions on
  /// periodic axes are wrapped into the box; a particle exactly on the upper face of an open axis
  /// belongs to the last cell.
  /// @throws NonFinitePosition naming the first particle with a NaN or infinite coordinate
  /// @throws OutsideBox naming the first particle outside an open axis
  void build(const std::array<const Real*, Dim>& xyz, Index n) {
    CELLINT_EXPECTS(n >= 0, "cellint::CellGrid::build: particle count must be >= 0, got ", n);
    resize_particles(n);
    for (int d = 0; d < Dim; ++d)
      if (n) Backend::copy(pos_alt_[d].data(), xyz[d], sizeof(Real) * n, CopyKind::HostToDevice, stream_);
    bin(false);
  }
  /// Same as build(), from host vectors.
  void build(const std::array<std::vector<Real>, Dim>& xyz) {
    std::array<const Real*, Dim> p;
    for (int d = 0; d < Dim; ++d) {
      CELLINT_EXPECTS(xyz[d].size() == xyz[0].size(), "cellint::CellGrid::build: coordinate arrays differ in length");
      p[d] = xyz[d].data();
    }
    build(p, static_cast<Index>(xyz[0].size()));
  }
  /// Same as build(), from backend (device) arrays.
  void build_from_backend(const std::array<const Real*, Dim>& xyz, Index n) {
    resize_particles(n);
    for (int d = 0; d < Dim; ++d)
      if (n) Backend::copy(pos_alt_[d].data(), xyz[d], sizeof(Real) * n, CopyKind::DeviceToDevice, stream_);
    bin(false);
  }
  /// Re-bins after the sorted positions (positions(d)) were moved in place, e.g. by an
  /// integrator. The permutation and attributes follow.
  void rebuild() {
    for (int d = 0; d < Dim; ++d) std::swap(pos_[d], pos_alt_[d]);
    std::swap(id_, id_alt_);
    bin(true);
  }

  /// Attaches an attribute (one `T` per particle, host array in the user's original order) that is
  /// permuted with the positions; returns its handle k, read in functors as view.attribute<T>(k).
  /// Call after build().
  template <class T>
  int attach(const T* host_values) {
    static_assert(std::is_trivially_copyable<T>::value, "cellint: attributes must be trivially copyable");
    CELLINT_EXPECTS(built_, "cellint::CellGrid::attach: call build() first (attributes are given in the "
                    "user's order and permuted with the particles)");
    CELLINT_EXPECTS(attrs_.size() < static_cast<std::size_t>(max_attributes),
                    "cellint::CellGrid::attach: at most ", max_attributes, " attributes");
    Attribute a;
    a.elem = sizeof(T);
    a.gather = &detail::gather_bytes<Backend, T>;
    a.data.resize(sizeof(T) * std::max<Index>(n_, 1));
    a.alt.resize(sizeof(T) * std::max<Index>(n_, 1));
    if (n_) {
      Backend::copy(a.alt.data(), host_values, sizeof(T) * n_, CopyKind::HostToDevice, stream_);
      // sorted slot s takes the user's element original[s]
      a.gather(a.data.data(), a.alt.data(), id_.data(), n_, stream_);
    }
    attrs_.push_back(std::move(a));
    return static_cast<int>(attrs_.size()) - 1;
  }
  /// Attribute k in sorted order (backend pointer, writable).
  template <class T>
  T* attribute(int k) {
    check_attr<T>(k);
    return reinterpret_cast<T*>(attrs_[k].data.data());
  }
  /// Attribute k in sorted order (backend pointer).
  template <class T>
  const T* attribute(int k) const {
    check_attr<T>(k);
    return reinterpret_cast<const T*>(attrs_[k].data.data());
  }

  /// Copies per-particle values from sorted order (backend array) to the user's original order (host).
  template <class T>
  void to_user_order(const T* sorted_backend, T* user_host) const {
    if (!n_) return;
    Buffer<Backend, T> tmp(n_);
    detail::parallel_for<Backend>(n_, detail::ScatterKernel<T>{sorted_backend, id_.data(), tmp.data()}, stream_);
    tmp.download(user_host, stream_);
  }
  /// Returns a host vector in the user's original order from a sorted backend array.
  template <class T>
  std::vector<T> to_user_order(const T* sorted_backend) const {
    std::vector<T> h(static_cast<std::size_t>(n_));
    to_user_order(sorted_backend, h.data());
    return h;
  }
  /// Copies per-particle values from the user's original order (host) into sorted order (backend).
  template <class T>
  void from_user_order(const T* user_host, T* sorted_backend) const {
    if (!n_) return;
    Buffer<Backend, T> tmp(n_);
    tmp.upload(user_host, stream_);
    detail::parallel_for<Backend>(n_, detail::GatherKernel<T>{tmp.data(), id_.data(), sorted_backend}, stream_);
    Backend::synchronize(stream_);
  }
  /// The positions along each axis in the user's original order (wrapped into the box).
  std::array<std::vector<Real>, Dim> positions_user_order() const {
    std::array<std::vector<Real>, Dim> r;
    for (int d = 0; d < Dim; ++d) r[d] = to_user_order(pos_[d].data());
    return r;
  }

  /// Number of particles.
  Index size() const { return n_; }
  /// Number of cells.
  Index cell_count() const { return geo_.cell_count(); }
  /// M_C: the largest number of particles in one cell.
  Index max_per_cell() const { return max_per_cell_; }
  /// Geometry (cells per axis, widths, box, cutoff).
  const GridGeometry<Real, Dim>& geometry() const { return geo_; }
  /// The interaction cutoff.
  Real cutoff() const { return geo_.cutoff; }
  /// Grid options.
  const GridOptions<Real>& options() const { return opts_; }
  /// Backend stream the grid works on.
  Stream stream() const { return stream_; }
  /// Sorted positions along axis d (backend pointer, writable; call rebuild() after moving them).
  Real* positions(int d) { return pos_[d].data(); }
  /// Sorted positions along axis d (backend pointer).
  const Real* positions(int d) const { return pos_[d].data(); }
  /// cell_start: size cell_count()+1; cell c holds slots [start[c], start[c+1]) (backend pointer).
  const Index* cell_start() const { return reinterpret_cast<const Index*>(start_.data()); }
  /// Sorted slot -> index in the user's original order (backend pointer).
  const Index* original_index() const { return id_.data(); }
  /// The view that kernels and functors receive.
  View view() const {
    View v{};
    v.geo = geo_;
    for (int d = 0; d < Dim; ++d) v.pos[d] = pos_[d].data();
    v.cell_start = cell_start();
    v.original = id_.data();
    v.n = n_;
    v.max_per_cell = max_per_cell_;
    for (std::size_t k = 0; k < attrs_.size(); ++k) v.attr[k] = attrs_[k].data.data();
    return v;
  }

 private:
  struct Attribute {
    std::size_t elem = 0;
    void (*gather)(void*, const void*, const Index*, Index, Stream) = nullptr;
    Buffer<Backend, unsigned char> data, alt;
  };

  template <class T>
  void check_attr(int k) const {
    CELLINT_EXPECTS(k >= 0 && k < static_cast<int>(attrs_.size()), "cellint::CellGrid::attribute: no attribute ", k);
    CELLINT_EXPECTS(attrs_[k].elem == sizeof(T), "cellint::CellGrid::attribute: attribute ", k, " has elements of ",
                    attrs_[k].elem, " bytes, asked for ", sizeof(T));
  }

  void resize_particles(Index n) {
    n_ = n;
    built_ = true;
    const std::size_t m = static_cast<std::size_t>(std::max<Index>(n, 1));
    for (int d = 0; d < Dim; ++d) {
      pos_[d].resize(m);
      pos_alt_[d].resize(m);
    }
    id_.resize(m);
    id_alt_.resize(m);
    cell_of_.resize(m);
    rank_.resize(m);
    src_.resize(m);
    for (auto& a : attrs_) {
      a.data.resize(a.elem * m);
      a.alt.resize(a.elem * m);
    }
  }

  // Bins pos_alt_ (ids id_alt_ when `have_ids`, else identity) into pos_ / id_ and permutes attributes.
  void bin(bool have_ids) {
    const Index nc = geo_.cell_count();
    const Index n = n_;
    count_.fill_bytes(0, stream_);
    std::uint32_t init[2] = {static_cast<std::uint32_t>(INT_MAX), 0u};
    scalars_.upload(init, stream_);
    int* bad = reinterpret_cast<int*>(scalars_.data());
    const Index* in_id = have_ids ? id_alt_.data() : nullptr;
    std::array<const Real*, Dim> in{};
    std::array<Real*, Dim> out{};
    for (int d = 0; d < Dim; ++d) {
      in[d] = pos_alt_[d].data();
      out[d] = pos_[d].data();
    }
    if (n) {
      detail::GridCellIndex<Real, Dim> k{geo_, {}, cell_of_.data(), rank_.data(), count_.data(), bad};
      for (int d = 0; d < Dim; ++d) k.x[d] = in[d];
      detail::parallel_for<Backend>(n, k, stream_);
      std::uint32_t h[2];
      scalars_.download(h, stream_);
      if (h[0] != static_cast<std::uint32_t>(INT_MAX)) report_bad(static_cast<Index>(h[0]), in, in_id);
    }
    Backend::exclusive_scan(count_.data(), start_.data(), nc + 1, stream_);
    detail::parallel_for<Backend>(nc, detail::GridMaxCount{count_.data(), scalars_.data() + 1}, stream_);
    if (n) {
      if (opts_.stable) {
        // Order inside a cell = order of the original index: a stable radix sort by cell of the
        // particles listed in original order.
        Buffer<Backend, Index> order(n);
        Buffer<Backend, std::uint32_t> keys(n);
        if (have_ids) {
          Buffer<Backend, Index> inv(n), vals(n);
          detail::parallel_for<Backend>(n, detail::ScatterKernel<std::uint32_t>{cell_of_.data(), in_id, keys.data()}, stream_);
          detail::parallel_for<Backend>(n, detail::InverseKernel{in_id, inv.data()}, stream_);
          detail::parallel_for<Backend>(n, detail::IotaKernel{vals.data()}, stream_);
          Backend::sort_pairs(keys.data(), vals.data(), n, key_bits(nc), stream_);
          // vals[s] is an original index; inv maps it to its input position
          detail::parallel_for<Backend>(n, detail::GatherKernel<Index>{inv.data(), vals.data(), order.data()}, stream_);
        } else {
          Backend::copy(keys.data(), cell_of_.data(), sizeof(std::uint32_t) * n, CopyKind::DeviceToDevice, stream_);
          detail::parallel_for<Backend>(n, detail::IotaKernel{order.data()}, stream_);
          Backend::sort_pairs(keys.data(), order.data(), n, key_bits(nc), stream_);
        }
        detail::GridGather<Real, Dim> k{geo_, {}, in_id, order.data(), {}, id_.data(), src_.data()};
        for (int d = 0; d < Dim; ++d) {
          k.x[d] = in[d];
          k.out[d] = out[d];
        }
        detail::parallel_for<Backend>(n, k, stream_);
      } else {
        detail::GridScatter<Real, Dim> k{geo_, {}, in_id, cell_of_.data(), rank_.data(), start_.data(), {}, id_.data(), src_.data()};
        for (int d = 0; d < Dim; ++d) {
          k.x[d] = in[d];
          k.out[d] = out[d];
        }
        detail::parallel_for<Backend>(n, k, stream_);
      }
      for (auto& a : attrs_) {
        std::swap(a.data, a.alt);
        a.gather(a.data.data(), a.alt.data(), src_.data(), n, stream_);
      }
    }
    std::uint32_t h[2];
    scalars_.download(h, stream_);
    max_per_cell_ = static_cast<Index>(h[1]);
  }

  static int key_bits(Index nc) {
    int b = 1;
    while (b < 32 && (std::uint64_t(1) << b) <= static_cast<std::uint64_t>(nc)) ++b;
    return b;
  }

  [[noreturn]] void report_bad(Index i, const std::array<const Real*, Dim>& in, const Index* in_id) const {
    Real x[Dim];
    for (int d = 0; d < Dim; ++d) Backend::copy(&x[d], in[d] + i, sizeof(Real), CopyKind::DeviceToHost, stream_);
    Index id = i;
    if (in_id) Backend::copy(&id, in_id + i, sizeof(Index), CopyKind::DeviceToHost, stream_);
    static const char* axis[3] = {"x", "y", "z"};
    std::string where = detail::cat("cellint: particle ", id, " at (");
    for (int d = 0; d < Dim; ++d) where += detail::cat(d ? ", " : "", x[d]);
    where += ")";
    for (int d = 0; d < Dim; ++d)
      if (!std::isfinite(x[d]))
        throw NonFinitePosition(where + detail::cat(": coordinate ", axis[d],
                                                    " is not finite; fix the input (in a simulation this "
                                                    "usually means the time step is too large)"));
    for (int d = 0; d < Dim; ++d) {
      const Real lo = geo_.box.origin[d], hi = lo + geo_.box.lengths[d];
      if (x[d] < lo || x[d] > hi)
        throw OutsideBox(where + detail::cat(" is outside the open box along ", axis[d], " [", lo, ", ", hi,
                                             "]; enlarge the box, make the axis periodic, or remove the particle"));
    }
    throw Error(where + ": rejected by binning");
  }

  GridGeometry<Real, Dim> geo_;
  GridOptions<Real> opts_;
  Stream stream_;
  Index n_ = 0;
  Index max_per_cell_ = 0;
  bool built_ = false;
  std::array<Buffer<Backend, Real>, Dim> pos_, pos_alt_;
  Buffer<Backend, Index> id_, id_alt_, src_;
  Buffer<Backend, std::uint32_t> start_, count_, cell_of_, rank_, scalars_;
  std::vector<Attribute> attrs_;
};

}  // namespace cellint
