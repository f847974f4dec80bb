// cellint_collisions: the NUS CS3210 2D elastic disc-collision simulator on a cellint broad phase.
//
// This file is compiled twice: by the C++ compiler as cellint_collisions (Host and Emulated backends, OpenMP) and,
// through collisions_main.cu, by nvcc as cellint_collisions_cuda (Cuda backend added). The rules are in
// collisions.hpp.
//
//   echo "1000 20000 1 1000 perf" | cellint_collisions --quiet            # the report's default case
//   cellint_collisions --input examples/collisions/inputs/tie.txt --reference
//   echo "300 200 1 200" | cellint_collisions --backend emulated --reference --quiet

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <fstream>
#include <iostream>
#include <string>

#include "../common/args.hpp"
#include "../common/backend_select.hpp"
#include "collisions.hpp"

namespace {

struct Options {
  std::string input = "-";            ///< input file ("-": standard input)
  std::string backend = "auto";       ///< host | emulated | cuda | auto
  bool reference = false;             ///< also run the O(N^2) reference and compare final states bit for bit
  bool reference_only = false;        ///< run only the reference
  int slices = 0;                     ///< time slices of the broad phase per step (0: chosen from the state)
  int per_grid = 0;                   ///< slices one grid serves (0: as many as 2^23 samples allow)
  bool speed_set = false;             ///< --speed given
  double speed_lo = 0, speed_hi = 0;  ///< generated |velocity component| range
  unsigned seed = 3210;               ///< rand() seed of the generator (the report's)
  bool quiet = false;                 ///< no state lines
  std::string json;                   ///< summary file (empty: none)
};

void usage(const char* prog) {
  std::printf(
      "usage: %s [options] [INPUT]\n"
      "2D elastic disc collisions (the NUS CS3210 simulator) with a cellint broad phase.\n"
      "Input (file or standard input): N L r S, then optionally 'print' or 'perf' (default perf), then either\n"
      "nothing (discs generated) or N lines 'i x y vx vy'. Output (standard output): 'step i x y vx vy' lines (step 0\n"
      "in perf mode, every step in print mode), then 'S i x y vx vy p_c w_c'. The summary goes to standard error.\n"
      "  --input FILE        input file (default: standard input; also as the last argument)\n"
      "  --backend B         host | emulated | cuda | auto (default auto: cuda when built with it and a GPU\n"
      "                      answers, else host; emulated runs the GPU kernels on the CPU, host build only)\n"
      "  --reference         also run the report's O(N^2) algorithm and fail (exit 1) unless the final states\n"
      "                      are bit-identical\n"
      "  --reference-only    run only the O(N^2) algorithm (for timing)\n"
      "  --slices K          time slices per step of the broad phase (default 0: ~ v_max sqrt(N) / L)\n"
      "  --slices-per-grid G slices that one grid build and one pass serve, side by side (default 0: as\n"
      "                      many as 2^23 samples allow)\n"
      "  --speed LO,HI       generated velocity components: magnitude uniform in [LO, HI], random sign\n"
      "                      (default: the course's [L/(8r), L/4])\n"
      "  --seed N            rand() seed of the generator (default 3210, as in the report)\n"
      "  --quiet             print no state lines\n"
      "  --json FILE         write a JSON summary\n",
      prog);
}

Options parse(int argc, char** argv) {
  Options o;
  cellint::examples::Args args("cellint_collisions", argc, argv);
  while (args.next()) {
    const std::string& a = args.option();
    // clang-format off
    if (a == "-h" || a == "--help") {
      usage(argv[0]);
      std::exit(0);
    } else if (a == "--input") o.input = args.value();
    else if (a == "--backend") o.backend = args.value();
    else if (a == "--reference") o.reference = true;
    else if (a == "--reference-only") o.reference_only = true;
    else if (a == "--slices") o.slices = args.integer();
    else if (a == "--slices-per-grid") o.per_grid = args.integer();
    else if (a == "--speed") { args.pair(o.speed_lo, o.speed_hi); o.speed_set = true; }
    else if (a == "--seed") o.seed = static_cast<unsigned>(args.integer());
    else if (a == "--quiet") o.quiet = true;
    else if (a == "--json") o.json = args.value();
    else if (!a.empty() && a[0] != '-') o.input = a;
    else args.fail("unknown option '" + a + "' (see --help)");
    // clang-format on
  }
  if (o.slices < 0) args.fail("--slices must be >= 0");
  if (o.per_grid < 0) args.fail("--slices-per-grid must be >= 0");
  if (o.speed_set && !(o.speed_lo >= 0 && o.speed_hi >= o.speed_lo)) args.fail("--speed needs 0 <= LO <= HI");
  if (o.reference && o.reference_only) args.fail("--reference and --reference-only exclude each other");
  return o;
}

collisions::Input load(const Options& o) {
  if (o.input == "-") return collisions::read_input(std::cin, "stdin");
  std::ifstream f(o.input);
  if (!f) throw collisions::InputError("cannot read " + o.input);
  return collisions::read_input(f, o.input);
}

struct Totals {
  long wall = 0, disc = 0;
};
Totals totals(const collisions::State& s) {
  Totals t;
  for (collisions::Index i = 0; i < s.size(); ++i) {
    t.wall += s.wall_hits[i];
    t.disc += s.disc_hits[i];
  }
  t.disc /= 2;  // each disc collision counts for both discs
  return t;
}

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

/// Runs the report's algorithm for every step from `s`; returns its wall time.
double run_reference(collisions::State& s, long steps) {
  collisions::Matching m;
  const auto t0 = std::chrono::steady_clock::now();
  for (long k = 0; k < steps; ++k) collisions::reference_step(s, m);
  return seconds_since(t0);
}

template <class Backend>
int run(const Options& o, const collisions::Input& inp) {
  using namespace collisions;
  const double lo = o.speed_set ? o.speed_lo : std::min(inp.L / (8 * inp.r), inp.L / 4);
  const double hi = o.speed_set ? o.speed_hi : std::max(inp.L / (8 * inp.r), inp.L / 4);
  const State start = inp.has_states ? inp.state : generate(inp, o.seed, lo, hi);
  State s = start;
  const bool states = !o.quiet;
  if (states) print_state(stdout, s, 0, false);

  double seconds = 0;
  EngineStats stats;
  std::string engine = "cellint";
  if (o.reference_only) {
    engine = "reference";
    seconds = run_reference(s, inp.steps);  // print mode prints only the final state here
  } else {
    CellintEngine<Backend> eng(s, o.slices, o.per_grid);
    Matching m;
    const auto t0 = std::chrono::steady_clock::now();
    for (long k = 0; k < inp.steps; ++k) {
      if (states && inp.print && k > 0) print_state(stdout, s, k, false);
      eng.step(s, m);
    }
    seconds = seconds_since(t0);
    stats = eng.stats();
  }
  if (states) print_state(stdout, s, inp.steps, true);
  std::fflush(stdout);

  const cellint::DeviceProperties props = Backend::properties();
  const Totals tot = totals(s);
  std::fprintf(stderr,
               "cellint_collisions: %d discs, L %.10g, r %.10g, %ld steps, %s engine on %s (%s): %.4g s, "
               "%.4g disc-steps/s; %ld wall and %ld disc collisions",
               inp.n, inp.L, inp.r, inp.steps, engine.c_str(), Backend::name(), props.name, seconds,
               seconds > 0 ? inp.n * static_cast<double>(inp.steps) / seconds : 0.0, tot.wall, tot.disc);
  if (!o.reference_only)
    std::fprintf(stderr, "; %d slices a step (%d per grid), %.3g rounds a step, strategy %s", stats.slices,
                 stats.per_grid, inp.steps ? static_cast<double>(stats.rounds) / inp.steps : 0.0,
                 stats.strategy.c_str());
  std::fprintf(stderr, "\n");

  int rc = 0;
  double ref_seconds = -1;
  if (o.reference) {
    State ref = start;
    ref_seconds = run_reference(ref, inp.steps);
    const Index i = first_difference(s, ref);
    if (i >= 0) {
      std::fprintf(stderr,
                   "cellint_collisions: FAILED: the final state differs from the O(N^2) reference at disc %d:\n"
                   "  cellint   %.17g %.17g %.17g %.17g p_c %ld w_c %ld\n"
                   "  reference %.17g %.17g %.17g %.17g p_c %ld w_c %ld\n",
                   i, s.x[i], s.y[i], s.vx[i], s.vy[i], s.disc_hits[i], s.wall_hits[i], ref.x[i], ref.y[i], ref.vx[i],
                   ref.vy[i], ref.disc_hits[i], ref.wall_hits[i]);
      rc = 1;
    } else {
      std::fprintf(stderr,
                   "cellint_collisions: reference check passed: final states bit-identical to the O(N^2) reference "
                   "(%.4g s)\n",
                   ref_seconds);
    }
  }

  if (!o.json.empty()) {
    std::FILE* f = std::fopen(o.json.c_str(), "w");
    if (!f) throw std::runtime_error("cannot write " + o.json);
    std::fprintf(f, "{\n  \"program\": \"collisions\",\n  \"cellint_version\": \"%s\",\n", CELLINT_VERSION_STRING);
    std::fprintf(f, "  \"engine\": \"%s\",\n  \"backend\": \"%s\",\n  \"device\": \"%s\",\n", engine.c_str(),
                 Backend::name(), props.name);
    std::fprintf(f, "  \"host_threads\": %d,\n", Backend::is_gpu_like ? 0 : props.multiprocessors);
    std::fprintf(f, "  \"particles\": %d,\n  \"steps\": %ld,\n  \"L\": %.17g,\n  \"r\": %.17g,\n", inp.n, inp.steps,
                 inp.L, inp.r);
    std::fprintf(f, "  \"generated\": %s,\n  \"speed\": [%.17g, %.17g],\n  \"seed\": %u,\n",
                 inp.has_states ? "false" : "true", lo, hi, o.seed);
    std::fprintf(f, "  \"seconds\": %.6g,\n  \"particle_steps_per_s\": %.6g,\n", seconds,
                 seconds > 0 ? inp.n * static_cast<double>(inp.steps) / seconds : 0.0);
    std::fprintf(f, "  \"collisions\": {\"wall\": %ld, \"disc\": %ld},\n", tot.wall, tot.disc);
    std::fprintf(f, "  \"slices\": %d,\n  \"slices_per_grid\": %d,\n  \"rounds\": %ld,\n  \"grids\": %ld,\n",
                 stats.slices, stats.per_grid, stats.rounds, stats.grids);
    std::fprintf(f, "  \"strategy\": \"%s\",\n", stats.strategy.c_str());
    if (o.reference)
      std::fprintf(f, "  \"reference\": {\"identical\": %s, \"seconds\": %.6g}\n}\n", rc == 0 ? "true" : "false",
                   ref_seconds);
    else
      std::fprintf(f, "  \"reference\": null\n}\n");
    std::fclose(f);
  }
  return rc;
}

}  // namespace

int main(int argc, char** argv) {
  try {
    const Options o = parse(argc, argv);
    const collisions::Input inp = load(o);
    return cellint::examples::with_backend("cellint_collisions", o.backend,
                                           [&](auto backend) { return run<decltype(backend)>(o, inp); });
  } catch (const std::exception& e) {
    std::fprintf(stderr, "cellint_collisions: error: %s\n", e.what());
    return 2;
  }
}
