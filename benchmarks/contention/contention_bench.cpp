// contention_bench: the per-step work of a small particle simulation on the Host backend (the
// shape of the SPH demo's time step), timed step by step. Run it through run.sh, which times it
// alone and beside a process that keeps a core busy, and prints the ratio.
//
// One step: a drift loop over the particles (positions += velocity * dt, reflected at the walls),
// CellGrid::rebuild() (re-binning, positions and attributes permuted), one interact() pass of a
// symmetric pair functor (a kernel sum and a force-like vector), and a kick loop. The particles
// fill a 2-D open box on a jittered lattice (spacing 1, cutoff 2.6: about 21 neighbours each).
//
//   contention_bench [--particles N] [--steps N] [--strategy cell-loop|cell-loop-half] [--warmup N]

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "cellint/cellint.hpp"

namespace {

using cellint::Index;
using V2 = cellint::Vec<double, 2>;

/// Sum of a smooth kernel and of a force-like vector over the neighbours (symmetric form for the
/// half-shell loop).
struct KernelSum {
  struct Accum {
    double w;
    V2 f;
  };
  double inv_rc2;
  static constexpr int flops = 12;
  CELLINT_HD void operator()(Accum& a, const cellint::NoPayload&, const cellint::NoPayload&, const V2& dr,
                             double r2) const {
    const double q = 1.0 - r2 * inv_rc2;
    const double w = q * q * q;
    a.w += w;
    for (int d = 0; d < 2; ++d) a.f[d] += q * q * dr[d];
  }
  CELLINT_HD void symmetric(Accum& ai, Accum& aj, const cellint::NoPayload&, const cellint::NoPayload&,
                            const V2& dr, double r2) const {
    const double q = 1.0 - r2 * inv_rc2;
    const double w = q * q * q;
    ai.w += w;
    aj.w += w;
    for (int d = 0; d < 2; ++d) {
      ai.f[d] += q * q * dr[d];
      aj.f[d] -= q * q * dr[d];
    }
  }
};

/// x += v dt, reflected at the walls [lo, hi].
struct Drift {
  double* x[2];
  V2* v;
  double dt, lo, hi;
  template <class A>
  void operator()(A&, Index i) const {
    for (int d = 0; d < 2; ++d) {
      double p = x[d][i] + v[i][d] * dt;
      if (p < lo) p = lo + (lo - p), v[i][d] = -v[i][d];
      if (p > hi) p = hi - (p - hi), v[i][d] = -v[i][d];
      x[d][i] = std::min(hi, std::max(lo, p));
    }
  }
};

/// v += (f / w) dt, a bounded velocity change.
struct Kick {
  V2* v;
  const KernelSum::Accum* a;
  double dt;
  template <class A>
  void operator()(A&, Index i) const {
    for (int d = 0; d < 2; ++d) v[i][d] += a[i].f[d] / (1.0 + a[i].w) * dt;
  }
};

double now_s() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

}  // namespace

int main(int argc, char** argv) {
  long particles = 4096, steps = 2000, warmup = 50;
  std::string strategy = "cell-loop-half";
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    auto next = [&]() -> const char* {
      if (i + 1 >= argc) {
        std::fprintf(stderr, "contention_bench: %s needs a value\n", a.c_str());
        std::exit(2);
      }
      return argv[++i];
    };
    if (a == "--particles") particles = std::atol(next());
    else if (a == "--steps") steps = std::atol(next());
    else if (a == "--warmup") warmup = std::atol(next());
    else if (a == "--strategy") strategy = next();
    else if (a == "--help" || a == "-h") {
      std::printf("contention_bench [--particles N (4096)] [--steps N (2000)] [--warmup N (50)] "
                  "[--strategy cell-loop|cell-loop-half]\n");
      return 0;
    } else {
      std::fprintf(stderr, "contention_bench: unknown option %s (--help)\n", a.c_str());
      return 2;
    }
  }
  cellint::StrategyKind kind;
  if (strategy == "cell-loop") kind = cellint::StrategyKind::CellLoop;
  else if (strategy == "cell-loop-half") kind = cellint::StrategyKind::CellLoopHalf;
  else {
    std::fprintf(stderr, "contention_bench: --strategy cell-loop or cell-loop-half\n");
    return 2;
  }

  // jittered square lattice of spacing 1, velocities of order 1 (about 0.01 cell per step)
  const long side = std::max(2L, static_cast<long>(std::ceil(std::sqrt(static_cast<double>(particles)))));
  const double len = static_cast<double>(side), rc = 2.6, dt = 0.004;
  std::array<std::vector<double>, 2> x;
  std::vector<V2> v(static_cast<std::size_t>(particles));
  std::uint64_t seed = 12345;
  auto uniform = [&] {  // [-1, 1)
    seed = seed * 6364136223846793005ull + 1442695040888963407ull;
    return static_cast<double>(seed >> 11) * (2.0 / 9007199254740992.0) - 1.0;
  };
  for (long i = 0; i < particles; ++i) {
    x[0].push_back(0.5 + static_cast<double>(i % side) + 0.2 * uniform());
    x[1].push_back(0.5 + static_cast<double>(i / side) + 0.2 * uniform());
    v[static_cast<std::size_t>(i)] = V2{uniform(), uniform()};
  }
  const double lo = 0.0, hi = len;
  cellint::CellGrid<cellint::Host, double, 2> grid(cellint::Box<double, 2>::cube(lo, hi, /*periodic=*/false), rc);
  grid.build(x);
  const auto vel = grid.attach(v.data());
  // more attributes permuted at every rebuild, as in the SPH demo (mass, density, flags, ...)
  const std::vector<double> ones(static_cast<std::size_t>(particles), 1.0);
  const std::vector<int> zeros(static_cast<std::size_t>(particles), 0);
  for (int k = 0; k < 4; ++k) grid.attach(ones.data());
  grid.attach(zeros.data());

  std::vector<KernelSum::Accum> acc(static_cast<std::size_t>(particles));
  const KernelSum f{1.0 / (rc * rc)};
  double t_loops = 0, t_rebuild = 0, t_pairs = 0;
  const double t_begin = now_s();
  for (long s = 0; s < warmup + steps; ++s) {
    if (s == warmup) t_loops = t_rebuild = t_pairs = 0;
    const double t0 = now_s();
    Drift drift{{grid.positions(0), grid.positions(1)}, grid.attribute(vel), dt, lo, hi};
    cellint::detail::parallel_for<cellint::Host>(grid.size(), drift);
    const double t1 = now_s();
    grid.rebuild();
    const double t2 = now_s();
    cellint::interact_with(kind, grid, f, acc.data());
    const double t3 = now_s();
    cellint::detail::parallel_for<cellint::Host>(grid.size(), Kick{grid.attribute(vel), acc.data(), dt});
    const double t4 = now_s();
    t_loops += (t1 - t0) + (t4 - t3);
    t_rebuild += t2 - t1;
    t_pairs += t3 - t2;
  }
  const double total = now_s() - t_begin;
  double check = 0;
  for (const auto& a : acc) check += a.w;
  const double per = 1e3 / static_cast<double>(std::max(1L, steps));
  std::printf("contention_bench: %ld particles, %d threads, %s, %ld steps: %.4f ms/step "
              "(rebuild %.4f, pairs %.4f, loops %.4f); total %.3f s; checksum %.6e\n",
              particles, cellint::Host::threads(), strategy.c_str(), steps, (t_loops + t_rebuild + t_pairs) * per,
              t_rebuild * per, t_pairs * per, t_loops * per, total, check / static_cast<double>(particles));
  return 0;
}
