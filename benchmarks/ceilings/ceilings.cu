// Measures the two ceilings the interaction benchmark compares against (METHOD: measure them
// once on the device rather than trusting datasheets):
//   - FP32 FMA rate: many blocks of threads each running independent chains of fmaf; TFLOP/s
//     counts 2 flop per FMA;
//   - device-memory bandwidth: cudaMemcpy device-to-device of a large buffer and a float4 copy
//     kernel; bytes read + bytes written over the time. The best of the two is the ceiling.
// Prints a summary and writes JSON (--json FILE) with peak_fp32_tflops and bandwidth_tbs, the
// keys interaction_bench --ceilings reads.
//
//   ceilings [--json FILE] [--bytes N (default 1 GiB)] [--runs N (default 9)]

#include <cuda_runtime.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "common/context.hpp"
#include "common/json.hpp"
#include "common/timing.hpp"

namespace {

#define CEIL_CHECK(call)                                                                              \
  do {                                                                                                \
    const cudaError_t e_ = (call);                                                                    \
    if (e_ != cudaSuccess) {                                                                          \
      std::fprintf(stderr, "ceilings: %s failed at %s:%d: %s (%s)\n", #call, __FILE__, __LINE__,      \
                   cudaGetErrorName(e_), cudaGetErrorString(e_));                                     \
      std::exit(1);                                                                                   \
    }                                                                                                 \
  } while (0)

constexpr int kChains = 8;   // independent FMA chains per thread (hides the FMA latency)
constexpr int kUnroll = 16;  // FMAs per chain per loop trip

// Each thread runs kChains independent chains of iters * kUnroll dependent FMAs. The result is
// stored only if it equals `never`, which it does not, so nothing can be removed.
__global__ void fma_kernel(float* sink, int iters, float a, float b, float never) {
  float x[kChains];
#pragma unroll
  for (int c = 0; c < kChains; ++c) x[c] = static_cast<float>(threadIdx.x) * 1e-3f + static_cast<float>(c);
  for (int i = 0; i < iters; ++i) {
#pragma unroll
    for (int u = 0; u < kUnroll; ++u) {
#pragma unroll
      for (int c = 0; c < kChains; ++c) x[c] = fmaf(x[c], a, b);
    }
  }
  float s = 0;
#pragma unroll
  for (int c = 0; c < kChains; ++c) s += x[c];
  if (s == never) sink[blockIdx.x * blockDim.x + threadIdx.x] = s;
}

// Grid-stride float4 copy.
__global__ void copy_kernel(const float4* __restrict__ in, float4* __restrict__ out, std::size_t n) {
  const std::size_t stride = static_cast<std::size_t>(gridDim.x) * blockDim.x;
  for (std::size_t i = static_cast<std::size_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += stride)
    out[i] = in[i];
}

// Event-timed milliseconds of `f()`.
template <class F>
float time_ms(F&& f) {
  cudaEvent_t a, b;
  CEIL_CHECK(cudaEventCreate(&a));
  CEIL_CHECK(cudaEventCreate(&b));
  CEIL_CHECK(cudaEventRecord(a));
  f();
  CEIL_CHECK(cudaEventRecord(b));
  CEIL_CHECK(cudaEventSynchronize(b));
  CEIL_CHECK(cudaGetLastError());
  float ms = 0;
  CEIL_CHECK(cudaEventElapsedTime(&ms, a, b));
  CEIL_CHECK(cudaEventDestroy(a));
  CEIL_CHECK(cudaEventDestroy(b));
  return ms;
}

// FP32 lanes per SM by compute capability (for the theoretical rate only).
int fp32_lanes_per_sm(int major, int minor) {
  if (major == 7) return 64;
  if (major == 8 && minor == 0) return 64;
  return 128;  // 8.6, 8.9, 9.0, 10.x, 12.x
}

std::string json_list(const std::vector<double>& v) {
  std::string r = "[";
  for (std::size_t i = 0; i < v.size(); ++i) r += (i ? ", " : "") + cellint::bench::json_number(v[i]);
  return r + "]";
}

}  // namespace

