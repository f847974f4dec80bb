#pragma once
// Host memory operations shared by the Host and Emulated backends.

#include <chrono>
#include <cstdlib>
#include <cstring>
#include <new>

#include "cellint/backend/traits.hpp"
#include "cellint/core/error.hpp"

namespace cellint::detail {

/// Host-memory half of the backend interface (allocation, copies, timing).
struct HostMemory {
  using Stream = int;
  static constexpr bool device_memory = false;

  static void* allocate(std::size_t bytes) {
    if (bytes == 0) bytes = 1;
    void* p = std::aligned_alloc(64, (bytes + 63) / 64 * 64);
    if (!p)
      throw OutOfMemory(cat("cellint: host allocation of ", bytes, " bytes failed; reduce the particle count"), 2);
    return p;
  }
  static void deallocate(void* p) noexcept { std::free(p); }
  static void copy(void* dst, const void* src, std::size_t bytes, CopyKind, Stream = {}) {
    if (bytes) std::memmove(dst, src, bytes);
  }
  static void fill_bytes(void* dst, int byte, std::size_t bytes, Stream = {}) {
    if (bytes) std::memset(dst, byte, bytes);
  }
  static void synchronize(Stream = {}) {}

  /// Wall-clock timer with the same interface as the GPU event timers.
  class Timer {
   public:
    explicit Timer(Stream = {}) {}
    void start() { t0_ = std::chrono::steady_clock::now(); }
    void stop() { t1_ = std::chrono::steady_clock::now(); }
    float elapsed_ms() const { return std::chrono::duration<float, std::milli>(t1_ - t0_).count(); }

   private:
    std::chrono::steady_clock::time_point t0_{}, t1_{};
  };
};

}  // namespace cellint::detail
