#pragma once
/// @file
/// Uniform random positions generated where the backend keeps its memory (a block kernel on
/// GPU backends), from a counter-based hash: the same seed gives the same particles on every
/// backend, and 10^8 particles take milliseconds instead of seconds of host time.

#include <array>
#include <cstdint>

#include "cellint/backend/buffer.hpp"
#include "cellint/core/macros.hpp"
#include "cellint/core/vec.hpp"

namespace cellint::bench {

/// splitmix64 finaliser.
CELLINT_HD inline std::uint64_t mix64(std::uint64_t z) {
  z += 0x9E3779B97F4A7C15ull;
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

/// A value in [0, 1) exactly representable in Real (24 random bits for float, 53 for double).
template <class Real>
CELLINT_HD inline Real unit_uniform(std::uint64_t h) {
  if constexpr (sizeof(Real) == 4)
    return static_cast<Real>(h >> 40) * Real(1.0 / 16777216.0);
  else
    return static_cast<Real>(h >> 11) * Real(1.0 / 9007199254740992.0);
}

/// Block kernel: x[i] = lo + len * u(seed, i) for i < n.
template <class Real>
struct UniformFillKernel {
  Real* x;
  Index n;
  std::uint64_t seed;
  Real lo, len;
  template <class Block>
  CELLINT_HD void operator()(Block& b) const {
    const Index i = static_cast<Index>(b.block_rank() * b.block_size() + b.thread_rank());
    if (i < n) x[i] = lo + len * unit_uniform<Real>(mix64(seed ^ mix64(static_cast<std::uint64_t>(i))));
  }
};

/// `n` positions uniform in the cube [lo, lo + len)^Dim, one backend buffer per axis.
/// Enqueued on stream `s` (synchronise before reading them on the host).
/// @throws OutOfMemory
template <class B, class Real, int Dim>
std::array<Buffer<B, Real>, Dim> uniform_positions(Index n, Real lo, Real len, std::uint64_t seed,
                                                   typename B::Stream s = {}) {
  std::array<Buffer<B, Real>, Dim> x;
  for (int d = 0; d < Dim; ++d) {
    x[d].resize(static_cast<std::size_t>(n > 0 ? n : 1));
    const std::uint64_t sd = mix64(seed * 0x2545F4914F6CDD1Dull + static_cast<std::uint64_t>(d) + 1);
    UniformFillKernel<Real> k{x[d].data(), n, sd, lo, len};
    if constexpr (B::device_memory) {
      if (n > 0) B::launch(LaunchShape{static_cast<unsigned>((n + 255) / 256), 256, 0}, k, s);
    } else {
      Real* p = x[d].data();
#if defined(_OPENMP)
#  pragma omp parallel for schedule(static)
#endif
      for (Index i = 0; i < n; ++i) p[i] = lo + len * unit_uniform<Real>(mix64(sd ^ mix64(static_cast<std::uint64_t>(i))));
      (void)s;
    }
  }
  return x;
}

}  // namespace cellint::bench
