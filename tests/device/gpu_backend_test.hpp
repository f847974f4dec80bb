// Tests of what only the real GPU backends (Cuda, Hip) do: device properties, the dynamic
// shared-memory opt-in and its limit, launch errors that name the kernel and leave no stale
// error behind, OutOfMemory, the runtime-check macro, events, copies of every kind, and the
// device-wide primitives on a non-default stream next to the default one.
//
// Compiled once per backend by tests/CMakeLists.txt, with CELLINT_TEST_BACKEND (the backend
// type), CELLINT_TEST_TAG (e.g. "[cuda]") and, for real GPUs, CELLINT_TEST_GPU defined. Other
// backends compile it to nothing.
#pragma once

#include <catch2/catch.hpp>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <numeric>
#include <random>
#include <string>
#include <utility>
#include <vector>

#if defined(CELLINT_TEST_GPU)
#  if defined(__CUDACC__)
#    include "cellint/backend/cuda.hpp"
#    define CELLINT_GBT_RT(name) cuda##name
#    define CELLINT_GBT_CHECK(call) CELLINT_CHECK_CUDA(call)
#    define CELLINT_GBT_ERROR_TEXT(e) ::cellint::detail::cuda_error_text(e)
#  elif defined(__HIPCC__) || defined(__HIP__)
#    include "cellint/backend/hip.hpp"
#    define CELLINT_GBT_RT(name) hip##name
#    define CELLINT_GBT_CHECK(call) CELLINT_CHECK_HIP(call)
#    define CELLINT_GBT_ERROR_TEXT(e) ::cellint::detail::hip_error_text(e)
#  endif

namespace {
namespace gpu_backend_test {

using Backend = CELLINT_TEST_BACKEND;
using cellint::CopyKind;
using cellint::Index;
using cellint::LaunchShape;

/// Owning array in backend memory.
template <class T>
class DeviceArray {
 public:
  explicit DeviceArray(std::size_t n)
      : n_(n), p_(static_cast<T*>(Backend::allocate(n * sizeof(T)))) {}
  DeviceArray(const DeviceArray&) = delete;
  DeviceArray& operator=(const DeviceArray&) = delete;
  ~DeviceArray() { Backend::deallocate(p_); }
  T* data() const { return p_; }
  void upload(const std::vector<T>& h, typename Backend::Stream s = {}) {
    Backend::copy(p_, h.data(), n_ * sizeof(T), CopyKind::HostToDevice, s);
  }
  std::vector<T> download(typename Backend::Stream s = {}) const {
    std::vector<T> h(n_);
    Backend::copy(h.data(), p_, n_ * sizeof(T), CopyKind::DeviceToHost, s);
    return h;
  }

 private:
  std::size_t n_;
  T* p_;
};

/// Writes 0..words-1 into dynamic shared memory, then block 0..grid-1 each sum it into out.
struct SharedFillKernel {
  unsigned* out;
  unsigned words;
  template <class Block>
  CELLINT_HD void operator()(Block& b) const {
    unsigned* s = b.template shared<unsigned>();
    for (unsigned i = b.thread_rank(); i < words; i += b.block_size()) s[i] = i;
    b.sync();
    if (b.thread_rank() == 0) {
      unsigned sum = 0;
      for (unsigned i = 0; i < words; ++i) sum += s[i];
      out[b.block_rank()] = sum;
    }
  }
};

/// Counts the threads that ran.
struct CountKernel {
  unsigned* count;
  template <class Block>
  CELLINT_HD void operator()(Block& b) const {
    b.atomic_add(count, 1u);
  }
};

struct StoreKernel {  // *p = v, one thread
  unsigned* p;
  unsigned v;
  template <class Block>
  CELLINT_HD void operator()(Block& b) const {
    if (b.thread_rank() == 0) *static_cast<volatile unsigned*>(p) = v;
  }
};

/// RAII non-default stream.
class TestStream {
 public:
  TestStream() { CELLINT_GBT_CHECK(CELLINT_GBT_RT(StreamCreate)(&s_)); }
  TestStream(const TestStream&) = delete;
  TestStream& operator=(const TestStream&) = delete;
  ~TestStream() { (void)CELLINT_GBT_RT(StreamDestroy)(s_); }
  typename Backend::Stream get() const { return s_; }

