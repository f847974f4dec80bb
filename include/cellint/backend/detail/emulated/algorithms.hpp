#pragma once
// Device-wide primitives of the Emulated backend, run on the host: exclusive scan and a stable LSD radix sort of (key,
// value) pairs over the low `key_bits` bits (the semantics of CUB's DeviceScan::ExclusiveSum and
// DeviceRadixSort::SortPairs with end_bit = key_bits).

#include <cstdint>
#include <cstring>
#include <utility>
#include <vector>

#include "cellint/core/grid_geometry.hpp"

namespace cellint::detail::emulated {

/// out[i] = in[0] + ... + in[i-1] (mod 2^32); `in` may equal `out`.
inline void exclusive_scan(const std::uint32_t* in, std::uint32_t* out, Index n) {
  std::uint32_t sum = 0;
  for (Index i = 0; i < n; ++i) {
    const std::uint32_t v = in[i];
    out[i] = sum;
    sum += v;
  }
}

/// Stable sort of (keys[i], values[i]) by the low `key_bits` bits of the key, in place. Bits above `key_bits` are
/// carried along but do not take part in the order.
inline void radix_sort_pairs(std::uint32_t* keys, Index* values, Index n, int key_bits) {
  if (n <= 1 || key_bits <= 0) return;
  const std::uint32_t mask = key_bits >= 32 ? ~std::uint32_t(0) : (std::uint32_t(1) << key_bits) - 1;
  const std::size_t count = static_cast<std::size_t>(n);
  std::vector<std::uint32_t> key_tmp(count);
  std::vector<Index> value_tmp(count);
  std::uint32_t* ks = keys;
  Index* vs = values;
  std::uint32_t* kd = key_tmp.data();
  Index* vd = value_tmp.data();
  for (int shift = 0; shift < key_bits && shift < 32; shift += 8) {
    std::size_t offset[257] = {};
    for (std::size_t i = 0; i < count; ++i) ++offset[(((ks[i] & mask) >> shift) & 0xFFu) + 1];
    bool trivial = false;  // every key has the same digit: the pass would not move anything
    for (int d = 1; d <= 256; ++d) trivial = trivial || offset[d] == count;
    if (trivial) continue;
    for (int d = 1; d <= 256; ++d) offset[d] += offset[d - 1];
    for (std::size_t i = 0; i < count; ++i) {
      const std::size_t dst = offset[((ks[i] & mask) >> shift) & 0xFFu]++;
      kd[dst] = ks[i];
      vd[dst] = vs[i];
    }
    std::swap(ks, kd);
    std::swap(vs, vd);
  }
  if (ks != keys) {
    std::memcpy(keys, ks, count * sizeof(std::uint32_t));
    std::memcpy(values, vs, count * sizeof(Index));
  }
}

}  // namespace cellint::detail::emulated
