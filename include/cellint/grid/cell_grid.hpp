#pragma once
/// @file
/// CellGrid: owns particles as sorted structure-of-arrays buffers binned into a regular cell grid.

#include <algorithm>
#include <array>
#include <atomic>
#include <climits>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <string>
#include <type_traits>
#include <typeinfo>
#include <vector>

#include "cellint/backend/buffer.hpp"
#include "cellint/core/error.hpp"
#include "cellint/core/grid_geometry.hpp"
#include "cellint/grid/detail/binning.hpp"
#include "cellint/grid/grid_view.hpp"

namespace cellint {

namespace detail {
/// A process-wide serial number per grid, so that an Attribute handle names its grid.
inline std::uint32_t next_grid_serial() {
  static std::atomic<std::uint32_t> next{1};
  return next.fetch_add(1, std::memory_order_relaxed);
}
/// FNV-1a hash of a type's name and size: the `type` field of Attribute handles.
template <class T>
std::uint32_t attribute_type_hash() {
  std::uint32_t h = 2166136261u ^ static_cast<std::uint32_t>(sizeof(T));
  for (const char* c = typeid(T).name(); *c; ++c) h = (h ^ static_cast<unsigned char>(*c)) * 16777619u;
  return h == 0 ? 1u : h;
}
/// Checks that a caller's array of `have` elements holds the `n` particles of a grid.
inline void expect_room(std::size_t have, Index n, const char* who, const char* what) {
  CELLINT_EXPECTS(have >= static_cast<std::size_t>(n), "cellint::", who, ": ", what, " holds ", have,
                  " elements, the grid has ", n, " particles; size it to grid.size()");
}
/// out[index[s]] = in[s] for elements of type T (type-erased; the inverse of gather_bytes).
template <class Backend, class T>
void scatter_bytes(void* dst, const void* src, const Index* index, Index n, typename Backend::Stream s) {
  parallel_for<Backend>(n, ScatterKernel<T>{static_cast<const T*>(src), index, static_cast<T*>(dst)}, s);
}
}  // namespace detail

/// Particles binned into the cells of a regular grid over a Box, on one backend.
///
/// Binning follows the paper's section 2: cell index per particle (x-fastest cell order, so an X-pencil of cells is one
/// contiguous particle range) -> count per cell (atomics) -> exclusive scan -> scatter into sorted SoA buffers. The
/// grid keeps the permutation (sorted slot -> original index), the per-cell offsets and M_C, the largest particle count
/// of any cell. Attached attributes (mass, velocity, ...) are permuted together with the positions.
///
/// All members synchronise with the host unless their name ends in `_async`.
///
/// Order of calls: build() first; then attach(), rebuild(), interact() and the order helpers, in any order. Each of
/// them called before the first successful build() throws InvalidArgument.
///
/// Attributes across builds: attributes belong to particles by their index in the user's order. A later build() with
/// the same particle count keeps every attribute with the particle of the same index (as if attached again from the
/// same user-order array); a build() with another count drops all attributes (their handles become invalid and are
/// rejected with a message saying so; attach them again). rebuild() permutes them with the positions.
///
/// Exception guarantees:
/// - build(): on any exception the grid is not built (built() is false, size() is 0) until a build() succeeds; attached
///   attributes are kept for a build() with the same count.
/// - rebuild(): NonFinitePosition and OutsideBox leave the grid exactly as before the call (positions, permutation,
///   cells, attributes): repair the positions (e.g. with from_user_order()) and call rebuild() again. Any other
///   exception (a GPU failure, out of memory) leaves the grid not built, attributes kept: call build() again.
/// - attach(), to_user_order(), from_user_order(): the grid is unchanged when they throw.
///
/// @tparam Backend Host, Emulated, Cuda or Hip
/// @tparam Real    float or double: the type of positions
/// @tparam Dim     2 or 3
template <class Backend, class Real, int Dim>
class CellGrid {
  CELLINT_REQUIRE_BACKEND(Backend);
  static_assert(Dim == 2 || Dim == 3, "cellint::CellGrid: Dim must be 2 or 3");
  static_assert(std::is_floating_point<Real>::value, "cellint::CellGrid: Real must be float or double");

