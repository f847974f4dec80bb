#pragma once
/// @file
/// The views of a CellGrid that kernels and functors see: raw pointers plus geometry, and the pair of target and source
/// views one interaction reads.

#include <cstdint>
#include <type_traits>

#include "cellint/core/grid_geometry.hpp"
#include "cellint/core/pair_functor.hpp"

namespace cellint {

/// Maximum number of attributes that can be attached to one CellGrid.
inline constexpr int max_attributes = 8;

namespace detail {
/// The two words every Attribute handle starts with: interact() finds the handles a functor holds by this signature and
/// checks them against the grid (see CellGrid::check_functor_attributes).
inline constexpr std::uint32_t attribute_signature0 = 0xCE11A77Bu;  ///< first word
inline constexpr std::uint32_t attribute_signature1 = 0x5A1D0E42u;  ///< second word
}  // namespace detail

/// Typed handle of an attribute attached to a CellGrid, returned by CellGrid::attach<T>().
///
/// Functors keep it by value and read the sorted array with `view.attribute(handle)`, which returns `const T*`: reading
/// an attribute as another type does not compile. A default- constructed handle is unset; interact() and
/// CellGrid::attribute() reject an unset handle, a handle of another grid, and one whose attribute a later build()
/// dropped, with a message that says which.
template <class T>
struct Attribute {
  using value_type = T;  ///< element type
  std::uint32_t signature[2] = {detail::attribute_signature0, detail::attribute_signature1};  ///< fixed
  std::int32_t index = -1;        ///< slot in the grid (-1: unset)
  std::uint32_t grid = 0;         ///< serial number of the grid that attached it (0: none)
  std::uint32_t generation = 0;   ///< the grid's attribute generation when attached
  std::uint32_t type = 0;         ///< hash of T's name and size
  /// Whether the handle was set by attach() (it may still belong to another grid).
  CELLINT_HD bool is_set() const { return index >= 0; }
};

/// Trivially copyable view of a binned grid, passed by value to kernels and to `F::load`. All pointers are backend
/// pointers in sorted order (slot i is the i-th particle after binning).
template <class Real, int Dim>
struct GridView {
  GridGeometry<Real, Dim> geo;        ///< cells, widths, box
  const Real* pos[Dim];               ///< sorted positions, one array per axis (wrapped into the box)
  const Index* cell_start;            ///< particles of cell c are [cell_start[c], cell_start[c+1])
  const Index* original;              ///< sorted slot -> index in the user's original order
  Index n;                            ///< number of particles
  Index max_per_cell;                 ///< M_C: the largest particle count of any cell
  const void* attr[max_attributes];   ///< attached attributes, sorted like the positions

  /// Position of particle `i`.
  CELLINT_HD Vec<Real, Dim> position(Index i) const {
    Vec<Real, Dim> x;
    for (int d = 0; d < Dim; ++d) x[d] = pos[d][i];
    return x;
  }
  /// The attribute of handle `h` as an array of `T` (sorted order). The handle is checked by interact() before any
  /// kernel runs, not here.
  template <class T>
  CELLINT_HD const T* attribute(const Attribute<T>& h) const {
    return static_cast<const T*>(attr[h.index]);
  }
  /// Cell of particle `i`'s position.
  CELLINT_HD Index cell_of(const Vec<Real, Dim>& x) const {
    Index c[Dim];
    for (int d = 0; d < Dim; ++d) c[d] = geo.axis_cell(x[d], d);
    return geo.linear(c);
  }
};

/// The two sides of one interaction, as kernels see them: targets (the particles that receive a result) and sources
/// (the particles they interact with), views of grids over the same cell geometry. `interact(grid, f, out)` is the case
/// of one set (targets == sources).
///
/// The one self-exclusion rule: a target skips a source only when both sides are one set and the source is the target's
/// own slot (excluded()); two different sets exclude nothing.
template <class Real, int Dim>
struct PairViews {
  GridView<Real, Dim> targets;  ///< the particles that receive results (out[t] for slot t)
  GridView<Real, Dim> sources;  ///< the particles they interact with
  bool same = true;             ///< one set: targets and sources are the same particles

  /// The views of one set interacting with itself.
  static PairViews one_set(const GridView<Real, Dim>& v) { return {v, v, true}; }
  /// The source slot that target `t` skips (itself, in one set), or -1 (none: two sets).
  CELLINT_HD Index excluded(Index t) const { return same ? t : Index(-1); }
};

/// Whether functor F reads sources with its own load_source() (FunctorTraits::load_source): strategies that stage one
/// record per particle for both sides cannot run it.
template <class F, class Real, int Dim>
inline constexpr bool loads_sources_apart = FunctorTraits<F, Real, Dim>::template split_load<GridView<Real, Dim>>;

static_assert(std::is_trivially_copyable<GridView<float, 3>>::value, "GridView must be trivially copyable");
static_assert(std::is_trivially_copyable<PairViews<float, 3>>::value, "PairViews must be trivially copyable");
static_assert(std::is_trivially_copyable<Attribute<double>>::value && std::is_standard_layout<Attribute<double>>::value &&
                  sizeof(Attribute<double>) == 24 && alignof(Attribute<double>) == 4,
              "Attribute: the layout CellGrid::check_functor_attributes scans for");

}  // namespace cellint
