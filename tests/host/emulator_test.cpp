// Tests of the Emulated backend itself: shuffled thread order, barriers, error reporting,
// launch validation, shared-memory poisoning and the cost of barriers.

#include <catch2/catch.hpp>

#include <algorithm>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

#include "cellint/backend/emulated.hpp"

using cellint::Emulated;
using cellint::LaunchShape;

namespace {
namespace emulator_test {

/// Restores the process-wide options when a test ends.
struct OptionsGuard {
  cellint::EmulatedOptions saved = Emulated::options();
  ~OptionsGuard() { Emulated::options() = saved; }
};

/// Each thread writes shared[t] = t + 1, then reads its right neighbour's entry, with or without
/// the barrier that makes this correct.
struct NeighbourKernel {
  unsigned* out;
  bool barrier;
  template <class Block>
  void operator()(Block& b) const {
    unsigned* s = b.template shared<unsigned>();
    const unsigned t = b.thread_rank(), n = b.block_size();
    s[t] = t + 1;
    if (barrier) b.sync();
    out[b.block_rank() * n + t] = s[(t + 1) % n];
  }
};

/// Records the order in which the threads of one block run, before and after a barrier.
struct OrderKernel {
  unsigned* counter;  // two counters
  unsigned* order;    // 2 * block_size entries: ticket of each thread in phase 0 and 1
  template <class Block>
  void operator()(Block& b) const {
    const unsigned t = b.thread_rank(), n = b.block_size();
    order[t] = b.atomic_add(&counter[0], 1u);
    b.sync();
    order[n + t] = b.atomic_add(&counter[1], 1u);
  }
};

/// Half of the threads return early; the others wait at a barrier.
struct DivergentKernel {
  template <class Block>
  void operator()(Block& b) const {
    if (b.thread_rank() % 2 == 0) return;
    b.sync();
  }
};

/// Thread 0 crosses one barrier more than the others.
struct ExtraBarrierKernel {
  template <class Block>
  void operator()(Block& b) const {
    b.sync();
    if (b.thread_rank() == 0) b.sync();
  }
};

struct KernelFailure : std::runtime_error {
  using std::runtime_error::runtime_error;
};

/// Thread 5 of block 3 throws, after a barrier.
struct ThrowingKernel {
  template <class Block>
  void operator()(Block& b) const {
    b.sync();
    if (b.block_rank() == 3 && b.thread_rank() == 5) throw KernelFailure("thread 5 of block 3 failed");
    b.sync();
  }
};

/// Counts the threads that ran.
struct CountKernel {
  unsigned* count;
  template <class Block>
  void operator()(Block& b) const {
    b.atomic_add(count, 1u);
  }
};

/// Copies the (unwritten) shared memory out.
struct ReadSharedKernel {
  unsigned char* out;
  unsigned bytes;
  template <class Block>
  void operator()(Block& b) const {
    if (b.thread_rank() == 0)
      for (unsigned i = 0; i < bytes; ++i) out[i] = b.template shared<unsigned char>()[i];
  }
};

/// Writes one byte past the end of `bytes` of shared memory.
struct OverrunKernel {
  unsigned bytes;
  template <class Block>
  void operator()(Block& b) const {
    if (b.thread_rank() == 0) b.template shared<unsigned char>()[bytes] = 1;
  }
};

/// Accumulates over `rounds` barrier-separated rounds, each reading a neighbour written in the
/// round before (result: out[t] = rounds * block_size).
struct ManyBarriersKernel {
  unsigned* out;
  int rounds;
  template <class Block>
  void operator()(Block& b) const {
    unsigned* s = b.template shared<unsigned>();
    const unsigned t = b.thread_rank(), n = b.block_size();
    unsigned acc = 0;
    s[t] = 1;
    b.sync();
    for (int r = 0; r < rounds; ++r) {
      const unsigned v = s[(t + static_cast<unsigned>(r) + 1) % n];
      b.sync();
      acc += v * n;
      s[t] = 1;
      b.sync();
    }
    out[t] = acc;
  }
};

/// Uses a large stack frame.
struct BigStackKernel {
  unsigned* out;
  template <class Block>
  void operator()(Block& b) const {
    volatile unsigned char buf[100 * 1024];
    for (unsigned i = 0; i < sizeof(buf); i += 4096) buf[i] = static_cast<unsigned char>(i >> 12);
    b.sync();
    unsigned sum = 0;
    for (unsigned i = 0; i < sizeof(buf); i += 4096) sum += buf[i];
    out[b.thread_rank()] = sum;
  }
};

/// Launches a kernel from inside a kernel (not allowed).
struct NestedKernel {
  unsigned* count;
  template <class Block>
  void operator()(Block&) const {
    Emulated::launch(LaunchShape{1, 1, 0}, CountKernel{count});
  }
};

std::vector<unsigned> run_neighbour(unsigned grid, unsigned block, bool barrier) {
  std::vector<unsigned> out(std::size_t(grid) * block, 0);
  Emulated::launch(LaunchShape{grid, block, block * sizeof(unsigned)}, NeighbourKernel{out.data(), barrier});
  return out;
}

std::vector<unsigned> neighbour_expected(unsigned grid, unsigned block) {
  std::vector<unsigned> want(std::size_t(grid) * block);
  for (unsigned r = 0; r < grid; ++r)
    for (unsigned t = 0; t < block; ++t) want[r * block + t] = (t + 1) % block + 1;
  return want;
}

}  // namespace emulator_test
}  // namespace