 public:
  using backend_type = Backend;             ///< the backend
  using real_type = Real;                   ///< position type
  static constexpr int dim = Dim;           ///< dimension
  using Stream = typename Backend::Stream;  ///< backend stream
  using View = GridView<Real, Dim>;         ///< what kernels see

  /// A grid over `box` whose cells are at least `cutoff` wide (and GridOptions::min_cell_width).
  /// @throws InvalidArgument for a non-positive cutoff, a cutoff larger than an open axis, or a periodic axis with room
  ///         for fewer than 3 cells.
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
  /// Takes over another grid's buffers; the moved-from grid may only be destroyed or assigned to.
  CellGrid(CellGrid&&) noexcept = default;
  /// Takes over another grid's buffers; the moved-from grid may only be destroyed or assigned to.
  CellGrid& operator=(CellGrid&&) noexcept = default;

  /// The largest particle count a grid holds: particle indices are 32-bit, and room is left so that the kernels'
  /// grid-stride indices cannot overflow. Memory is usually the tighter limit (about 44 bytes a particle in 3D float,
  /// before attributes and results).
  static constexpr Index max_size() { return INT32_MAX - (Index(1) << 25); }

  /// Bins `n` particles whose coordinates are host arrays `xyz[d][i]` (user order). Positions on periodic axes are
  /// wrapped into the box; a particle exactly on the upper face of an open axis belongs to the last cell. `n` may be of
  /// any integer type; it is checked against max_size().
  /// @throws NonFinitePosition naming the first particle with a NaN or infinite coordinate
  /// @throws OutsideBox naming the first particle outside an open axis
  /// @throws InvalidArgument for a negative count or one above max_size()
  template <class Count, std::enable_if_t<std::is_integral<Count>::value, int> = 0>
  void build(const std::array<const Real*, Dim>& xyz, Count n) {
    load_and_bin(xyz, checked_count(n, "build"), CopyKind::HostToDevice);
  }
  /// Same as build(), from host vectors (all of the same length).
  void build(const std::array<std::vector<Real>, Dim>& xyz) {
    std::array<const Real*, Dim> p;
    for (int d = 0; d < Dim; ++d) {
      CELLINT_EXPECTS(xyz[d].size() == xyz[0].size(),
                      "cellint::CellGrid::build: coordinate arrays differ in "
                      "length (",
                      xyz[0].size(), " along x, ", xyz[d].size(), " along axis ", d, ")");
      p[d] = xyz[d].data();
    }
    build(p, xyz[0].size());
  }
  /// Same as build(), from backend (device) arrays.
  template <class Count, std::enable_if_t<std::is_integral<Count>::value, int> = 0>
  void build_from_backend(const std::array<const Real*, Dim>& xyz, Count n) {
    load_and_bin(xyz, checked_count(n, "build_from_backend"), CopyKind::DeviceToDevice);
  }
  /// Re-bins after the sorted positions (positions(d)) were moved in place, e.g. by an integrator. The permutation and
  /// attributes follow.
  /// @throws NonFinitePosition, OutsideBox with the grid unchanged (see the class comment)
  /// @throws InvalidArgument before the first build()
  void rebuild() {
    expect_built("rebuild");
    // bin() reads pos_alt_ / id_alt_ and writes pos_ / id_ only after the positions passed the checks: swapping back
    // restores the grid as it was
    auto swap_alt = [&] {
      for (int d = 0; d < Dim; ++d) std::swap(pos_[d], pos_alt_[d]);
      std::swap(id_, id_alt_);
    };
    swap_alt();  // the sorted positions become bin()'s input
    try {
      bin(true);
    } catch (const InvalidArgument&) {  // rejected input: nothing was written
      swap_alt();
      throw;
    } catch (...) {  // a failure part-way (GPU, memory): cells may be stale
      swap_alt();
      built_ = false;
      n_ = 0;
      throw;
    }
  }

