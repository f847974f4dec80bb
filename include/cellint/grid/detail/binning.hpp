#pragma once
// The binning steps of CellGrid (cell index + count, exclusive scan, max per cell, scatter), each a separately named
// element kernel so that profiles and benchmarks can report them.

#include <climits>
#include <cmath>
#include <cstdint>

#include "cellint/backend/detail/parallel_for.hpp"
#include "cellint/grid/grid_view.hpp"

namespace cellint::detail {

/// Position on axis d wrapped into a periodic box, unchanged on open axes.
template <class Real, int Dim>
CELLINT_HD inline Real wrap_axis(const GridGeometry<Real, Dim>& g, Real x, int d) {
  if (!g.box.periodic[d]) return x;
  const Real o = g.box.origin[d], L = g.box.lengths[d];
  Real w = x - L * std::floor((x - o) / L);
  if (w >= o + L) w -= L;  // x just below the origin rounds up to the upper face
  if (w < o) w = o;
  return w;
}

/// Step 1: cell of every particle, count per cell (the atomic's old value is the particle's rank inside its cell) and
/// detection of bad positions (lowest offending index into *bad).
template <class Real, int Dim>
struct GridCellIndex {
  GridGeometry<Real, Dim> g;
  const Real* x[Dim];
  std::uint32_t* cell_of;
  std::uint32_t* rank;
  std::uint32_t* count;
  int* bad;
  template <class A>
  CELLINT_HD void operator()(A& a, Index i) const {
    Index c[Dim];
    for (int d = 0; d < Dim; ++d) {
      const Real v = x[d][i];
      const Real lo = g.box.origin[d], hi = lo + g.box.lengths[d];
      if (!(v == v) || v - v != Real(0) || (!g.box.periodic[d] && (v < lo || v > hi))) {
        a.atomic_min(bad, static_cast<int>(i));
        cell_of[i] = 0;
        rank[i] = 0;
        return;
      }
      c[d] = g.axis_cell(wrap_axis(g, v, d), d);
    }
    const Index cell = g.linear(c);
    cell_of[i] = static_cast<std::uint32_t>(cell);
    rank[i] = a.atomic_add(count + cell, 1u);
  }
};

/// Step 3: M_C, the largest count.
struct GridMaxCount {
  const std::uint32_t* count;
  std::uint32_t* max_count;
  template <class A>
  CELLINT_HD void operator()(A& a, Index c) const {
    if (count[c]) a.atomic_max(max_count, count[c]);
  }
};

/// Step 4 (atomic order): particle i goes to slot start[cell] + rank.
template <class Real, int Dim>
struct GridScatter {
  GridGeometry<Real, Dim> g;
  const Real* x[Dim];
  const Index* in_id;  // nullptr: identity
  const std::uint32_t* cell_of;
  const std::uint32_t* rank;
  const std::uint32_t* start;
  Real* out[Dim];
  Index* out_id;
  Index* src;
  template <class A>
  CELLINT_HD void operator()(A&, Index i) const {
    const Index s = static_cast<Index>(start[cell_of[i]] + rank[i]);
    for (int d = 0; d < Dim; ++d) out[d][s] = wrap_axis(g, x[d][i], d);
    out_id[s] = in_id ? in_id[i] : i;
    src[s] = i;
  }
};

/// Step 4 (stable order): slot s takes the particle the radix sort put at s.
template <class Real, int Dim>
struct GridGather {
  GridGeometry<Real, Dim> g;
  const Real* x[Dim];
  const Index* in_id;
  const Index* sorted_index;
  Real* out[Dim];
  Index* out_id;
  Index* src;
  template <class A>
  CELLINT_HD void operator()(A&, Index s) const {
    const Index i = sorted_index[s];
    for (int d = 0; d < Dim; ++d) out[d][s] = wrap_axis(g, x[d][i], d);
    out_id[s] = in_id ? in_id[i] : i;
    src[s] = i;
  }
};

/// out[s] = in[index[s]].
template <class T>
struct GatherKernel {
  const T* in;
  const Index* index;
  T* out;
  template <class A>
  CELLINT_HD void operator()(A&, Index s) const {
    out[s] = in[index[s]];
  }
};

/// out[index[s]] = in[s].
template <class T>
struct ScatterKernel {
  const T* in;
  const Index* index;
  T* out;
  template <class A>
  CELLINT_HD void operator()(A&, Index s) const {
    out[index[s]] = in[s];
  }
};

/// inv[perm[i]] = i.
struct InverseKernel {
  const Index* perm;
  Index* inv;
  template <class A>
  CELLINT_HD void operator()(A&, Index i) const {
    inv[perm[i]] = i;
  }
};

/// values[i] = first + i.
struct IotaKernel {
  Index* values;
  Index first = 0;
  template <class A>
  CELLINT_HD void operator()(A&, Index i) const {
    values[i] = first + i;
  }
};

/// Type-erased attribute permutation: dst[s] = src[index[s]] for elements of type T.
template <class Backend, class T>
void gather_bytes(void* dst, const void* src, const Index* index, Index n, typename Backend::Stream s) {
  parallel_for<Backend>(n, GatherKernel<T>{static_cast<const T*>(src), index, static_cast<T*>(dst)}, s);
}

}  // namespace cellint::detail