TEST_CASE("emulated: properties are the H100's limits", "[emulated]") {
  const cellint::DeviceProperties p = Emulated::properties();
  CHECK(p.multiprocessors == 132);
  CHECK(p.shared_per_block == 48 * 1024);
  CHECK(p.shared_per_block_optin == 227 * 1024);
  CHECK(p.shared_per_multiprocessor == 228 * 1024);
  CHECK(p.max_threads_per_block == 1024);
  CHECK(p.max_threads_per_multiprocessor == 2048);
  CHECK(p.warp_size == 32);
  CHECK(std::string(p.name) == "emulated (H100-like limits)");
  CHECK(std::string(Emulated::name()) == "emulated");
  CHECK(Emulated::is_gpu_like);
  CHECK(Emulated::warp_size == 32);
  CHECK(Emulated::max_threads_for(emulator_test::CountKernel{nullptr}) == 1024);
}

TEST_CASE("emulated: a missing barrier gives a wrong answer under shuffle", "[emulated]") {
  using namespace emulator_test;
  OptionsGuard guard;
  Emulated::options().shuffle = true;
  const unsigned grid = 3, block = 256;
  const auto want = neighbour_expected(grid, block);
  for (std::uint64_t seed = 1; seed <= 20; ++seed) {
    CAPTURE(seed);
    Emulated::options().seed = seed;
    // Guards the emulator: the racy kernel must fail, or the emulator would hide missing barriers.
    REQUIRE(run_neighbour(grid, block, false) != want);
  }
  for (std::uint64_t seed = 1; seed <= 50; ++seed) {
    CAPTURE(seed);
    Emulated::options().seed = seed;
    REQUIRE(run_neighbour(grid, block, true) == want);
  }
  Emulated::options().shuffle = false;
  CHECK(run_neighbour(grid, block, true) == want);
  CHECK(run_neighbour(grid, block, false) != want);  // thread order: t reads t+1 before it writes
}