  /// Whether the grid holds binned particles (a build() succeeded and nothing failed since).
  bool built() const { return built_; }

  /// Attaches an attribute (one `T` per particle, host array of size() elements in the user's original order) that is
  /// permuted with the positions. Functors read it with `view.attribute(handle)`; the host gets the sorted backend
  /// array with attribute(handle).
  /// @throws InvalidArgument before build() or when max_attributes are attached already
  template <class T>
  Attribute<T> attach(const T* host_values) {
    return attach_copy(host_values, CopyKind::HostToDevice);
  }
  /// Same as attach(), from a backend array of size() elements in the user's original order.
  template <class T>
  Attribute<T> attach_from_backend(const T* backend_values) {
    return attach_copy(backend_values, CopyKind::DeviceToDevice);
  }
  /// Same as attach(), from a host vector of exactly size() elements.
  template <class T>
  Attribute<T> attach(const std::vector<T>& host_values) {
    expect_built("attach");
    CELLINT_EXPECTS(host_values.size() == static_cast<std::size_t>(n_),
                    "cellint::CellGrid::attach: ", host_values.size(), " values for ", n_,
                    " particles; give one value per particle");
    return attach(host_values.data());
  }
  /// Drops every attribute (their handles become invalid): for a build() of another set of particles that happens to
  /// have the same count, where the attributes would otherwise be kept and permuted as if the particles were the same.
  void detach_attributes() {
    if (!attrs_.empty()) drop_attributes();
  }
  /// Number of attributes attached.
  int attribute_count() const { return static_cast<int>(attrs_.size()); }
  /// The handle of the k-th attribute attached (counting from 0), of element type T.
  /// @throws InvalidArgument when there is no attribute k or its type is not T
  template <class T>
  Attribute<T> attribute_handle(int k) const {
    CELLINT_EXPECTS(k >= 0 && k < static_cast<int>(attrs_.size()),
                    "cellint::CellGrid::attribute_handle: no "
                    "attribute ",
                    k, " (", attrs_.size(), " attached)");
    CELLINT_EXPECTS(attrs_[k].type == detail::attribute_type_hash<T>(),
                    "cellint::CellGrid::attribute_handle: "
                    "attribute ",
                    k, " holds ", attrs_[k].type_name, ", not ", typeid(T).name());
    Attribute<T> h;
    h.index = k;
    h.grid = serial_;
    h.generation = generation_;
    h.type = attrs_[k].type;
    return h;
  }
  /// The attribute of handle `h` in sorted order (backend pointer, writable).
  /// @throws InvalidArgument for an unset handle, one of another grid, or one a build() dropped
  template <class T>
  T* attribute(const Attribute<T>& h) {
    check_handle(h.index, h.grid, h.generation, h.type, "attribute");
    return reinterpret_cast<T*>(attrs_[h.index].data.data());
  }
  /// The attribute of handle `h` in sorted order (backend pointer).
  template <class T>
  const T* attribute(const Attribute<T>& h) const {
    check_handle(h.index, h.grid, h.generation, h.type, "attribute");
    return reinterpret_cast<const T*>(attrs_[h.index].data.data());
  }
  /// Checks every Attribute handle held inside `f` (found by the handles' signature) against this grid, or, for a
  /// handle attached to `sources` (the other grid of a two-set call), against that one; interact() calls it before
  /// running any kernel. With `both_sides` (a two-set functor without load_source(), whose load() reads both grids),
  /// the other grid must hold an attribute of the same type at each handle's index too.
  /// @throws InvalidArgument naming the handle's problem
  template <class F>
  void check_functor_attributes(const F& f, const CellGrid* sources = nullptr, bool both_sides = false) const {
    static_assert(std::is_trivially_copyable<F>::value, "cellint: the pair functor must be trivially copyable");
    constexpr std::size_t hs = sizeof(Attribute<int>);
    if constexpr (sizeof(F) >= hs) {
      const unsigned char* bytes = reinterpret_cast<const unsigned char*>(&f);
      for (std::size_t off = 0; off + hs <= sizeof(F); off += alignof(Attribute<int>)) {
        std::uint32_t w[6];
        std::memcpy(w, bytes + off, sizeof(w));
        if (w[0] != detail::attribute_signature0 || w[1] != detail::attribute_signature1) continue;
        std::int32_t index;
        std::memcpy(&index, &w[2], sizeof(index));
        const CellGrid& owner = sources && w[3] == sources->serial_ ? *sources : *this;
        owner.check_handle(index, w[3], w[4], w[5], "interact", off);
        if (sources && both_sides) {
          const CellGrid& other = &owner == this ? *sources : *this;
          const bool mirrored = index < static_cast<std::int32_t>(other.attrs_.size()) &&
                                other.attrs_[static_cast<std::size_t>(index)].type == w[5];
          CELLINT_EXPECTS(mirrored, "cellint::interact: the functor's Attribute handle at byte ", off, " (attribute ",
                          index, " of the ", &owner == this ? "target" : "source",
                          " grid) is read on both sides, "
                          "since the functor has no load_source(), but the ",
                          &owner == this ? "source" : "target", " grid holds no attribute ", index,
                          " of that type: attach the same attributes in the same "
                          "order to both grids, or give the functor load_source() for the sources");
        }
      }
    }
  }

