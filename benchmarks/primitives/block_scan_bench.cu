// Micro-benchmark of the in-place block scan (cellint/primitives/block_scan.hpp) against
// cub::BlockScan on CUDA.
//
// For each length N (cells of a sub-box) and block size, a launch of 16 blocks per SM has every
// block load its own N unsigned values into shared memory and scan them in place `reps` times
// (100 by default, to rise well above the launch overhead), then write them back. Variants:
//   cellint_incl    block_inclusive_scan_inplace (2h-3 barriers)
//   cellint_excl    block_exclusive_scan_inplace (2h-2 barriers)
//   code1_incl      the paper's Code 1 as printed (inclusive, 2h-2 barriers; for reference)
//   cub_raking_excl cub::BlockScan<unsigned, BLOCK> (BLOCK_SCAN_RAKING, CUB's default) ExclusiveSum
//   cub_warp_excl   cub::BlockScan<unsigned, BLOCK, BLOCK_SCAN_WARP_SCANS> ExclusiveSum
// CUB scans registers: each rep loads ceil(N/BLOCK) items per thread (blocked arrangement, the
// items-per-thread count rounded up to 1, 2, 3, 4, 8, 16 or 32) from shared memory, calls
// ExclusiveSum and stores them back, followed by __syncthreads() so that, as with cellint, the
// results are visible to the whole block and the temporary storage may be reused.
//
// Every variant is first checked against a host scan (one rep). Times are CUDA-event times of
// whole launches: 2 warm-up launches, then the median of 20. Reported: microseconds per launch,
// nanoseconds per scan of one block (launch time x SMs / (blocks x reps), i.e. the time one SM
// spends on one scan when all SMs are busy), and cub_warp / cellint_excl.
//
// Usage: cellint_block_scan_bench [out.json] [reps]
// With a path, the table goes to stdout and the JSON to the file; without, the table goes to
// stderr and the JSON to stdout.

#include <cub/block/block_scan.cuh>
#include <cub/version.cuh>
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <string>
#include <vector>

#include "cellint/backend/cuda.hpp"
#include "cellint/primitives/block_scan.hpp"

namespace {

constexpr int lengths[] = {27, 64, 125, 256, 343, 512, 1000, 1024, 2048, 4096};
constexpr int block_sizes[] = {128, 256, 512, 1024};
constexpr int timed_launches = 20;
constexpr int warmup_launches = 2;
constexpr int blocks_per_sm = 16;

// ---- kernels ------------------------------------------------------------------------------------

/// cellint's scan, through the block API: block k scans in[k*n, (k+1)*n) `reps` times in shared
/// memory and writes the result to out.
template <bool Exclusive>
struct CellintScanKernel {
  const unsigned* in;
  unsigned* out;
  int n;
  int reps;

  template <class Block>
  CELLINT_HD void operator()(Block& b) const {
    unsigned* s = b.template shared<unsigned>();
    const int t = static_cast<int>(b.thread_rank());
    const int bs = static_cast<int>(b.block_size());
    const std::size_t base = static_cast<std::size_t>(b.block_rank()) * static_cast<std::size_t>(n);
    for (int i = t; i < n; i += bs) s[i] = in[base + i];
    b.sync();
    for (int r = 0; r < reps; ++r) {
      if (Exclusive)
        cellint::block_exclusive_scan_inplace(b, s, n);
      else
        cellint::block_inclusive_scan_inplace(b, s, n);
    }
    for (int i = t; i < n; i += bs) out[base + i] = s[i];
  }
};

/// The paper's Code 1, transcribed with the block API (downward start js = max(4, js/2)).
struct Code1ScanKernel {
  const unsigned* in;
  unsigned* out;
  int n;
  int reps;

