#pragma once
/// @file
/// The Host backend: plain CPU memory, serial or OpenMP loops. Strategies on this backend are
/// the CPU cell loops (full and half-shell), the Verlet list and the O(N^2) oracle.

#include <algorithm>
#include <cstdint>
#include <numeric>
#include <vector>

#include "cellint/backend/detail/host_memory.hpp"

#if defined(_OPENMP)
#  include <omp.h>
#endif

namespace cellint {

/// CPU backend (serial, or OpenMP when the translation unit is compiled with it).
struct Host : detail::HostMemory {
  static constexpr bool is_gpu_like = false;
  static constexpr int warp_size = 1;
  /// Backend name for logs.
  static const char* name() { return "host"; }
  /// Number of threads parallel loops use.
  static int threads() {
#if defined(_OPENMP)
    return omp_get_max_threads();
#else
    return 1;
#endif
  }
  /// Properties of the CPU seen as a device.
  static DeviceProperties properties() {
    DeviceProperties p;
    p.multiprocessors = threads();
    p.warp_size = 1;
    const char n[] = "host CPU";
    for (unsigned i = 0; i < sizeof(n); ++i) p.name[i] = n[i];
    return p;
  }
  /// Exclusive prefix sum of n values (in may equal out).
  static void exclusive_scan(const std::uint32_t* in, std::uint32_t* out, Index n, Stream = {}) {
    std::uint32_t run = 0;
    for (Index i = 0; i < n; ++i) {
      const std::uint32_t v = in[i];
      out[i] = run;
      run += v;
    }
  }
  /// Stable ascending sort of (key, value) pairs by key, in place.
  static void sort_pairs(std::uint32_t* keys, Index* values, Index n, int /*key_bits*/, Stream = {}) {
    std::vector<Index> order(static_cast<std::size_t>(n));
    std::iota(order.begin(), order.end(), 0);
    std::stable_sort(order.begin(), order.end(), [&](Index a, Index b) { return keys[a] < keys[b]; });
    std::vector<std::uint32_t> k(order.size());
    std::vector<Index> v(order.size());
    for (std::size_t i = 0; i < order.size(); ++i) {
      k[i] = keys[order[i]];
      v[i] = values[order[i]];
    }
    std::copy(k.begin(), k.end(), keys);
    std::copy(v.begin(), v.end(), values);
  }
};

namespace detail {
/// Runs body(i) for i in [0, n), in parallel with OpenMP when available, handing out `grain`
/// indices at a time.
template <class F>
void host_for(Index n, F&& body, int grain = 64) {
#if defined(_OPENMP)
#  pragma omp parallel for schedule(dynamic, grain)
  for (Index i = 0; i < n; ++i) body(i);
#else
  (void)grain;
  for (Index i = 0; i < n; ++i) body(i);
#endif
}
}  // namespace detail

}  // namespace cellint
