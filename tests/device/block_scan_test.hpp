// Backend-agnostic tests of the in-place block scan (primitives/block_scan.hpp): every length
// 0..4096 for block sizes that are neither powers of two nor warp multiples, inclusive and
// exclusive, int / unsigned / float, a non-commutative operator, the class form, the exact
// barrier count of every thread, and (Emulated only) a shadow-memory check that no two threads
// touch the same element between two barriers unless both only read it.
//
// Compiled once per backend by tests/CMakeLists.txt, with CELLINT_TEST_BACKEND (the backend
// type), CELLINT_TEST_TAG (e.g. "[emulated]") and, for real GPUs, CELLINT_TEST_GPU defined.
// Inputs are random from a fresh seed per run (shown on failure); set CELLINT_TEST_SEED to
// replay one.
#pragma once

#include <catch2/catch.hpp>

#include <climits>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <new>
#include <random>
#include <string>
#include <type_traits>
#include <vector>

#include "cellint/backend/traits.hpp"
#include "cellint/core/macros.hpp"
#include "cellint/primitives/block_scan.hpp"

#include "support/device_backend.hpp"


namespace {
namespace block_scan_test {

using Backend = CELLINT_TEST_BACKEND;
using cellint::LaunchShape;

constexpr int max_n = 4096;
constexpr int block_sizes[] = {1, 32, 33, 97, 128, 256, 1024};

/// Seed of this run: CELLINT_TEST_SEED if set, else fresh from the system.
inline std::uint64_t run_seed() {
  static const std::uint64_t seed = []() -> std::uint64_t {
    if (const char* s = std::getenv("CELLINT_TEST_SEED")) return std::strtoull(s, nullptr, 0);
    std::random_device rd;
    return (static_cast<std::uint64_t>(rd()) << 32) ^ rd();
  }();
  return seed;
}

/// Owning array in backend memory.
template <class T>
class DeviceArray {
 public:
  explicit DeviceArray(std::size_t n)
      : n_(n), p_(static_cast<T*>(Backend::allocate((n > 0 ? n : 1) * sizeof(T)))) {}
  explicit DeviceArray(const std::vector<T>& host) : DeviceArray(host.size()) {
    if (n_) Backend::copy(p_, host.data(), n_ * sizeof(T), cellint::CopyKind::HostToDevice);
    Backend::synchronize();
  }
  DeviceArray(const DeviceArray&) = delete;
  DeviceArray& operator=(const DeviceArray&) = delete;
  ~DeviceArray() { Backend::deallocate(p_); }

  T* data() { return p_; }
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

/// Forwards the block API and counts this thread's barriers.
template <class Block>
struct CountingBlock {
  Block& b;
  int barriers = 0;
  CELLINT_HD unsigned thread_rank() const { return b.thread_rank(); }
  CELLINT_HD unsigned block_size() const { return b.block_size(); }
  CELLINT_HD unsigned block_rank() const { return b.block_rank(); }
  CELLINT_HD unsigned grid_size() const { return b.grid_size(); }
  CELLINT_HD void sync() {
    ++barriers;
    b.sync();
  }
};

/// Barrier counts the documentation promises, derived here from h = ceil(log2(n + 1)).
inline int tree_height(int n) {
  int h = 0;
  while ((1 << h) < n + 1) ++h;
  return h;
}
inline int expected_inclusive_barriers(int n) { return n < 2 ? 0 : 2 * tree_height(n) - 3; }
inline int expected_exclusive_barriers(int n) {
  return n < 2 ? 2 : n < 4 ? 3 : 2 * tree_height(n) - 2;
}

enum class Form { inclusive, exclusive, class_inclusive, class_exclusive };

inline const char* form_name(Form f) {
  switch (f) {
    case Form::inclusive: return "block_inclusive_scan_inplace";
    case Form::exclusive: return "block_exclusive_scan_inplace";
    case Form::class_inclusive: return "BlockScan::inclusive_sum";
    case Form::class_exclusive: return "BlockScan::exclusive_sum";
  }
  return "?";
}

/// Block `s` scans segment s, in[offset[s], offset[s+1]), through shared memory:
/// [TempStorage][data ...]. Records the block total seen by every thread (min / max over the
/// threads, int only) and the barrier count of every thread (min / max).
template <class T>
struct SegmentScanKernel {
  const T* in;
  T* out;
  T* totals;           // one per segment, written by thread 0
  const int* offsets;  // grid + 1
  int* barriers_min;   // one per segment, preset to INT_MAX
  int* barriers_max;   // one per segment, preset to INT_MIN
  Form form;