int main(int argc, char** argv) {
  using namespace cellint::bench;
  std::string json_path;
  std::size_t bytes = std::size_t(1) << 30;
  int runs = 9;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--json" && i + 1 < argc) json_path = argv[++i];
    else if (a == "--bytes" && i + 1 < argc) bytes = static_cast<std::size_t>(std::strtod(argv[++i], nullptr));
    else if (a == "--runs" && i + 1 < argc) runs = std::max(1, std::atoi(argv[++i]));
    else {
      std::fprintf(stderr, "usage: ceilings [--json FILE] [--bytes N] [--runs N]\n");
      return 2;
    }
  }
  int count = 0;
  if (cudaGetDeviceCount(&count) != cudaSuccess || count == 0) {
    std::fprintf(stderr, "ceilings: no usable CUDA device, skipping\n");
    return 77;
  }
  int dev = 0;
  CEIL_CHECK(cudaGetDevice(&dev));
  cudaDeviceProp prop{};
  CEIL_CHECK(cudaGetDeviceProperties(&prop, dev));
  const int sms = prop.multiProcessorCount;
  int clock_khz = 0, mem_khz = 0, bus_bits = 0, l2 = 0;
  if (cudaDeviceGetAttribute(&clock_khz, cudaDevAttrClockRate, dev) != cudaSuccess) clock_khz = 0;
  if (cudaDeviceGetAttribute(&mem_khz, cudaDevAttrMemoryClockRate, dev) != cudaSuccess) mem_khz = 0;
  if (cudaDeviceGetAttribute(&bus_bits, cudaDevAttrGlobalMemoryBusWidth, dev) != cudaSuccess) bus_bits = 0;
  if (cudaDeviceGetAttribute(&l2, cudaDevAttrL2CacheSize, dev) != cudaSuccess) l2 = 0;
  (void)cudaGetLastError();
  const double theo_tflops = 2.0 * sms * fp32_lanes_per_sm(prop.major, prop.minor) * clock_khz * 1e3 * 1e-12;
  const double theo_tbs = 2.0 * mem_khz * 1e3 * (bus_bits / 8.0) * 1e-12;

  // ---- FP32 FMA rate ---------------------------------------------------------------------------
  float* sink = nullptr;
  const int threads = 256;
  const int blocks = sms * 8 * 4;  // 8 resident blocks of 256 per SM, 4 waves
  CEIL_CHECK(cudaMalloc(&sink, sizeof(float) * blocks * threads));
  auto fma_run = [&](int iters) {
    return time_ms([&] { fma_kernel<<<blocks, threads>>>(sink, iters, 0.9999f, 1e-4f, -12345.0f); });
  };
  fma_run(16);  // warm-up (module load)
  int iters = 256;
  for (float ms = fma_run(iters); ms < 20.0f && iters < (1 << 24); ms = fma_run(iters)) iters *= 2;
  const double fma_flop = 2.0 * kChains * kUnroll * static_cast<double>(iters) * blocks * threads;
  std::vector<double> fma_tflops;
  for (int r = 0; r < runs; ++r) fma_tflops.push_back(fma_flop / (fma_run(iters) * 1e-3) * 1e-12);
  const double fma_med = median_of(fma_tflops);
  const double fma_max = *std::max_element(fma_tflops.begin(), fma_tflops.end());
  CEIL_CHECK(cudaFree(sink));

  // ---- bandwidth ---------------------------------------------------------------------------------
  bytes = bytes / 16 * 16;
  void *src = nullptr, *dst = nullptr;
  CEIL_CHECK(cudaMalloc(&src, bytes));
  CEIL_CHECK(cudaMalloc(&dst, bytes));
  CEIL_CHECK(cudaMemset(src, 0x3c, bytes));  // not zeros: 0x3c3c3c3c is a normal float
  CEIL_CHECK(cudaMemset(dst, 0x11, bytes));
  auto memcpy_run = [&] { return time_ms([&] { CEIL_CHECK(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToDevice)); }); };
  const std::size_t n4 = bytes / 16;
  const int copy_blocks = sms * 16;
  auto kernel_run = [&] {
    return time_ms([&] {
      copy_kernel<<<copy_blocks, 512>>>(static_cast<const float4*>(src), static_cast<float4*>(dst), n4);
    });
  };
  memcpy_run();
  kernel_run();
  std::vector<double> memcpy_tbs, kernel_tbs;
  for (int r = 0; r < runs; ++r) {
    memcpy_tbs.push_back(2.0 * bytes / (memcpy_run() * 1e-3) * 1e-12);
    kernel_tbs.push_back(2.0 * bytes / (kernel_run() * 1e-3) * 1e-12);
  }
  // the copy kernel must have copied (check a few words)
  unsigned probe[4] = {0, 0, 0, 0};
  CEIL_CHECK(cudaMemcpy(probe, static_cast<char*>(dst) + bytes - sizeof probe, sizeof probe, cudaMemcpyDeviceToHost));
  const bool copied = probe[0] == 0x3c3c3c3cu && probe[3] == 0x3c3c3c3cu;
  CEIL_CHECK(cudaFree(src));
  CEIL_CHECK(cudaFree(dst));
  const double memcpy_med = median_of(memcpy_tbs), kernel_med = median_of(kernel_tbs);
  const double bw = std::max(memcpy_med, kernel_med);

  // ---- report ------------------------------------------------------------------------------------
  Context c;
  c.backend = "cuda";
  c.card = prop.name;
  c.multiprocessors = sms;
  int drv = 0, rt = 0;
  (void)cudaDriverGetVersion(&drv);
  (void)cudaRuntimeGetVersion(&rt);
  c.driver = nvidia_driver_version();
  c.cuda = "runtime " + std::to_string(rt / 1000) + "." + std::to_string(rt % 1000 / 10) + ", driver API " +
           std::to_string(drv / 1000) + "." + std::to_string(drv % 1000 / 10);
  fill_common_context(c, "");
  c.peak_fp32_tflops = fma_med;
  c.bandwidth_tbs = bw;

  std::printf("# ceilings on %s (%d SMs, cc %d.%d), driver %s, %s\n", prop.name, sms, prop.major, prop.minor,
              c.driver.c_str(), c.cuda.c_str());
  std::printf("FP32 FMA        %8.2f TFLOP/s median (max %.2f) over %d runs; theoretical %.2f at %d MHz\n", fma_med,
              fma_max, runs, theo_tflops, clock_khz / 1000);
  std::printf("memcpy D2D      %8.3f TB/s median (read + write of %.2f GiB)\n", memcpy_med, bytes / 1073741824.0);
  std::printf("copy kernel     %8.3f TB/s median%s\n", kernel_med, copied ? "" : "  (COPY CHECK FAILED)");
  std::printf("bandwidth       %8.3f TB/s (best of the two); theoretical %.2f TB/s\n", bw, theo_tbs);

  if (!json_path.empty()) {
    JsonObject o;
    o.str("schema", "cellint-ceilings/1").str("benchmark", "ceilings");
    add_context(o, c);
    o.integer("compute_capability_major", prop.major).integer("compute_capability_minor", prop.minor)
        .integer("sm_clock_mhz", clock_khz / 1000).integer("mem_clock_mhz", mem_khz / 1000)
        .integer("bus_width_bits", bus_bits).integer("l2_bytes", l2)
        .num("theoretical_fp32_tflops", theo_tflops).num("theoretical_bandwidth_tbs", theo_tbs)
        .num("fp32_fma_tflops", fma_med).num("fp32_fma_tflops_max", fma_max).raw("fp32_fma_runs", json_list(fma_tflops))
        .integer("fma_blocks", blocks).integer("fma_threads", threads).integer("fma_iters", iters)
        .integer("fma_chains", kChains)
        .num("memcpy_d2d_tbs", memcpy_med).raw("memcpy_d2d_runs", json_list(memcpy_tbs))
        .num("copy_kernel_tbs", kernel_med).raw("copy_kernel_runs", json_list(kernel_tbs))
        .boolean("copy_check", copied).integer("copy_bytes", static_cast<long long>(bytes))
        .str("method", "FMA: 2 flop per fmaf, 8 independent chains per thread, median of runs; bandwidth: "
                       "(bytes read + bytes written) / time, median of runs, best of cudaMemcpy D2D and a float4 "
                       "copy kernel");
    if (!write_text_file(json_path, o.dump_pretty())) {
      std::fprintf(stderr, "ceilings: cannot write %s\n", json_path.c_str());
      return 1;
    }
  }
  return copied ? 0 : 1;
}
