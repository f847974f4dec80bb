// Backend-agnostic tests of the block API (ranks, barriers, shared memory, atomics) and of the
// device-wide primitives (exclusive_scan, sort_pairs) of GPU-like backends.
//
// Compiled once per backend by tests/CMakeLists.txt, with CELLINT_TEST_BACKEND (the backend
// type), CELLINT_TEST_TAG (e.g. "[emulated]") and, for real GPUs, CELLINT_TEST_GPU defined.
#pragma once

#include <catch2/catch.hpp>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <numeric>
#include <random>
#include <vector>

#include "cellint/backend/traits.hpp"
#include "cellint/core/macros.hpp"

#include "support/device_backend.hpp"


namespace {
namespace kernel_api_test {

using Backend = CELLINT_TEST_BACKEND;
using cellint::Index;
using cellint::LaunchShape;

/// Owning array in backend memory, for tests.
template <class T>
class DeviceArray {
 public:
  explicit DeviceArray(std::size_t n)
      : n_(n), p_(static_cast<T*>(Backend::allocate((n > 0 ? n : 1) * sizeof(T)))) {}
  explicit DeviceArray(const std::vector<T>& host) : DeviceArray(host.size()) { upload(host); }
  DeviceArray(const DeviceArray&) = delete;
  DeviceArray& operator=(const DeviceArray&) = delete;
  ~DeviceArray() { Backend::deallocate(p_); }

  T* data() { return p_; }
  std::size_t size() const { return n_; }
  void upload(const std::vector<T>& host) {
    if (n_) Backend::copy(p_, host.data(), n_ * sizeof(T), cellint::CopyKind::HostToDevice);
    Backend::synchronize();
  }
  void zero() {
    if (n_) Backend::fill_bytes(p_, 0, n_ * sizeof(T));
    Backend::synchronize();
  }
  std::vector<T> download() const {
    Backend::synchronize();
    std::vector<T> host(n_);
    if (n_) Backend::copy(host.data(), p_, n_ * sizeof(T), cellint::CopyKind::DeviceToHost);
    Backend::synchronize();
    return host;
  }

 private:
  std::size_t n_;
  T* p_;
};

// ---- kernels ---------------------------------------------------------------------------------

/// Counts, per (block, thread), how often the kernel ran there, and flags wrong sizes.
struct RankKernel {
  unsigned* hits;        // grid * block counters
  unsigned* bad;         // one counter: threads that saw a wrong block_size or grid_size
  unsigned grid, block;
  template <class Block>
  CELLINT_HD void operator()(Block& b) const {
    const unsigned t = b.thread_rank(), r = b.block_rank();
    if (b.block_size() != block || b.grid_size() != grid || t >= block || r >= grid) {
      b.atomic_add(bad, 1u);
      return;
    }
    b.atomic_add(&hits[r * block + t], 1u);
  }
};

/// Per-block sum of `in` (grid-stride over the blocks) through a shared-memory tree with a
/// barrier after every level; works for any block size.
struct BlockSumKernel {
  const int* in;
  long long* out;  // one per block
  Index n;
  template <class Block>
  CELLINT_HD void operator()(Block& b) const {
    long long* s = b.template shared<long long>();
    const unsigned t = b.thread_rank(), nt = b.block_size();
    long long v = 0;
    for (Index i = static_cast<Index>(b.block_rank() * nt + t); i < n; i += static_cast<Index>(b.grid_size() * nt))
      v += in[i];
    s[t] = v;
    b.sync();
    unsigned half = 1;
    while (2 * half < nt) half *= 2;
    for (unsigned stride = half; stride > 0; stride /= 2) {
      if (t < stride && t + stride < nt) s[t] += s[t + stride];
      b.sync();
    }
    if (t == 0) out[b.block_rank()] = s[0];
  }
};

/// Every thread adds to one counter of each atomic type; the int add also hands out tickets.
struct AtomicAddKernel {
  int* i;
  unsigned* u;
  unsigned long long* ull;
  float* f;
  double* d;
  unsigned* tickets;  // tickets[old value of *i] counts how often that old value was returned
  template <class Block>
  CELLINT_HD void operator()(Block& b) const {
    const int old = b.atomic_add(i, 1);
    b.atomic_add(&tickets[old], 1u);
    b.atomic_add(u, 2u);
    b.atomic_add(ull, 1ull << 33);
    b.atomic_add(f, 0.5f);
    b.atomic_add(d, 0.25);
  }
};

/// Atomic max and min of per-thread values over the whole grid.
struct AtomicMinMaxKernel {
  int* imax;
  int* imin;
  unsigned* umax;
  unsigned* umin;
  template <class Block>
  CELLINT_HD void operator()(Block& b) const {
    const unsigned g = b.block_rank() * b.block_size() + b.thread_rank();
    const int iv = static_cast<int>((g * 7919u) % 100003u) - 50000;
    const unsigned uv = (g * 2654435761u) ^ 0x5bd1e995u;
    b.atomic_max(imax, iv);
    b.atomic_min(imin, iv);
    b.atomic_max(umax, uv);
    b.atomic_min(umin, uv);
  }
};

/// One thread checks the returned old values of a fixed sequence of atomics.
struct AtomicReturnKernel {
  int* ip;
  unsigned* up;
  int* results;  // 8 entries
  template <class Block>
  CELLINT_HD void operator()(Block& b) const {
    *ip = 10;
    *up = 10u;
    results[0] = b.atomic_max(ip, 7);                            // 10, stays 10
    results[1] = b.atomic_max(ip, 12);                           // 10, becomes 12
    results[2] = b.atomic_min(ip, -3);                           // 12, becomes -3
    results[3] = *ip;                                            // -3
    results[4] = static_cast<int>(b.atomic_max(up, 11u));        // 10, becomes 11
    results[5] = static_cast<int>(b.atomic_min(up, 4u));         // 11, becomes 4
    results[6] = static_cast<int>(b.atomic_add(up, 5u));         // 4, becomes 9
    results[7] = static_cast<int>(*up);                          // 9
  }
};

// ---- helpers ---------------------------------------------------------------------------------

std::vector<std::uint32_t> random_u32(std::size_t n, std::uint32_t below, unsigned seed) {
  std::mt19937 rng(seed);
  std::uniform_int_distribution<std::uint32_t> dist(0, below - 1);
  std::vector<std::uint32_t> v(n);
  for (auto& x : v) x = dist(rng);
  return v;
}

std::vector<std::uint32_t> host_exclusive_scan(const std::vector<std::uint32_t>& in) {
  std::vector<std::uint32_t> out(in.size());
  std::uint32_t sum = 0;
  for (std::size_t i = 0; i < in.size(); ++i) {
    out[i] = sum;
    sum += in[i];
  }
  return out;
}

}  // namespace kernel_api_test
}  // namespace