TEST_CASE("emulated: the thread order is a reproducible permutation per phase", "[emulated]") {
  using namespace emulator_test;
  OptionsGuard guard;
  Emulated::options().parallel_blocks = false;
  const unsigned n = 200;
  const auto run = [&] {
    std::vector<unsigned> counter(2, 0), order(2 * n, 0);
    Emulated::launch(LaunchShape{1, n, 0}, OrderKernel{counter.data(), order.data()});
    return order;
  };
  std::vector<unsigned> identity(2 * n);
  for (unsigned t = 0; t < n; ++t) identity[t] = identity[n + t] = t;

  Emulated::options().shuffle = false;
  CHECK(run() == identity);

  Emulated::options().shuffle = true;
  Emulated::options().seed = 42;
  const auto a = run();
  CHECK(a != identity);
  CHECK(run() == a);  // same seed, same order
  const std::vector<unsigned> phase0(a.begin(), a.begin() + n), phase1(a.begin() + n, a.end());
  CHECK(phase0 != phase1);  // a fresh permutation after the barrier
  for (const auto* p : {&phase0, &phase1}) {
    std::vector<unsigned> seen(n, 0);
    for (unsigned v : *p) ++seen[v];
    CHECK(std::count(seen.begin(), seen.end(), 1u) == static_cast<std::ptrdiff_t>(n));
  }
  Emulated::options().seed = 43;
  CHECK(run() != a);
}

TEST_CASE("emulated: a barrier not reached by every thread throws", "[emulated]") {
  using namespace emulator_test;
  OptionsGuard guard;
  for (bool parallel : {false, true}) {
    Emulated::options().parallel_blocks = parallel;
    // 64 x 64 threads: enough for the blocks to run in parallel when allowed.
    CHECK_THROWS_AS(Emulated::launch(LaunchShape{64, 64, 0}, DivergentKernel{}), cellint::Error);
    CHECK_THROWS_WITH(Emulated::launch(LaunchShape{64, 64, 0}, DivergentKernel{}),
                      Catch::Contains("barrier reached by 32 of 64 threads of block ") &&
                          Catch::Contains("returned"));
    CHECK_THROWS_WITH(Emulated::launch(LaunchShape{1, 64, 0}, DivergentKernel{}),
                      Catch::Contains("barrier reached by 32 of 64 threads of block 0"));
    CHECK_THROWS_WITH(Emulated::launch(LaunchShape{128, 33, 0}, ExtraBarrierKernel{}),
                      Catch::Contains("barrier reached by 1 of 33 threads"));
    // The emulator is usable again afterwards.
    unsigned count = 0;
    Emulated::launch(LaunchShape{5, 100, 0}, CountKernel{&count});
    CHECK(count == 500u);
    const auto want = neighbour_expected(4, 128);
    CHECK(run_neighbour(4, 128, true) == want);
  }
}

TEST_CASE("emulated: an exception thrown in a kernel leaves launch", "[emulated]") {
  using namespace emulator_test;
  OptionsGuard guard;
  for (bool parallel : {false, true}) {
    Emulated::options().parallel_blocks = parallel;
    CHECK_THROWS_AS(Emulated::launch(LaunchShape{64, 64, 0}, ThrowingKernel{}), KernelFailure);
    CHECK_THROWS_WITH(Emulated::launch(LaunchShape{64, 64, 0}, ThrowingKernel{}), "thread 5 of block 3 failed");
    unsigned count = 0;
    Emulated::launch(LaunchShape{3, 1024, 0}, CountKernel{&count});
    CHECK(count == 3u * 1024u);
  }
}

TEST_CASE("emulated: invalid launch shapes throw InvalidArgument", "[emulated]") {
  using namespace emulator_test;
  unsigned count = 0;
  CHECK_THROWS_AS(Emulated::launch(LaunchShape{1, 0, 0}, CountKernel{&count}), cellint::InvalidArgument);
  CHECK_THROWS_AS(Emulated::launch(LaunchShape{1, 1025, 0}, CountKernel{&count}), cellint::InvalidArgument);
  CHECK_THROWS_WITH(Emulated::launch(LaunchShape{1, 1025, 0}, CountKernel{&count}), Catch::Contains("1..1024"));
  CHECK_THROWS_AS(Emulated::launch(LaunchShape{1, 32, 227 * 1024 + 1}, CountKernel{&count}),
                  cellint::InvalidArgument);
  CHECK_THROWS_WITH(Emulated::launch(LaunchShape{1, 32, 227 * 1024 + 1}, CountKernel{&count}),
                    Catch::Contains("shared memory"));
  CHECK(count == 0u);
  Emulated::launch(LaunchShape{0, 32, 0}, CountKernel{&count});  // empty grid: nothing runs
  CHECK(count == 0u);
  Emulated::launch(LaunchShape{2, 32, 227 * 1024}, CountKernel{&count});  // at the limit
  CHECK(count == 64u);
}