  /// Copies per-particle values from sorted order (backend array of at least size() elements; unchecked: prefer the
  /// Buffer and vector overloads) to the user's original order (host array of size() elements, unchecked).
  template <class T>
  void to_user_order(const T* sorted_backend, T* user_host) const {
    expect_built("to_user_order");
    if (!n_) return;
    Buffer<Backend, T> tmp(n_);
    detail::parallel_for<Backend>(n_, detail::ScatterKernel<T>{sorted_backend, id_.data(), tmp.data()}, stream_);
    tmp.download(user_host, stream_);
  }
  /// Returns a host vector in the user's original order from a sorted backend array (at least size() elements,
  /// unchecked).
  template <class T>
  std::vector<T> to_user_order(const T* sorted_backend) const {
    expect_built("to_user_order");
    std::vector<T> h(static_cast<std::size_t>(n_));
    to_user_order(sorted_backend, h.data());
    return h;
  }
  /// Returns a host vector in the user's original order from a sorted Buffer (size checked).
  template <class T>
  std::vector<T> to_user_order(const Buffer<Backend, T>& sorted) const {
    expect_size(sorted.size(), "to_user_order", "the sorted buffer");
    return to_user_order(sorted.data());
  }
  /// Same, from a host vector in sorted order (backends with host memory; size checked).
  template <class T>
  std::vector<T> to_user_order(const std::vector<T>& sorted) const {
    static_assert(!Backend::device_memory,
                  "cellint::CellGrid::to_user_order(std::vector): this backend's "
                  "results live in device memory; pass a Buffer or a device pointer");
    expect_size(sorted.size(), "to_user_order", "the sorted vector");
    return to_user_order(sorted.data());
  }
  /// Copies per-particle values from the user's original order (host array of size() elements, unchecked) into sorted
  /// order (backend array of size() elements, unchecked).
  template <class T>
  void from_user_order(const T* user_host, T* sorted_backend) const {
    expect_built("from_user_order");
    if (!n_) return;
    Buffer<Backend, T> tmp(n_);
    tmp.upload(user_host, stream_);
    detail::parallel_for<Backend>(n_, detail::GatherKernel<T>{tmp.data(), id_.data(), sorted_backend}, stream_);
    Backend::synchronize(stream_);
  }
  /// Same, from a host vector of exactly size() elements into a backend array of size() elements (unchecked: a device
  /// pointer, e.g. positions(d)).
  template <class T>
  void from_user_order(const std::vector<T>& user, T* sorted_backend) const {
    expect_built("from_user_order");
    CELLINT_EXPECTS(user.size() == static_cast<std::size_t>(n_), "cellint::CellGrid::from_user_order: ", user.size(),
                    " values for ", n_, " particles; give one value per particle");
    from_user_order(user.data(), sorted_backend);
  }
  /// Same, into a Buffer (size checked).
  template <class T>
  void from_user_order(const std::vector<T>& user, Buffer<Backend, T>& sorted) const {
    expect_size(sorted.size(), "from_user_order", "the sorted buffer");
    from_user_order(user, sorted.data());
  }
  /// The positions along each axis in the user's original order (wrapped into the box).
  std::array<std::vector<Real>, Dim> positions_user_order() const {
    expect_built("positions_user_order");
    std::array<std::vector<Real>, Dim> r;
    for (int d = 0; d < Dim; ++d) r[d] = to_user_order(pos_[d].data());
    return r;
  }

