#pragma once
/// @file
/// Owning, typed buffer of backend memory.

#include <cstddef>
#include <utility>
#include <vector>

#include "cellint/backend/traits.hpp"

namespace cellint {

/// An owning array of `T` in `Backend` memory (device memory for GPU backends). Movable, not copyable. Contents are
/// uninitialised after construction or resize.
template <class Backend, class T>
class Buffer {
 public:
  Buffer() = default;
  /// Allocates `n` elements. @throws OutOfMemory
  explicit Buffer(std::size_t n) { resize(n); }
  Buffer(const Buffer&) = delete;
  Buffer& operator=(const Buffer&) = delete;
  /// Takes over `o`'s memory; `o` is left empty.
  Buffer(Buffer&& o) noexcept : p_(std::exchange(o.p_, nullptr)), n_(std::exchange(o.n_, 0)), cap_(std::exchange(o.cap_, 0)) {}
  /// Frees this buffer's memory and takes over `o`'s; `o` is left empty.
  Buffer& operator=(Buffer&& o) noexcept {
    if (this != &o) {
      release();
      p_ = std::exchange(o.p_, nullptr);
      n_ = std::exchange(o.n_, 0);
      cap_ = std::exchange(o.cap_, 0);
    }
    return *this;
  }
  ~Buffer() { release(); }

  /// Sets the size to `n`, reallocating (without keeping contents) only when it grows.
  void resize(std::size_t n) {
    if (n > cap_) {
      release();
      p_ = static_cast<T*>(Backend::allocate(n * sizeof(T)));
      cap_ = n;
    }
    n_ = n;
  }
  /// Same as resize(), but when it must allocate it allocates 1/16 more: a size that creeps up from one call to the
  /// next (a grid rebuilt over an MPI rank's particles and ghosts) then reallocates rarely, where each release would
  /// wait for the device.
  void resize_with_room(std::size_t n) {
    if (n > cap_) resize(n + n / 16);
    n_ = n;
  }
  /// Number of elements.
  std::size_t size() const { return n_; }
  /// Elements allocated (resize() up to this many keeps the memory).
  std::size_t capacity() const { return cap_; }
  /// Backend pointer.
  T* data() { return p_; }
  /// Backend pointer.
  const T* data() const { return p_; }

  /// Copies `size()` elements from host memory.
  void upload(const T* host, typename Backend::Stream s = {}) {
    Backend::copy(p_, host, n_ * sizeof(T), CopyKind::HostToDevice, s);
  }
  /// Copies `size()` elements to host memory (synchronises the stream).
  void download(T* host, typename Backend::Stream s = {}) const {
    Backend::copy(host, p_, n_ * sizeof(T), CopyKind::DeviceToHost, s);
  }
  /// Returns a host copy (synchronises the stream).
  std::vector<T> to_host(typename Backend::Stream s = {}) const {
    std::vector<T> h(n_);
    download(h.data(), s);
    return h;
  }
  /// Fills every byte with `byte`.
  void fill_bytes(int byte, typename Backend::Stream s = {}) { Backend::fill_bytes(p_, byte, n_ * sizeof(T), s); }

 private:
  void release() noexcept {
    if (p_) Backend::deallocate(p_);
    p_ = nullptr;
    n_ = cap_ = 0;
  }
  T* p_ = nullptr;
  std::size_t n_ = 0, cap_ = 0;
};

/// Makes a backend buffer holding a copy of host data.
template <class Backend, class T>
Buffer<Backend, T> to_backend(const std::vector<T>& host, typename Backend::Stream s = {}) {
  Buffer<Backend, T> b(host.size());
  if (!host.empty()) b.upload(host.data(), s);
  return b;
}

}  // namespace cellint