  template <class Block>
  CELLINT_HD void operator()(Block& b) const {
    using Scan = cellint::BlockScan<T>;
    const int seg = static_cast<int>(b.block_rank());
    const int t = static_cast<int>(b.thread_rank());
    const int bs = static_cast<int>(b.block_size());
    const int begin = offsets[seg];
    const int n = offsets[seg + 1] - begin;
    auto* storage = b.template shared<typename Scan::TempStorage>();
    T* s = reinterpret_cast<T*>(storage + 1);
    for (int i = t; i < n; i += bs) s[i] = in[begin + i];
    b.sync();

    CountingBlock<Block> cb{b};
    T total = T(0);
    switch (form) {
      case Form::inclusive:
        cellint::block_inclusive_scan_inplace(cb, s, n);
        total = n > 0 ? s[n - 1] : T(0);
        break;
      case Form::exclusive:
        cellint::block_exclusive_scan_inplace(cb, s, n, &storage->total);
        total = storage->total;
        break;
      case Form::class_inclusive: total = Scan(*storage).inclusive_sum(cb, s, n); break;
      case Form::class_exclusive: total = Scan(*storage).exclusive_sum(cb, s, n); break;
    }
    for (int i = t; i < n; i += bs) out[begin + i] = s[i];
    if (t == 0) totals[seg] = total;
    b.atomic_min(barriers_min + seg, cb.barriers);
    b.atomic_max(barriers_max + seg, cb.barriers);
  }
};

/// Random inputs of type T.
template <class T>
T random_value(std::mt19937_64& rng);
template <>
inline unsigned random_value<unsigned>(std::mt19937_64& rng) {
  return static_cast<unsigned>(rng());  // full range: sums wrap modulo 2^32 on both sides
}
template <>
inline int random_value<int>(std::mt19937_64& rng) {
  return static_cast<int>(rng() % 2001) - 1000;  // no overflow for 4096 terms
}
template <>
inline float random_value<float>(std::mt19937_64& rng) {
  return static_cast<float>(rng() % (1u << 24)) / static_cast<float>(1u << 24);
}

/// Tolerance of a float prefix: tree summation error grows with the depth (< 2 log2 n + 2).
inline bool close_enough(float got, double want, double abs_prefix) {
  return std::fabs(static_cast<double>(got) - want) <= 40.0 * 6e-8 * abs_prefix + 1e-30;
}

/// Scans every length in `lengths` (one block each) with one launch of block size `bs` and
/// checks values, totals and barrier counts against a host scan.
template <class T>
void check_segments(const std::vector<int>& lengths, int bs, Form form, std::uint64_t seed) {
  const int grid = static_cast<int>(lengths.size());
  std::vector<int> offsets(grid + 1, 0);
  int longest = 0;
  for (int s = 0; s < grid; ++s) {
    offsets[s + 1] = offsets[s] + lengths[s];
    longest = lengths[s] > longest ? lengths[s] : longest;
  }
  const int total_n = offsets[grid];
  std::mt19937_64 rng(seed);
  std::vector<T> h_in(total_n);
  for (T& v : h_in) v = random_value<T>(rng);

  DeviceArray<T> d_in(h_in), d_out(total_n), d_totals(grid);
  DeviceArray<int> d_offsets(offsets);
  DeviceArray<int> d_bmin(std::vector<int>(grid, INT_MAX)), d_bmax(std::vector<int>(grid, INT_MIN));
  SegmentScanKernel<T> k{};
  k.in = d_in.data();
  k.out = d_out.data();
  k.totals = d_totals.data();
  k.offsets = d_offsets.data();
  k.barriers_min = d_bmin.data();
  k.barriers_max = d_bmax.data();
  k.form = form;
  const std::size_t shared = sizeof(typename cellint::BlockScan<T>::TempStorage) +
                             sizeof(T) * static_cast<std::size_t>(longest);
  Backend::launch(LaunchShape{static_cast<unsigned>(grid), static_cast<unsigned>(bs), shared}, k);
  const std::vector<T> out = d_out.download(), totals = d_totals.download();
  const std::vector<int> bmin = d_bmin.download(), bmax = d_bmax.download();

  const bool exclusive = form == Form::exclusive || form == Form::class_exclusive;
  int bad_values = 0, bad_totals = 0, bad_barriers = 0;
  std::string first;
  for (int s = 0; s < grid; ++s) {
    const int n = lengths[s];
    const int b0 = offsets[s];
    T acc = T(0);
    double dacc = 0.0, abs_acc = 0.0;
    bool seg_ok = true;
    for (int i = 0; i < n; ++i) {
      const T x = h_in[b0 + i];
      if (!exclusive) {
        acc = static_cast<T>(acc + x);
        dacc += static_cast<double>(x);
        abs_acc += std::fabs(static_cast<double>(x));
      }
      bool ok;
      if constexpr (std::is_floating_point_v<T>)
        ok = close_enough(out[b0 + i], dacc, abs_acc);
      else
        ok = out[b0 + i] == acc;
      if (!ok && seg_ok && first.empty())
        first = "n=" + std::to_string(n) + " i=" + std::to_string(i) + " got " +
                std::to_string(out[b0 + i]) + " want " + std::to_string(acc);
      seg_ok = seg_ok && ok;
      if (exclusive) {
        acc = static_cast<T>(acc + x);
        dacc += static_cast<double>(x);
        abs_acc += std::fabs(static_cast<double>(x));
      }
    }
    bad_values += !seg_ok;
    bool tot_ok;
    if constexpr (std::is_floating_point_v<T>)
      tot_ok = close_enough(totals[s], dacc, abs_acc);
    else
      tot_ok = totals[s] == acc;
    bad_totals += !tot_ok;
    const int want_barriers =
        exclusive ? expected_exclusive_barriers(n) : expected_inclusive_barriers(n);
    const int formula = exclusive ? cellint::block_exclusive_scan_barriers(n)
                                  : cellint::block_inclusive_scan_barriers(n);
    if (bmin[s] != want_barriers || bmax[s] != want_barriers || formula != want_barriers) {
      if (bad_barriers == 0)
        UNSCOPED_INFO("n=" << n << ": barriers per thread in [" << bmin[s] << ", " << bmax[s]
                           << "], expected " << want_barriers << " (documented " << formula << ")");
      ++bad_barriers;
    }
  }
  INFO(form_name(form) << ", block size " << bs << ", " << grid
                       << " segments, first bad: " << first);
  CHECK(bad_values == 0);
  CHECK(bad_totals == 0);
  CHECK(bad_barriers == 0);
}

inline std::vector<int> all_lengths(int lo, int hi) {
  std::vector<int> v;
  for (int n = lo; n <= hi; ++n) v.push_back(n);
  return v;
}

/// Every length up to 300, then lengths where the structure of the scan changes: around each
/// power of two P (a new tree level) and 3P/2 (the root's right child appears), around each
/// multiple of the block size and of twice it (the threads' loops gain an iteration), and every
/// 37th length in between.
inline std::vector<int> dense_lengths(int bs) {
  std::vector<char> take(max_n + 1, 0);
  const auto around = [&](int c) {
    for (int n = c - 2; n <= c + 2; ++n)
      if (n >= 0 && n <= max_n) take[n] = 1;
  };
  for (int n = 0; n <= 300; ++n) take[n] = 1;
  for (int p = 256; p <= max_n; p *= 2) {
    around(p);
    around(3 * p / 2);
  }
  for (int c = bs; c <= max_n; c += bs) around(c);
  for (int n = 301; n <= max_n; n += 37) take[n] = 1;
  std::vector<int> v;
  for (int n = 0; n <= max_n; ++n)
    if (take[n]) v.push_back(n);
  return v;
}

#if !defined(CELLINT_TEST_GPU)
/// Emulated only: sets the thread-order seed of the Emulated scheduler for one test and
/// restores it afterwards.
struct EmulatedSeed {
  std::uint64_t saved;
  explicit EmulatedSeed(std::uint64_t s) : saved(cellint::Emulated::options().seed) {
    cellint::Emulated::options().seed = s;
  }
  ~EmulatedSeed() { cellint::Emulated::options().seed = saved; }
};
#endif

// ---- non-commutative operator -----------------------------------------------------------------

/// Contiguous index interval [lo, hi]; empty when lo > hi. Concatenation is associative but not
/// commutative, and flags operands that are not adjacent in the right order.
struct Interval {
  int lo, hi, bad;
};
struct Concat {
  CELLINT_HD Interval operator()(const Interval& a, const Interval& b) const {
    if (a.lo > a.hi) return b;
    if (b.lo > b.hi) return a;
    return Interval{a.lo, b.hi, a.bad | b.bad | (a.hi + 1 != b.lo ? 1 : 0)};
  }
};

/// Block s scans the intervals {i, i} of a segment of length lengths[s] (given by offsets).
struct ConcatKernel {
  Interval* out;
  Interval* totals;
  const int* offsets;
  bool exclusive;