 private:
  typename Backend::Stream s_{};
};

/// Launches CountKernel with grid x block threads and returns how many ran.
unsigned count_threads(unsigned grid, unsigned block) {
  DeviceArray<unsigned> c(1);
  Backend::fill_bytes(c.data(), 0, sizeof(unsigned));
  Backend::launch(LaunchShape{grid, block, 0}, CountKernel{c.data()});
  return c.download()[0];
}

TEST_CASE("gpu backend: device properties are sane and cached", CELLINT_TEST_TAG "[gpu_backend]") {
  const cellint::DeviceProperties p = Backend::properties();
  INFO("device " << p.name);
  CHECK(std::string(p.name).size() > 0);
  CHECK(p.multiprocessors > 0);
  CHECK(p.warp_size == Backend::warp_size);
  CHECK(p.max_threads_per_block >= 256);
  CHECK(p.max_threads_per_multiprocessor >= p.max_threads_per_block);
  CHECK(p.shared_per_block >= 32 * 1024);
  CHECK(p.shared_per_block_optin >= p.shared_per_block);
  CHECK(p.shared_per_multiprocessor >= p.shared_per_block);
  const cellint::DeviceProperties q = Backend::properties();
  CHECK(std::string(q.name) == p.name);
  CHECK(q.multiprocessors == p.multiprocessors);
}

TEST_CASE("gpu backend: launch shapes, grid 0 and max_threads_for",
          CELLINT_TEST_TAG "[gpu_backend]") {
  CHECK(count_threads(1, 1) == 1u);
  CHECK(count_threads(3, 100) == 300u);
  CHECK(count_threads(1000, 1024) == 1024000u);
  DeviceArray<unsigned> c(1);
  Backend::fill_bytes(c.data(), 0, sizeof(unsigned));
  Backend::launch(LaunchShape{0, 128, 0}, CountKernel{c.data()});  // no-op
  CHECK(c.download()[0] == 0u);
  const int m = Backend::max_threads_for(CountKernel{nullptr});
  CHECK(m >= Backend::warp_size);
  CHECK(m <= Backend::properties().max_threads_per_block);
}

TEST_CASE("gpu backend: dynamic shared memory above the default limit",
          CELLINT_TEST_TAG "[gpu_backend]") {
  const cellint::DeviceProperties p = Backend::properties();
  // The largest request the device allows, capped at 200 KiB, and a small one afterwards:
  // the opt-in is remembered per kernel type.
  for (std::size_t bytes :
       {std::min<std::size_t>(p.shared_per_block_optin, 200 * 1024), std::size_t(64),
        std::min<std::size_t>(p.shared_per_block_optin, 100 * 1024)}) {
    const unsigned words = static_cast<unsigned>(bytes / sizeof(unsigned));
    DeviceArray<unsigned> out(8);
    Backend::launch(LaunchShape{8, 256, bytes}, SharedFillKernel{out.data(), words});
    const std::vector<unsigned> h = out.download();
    const unsigned expect =
        static_cast<unsigned>(static_cast<unsigned long long>(words) * (words - 1) / 2);
    INFO("shared bytes " << bytes);
    for (unsigned v : h) CHECK(v == expect);
  }
  DeviceArray<unsigned> out(1);
  try {
    Backend::launch(LaunchShape{1, 64, p.shared_per_block_optin + 16},
                    SharedFillKernel{out.data(), 1});
    FAIL("a request above the opt-in limit must throw");
  } catch (const cellint::InvalidArgument& e) {
    const std::string w = e.what();
    INFO(w);
    CHECK(w.find("SharedFillKernel") != std::string::npos);
    CHECK(w.find(std::to_string(p.shared_per_block_optin)) != std::string::npos);
  }
}

TEST_CASE("gpu backend: a failed launch names the kernel and leaves no stale error",
          CELLINT_TEST_TAG "[gpu_backend]") {
  DeviceArray<unsigned> c(1);
  try {
    Backend::launch(LaunchShape{1, 4096, 0}, CountKernel{c.data()});  // block too large
    FAIL("a block of 4096 threads must not launch");
  } catch (const cellint::NoDevice&) {
    throw;
  } catch (const cellint::GpuError& e) {
    const std::string w = e.what();
    INFO(w);
    CHECK(w.find("CountKernel") != std::string::npos);
    CHECK(w.find("block=4096") != std::string::npos);
    CHECK(e.code() != 0);
    CHECK(w.find("restart") == std::string::npos);  // not a sticky error
  }
  CHECK(CELLINT_GBT_RT(GetLastError)() == CELLINT_GBT_RT(Success));
  CHECK(count_threads(2, 64) == 128u);
}

TEST_CASE("gpu backend: OutOfMemory says how much was asked and what is free",
          CELLINT_TEST_TAG "[gpu_backend]") {
  const std::size_t huge = std::size_t(1) << 52;  // 4 PiB
  try {
    void* p = Backend::allocate(huge);
    Backend::deallocate(p);
    FAIL("a 4 PiB allocation cannot succeed");
  } catch (const cellint::OutOfMemory& e) {
    const std::string w = e.what();
    INFO(w);
    CHECK(w.find(std::to_string(huge)) != std::string::npos);
    CHECK(w.find("free of") != std::string::npos);
    CHECK(w.find("reduce the particle count") != std::string::npos);
  }
  CHECK(CELLINT_GBT_RT(GetLastError)() == CELLINT_GBT_RT(Success));
  CHECK(count_threads(2, 64) == 128u);
  // Zero bytes still gives a unique pointer.
  void* a = Backend::allocate(0);
  void* b = Backend::allocate(0);
  CHECK(a != nullptr);
  CHECK(a != b);
  Backend::deallocate(a);
  Backend::deallocate(b);
  Backend::deallocate(nullptr);
}

TEST_CASE("gpu backend: the runtime-check macro and the sticky-error diagnosis",
          CELLINT_TEST_TAG "[gpu_backend]") {
  try {
    CELLINT_GBT_CHECK(CELLINT_GBT_RT(SetDevice)(-1));
    FAIL("device -1 does not exist");
  } catch (const cellint::GpuError& e) {
    const std::string w = e.what();
    INFO(w);
    CHECK(w.find("SetDevice(-1)") != std::string::npos);
    CHECK(w.find("ErrorInvalidDevice") != std::string::npos);
    CHECK(w.find("gpu_backend_test.hpp") != std::string::npos);
  }
  CHECK(CELLINT_GBT_RT(GetLastError)() == CELLINT_GBT_RT(Success));
  const std::string sticky = CELLINT_GBT_ERROR_TEXT(CELLINT_GBT_RT(ErrorIllegalAddress));
  CHECK(sticky.find("restart the process") != std::string::npos);
  const std::string plain = CELLINT_GBT_ERROR_TEXT(CELLINT_GBT_RT(ErrorInvalidValue));
  CHECK(plain.find("restart") == std::string::npos);
}

TEST_CASE("gpu backend: copies of every kind and fill_bytes", CELLINT_TEST_TAG "[gpu_backend]") {
  const std::size_t n = 100003;
  std::vector<std::uint32_t> h(n);
  std::iota(h.begin(), h.end(), 7u);
  DeviceArray<std::uint32_t> a(n), b(n);
  a.upload(h);
  Backend::copy(b.data(), a.data(), n * sizeof(std::uint32_t), CopyKind::DeviceToDevice);
  CHECK(b.download() == h);
  std::vector<std::uint32_t> g(n, 0);
  Backend::copy(g.data(), h.data(), n * sizeof(std::uint32_t), CopyKind::HostToHost);
  CHECK(g == h);
  Backend::fill_bytes(b.data() + 1, 0xff, 10 * sizeof(std::uint32_t));
  const std::vector<std::uint32_t> f = b.download();
  CHECK(f[0] == h[0]);
  for (int i = 1; i <= 10; ++i) CHECK(f[i] == 0xffffffffu);
  CHECK(f[11] == h[11]);
  Backend::copy(b.data(), a.data(), 0, CopyKind::DeviceToDevice);  // zero bytes: no-op
  Backend::fill_bytes(b.data(), 0, 0);
  Backend::synchronize();
}

TEST_CASE("gpu backend: Timer measures a kernel and moves", CELLINT_TEST_TAG "[gpu_backend]") {
  DeviceArray<unsigned> c(1);
  Backend::fill_bytes(c.data(), 0, sizeof(unsigned));
  typename Backend::Timer t;
  t.start();
  for (int i = 0; i < 10; ++i) Backend::launch(LaunchShape{512, 256, 0}, CountKernel{c.data()});
  t.stop();
  const float ms = t.elapsed_ms();
  CHECK(ms >= 0.0f);
  CHECK(ms < 10000.0f);
  typename Backend::Timer moved(std::move(t));
  CHECK(moved.elapsed_ms() == ms);
  CHECK(c.download()[0] == 10u * 512u * 256u);
}

TEST_CASE("gpu backend: a SideStream's work follows fork() and precedes what follows join()",
          CELLINT_TEST_TAG "[gpu_backend]") {
  typename Backend::SideStream side;
  DeviceArray<unsigned> c(1), seen(1);
  const unsigned per = 512u * 256u;
  for (int round = 0; round < 3; ++round) {
    Backend::fill_bytes(c.data(), 0, sizeof(unsigned));
    for (int i = 0; i < 20; ++i) Backend::launch(LaunchShape{512, 256, 0}, CountKernel{c.data()});
    side.fork(typename Backend::Stream{});  // the side stream is not ordered with the default one otherwise
    Backend::copy(seen.data(), c.data(), sizeof(unsigned), CopyKind::DeviceToDevice, side.get());
    Backend::launch(LaunchShape{512, 256, 0}, CountKernel{c.data()}, side.get());
    side.join(typename Backend::Stream{});
    CHECK(c.download()[0] == 21u * per);  // (the default stream, after join())
    CHECK(seen.download()[0] == 20u * per);
  }
}

TEST_CASE("gpu backend: wait_value() holds a stream's work until the word reaches the value",
          CELLINT_TEST_TAG "[gpu_backend]") {
  if (!Backend::can_wait_value()) {
    WARN("this driver has no stream memory operations: wait_value() not tested");
    return;
  }
  // The writer's work is enqueued before the wait: streams may share a hardware queue, where a wait enqueued first
  // would hold the writer behind it (a wait for another process's GPU, as cellint::mpi's, has no such cycle). Without
  // the wait the copy would run at once, beside the counting kernels.
  typename Backend::SideStream waiting;  // (non-blocking: not ordered with the default stream)
  DeviceArray<unsigned> c(1), seen(1), flag(1);
  Backend::fill_bytes(flag.data(), 0, sizeof(unsigned));
  Backend::synchronize();
  const unsigned per = 512u * 256u;
  for (unsigned round = 1; round <= 3; ++round) {
    Backend::fill_bytes(c.data(), 0, sizeof(unsigned));
    Backend::synchronize();
    for (int i = 0; i < 20; ++i) Backend::launch(LaunchShape{512, 256, 0}, CountKernel{c.data()});
    Backend::launch(LaunchShape{1, 32, 0}, StoreKernel{flag.data(), 2 * round - 1});  // (below the value: no start)
    for (int i = 0; i < 20; ++i) Backend::launch(LaunchShape{512, 256, 0}, CountKernel{c.data()});
    Backend::launch(LaunchShape{1, 32, 0}, StoreKernel{flag.data(), 2 * round});
    Backend::wait_value(waiting.get(), flag.data(), 2 * round);
    Backend::copy(seen.data(), c.data(), sizeof(unsigned), CopyKind::DeviceToDevice, waiting.get());
    Backend::synchronize(waiting.get());
    Backend::synchronize();
    CHECK(seen.download()[0] == 40u * per);
  }
}

TEST_CASE("gpu backend: scan and sort on two streams at once use separate scratch",
          CELLINT_TEST_TAG "[gpu_backend]") {
  TestStream side;
  const Index n = (1 << 21) + 17;
  std::mt19937 rng(12345);
  std::vector<std::uint32_t> in(n), keys(n);
  std::vector<Index> vals(n);
  for (Index i = 0; i < n; ++i) {
    in[i] = rng() % 7;
    keys[i] = rng() & 0xfffffu;
    vals[i] = i;
  }
  DeviceArray<std::uint32_t> d_in(n), d_out(n), d_keys(n), d_in2(n), d_out2(n);
  DeviceArray<Index> d_vals(n);
  d_in.upload(in);
  d_in2.upload(in);
  d_keys.upload(keys);
  d_vals.upload(vals);
  Backend::synchronize();
  for (int rep = 0; rep < 3; ++rep) {
    Backend::sort_pairs(d_keys.data(), d_vals.data(), n, 20, side.get());
    Backend::exclusive_scan(d_in.data(), d_out.data(), n);
    Backend::exclusive_scan(d_in2.data(), d_out2.data(), n, side.get());
    if (rep == 0) {
      Backend::synchronize(side.get());
      Backend::synchronize();
      d_keys.upload(keys);  // sorting sorted data would hide a bad result
      d_vals.upload(vals);
      Backend::synchronize();
    }
  }
  std::vector<std::uint32_t> expect(n);
  std::exclusive_scan(in.begin(), in.end(), expect.begin(), 0u);
  CHECK(d_out.download() == expect);
  CHECK(d_out2.download(side.get()) == expect);
  std::vector<Index> order(n);
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](Index x, Index y) { return keys[x] < keys[y]; });
  // Two more sorts of already sorted data (reps 1 and 2) leave it unchanged.
  const std::vector<Index> got = d_vals.download(side.get());
  CHECK(got == order);
}

TEST_CASE("gpu backend: sort_pairs rejects key_bits outside [0, 32]",
          CELLINT_TEST_TAG "[gpu_backend]") {
  DeviceArray<std::uint32_t> k(4);
  DeviceArray<Index> v(4);
  CHECK_THROWS_AS(Backend::sort_pairs(k.data(), v.data(), 4, 33), cellint::InvalidArgument);
  CHECK_THROWS_AS(Backend::sort_pairs(k.data(), v.data(), 4, -1), cellint::InvalidArgument);
  Backend::sort_pairs(k.data(), v.data(), 4, 0);  // nothing to compare: no-op
  Backend::exclusive_scan(nullptr, nullptr, 0);   // empty: no-op
}

}  // namespace gpu_backend_test
}  // namespace

#  undef CELLINT_GBT_RT
#  undef CELLINT_GBT_CHECK
#  undef CELLINT_GBT_ERROR_TEXT

#endif  // CELLINT_TEST_GPU