  template <class Block>
  CELLINT_HD void operator()(Block& b) const {
    unsigned* prefix = b.template shared<unsigned>();
    const int t = static_cast<int>(b.thread_rank());
    const int bs = static_cast<int>(b.block_size());
    const std::size_t base = static_cast<std::size_t>(b.block_rank()) * static_cast<std::size_t>(n);
    for (int i = t; i < n; i += bs) prefix[i] = in[base + i];
    b.sync();
    for (int r = 0; r < reps; ++r) {
      int js = 2;
      while (js <= n) {
        const int jsd2 = js / 2;
        for (int idn = t * js + js - 1; idn < n; idn += bs * js) prefix[idn] += prefix[idn - jsd2];
        js *= 2;
        b.sync();
      }
      js = js / 2 > 4 ? js / 2 : 4;
      while (js > 1) {
        const int jsd2 = js / 2;
        for (int idn = t * js + js + jsd2 - 1; idn < n; idn += bs * js)
          prefix[idn] += prefix[idn - jsd2];
        js = jsd2;
        b.sync();
      }
    }
    for (int i = t; i < n; i += bs) out[base + i] = prefix[i];
  }
};

/// cub::BlockScan over the same shared-memory array, Items values per thread (blocked).
template <int BlockSize, int Items, cub::BlockScanAlgorithm Algorithm>
__global__ void __launch_bounds__(BlockSize)
    cub_scan_kernel(const unsigned* in, unsigned* out, int n, int reps) {
  using Scan = cub::BlockScan<unsigned, BlockSize, Algorithm>;
  __shared__ typename Scan::TempStorage temp;
  extern __shared__ unsigned cub_bench_values[];
  unsigned* s = cub_bench_values;
  const int t = static_cast<int>(threadIdx.x);
  const std::size_t base = static_cast<std::size_t>(blockIdx.x) * static_cast<std::size_t>(n);
  for (int i = t; i < n; i += BlockSize) s[i] = in[base + i];
  __syncthreads();
  for (int r = 0; r < reps; ++r) {
    unsigned v[Items];
#pragma unroll
    for (int j = 0; j < Items; ++j) {
      const int i = t * Items + j;
      v[j] = i < n ? s[i] : 0u;
    }
    Scan(temp).ExclusiveSum(v, v);
#pragma unroll
    for (int j = 0; j < Items; ++j) {
      const int i = t * Items + j;
      if (i < n) s[i] = v[j];
    }
    __syncthreads();
  }
  for (int i = t; i < n; i += BlockSize) out[base + i] = s[i];
}

// ---- launching ----------------------------------------------------------------------------------

enum class Variant { cellint_incl, cellint_excl, code1_incl, cub_raking_excl, cub_warp_excl };
constexpr Variant variants[] = {Variant::cellint_incl, Variant::cellint_excl, Variant::code1_incl,
                                Variant::cub_raking_excl, Variant::cub_warp_excl};

const char* variant_name(Variant v) {
  switch (v) {
    case Variant::cellint_incl: return "cellint_incl";
    case Variant::cellint_excl: return "cellint_excl";
    case Variant::code1_incl: return "code1_incl";
    case Variant::cub_raking_excl: return "cub_raking_excl";
    case Variant::cub_warp_excl: return "cub_warp_excl";
  }
  return "?";
}

bool variant_is_exclusive(Variant v) {
  return v != Variant::cellint_incl && v != Variant::code1_incl;
}

/// Items per thread CUB needs for n values: ceil(n / block) rounded up to an instantiated count.
int cub_items(int n, int block) {
  const int need = (n + block - 1) / block;
  for (int items : {1, 2, 3, 4, 8, 16, 32})
    if (items >= need) return items;
  return -1;
}

/// Launches the CUB kernel for (Block, items), instantiating only the counts some length needs.
template <int Block, cub::BlockScanAlgorithm Algorithm>
void launch_cub(int items, unsigned grid, const unsigned* in, unsigned* out, int n, int reps) {
  const std::size_t shared = static_cast<std::size_t>(n) * sizeof(unsigned);
  switch (items) {
    case 1: cub_scan_kernel<Block, 1, Algorithm><<<grid, Block, shared>>>(in, out, n, reps); break;
    case 2: cub_scan_kernel<Block, 2, Algorithm><<<grid, Block, shared>>>(in, out, n, reps); break;
    case 3: cub_scan_kernel<Block, 3, Algorithm><<<grid, Block, shared>>>(in, out, n, reps); break;
    case 4: cub_scan_kernel<Block, 4, Algorithm><<<grid, Block, shared>>>(in, out, n, reps); break;
    case 8:
      if constexpr (Block <= 512)
        cub_scan_kernel<Block, 8, Algorithm><<<grid, Block, shared>>>(in, out, n, reps);
      break;
    case 16:
      if constexpr (Block <= 256)
        cub_scan_kernel<Block, 16, Algorithm><<<grid, Block, shared>>>(in, out, n, reps);
      break;
    case 32:
      if constexpr (Block <= 128)
        cub_scan_kernel<Block, 32, Algorithm><<<grid, Block, shared>>>(in, out, n, reps);
      break;
    default: break;
  }
  CELLINT_CHECK_CUDA(cudaGetLastError());
}

template <cub::BlockScanAlgorithm Algorithm>
void launch_cub_any(int block, unsigned grid, const unsigned* in, unsigned* out, int n, int reps) {
  const int items = cub_items(n, block);
  switch (block) {
    case 128: launch_cub<128, Algorithm>(items, grid, in, out, n, reps); break;
    case 256: launch_cub<256, Algorithm>(items, grid, in, out, n, reps); break;
    case 512: launch_cub<512, Algorithm>(items, grid, in, out, n, reps); break;
    case 1024: launch_cub<1024, Algorithm>(items, grid, in, out, n, reps); break;
    default: std::fprintf(stderr, "no CUB instantiation for block size %d\n", block); std::exit(2);
  }
}

/// One launch of `v`.
void launch(Variant v, int block, unsigned grid, const unsigned* in, unsigned* out, int n,
            int reps) {
  const cellint::LaunchShape shape{grid, static_cast<unsigned>(block),
                                   static_cast<std::size_t>(n) * sizeof(unsigned)};
  switch (v) {
    case Variant::cellint_incl:
      cellint::Cuda::launch(shape, CellintScanKernel<false>{in, out, n, reps});
      break;
    case Variant::cellint_excl:
      cellint::Cuda::launch(shape, CellintScanKernel<true>{in, out, n, reps});
      break;
    case Variant::code1_incl:
      cellint::Cuda::launch(shape, Code1ScanKernel{in, out, n, reps});
      break;
    case Variant::cub_raking_excl:
      launch_cub_any<cub::BLOCK_SCAN_RAKING>(block, grid, in, out, n, reps);
      break;
    case Variant::cub_warp_excl:
      launch_cub_any<cub::BLOCK_SCAN_WARP_SCANS>(block, grid, in, out, n, reps);
      break;
  }
}

/// Host reference: each block's segment scanned `reps` times (unsigned wraps like the device).
std::vector<unsigned> host_scan(const std::vector<unsigned>& in, int n, unsigned grid,
                                bool exclusive) {
  std::vector<unsigned> out(in.size());
  for (unsigned g = 0; g < grid; ++g) {
    unsigned acc = 0;
    for (int i = 0; i < n; ++i) {
      const std::size_t k = static_cast<std::size_t>(g) * n + i;
      if (exclusive) {
        out[k] = acc;
        acc += in[k];
      } else {
        acc += in[k];
        out[k] = acc;
      }
    }
  }
  return out;
}

struct Row {
  int n, block;
  double us[5];       // median microseconds per launch, per variant
  double ns_scan[5];  // nanoseconds per scan and SM
  int barriers_incl, barriers_excl, barriers_code1;
};

/// Barriers of Code 1 for n values (counted by running its loop structure).
int code1_barriers(int n) {
  int count = 0, js = 2;
  while (js <= n) {
    js *= 2;
    ++count;
  }
  js = js / 2 > 4 ? js / 2 : 4;
  while (js > 1) {
    js /= 2;
    ++count;
  }
  return count;
}

}  // namespace

