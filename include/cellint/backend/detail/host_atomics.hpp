#pragma once
// Atomic read-modify-write on host memory (GCC/Clang builtins), used by the Host backend's loops.

#include <cstring>
#include <type_traits>

namespace cellint::detail {

/// Atomic add returning the old value; CAS loop for floating point.
template <class T>
inline T host_atomic_add(T* p, T v) {
  if constexpr (std::is_integral<T>::value) {
    return __atomic_fetch_add(p, v, __ATOMIC_RELAXED);
  } else {
    T old = __atomic_load_n(p, __ATOMIC_RELAXED);
    while (!__atomic_compare_exchange(p, &old, &(const T&)(old + v), true, __ATOMIC_RELAXED, __ATOMIC_RELAXED)) {
    }
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

/// The atomics part of the block API, for element loops that run on the Host backend.
struct HostAtomics {
  template <class T> T atomic_add(T* p, T v) const { return host_atomic_add(p, v); }
  template <class T> T atomic_max(T* p, T v) const { return host_atomic_max(p, v); }
  template <class T> T atomic_min(T* p, T v) const { return host_atomic_min(p, v); }
};

}  // namespace cellint::detail
