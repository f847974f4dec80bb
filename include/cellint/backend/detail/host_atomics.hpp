#pragma once
// Atomic read-modify-write on host memory (GCC/Clang builtins), used by the Host backend's loops.

#include <cstring>
#include <type_traits>

#include "cellint/core/macros.hpp"

namespace cellint::detail {

/// Atomic add returning the old value; CAS loop for floating point.
template <class T>
inline T host_atomic_add(T* p, T v) {
  if constexpr (std::is_integral<T>::value) {
    return __atomic_fetch_add(p, v, __ATOMIC_RELAXED);
  } else {  // floating point: compare-and-swap on the bit pattern
    T old;
    __atomic_load(p, &old, __ATOMIC_RELAXED);
    T next = old + v;
    while (!__atomic_compare_exchange(p, &old, &next, true, __ATOMIC_RELAXED, __ATOMIC_RELAXED)) next = old + v;
    return old;
  }
}
/// Atomic max returning the old value.
template <class T>
inline T host_atomic_max(T* p, T v) {
  T old = __atomic_load_n(p, __ATOMIC_RELAXED);
  while (old < v && !__atomic_compare_exchange_n(p, &old, v, true, __ATOMIC_RELAXED, __ATOMIC_RELAXED)) {
  }
  return old;
}
/// Atomic min returning the old value.
template <class T>
inline T host_atomic_min(T* p, T v) {
  T old = __atomic_load_n(p, __ATOMIC_RELAXED);
  while (old > v && !__atomic_compare_exchange_n(p, &old, v, true, __ATOMIC_RELAXED, __ATOMIC_RELAXED)) {
  }
  return old;
}

/// The atomics part of the block API, for element loops that run on the Host backend. Marked host/device only so that
/// nvcc accepts the host instantiation of CELLINT_HD loop bodies; they are never called in a device pass.
struct HostAtomics {
#if defined(CELLINT_DEVICE_PASS)
  template <class T> CELLINT_HD T atomic_add(T*, T v) const { return v; }
  template <class T> CELLINT_HD T atomic_max(T*, T v) const { return v; }
  template <class T> CELLINT_HD T atomic_min(T*, T v) const { return v; }
#else
  template <class T> CELLINT_HD T atomic_add(T* p, T v) const { return host_atomic_add(p, v); }
  template <class T> CELLINT_HD T atomic_max(T* p, T v) const { return host_atomic_max(p, v); }
  template <class T> CELLINT_HD T atomic_min(T* p, T v) const { return host_atomic_min(p, v); }
#endif
};

/// The same interface for a loop that runs on one thread: plain read-modify-write (no locked instructions), same
/// results and return values as HostAtomics.
struct HostSerialAtomics {
#if defined(CELLINT_DEVICE_PASS)
  template <class T> CELLINT_HD T atomic_add(T*, T v) const { return v; }
  template <class T> CELLINT_HD T atomic_max(T*, T v) const { return v; }
  template <class T> CELLINT_HD T atomic_min(T*, T v) const { return v; }
#else
  template <class T> CELLINT_HD T atomic_add(T* p, T v) const {
    const T old = *p;
    *p = static_cast<T>(old + v);
    return old;
  }
  template <class T> CELLINT_HD T atomic_max(T* p, T v) const {
    const T old = *p;
    if (old < v) *p = v;
    return old;
  }
  template <class T> CELLINT_HD T atomic_min(T* p, T v) const {
    const T old = *p;
    if (old > v) *p = v;
    return old;
  }
#endif
};

}  // namespace cellint::detail