  /// Number of particles.
  Index size() const { return n_; }
  /// How many times the grid binned its particles (build() and rebuild() each count once): a change means slots were
  /// permuted, so anything indexed by slot (a NeighborList, results) belongs to an older order.
  std::uint64_t binning_count() const { return binnings_; }
  /// The grid's process-wide serial number (what Attribute handles and neighbour lists name it by).
  std::uint32_t serial() const { return serial_; }
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
  /// Sends the grid's later work, and that of the calls given the grid (interact(), a NeighborList's update()), to
  /// stream `s`; returns the stream it replaces. Work already enqueued on the old stream is not waited for: order the
  /// two streams where it matters (cellint::mpi::DistributedGrid::update_ghosts(meanwhile, then) does, with events).
  Stream set_stream(Stream s) {
    const Stream old = stream_;
    stream_ = s;
    return old;
  }
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
  struct AttributeSlot {
    std::size_t elem = 0;
    std::uint32_t type = 0;
    const char* type_name = "";
    void (*gather)(void*, const void*, const Index*, Index, Stream) = nullptr;
    void (*scatter)(void*, const void*, const Index*, Index, Stream) = nullptr;
    Buffer<Backend, unsigned char> data, alt;
  };

  void expect_built(const char* who) const {
    CELLINT_EXPECTS(built_, "cellint::CellGrid::", who,
                    ": the grid holds no binned particles; call build() "
                    "first",
                    (ever_built_ ? " (the last build() or rebuild() threw)" : ""));
  }
  void expect_size(std::size_t have, const char* who, const char* what) const {
    expect_built(who);
    detail::expect_room(have, n_, who, what);
  }
  template <class Count>
  static Index checked_count(Count n, const char* who) {
    if constexpr (std::is_signed<Count>::value)
      CELLINT_EXPECTS(n >= 0, "cellint::CellGrid::", who, ": particle count must be >= 0, got ", +n);
    CELLINT_EXPECTS(static_cast<std::uintmax_t>(n) <= static_cast<std::uintmax_t>(max_size()),
                    "cellint::CellGrid::", who, ": ", +n, " particles exceed the largest count a grid holds, ",
                    max_size(), " (particle indices are 32-bit); split the particles over several grids");
    return static_cast<Index>(n);
  }
  // (no string is formatted unless the handle is wrong: interact() checks every handle per call)
  void check_handle(std::int32_t index, std::uint32_t grid, std::uint32_t generation, std::uint32_t type,
                    const char* who, std::size_t offset = ~std::size_t(0)) const {
    const bool attached = generation == generation_ && index < static_cast<std::int32_t>(attrs_.size());
    if (index >= 0 && grid == serial_ && attached && type == attrs_[index].type) return;
    const std::string where = offset == ~std::size_t(0)
                                  ? std::string("cellint::CellGrid::") + who + ": the Attribute handle"
                                  : detail::cat("cellint::", who, ": the functor's Attribute handle at byte ", offset);
    CELLINT_EXPECTS(index >= 0, where, " is unset; set it to the value grid.attach<T>(...) returned");
    CELLINT_EXPECTS(grid == serial_, where, " (attribute ", index,
                    ") was attached to another grid; attach "
                    "the attribute to this grid and use the handle it returns");
    CELLINT_EXPECTS(attached, where, " (attribute ", index,
                    ") was dropped by a build() with another particle "
                    "count or by detach_attributes(); attach it again after build()");
    throw InvalidArgument(
        detail::cat(where, " (attribute ", index, ") does not match the attached type ", attrs_[index].type_name));
  }
  template <class T>
  Attribute<T> attach_copy(const T* values, CopyKind kind) {
    static_assert(std::is_trivially_copyable<T>::value, "cellint: attributes must be trivially copyable");
    expect_built("attach");
    CELLINT_EXPECTS(attrs_.size() < static_cast<std::size_t>(max_attributes), "cellint::CellGrid::attach: at most ",
                    max_attributes, " attributes");
    AttributeSlot a;
    a.elem = sizeof(T);
    a.type = detail::attribute_type_hash<T>();
    a.type_name = typeid(T).name();
    a.gather = &detail::gather_bytes<Backend, T>;
    a.scatter = &detail::scatter_bytes<Backend, T>;
    a.data = spare_buffer(sizeof(T) * std::max<Index>(n_, 1));
    a.alt = spare_buffer(sizeof(T) * std::max<Index>(n_, 1));
    if (n_) {
      Backend::copy(a.alt.data(), values, sizeof(T) * n_, kind, stream_);
      // sorted slot s takes the user's element original[s]
      a.gather(a.data.data(), a.alt.data(), id_.data(), n_, stream_);
      Backend::synchronize(stream_);
    }
    attrs_.push_back(std::move(a));
    attr_n_ = n_;
    return attribute_handle<T>(static_cast<int>(attrs_.size()) - 1);
  }
  void drop_attributes() {
    // (their memory is kept for the next attach(): a simulation that rebuilds its grid over other particles attaches
    // the same attributes again, and a release would wait for the device; when the spares are full, the smallest one
    // goes, so that a count that grows does not leave the spares too small for every attach())
    const std::size_t most = 2 * static_cast<std::size_t>(max_attributes);
    for (auto& a : attrs_)
      for (auto* b : {&a.data, &a.alt}) {
        if (spare_.size() < most) {
          spare_.push_back(std::move(*b));
          continue;
        }
        auto smallest = std::min_element(spare_.begin(), spare_.end(),
                                         [](const auto& x, const auto& y) { return x.capacity() < y.capacity(); });
        if (smallest->capacity() < b->capacity()) *smallest = std::move(*b);
      }
    attrs_.clear();
    ++generation_;
  }
  // A buffer of `bytes` bytes: the smallest kept one that is large enough, else a new one with room to grow (a
  // particle count that creeps up between builds then reuses it).
  Buffer<Backend, unsigned char> spare_buffer(std::size_t bytes) {
    Buffer<Backend, unsigned char> b;
    auto fit = spare_.end();
    for (auto s = spare_.begin(); s != spare_.end(); ++s)
      if (s->capacity() >= bytes && (fit == spare_.end() || s->capacity() < fit->capacity())) fit = s;
    if (fit != spare_.end()) {
      b = std::move(*fit);
      if (fit != spare_.end() - 1) *fit = std::move(spare_.back());
      spare_.pop_back();
    }
    b.resize_with_room(bytes);
    return b;
  }

