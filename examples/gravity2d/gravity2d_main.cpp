// cellint_gravity2d: 2D gravitational N-body with Plummer softening, every pair computed exactly, on the CPU or a GPU.
//
// Compiled twice: by the C++ compiler as cellint_gravity2d (Host and Emulated backends) and, through
// gravity2d_main.cu, by nvcc as cellint_gravity2d_cuda (Cuda backend added).
//
//   cellint_gravity2d --n 2000 --steps 200 --check-energy 1e-4      # a rotating disc on the CPU
//   cellint_gravity2d --init two-body --steps 8000 --check-period 1e-5
//   cellint_gravity2d_cuda --n 100000 --steps 100 --kernel-reps 20 --json run.json

#include <cstdio>
#include <cstdlib>
#include <exception>
#include <string>

#include "../common/args.hpp"
#include "../common/backend_select.hpp"
#include "gravity2d.hpp"

namespace {

using gravity2d::Options;

void usage(const char* prog) {
  std::printf(
      "usage: %s [options]\n"
      "2D gravitational N-body (Plummer softening, every pair exactly, leapfrog), in units with G = 1.\n"
      "  --n N               particles (default 100,000): a uniform disc of radius 0.5 and mass 1 in the unit\n"
      "                      square, on circular orbits\n"
      "  --init I            disc (default) | two-body (two masses of 0.5 on a circular orbit of radius 0.25;\n"
      "                      --n is ignored)\n"
      "  --steps N           time steps (default 100)\n"
      "  --dt X              time step (default 1e-4)\n"
      "  --softening X       Plummer softening length eps (default 0.01; 0: none)\n"
      "  --seed S            initial positions (default 1)\n"
      "  --thermo N          energy line every N steps (default 0: the last step only)\n"
      "  --precision P       float (default) | double | mixed (float positions, double sums)\n"
      "  --math M            fast (default: the GPU's reciprocal square root in float) | exact\n"
      "  --backend B         host | cuda | emulated | auto (default: cuda when present, else host)\n"
      "  --strategy S        default (all-pairs on GPUs, brute-force on the CPU) or a strategy name\n"
      "  --threads N         all-pairs: threads per block = sources per tile (default 256)\n"
      "  --targets-per-thread K  all-pairs: targets each thread holds, 1 | 2 | 4 (default 4)\n"
      "  --source-splits S   all-pairs: blocks per group of targets, each over its own run of sources (default:\n"
      "                      the fewest that make the launch whole waves of the GPU; 1 = none)\n"
      "  --kernel-reps N     after the run, time N force evaluations alone (GPU events) and report the rate\n"
      "  --check-energy X    fail unless |E - E0| / |E0| <= X at every energy line\n"
      "  --check-momentum X  fail unless |P - P0| / sum m|v| <= X at every energy line\n"
      "  --check-period X    two-body: fail unless the measured orbital period is within X (relative) of\n"
      "                      2 pi sqrt(a^3 / (G M))\n"
      "  --json FILE         summary (program, device, precision, particles, steps, seconds, rates)\n"
      "  --snapshot FILE     final positions as CSV (x,y), for plot.py\n",
      prog);
}

Options parse(int argc, char** argv) {
  cellint::examples::Args args("cellint_gravity2d", argc, argv);
  Options o;
  while (args.next()) {
    const std::string& a = args.option();
    if (a == "-h" || a == "--help") {
      usage(argv[0]);
      std::exit(0);
    } else if (a == "--n") {
      const double n = args.real();
      if (!(n >= 1) || n != static_cast<double>(static_cast<long>(n)) || n > 2.0e9)
        args.fail("--n must be a whole number of particles in 1 .. 2e9");
      o.n = static_cast<long>(n);
    } else if (a == "--init") {
      o.init = args.value();
      if (o.init != "disc" && o.init != "two-body") args.fail("--init must be disc or two-body, got '" + o.init + "'");
    } else if (a == "--steps") {
      o.steps = args.integer();
      if (o.steps < 0) args.fail("--steps must be >= 0");
    } else if (a == "--dt") {
      o.dt = args.real();
      if (!(o.dt > 0)) args.fail("--dt must be positive");
    } else if (a == "--softening") {
      o.softening = args.real();
      if (!(o.softening >= 0)) args.fail("--softening must be >= 0");
    } else if (a == "--seed") {
      o.seed = static_cast<std::uint64_t>(args.integer());
    } else if (a == "--thermo") {
      o.thermo = args.integer();
      if (o.thermo < 0) args.fail("--thermo must be >= 0");
    } else if (a == "--precision") {
      o.precision = args.value();
      if (o.precision != "float" && o.precision != "double" && o.precision != "mixed")
        args.fail("--precision must be float, double or mixed");
    } else if (a == "--math") {
      o.math = args.value();
      if (o.math != "fast" && o.math != "exact") args.fail("--math must be fast or exact");
    } else if (a == "--backend") {
      o.backend = args.value();
    } else if (a == "--strategy") {
      o.strategy = args.value();
    } else if (a == "--threads") {
      const int t = args.integer();
      if (t <= 0) args.fail("--threads must be positive");
      o.threads = static_cast<unsigned>(t);
    } else if (a == "--targets-per-thread") {
      o.per_thread = args.integer();
      if (o.per_thread != 1 && o.per_thread != 2 && o.per_thread != 4)
        args.fail("--targets-per-thread must be 1, 2 or 4");
    } else if (a == "--source-splits") {
      o.splits = args.integer();
      if (o.splits < 0) args.fail("--source-splits must be >= 0");
    } else if (a == "--kernel-reps") {
      o.kernel_reps = args.integer();
      if (o.kernel_reps < 0) args.fail("--kernel-reps must be >= 0");
    } else if (a == "--check-energy") {
      o.check_energy = args.real();
    } else if (a == "--check-momentum") {
      o.check_momentum = args.real();
    } else if (a == "--check-period") {
      o.check_period = args.real();
    } else if (a == "--json") {
      o.json = args.value();
    } else if (a == "--snapshot") {
      o.snapshot = args.value();
    } else {
      args.fail("unknown option '" + a + "' (see --help)");
    }
  }
  if (o.check_period >= 0 && o.init != "two-body") args.fail("--check-period needs --init two-body");
  return o;
}

template <class Backend, class Real, class Acc, class Math>
int simulate(const Options& o) {
  const gravity2d::State s = o.init == "two-body" ? gravity2d::two_body(o.G) : gravity2d::disc(o.n, o.seed);
  gravity2d::Simulation<Backend, Real, Acc, Math> sim(o, s);
  if (o.init == "disc") sim.circular_velocities();
  const std::string device = Backend::is_gpu_like ? Backend::properties().name : "host";
  const long n = static_cast<long>(sim.size());
  std::printf("cellint gravity2d: %ld particles, %s, %s precision, %s math, eps %g, dt %g, %d steps\n", n,
              device.c_str(), o.precision.c_str(), o.math.c_str(), o.softening, o.dt, o.steps);
  sim.print_header();
  const gravity2d::Result r = sim.run();
  const double steps_per_s = r.loop_s > 0 ? o.steps / r.loop_s : 0;
  const double pairs = static_cast<double>(n) * static_cast<double>(n - 1);
  std::printf("Loop time of %.6g s for %d steps: %.6g steps/s, %.4g pair interactions/s (strategy %s)\n", r.loop_s,
              o.steps, steps_per_s, pairs * steps_per_s, r.strategy.c_str());
  const int flops = gravity2d::Simulation<Backend, Real, Acc, Math>::Force::flops;
  double gflops = 0;
  if (r.kernel_ms > 0) {
    gflops = pairs * flops / (r.kernel_ms * 1e-3) / 1e9;
    std::printf("Force evaluation alone: %.6g ms, %.4g pairs/s, %.5g GFLOP/s at %d flops per pair (%u blocks of %u "
                "threads)\n",
                r.kernel_ms, pairs / (r.kernel_ms * 1e-3), gflops, flops, r.shape.grid, r.shape.block);
  }
  // (no full turn measured: a difference of 1)
  const double period_error = r.period > 0 ? std::abs(r.period - r.period_expected) / r.period_expected : 1.0;
  if (r.period_expected > 0)
    std::printf("Orbital period: measured %.10g, expected %.10g (relative difference %.3g)\n", r.period,
                r.period_expected, period_error);
  std::printf("Energy: largest |E - E0| / |E0| %.3g; momentum: largest |P - P0| / sum m|v| %.3g\n", r.max_energy_error,
              r.max_momentum);
  if (!o.json.empty()) {
    FILE* f = std::fopen(o.json.c_str(), "w");
    if (!f) throw std::runtime_error("cannot write " + o.json);
    std::fprintf(f,
                 "{\n  \"program\": \"gravity2d\",\n  \"cellint_version\": \"%s\",\n  \"backend\": \"%s\",\n  "
                 "\"device\": \"%s\",\n  \"strategy\": \"%s\",\n  \"precision\": \"%s\",\n  \"math\": \"%s\",\n",
                 CELLINT_VERSION_STRING, Backend::name(), device.c_str(), r.strategy.c_str(), o.precision.c_str(),
                 o.math.c_str());
    std::fprintf(f,
                 "  \"particles\": %ld,\n  \"steps\": %d,\n  \"dt\": %.10g,\n  \"softening\": %.10g,\n  \"seconds\": "
                 "%.6g,\n  \"steps_per_s\": %.6g,\n  \"pairs_per_s\": %.6g,\n",
                 n, o.steps, o.dt, o.softening, r.loop_s, steps_per_s, pairs * steps_per_s);
    std::fprintf(f,
                 "  \"kernel_ms\": %.6g,\n  \"flops_per_pair\": %d,\n  \"kernel_gflops\": %.6g,\n  "
                 "\"max_energy_error\": %.6g,\n  \"max_momentum_error\": %.6g,\n  \"period\": %.10g,\n  "
                 "\"period_expected\": %.10g,\n  \"launch_blocks\": %u,\n  \"launch_threads\": %u\n}\n",
                 r.kernel_ms, flops, gflops, r.max_energy_error, r.max_momentum, r.period, r.period_expected,
                 r.shape.grid, r.shape.block);
    std::fclose(f);
  }
  bool ok = true;
  auto check = [&](const char* what, double got, double bound) {
    if (bound < 0) return;
    const bool pass = got <= bound;
    std::printf("%s check: %.3g %s %.3g: %s\n", what, got, pass ? "<=" : ">", bound, pass ? "passed" : "FAILED");
    ok = ok && pass;
  };
  check("Energy", r.max_energy_error, o.check_energy);
  check("Momentum", r.max_momentum, o.check_momentum);
  if (o.check_period >= 0) check("Period", period_error, o.check_period);
  return ok ? 0 : 1;
}

template <class Backend>
int with_precision(const Options& o) {
  const bool fast = o.math == "fast";
  if (o.precision == "double")
    return fast ? simulate<Backend, double, double, cellint::FastMath>(o)
                : simulate<Backend, double, double, cellint::ExactMath>(o);
  if (o.precision == "mixed")
    return fast ? simulate<Backend, float, double, cellint::FastMath>(o)
                : simulate<Backend, float, double, cellint::ExactMath>(o);
  return fast ? simulate<Backend, float, float, cellint::FastMath>(o)
              : simulate<Backend, float, float, cellint::ExactMath>(o);
}

}  // namespace

int main(int argc, char** argv) {
  const Options o = parse(argc, argv);
  try {
    return cellint::examples::with_backend("cellint_gravity2d", o.backend,
                                           [&](auto backend) { return with_precision<decltype(backend)>(o); });
  } catch (const std::exception& e) {
    std::fprintf(stderr, "cellint_gravity2d: %s\n", e.what());
    return 1;
  }
}
