// A probe of the full-list pair kernel's loads (docs/lists.md, "Tried and dropped": sources staged in shared
// memory). in.lj's lattice (fcc, rho = 0.8442, jittered), list cells as cellint's (cutoff + skin = 2.8 wide, split in
// two along X), rows built on the host, column-major, in the order of the cells around the target. Three kernels with
// the LJ force of LennardJonesForces (branch-free cutoff), one thread per row:
//   A   each source's 16-byte record gathered from global memory (the library's kernel: entries are list positions,
//       with a mark for a periodic image, four entries in flight);
//   B   a block's sources (the union of its rows, each at the image it is used at) staged in shared memory first,
//       rows of 2-byte indices into them;
//   S   as B, positions staged as three float arrays.
// Each kernel is timed with events (20 warm-up launches, 7 batches of 50, median), and B and S are checked against A.
//   nvcc -O3 -std=c++17 -arch=sm_90 -Xcompiler -fopenmp benchmarks/lists/source_staging_probe.cu -o probe
//   ./probe [fcc cells per side, default 80 = 2,048,000 atoms] [jitter, default 0.2]
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <random>
#include <type_traits>
#include <vector>

#include <cuda_runtime.h>

#define CK(x)                                         \
  do {                                                \
    cudaError_t e_ = (x);                             \
    if (e_ != cudaSuccess) {                          \
      printf("%s: %s\n", #x, cudaGetErrorString(e_)); \
      exit(1);                                        \
    }                                                 \
  } while (0)

constexpr float RC = 2.5f, REACH = 2.8f;
constexpr unsigned IMG = 0x80000000u;

/// The LJ force of the pair (target at xt, source at p), with the branch-free cutoff of LennardJonesForces.
struct Force {
  float x = 0, y = 0, z = 0;
  __device__ void add(const float4& xt, float px, float py, float pz) {
    const float dx = xt.x - px, dy = xt.y - py, dz = xt.z - pz;
    float r2 = dx * dx + dy * dy + dz * dz;
    r2 = r2 < RC * RC ? r2 : INFINITY;
    const float u = 1.0f / r2, u3 = u * u * u, f = 24.0f * u * u3 * (2.0f * u3 - 1.0f);
    x += f * dx;
    y += f * dy;
    z += f * dz;
  }
  __device__ void store(float* out, const float4& xt) const {
    const int slot = __float_as_int(xt.w);
    out[3 * slot] = x;
    out[3 * slot + 1] = y;
    out[3 * slot + 2] = z;
  }
};

/// Staged source i: record src[i] moved by its image code (2 bits an axis: 0 none, 1 +L, 2 -L).
__device__ float4 staged_source(const float4* rec, const unsigned* src, const unsigned char* code, int i, float L) {
  float4 p = rec[src[i]];
  const unsigned c = code[i];
  auto shift = [&](unsigned k) { return k == 1 ? L : k == 2 ? -L : 0.f; };
  p.x += shift(c & 3);
  p.y += shift((c >> 2) & 3);
  p.z += shift((c >> 4) & 3);
  return p;
}

/// A: records gathered from global memory (entries: list positions, the top bit marking a periodic image).
__global__ __launch_bounds__(128, 12) void kA(const float4* __restrict__ rec, const unsigned* __restrict__ nbr,
                                              const int* __restrict__ len, int n, int stride, float L, float invL,
                                              float* __restrict__ out) {
  const int t = blockIdx.x * blockDim.x + threadIdx.x;
  if (t >= n) return;
  const float4 xt = rec[t];
  Force f;
  const int m = len[t];
  const unsigned* at = nbr + t;
  auto fold = [&](float4& p) {  // (the source at the image nearest the target)
    p.x += L * rintf((xt.x - p.x) * invL);
    p.y += L * rintf((xt.y - p.y) * invL);
    p.z += L * rintf((xt.z - p.z) * invL);
  };
  int k = 0;
  for (; k + 3 < m; k += 4, at += 4 * stride) {  // (one test of the image marks per four entries, as the library's)
    unsigned e[4];
    float4 p[4];
    for (int q = 0; q < 4; ++q) e[q] = at[q * stride];
    for (int q = 0; q < 4; ++q) p[q] = rec[e[q] & 0x7fffffffu];
    if ((e[0] | e[1] | e[2] | e[3]) & IMG)
      for (int q = 0; q < 4; ++q)
        if (e[q] & IMG) fold(p[q]);
    for (int q = 0; q < 4; ++q) f.add(xt, p[q].x, p[q].y, p[q].z);
  }
  for (; k < m; ++k, at += stride) {
    float4 p = rec[*at & 0x7fffffffu];
    if (*at & IMG) fold(p);
    f.add(xt, p.x, p.y, p.z);
  }
  f.store(out, xt);
}

/// The staged kernels' row loop: four entries in flight, source e's coordinates from load(e).
template <class E, class Load>
__device__ void staged_row(const E* at, int m, int stride, const float4& xt, Force& f, Load&& load) {
  int k = 0;
  for (; k + 3 < m; k += 4, at += 4 * stride) {
    unsigned e[4];
    for (int q = 0; q < 4; ++q) e[q] = at[q * stride];
    for (int q = 0; q < 4; ++q) load(e[q], f);
  }
  for (; k < m; ++k, at += stride) load(*at, f);
}

/// B: block b's sources src[soff[b] .. soff[b + 1]) staged as float4 records; entries index them.
template <class E, int TPB>
__global__ __launch_bounds__(TPB) void kB(const float4* __restrict__ rec, const E* __restrict__ nbr,
                                          const int* __restrict__ len, const int* __restrict__ soff,
                                          const unsigned* __restrict__ src, const unsigned char* __restrict__ code,
                                          int n, int stride, float L, float* __restrict__ out) {
  extern __shared__ float4 sh[];
  const int b = blockIdx.x, s0 = soff[b], s1 = soff[b + 1];
  for (int i = s0 + threadIdx.x; i < s1; i += TPB) sh[i - s0] = staged_source(rec, src, code, i, L);
  __syncthreads();
  const int t = b * TPB + threadIdx.x;
  if (t >= n) return;
  const float4 xt = rec[t];
  Force f;
  staged_row(nbr + t, len[t], stride, xt, f, [&](unsigned e, Force& g) { g.add(xt, sh[e].x, sh[e].y, sh[e].z); });
  f.store(out, xt);
}

/// S: as B, the sources staged as three float arrays of `cap` each.
template <class E, int TPB>
__global__ __launch_bounds__(TPB) void kS(const float4* __restrict__ rec, const E* __restrict__ nbr,
                                          const int* __restrict__ len, const int* __restrict__ soff,
                                          const unsigned* __restrict__ src, const unsigned char* __restrict__ code,
                                          int n, int stride, float L, float* __restrict__ out, int cap) {
  extern __shared__ float shf[];
  float *sx = shf, *sy = shf + cap, *sz = shf + 2 * cap;
  const int b = blockIdx.x, s0 = soff[b], s1 = soff[b + 1];
  for (int i = s0 + threadIdx.x; i < s1; i += TPB) {
    const float4 p = staged_source(rec, src, code, i, L);
    sx[i - s0] = p.x;
    sy[i - s0] = p.y;
    sz[i - s0] = p.z;
  }
  __syncthreads();
  const int t = b * TPB + threadIdx.x;
  if (t >= n) return;
  const float4 xt = rec[t];
  Force f;
  staged_row(nbr + t, len[t], stride, xt, f, [&](unsigned e, Force& g) { g.add(xt, sx[e], sy[e], sz[e]); });
  f.store(out, xt);
}

template <class T>
struct Tag {
  using type = T;
};

int main(int argc, char** argv) {
  int nl = argc > 1 ? atoi(argv[1]) : 80;  // fcc cells per axis
  float jit = argc > 2 ? atof(argv[2]) : 0.2f;
  const int n = 4 * nl * nl * nl;
  const float a = std::cbrt(4.0f / 0.8442f), L = a * nl;
  std::mt19937 rng(12345);
  std::uniform_real_distribution<float> g(-jit, jit);  // (no two atoms closer than 0.59)
  std::vector<float> x(n), y(n), z(n);
  const float bas[4][3] = {{0, 0, 0}, {.5f, .5f, 0}, {.5f, 0, .5f}, {0, .5f, .5f}};
  int q = 0;
  for (int k = 0; k < nl; ++k)
    for (int j = 0; j < nl; ++j)
      for (int i = 0; i < nl; ++i)
        for (int b = 0; b < 4; ++b, ++q) {
          auto wrap = [&](float v) {
            v = std::fmod(v, L);
            return v < 0 ? v + L : v;
          };
          x[q] = wrap((i + bas[b][0]) * a + g(rng));
          y[q] = wrap((j + bas[b][1]) * a + g(rng));
          z[q] = wrap((k + bas[b][2]) * a + g(rng));
        }
  // cells: yz width >= REACH, x split 2
  int ny = int(L / REACH), nx = 2 * ny;
  float wx = L / nx, wy = L / ny;
  auto cell = [&](int i) {
    int cx = std::min(nx - 1, int(x[i] / wx)), cy = std::min(ny - 1, int(y[i] / wy)),
        cz = std::min(ny - 1, int(z[i] / wy));
    return (cz * ny + cy) * nx + cx;
  };
  std::vector<int> cnt(nx * ny * ny + 1, 0), cof(n);
  for (int i = 0; i < n; ++i) cnt[cof[i] = cell(i)]++;
  std::vector<int> start(nx * ny * ny + 1, 0);
  for (int c = 0; c < nx * ny * ny; ++c) start[c + 1] = start[c] + cnt[c];
  std::vector<int> fill(start.begin(), start.end() - 1), order(n);
  for (int i = 0; i < n; ++i) order[fill[cof[i]]++] = i;
  std::vector<float4> rec(n + 64);
  for (int u = 0; u < n; ++u) {
    int i = order[u];
    int slot = u;  // (results by list position)
    float fs;
    memcpy(&fs, &slot, 4);
    rec[u] = make_float4(x[i], y[i], z[i], fs);
  }
  // rows: list positions (with image mark) and per-entry image code
  std::vector<std::vector<unsigned>> rows(n);
  std::vector<std::vector<unsigned char>> codes(n);
  const float R2 = REACH * REACH;
#pragma omp parallel for schedule(dynamic, 1024)
  for (int t = 0; t < n; ++t) {
    int c = cof[order[t]];
    int cx = c % nx, cy = (c / nx) % ny, cz = c / (nx * ny);
    for (int dz = -1; dz <= 1; ++dz)
      for (int dy = -1; dy <= 1; ++dy)
        for (int dx = -2; dx <= 2; ++dx) {
          int X = cx + dx, Y = cy + dy, Z = cz + dz;
          unsigned char code = 0;
          float sx = 0, sy = 0, sz = 0;
          // a cell index past the box's side: wrapped, its image's shift, and the code's two bits at `bit`
          auto wrap = [&](int& i, int cells, int bit, float& shift) {
            if (i < 0) {
              i += cells;
              code |= 2 << bit;
              shift = -L;
            } else if (i >= cells) {
              i -= cells;
              code |= 1 << bit;
              shift = L;
            }
          };
          wrap(X, nx, 0, sx);
          wrap(Y, ny, 2, sy);
          wrap(Z, ny, 4, sz);
          int cc = (Z * ny + Y) * nx + X;
          for (int u = start[cc]; u < start[cc + 1]; ++u) {
            if (u == t) continue;
            float ddx = rec[t].x - (rec[u].x + sx), ddy = rec[t].y - (rec[u].y + sy), ddz = rec[t].z - (rec[u].z + sz);
            if (ddx * ddx + ddy * ddy + ddz * ddz < R2) {
              rows[t].push_back(code ? (unsigned(u) | IMG) : unsigned(u));
              codes[t].push_back(code);
            }
          }
        }
  }
  int cap = 0;
  long tot = 0;
  for (auto& r : rows) {
    cap = std::max<int>(cap, r.size());
    tot += r.size();
  }
  const int stride = n;
  printf("n %d L %.3f cells %dx%dx%d mean row %.2f cap %d\n", n, L, nx, ny, ny, double(tot) / n, cap);
  std::vector<unsigned> nbrA(size_t(cap) * stride, 0);
  std::vector<int> len(n);
  for (int t = 0; t < n; ++t) {
    len[t] = rows[t].size();
    for (int k = 0; k < len[t]; ++k) nbrA[size_t(k) * stride + t] = rows[t][k];
  }
  float* dOutA;
  float* dOutB;
  float4* dRec;
  unsigned* dNbrA;
  int* dLen;
  CK(cudaMalloc(&dRec, rec.size() * sizeof(float4)));
  CK(cudaMalloc(&dNbrA, nbrA.size() * 4));
  CK(cudaMalloc(&dLen, n * 4));
  CK(cudaMalloc(&dOutA, size_t(n) * 12));
  CK(cudaMalloc(&dOutB, size_t(n) * 12));
  CK(cudaMemcpy(dRec, rec.data(), rec.size() * sizeof(float4), cudaMemcpyHostToDevice));
  CK(cudaMemcpy(dNbrA, nbrA.data(), nbrA.size() * 4, cudaMemcpyHostToDevice));
  CK(cudaMemcpy(dLen, len.data(), n * 4, cudaMemcpyHostToDevice));
  cudaEvent_t e0, e1;
  cudaEventCreate(&e0);
  cudaEventCreate(&e1);
  auto timeit = [&](auto&& launch) {
    for (int i = 0; i < 20; ++i) launch();
    std::vector<float> ms;
    for (int r = 0; r < 7; ++r) {
      cudaEventRecord(e0);
      for (int i = 0; i < 50; ++i) launch();
      cudaEventRecord(e1);
      cudaEventSynchronize(e1);
      float v;
      cudaEventElapsedTime(&v, e0, e1);
      ms.push_back(v / 50 * 1000);
    }
    CK(cudaGetLastError());
    std::sort(ms.begin(), ms.end());
    return ms[3];
  };
  const float invL = 1.0f / L;
  float tA = timeit([&] { kA<<<(n + 127) / 128, 128>>>(dRec, dNbrA, dLen, n, stride, L, invL, dOutA); });
  std::vector<float> oA(size_t(n) * 3), oB(size_t(n) * 3);
  CK(cudaMemcpy(oA.data(), dOutA, oA.size() * 4, cudaMemcpyDeviceToHost));
  printf("A global gathers: %.1f us\n", tA);

  auto staged = [&](auto tpb_c, auto e_c) {
    constexpr int TPB = decltype(tpb_c)::value;
    using E = typename decltype(e_c)::type;
    const int nb = (n + TPB - 1) / TPB;
    std::vector<int> soff(nb + 1, 0);
    std::vector<unsigned> src;
    std::vector<unsigned char> code;
    std::vector<E> nbrB(size_t(cap) * stride, 0);
    int maxu = 0;
    std::vector<int> mark(n, -1);
    for (int b = 0; b < nb; ++b) {
      std::vector<std::pair<unsigned, unsigned char>> keys;
      std::map<std::pair<unsigned, unsigned char>, int> img;
      for (int t = b * TPB; t < std::min(n, (b + 1) * TPB); ++t)
        for (int k = 0; k < len[t]; ++k) keys.push_back({rows[t][k] & 0x7fffffffu, codes[t][k]});
      std::sort(keys.begin(), keys.end());
      keys.erase(std::unique(keys.begin(), keys.end()), keys.end());
      for (size_t i = 0; i < keys.size(); ++i) {
        if (keys[i].second)
          img[keys[i]] = i;
        else
          mark[keys[i].first] = i;
        src.push_back(keys[i].first);
        code.push_back(keys[i].second);
      }
      soff[b + 1] = soff[b] + keys.size();
      maxu = std::max<int>(maxu, keys.size());
      for (int t = b * TPB; t < std::min(n, (b + 1) * TPB); ++t)
        for (int k = 0; k < len[t]; ++k) {
          unsigned u = rows[t][k] & 0x7fffffffu;
          nbrB[size_t(k) * stride + t] = E(codes[t][k] ? img[{u, codes[t][k]}] : mark[u]);
        }
      for (auto& kk : keys)
        if (!kk.second) mark[kk.first] = -1;
    }
    int* dSoff;
    unsigned* dSrc;
    unsigned char* dCode;
    E* dNbrB;
    CK(cudaMalloc(&dSoff, soff.size() * 4));
    CK(cudaMalloc(&dSrc, src.size() * 4));
    CK(cudaMalloc(&dCode, code.size()));
    CK(cudaMalloc(&dNbrB, nbrB.size() * sizeof(E)));
    CK(cudaMemcpy(dSoff, soff.data(), soff.size() * 4, cudaMemcpyHostToDevice));
    CK(cudaMemcpy(dSrc, src.data(), src.size() * 4, cudaMemcpyHostToDevice));
    CK(cudaMemcpy(dCode, code.data(), code.size(), cudaMemcpyHostToDevice));
    CK(cudaMemcpy(dNbrB, nbrB.data(), nbrB.size() * sizeof(E), cudaMemcpyHostToDevice));
    const size_t smem = size_t(maxu) * 16;
    CK(cudaFuncSetAttribute(kB<E, TPB>, cudaFuncAttributeMaxDynamicSharedMemorySize, int(smem)));
    int occ = 0;
    cudaOccupancyMaxActiveBlocksPerMultiprocessor(&occ, kB<E, TPB>, TPB, smem);
    // the largest difference from A's forces, relative to the largest force
    auto diff = [&] {
      CK(cudaMemcpy(oB.data(), dOutB, oB.size() * 4, cudaMemcpyDeviceToHost));
      double md = 0, mf = 0;
      for (size_t i = 0; i < oA.size(); ++i) {
        md = std::max(md, double(std::fabs(oA[i] - oB[i])));
        mf = std::max(mf, double(std::fabs(oA[i])));
      }
      CK(cudaMemset(dOutB, 0, size_t(n) * 12));
      return md / mf;
    };
    CK(cudaMemset(dOutB, 0, size_t(n) * 12));
    const float tB =
        timeit([&] { kB<E, TPB><<<nb, TPB, smem>>>(dRec, dNbrB, dLen, dSoff, dSrc, dCode, n, stride, L, dOutB); });
    const double dB = diff();
    const size_t smemS = size_t(maxu) * 12;
    CK(cudaFuncSetAttribute(kS<E, TPB>, cudaFuncAttributeMaxDynamicSharedMemorySize, int(smemS)));
    const float tS = timeit(
        [&] { kS<E, TPB><<<nb, TPB, smemS>>>(dRec, dNbrB, dLen, dSoff, dSrc, dCode, n, stride, L, dOutB, maxu); });
    const double dS = diff();
    printf(
        "%3d targets a block, %zu-byte entries: sources a block %.0f on average, %d at most (%.1f KB), %d blocks "
        "per SM; B %.1f us (A/B %.2f, diff %.1e), S %.1f us (A/S %.2f, diff %.1e)\n",
        TPB, sizeof(E), double(soff[nb]) / nb, maxu, smem / 1024.0, occ, tB, tA / tB, dB, tS, tA / tS, dS);
    cudaFree(dSoff);
    cudaFree(dSrc);
    cudaFree(dCode);
    cudaFree(dNbrB);
  };
  staged(std::integral_constant<int, 128>{}, Tag<unsigned short>{});
  staged(std::integral_constant<int, 256>{}, Tag<unsigned short>{});
  staged(std::integral_constant<int, 512>{}, Tag<unsigned short>{});
  return 0;
}
