#pragma once
// The Python package's built-in pair functors and the element kernels around them (deinterleaving
// positions, writing results in the user's order). Written against the library's functor contract
// (cellint/core/pair_functor.hpp) and compiled for each backend.

#include <cmath>
#include <cstdint>
#include <type_traits>

#include "cellint/cellint.hpp"

namespace cellint::py {

/// r^2 of dr as a fixed chain of fused multiply-adds: the two passes of the pair search compute it
/// in different kernels, and must agree to the last bit on which pairs are inside the cutoff.
template <class R, int D>
CELLINT_HD inline R fixed_r2(const Vec<R, D>& dr) {
  R r2 = dr[0] * dr[0];
  for (int d = 1; d < D; ++d) r2 = std::fma(dr[d], dr[d], r2);
  return r2;
}

/// A value within rounding error of an integer, as that integer (a periodic shift in box lengths).
template <class R>
CELLINT_HD inline std::int32_t round_to_int(R x) {
  return static_cast<std::int32_t>(x + (x < R(0) ? R(-0.5) : R(0.5)));
}

/// Smoothing kernels W(r), normalised in D dimensions.
template <class R, int D>
struct SmoothingKernel {
  int kind = 0;  ///< 0 Gaussian (exp(-r^2/h^2)), 1 cubic spline (support 2h), 2 Wendland C2 (support 2h)
  R inv_h2 = 1, inv_h = 1, norm = 1;
  static SmoothingKernel make(int kind, double h) {
    const double pi = 3.14159265358979323846;
    SmoothingKernel k;
    k.kind = kind;
    k.inv_h = static_cast<R>(1 / h);
    k.inv_h2 = static_cast<R>(1 / (h * h));
    const double hd = D == 2 ? h * h : h * h * h;
    double c = 1;
    if (kind == 0) c = D == 2 ? 1 / pi : 1 / (pi * std::sqrt(pi));
    if (kind == 1) c = D == 2 ? 10 / (7 * pi) : 1 / pi;
    if (kind == 2) c = D == 2 ? 7 / (4 * pi) : 21 / (16 * pi);
    k.norm = static_cast<R>(c / hd);
    return k;
  }
  CELLINT_HD R operator()(R r2) const {
    if (kind == 0) return norm * std::exp(-r2 * inv_h2);
    const R q = std::sqrt(r2) * inv_h;
    if (kind == 1) {
      if (q < R(1)) return norm * (R(1) - R(1.5) * q * q + R(0.75) * q * q * q);
      const R t = R(2) - q;
      return q < R(2) ? norm * R(0.25) * t * t * t : R(0);
    }
    const R t = R(1) - R(0.5) * q;
    return q < R(2) ? norm * (t * t) * (t * t) * (R(2) * q + R(1)) : R(0);
  }
};

/// A per-particle value (a mass, a radius) read from an attribute as the payload (PerParticle), or no payload at all:
/// what Density and SoftSphere share.
template <class R, bool PerParticle>
struct ValuePayload {
  using Payload = std::conditional_t<PerParticle, R, NoPayload>;
  std::conditional_t<PerParticle, Attribute<R>, char> values{};  // (a handle only when it is read)
  template <class View>
  CELLINT_HD Payload load(const View& v, Index i) const {
    if constexpr (PerParticle)
      return v.attribute(values)[i];
    else {
      (void)v;
      (void)i;
      return {};
    }
  }
};

/// Kernel-weighted density: rho_i = sum_j m_j W(r_ij) (the self term is added when results are written).
/// PerParticle: masses from an attribute (`values`); else every particle has mass `mass`.
template <class R, int D, bool PerParticle>
struct Density : ValuePayload<R, PerParticle> {
  using Accum = R;
  using Payload = typename ValuePayload<R, PerParticle>::Payload;
  static constexpr int flops = 12;
  SmoothingKernel<R, D> w;
  R mass = 1;
  CELLINT_HD R m(const Payload& p) const {
    if constexpr (PerParticle)
      return p;
    else {
      (void)p;
      return mass;
    }
  }
  CELLINT_HD void operator()(R& rho, const Payload&, const Payload& s, const Vec<R, D>&, R r2) const {
    rho += m(s) * w(r2);
  }
  CELLINT_HD void symmetric(R& ri, R& rj, const Payload& pi, const Payload& pj, const Vec<R, D>&, R r2) const {
    const R k = w(r2);
    ri += m(pj) * k;
    rj += m(pi) * k;
  }
};

/// Soft-sphere repulsion V(r) = epsilon / alpha (1 - r / sigma_ij)^alpha for r < sigma_ij: sigma_ij = sigma, or the sum
/// of both radii (PerParticle: `values`). Accumulates the force and half of each pair's energy.
template <class R, int D, bool PerParticle>
struct SoftSphere : ValuePayload<R, PerParticle> {
  struct Accum {
    R force[D];
    R energy;
  };
  using AccumScalar = R;
  using Payload = typename ValuePayload<R, PerParticle>::Payload;
  static constexpr int flops = 20;
  R epsilon = 1, sigma = 1, alpha = 2;
  CELLINT_HD R contact(const Payload& a, const Payload& b) const {
    if constexpr (PerParticle)
      return a + b;
    else {
      (void)a;
      (void)b;
      return sigma;
    }
  }
  /// Sets fr (F_i = fr dr) and returns V.
  CELLINT_HD R eval(R r2, R s, R& fr) const {
    fr = 0;
    if (!(r2 < s * s) || r2 <= R(0)) return 0;
    const R r = std::sqrt(r2);
    const R x = R(1) - r / s;
    const R xa1 = alpha == R(2) ? x : std::pow(x, alpha - R(1));
    fr = epsilon / s * xa1 / r;
    return epsilon / alpha * xa1 * x;
  }
  CELLINT_HD void operator()(Accum& a, const Payload& t, const Payload& s, const Vec<R, D>& dr, R r2) const {
    R fr;
    const R e = eval(r2, contact(t, s), fr);
    for (int d = 0; d < D; ++d) a.force[d] += fr * dr[d];
    a.energy += R(0.5) * e;
  }
  CELLINT_HD void symmetric(Accum& ai, Accum& aj, const Payload& pi, const Payload& pj, const Vec<R, D>& dr,
                            R r2) const {
    R fr;
    const R e = eval(r2, contact(pi, pj), fr);
    for (int d = 0; d < D; ++d) {
      ai.force[d] += fr * dr[d];
      aj.force[d] -= fr * dr[d];
    }
    ai.energy += R(0.5) * e;
    aj.energy += R(0.5) * e;
  }
};

/// A particle as the pair search reads it: its index in the user's order and its sorted slot.
struct PairId {
  Index id;
  Index slot;
};

/// Which pairs the pair search keeps: closer than the cutoff by fixed_r2(), and with `half` only those whose target
/// precedes the source in the user's order.
template <class R, int D>
struct PairRule {
  using Payload = PairId;
  static constexpr bool cutoff_test = false;  // the rule tests itself, the same way in both passes
  R rc2 = 0;
  bool half = true;
  template <class View>
  CELLINT_HD PairId load(const View& v, Index i) const {
    return {v.original[i], i};
  }
  CELLINT_HD bool keep(const PairId& t, const PairId& s, const Vec<R, D>& dr) const {
    return (!half || t.id < s.id) && fixed_r2(dr) < rc2;
  }
};

/// First pass: the number of pairs of each target.
template <class R, int D>
struct PairCounter : PairRule<R, D> {
  using Accum = std::uint32_t;
  CELLINT_HD void operator()(Accum& n, const PairId& t, const PairId& s, const Vec<R, D>& dr, R) const {
    if (this->keep(t, s, dr)) ++n;
  }
};

/// Second pass: each pair's two sorted slots, packed in one 8-byte word, into its target's row (offset[t] in the
/// user's order), at most count[t] of them. One store a pair: a thread's row is its own, so the stores of a warp
/// scatter, and PairExpand writes the outputs with a thread per pair instead.
template <class R, int D>
struct PairWriter : PairRule<R, D> {
  using Accum = std::uint32_t;
  const std::uint32_t* offset = nullptr;  // user order
  const std::uint32_t* count = nullptr;   // user order
  std::uint64_t* packed = nullptr;
  CELLINT_HD void operator()(Accum& n, const PairId& t, const PairId& s, const Vec<R, D>& dr, R) const {
    if (!this->keep(t, s, dr)) return;
    if (n < count[t.id])
      packed[offset[t.id] + n] = (static_cast<std::uint64_t>(t.slot) << 32) | static_cast<std::uint32_t>(s.slot);
    ++n;
  }
};

/// The outputs of pair `base + q`, one thread a pair (coalesced writes). The image is the nearest one, which for a pair
/// inside the cutoff is the one the cell strategy used (periodic axes are at least 3 cutoffs long), and dr is computed
/// as the strategy's pair term does (x_t - (x_s + shift)), so the distance has the bits the cutoff test saw.
template <class R, int D>
struct PairExpand {
  const std::uint64_t* packed;
  std::uint64_t base;
  const R* pos[D];
  const Index* original;
  R length[D];
  R half_length[D];  // 0 on open axes
  std::int64_t* i;
  std::int64_t* j;
  R* distance;
  R* vector;
  std::int32_t* shift;
  const std::int32_t* wraps;  // RecordWraps's, axis after axis
  Index n;                    // particles
  template <class A>
  CELLINT_HD void operator()(A&, Index q) const {
    const std::uint64_t k = base + static_cast<std::uint64_t>(q);
    const std::uint64_t w = packed[k];
    const Index a = static_cast<Index>(w >> 32), b = static_cast<Index>(w & 0xffffffffu);
    const Index ua = original[a], ub = original[b];
    Vec<R, D> dr;
    int image[D];  // the source's image in box lengths
    for (int d = 0; d < D; ++d) {
      const R xt = pos[d][a], xs = pos[d][b];
      const R diff = xt - xs;
      const R h = half_length[d];
      image[d] = h == R(0) ? 0 : diff > h ? 1 : diff < -h ? -1 : 0;
      dr[d] = xt - (xs + (image[d] == 0 ? R(0) : image[d] > 0 ? length[d] : -length[d]));
    }
    i[k] = ua;
    j[k] = ub;
    distance[k] = std::sqrt(fixed_r2(dr));
    for (int d = 0; d < D; ++d) {
      if (vector) vector[k * D + d] = -dr[d];  // x_j - x_i at the image
      if (shift)
        shift[k * D + d] =
            image[d] + wraps[d * static_cast<std::uint64_t>(n) + a] - wraps[d * static_cast<std::uint64_t>(n) + b];
    }
  }
};

// ---- element kernels (detail::parallel_for bodies) ----

/// Row-major (n, D) positions -> one array per axis.
template <class R, int D>
struct Deinterleave {
  const R* in;
  R* out[D];
  template <class A>
  CELLINT_HD void operator()(A&, Index i) const {
    for (int d = 0; d < D; ++d) out[d][i] = in[static_cast<std::uint64_t>(i) * D + d];
  }
};

/// How many box lengths each particle was moved by to wrap it into the box, per sorted slot and axis (axis after axis):
/// the periodic shift S of a pair is its image plus the first particle's wraps minus the second's.
template <class R, int D>
struct RecordWraps {
  const R* user;  // the positions given to build(), row-major
  const Index* original;
  const R* pos[D];
  R inv_length[D];  // 0 on open axes
  Index n;
  std::int32_t* out;
  template <class A>
  CELLINT_HD void operator()(A&, Index s) const {
    for (int d = 0; d < D; ++d)
      out[d * static_cast<std::uint64_t>(n) + s] =
          inv_length[d] == R(0)
              ? 0
              : round_to_int((user[static_cast<std::uint64_t>(original[s]) * D + d] - pos[d][s]) * inv_length[d]);
  }
};

/// Sorted slot -> (user index, row-major sorted positions).
template <class R, int D>
struct SortedCopy {
  const Index* original;
  const R* pos[D];
  std::int64_t* index;
  R* xyz;
  template <class A>
  CELLINT_HD void operator()(A&, Index s) const {
    if (index) index[s] = original[s];
    if (xyz)
      for (int d = 0; d < D; ++d) xyz[static_cast<std::uint64_t>(s) * D + d] = pos[d][s];
  }
};

/// Writes per-particle results in the user's order: `put(user index, sorted slot, accumulator)`.
template <class Accum, class Put>
struct WriteUser {
  const Accum* acc;
  const Index* original;
  Put put;
  template <class A>
  CELLINT_HD void operator()(A&, Index s) const {
    put(original[s], s, acc[s]);
  }
};

/// Force (and energy, virial when asked) of LennardJones / SoftSphere accumulators.
template <class R, int D>
struct PutForces {
  R* force;
  R* energy;
  R* virial;
  template <class Acc>
  CELLINT_HD void operator()(Index u, Index, const Acc& a) const {
    if (force)
      for (int d = 0; d < D; ++d) force[static_cast<std::uint64_t>(u) * D + d] = a.force[d];
    if (energy) energy[u] = a.energy;
    if constexpr (std::is_same<Acc, typename LennardJones<R, D>::Accum>::value) {
      if (virial) virial[u] = a.virial;
    }
  }
};

/// A scalar per particle, plus an optional self term (self_mass[s] or `mass`, times w0).
template <class T, class R>
struct PutScalar {
  T* out;
  const R* self_mass;
  R mass;
  R w0;
  template <class Acc>
  CELLINT_HD void operator()(Index u, Index s, const Acc& a) const {
    out[u] = static_cast<T>(a) + static_cast<T>((self_mass ? self_mass[s] : mass) * w0);
  }
};

/// Flags (the largest such user index, by atomic max) a particle whose row the second pass filled to another length
/// than the first counted.
struct RowCheck {
  const std::uint32_t* written;  // sorted order
  const std::uint32_t* count;    // user order
  const Index* original;
  int* bad;
  template <class A>
  CELLINT_HD void operator()(A& a, Index s) const {
    const Index u = original[s];
    if (written[s] != count[u]) a.atomic_max(bad, static_cast<int>(u));
  }
};

/// The total of an exclusive scan: its last offset plus the last count.
struct LastRow {
  const std::uint32_t* count;
  const std::uint32_t* offset;
  Index n;
  std::uint64_t* total;
  template <class A>
  CELLINT_HD void operator()(A&, Index) const {
    *total = std::uint64_t(offset[n - 1]) + count[n - 1];
  }
};

/// Row offsets of the pair search: offset[t] = sum of count[u] for u < t (user order), and the total. Refuses a total
/// of 2^32 pairs or more (the arrays alone would take over 100 GB). `bound` is an upper bound of the total: below 2^32
/// the 32-bit scan cannot wrap; above it the counts are summed exactly on the host first.
template <class B>
std::uint64_t exclusive_offsets(const std::uint32_t* count, std::uint32_t* offset, Index n, std::uint64_t bound,
                                std::uint64_t* word, typename B::Stream s) {
  if (n == 0) return 0;
  if (bound >= (std::uint64_t(1) << 32)) {
    std::vector<std::uint32_t> c(static_cast<std::size_t>(n));
    B::copy(c.data(), count, c.size() * sizeof(std::uint32_t), CopyKind::DeviceToHost, s);
    B::synchronize(s);
    std::uint64_t sum = 0;
    for (std::uint32_t v : c) sum += v;
    CELLINT_EXPECTS(sum < (std::uint64_t(1) << 32), "cellint.neighbor_pairs: ", sum,
                    " pairs are more than one call "
                    "can return (2^32); use a smaller cutoff or fewer particles per call");
  }
  B::exclusive_scan(count, offset, n, s);
  detail::parallel_for<B>(1, LastRow{count, offset, n, word}, s);  // one read-back instead of two
  std::uint64_t total = 0;
  B::copy(&total, word, sizeof(total), CopyKind::DeviceToHost, s);
  B::synchronize(s);
  return total;
}

}  // namespace cellint::py
