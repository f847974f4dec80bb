// cellint_probes: SPH-style density probes on a line through a particle cloud, on the CPU or a GPU, by one two-set
// interact(probes, cloud, f, out) call; checked against a direct sum in double.
//
// Compiled twice: by the C++ compiler as cellint_probes (Host and Emulated backends) and, through probes_main.cu, by
// nvcc as cellint_probes_cuda (Cuda backend added).
//
//   cellint_probes                                       # 200,000 particles in 3D, 1,000 probes
//   cellint_probes --dim 2 --periodic --kernel cubic --probe-h 0.02,0.05
//   cellint_probes --out profile.csv --cloud cloud.csv && python3 plot.py probes.png profile.csv cloud.csv
//   cellint_probes_cuda --n 10000000 --probes 100000 --precision mixed    # nvcc build, on a GPU

#include <cstdio>
#include <cstdlib>
#include <exception>
#include <string>

#include "../common/args.hpp"
#include "../common/backend_select.hpp"
#include "probes.hpp"

namespace {

using probes::Options;

void usage(const char* prog) {
  std::printf(
      "usage: %s [options]\n"
      "Density probes on a line through a particle cloud: rho(x_p) = sum_j m_j W(|x_p - x_j|, h_p) at M probes\n"
      "along x through the centre of a Gaussian blob, by one two-set interact(probes, cloud, f, out) call, checked\n"
      "against a direct sum in double.\n"
      "  --n N               particles (default 200,000) in the unit box: half in a Gaussian blob (sigma 0.1 per\n"
      "                      axis, centre (0.4, 0.55, 0.5)), half uniform; masses uniform in [0.5, 1.5] / N\n"
      "  --probes M          probes (default 1,000), evenly spaced on the line y = 0.55 (, z = 0.5) across the box\n"
      "  --dim D             3 (default) | 2\n"
      "  --h X               the cutoff and the kernel's support radius (default 0.05)\n"
      "  --probe-h L,H       the probes' own support radii, from L (first probe) to H (last probe) linearly, each\n"
      "                      in (0, h] (default: h for every probe)\n"
      "  --kernel K          wendland (default: Wendland C2) | cubic (M4 cubic spline)\n"
      "  --periodic          a periodic box (default: open; blob particles outside it are drawn again)\n"
      "  --seed S            the cloud's random numbers (default 1)\n"
      "  --precision P       float (default) | double | mixed (float positions and terms, double sums: for\n"
      "                      probes with 10^5 particles or more within h, where float sums drift)\n"
      "  --backend B         host | cuda | emulated | auto (default: cuda when present, else host)\n"
      "  --strategy S        auto (default) or a strategy that runs two sets (cell-loop, brute-force on the CPU;\n"
      "                      par-part-noloop, par-part-loop, par-cell, par-cell-sm, x-pencil, all-pairs on GPUs)\n"
      "  --check-limit X     the direct sum covers every probe while probes x particles near the line <= X\n"
      "                      (default 2e8), else 200 probes evenly spaced\n"
      "  --out FILE          the profile as CSV (s, x, y[, z], h, rho, rho_direct), for plot.py\n"
      "  --cloud FILE        a sample of the particles as CSV (x, y[, z]), for plot.py\n"
      "  --cloud-sample K    particles in that sample (default 20,000)\n"
      "Exits 1 unless the sums agree with the direct sum (relative 1e-5 of sum |m_j W| in float, 1e-10 in double),\n"
      "the statistics' pairs within the cutoff equal the direct count, and the profile peaks near the blob.\n",
      prog);
}

Options parse(int argc, char** argv) {
  cellint::examples::Args args("cellint_probes", argc, argv);
  Options o;
  auto count = [&](const char* what, double lo, double hi) {
    const double v = args.real();
    if (!(v >= lo) || !(v <= hi) || v != static_cast<double>(static_cast<long>(v)))
      args.fail(std::string(what) + " must be a whole number in " + std::to_string(static_cast<long>(lo)) + " .. " +
                std::to_string(static_cast<long>(hi)));
    return static_cast<long>(v);
  };
  while (args.next()) {
    const std::string& a = args.option();
    if (a == "-h" || a == "--help") {
      usage(argv[0]);
      std::exit(0);
    } else if (a == "--n") {
      o.n = count("--n", 1, 2.0e9);
    } else if (a == "--probes") {
      o.probes = count("--probes", 1, 2.0e9);
    } else if (a == "--dim") {
      o.dim = args.integer();
      if (o.dim != 2 && o.dim != 3) args.fail("--dim must be 2 or 3");
    } else if (a == "--h") {
      o.h = args.real();
      if (!(o.h > 0)) args.fail("--h must be positive");
    } else if (a == "--probe-h") {
      args.pair(o.probe_h[0], o.probe_h[1]);
      if (!(o.probe_h[0] > 0) || !(o.probe_h[1] > 0)) args.fail("--probe-h: both radii must be positive");
    } else if (a == "--kernel") {
      o.kernel = args.value();
      if (o.kernel != "wendland" && o.kernel != "cubic") args.fail("--kernel must be wendland or cubic");
    } else if (a == "--periodic") {
      o.periodic = true;
    } else if (a == "--seed") {
      o.seed = static_cast<std::uint64_t>(args.integer());
    } else if (a == "--precision") {
      o.precision = args.value();
      if (o.precision != "float" && o.precision != "double" && o.precision != "mixed")
        args.fail("--precision must be float, double or mixed");
    } else if (a == "--backend") {
      o.backend = args.value();
    } else if (a == "--strategy") {
      o.strategy = args.value();
      if (!cellint::strategy_from_name(o.strategy))
        args.fail("unknown strategy '" + o.strategy + "' (" + cellint::strategy_names() + ")");
    } else if (a == "--check-limit") {
      o.check_limit = args.real();
      if (!(o.check_limit >= 0)) args.fail("--check-limit must be >= 0");
    } else if (a == "--out") {
      o.out = args.value();
    } else if (a == "--cloud") {
      o.cloud = args.value();
    } else if (a == "--cloud-sample") {
      o.cloud_sample = count("--cloud-sample", 1, 2.0e9);
    } else {
      args.fail("unknown option '" + a + "' (see --help)");
    }
  }
  if (o.probe_h[0] == 0) o.probe_h[0] = o.probe_h[1] = o.h;
  if (o.probe_h[0] > o.h || o.probe_h[1] > o.h) args.fail("--probe-h: the radii must not exceed --h (the cutoff)");
  if (o.h > probes::box_length / (o.periodic ? 3 : 1))
    args.fail(std::string("--h must be at most ") + (o.periodic ? "1/3 (three cells across the periodic box)" : "1"));
  return o;
}

template <class Backend, class Real, class Acc, int Dim>
int run(const Options& o) {
  using Grid = cellint::CellGrid<Backend, Real, Dim>;
  using probes::blob_centre;
  using probes::box_length;
  const probes::KernelKind kernel = probes::kernel_kind(o.kernel);
  const std::string device = Backend::is_gpu_like ? Backend::properties().name : "host";
  const long n = o.n, np = o.probes;
  std::printf("cellint probes: %dD, %ld particles, %ld probes, %s, %s precision, %s kernel, h %g, %s box\n", Dim, n, np,
              device.c_str(), o.precision.c_str(), o.kernel.c_str(), o.h, o.periodic ? "periodic" : "open");

  // The particles and the probes in the user's order, rounded to Real once: the grids and the direct sum read the
  // same values.
  const probes::Cloud cloud = probes::make_cloud(n, Dim, o.periodic, o.seed);
  std::array<std::vector<Real>, Dim> x, p;
  std::array<std::vector<double>, Dim> xd, pd;
  for (int d = 0; d < Dim; ++d) {
    x[d].assign(cloud.x[d].begin(), cloud.x[d].end());
    xd[d].assign(x[d].begin(), x[d].end());
    p[d].resize(static_cast<std::size_t>(np));
  }
  const std::vector<Real> m(cloud.m.begin(), cloud.m.end());
  std::vector<Real> inv_h(static_cast<std::size_t>(np));
  for (long i = 0; i < np; ++i) {
    const std::size_t k = static_cast<std::size_t>(i);
    p[0][k] = static_cast<Real>(box_length * (static_cast<double>(i) + 0.5) / static_cast<double>(np));
    for (int d = 1; d < Dim; ++d) p[d][k] = static_cast<Real>(blob_centre[d]);
    const double f = np > 1 ? static_cast<double>(i) / static_cast<double>(np - 1) : 0.0;
    inv_h[k] = static_cast<Real>(1 / (o.probe_h[0] + (o.probe_h[1] - o.probe_h[0]) * f));
  }
  for (int d = 0; d < Dim; ++d) pd[d].assign(p[d].begin(), p[d].end());

  // Two grids over one box with one cutoff: the cloud (sources) carries the masses, the probes (targets) 1 / h_p.
  const auto box = cellint::Box<Real, Dim>::cube(0, static_cast<Real>(box_length), o.periodic);
  const Real rc = static_cast<Real>(o.h);
  Grid cloud_grid(box, rc), probe_grid(box, rc);
  const auto t0 = std::chrono::steady_clock::now();
  cloud_grid.build(x);
  probe_grid.build(p);
  probes::ProbeDensity<Real, Dim, Acc> f{kernel, static_cast<Real>(probes::kernel_sigma(kernel, Dim)),
                                         probe_grid.template attach<Real>(inv_h), cloud_grid.template attach<Real>(m)};
  const double build_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  std::printf("Grids: %d cells per axis, cloud M_C %d, probes M_C %d; built with attributes in %.3g ms\n",
              static_cast<int>(cloud_grid.geometry().cells[0]), static_cast<int>(cloud_grid.max_per_cell()),
              static_cast<int>(probe_grid.max_per_cell()), build_ms);

  // The two-set call, with statistics (when Auto tunes in it, the statistics time the call alone: the library makes it
  // once more from Auto's decision).
  cellint::Buffer<Backend, Acc> out(static_cast<std::size_t>(np));
  cellint::Tuning t;
  t.statistics = true;
  const cellint::StrategyKind strategy = *cellint::strategy_from_name(o.strategy);
  const cellint::Report rep = cellint::interact_with(strategy, probe_grid, cloud_grid, f, out.data(), t);
  if (rep.tuning_ms > 0)
    std::printf("First call: Auto chose %s in %.3g ms of tuning\n", cellint::to_string(rep.strategy), rep.tuning_ms);
  const cellint::CallStats& s = rep.stats;
  std::printf("interact(probes, cloud): strategy %s, %llu targets x %llu sources\n", cellint::to_string(rep.strategy),
              static_cast<unsigned long long>(s.targets), static_cast<unsigned long long>(s.sources));
  std::printf("  pairs examined %llu, within the cutoff %llu (hit rate %.3g %%)\n",
              static_cast<unsigned long long>(s.pairs_examined), static_cast<unsigned long long>(s.pairs_within),
              100 * s.hit_rate());
  std::printf("  %.4g ms, %.4g GB/s over the minimum bytes (%.4g MB), %.4g pairs within per second\n", s.ms,
              s.gbytes_per_s(), static_cast<double>(s.min_bytes) / 1e6,
              s.ms > 0 ? static_cast<double>(s.pairs_within) / (s.ms * 1e-3) : 0.0);
  const std::vector<Acc> rho = probe_grid.to_user_order(out);

  // The direct sum.
  std::vector<double> ihd(inv_h.begin(), inv_h.end()), md(m.begin(), m.end());
  const probes::Direct ref =
      probes::direct_sum<Dim>(pd, ihd, xd, md, static_cast<double>(rc), o.periodic, kernel, o.check_limit, 200);
  std::printf("Direct sum in double: %ld of %ld probes over the %ld particles within the cutoff of the line, %.3g s\n",
              static_cast<long>(ref.probes.size()), np, ref.tube, ref.seconds);

  bool ok = true;
  auto verdict = [&](bool pass) {
    ok = ok && pass;
    return pass ? "PASS" : "FAIL";
  };
  // (1) the sums, to a relative tolerance of sum |m W|: 1e-5 with float terms, 1e-10 in double; float sums of n > 1000
  // terms get sqrt(n / 1000) times more (their rounding grows about as sqrt(n))
  const double base = sizeof(Real) == 4 ? 1e-5 : 1e-10;
  const bool float_sums = sizeof(Acc) == 4;
  double worst = 0, worst_rel = 0;
  long bad = 0, worst_probe = -1;
  for (std::size_t k = 0; k < ref.probes.size(); ++k) {
    const long i = ref.probes[k];
    const double terms = static_cast<double>(ref.terms[k]);
    const double tol = base * (float_sums ? std::sqrt(std::max(1.0, terms / 1000)) : 1.0);
    const double diff = std::abs(static_cast<double>(rho[static_cast<std::size_t>(i)]) - ref.rho[k]);
    if (!(diff <= tol * ref.scale[k])) ++bad;
    const double rel = ref.scale[k] > 0 ? diff / (tol * ref.scale[k]) : diff > 0 ? HUGE_VAL : 0;
    worst_rel = std::max(worst_rel, ref.scale[k] > 0 ? diff / ref.scale[k] : rel);
    if (rel > worst || worst_probe < 0) {
      worst = rel;
      worst_probe = i;
    }
  }
  std::printf(
      "Check sums: largest |rho - direct| / sum|m W| %.3g, tolerance %g%s; largest error / tolerance %.3g "
      "(probe %ld); %ld probes off: %s\n",
      worst_rel, base, float_sums ? " x sqrt(max(1, terms / 1000))" : "", worst, worst_probe, bad, verdict(bad == 0));
  // (2) the pairs within the cutoff
  if (ref.all())
    std::printf(
        "Check pairs within the cutoff: %llu, direct %llu .. %llu (pairs within 1e-6 of the cutoff either "
        "way): %s\n",
        static_cast<unsigned long long>(s.pairs_within), static_cast<unsigned long long>(ref.pairs_lo),
        static_cast<unsigned long long>(ref.pairs_hi),
        verdict(s.pairs_within >= ref.pairs_lo && s.pairs_within <= ref.pairs_hi));
  else
    std::printf("Check pairs within the cutoff: SKIP (the direct sum covered %ld of %ld probes; raise --check-limit)\n",
                static_cast<long>(ref.probes.size()), np);
  // (3) the peak: the profile's median, where half of the area under rho - min(rho) lies on either side (robust to the
  // noise of a few particles), lies near the blob's centre (nearest image on a periodic axis)
  auto at = [&](long i) { return static_cast<double>(rho[static_cast<std::size_t>(i)]); };
  long peak = 0, low = 0;
  for (long i = 1; i < np; ++i) {
    if (at(i) > at(peak)) peak = i;
    if (at(i) < at(low)) low = i;
  }
  double area = 0;
  for (long i = 0; i < np; ++i) area += at(i) - at(low);
  long median = 0;
  for (double below = 0; median < np; ++median) {
    below += at(median) - at(low);
    if (below >= area / 2) break;
  }
  median = std::min(median, np - 1);
  double off = pd[0][static_cast<std::size_t>(median)] - blob_centre[0];
  if (o.periodic) off -= box_length * std::nearbyint(off / box_length);
  const double peak_tol = probes::blob_sigma / 4;
  std::printf(
      "Check peak: largest rho %.5g at x = %.4g; the profile's median at x = %.4g, %.3g from the blob centre "
      "%.4g (<= %.3g): %s\n",
      at(peak), pd[0][static_cast<std::size_t>(peak)], pd[0][static_cast<std::size_t>(median)], std::abs(off),
      blob_centre[0], peak_tol, verdict(std::abs(off) <= peak_tol));

  if (!o.out.empty()) {
    FILE* file = std::fopen(o.out.c_str(), "w");
    if (!file) throw std::runtime_error("cannot write " + o.out);
    std::vector<double> direct(static_cast<std::size_t>(np), NAN);
    for (std::size_t k = 0; k < ref.probes.size(); ++k) direct[static_cast<std::size_t>(ref.probes[k])] = ref.rho[k];
    std::fprintf(file, Dim == 3 ? "s,x,y,z,h,rho,rho_direct\n" : "s,x,y,h,rho,rho_direct\n");
    for (long i = 0; i < np; ++i) {
      const std::size_t k = static_cast<std::size_t>(i);
      std::fprintf(file, "%.7g", pd[0][k]);  // s: the distance along the line from x = 0
      for (int d = 0; d < Dim; ++d) std::fprintf(file, ",%.7g", pd[d][k]);
      std::fprintf(file, ",%.7g,%.9g,%.9g\n", 1 / ihd[k], static_cast<double>(rho[k]), direct[k]);
    }
    std::fclose(file);
  }
  if (!o.cloud.empty()) {
    FILE* file = std::fopen(o.cloud.c_str(), "w");
    if (!file) throw std::runtime_error("cannot write " + o.cloud);
    std::fprintf(file, Dim == 3 ? "x,y,z\n" : "x,y\n");
    const long every = std::max(1L, n / o.cloud_sample);
    for (long i = 0; i < n; i += every) {
      const std::size_t k = static_cast<std::size_t>(i);
      for (int d = 0; d < Dim; ++d) std::fprintf(file, d ? ",%.6g" : "%.6g", xd[d][k]);
      std::fprintf(file, "\n");
    }
    std::fclose(file);
  }
  return ok ? 0 : 1;
}

template <class Backend>
int with_precision(const Options& o) {
  if (o.precision == "double")
    return o.dim == 2 ? run<Backend, double, double, 2>(o) : run<Backend, double, double, 3>(o);
  if (o.precision == "mixed") return o.dim == 2 ? run<Backend, float, double, 2>(o) : run<Backend, float, double, 3>(o);
  return o.dim == 2 ? run<Backend, float, float, 2>(o) : run<Backend, float, float, 3>(o);
}

}  // namespace

int main(int argc, char** argv) {
  const Options o = parse(argc, argv);
  try {
    return cellint::examples::with_backend("cellint_probes", o.backend,
                                           [&](auto backend) { return with_precision<decltype(backend)>(o); });
  } catch (const std::exception& e) {
    std::fprintf(stderr, "cellint_probes: %s\n", e.what());
    return 1;
  }
}
