// cellint_lj: Lennard-Jones molecular dynamics (LAMMPS's bench/in.lj) on the CPU or a GPU.
//
// This file is compiled twice: by the C++ compiler as cellint_lj (Host backend with OpenMP) and,
// through lj_main.cu, by nvcc as cellint_lj_cuda (Cuda backend added). The simulation itself is
// in lj.hpp and knows nothing about backends.
//
//   cellint_lj                                 # in.lj: 32,000 atoms, 100 steps, thermo every 10
//   cellint_lj --cells 5 --shifted --equilibrate 200 --steps 1200 --check-drift 1e-4
//   cellint_lj_cuda --cells 80 --precision mixed --json run.json   # 2,048,000 atoms on the GPU

#include <cstdio>
#include <cstdlib>
#include <exception>
#include <string>


#include "../common/args.hpp"
#include "../common/backend_select.hpp"
#include "lj.hpp"

namespace {

void usage(const char* prog) {
  std::printf(
      "usage: %s [options]\n"
      "Lennard-Jones NVE molecular dynamics in reduced units (LAMMPS bench/in.lj by default).\n"
      "  --cells N           fcc unit cells per side, 4N^3 atoms (default 20 = 32,000; 40 = 256k,\n"
      "                      80 = 2M, 160 = 16M; at least 5)\n"
      "  --replicate X,Y,Z   the box of --cells replicated X, Y, Z times along x, y, z (in.lj's x, y, z\n"
      "                      variables; default 1,1,1)\n"
      "  --steps N           time steps (default 100)\n"
      "  --dt X              time step in tau (default 0.005)\n"
      "  --thermo N          thermo line every N steps (default 10; 0: first and last)\n"
      "  --shifted           shift the potential to zero at the cutoff (default: plain lj/cut)\n"
      "  --cutoff X          cutoff in sigma (default 2.5)\n"
      "  --density X         number density (default 0.8442)\n"
      "  --temp X            initial temperature (default 1.44)\n"
      "  --list L            auto (default: full on a GPU, half on the CPU; none when --strategy\n"
      "                      names a cell strategy) | full | half (each pair once, Newton's third\n"
      "                      law) | none (cell lists: re-bin and search the cells every step)\n"
      "  --skin X            list: rows hold the pairs within cutoff + X (default 0.3), rebuilt\n"
      "                      when an atom has moved more than X/2. none: 0 (default) re-bins every\n"
      "                      step, X > 0 widens the cells to cutoff + X and re-bins when an atom\n"
      "                      has moved more than X/2\n"
      "  --neigh-every N     list: look at the displacements every N steps (default 1)\n"
      "  --neigh-check yes|no  list: no = rebuild every N steps whatever moved (LAMMPS in.lj uses\n"
      "                      every 20, check no); default yes\n"
      "  --neigh-trigger T   list: pairs = rebuild when an atom past skin/2 and a neighbour may have\n"
      "                      closed in by their distance at the last rebuild less the cutoff;\n"
      "                      half-skin = when any atom moved more than skin/2; auto (default): pairs\n"
      "                      from 250,000 atoms\n"
      "  --sort N            list: re-sort the atoms by cell every N steps (default 1000; 0: never)\n"
      "  --layout L          list rows: auto (columns on a GPU, rows on the CPU) | rows | columns\n"
      "  --row-threads N     list: GPU threads per row in the pair kernel, 1 | 2 | 4 | 8 (default 0:\n"
      "                      chosen from the atom count so that the GPU is filled)\n"
      "  --x-split N         list: list cells along X per cutoff + skin, 1 | 2 | 3 (default 0:\n"
      "                      the library's choice, 2)\n"
      "  --graph yes|no      list steps recorded once and replayed as a CUDA/HIP graph (default\n"
      "                      yes; with --neigh-every 1 and without --breakdown)\n"
      "  --fuse yes|no       full list, recorded steps: the kick and drift run in the force pass\n"
      "                      on each atom's force as it is summed (default no: slower on an H100)\n"
      "  --breakdown         time each phase (pair, neigh, integrate); waits for the device at\n"
      "                      every phase, so the loop runs slower\n"
      "  --stats             print the first force and energy passes' statistics: pairs examined\n"
      "                      and within the cutoff, time, bandwidth of the minimum bytes\n"
      "  --precision P       float | double | mixed (float positions, double sums);\n"
      "                      default double. With float positions on a GPU the pair term takes\n"
      "                      the hardware reciprocal (about 1 ulp); a build with\n"
      "                      -DCELLINT_LJ_MATH=cellint::ExactMath divides exactly\n"
      "  --backend B         host | cuda | emulated | auto (default auto: cuda when built with it\n"
      "                      and a GPU is present, else host; emulated runs the GPU kernels on\n"
      "                      the CPU, slowly, for testing, in the host build only)\n"
      "  --strategy S        auto (default) or one of: par-part-noloop, par-part-loop, par-cell,\n"
      "                      par-cell-sm, all-in-sm, x-pencil, x-pencil-reg, x-pencil-tile (GPU), cell-loop,\n"
      "                      cell-loop-half (CPU), brute-force\n"
      "  --xyz FILE          write an extended-XYZ trajectory (OVITO, ASE)\n"
      "  --every N           XYZ frame every N steps (default 0: final configuration only)\n"
      "  --seed N            velocity seed (default 87287, as in in.lj)\n"
      "  --equilibrate N     steps before the drift reference E(start) (default 0)\n"
      "  --check-drift TOL   exit 1 when |E(end) - E(start)| per atom > TOL\n"
      "  --json FILE         write a JSON summary\n",
      prog);
}

// Parses argv into Options; exits with a message on a bad option.
lj::Options parse(int argc, char** argv) {
  lj::Options o;
  cellint::examples::Args args("cellint_lj", argc, argv);
  while (args.next()) {
    const std::string& a = args.option();
    // clang-format off
    if (a == "-h" || a == "--help") {
      usage(argv[0]);
      std::exit(0);
    } else if (a == "--cells") o.cells = args.integer();
    else if (a == "--replicate") args.triple(o.replicate, 1, 4096);
    else if (a == "--steps") o.steps = args.integer();
    else if (a == "--dt") o.dt = args.real();
    else if (a == "--thermo") o.thermo = args.integer();
    else if (a == "--shifted") o.shifted = true;
    else if (a == "--cutoff") o.cutoff = args.real();
    else if (a == "--density") o.density = args.real();
    else if (a == "--temp") o.temperature = args.real();
    else if (a == "--skin") { o.skin = args.real(); if (o.skin < 0) args.fail("--skin must be >= 0"); }
    else if (a == "--list") o.list = args.value();
    else if (a == "--neigh-every") o.neigh_every = args.integer();
    else if (a == "--neigh-check") o.neigh_check = args.yes_no();
    else if (a == "--neigh-trigger") {
      o.neigh_trigger = args.value();
      if (!lj::is_trigger_name(o.neigh_trigger))
        args.fail("--neigh-trigger must be auto, pairs or half-skin");
    }
    else if (a == "--sort") o.sort_every = args.integer();
    else if (a == "--breakdown") o.breakdown = true;
    else if (a == "--stats") o.stats = true;
    else if (a == "--layout") o.layout = args.value();
    else if (a == "--row-threads") o.row_threads = args.integer();
    else if (a == "--x-split") o.x_split = args.integer();
    else if (a == "--graph") o.graph = args.yes_no();
    else if (a == "--fuse") o.fuse = args.yes_no();
    else if (a == "--precision") o.precision = args.value();
    else if (a == "--backend") o.backend = args.value();
    else if (a == "--strategy") o.strategy = args.value();
    else if (a == "--xyz") o.xyz = args.value();
    else if (a == "--every") o.every = args.integer();
    else if (a == "--seed") o.seed = args.integer();
    else if (a == "--equilibrate") o.equilibrate = args.integer();
    else if (a == "--check-drift") o.check_drift = args.real();
    else if (a == "--json") o.json = args.value();
    else args.fail("unknown option '" + a + "' (see --help)");
    // clang-format on
  }
  auto fail = [&](const char* msg) { args.fail(msg); };
  if (o.cells < 1) fail("--cells must be at least 1");
  if (const std::string e = lj::lattice_error(o); !e.empty()) fail(e.c_str());
  if (o.steps < 0 || o.thermo < 0 || o.every < 0 || o.equilibrate < 0)
    fail("step counts must be >= 0");
  if (!(o.dt > 0) || !(o.cutoff > 0) || !(o.density > 0) || !(o.temperature > 0))
    fail("--dt, --cutoff, --density and --temp must be positive");
  if (o.list != "auto" && o.list != "none" && o.list != "full" && o.list != "half")
    fail("--list must be auto, none, full or half");
  if (o.list != "auto" && o.list != "none" && o.strategy != "auto")
    fail("--strategy names a cell strategy: it needs --list none (or auto)");
  if (o.layout != "auto" && o.layout != "rows" && o.layout != "columns")
    fail("--layout must be auto, rows or columns");
  if (o.neigh_every < 1 || o.sort_every < 0) fail("--neigh-every must be >= 1, --sort >= 0");
  if (o.row_threads != 0 && o.row_threads != 1 && o.row_threads != 2 && o.row_threads != 4 && o.row_threads != 8)
    fail("--row-threads must be 0, 1, 2, 4 or 8");
  if (o.x_split < 0 || o.x_split > 3) fail("--x-split must be 0, 1, 2 or 3");
  if (o.seed <= 0) fail("--seed must be positive");
  if (o.precision != "float" && o.precision != "double" && o.precision != "mixed")
    fail("--precision must be float, double or mixed");
  lj::parse_strategy(o.strategy);  // throws with the list of names
  return o;
}

template <class Backend>
int run_backend(const lj::Options& o) {
  if (o.precision == "float") return lj::run<Backend, float, float>(o);
  if (o.precision == "mixed") return lj::run<Backend, float, double>(o);
  return lj::run<Backend, double, double>(o);
}


}  // namespace

int main(int argc, char** argv) {
  try {
    const lj::Options o = parse(argc, argv);
    return cellint::examples::with_backend("cellint_lj", o.backend,
                                           [&](auto backend) { return run_backend<decltype(backend)>(o); });
  } catch (const std::exception& e) {
    std::fprintf(stderr, "cellint_lj: %s\n", e.what());
    return 2;
  }
}
