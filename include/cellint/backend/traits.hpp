#pragma once
/// @file
/// What every backend provides, the launch shape and device properties.
///
/// A backend is an empty tag type (`Host`, `Emulated`, `Cuda`, `Hip`) with static members:
///
///   using Stream = ...;                                   // stream handle (default-constructible = default stream)
///   static constexpr bool is_gpu_like;                    // runs block kernels (Emulated, Cuda, Hip)
///   static constexpr bool device_memory;                  // pointers are not host-dereferenceable
///   static constexpr int warp_size;                       // 32 (NVIDIA, Emulated) or 64 (AMD)
///   static const char* name();
///   static void* allocate(std::size_t bytes);             // throws OutOfMemory
///   static void deallocate(void* p) noexcept;
///   static void copy(void* dst, const void* src, std::size_t bytes, CopyKind kind, Stream s = {});
///   static void fill_bytes(void* dst, int byte, std::size_t bytes, Stream s = {});
///   static void synchronize(Stream s = {});
///   static DeviceProperties properties();                 // throws NoDevice
///
/// and, for `is_gpu_like` backends:
///
///   template <class Kernel> static void launch(const LaunchShape&, const Kernel&, Stream s = {});
///   template <class Kernel> static int max_threads_for(const Kernel&); // register-limited block size
///   static void exclusive_scan(const std::uint32_t* in, std::uint32_t* out, Index n, Stream s = {});
///   static void sort_pairs(std::uint32_t* keys, Index* values, Index n, int key_bits, Stream s = {});
///                                                         // stable ascending sort by key, in place
///   static float elapsed_ms(...) via Timer (see timer below)
///
/// A *block kernel* is a trivially copyable functor
///
///   struct K { template <class Block> CELLINT_HD void operator()(Block& b) const; };
///
/// written only against the block API of `b` (never threadIdx / __syncthreads):
///
///   b.thread_rank(), b.block_size(), b.block_rank(), b.grid_size()   // 1-D ranks and counts
///   b.sync()                                                          // block-wide barrier; every thread must reach it
///   b.template shared<T>()                                            // dynamic shared memory, 16-byte aligned
///   b.atomic_add(T* p, T v) -> T      (T = int, unsigned, unsigned long long, float, double)
///   b.atomic_max(T* p, T v) -> T      (T = int, unsigned)
///   b.atomic_min(T* p, T v) -> T      (T = int, unsigned)
///
/// so that the Emulated backend can run the very same kernel on the CPU.

#include <cstddef>
#include <cstdint>

#include "cellint/core/grid_geometry.hpp"

namespace cellint {

/// Direction of a copy between host and backend memory.
enum class CopyKind { HostToDevice, DeviceToHost, DeviceToDevice, HostToHost };

/// Grid of blocks, threads per block and dynamic shared-memory bytes of one kernel launch.
struct LaunchShape {
  unsigned grid = 1;              ///< number of blocks
  unsigned block = 128;           ///< threads per block
  std::size_t shared_bytes = 0;   ///< dynamic shared memory per block
};

/// What strategies need to know about the device to choose their launch shapes.
struct DeviceProperties {
  int multiprocessors = 1;                     ///< streaming multiprocessors / compute units
  std::size_t shared_per_block = 48 * 1024;    ///< default dynamic shared-memory limit per block
  std::size_t shared_per_block_optin = 48 * 1024;  ///< limit after opting in (e.g. 227 KB on H100)
  std::size_t shared_per_multiprocessor = 64 * 1024; ///< shared memory per multiprocessor
  int max_threads_per_block = 1024;            ///< block size limit
  int max_threads_per_multiprocessor = 2048;   ///< resident-thread limit
  int warp_size = 32;                          ///< SIMD width
  char name[256] = {};                         ///< device name
};

/// True for backends that run block kernels (Emulated, Cuda, Hip).
template <class Backend>
inline constexpr bool is_gpu_like_v = Backend::is_gpu_like;

}  // namespace cellint