int main(int argc, char** argv) {
  const char* json_path = argc > 1 ? argv[1] : nullptr;
  const int reps = argc > 2 ? std::atoi(argv[2]) : 100;
  FILE* table = json_path ? stdout : stderr;

  int device = 0;
  CELLINT_CHECK_CUDA(cudaGetDevice(&device));
  cudaDeviceProp prop{};
  CELLINT_CHECK_CUDA(cudaGetDeviceProperties(&prop, device));
  int driver = 0, runtime = 0;
  CELLINT_CHECK_CUDA(cudaDriverGetVersion(&driver));
  CELLINT_CHECK_CUDA(cudaRuntimeGetVersion(&runtime));
  const int sms = prop.multiProcessorCount;
  const unsigned grid = static_cast<unsigned>(sms * blocks_per_sm);

  const int max_len = *std::max_element(std::begin(lengths), std::end(lengths));
  const std::size_t max_elems = static_cast<std::size_t>(grid) * max_len;
  unsigned* d_in = static_cast<unsigned*>(cellint::Cuda::allocate(max_elems * sizeof(unsigned)));
  unsigned* d_out = static_cast<unsigned*>(cellint::Cuda::allocate(max_elems * sizeof(unsigned)));

  std::mt19937 rng(20240611u);
  std::vector<unsigned> h_in(max_elems);
  for (unsigned& v : h_in) v = rng() % 1000u;
  cellint::Cuda::copy(d_in, h_in.data(), max_elems * sizeof(unsigned),
                      cellint::CopyKind::HostToDevice);

  std::fprintf(table,
               "block scan: %s, %d SMs, %u blocks per launch, %d scans per block and launch\n",
               prop.name, sms, grid, reps);
  std::fprintf(table, "%6s %6s %5s %5s | %12s %12s %12s %12s %12s | %9s\n", "N", "block", "h",
               "bar", "cellint_incl", "cellint_excl", "code1_incl", "cub_raking", "cub_warp",
               "cub_warp/");
  std::fprintf(table, "%6s %6s %5s %5s | %12s %12s %12s %12s %12s | %9s\n", "", "", "", "incl",
               "ns/scan", "ns/scan", "ns/scan", "ns/scan", "ns/scan", "cell_excl");

  std::vector<Row> rows;
  int failures = 0;
  cellint::Cuda::Timer timer;
  for (int n : lengths) {
    const std::size_t elems = static_cast<std::size_t>(grid) * n;
    const std::vector<unsigned> in(h_in.begin(), h_in.begin() + static_cast<std::ptrdiff_t>(elems));
    const std::vector<unsigned> want_incl = host_scan(in, n, grid, false);
    const std::vector<unsigned> want_excl = host_scan(in, n, grid, true);
    for (int block : block_sizes) {
      Row row{};
      row.n = n;
      row.block = block;
      row.barriers_incl = cellint::block_inclusive_scan_barriers(n);
      row.barriers_excl = cellint::block_exclusive_scan_barriers(n);
      row.barriers_code1 = code1_barriers(n);
      for (int vi = 0; vi < 5; ++vi) {
        const Variant v = variants[vi];
        // Correctness: one scan per block against the host.
        cellint::Cuda::fill_bytes(d_out, 0xFF, elems * sizeof(unsigned));
        launch(v, block, grid, d_in, d_out, n, 1);
        std::vector<unsigned> got(elems);
        cellint::Cuda::copy(got.data(), d_out, elems * sizeof(unsigned),
                            cellint::CopyKind::DeviceToHost);
        const std::vector<unsigned>& want = variant_is_exclusive(v) ? want_excl : want_incl;
        if (got != want) {
          std::size_t k = 0;
          while (got[k] == want[k]) ++k;
          std::fprintf(
              stderr,
              "MISMATCH %s N=%d block=%d: element %zu (block %zu, index %zu) is %u, want %u\n",
              variant_name(v), n, block, k, k / n, k % n, got[k], want[k]);
          ++failures;
        }
        // Timing.
        for (int w = 0; w < warmup_launches; ++w) launch(v, block, grid, d_in, d_out, n, reps);
        std::vector<float> ms(timed_launches);
        for (float& m : ms) {
          timer.start();
          launch(v, block, grid, d_in, d_out, n, reps);
          timer.stop();
          m = timer.elapsed_ms();
        }
        std::nth_element(ms.begin(), ms.begin() + timed_launches / 2, ms.end());
        const double median_ms = ms[timed_launches / 2];
        row.us[vi] = median_ms * 1e3;
        row.ns_scan[vi] = median_ms * 1e6 * sms / (static_cast<double>(grid) * reps);
      }
      cellint::Cuda::synchronize();
      int h = 0;
      while ((1 << h) < n + 1) ++h;
      std::fprintf(table, "%6d %6d %5d %5d | %12.1f %12.1f %12.1f %12.1f %12.1f | %9.2f\n", n,
                   block, h, row.barriers_incl, row.ns_scan[0], row.ns_scan[1], row.ns_scan[2],
                   row.ns_scan[3], row.ns_scan[4], row.ns_scan[4] / row.ns_scan[1]);
      std::fflush(table);
      rows.push_back(row);
    }
  }
  cellint::Cuda::deallocate(d_in);
  cellint::Cuda::deallocate(d_out);

  FILE* js = json_path ? std::fopen(json_path, "w") : stdout;
  if (!js) {
    std::fprintf(stderr, "cannot open %s for writing\n", json_path);
    return 2;
  }
  std::fprintf(js, "{\n  \"benchmark\": \"block_scan\",\n  \"context\": {\n");
  std::fprintf(js, "    \"card\": \"%s\",\n    \"multiprocessors\": %d,\n", prop.name, sms);
  std::fprintf(js, "    \"compute_capability\": \"%d.%d\",\n", prop.major, prop.minor);
  std::fprintf(js, "    \"cuda_driver_api\": %d,\n    \"cuda_runtime\": %d,\n", driver, runtime);
  std::fprintf(js, "    \"nvcc\": \"%d.%d.%d\",\n    \"cub_version\": %d,\n", __CUDACC_VER_MAJOR__,
               __CUDACC_VER_MINOR__, __CUDACC_VER_BUILD__, CUB_VERSION);
  std::fprintf(js, "    \"blocks_per_launch\": %u,\n    \"scans_per_block\": %d,\n", grid, reps);
  std::fprintf(js, "    \"timing\": \"CUDA events per launch, %d warm-up, median of %d\",\n",
               warmup_launches, timed_launches);
  std::fprintf(js,
               "    \"ns_per_scan\": \"median launch time * SMs / (blocks * scans per block)\",\n");
  std::fprintf(js, "    \"correct\": %s\n  },\n  \"results\": [\n",
               failures == 0 ? "true" : "false");
  for (std::size_t r = 0; r < rows.size(); ++r) {
    const Row& row = rows[r];
    for (int vi = 0; vi < 5; ++vi) {
      const Variant v = variants[vi];
      const int barriers = v == Variant::cellint_incl   ? row.barriers_incl
                           : v == Variant::cellint_excl ? row.barriers_excl
                           : v == Variant::code1_incl   ? row.barriers_code1
                                                        : -1;
      std::fprintf(
          js,
          "    {\"variant\": \"%s\", \"n\": %d, \"block\": %d, \"cub_items_per_thread\": %d, "
          "\"barriers\": %d, \"us_per_launch\": %.3f, \"ns_per_scan\": %.2f, "
          "\"gelem_per_s\": %.3f}%s\n",
          variant_name(v), row.n, row.block, barriers < 0 ? cub_items(row.n, row.block) : 0,
          barriers, row.us[vi], row.ns_scan[vi],
          static_cast<double>(grid) * reps * row.n / (row.us[vi] * 1e3),
          r + 1 == rows.size() && vi == 4 ? "" : ",");
    }
  }
  std::fprintf(js, "  ]\n}\n");
  if (js != stdout) std::fclose(js);
  if (failures) std::fprintf(stderr, "%d variant(s) gave wrong results\n", failures);
  return failures ? 1 : 0;
}