  template <class Block>
  CELLINT_HD void operator()(Block& b) const {
    const int seg = static_cast<int>(b.block_rank());
    const int t = static_cast<int>(b.thread_rank());
    const int bs = static_cast<int>(b.block_size());
    const int begin = offsets[seg];
    const int n = offsets[seg + 1] - begin;
    Interval* s = b.template shared<Interval>();
    for (int i = t; i < n; i += bs) s[i] = Interval{i, i, 0};
    b.sync();
    if (exclusive)
      cellint::block_exclusive_scan_inplace(b, s, n, s + n, Interval{1, 0, 0}, Concat{});
    else
      cellint::block_inclusive_scan_inplace(b, s, n, Concat{});
    for (int i = t; i < n; i += bs) out[begin + i] = s[i];
    if (t == 0) totals[seg] = exclusive ? s[n] : (n > 0 ? s[n - 1] : Interval{1, 0, 0});
  }
};

}  // namespace block_scan_test
}  // namespace

// ---- tests --------------------------------------------------------------------------------------

// On GPUs every block size scans every length 0..4096. On Emulated, where a block of B threads
// crossing K barriers costs about B * K fiber switches (~35 ns each), the block sizes 256 and
// 1024 scan every length up to 300 and a dense subset above it (see dense_lengths); the
// hidden "[slow]" case below adds every length for them too.
TEST_CASE("block scan: every length 0..4096, unsigned, inclusive and exclusive",
          "[block_scan]" CELLINT_TEST_TAG) {
  using namespace block_scan_test;
  const std::uint64_t seed = run_seed();
  INFO("seed " << seed << " (CELLINT_TEST_SEED=" << seed << " replays it)");
#if !defined(CELLINT_TEST_GPU)
  EmulatedSeed order(seed);
  constexpr bool full = false;
#else
  constexpr bool full = true;
#endif
  const std::vector<int> every = all_lengths(0, max_n);
  for (int bs : block_sizes) {
    const std::vector<int> lengths = full || bs <= 128 ? every : dense_lengths(bs);
    check_segments<unsigned>(lengths, bs, Form::inclusive, seed + bs);
    check_segments<unsigned>(lengths, bs, Form::exclusive, seed + bs + 1);
  }
}

#if !defined(CELLINT_TEST_GPU)
TEST_CASE("block scan: every length 0..4096 for block sizes 256 and 1024 (slow on Emulated)",
          "[.][slow][block_scan_slow]" CELLINT_TEST_TAG) {
  using namespace block_scan_test;
  const std::uint64_t seed = run_seed();
  INFO("seed " << seed << " (CELLINT_TEST_SEED=" << seed << " replays it)");
  EmulatedSeed order(seed);
  const std::vector<int> every = all_lengths(0, max_n);
  for (int bs : {256, 1024}) {
    check_segments<unsigned>(every, bs, Form::inclusive, seed + bs);
    check_segments<unsigned>(every, bs, Form::exclusive, seed + bs + 1);
  }
}
#endif

TEST_CASE("block scan: int, float and the class form", "[block_scan]" CELLINT_TEST_TAG) {
  using namespace block_scan_test;
  const std::uint64_t seed = run_seed();
  INFO("seed " << seed << " (CELLINT_TEST_SEED=" << seed << " replays it)");
#if !defined(CELLINT_TEST_GPU)
  EmulatedSeed order(seed ^ 0x5bd1e995u);
#endif
  std::vector<int> lengths = all_lengths(0, 300);
  for (int n : {729, 767, 768, 1000, 1023, 1024, 1025, 1331, 1535, 1536, 1728, 2047, 2048, 2049,
                3071, 3072, 3375, 4095, 4096})
    lengths.push_back(n);
  for (int bs : {1, 33, 97, 1000}) {
    check_segments<int>(lengths, bs, Form::class_inclusive, seed + 11 * bs);
    check_segments<int>(lengths, bs, Form::class_exclusive, seed + 11 * bs + 1);
    check_segments<float>(lengths, bs, Form::inclusive, seed + 11 * bs + 2);
    check_segments<float>(lengths, bs, Form::exclusive, seed + 11 * bs + 3);
  }
}

TEST_CASE("block scan: a non-commutative operator is applied left to right",
          "[block_scan]" CELLINT_TEST_TAG) {
  using namespace block_scan_test;
#if !defined(CELLINT_TEST_GPU)
  EmulatedSeed order(run_seed() + 7);
#endif
  const std::vector<int> lengths = all_lengths(0, 1100);
  std::vector<int> offsets(lengths.size() + 1, 0);
  for (std::size_t s = 0; s < lengths.size(); ++s) offsets[s + 1] = offsets[s] + lengths[s];
  for (int bs : {1, 33, 128}) {
    for (bool exclusive : {false, true}) {
      DeviceArray<Interval> d_out(offsets.back()), d_totals(lengths.size());
      DeviceArray<int> d_offsets(offsets);
      Backend::launch(LaunchShape{static_cast<unsigned>(lengths.size()), static_cast<unsigned>(bs),
                                  sizeof(Interval) * (lengths.back() + 1)},
                      ConcatKernel{d_out.data(), d_totals.data(), d_offsets.data(), exclusive});
      const std::vector<Interval> out = d_out.download(), totals = d_totals.download();
      int bad = 0;
      for (std::size_t s = 0; s < lengths.size(); ++s) {
        const int n = lengths[s];
        for (int i = 0; i < n; ++i) {
          const Interval v = out[offsets[s] + i];
          const int want_hi = exclusive ? i - 1 : i;
          const bool ok = want_hi < 0 ? v.lo > v.hi : (v.lo == 0 && v.hi == want_hi && v.bad == 0);
          bad += !ok;
        }
        const Interval tot = totals[s];
        bad += !(n == 0 ? tot.lo > tot.hi : (tot.lo == 0 && tot.hi == n - 1 && tot.bad == 0));
      }
      INFO("block size " << bs << (exclusive ? ", exclusive" : ", inclusive"));
      CHECK(bad == 0);
    }
  }
}

#if !defined(CELLINT_TEST_GPU)
// ---- Emulated only: shadow-memory race check ----------------------------------------------------
//
// The Emulated backend runs the threads of a block as cooperative fibers on one OS thread, and
// switches fibers only inside sync(). So a thread_local pointer, set by each fiber whenever it
// resumes (kernel start, and after every barrier), always names the fiber that is running.
// Scanning a type whose copies and assignments report their addresses then records, for every
// element, who read and wrote it in which barrier interval: two threads touching one element in
// the same interval, one of them writing, is a race on a GPU whatever the order the emulator
// happened to pick.

namespace {
namespace block_scan_test {

/// Accesses to one element within the current barrier interval.
struct ShadowCell {
  int write_phase, writer, read_phase, reader, many_readers;
};

/// The running fiber's identity and the block's shadow memory.
struct RaceContext {
  int rank;
  int phase;
  const char* base;  // the scanned array
  const char* end;
  ShadowCell* shadow;  // one per element
  int* races;          // this block's race counter
};

inline RaceContext*& current_race_context() {
  static thread_local RaceContext* c = nullptr;
  return c;
}

/// Records a read or write of the element at `p` by the running fiber.
inline void record_access(const void* p, bool write) {
  RaceContext* c = current_race_context();
  const char* a = static_cast<const char*>(p);
  if (!c || a < c->base || a >= c->end) return;
  ShadowCell& s = c->shadow[(a - c->base) / sizeof(unsigned)];
  const bool other_wrote = s.write_phase == c->phase && s.writer != c->rank;
  if (write) {
    const bool other_read = s.read_phase == c->phase && (s.reader != c->rank || s.many_readers);
    if (other_wrote || other_read) ++*c->races;
    s.write_phase = c->phase;
    s.writer = c->rank;
  } else {
    if (other_wrote) ++*c->races;
    if (s.read_phase == c->phase) {
      s.many_readers |= s.reader != c->rank;
    } else {
      s.read_phase = c->phase;
      s.reader = c->rank;
      s.many_readers = 0;
    }
  }
}

/// An unsigned whose copies and assignments report the addresses they read and write.
struct Tracked {
  unsigned v = 0;
  Tracked() = default;
  Tracked(unsigned x) : v(x) {}  // NOLINT: implicit, like the T(0) the scan writes
  Tracked(const Tracked& o) : v(o.v) { record_access(&o, false); }
  Tracked& operator=(const Tracked& o) {
    record_access(&o, false);
    record_access(this, true);
    v = o.v;
    return *this;
  }
  friend Tracked operator+(const Tracked& a, const Tracked& b) {
    record_access(&a, false);
    record_access(&b, false);
    return Tracked(a.v + b.v);
  }
};
static_assert(sizeof(Tracked) == sizeof(unsigned), "shadow indexing assumes 4-byte elements");

/// Block API wrapper that keeps current_race_context() pointing at this fiber's context and
/// advances its barrier interval at every sync().
template <class Block>
struct RaceCheckingBlock {
  Block& b;
  RaceContext ctx;
  unsigned thread_rank() const { return b.thread_rank(); }
  unsigned block_size() const { return b.block_size(); }
  unsigned block_rank() const { return b.block_rank(); }
  unsigned grid_size() const { return b.grid_size(); }
  void activate() { current_race_context() = &ctx; }
  void sync() {
    current_race_context() = nullptr;
    b.sync();
    ++ctx.phase;
    activate();
  }
};

/// Block s scans lengths[s] Tracked values in shared memory under the race checker.
struct RaceKernel {
  const int* offsets;
  ShadowCell* shadow;  // offsets[grid] cells, preset to -1
  unsigned* out;
  int* races;  // one per block
  bool exclusive;

