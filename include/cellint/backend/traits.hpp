#pragma once
/// @file
/// What every backend provides, the launch shape and device properties.
///
/// A backend is an empty tag type (`Host`, `Emulated`, `Cuda`, `Hip`) with static members:
///
/// @code
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
/// @endcode
///
/// and, for `is_gpu_like` backends:
///
/// @code
///   template <class Kernel> static void launch(const LaunchShape&, const Kernel&, Stream s = {});
///   template <class Kernel> static int max_threads_for(const Kernel&); // register-limited block size
///   static void exclusive_scan(const std::uint32_t* in, std::uint32_t* out, Index n, Stream s = {});
///   static void sort_pairs(std::uint32_t* keys, Index* values, Index n, int key_bits, Stream s = {});
///                                                         // stable ascending sort by key, in place
///   static float elapsed_ms(...) via Timer (see timer below)
/// @endcode
///
/// A *block kernel* is a trivially copyable functor
///
/// @code
///   struct K { template <class Block> CELLINT_HD void operator()(Block& b) const; };
/// @endcode
///
/// written only against the block API of `b` (never threadIdx / __syncthreads):
///
/// @code
///   b.thread_rank(), b.block_size(), b.block_rank(), b.grid_size()   // 1-D ranks and counts
///   b.sync()                                                          // block-wide barrier; every thread must reach it
///   b.fence()                                                         // memory fence at device scope
///   b.template shared<T>()                                            // dynamic shared memory, 16-byte aligned
///   b.atomic_add(T* p, T v) -> T      (T = int, unsigned, unsigned long long, float, double)
///   b.atomic_max(T* p, T v) -> T      (T = int, unsigned)
///   b.atomic_min(T* p, T v) -> T      (T = int, unsigned)
/// @endcode
///
/// so that the Emulated backend can run the very same kernel on the CPU.
///
/// `is_backend_v<B>` tells whether `B` has the members listed above (the block-kernel ones too when it is
/// `is_gpu_like`); `CELLINT_REQUIRE_BACKEND(B);` (or `static_assert(check_backend<B>())`) stops compilation with a
/// message naming each missing member.

#include <cstddef>
#include <cstdint>
#include <type_traits>
#include <utility>

#include "cellint/core/grid_geometry.hpp"
#include "cellint/core/vec.hpp"

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

namespace detail {

/// The expressions a backend must support, one alias template each (see the list above).
namespace backend_member {
struct ProbeKernel {};  // stands for a block kernel in the launch signatures
template <class B>
using Stream = decltype(typename B::Stream{});
template <class B>
using is_gpu_like = std::bool_constant<B::is_gpu_like>;
template <class B>
using device_memory = std::bool_constant<B::device_memory>;
template <class B>
using warp_size = std::integral_constant<int, B::warp_size>;
template <class B>
using name = decltype(static_cast<const char*>(B::name()));
template <class B>
using allocate = decltype(static_cast<void*>(B::allocate(std::size_t{})));
template <class B>
using deallocate = std::enable_if_t<noexcept(B::deallocate(nullptr))>;
template <class B>
using copy = decltype(B::copy(nullptr, nullptr, std::size_t{}, CopyKind{}));
template <class B>
using fill_bytes = decltype(B::fill_bytes(nullptr, 0, std::size_t{}));
template <class B>
using synchronize = decltype(B::synchronize());
template <class B>
using properties = std::enable_if_t<std::is_same_v<decltype(B::properties()), DeviceProperties>>;
template <class B>
using Timer = decltype(typename B::Timer(typename B::Stream{}).start(), typename B::Timer().stop(),
                       static_cast<float>(std::declval<const typename B::Timer&>().elapsed_ms()));
template <class B>
using launch =
    decltype(B::launch(LaunchShape{}, ProbeKernel{}), B::launch(LaunchShape{}, ProbeKernel{}, typename B::Stream{}));
template <class B>
using max_threads_for = decltype(static_cast<int>(B::max_threads_for(ProbeKernel{})));
template <class B>
using exclusive_scan =
    decltype(B::exclusive_scan(std::declval<const std::uint32_t*>(), std::declval<std::uint32_t*>(), Index{}));
template <class B>
using sort_pairs = decltype(B::sort_pairs(std::declval<std::uint32_t*>(), std::declval<Index*>(), Index{}, 0));
}  // namespace backend_member

template <template <class> class Member, class B, class = void>
struct backend_has : std::false_type {};
template <template <class> class Member, class B>
struct backend_has<Member, B, std::void_t<Member<B>>> : std::true_type {};

/// `B::is_gpu_like` where `B` has it, else false.
template <class B>
constexpr bool backend_gpu_like() {
  if constexpr (backend_has<backend_member::is_gpu_like, B>::value) return B::is_gpu_like;
  return false;
}

/// Which of the members a backend needs `B` has.
template <class B>
struct backend_members {
  template <template <class> class M>
  static constexpr bool has = backend_has<M, B>::value;
  static constexpr bool common =
      has<backend_member::Stream> && has<backend_member::is_gpu_like> && has<backend_member::device_memory> &&
      has<backend_member::warp_size> && has<backend_member::name> && has<backend_member::allocate> &&
      has<backend_member::deallocate> && has<backend_member::copy> && has<backend_member::fill_bytes> &&
      has<backend_member::synchronize> && has<backend_member::properties> && has<backend_member::Timer>;
  static constexpr bool gpu_like = backend_gpu_like<B>();
  static constexpr bool gpu = has<backend_member::launch> && has<backend_member::max_threads_for> &&
                              has<backend_member::exclusive_scan> && has<backend_member::sort_pairs>;
  static constexpr bool all = common && (!gpu_like || gpu);
};

}  // namespace detail

