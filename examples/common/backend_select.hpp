#pragma once
// Chooses the backend of an example from its --backend option: host, emulated (the GPU kernels
// on the CPU; host build only), cuda (the nvcc build only) or auto (cuda when this binary has the
// CUDA backend and a GPU answers, else host). `run` is called with an empty backend tag.
#include <cstdio>
#include <string>

#include "cellint/backend/emulated.hpp"
#include "cellint/backend/host.hpp"
#if defined(__CUDACC__)
#  include "cellint/backend/cuda.hpp"
#endif

namespace cellint::examples {

/// Whether this binary can use a CUDA GPU now.
inline bool gpu_present() {
#if defined(__CUDACC__)
  try {
    (void)Cuda::properties();
    return true;
  } catch (const Error&) {
    return false;
  }
#else
  return false;
#endif
}

/// Calls run(Host{}), run(Emulated{}) or run(Cuda{}) for the backend named `b`; returns 2 with a
/// message naming `prog` when that backend is not in this binary or the name is unknown.
template <class Run>
int with_backend(const char* prog, std::string b, Run&& run) {
  if (b == "auto") b = gpu_present() ? "cuda" : "host";
  if (b == "host") return run(Host{});
  if (b == "emulated") {
#if defined(__CUDACC__)
    std::fprintf(stderr, "%s: the emulated backend is in the host build of this example\n", prog);
    return 2;
#else
    return run(Emulated{});  // GPU kernels on the CPU: slow, for testing
#endif
  }
  if (b == "cuda") {
#if defined(__CUDACC__)
    return run(Cuda{});
#else
    std::fprintf(stderr, "%s: this binary has no CUDA backend; use the _cuda build (configure with "
                 "-DCELLINT_ENABLE_CUDA=ON)\n", prog);
    return 2;
#endif
  }
  std::fprintf(stderr, "%s: unknown backend '%s' (host, cuda, emulated or auto)\n", prog, b.c_str());
  return 2;
}

}  // namespace cellint::examples