// ---- tests -----------------------------------------------------------------------------------

TEST_CASE("block API: every (block, thread) runs exactly once", "[block_api]" CELLINT_TEST_TAG) {
  using namespace kernel_api_test;
  const unsigned shapes[][2] = {{7, 97}, {1, 1}, {1, 1024}, {3, 33}, {130, 64}, {5, 1000}};
  for (const auto& s : shapes) {
    const unsigned grid = s[0], block = s[1];
    CAPTURE(grid, block);
    DeviceArray<unsigned> hits(std::size_t(grid) * block), bad(1);
    hits.zero();
    bad.zero();
    Backend::launch(LaunchShape{grid, block, 0}, RankKernel{hits.data(), bad.data(), grid, block});
    const auto h = hits.download();
    CHECK(bad.download()[0] == 0u);
    CHECK(std::count(h.begin(), h.end(), 1u) == static_cast<std::ptrdiff_t>(h.size()));
  }
}

TEST_CASE("block API: shared-memory block reduction with barriers", "[block_api]" CELLINT_TEST_TAG) {
  using namespace kernel_api_test;
  const Index n = 100003;
  std::vector<int> host(static_cast<std::size_t>(n));
  std::mt19937 rng(7);
  std::uniform_int_distribution<int> dist(-1000, 1000);
  for (auto& x : host) x = dist(rng);
  DeviceArray<int> in(host);
  const unsigned blocks[] = {1, 2, 31, 97, 128, 256, 1000, 1024};
  const unsigned grids[] = {1, 5, 13};
  for (unsigned block : blocks)
    for (unsigned grid : grids) {
      CAPTURE(block, grid);
      DeviceArray<long long> out(grid);
      Backend::launch(LaunchShape{grid, block, block * sizeof(long long)}, BlockSumKernel{in.data(), out.data(), n});
      const auto got = out.download();
      for (unsigned r = 0; r < grid; ++r) {
        long long want = 0;  // the elements i with (i / block) % grid == r
        for (Index i = 0; i < n; ++i)
          if ((static_cast<unsigned>(i) / block) % grid == r) want += host[static_cast<std::size_t>(i)];
        REQUIRE(got[r] == want);
      }
    }
}

TEST_CASE("block API: atomic_add from many blocks", "[block_api]" CELLINT_TEST_TAG) {
  using namespace kernel_api_test;
  const unsigned grid = 61, block = 256;
  const unsigned threads = grid * block;
  DeviceArray<int> i(1);
  DeviceArray<unsigned> u(1), tickets(threads);
  DeviceArray<unsigned long long> ull(1);
  DeviceArray<float> f(1);
  DeviceArray<double> d(1);
  i.zero();
  u.zero();
  tickets.zero();
  ull.zero();
  f.zero();
  d.zero();
  Backend::launch(LaunchShape{grid, block, 0},
                  AtomicAddKernel{i.data(), u.data(), ull.data(), f.data(), d.data(), tickets.data()});
  CHECK(i.download()[0] == static_cast<int>(threads));
  CHECK(u.download()[0] == 2u * threads);
  CHECK(ull.download()[0] == (1ull << 33) * threads);
  CHECK(f.download()[0] == 0.5f * static_cast<float>(threads));  // exact: multiples of 0.5 below 2^23
  CHECK(d.download()[0] == 0.25 * threads);
  const auto t = tickets.download();
  CHECK(std::count(t.begin(), t.end(), 1u) == static_cast<std::ptrdiff_t>(threads));  // each old value once
}