/// True when `B` has every member a backend needs (the list above; the block-kernel members too when `B::is_gpu_like`).
/// check_backend<B>() says which one is missing.
template <class B>
inline constexpr bool is_backend_v = detail::backend_members<B>::all;

/// Compile-time check that `B` is a backend: a failure names the missing member in a static_assert message (the
/// compiler shows `B` in the instantiation context). Returns true.
template <class B>
constexpr bool check_backend() {
  using M = detail::backend_members<B>;
  namespace m = detail::backend_member;
#define CELLINT_DETAIL_NEEDS(member, what)                                                                 \
  static_assert(M::template has<m::member>, "cellint: this type is not a backend: it has no " what         \
                                            " (the members a backend needs are listed in cellint/backend/" \
                                            "traits.hpp)")
  CELLINT_DETAIL_NEEDS(Stream, "default-constructible 'using Stream = ...;'");
  CELLINT_DETAIL_NEEDS(is_gpu_like, "'static constexpr bool is_gpu_like'");
  CELLINT_DETAIL_NEEDS(device_memory, "'static constexpr bool device_memory'");
  CELLINT_DETAIL_NEEDS(warp_size, "'static constexpr int warp_size'");
  CELLINT_DETAIL_NEEDS(name, "'static const char* name()'");
  CELLINT_DETAIL_NEEDS(allocate, "'static void* allocate(std::size_t)'");
  CELLINT_DETAIL_NEEDS(deallocate, "'static void deallocate(void*) noexcept'");
  CELLINT_DETAIL_NEEDS(copy, "'static void copy(void* dst, const void* src, std::size_t, CopyKind, Stream = {})'");
  CELLINT_DETAIL_NEEDS(fill_bytes, "'static void fill_bytes(void* dst, int byte, std::size_t, Stream = {})'");
  CELLINT_DETAIL_NEEDS(synchronize, "'static void synchronize(Stream = {})'");
  CELLINT_DETAIL_NEEDS(properties, "'static DeviceProperties properties()'");
  CELLINT_DETAIL_NEEDS(Timer, "'Timer' (explicit Timer(Stream = {}), start(), stop(), float elapsed_ms() const)");
  if constexpr (M::gpu_like) {
    CELLINT_DETAIL_NEEDS(launch, "'template <class Kernel> static void launch(const LaunchShape&, const Kernel&, "
                                 "Stream = {})' (is_gpu_like backends need it)");
    CELLINT_DETAIL_NEEDS(max_threads_for, "'template <class Kernel> static int max_threads_for(const Kernel&)' "
                                          "(is_gpu_like backends need it)");
    CELLINT_DETAIL_NEEDS(exclusive_scan, "'static void exclusive_scan(const std::uint32_t*, std::uint32_t*, Index, "
                                         "Stream = {})' (is_gpu_like backends need it)");
    CELLINT_DETAIL_NEEDS(sort_pairs, "'static void sort_pairs(std::uint32_t* keys, Index* values, Index n, int "
                                     "key_bits, Stream = {})' (is_gpu_like backends need it)");
  }
#undef CELLINT_DETAIL_NEEDS
  return true;
}

}  // namespace cellint

/// Stops compilation unless `B` is a backend, naming the missing member (see check_backend). Usable at namespace, class
/// and block scope: `CELLINT_REQUIRE_BACKEND(B);`.
#define CELLINT_REQUIRE_BACKEND(B) \
  static_assert(::cellint::check_backend<B>(), "cellint: not a backend (the error above names the missing member)")
