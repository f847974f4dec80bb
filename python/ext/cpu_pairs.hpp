#pragma once
// The pair search on the CPU: one pass over the half shell of every cell (each pair of cells once,
// each pair of particles once) into per-chunk buffers, which the second call streams out into the
// caller's arrays. The GPU path (calls.hpp) counts and then writes instead, with a thread per target.

#include <vector>

#include "cellint/backend/host.hpp"
#include "cellint/strategies/detail/neighbors.hpp"

#include "api.hpp"
#include "functors.hpp"

namespace cellint::py {

/// One pair as found: the sorted slots of both particles and the source's image in box lengths (-1, 0 or 1 per axis).
/// The second call recomputes the vector from these exactly as the search did.
struct FoundPair {
  Index a, b;
  std::int8_t image[4];
};

template <class R, int D>
struct CpuPairs {
  std::vector<std::vector<FoundPair>> chunks;  // in cell order: the output order
  std::vector<std::size_t> found;              // pairs of each chunk
  std::vector<std::uint64_t> first;            // output row of each chunk's first pair
  bool half = true;

  /// Finds every pair of `v` closer than sqrt(rc2), each once, and returns how many rows the output has.
  std::uint64_t find(const GridView<R, D>& v, R rc2, bool half_list) {
    half = half_list;
    const auto& g = v.geo;
    const Index cells = g.cell_count();
    const int threads = detail::host_threads_for(v.n, 2048);
    const Index nchunks = std::max<Index>(1, std::min<Index>(cells, 16 * static_cast<Index>(threads)));
    chunks.resize(static_cast<std::size_t>(nchunks));  // (buffers are kept from call to call)
    found.assign(chunks.size(), 0);
    const double per = static_cast<double>(v.n) / static_cast<double>(nchunks);
    detail::host_loop(nchunks, 1, threads, [&](Index k) {
      auto& out = chunks[static_cast<std::size_t>(k)];
      std::size_t n = 0;
      if (out.size() < static_cast<std::size_t>(per * 32) + 256) out.resize(static_cast<std::size_t>(per * 32) + 256);
      // the chunk's cells: those whose particles start in [k, k+1) * per
      const Index c0 = k == 0 ? 0 : first_cell(v, static_cast<Index>(k * per));
      const Index c1 = k + 1 == nchunks ? cells : first_cell(v, static_cast<Index>((k + 1) * per));
      const R* px[D];
      for (int d = 0; d < D; ++d) px[d] = v.pos[d];
      for (Index cell = c0; cell < c1; ++cell) {
        const Index i0 = v.cell_start[cell], i1 = v.cell_start[cell + 1];
        if (i0 == i1) continue;
        Index c[D];
        g.coords(cell, c);
        detail::for_each_neighbor_range<false>(g, c, [&](Index nb, Index, const Vec<R, D>& shift) {
          if (nb < cell) return;  // each pair of cells once (periodic axes have >= 3 cells)
          const Index j1 = v.cell_start[nb + 1];
          std::int8_t image[4] = {0, 0, 0, 0};  // the neighbour cell's image in box lengths
          for (int d = 0; d < D; ++d)
            image[d] = static_cast<std::int8_t>(g.box.periodic[d] ? round_to_int(shift[d] / g.box.lengths[d]) : 0);
          for (Index i = i0; i < i1; ++i) {
            const Index j0 = nb == cell ? i + 1 : v.cell_start[nb];
            if (n + static_cast<std::size_t>(j1 - j0) > out.size()) out.resize(2 * out.size() + (j1 - j0));
            FoundPair* slot = out.data();
            R xi[D];
            for (int d = 0; d < D; ++d) xi[d] = px[d][i] - shift[d];
            n = scan(slot, n, i, image, xi, px, j0, j1, rc2);
          }
        });
      }
      found[static_cast<std::size_t>(k)] = n;
    });
    first.assign(chunks.size() + 1, 0);
    for (std::size_t k = 0; k < chunks.size(); ++k) first[k + 1] = first[k] + found[k] * (half ? 1u : 2u);
    return first.back();
  }

