// cellint_particles2d: the Berkeley CS267 2D particle simulator on the CPU or a GPU.
//
// This file is compiled twice: by the C++ compiler as cellint_particles2d (Host and Emulated backends, OpenMP) and,
// through particles2d_main.cu, by nvcc as cellint_particles2d_cuda (Cuda backend added). The simulation itself is in
// particles2d.hpp and knows nothing about backends.
//
//   cellint_particles2d --n 1000 --check                 # the course's correctness statistics
//   cellint_particles2d --n 500 --steps 300 --reference  # against the O(N^2) double-precision code
//   cellint_particles2d_cuda --n 1000000 --json run.json # the headline: 10^6 particles, 1,000 steps

#include <cerrno>
#include <climits>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <string>

#include "../common/args.hpp"
#include "../common/backend_select.hpp"
#include "particles2d.hpp"

namespace {

constexpr const char* program = "cellint_particles2d";

void usage(const char* prog) {
  std::printf(
      "usage: %s [options]\n"
      "The CS267 2D particle simulator: N particles at density 0.0005 in a square box with reflecting walls,\n"
      "repelling each other within a cutoff of 0.01; prints the course's statistics absmin and absavg.\n"
      "  --n N             particles (default 1000)\n"
      "  --steps N         time steps (default 1000, the course's NSTEPS)\n"
      "  --seed N          seed of the initial state (srand48; default 1)\n"
      "  -o FILE           trajectory in the course's format: 'n size', then 'x y' per particle per frame\n"
      "  --save-every N    trajectory frame every N steps (default 10, the course's SAVEFREQ)\n"
      "  --stats-every N   collect the statistics every N steps (default 1; 0: never, the course's -no)\n"
      "  --check           exit 1 unless absmin > 0.4 and absavg > 0.8 (the course's checker)\n"
      "  --reference       also run the O(N^2) double-precision code (O(N^2 steps): small N only) from the same\n"
      "                    initial state and compare the final positions; exit 1 when they differ by more\n"
      "                    than the tolerance\n"
      "  --tolerance X     largest accepted |x - x_ref| in box units (default 1e-9 in double, 1e-4 in float)\n"
      "  --skin X          list rows hold the pairs within cutoff + X, rebuilt when a particle has moved\n"
      "                    more than X/2 (default 0.01, one cutoff)\n"
      "  --precision P     float | double (default double)\n"
      "  --backend B       host | cuda | emulated | auto (default auto: cuda when built with it and a GPU is\n"
      "                    present, else host; emulated runs the GPU kernels on the CPU, slowly, for testing,\n"
      "                    in the host build only)\n"
      "  --json FILE       write a JSON summary\n",
      prog);
}

// A count that must be a whole number in [lo, hi]: read as text so that out-of-range values are named, not wrapped.
long long whole(cellint::examples::Args& args, long long lo, long long hi) {
  const std::string opt = args.option();
  const std::string v = args.value();
  char* end = nullptr;
  errno = 0;
  const long long r = std::strtoll(v.c_str(), &end, 10);
  if (v.empty() || *end) args.fail(opt + " expects a whole number, got '" + v + "'");
  if (errno == ERANGE || r < lo || r > hi)
    args.fail(opt + " must be between " + std::to_string(lo) + " and " + std::to_string(hi) + ", got '" + v + "'");
  return r;
}

// Opens `path` for writing now, so that an unwritable path is reported before the run.
FILE* open_output(const cellint::examples::Args& args, const std::string& what, const std::string& path) {
  if (path.empty()) return nullptr;
  FILE* f = std::fopen(path.c_str(), "w");
  if (!f) args.fail("cannot write the " + what + " '" + path + "': " + std::strerror(errno));
  return f;
}

struct Parsed {
  particles2d::Options o;
  FILE* traj = nullptr;
  FILE* json = nullptr;
};

// Parses argv into Options and opens the output files; exits with status 2 and a message on bad input.
Parsed parse(int argc, char** argv) {
  Parsed p;
  particles2d::Options& o = p.o;
  cellint::examples::Args args(program, argc, argv);
  while (args.next()) {
    const std::string& a = args.option();
    // clang-format off
    if (a == "-h" || a == "--help") {
      usage(argv[0]);
      std::exit(0);
    } else if (a == "--n") o.n = whole(args, 1, cellint::CellGrid<cellint::Host, float, 2>::max_size());
    else if (a == "--steps") o.steps = static_cast<int>(whole(args, 0, INT_MAX));
    else if (a == "--seed") o.seed = static_cast<long>(whole(args, 0, UINT32_MAX));
    else if (a == "--save-every") o.save_every = static_cast<int>(whole(args, 1, INT_MAX));
    else if (a == "--stats-every") o.stats_every = static_cast<int>(whole(args, 0, INT_MAX));
    else if (a == "-o") o.output = args.value();
    else if (a == "--json") o.json = args.value();
    else if (a == "--check") o.check = true;
    else if (a == "--reference") o.reference = true;
    else if (a == "--tolerance") {
      o.tolerance = args.real();
      if (!(o.tolerance >= 0)) args.fail("--tolerance must be >= 0");
    } else if (a == "--skin") {
      o.skin = args.real();
      if (!(o.skin >= 0) || !std::isfinite(o.skin)) args.fail("--skin must be a number >= 0");
    }
    else if (a == "--precision") o.precision = args.value();
    else if (a == "--backend") o.backend = args.value();
    else args.fail("unknown option '" + a + "' (see --help)");
    // clang-format on
  }
  if (o.precision != "float" && o.precision != "double") args.fail("--precision must be float or double");
  if (o.check && o.stats_every == 0) args.fail("--check needs the statistics: --stats-every must be at least 1");
  p.traj = open_output(args, "trajectory", o.output);
  p.json = open_output(args, "JSON summary", o.json);
  return p;
}

template <class Backend>
int run_backend(const Parsed& p) {
  if (p.o.precision == "float") return particles2d::run<Backend, float>(p.o, p.traj, p.json);
  return particles2d::run<Backend, double>(p.o, p.traj, p.json);
}

}  // namespace

int main(int argc, char** argv) {
  Parsed p;
  int code = 2;
  try {
    p = parse(argc, argv);
    code = cellint::examples::with_backend(program, p.o.backend,
                                           [&](auto backend) { return run_backend<decltype(backend)>(p); });
  } catch (const std::exception& e) {
    std::fprintf(stderr, "%s: %s\n", program, e.what());
    code = 2;
  }
  for (FILE* f : {p.traj, p.json})
    if (f && std::fclose(f) != 0) {
      std::fprintf(stderr, "%s: writing an output file failed: %s\n", program, std::strerror(errno));
      code = 2;
    }
  return code;
}
