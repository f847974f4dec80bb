#pragma once
/// @file
/// Math policies for pair functors: how a functor computes the reciprocal (and the reciprocal square root) in its inner
/// loop.
///
/// A float division `a / b` compiled for a GPU without fast-math flags is IEEE-exact: on sm_90 it is a reciprocal
/// approximation, four FMAs of refinement and a range check with a slow path, about eight instructions. In a kernel of
/// about twelve instructions per pair that is most of the cost. FastMath uses the hardware reciprocal alone:
///  - CUDA: `rcp.approx.ftz.f32` (one MUFU instruction; maximum relative error 2^-23, i.e. about 1 ulp; denormal inputs
///    and results flush to zero);
///  - HIP: `__builtin_amdgcn_rcpf` (the `v_rcp_f32` instruction, 1 ulp);
///  - host code and double precision: the exact division (no cheaper exact-enough form exists).
/// ExactMath, the default, is the plain division everywhere.
///
/// Functors take the policy as a template argument, e.g. `LennardJones<float, 3, float, FastMath>`, and call
/// `Math::rcp(x)` or `Math::rsqrt(x)` (FastMath: `rsqrt.approx.ftz.f32`, one instruction, about 2 ulp, against a
/// square root and a division).

#include <cmath>

#include "cellint/core/macros.hpp"

namespace cellint {

/// x rounded to the nearest integer, for |x| < 2^31: the minimum-image shift of a coordinate difference is
/// `L * round_nearest(dx / L)`. Device code: one instruction (ties to even). Host code: a conversion to integer (ties
/// away from zero), which, unlike std::rint without SSE4.1, is no library call and vectorises.
CELLINT_HD CELLINT_INLINE float round_nearest(float x) {
#if defined(CELLINT_DEVICE_PASS)
  return ::rintf(x);
#else
  return static_cast<float>(static_cast<int>(x + (x < 0 ? -0.5f : 0.5f)));
#endif
}
/// x rounded to the nearest integer, for |x| < 2^31 (see the float form).
CELLINT_HD CELLINT_INLINE double round_nearest(double x) {
#if defined(CELLINT_DEVICE_PASS)
  return ::rint(x);
#else
  return static_cast<double>(static_cast<int>(x + (x < 0 ? -0.5 : 0.5)));
#endif
}
/// The largest integer not above x, on host and device.
CELLINT_HD CELLINT_INLINE float round_down(float x) {
#if defined(CELLINT_DEVICE_PASS)
  return ::floorf(x);
#else
  return std::floor(x);
#endif
}
/// The largest integer not above x, on host and device.
CELLINT_HD CELLINT_INLINE double round_down(double x) {
#if defined(CELLINT_DEVICE_PASS)
  return ::floor(x);
#else
  return std::floor(x);
#endif
}

/// a * b in the accumulation type Acc: with Acc wider than Real (mixed precision: float positions, double sums) the
/// factors are widened first, so that the product is exact (24 x 24 bits fit 53) and an accumulating `acc += ...`
/// becomes one double multiply-add on GPUs instead of a float multiply, a conversion and a double add.
template <class Acc, class Real>
CELLINT_HD CELLINT_INLINE Acc product_in(Real a, Real b) {
  return static_cast<Acc>(a) * static_cast<Acc>(b);
}

/// IEEE division: `rcp(x) = 1 / x`, correctly rounded (the default).
struct ExactMath {
  /// The reciprocal of x.
  template <class Real>
  CELLINT_HD static CELLINT_INLINE Real rcp(Real x) {
    return Real(1) / x;
  }
  /// 1 / sqrt(x): a correctly rounded square root, then IEEE division.
  template <class Real>
  CELLINT_HD static CELLINT_INLINE Real rsqrt(Real x) {
    return Real(1) / std::sqrt(x);
  }
};

/// The hardware's approximate reciprocal in float device code (about 1 ulp, see the file comment); exact division in
/// double and in host code.
struct FastMath {
  /// The reciprocal of x (float: approximate on GPUs).
  CELLINT_HD static CELLINT_INLINE float rcp(float x) {
#if defined(__CUDA_ARCH__)
    float r;
    asm("rcp.approx.ftz.f32 %0, %1;" : "=f"(r) : "f"(x));
    return r;
#elif defined(__HIP_DEVICE_COMPILE__)
    return __builtin_amdgcn_rcpf(x);
#else
    return 1.0f / x;
#endif
  }
  /// The reciprocal of x (double: exact).
  CELLINT_HD static CELLINT_INLINE double rcp(double x) { return 1.0 / x; }
  /// 1 / sqrt(x) (float: the hardware's approximation on GPUs, `rsqrt.approx.ftz.f32` / `v_rsq_f32`, one instruction,
  /// about 2 ulp).
  CELLINT_HD static CELLINT_INLINE float rsqrt(float x) {
#if defined(__CUDA_ARCH__)
    float r;
    asm("rsqrt.approx.ftz.f32 %0, %1;" : "=f"(r) : "f"(x));
    return r;
#elif defined(__HIP_DEVICE_COMPILE__)
    return __builtin_amdgcn_rsqf(x);
#else
    return 1.0f / std::sqrt(x);
#endif
  }
  /// 1 / sqrt(x) (double: exact square root and division).
  CELLINT_HD static CELLINT_INLINE double rsqrt(double x) { return 1.0 / std::sqrt(x); }
};

}  // namespace cellint