TEST_CASE("emulated: shared memory is poisoned and overruns are reported", "[emulated]") {
  using namespace emulator_test;
  OptionsGuard guard;
  std::vector<unsigned char> out(256, 0);
  Emulated::options().poison_shared = true;
  Emulated::launch(LaunchShape{1, 4, 256}, ReadSharedKernel{out.data(), 256});
  CHECK(std::count(out.begin(), out.end(), 0xCD) == 256);

  CHECK_THROWS_WITH(Emulated::launch(LaunchShape{2, 8, 100}, OverrunKernel{100}),
                    Catch::Contains("past the end of its dynamic shared memory"));
  Emulated::launch(LaunchShape{2, 8, 101}, OverrunKernel{100});  // in bounds
}

TEST_CASE("emulated: kernels cannot launch kernels", "[emulated]") {
  using namespace emulator_test;
  unsigned count = 0;
  CHECK_THROWS_WITH(Emulated::launch(LaunchShape{1, 2, 0}, NestedKernel{&count}),
                    Catch::Contains("cannot launch another kernel"));
  CHECK(count == 0u);
}

TEST_CASE("emulated: stack size option", "[emulated]") {
  using namespace emulator_test;
  OptionsGuard guard;
  Emulated::options().stack_bytes = 256 * 1024;
  std::vector<unsigned> out(16, 0);
  Emulated::launch(LaunchShape{2, 16, 0}, BigStackKernel{out.data()});
  unsigned want = 0;
  for (unsigned i = 0; i < 100 * 1024; i += 4096) want += static_cast<unsigned char>(i >> 12);
  CHECK(std::count(out.begin(), out.end(), want) == 16);
}

TEST_CASE("emulated: sort_pairs orders by the low key_bits bits only", "[emulated]") {
  std::vector<std::uint32_t> keys{0x100u | 3u, 1u, 0x200u | 1u, 2u};
  std::vector<cellint::Index> values{0, 1, 2, 3};
  Emulated::sort_pairs(keys.data(), values.data(), 4, 8);
  CHECK(values == std::vector<cellint::Index>{1, 2, 3, 0});
  CHECK(keys == std::vector<std::uint32_t>{1u, 0x201u, 2u, 0x103u});
  CHECK_THROWS_AS(Emulated::sort_pairs(keys.data(), values.data(), 4, 33), cellint::InvalidArgument);
  CHECK_THROWS_AS(Emulated::exclusive_scan(keys.data(), keys.data(), -1), cellint::InvalidArgument);
}

TEST_CASE("emulated: a 1024-thread block crosses 40 barriers quickly", "[emulated]") {
  using namespace emulator_test;
  OptionsGuard guard;
  Emulated::options().shuffle = true;
  const unsigned n = 1024;
  const int rounds = 20;  // two barriers per round
  std::vector<unsigned> out(n, 0);
  const auto t0 = std::chrono::steady_clock::now();
  Emulated::launch(LaunchShape{1, n, n * sizeof(unsigned)}, ManyBarriersKernel{out.data(), rounds});
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  CHECK(std::count(out.begin(), out.end(), static_cast<unsigned>(rounds) * n) == static_cast<std::ptrdiff_t>(n));
  // About 42k fiber switches: milliseconds (tens of ms with ucontext). The bound only catches
  // pathological slowness.
  CHECK(seconds < 5.0);
}
