// The Host backend's parallel loops (detail::host_loop and its pool): every index runs exactly
// once for any size, grain and thread count, from concurrent callers and nested loops, and an
// exception thrown by the body reaches the caller.
#include <catch2/catch.hpp>

#include <atomic>
#include <stdexcept>
#include <thread>
#include <vector>

#include "cellint/backend/detail/parallel_for.hpp"
#include "cellint/backend/host.hpp"

using cellint::Index;
using cellint::detail::host_loop;

namespace {
/// Counts calls in out[0] (through the loop's atomics) and marks out[1 + i].
struct Mark {
  int* out;
  template <class A>
  void operator()(A& a, Index i) const {
    a.atomic_add(&out[0], 1);
    out[1 + i] += 1;
  }
};

/// Runs host_loop over n indices and checks that each index ran exactly once.
void expect_each_index_once(Index n, Index grain, int threads) {
  std::vector<std::atomic<int>> hits(static_cast<std::size_t>(n));
  for (auto& h : hits) h.store(0);
  host_loop(n, grain, threads, [&](Index i) { hits[static_cast<std::size_t>(i)].fetch_add(1); });
  Index wrong = 0;
  for (auto& h : hits) wrong += h.load() != 1;
  INFO("n " << n << ", grain " << grain << ", threads " << threads);
  CHECK(wrong == 0);
}
}  // namespace

TEST_CASE("host loops run every index exactly once", "[host][host-loop]") {
  for (int threads : {1, 2, 3, 8})
    for (Index grain : {1, 7, 64, 5000})
      for (Index n : {0, 1, 2, 63, 64, 65, 1000, 100003}) expect_each_index_once(n, grain, threads);
}

TEST_CASE("host loops from concurrent callers and nested loops all complete", "[host][host-loop]") {
  constexpr int callers = 4;
  constexpr Index n = 20000;
  std::vector<std::atomic<long long>> sums(callers);
  for (auto& s : sums) s.store(0);
  std::vector<std::thread> ts;
  for (int c = 0; c < callers; ++c)
    ts.emplace_back([&, c] {
      for (int round = 0; round < 20; ++round)
        host_loop(n, 97, 2, [&](Index i) { sums[static_cast<std::size_t>(c)].fetch_add(i); });
    });
  for (auto& t : ts) t.join();
  for (auto& s : sums) CHECK(s.load() == 20LL * n * (n - 1) / 2);

  // a loop whose body runs loops: the inner ones run on their calling thread
  std::atomic<long long> inner{0};
  host_loop(64, 1, 4, [&](Index) { host_loop(1000, 10, 4, [&](Index j) { inner.fetch_add(j); }); });
  CHECK(inner.load() == 64LL * 999 * 1000 / 2);
}

TEST_CASE("an exception in a host loop's body reaches the caller, and the pool stays usable", "[host][host-loop]") {
  for (int round = 0; round < 5; ++round) {
    CHECK_THROWS_WITH(host_loop(100000, 13, 4,
                                [&](Index i) {
                                  if (i == 77777) throw std::runtime_error("body failed at 77777");
                                }),
                      "body failed at 77777");
    expect_each_index_once(50000, 31, 4);
  }
}

TEST_CASE("parallel_for on Host visits every index once, small loops and large", "[host][host-loop]") {
  for (Index n : {1, 4095, 4096, 200000}) {
    std::vector<int> v(static_cast<std::size_t>(n) + 1, 0);
    cellint::detail::parallel_for<cellint::Host>(n, Mark{v.data()});
    CHECK(v[0] == n);
    Index wrong = 0;
    for (Index i = 0; i < n; ++i) wrong += v[1 + static_cast<std::size_t>(i)] != 1;
    CHECK(wrong == 0);
  }
}

#if defined(_OPENMP) && defined(__linux__)
#  include <omp.h>
#  include <sched.h>

#  include <mutex>
#  include <set>

// Run with OMP_PROC_BIND=true OMP_PLACES=cores (tests/CMakeLists.txt does): helpers must not all
// inherit the caller's pinned core.
TEST_CASE("with OpenMP thread binding, helpers run on other places than the caller", "[host][host-loop][binding]") {
  if (omp_get_proc_bind() == omp_proc_bind_false || omp_get_num_places() < 2 || omp_get_max_threads() < 2) {
    WARN("no OpenMP binding with two places here (OMP_PROC_BIND / OMP_PLACES / OMP_NUM_THREADS): nothing to check");
    return;
  }
  cpu_set_t caller;
  CPU_ZERO(&caller);
  REQUIRE(sched_getaffinity(0, sizeof(caller), &caller) == 0);
  std::mutex m;
  std::set<std::thread::id> others;
  bool other_mask = false;
  for (int round = 0; round < 50 && others.empty(); ++round)
    host_loop(4096, 1, 2, [&](Index) {
      if (!cellint::detail::host_in_helper()) return;
      cpu_set_t mine;
      CPU_ZERO(&mine);
      sched_getaffinity(0, sizeof(mine), &mine);
      std::lock_guard<std::mutex> l(m);
      others.insert(std::this_thread::get_id());
      if (!CPU_EQUAL(&mine, &caller)) other_mask = true;
    });
  if (others.empty()) {
    WARN("no helper took a chunk in 50 loops (a busy machine): nothing to check");
    return;
  }
  CHECK(other_mask);
}
#endif