TEST_CASE("block API: atomic_max and atomic_min", "[block_api]" CELLINT_TEST_TAG) {
  using namespace kernel_api_test;
  const unsigned grid = 37, block = 128;
  DeviceArray<int> imax(std::vector<int>{-2147483647 - 1}), imin(std::vector<int>{2147483647});
  DeviceArray<unsigned> umax(std::vector<unsigned>{0u}), umin(std::vector<unsigned>{0xFFFFFFFFu});
  Backend::launch(LaunchShape{grid, block, 0}, AtomicMinMaxKernel{imax.data(), imin.data(), umax.data(), umin.data()});
  int want_imax = -2147483647 - 1, want_imin = 2147483647;
  unsigned want_umax = 0, want_umin = 0xFFFFFFFFu;
  for (unsigned g = 0; g < grid * block; ++g) {
    const int iv = static_cast<int>((g * 7919u) % 100003u) - 50000;
    const unsigned uv = (g * 2654435761u) ^ 0x5bd1e995u;
    want_imax = std::max(want_imax, iv);
    want_imin = std::min(want_imin, iv);
    want_umax = std::max(want_umax, uv);
    want_umin = std::min(want_umin, uv);
  }
  CHECK(imax.download()[0] == want_imax);
  CHECK(imin.download()[0] == want_imin);
  CHECK(umax.download()[0] == want_umax);
  CHECK(umin.download()[0] == want_umin);

  DeviceArray<int> ip(1), results(8);
  DeviceArray<unsigned> up(1);
  Backend::launch(LaunchShape{1, 1, 0}, AtomicReturnKernel{ip.data(), up.data(), results.data()});
  CHECK(results.download() == std::vector<int>{10, 10, 12, -3, 10, 11, 4, 9});
}

TEST_CASE("exclusive_scan matches the host scan", "[block_api][scan]" CELLINT_TEST_TAG) {
  using namespace kernel_api_test;
  const Index sizes[] = {0, 1, 2, 1000, 100000};
  for (Index n : sizes) {
    for (bool in_place : {false, true}) {
      CAPTURE(n, in_place);
      const auto host = random_u32(static_cast<std::size_t>(n), 1000, static_cast<unsigned>(n) + 1);
      const auto want = host_exclusive_scan(host);
      DeviceArray<std::uint32_t> in(host), out(static_cast<std::size_t>(n));
      if (in_place) {
        Backend::exclusive_scan(in.data(), in.data(), n);
        CHECK(in.download() == want);
      } else {
        Backend::exclusive_scan(in.data(), out.data(), n);
        CHECK(out.download() == want);
        CHECK(in.download() == host);  // input untouched
      }
    }
  }
  SECTION("wraps around modulo 2^32") {
    const std::vector<std::uint32_t> host{0xFFFFFFF0u, 0x20u, 5u};
    DeviceArray<std::uint32_t> a(host);
    Backend::exclusive_scan(a.data(), a.data(), 3);
    CHECK(a.download() == std::vector<std::uint32_t>{0u, 0xFFFFFFF0u, 0x10u});
  }
}

TEST_CASE("sort_pairs is a stable ascending sort by key", "[block_api][sort]" CELLINT_TEST_TAG) {
  using namespace kernel_api_test;
  struct Case {
    Index n;
    std::uint32_t key_below;  // keys in [0, key_below)
    int key_bits;
  };
  const Case cases[] = {{0, 1, 1},        {1, 5, 3},         {2, 2, 1},        {1000, 7, 3},
                        {1000, 1, 1},     {100000, 50, 6},   {100000, 3000, 12}, {100000, 1u << 31, 32},
                        {65537, 1u << 20, 20}};
  for (const Case& c : cases) {
    CAPTURE(c.n, c.key_below, c.key_bits);
    const std::size_t n = static_cast<std::size_t>(c.n);
    const auto keys = random_u32(n, c.key_below, 99u + static_cast<unsigned>(c.n));
    std::vector<Index> values(n);
    std::iota(values.begin(), values.end(), Index(0));
    DeviceArray<std::uint32_t> k(keys);
    DeviceArray<Index> v(values);
    Backend::sort_pairs(k.data(), v.data(), c.n, c.key_bits);
    const auto ks = k.download();
    const auto vs = v.download();
    // Reference: a stable sort of the indices by key.
    std::vector<Index> want(n);
    std::iota(want.begin(), want.end(), Index(0));
    std::stable_sort(want.begin(), want.end(),
                     [&](Index a, Index b) { return keys[static_cast<std::size_t>(a)] < keys[static_cast<std::size_t>(b)]; });
    REQUIRE(vs == want);
    bool keys_follow = true;
    for (std::size_t i = 0; i < n; ++i) keys_follow = keys_follow && ks[i] == keys[static_cast<std::size_t>(vs[i])];
    CHECK(keys_follow);
  }
}
