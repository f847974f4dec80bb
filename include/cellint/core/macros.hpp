#pragma once
/// @file
/// Compiler and backend detection, host/device annotations and internal assertions.

#include <cassert>

#if defined(__CUDACC__)
#  define CELLINT_COMPILER_CUDA 1
#elif defined(__HIPCC__) || defined(__HIP__)
#  define CELLINT_COMPILER_HIP 1
#endif

#if defined(CELLINT_COMPILER_CUDA) || defined(CELLINT_COMPILER_HIP)
/// Marks a function callable from host and device code.
#  define CELLINT_HD __host__ __device__
/// Marks a device-only function (host-only compilers see a plain function).
#  define CELLINT_DEVICE __device__
#  define CELLINT_GPU_COMPILER 1
#else
/// Marks a function callable from host and device code (empty for host-only compilers).
#  define CELLINT_HD
/// Marks a device-only function (empty for host-only compilers).
#  define CELLINT_DEVICE
#endif

/// Placed before a host/device function template that may be instantiated with host-only callables (e.g. the CPU
/// strategies' lambdas in a .cu file): nvcc skips its host/device check.
#if defined(__CUDACC__) && !defined(__clang__)
#  define CELLINT_HD_WARNING_DISABLE _Pragma("nv_exec_check_disable")
#else
#  define CELLINT_HD_WARNING_DISABLE
#endif

#if defined(__CUDA_ARCH__) || defined(__HIP_DEVICE_COMPILE__)
/// Defined inside the device compilation pass.
#  define CELLINT_DEVICE_PASS 1
#endif

/// Forces inlining where the compiler understands it.
#if defined(_MSC_VER)
#  define CELLINT_INLINE __forceinline
#else
#  define CELLINT_INLINE inline __attribute__((always_inline))
#endif

/// Unrolls the loop that follows (fully; UNROLL4: by four) where the GPU compilers take the pragma; nothing for the
/// host compiler (the Emulated backend's kernels are left to its own unrolling).
#if defined(CELLINT_COMPILER_CUDA) || defined(CELLINT_COMPILER_HIP)
#  define CELLINT_DETAIL_UNROLL _Pragma("unroll")
#  define CELLINT_DETAIL_UNROLL4 _Pragma("unroll 4")
#else
#  define CELLINT_DETAIL_UNROLL
#  define CELLINT_DETAIL_UNROLL4
#endif

/// A host loop without dependences between its iterations, for the compiler to vectorise (OpenMP's `simd`; without
/// OpenMP the compiler decides alone, and no pragma warning is raised).
#if defined(_OPENMP)
#  define CELLINT_DETAIL_SIMD _Pragma("omp simd")
#else
#  define CELLINT_DETAIL_SIMD
#endif

/// A host hot loop compiled for three x86-64 levels (baseline, v3: AVX2 + FMA, v4: AVX-512), the best one for the
/// CPU chosen when the program loads (GCC's `target_clones`): a build for generic x86-64, as distributions make,
/// still runs the loop with the CPU's vectors. Only with GCC 11 or later on x86-64 Linux, outside nvcc and hipcc, when
/// the build does not target AVX2 already (-march=native, -march=x86-64-v3, ...), and unless CELLINT_NO_HOST_CLONES
/// is defined.
#if defined(__GNUC__) && !defined(__clang__) && __GNUC__ >= 11 && defined(__x86_64__) && defined(__linux__) && \
    !defined(__CUDACC__) && !defined(__HIPCC__) && !defined(__HIP__) && !defined(__AVX2__) &&                  \
    !defined(CELLINT_NO_HOST_CLONES)
#  define CELLINT_DETAIL_HOST_CLONES __attribute__((target_clones("default", "arch=x86-64-v3", "arch=x86-64-v4")))
#else
#  define CELLINT_DETAIL_HOST_CLONES
#endif

/// Internal invariant, compiled out with NDEBUG (never used for user input).
#define CELLINT_ASSERT(cond) assert(cond)

#if defined(_OPENMP)
#  define CELLINT_HAS_OPENMP 1
#endif
