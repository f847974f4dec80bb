// Catch2 runner for every cellint test binary. GPU binaries exit with 77 (reported by CTest as
// "skipped") when no device is usable, after still answering the listing options that
// catch_discover_tests uses at build time.
#define CATCH_CONFIG_RUNNER
#include <catch2/catch.hpp>

#include <cstdio>

#if defined(CELLINT_TEST_REQUIRES_CUDA)
#  include <cuda_runtime_api.h>
#elif defined(CELLINT_TEST_REQUIRES_HIP)
#  include <hip/hip_runtime_api.h>
#endif

namespace {
bool gpu_present(const char** why) {
#if defined(CELLINT_TEST_REQUIRES_CUDA)
  int n = 0;
  cudaError_t e = cudaGetDeviceCount(&n);
  if (e != cudaSuccess) *why = cudaGetErrorString(e);
  return e == cudaSuccess && n > 0;
#elif defined(CELLINT_TEST_REQUIRES_HIP)
  int n = 0;
  hipError_t e = hipGetDeviceCount(&n);
  if (e != hipSuccess) *why = hipGetErrorString(e);
  return e == hipSuccess && n > 0;
#else
  (void)why;
  return true;
#endif
}
}  // namespace

int main(int argc, char* argv[]) {
  Catch::Session session;
  if (int rc = session.applyCommandLine(argc, argv)) return rc;
  const auto& cfg = session.configData();
  const bool listing = cfg.listTests || cfg.listTestNamesOnly || cfg.listTags || cfg.listReporters;
  const char* why = "no device found";
  if (!listing && !gpu_present(&why)) {
    std::printf("cellint: no usable GPU (%s): skipping GPU tests\n", why);
    return 77;
  }
  return session.run();
}
