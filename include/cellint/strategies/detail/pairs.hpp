#pragma once
// The pair accumulation, written once: the term of one (target, source) pair (distance, cutoff
// test, functor call) and the loops over a range of sources, wherever the sources are (global
// memory with an image shift, staged records, staged structure-of-arrays). Every strategy's
// inner loop is one of these, so a new functor feature is one edit here.

#include <type_traits>

#include "cellint/core/pair_functor.hpp"
#include "cellint/grid/grid_view.hpp"

namespace cellint::detail {

/// One source as the pair term reads it: its position `x` (image shift applied) and its
/// `payload()`, asked only for a pair within the cutoff.
template <class T, class F, class Real, int Dim>
struct GlobalSource {
  Vec<Real, Dim> x;              ///< position, image shift applied
  const F& f;                    ///< the functor (its load())
  const GridView<Real, Dim>& v;  ///< the source view
  Index j;                       ///< the source's slot
  /// The source's payload, read from global memory.
  CELLINT_HD typename T::SourcePayload payload() const { return T::load_source(f, v, j); }
};

/// Sources read from a view in global memory with one image shift: `src[j]` is slot j.
template <class T, class F, class Real, int Dim>
struct GlobalSources {
  const GridView<Real, Dim>& v;  ///< the source view
  const F& f;                    ///< the functor
  Vec<Real, Dim> shift;          ///< added to every position
  /// Source slot j.
  CELLINT_HD GlobalSource<T, F, Real, Dim> operator[](Index j) const {
    Vec<Real, Dim> x;
    for (int d = 0; d < Dim; ++d) x[d] = v.pos[d][j] + shift[d];
    return {x, f, v, j};
  }
};

/// One source staged as structure-of-arrays (positions per axis, payloads).
template <class Real, int Dim, class Payload>
struct SoaSource {
  Vec<Real, Dim> x;    ///< position, image shift applied at staging
  const Payload* p;    ///< its payload (not read for position-only functors)
  /// The staged payload.
  CELLINT_HD Payload payload() const { return *p; }
};

/// Sources staged as structure-of-arrays in shared memory: `src[j]` is staged slot j.
template <class Real, int Dim, class Payload>
struct SoaSources {
  Real* x[Dim];       ///< staged positions per axis
  const Payload* p;   ///< staged payloads (null for position-only functors)
  /// Staged slot j.
  CELLINT_HD SoaSource<Real, Dim, Payload> operator[](Index j) const {
    Vec<Real, Dim> r;
    for (int d = 0; d < Dim; ++d) r[d] = x[d][j];
    return {r, p + j};
  }
};

/// The pair term: dr = xt - s.x, the cutoff test (unless the functor asks for every candidate)
/// and `f(acc, pt, s.payload(), dr, r2)`; `keep` masks the pair out (tiles). Position-only
/// functors get the target's payload twice: nothing is read for the source.
CELLINT_HD_WARNING_DISABLE
template <class T, class F, class Real, int Dim, class S>
CELLINT_HD CELLINT_INLINE void accumulate_pair(const F& f, const S& s, const Vec<Real, Dim>& xt,
                                               const typename T::Payload& pt, Real rc2,
                                               typename T::Accum& acc, bool keep = true) {
  Vec<Real, Dim> dr;
  for (int d = 0; d < Dim; ++d) dr[d] = xt[d] - s.x[d];
  const Real r2 = norm2(dr);
  if ((!T::cutoff_test || r2 < rc2) && keep) {
    if constexpr (T::position_only)
      f(acc, pt, pt, dr, r2);
    else
      f(acc, pt, s.payload(), dr, r2);
  }
}

/// Adds accumulator `a` into *p element by element with the atomics `at` (Accum is an array of AccumScalar).
template <class T, class A>
CELLINT_HD CELLINT_INLINE void atomic_add_accum(A& at, typename T::Accum* p, const typename T::Accum& a) {
  using S = typename T::AccumScalar;
  constexpr int k = static_cast<int>(sizeof(typename T::Accum) / sizeof(S));
  const S* src = reinterpret_cast<const S*>(&a);
  S* dst = reinterpret_cast<S*>(p);
  for (int e = 0; e < k; ++e) at.atomic_add(dst + e, src[e]);
}

/// The symmetric pair term (Newton's third law): as accumulate_pair(), but the functor's
/// `symmetric(acc_target, acc_source, ...)` adds the pair to both sides at once.
CELLINT_HD_WARNING_DISABLE
template <class T, class F, class Real, int Dim, class S>
CELLINT_HD CELLINT_INLINE void accumulate_pair_symmetric(const F& f, const S& s, const Vec<Real, Dim>& xt,
                                                         const typename T::Payload& pt, Real rc2,
                                                         typename T::Accum& acc_t, typename T::Accum& acc_s) {
  Vec<Real, Dim> dr;
  for (int d = 0; d < Dim; ++d) dr[d] = xt[d] - s.x[d];
  const Real r2 = norm2(dr);
  if (!T::cutoff_test || r2 < rc2) {
    if constexpr (T::position_only)
      f.symmetric(acc_t, acc_s, pt, pt, dr, r2);
    else
      f.symmetric(acc_t, acc_s, pt, s.payload(), dr, r2);
  }
}

/// The pair loop: sources [lo, hi) of `src` (src[j] has `x` and `payload()`: GlobalSources,
/// SoaSources or a pointer to staged records) into the accumulator of the target (xt, pt).
CELLINT_HD_WARNING_DISABLE
template <class T, class F, class Real, int Dim, class Src>
CELLINT_HD CELLINT_INLINE void accumulate(const F& f, const Src& src, Index lo, Index hi,
                                          const Vec<Real, Dim>& xt, const typename T::Payload& pt,
                                          Real rc2, typename T::Accum& acc) {
  // Four sources are read before any of them is used: the loads of a group are in flight
  // together whatever the compiler's scheduler decides (the loop is latency-bound on them).
  Index j = lo;
  for (; j + 4 <= hi; j += 4) {
    const auto s0 = src[j];
    const auto s1 = src[j + 1];
    const auto s2 = src[j + 2];
    const auto s3 = src[j + 3];
    accumulate_pair<T>(f, s0, xt, pt, rc2, acc);
    accumulate_pair<T>(f, s1, xt, pt, rc2, acc);
    accumulate_pair<T>(f, s2, xt, pt, rc2, acc);
    accumulate_pair<T>(f, s3, xt, pt, rc2, acc);
  }
  for (; j < hi; ++j) {
    const auto s = src[j];
    accumulate_pair<T>(f, s, xt, pt, rc2, acc);
  }
}

/// accumulate() over [lo, skip) and (skip, hi), for `skip` in [lo, hi): the target itself in
/// its own staged row (one set).
CELLINT_HD_WARNING_DISABLE
template <class T, class F, class Real, int Dim, class Src>
CELLINT_HD CELLINT_INLINE void accumulate_around(const F& f, const Src& src, Index lo, Index hi, Index skip,
                                                 const Vec<Real, Dim>& xt, const typename T::Payload& pt,
                                                 Real rc2, typename T::Accum& acc) {
  accumulate<T>(f, src, lo, skip, xt, pt, rc2, acc);
  accumulate<T>(f, src, skip + 1, hi, xt, pt, rc2, acc);
}

/// accumulate() over [lo, hi) without source `skip` (the target itself in one set, see
/// PairViews::excluded(); outside [lo, hi), e.g. -1, it skips nothing).
CELLINT_HD_WARNING_DISABLE
template <class T, class F, class Real, int Dim, class Src>
CELLINT_HD CELLINT_INLINE void accumulate_except(const F& f, const Src& src, Index lo, Index hi,
                                                 Index skip, const Vec<Real, Dim>& xt,
                                                 const typename T::Payload& pt, Real rc2,
                                                 typename T::Accum& acc) {
  if (skip >= lo && skip < hi)
    accumulate_around<T>(f, src, lo, hi, skip, xt, pt, rc2, acc);
  else
    accumulate<T>(f, src, lo, hi, xt, pt, rc2, acc);
}

/// The cutoff squared of a geometry (what the pair term compares r2 with).
template <class Real, int Dim>
CELLINT_HD inline Real cutoff2(const GridGeometry<Real, Dim>& g) {
  return g.cutoff * g.cutoff;
}

}  // namespace cellint::detail