  // build(): positions into pos_alt_, then bin. Attributes follow by user index (see the class comment): before binning
  // they are brought back to the user's order, then bin() permutes them like the positions.
  void load_and_bin(const std::array<const Real*, Dim>& xyz, Index n, CopyKind kind) {
    if (!attrs_.empty() && attr_n_ != n) drop_attributes();
    if (!attrs_.empty() && !attrs_user_order_) {
      // sorted by id_ -> user order (id_ is valid here: see the exception guarantees)
      for (auto& a : attrs_) a.scatter(a.alt.data(), a.data.data(), id_.data(), attr_n_, stream_);
      for (auto& a : attrs_) std::swap(a.data, a.alt);
      attrs_user_order_ = true;
    }
    built_ = false;
    n_ = 0;
    resize_particles(n);
    for (int d = 0; d < Dim; ++d)
      if (n) Backend::copy(pos_alt_[d].data(), xyz[d], sizeof(Real) * n, kind, stream_);
    n_ = n;
    try {
      bin(false);
    } catch (...) {
      n_ = 0;
      throw;
    }
    attrs_user_order_ = false;
    attr_n_ = n;
    built_ = ever_built_ = true;
  }

  void resize_particles(Index n) {
    const std::size_t m = static_cast<std::size_t>(std::max<Index>(n, 1));
    // (with room: a count that creeps up between builds, such as an MPI rank's particles and ghosts, reallocates
    // rarely)
    for (int d = 0; d < Dim; ++d) {
      pos_[d].resize_with_room(m);
      pos_alt_[d].resize_with_room(m);
    }
    id_.resize_with_room(m);
    id_alt_.resize_with_room(m);
    cell_of_.resize_with_room(m);
    rank_.resize_with_room(m);
    src_.resize_with_room(m);
    for (auto& a : attrs_) {
      a.data.resize_with_room(a.elem * m);
      a.alt.resize_with_room(a.elem * m);
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
        // Order inside a cell = order of the original index: a stable radix sort by cell of the particles listed in
        // original order.
        Buffer<Backend, Index> order(n);
        Buffer<Backend, std::uint32_t> keys(n);
        if (have_ids) {
          Buffer<Backend, Index> inv(n), vals(n);
          detail::parallel_for<Backend>(n, detail::ScatterKernel<std::uint32_t>{cell_of_.data(), in_id, keys.data()},
                                        stream_);
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
        detail::GridScatter<Real, Dim> k{geo_,          {}, in_id,      cell_of_.data(), rank_.data(),
                                         start_.data(), {}, id_.data(), src_.data()};
        for (int d = 0; d < Dim; ++d) {
          k.x[d] = in[d];
          k.out[d] = out[d];
        }
        detail::parallel_for<Backend>(n, k, stream_);
      }
      // into alt first, swapped in only when every attribute is done
      for (auto& a : attrs_) a.gather(a.alt.data(), a.data.data(), src_.data(), n, stream_);
    }
    std::uint32_t h[2];
    scalars_.download(h, stream_);
    if (n)
      for (auto& a : attrs_) std::swap(a.data, a.alt);
    max_per_cell_ = static_cast<Index>(h[1]);
    ++binnings_;
    built_ = true;
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
  std::vector<Buffer<Backend, unsigned char>> spare_;  ///< memory of dropped attributes, for the next attach()
  bool built_ = false;                                 ///< binned particles are consistent (see expect_built)
  bool ever_built_ = false;                            ///< a build() succeeded once (for the message)
  std::uint32_t serial_ = detail::next_grid_serial();  ///< names this grid in Attribute handles
  std::uint32_t generation_ = 1;                       ///< incremented when a build() drops the attributes
  std::uint64_t binnings_ = 0;                         ///< successful binnings (see binning_count())
  Index attr_n_ = 0;                                   ///< elements per attribute
  bool attrs_user_order_ = false;  ///< attributes are in the user's order (between the two halves of a build())
  std::array<Buffer<Backend, Real>, Dim> pos_, pos_alt_;
  Buffer<Backend, Index> id_, id_alt_, src_;
  Buffer<Backend, std::uint32_t> start_, count_, cell_of_, rank_, scalars_;
  std::vector<AttributeSlot> attrs_;
};

}  // namespace cellint
