#pragma once
/// @file
/// Exception types thrown by cellint. Every message says what went wrong, where, and what to do.

#include <sstream>
#include <stdexcept>
#include <string>

namespace cellint {

/// Base of every exception thrown by cellint. Every derived exception takes the same arguments as its base: the full
/// message (`what`), and for GpuError and its derived exceptions the runtime error code (`code`).
class Error : public std::runtime_error {
 public:
  /// @param what full message
  explicit Error(const std::string& what) : std::runtime_error(what) {}
};

/// A public precondition was violated by the caller (bad argument, bad input data).
class InvalidArgument : public Error {
  using Error::Error;
};

/// A particle position is NaN or infinite.
class NonFinitePosition : public InvalidArgument {
  using InvalidArgument::InvalidArgument;
};

/// A particle lies outside a box axis that is not periodic.
class OutsideBox : public InvalidArgument {
  using InvalidArgument::InvalidArgument;
};

/// A strategy was requested explicitly but cannot run on this grid and device.
class Unsupported : public Error {
  using Error::Error;
};

/// A GPU runtime call failed. Keeps the call, the error code and the source location.
class GpuError : public Error {
 public:
  /// @param what full message; @param code runtime error code
  GpuError(const std::string& what, int code) : Error(what), code_(code) {}
  /// The runtime's error code.
  int code() const noexcept { return code_; }

 private:
  int code_;
};

/// No usable GPU is present (no device, or no driver).
class NoDevice : public GpuError {
  using GpuError::GpuError;
};

/// Device memory could not be allocated.
class OutOfMemory : public GpuError {
  using GpuError::GpuError;
};

namespace detail {
/// Concatenates any streamable values into one string (used to build error messages).
template <class... Args>
std::string cat(const Args&... args) {
  std::ostringstream s;
  s.precision(9);
  (s << ... << args);
  return s.str();
}
}  // namespace detail

}  // namespace cellint

/// Throws cellint::InvalidArgument with the streamed message when `cond` is false.
#define CELLINT_EXPECTS(cond, ...)                                             \
  do {                                                                         \
    if (!(cond)) throw ::cellint::InvalidArgument(::cellint::detail::cat(__VA_ARGS__)); \
  } while (0)