  template <class Block>
  void operator()(Block& b) const {
    current_race_context() = nullptr;
    const int seg = static_cast<int>(b.block_rank());
    const int t = static_cast<int>(b.thread_rank());
    const int bs = static_cast<int>(b.block_size());
    const int begin = offsets[seg];
    const int n = offsets[seg + 1] - begin;
    Tracked* s = b.template shared<Tracked>();
    for (int i = t; i < n + 1; i += bs)
      new (s + i) Tracked(static_cast<unsigned>(begin + i) * 2654435761u);
    b.sync();
    RaceCheckingBlock<Block> rb{b, RaceContext{t, 0, reinterpret_cast<const char*>(s),
                                               reinterpret_cast<const char*>(s + n + 1),
                                               shadow + begin + seg, races + seg}};
    rb.activate();
    if (exclusive)
      cellint::block_exclusive_scan_inplace(rb, s, n, s + n);
    else
      cellint::block_inclusive_scan_inplace(rb, s, n);
    current_race_context() = nullptr;
    for (int i = t; i < n + 1; i += bs) out[begin + seg + i] = s[i].v;
  }
};

}  // namespace block_scan_test
}  // namespace

TEST_CASE("block scan: no two threads touch an element between barriers unless both read",
          "[block_scan]" CELLINT_TEST_TAG) {
  using namespace block_scan_test;
  std::vector<int> lengths = all_lengths(0, 300);
  for (int n : {511, 512, 767, 768, 1000, 1536, 2047, 4096}) lengths.push_back(n);
  const int grid = static_cast<int>(lengths.size());
  std::vector<int> offsets(grid + 1, 0);
  for (int s = 0; s < grid; ++s) offsets[s + 1] = offsets[s] + lengths[s];
  const int cells = offsets[grid] + grid;  // n + 1 per block (the total slot)
  for (int bs : {1, 2, 3, 5, 32, 33, 97}) {
    for (bool exclusive : {false, true}) {
      DeviceArray<ShadowCell> d_shadow(
          std::vector<ShadowCell>(cells, ShadowCell{-1, -1, -1, -1, 0}));
      DeviceArray<unsigned> d_out(cells);
      DeviceArray<int> d_races(std::vector<int>(grid, 0));
      DeviceArray<int> d_offsets(offsets);
      Backend::launch(
          LaunchShape{static_cast<unsigned>(grid), static_cast<unsigned>(bs),
                      sizeof(Tracked) * (lengths.back() + 1)},
          RaceKernel{d_offsets.data(), d_shadow.data(), d_out.data(), d_races.data(), exclusive});
      const std::vector<int> races = d_races.download();
      const std::vector<unsigned> out = d_out.download();
      int racy = 0, wrong = 0, first_racy = -1;
      for (int s = 0; s < grid; ++s) {
        if (races[s] && first_racy < 0) first_racy = lengths[s];
        racy += races[s] != 0;
        const int n = lengths[s];
        unsigned acc = 0;
        for (int i = 0; i < n; ++i) {
          const unsigned x = static_cast<unsigned>(offsets[s] + i) * 2654435761u;
          if (!exclusive) acc += x;
          wrong += out[offsets[s] + s + i] != acc;
          if (exclusive) acc += x;
        }
        if (exclusive) wrong += out[offsets[s] + s + n] != acc;
      }
      INFO("block size " << bs << (exclusive ? ", exclusive" : ", inclusive") << ", first racy n "
                         << first_racy);
      CHECK(racy == 0);
      CHECK(wrong == 0);
    }
  }
}
#endif  // !CELLINT_TEST_GPU