  /// Streams the pairs found into the caller's arrays (with `half` i < j, else both directions): the vector x_j - x_i +
  /// S L (computed as in the search, to the bit), its length and the shift S = image + wrap_a - wrap_b (`wrap`: the
  /// grid's RecordWraps, axis after axis).
  void write(const GridView<R, D>& v, const std::int32_t* wrap, const PairsOut& o) {
    R* dist = static_cast<R*>(o.distance);
    R* vec = static_cast<R*>(o.vector);
    R len[D];
    for (int d = 0; d < D; ++d) len[d] = v.geo.box.lengths[d];
    const int threads = detail::host_threads_for(static_cast<long long>(first.back()), 1 << 15);
    detail::host_loop(static_cast<Index>(chunks.size()), 1, threads, [&](Index k) {
      const FoundPair* in = chunks[static_cast<std::size_t>(k)].data();
      const std::size_t n = found[static_cast<std::size_t>(k)];
      std::uint64_t row = first[static_cast<std::size_t>(k)];
      for (std::size_t q = 0; q < n; ++q) {
        const FoundPair& p = in[q];
        R ab[D];  // x_b - x_a at the image
        std::int32_t s[D];
        R r2 = 0;
        for (int d = 0; d < D; ++d) {
          const R shift = p.image[d] == 0 ? R(0) : p.image[d] > 0 ? len[d] : -len[d];
          ab[d] = v.pos[d][p.b] - (v.pos[d][p.a] - shift);
          r2 += ab[d] * ab[d];
          s[d] = p.image[d] + wrap[d * static_cast<std::size_t>(v.n) + p.a] -
                 wrap[d * static_cast<std::size_t>(v.n) + p.b];
        }
        const R r = std::sqrt(r2);
        const Index ua = v.original[p.a], ub = v.original[p.b];
        auto put = [&](Index i, Index j, int sign) {
          o.i[row] = i;
          o.j[row] = j;
          dist[row] = r;
          for (int d = 0; d < D; ++d) {
            if (vec) vec[row * D + d] = sign * ab[d];
            if (o.shift) o.shift[row * D + d] = sign * s[d];
          }
          ++row;
        };
        if (!half) {
          put(ua, ub, 1);
          put(ub, ua, -1);
        } else if (ua < ub) {
          put(ua, ub, 1);
        } else {
          put(ub, ua, -1);
        }
      }
    });
  }

 private:
  /// Tests sources [j0, j1) against one target and appends those inside at slot[n]; returns the new n. In blocks of 64
  /// sources: the distances in a loop the compiler vectorises, the indices of those inside compacted without a branch,
  /// then the pairs written for those alone.
  static std::size_t scan(FoundPair* __restrict slot, std::size_t n, Index i, const std::int8_t (&image)[4],
                          const R (&xi)[D], const R* const (&px)[D], Index j0, Index j1, R rc2) {
    constexpr Index block = 64;
    const R x0 = xi[0], x1 = xi[1], x2 = D == 3 ? xi[D - 1] : R(0);
    const R* __restrict p0 = px[0];
    const R* __restrict p1 = px[1];
    const R* __restrict p2 = px[D - 1];
    for (Index b = j0; b < j1; b += block) {
      const Index len = std::min(block, j1 - b);
      R r2[block];
      for (Index k = 0; k < len; ++k) {  // (no std::fma: without FMA hardware it is a library call)
        const R d0 = x0 - p0[b + k], d1 = x1 - p1[b + k];
        R t = d0 * d0 + d1 * d1;
        if constexpr (D == 3) {
          const R d2 = x2 - p2[b + k];
          t += d2 * d2;
        }
        r2[k] = t;
      }
      int hit[block];
      int m = 0;
      for (Index k = 0; k < len; ++k) {
        hit[m] = static_cast<int>(k);
        m += r2[k] < rc2 ? 1 : 0;
      }
      for (int q = 0; q < m; ++q) {
        FoundPair& p = slot[n++];
        p.a = i;
        p.b = b + hit[q];
        for (int d = 0; d < 4; ++d) p.image[d] = image[d];
      }
    }
    return n;
  }

  /// The first cell whose particles start at or after slot s.
  static Index first_cell(const GridView<R, D>& v, Index s) {
    Index lo = 0, hi = v.geo.cell_count();
    while (lo < hi) {
      const Index mid = lo + (hi - lo) / 2;
      if (v.cell_start[mid] < s)
        lo = mid + 1;
      else
        hi = mid;
    }
    return lo;
  }
};

}  // namespace cellint::py
