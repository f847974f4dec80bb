// p2p_probe: whether two GPUs of one host reach each other directly, and what a copy between them costs with and
// without peer access (cudaMemcpyPeerAsync, the median of 20 timed by events), beside a copy within one GPU. What
// cellint::mpi's peer copies rely on (docs/mpi.md).
//   nvcc -O2 -arch=sm_90 benchmarks/p2p_probe.cu -o p2p_probe && ./p2p_probe
#include <algorithm>
#include <cstdio>
#include <vector>

#include <cuda_runtime.h>

namespace {

void check(cudaError_t e, const char* what) {
  if (e != cudaSuccess) std::printf("%s: %s\n", what, cudaGetErrorString(e));
}

// median milliseconds of 20 copies of `bytes` from src (on device sd) to dst (on device dd) on stream s
float copy_ms(cudaStream_t s, void* dst, int dd, const void* src, int sd, std::size_t bytes, bool peer) {
  cudaEvent_t a, b;
  check(cudaEventCreate(&a), "cudaEventCreate");
  check(cudaEventCreate(&b), "cudaEventCreate");
  std::vector<float> t;
  for (int r = 0; r < 20; ++r) {
    check(cudaEventRecord(a, s), "cudaEventRecord");
    check(
        peer ? cudaMemcpyPeerAsync(dst, dd, src, sd, bytes, s) : cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDefault, s),
        "copy");
    check(cudaEventRecord(b, s), "cudaEventRecord");
    check(cudaEventSynchronize(b), "cudaEventSynchronize");
    float ms = 0;
    check(cudaEventElapsedTime(&ms, a, b), "cudaEventElapsedTime");
    t.push_back(ms);
  }
  cudaEventDestroy(a);
  cudaEventDestroy(b);
  std::sort(t.begin(), t.end());
  return t[t.size() / 2];
}

}  // namespace

int main() {
  int n = 0;
  check(cudaGetDeviceCount(&n), "cudaGetDeviceCount");
  std::printf("devices %d\n", n);
  if (n < 2) return 0;
  int can01 = 0, can10 = 0, rank = 0, atomics = 0;
  cudaDeviceCanAccessPeer(&can01, 0, 1);
  cudaDeviceCanAccessPeer(&can10, 1, 0);
  cudaDeviceGetP2PAttribute(&rank, cudaDevP2PAttrPerformanceRank, 0, 1);
  cudaDeviceGetP2PAttribute(&atomics, cudaDevP2PAttrNativeAtomicSupported, 0, 1);
  std::printf("can access peer 0->1 %d, 1->0 %d, perf rank %d, native atomics %d\n", can01, can10, rank, atomics);
  for (int pass = 0; pass < 2; ++pass) {
    if (pass == 1) {
      cudaSetDevice(0);
      check(cudaDeviceEnablePeerAccess(1, 0), "cudaDeviceEnablePeerAccess");
      cudaSetDevice(1);
      check(cudaDeviceEnablePeerAccess(0, 0), "cudaDeviceEnablePeerAccess");
    }
    for (std::size_t bytes : {std::size_t(1) << 20, std::size_t(64) << 20}) {
      void *a = nullptr, *b = nullptr, *c = nullptr;
      cudaStream_t s;
      cudaSetDevice(1);
      check(cudaMalloc(&b, bytes), "cudaMalloc");
      cudaSetDevice(0);
      check(cudaMalloc(&a, bytes), "cudaMalloc");
      check(cudaMalloc(&c, bytes), "cudaMalloc");
      check(cudaStreamCreate(&s), "cudaStreamCreate");
      float ms = copy_ms(s, b, 1, a, 0, bytes, true);
      std::printf("peer access %s: %zu bytes 0->1 %.4f ms (%.1f GB/s)\n", pass ? "on" : "off", bytes, ms,
                  bytes / ms / 1e6);
      ms = copy_ms(s, c, 0, a, 0, bytes, false);
      std::printf("  same GPU: %.4f ms (%.1f GB/s)\n", ms, bytes / ms / 1e6);
      cudaStreamDestroy(s);
      cudaFree(a);
      cudaFree(c);
      cudaSetDevice(1);
      cudaFree(b);
      cudaSetDevice(0);
    }
  }
  return 0;
}
