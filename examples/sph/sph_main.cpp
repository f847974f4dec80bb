// cellint_sph: a weakly compressible SPH dam break (Martin & Moyce 1952, Koshizuka & Oka 1996)
// on the CPU or a GPU.
//
// This file is compiled twice: by the C++ compiler as cellint_sph (Host backend with OpenMP, and
// the Emulated backend for testing) and, through sph_main.cu, by nvcc as cellint_sph_cuda (Cuda
// backend added). The simulation is in sph.hpp, the pair functors in sph_functors.hpp.
//
//   cellint_sph                                        # 2-D, a/dx = 40: 3,200 fluid particles
//   cellint_sph --resolution 20 --t-end 3 --check      # the CTest validation run
//   cellint_sph --frames out --every 500 --front front.csv
//   cellint_sph --lattice                              # uniform-lattice density check
//   cellint_sph_cuda --resolution 700 --precision float --t-end 3   # ~1M fluid particles on a GPU

#include <cstdio>
#include <cstdlib>
#include <exception>
#include <string>
#include <type_traits>


#include "../common/args.hpp"
#include "../common/backend_select.hpp"
#include "sph.hpp"

namespace {

void usage(const char* prog) {
  std::printf(
      "usage: %s [options]\n"
      "Weakly compressible SPH dam break: a water column of width a and height 2a collapses in a\n"
      "tank 4a long (Koshizuka & Oka 1996 geometry; front compared with Martin & Moyce 1952).\n"
      "  --resolution N      particles across the column width a (default 40; 2-D fluid = 2 N^2)\n"
      "  --dim D             2 (default) or 3 (a tank --depth a deep with side walls)\n"
      "  --depth X           3-D tank depth in units of a (default 1)\n"
      "  --column-width X    a in metres (default 0.146)\n"
      "  --tank-length X     tank length in units of a (default 4)\n"
      "  --tank-height X     side-wall height in units of a (default 4)\n"
      "  --t-end T           end time in T = t sqrt(2g/a) (default 6)\n"
      "  --steps N           stop after N steps (default 0: run to --t-end)\n"
      "  --kernel K          cubic (default) | wendland\n"
      "  --h-factor X        h / dx (default 1.3)\n"
      "  --alpha X           artificial viscosity (default 0.02)\n"
      "  --delta X           density diffusion, delta-SPH (default 0.1; 0: off)\n"
      "  --shepard N         Shepard density filter every N steps (default 30; 0: never)\n"
      "  --cfl X             time-step factor (default 0.2)\n"
      "  --c0-factor X       c0 = X sqrt(2 g H) (default 10)\n"
      "  --precision P       float | double (default double)\n"
      "  --backend B         host | cuda | emulated | auto (default auto: cuda when built with it\n"
      "                      and a GPU is present, else host; emulated runs the GPU kernels on\n"
      "                      the CPU, slowly, for testing, 2-D only, in the host build only)\n"
      "  --strategy S        auto (default) or one of: par-part-noloop, par-part-loop, par-cell,\n"
      "                      par-cell-sm, all-in-sm, x-pencil, x-pencil-reg, x-pencil-tile (GPU), cell-loop,\n"
      "                      cell-loop-half (CPU), brute-force; with --lattice also 'all'\n"
      "  --stats             print the first two passes' statistics: pairs examined and within the\n"
      "                      cutoff, time, bandwidth of the minimum bytes\n"
      "  --list L            auto (default: a full Verlet list on a GPU, a half list on the CPU; none\n"
      "                      when --strategy names a cell strategy) | full | half | none (re-bin the\n"
      "                      grid and search its cells every step)\n"
      "  --skin X            list: rows hold the pairs within 2h + X h (default 0.25), rebuilt on the\n"
      "                      device when a particle moved more than X h / 2\n"
      "  --sort N            list: re-sort the particles by cell every N steps (default 200; 0: never)\n"
      "  --frames DIR        write particle frames into DIR (must exist)\n"
      "  --every N           frame every N steps (default 0: first and last only)\n"
      "  --format F          vtk (legacy POLYDATA, ParaView; default) | csv\n"
      "  --front FILE        CSV of the front position over time\n"
      "  --front-every N     front row every N steps (default 10)\n"
      "  --progress N        progress line every N steps (default 0: every 0.5 of T)\n"
      "  --check             exit 1 unless mass, density bounds, containment and the front\n"
      "                      (T = 1.5, 2, 2.5) pass; see --front-tol, --rho-bounds\n"
      "  --front-tol L,H     front band: (1-L) Z_exp <= Z_sim <= (1+H) Z_exp (default 0.05,0.20)\n"
      "  --rho-bounds L,H    fluid density bounds in rho0 (default 0.90,1.10)\n"
      "  --lattice           run the uniform-lattice density check instead (tolerance\n"
      "                      --lattice-tol, default 0.01)\n"
      "  --json FILE         write a JSON summary\n",
      prog);
}

// Parses argv into Options; exits with a message on a bad option.
sph::Options parse(int argc, char** argv) {
  sph::Options o;
  cellint::examples::Args args("cellint_sph", argc, argv);
  while (args.next()) {
    const std::string& a = args.option();
    // clang-format off
    if (a == "-h" || a == "--help") {
      usage(argv[0]);
      std::exit(0);
    } else if (a == "--resolution") o.resolution = args.integer();
    else if (a == "--dim") o.dim = args.integer();
    else if (a == "--depth") o.depth = args.real();
    else if (a == "--column-width") o.column_width = args.real();
    else if (a == "--tank-length") o.tank_length = args.real();
    else if (a == "--tank-height") o.tank_height = args.real();
    else if (a == "--t-end") o.t_end = args.real();
    else if (a == "--steps") o.steps = args.integer();
    else if (a == "--kernel") o.kernel = args.value();
    else if (a == "--h-factor") o.h_factor = args.real();
    else if (a == "--alpha") o.alpha = args.real();
    else if (a == "--delta") o.delta = args.real();
    else if (a == "--shepard") o.shepard = args.integer();
    else if (a == "--cfl") o.cfl = args.real();
    else if (a == "--c0-factor") o.c0_factor = args.real();
    else if (a == "--precision") o.precision = args.value();
    else if (a == "--backend") o.backend = args.value();
    else if (a == "--strategy") o.strategy = args.value();
    else if (a == "--list") o.list = args.value();
    else if (a == "--stats") o.stats = true;
    else if (a == "--skin") o.skin = args.real();
    else if (a == "--sort") o.sort = args.integer();
    else if (a == "--frames") o.frames = args.value();
    else if (a == "--every") o.every = args.integer();
    else if (a == "--format") o.format = args.value();
    else if (a == "--front") o.front = args.value();
    else if (a == "--front-every") o.front_every = args.integer();
    else if (a == "--progress") o.progress = args.integer();
    else if (a == "--check") o.check = true;
    else if (a == "--front-tol") args.pair(o.front_tol_low, o.front_tol_high);
    else if (a == "--rho-bounds") args.pair(o.rho_low, o.rho_high);
    else if (a == "--lattice") o.lattice = true;
    else if (a == "--lattice-tol") o.lattice_tol = args.real();
    else if (a == "--json") o.json = args.value();
    else args.fail("unknown option '" + a + "' (see --help)");
    // clang-format on
  }
  auto fail = [&](const char* msg) { args.fail(msg); };
  if (o.resolution < 4) fail("--resolution must be at least 4");
  if (o.dim != 2 && o.dim != 3) fail("--dim must be 2 or 3");
  if (!(o.column_width > 0) || !(o.aspect > 0) || !(o.depth > 0))
    fail("--column-width and --depth must be positive");
  if (!(o.tank_length >= 1) || !(o.tank_height >= o.aspect))
    fail("--tank-length must be >= 1 and --tank-height >= 2 (the column must fit)");
  if (!(o.t_end > 0) || o.steps < 0 || o.every < 0 || o.front_every < 1 || o.progress < 0 ||
      o.shepard < 0)
    fail("--t-end must be positive, step counts non-negative, --front-every at least 1");
  if (!(o.h_factor >= 1 && o.h_factor <= 2.5)) fail("--h-factor must be in [1, 2.5]");
  if (o.list != "auto" && o.list != "none" && o.list != "full" && o.list != "half")
    fail("--list must be auto, full, half or none");
  if (!(o.skin >= 0 && o.skin <= 2) || o.sort < 0) fail("--skin must be in [0, 2], --sort >= 0");
  if (!(o.alpha >= 0) || !(o.delta >= 0) || !(o.cfl > 0 && o.cfl <= 1) || !(o.c0_factor > 0))
    fail("--alpha and --delta must be >= 0, --cfl in (0, 1], --c0-factor positive");
  if (o.precision != "float" && o.precision != "double")
    fail("--precision must be float or double");
  if (o.format != "vtk" && o.format != "csv") fail("--format must be vtk or csv");
  if (!(o.lattice_tol > 0)) fail("--lattice-tol must be positive");
  sph::parse_kernel(o.kernel);  // throws with the valid names
  if (o.strategy == "all" && !o.lattice) fail("--strategy all is for --lattice only");
  if (o.strategy != "all") sph::parse_strategy(o.strategy);  // throws with the list of names
  return o;
}

template <class Backend, int Dim>
int run_dim(const sph::Options& o) {
  if (o.precision == "float") return sph::run<Backend, float, Dim>(o);
  return sph::run<Backend, double, Dim>(o);
}

template <class Backend>
int run_backend(const sph::Options& o) {
  return o.dim == 3 ? run_dim<Backend, 3>(o) : run_dim<Backend, 2>(o);
}


}  // namespace

int main(int argc, char** argv) {
  try {
    const sph::Options o = parse(argc, argv);
    return cellint::examples::with_backend("cellint_sph", o.backend, [&](auto backend) {
      using B = decltype(backend);
      if constexpr (std::is_same<B, cellint::Emulated>::value) {
        if (o.dim != 2) {
          std::fprintf(stderr, "cellint_sph: the emulated backend is built for --dim 2 only\n");
          return 2;
        }
        return run_dim<B, 2>(o);
      } else {
        return run_backend<B>(o);
      }
    });
  } catch (const std::exception& e) {
    std::fprintf(stderr, "cellint_sph: %s\n", e.what());
    return 2;
  }
}
