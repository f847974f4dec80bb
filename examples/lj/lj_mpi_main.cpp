// cellint_lj_mpi: LAMMPS's bench/in.lj, decomposed over MPI ranks with cellint::mpi (velocity Verlet NVE, the
// lattice and velocities of cellint_lj and LAMMPS).
//
//   mpiexec -n 4 cellint_lj_mpi                       # in.lj, 32,000 atoms, 100 steps, thermo every 10
//   mpiexec -n 8 cellint_lj_mpi --cells 10 --check-serial 1e-9
//   mpiexec -n 4 cellint_lj_mpi_cuda --cells 126 --precision float --steps 200   # one GPU per rank
//
// Two loops:
//  - cells (--list none): each step moves the rank's own atoms on the host,
//    migrate() (atoms that left the sub-box go to their new owner, velocities and forces with them), exchange() (the
//    ghost layer, the rank's grid), the forces by a cell strategy, the second half kick.
//  - list (--list full, the default on GPU backends; --list half, the default on the Host backend): the state stays in
//    the rank's grid on the backend. Each step moves every atom there, update_ghosts() sends the ghosts' new positions
//    (packed on the backend), and a Verlet list (cutoff + skin) with rows for the owned atoms only gives the forces (a
//    half list: each pair with an owned atom once, the ghosts' shares cleared before sums and kicks). When some atom
//    anywhere has moved more than skin / 2 since the list's build (an MPI_Allreduce of each rank's flags), every rank
//    rebuilds its list over the atoms and ghosts it has (with the pair trigger, only when a second vote after every
//    rank's pair check says a pair may be missed); the ghost layer is wider than cutoff + skin by a margin
//    (--ghost-margin), and only at a rebuild where an atom has moved more than margin / 2 since the last redistribution
//    (less with the pair check, whose atoms may move farther before a rebuild) does every rank call redistribute()
//    (migration and a new ghost layer on the backend, velocities carried) before the list. Moves count along the axes
//    split over ranks and the open ones only: one rank on a periodic box never redistributes (no ghosts; its list folds
//    any coordinate).
// Thermo lines sum over the ranks. With --check-serial TOL, rank 0 runs the same system alone (one rank,
// MPI_COMM_SELF) and compares: step-0 thermo (identical to 10 digits in double), every atom's final position within
// TOL. With a GPU backend each rank takes GPU (rank on its node) mod (GPUs on the node).

#include <climits>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <map>
#include <memory>
#include <mpi.h>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <vector>

#include "cellint/lists/neighbor_list.hpp"
#include "cellint/mpi/distributed_grid.hpp"
#include "cellint/potentials/lennard_jones.hpp"

#include "../common/args.hpp"
#include "../common/backend_select.hpp"
#include "../common/step_timeline.hpp"
#include "lj.hpp"

namespace {

using cellint::Index;

struct Run {
  lj::Options o;               // (backend, precision, list, skin, breakdown: as cellint_lj's)
  std::array<int, 3> ranks{};  // 0: balanced_ranks() chooses
  double check_serial = -1;    // < 0: off
  bool overlap = true;         // list loop: the vote and the list's work while the ghosts' positions travel
  std::string overlap_mode = "auto";  // list loop: auto | on | off | pack (see --overlap)
  double ghost_margin = -1;    // list loop: ghost layer beyond cutoff + skin (< 0: three times the skin)
  bool redistribute_any_step = false;  // list loop: --redistribute any (the rule before relist)
  bool timeline = false;       // list loop, CUDA build: the GPU timeline of the steps without a rebuild
  bool ghosts_ahead = false;   // list loop: the ghosts' positions sent before the kick (send_ghosts_ahead())
  std::string json;            // summary file (rank 0; empty: none)
};

void usage(const char* prog) {
  std::printf(
      "usage: mpiexec -n P %s [options]\n"
      "LAMMPS bench/in.lj decomposed over MPI ranks (cellint::mpi).\n"
      "  --cells N           fcc unit cells per side, 4N^3 atoms (default 20 = 32,000)\n"
      "  --replicate X,Y,Z   the box of --cells replicated X, Y, Z times along x, y, z (in.lj's x, y, z\n"
      "                      variables; weak scaling as LAMMPS runs it; default 1,1,1)\n"
      "  --steps N           time steps (default 100)\n"
      "  --dt X              time step in tau (default 0.005)\n"
      "  --thermo N          thermo line every N steps (default 10; 0: first and last)\n"
      "  --shifted           shift the potential to zero at the cutoff\n"
      "  --cutoff X          cutoff in sigma (default 2.5)\n"
      "  --ranks X,Y,Z       ranks per axis (default: chosen; 0 on an axis: chosen)\n"
      "  --backend B         host | emulated (the GPU kernels on the CPU) | cuda | auto (default auto:\n"
      "                      cuda in the _cuda build when a GPU is present, else host)\n"
      "  --precision P       double | float | mixed (float positions, double sums) (default double)\n"
      "  --list L            none (a cell strategy every step) | full (a Verlet list, state on the\n"
      "                      backend) | half (the same, each pair with an owned atom once: every row\n"
      "                      at once, as --overlap pack) | auto (full on GPU backends, half on the\n"
      "                      Host) (default auto)\n"
      "  --skin X            list skin in sigma (default 0.3)\n"
      "  --breakdown         time each phase (waits for the device at the end of each)\n"
      "  --overlap auto|on|off|pack\n"
      "                      list loop: the ghosts' positions travel while the ranks vote on a rebuild and\n"
      "                      the list packs the owned atoms' positions, then every row in one kernel (pack);\n"
      "                      or while the interior rows are computed, the border rows as they arrive (on);\n"
      "                      off: the vote, the ghosts, then every row; auto (the default): pack where the\n"
      "                      ghosts go GPU to GPU ordered on the GPUs or no ghosts travel (one rank), else on;\n"
      "                      one rank on a periodic box: no vote, the list decides its rebuilds on the\n"
      "                      backend as cellint_lj's does (on, off and pack vote there too)\n"
      "  --ghost-margin X    list loop: ghost layer of cutoff + skin + X; the list is rebuilt without\n"
      "                      migration or a new ghost layer while the atoms stay within it\n"
      "                      (default: three times the skin; 0: every rebuild redistributes; moves count\n"
      "                      along split and open axes: one rank on a periodic box never redistributes)\n"
      "  --neigh-trigger T   list loop: pairs = a rebuild when an atom past skin / 2 may have come within\n"
      "                      the cutoff of an atom its row lacks (checked after the ghosts arrive, a\n"
      "                      second vote); half-skin = when an atom passed skin / 2; auto (default):\n"
      "                      pairs from 250,000 particles in a rank's grid (never where the ghost margin\n"
      "                      leaves no room for its longer moves, as a margin of 0)\n"
      "  --redistribute R    list loop: relist (the default): a list rebuild redistributes when an atom\n"
      "                      has moved more than X / 2 since the last redistribution (a little less with\n"
      "                      the pair trigger); any: any step redistributes (and rebuilds) when one has\n"
      "                      moved more than (skin + X) / 2\n"
      "  --ghosts-ahead on|off\n"
      "                      list loop: the ghosts' positions packed before the kick, as it will move\n"
      "                      them, so that (GPU to GPU with flags) they travel beside it (default off)\n"
      "  --timeline          list loop, CUDA: each rank's GPU timeline of a step without a rebuild\n"
      "                      (events, the mean over such steps)\n"
      "  --check-serial TOL  rank 0 also runs the system alone and compares (exit 1 on a difference)\n"
      "  --json FILE         summary: atoms, ranks, atom-steps/s and the time per step by phase\n",
      prog);
}

Run parse(int argc, char** argv) {
  Run r;
  cellint::examples::Args args("cellint_lj_mpi", argc, argv);
  while (args.next()) {
    const std::string& a = args.option();
    if (a == "--help" || a == "-h") {
      usage(argv[0]);
      std::exit(0);
    } else if (a == "--cells") {
      r.o.cells = args.integer();
      if (r.o.cells < 1) args.fail("--cells must be at least 1");
    } else if (a == "--replicate") {
      args.triple(r.o.replicate, 1, 4096);
    } else if (a == "--steps") {
      r.o.steps = args.integer();
      if (r.o.steps < 0) args.fail("--steps must be >= 0");
    } else if (a == "--dt") {
      r.o.dt = args.real();
    } else if (a == "--thermo") {
      r.o.thermo = args.integer();
    } else if (a == "--shifted") {
      r.o.shifted = true;
    } else if (a == "--cutoff") {
      r.o.cutoff = args.real();
    } else if (a == "--backend") {
      r.o.backend = args.value();
    } else if (a == "--precision") {
      r.o.precision = args.value();
      if (r.o.precision != "double" && r.o.precision != "float" && r.o.precision != "mixed")
        args.fail("--precision must be double, float or mixed");
    } else if (a == "--list") {
      r.o.list = args.value();
      if (r.o.list != "none" && r.o.list != "full" && r.o.list != "half" && r.o.list != "auto")
        args.fail("--list must be none, full, half or auto");
    } else if (a == "--skin") {
      r.o.skin = args.real();
      if (!(r.o.skin >= 0)) args.fail("--skin must be >= 0");
    } else if (a == "--breakdown") {
      r.o.breakdown = true;
    } else if (a == "--ranks") {
      const std::string v = args.value();
      if (std::sscanf(v.c_str(), "%d,%d,%d", &r.ranks[0], &r.ranks[1], &r.ranks[2]) != 3)
        args.fail("--ranks expects three counts 'X,Y,Z', got '" + v + "'");
    } else if (a == "--check-serial") {
      r.check_serial = args.real();
    } else if (a == "--overlap") {
      const std::string v = args.value();
      if (v != "auto" && v != "on" && v != "off" && v != "pack") args.fail("--overlap must be auto, on, off or pack");
      r.overlap = v != "off";
      r.overlap_mode = v;
    } else if (a == "--ghost-margin") {
      r.ghost_margin = args.real();
      if (!(r.ghost_margin >= 0)) args.fail("--ghost-margin must be >= 0");
    } else if (a == "--neigh-trigger") {
      r.o.neigh_trigger = args.value();
      if (!lj::is_trigger_name(r.o.neigh_trigger))
        args.fail("--neigh-trigger must be auto, pairs or half-skin");
    } else if (a == "--redistribute") {
      const std::string v = args.value();
      if (v != "relist" && v != "any") args.fail("--redistribute must be relist or any");
      r.redistribute_any_step = v == "any";
    } else if (a == "--ghosts-ahead") {
      const std::string v = args.value();
      if (v != "on" && v != "off") args.fail("--ghosts-ahead must be on or off");
      r.ghosts_ahead = v == "on";
    } else if (a == "--timeline") {
      r.timeline = true;
    } else if (a == "--json") {
      r.json = args.value();
    } else {
      args.fail("unknown option " + a + " (see --help)");
    }
  }
  if (const std::string e = lj::lattice_error(r.o); !e.empty()) args.fail(e);
  return r;
}

/// What a run leaves: its thermo lines (on the communicator's rank 0) and every atom's final position (gathered on
/// rank 0, by id).
struct Outcome {
  std::vector<lj::Thermo> thermo;
  std::map<std::uint64_t, std::array<double, 3>> final_x;
  double loop_s = 0;
  std::string list = "none";  // the list loop's rows: full, or half (each pair with an owned atom once)
  // seconds over the loop by phase, the largest over the ranks: integration, migration (list loop: with the ghost
  // choice, the grid's and the list's rebuilds), halo exchange (cell loop: with the grid's build; list loop: the
  // ghosts' positions every step), the pair computation, the thermo sums and the rebuild votes
  double integrate_s = 0, migrate_s = 0, exchange_s = 0, compute_s = 0, reduce_s = 0;
  std::array<int, 3> ranks{};
  std::string loop = "cells";  // cells | list
  long rebuilds = 0;           // list loop: list rebuilds in the loop
  long redistributions = 0;    // list loop: those with migration and a new ghost layer (redistribute())
  long pair_checks = 0;        // list loop, pair trigger: steps whose rebuild vote waited for the pair check
  std::string transport;       // list loop: how ghosts' positions travel (DistributedGrid::halo_transport())
  std::string overlap_mode = "none";  // list loop: on, off or pack (--overlap, auto resolved)
  bool device_list = false;    // list loop: the list decided its rebuilds on the backend, no vote (one rank)
  bool ghosts_ahead = false;   // list loop: the ghosts' positions sent before the kick (--ghosts-ahead)
  double ghosts = 0;           // ghosts per rank at the end, the mean over the ranks
  // list loop with --breakdown: one rebuild's parts in seconds, the largest over the ranks (classification, migration,
  // ghost layer, grid build; DistributedGrid::rebuild_times()), and the list's build
  std::array<double, 5> rebuild_parts{};
  // of each of the first four, the time in MPI calls (RebuildTimes::in_mpi): the least and the most over the ranks
  std::array<double, 4> rebuild_mpi_least{}, rebuild_mpi_most{};
  // the parts of the migration and of the grid build (RebuildTimes::migrate_parts, build_parts), the most over the
  // ranks
  std::array<double, 3> migrate_parts{}, build_parts{};
  // atoms that changed ranks, over all ranks: through the GPUs' memory (inboxes), through the host
  std::array<long, 2> arrivals{};
};

/// Clock of one phase: wall time over the loop; with `sync` the backend is waited for at the end of the phase (GPU
/// work is asynchronous: without it, a phase's kernels are charged to the next phase that waits).
template <class B>
struct Phases {
  bool sync = false;
  template <class Work>
  void operator()(double& total, Work&& work) const {
    const double t = MPI_Wtime();
    work();
    if (sync) B::synchronize();
    total += MPI_Wtime() - t;
  }
};

/// The largest of each phase over the ranks, into `out` (collective).
inline void reduce_phases(MPI_Comm comm, const double (&mine)[5], Outcome& out) {
  double most[5] = {0, 0, 0, 0, 0};
  MPI_Reduce(mine, most, 5, MPI_DOUBLE, MPI_MAX, 0, comm);
  out.integrate_s = most[0], out.migrate_s = most[1], out.exchange_s = most[2], out.compute_s = most[3];
  out.reduce_s = most[4];
}

/// Thermo line from the sums over all ranks (rank 0 keeps and prints it).
inline lj::Thermo thermo_line(long step, double v2, double e_pair, double virial, std::size_t n, double volume) {
  const double ke = 0.5 * v2, dof = 3.0 * static_cast<double>(n) - 3.0;
  lj::Thermo t;
  t.step = step;
  t.temp = 2 * ke / dof;
  t.e_pair = e_pair / static_cast<double>(n);
  t.tot_eng = (ke + e_pair) / static_cast<double>(n);
  t.press = (2 * ke + virial) / (3 * volume);
  return t;
}

inline void print_header(int rank, std::size_t n, int size, const std::array<int, 3>& ranks, double ghost,
                         const char* backend, const char* loop, const std::string& precision) {
  if (rank != 0) return;
  std::printf("cellint_lj_mpi: %zu atoms, %d ranks (%d x %d x %d), ghost layer %.3g, backend %s, %s loop, %s\n", n,
              size, ranks[0], ranks[1], ranks[2], ghost, backend, loop, precision.c_str());
  std::printf("%8s %12s %12s %12s %12s\n", "Step", "Temp", "E_pair", "TotEng", "Press");
}

/// The cell loop: state on the host, migrate() and exchange() every step, a cell strategy for the forces.
template <class B, class Real, class Acc>
Outcome simulate_cells(MPI_Comm comm, const Run& r, const lj::Lattice& lat, bool print) {
  using Grid = cellint::mpi::DistributedGrid<B, Real, 3>;
  using LJ = cellint::LennardJones<Real, 3, Acc, CELLINT_LJ_MATH>;
  const lj::Options& o = r.o;
  const auto box = lj::box_of<Real>(lat);
  Grid g(comm, box, static_cast<Real>(o.cutoff), r.ranks);
  const LJ f = LJ::make(Real(1), Real(1), static_cast<Real>(o.cutoff), o.shifted);
  const std::size_t n = lat.x[0].size();
  // fields: velocity (0..2), force (3..5): they move with the atom
  auto& p = g.particles();
  p.fields = 6;
  for (std::size_t i = 0; i < n; ++i)
    if (static_cast<int>(i % static_cast<std::size_t>(g.size())) == g.rank()) {
      const Real x[3] = {static_cast<Real>(lat.x[0][i]), static_cast<Real>(lat.x[1][i]),
                         static_cast<Real>(lat.x[2][i])};
      const double fields[6] = {lat.v[0][i], lat.v[1][i], lat.v[2][i], 0, 0, 0};
      p.push(i, x, fields);
    }
  g.migrate(true);
  if (print)
    print_header(g.rank(), n, g.size(), g.decomposition().ranks, static_cast<double>(g.decomposition().ghost),
                 B::name(), "cells", o.precision);
  Outcome out;
  const double volume = lat.volume();
  double t[5] = {0, 0, 0, 0, 0};  // integrate, migrate, exchange, compute, reduce
  const Phases<B> timed{false};   // (the cell loop waits for its results every step)
  // forces of the own atoms into fields 3..5; on thermo steps also the energy and virial, summed over the ranks
  auto forces = [&](bool sums, double* e_pair, double* virial) {
    timed(t[2], [&] { g.exchange(); });
    double e = 0, w = 0;
    timed(t[3], [&] {
      const auto acc = g.interact(f);
      for (std::size_t i = 0; i < p.size(); ++i) {
        for (int d = 0; d < 3; ++d) p.field[6 * i + 3 + static_cast<std::size_t>(d)] = acc[i].force[d];
        e += acc[i].energy;
        w += acc[i].virial;
      }
    });
    if (sums)
      timed(t[4], [&] {
        *e_pair = g.sum(e);
        *virial = g.sum(w);
      });
  };
  auto thermo = [&](long step, double e_pair, double virial) {
    double k = 0;
    for (std::size_t i = 0; i < p.size(); ++i)
      for (int d = 0; d < 3; ++d) k += p.field[6 * i + static_cast<std::size_t>(d)] * p.field[6 * i + d];
    double v2 = 0;
    timed(t[4], [&] { v2 = g.sum(k); });
    const lj::Thermo th = thermo_line(step, v2, e_pair, virial, n, volume);
    if (g.rank() == 0) {
      out.thermo.push_back(th);
      if (print) std::printf("%8ld %12.8g %12.8g %12.8g %12.8g\n", th.step, th.temp, th.e_pair, th.tot_eng, th.press);
    }
  };
  double e_pair = 0, virial = 0;
  forces(true, &e_pair, &virial);
  thermo(0, e_pair, virial);
  for (double& x : t) x = 0;
  MPI_Barrier(comm);
  const double t0 = MPI_Wtime();
  for (long step = 1; step <= o.steps; ++step) {
    const bool thermo_step = step == o.steps || (o.thermo > 0 && step % o.thermo == 0);
    timed(t[0], [&] {
      for (std::size_t i = 0; i < p.size(); ++i)
        for (int d = 0; d < 3; ++d) {
          double* v = &p.field[6 * i + static_cast<std::size_t>(d)];
          *v += 0.5 * o.dt * v[3];
          p.x[d][i] += static_cast<Real>(o.dt * *v);
        }
    });
    timed(t[1], [&] { g.migrate(); });
    forces(thermo_step, &e_pair, &virial);
    timed(t[0], [&] {
      for (std::size_t i = 0; i < p.size(); ++i)
        for (int d = 0; d < 3; ++d) p.field[6 * i + d] += 0.5 * o.dt * p.field[6 * i + 3 + static_cast<std::size_t>(d)];
    });
    if (thermo_step) thermo(step, e_pair, virial);
  }
  MPI_Barrier(comm);
  out.loop_s = MPI_Wtime() - t0;
  reduce_phases(comm, t, out);
  out.ranks = g.decomposition().ranks;
  out.ghosts = g.sum(static_cast<double>(g.ghosts().size())) / g.size();
  // final positions, gathered by id on rank 0
  std::vector<std::array<double, 3>> x(p.size());
  for (std::size_t i = 0; i < p.size(); ++i) x[i] = {double(p.x[0][i]), double(p.x[1][i]), double(p.x[2][i])};
  out.final_x = g.gather(x);
  return out;
}

/// lj::KickDrift, then lj::MovedTooFar at the new positions: one pass over the atoms.
template <class Real, class Acc, class Accum>
struct KickDriftMoved {
  lj::KickDrift<Real, Acc, Accum> kick;
  lj::MovedTooFar<Real> moved;
  const Index* original;  // the grid's sorted slot -> user index: owned atoms first, then ghosts
  Index owned;
  template <class A>
  CELLINT_HD void operator()(A& a, Index i) const {
    if (original[i] >= owned) return;  // a ghost (with --ghosts-ahead its position may be arriving)
    kick(a, i);
    moved(a, i);
  }
};

/// Zero for the ghosts' slots: a half list gives each ghost its shares of its pairs with owned atoms (Newton's third
/// law), which no sum or kick of this rank may read.
template <class T>
struct ClearGhosts {
  T* values;
  const Index* original;  // the grid's sorted slot -> user index: owned atoms first, then ghosts
  Index owned;
  template <class A>
  CELLINT_HD void operator()(A&, Index i) const {
    if (original[i] >= owned) values[i] = T{};
  }
};

/// lj::KickDrift's position of a slot after the drift, without moving it: the ghosts' positions packed ahead of the
/// kick (DistributedGrid::send_ghosts_ahead()), the same arithmetic on the same values.
template <class Real, class Acc, class Accum>
struct DriftAhead {
  lj::KickDrift<Real, Acc, Accum> kick;
  CELLINT_HD void operator()(Index i, Real (&x)[3]) const {
    for (int d = 0; d < 3; ++d) {
      const Acc vi = kick.velocity(i, d);
      x[d] = kick.drifted(x[d], vi);
    }
  }
};

/// The list loop: positions and velocities stay in the rank's grid on the backend; ghosts' positions travel every
/// step; migration, the ghost choice and the list's rebuild happen together when an atom has moved more than skin / 2.
template <class B, class Real, class Acc>
class ListLoop {
 public:
  using Grid = cellint::mpi::DistributedGrid<B, Real, 3>;
  using LJ = cellint::LennardJones<Real, 3, Acc, CELLINT_LJ_MATH>;
  using Accum = typename LJ::Accum;
  using ForcesOnly = cellint::LennardJonesForces<Real, 3, Acc, CELLINT_LJ_MATH>;
  using Force = typename ForcesOnly::Accum;
  using List = cellint::NeighborList<B, Real, 3>;

  ListLoop(MPI_Comm comm, const Run& r, const lj::Lattice& lat, bool half)
      : r_(r),
        half_(half),
        skin_(r.o.skin >= 0 ? r.o.skin : 0.3),
        margin_(r.ghost_margin >= 0 ? r.ghost_margin : 3 * skin_),
        g_(comm, lj::box_of<Real>(lat), static_cast<Real>(r.o.cutoff), r.ranks, static_cast<Real>(skin_ + margin_)),
        lj_(LJ::make(Real(1), Real(1), static_cast<Real>(r.o.cutoff), r.o.shifted)),
        forces_only_(lj_),
        n_(lat.x[0].size()),
        volume_(lat.volume()) {
    const auto& dec = g_.decomposition();
    for (int d = 0; d < 3; ++d) {
      counted_[d] = dec.ranks[static_cast<std::size_t>(d)] > 1 || !dec.global.periodic[d];
      solo_ = solo_ && !counted_[d];
    }
    device_ = solo_ && r.overlap_mode == "auto";
    auto& p = g_.particles();
    p.fields = 3;  // velocity: it moves with the atom
    for (std::size_t i = 0; i < n_; ++i)
      if (static_cast<int>(i % static_cast<std::size_t>(g_.size())) == g_.rank()) {
        const Real x[3] = {static_cast<Real>(lat.x[0][i]), static_cast<Real>(lat.x[1][i]),
                           static_cast<Real>(lat.x[2][i])};
        const double v[3] = {lat.v[0][i], lat.v[1][i], lat.v[2][i]};
        p.push(i, x, v);
      }
    partials_.resize(3 * lanes1);
    totals_.resize(3 * lanes2);
    moved_.resize(3);
    g_.migrate(true);
    rebuild(true);
  }

  Outcome run(bool print) {
    const lj::Options& o = r_.o;
    Outcome out;
    out.loop = "list";
    out.list = half_ ? "half" : "full";
    if (print)
      print_header(g_.rank(), n_, g_.size(), g_.decomposition().ranks, static_cast<double>(g_.decomposition().ghost),
                   B::name(), half_ ? "half list" : "list", o.precision);
    forces();
    thermo(out, 0, print);
    if (device_) look_at_list();
    for (double& x : t_) x = 0;
    const long rebuilds0 = rebuilds_, moves0 = redistributions_, checks0 = pair_checks_;
    g_.profile(o.breakdown);
    list_s_ = 0;
    MPI_Barrier(g_.comm());
    B::synchronize();
    const double t0 = MPI_Wtime();
    const Phases<B> timed{o.breakdown};
    if (r_.timeline) tl_.enable();
    const bool enqueued = g_.ghosts_enqueued(), host = std::string(g_.halo_transport()) == "host memory";
    vote_beside_ = r_.overlap && (enqueued || host);
    // (a half list adds each pair to both its atoms, whichever part its row is in: every row at once)
    pack_ = half_ || r_.overlap_mode == "pack" || (r_.overlap_mode == "auto" && enqueued);
    out.overlap_mode = device_ ? "none" : !r_.overlap ? "off" : pack_ ? "pack" : "on";
    out.device_list = device_;
    out.ghosts_ahead = r_.ghosts_ahead && !device_ && g_.size() > 1;
    for (long step = 1; step <= o.steps; ++step) {
      const bool thermo_step = step == o.steps || (o.thermo > 0 && step % o.thermo == 0);
      if (device_) {
        // One rank on a periodic box: nothing for the host to decide (no ghosts, no redistribution). The list checks
        // the displacements and rebuilds on the backend (update()), as cellint_lj's does, and no step waits for it.
        timed(t_[0], [&] { kick_drift(); });
        timed(t_[1], [&] { list_->update(g_.grid()); });
        timed(t_[3], [&] { forces(); });
        kick_pending_ = true;
        if (thermo_step) {
          timed(t_[0], [&] { settle_kick(); });
          timed(t_[1], [&] { look_at_list(); });
          thermo(out, step, print);
        }
        continue;
      }
      tl_.begin();
      tl_.mark(0, g_.grid().stream());
      // --ghosts-ahead: the ghosts' positions packed as the kick will move them (and, GPU to GPU with flags, sent and
      // unpacked beside it); every path below calls update_ghosts() (or redistribute()), which finishes the exchange
      if (out.ghosts_ahead) timed(t_[2], [&] { g_.send_ghosts_ahead(DriftAhead<Real, Acc, Force>{next_kick()}); });
      // v += dt/2 F/m (dt F/m: the previous step's second half too); x += dt v (ghosts: v = 0); the displacements
      timed(t_[0], [&] { kick_drift(); });
      tl_.mark(1, g_.grid().stream());
      // The vote: any atom on any rank past skin / 2, or past the margin. Beside the ghosts' exchange where that is
      // enqueued without waiting for the GPUs (peer copies and flags or events; host memory), else before it.
      Moved moved;
      bool voted = false, exchanged = false;
      bool interior_checked = false, border_checked = false;  // (packed with the displacement check: the pair check's)
      auto vote = [&](typename B::Stream flags) {
        timed(t_[4], [&] { moved = moved_too_far(flags); });
        tl_.previous_done();
        voted = true;
      };
      if (!vote_beside_) vote(g_.grid().stream());
      if (r_.overlap && !moved.any()) {
        // the ghosts' new positions travel while the ranks vote; then, on a step without a rebuild, the owned atoms'
        // packing (or the interior rows) beside them and the ghosts' packing (and the border rows) as they arrive
        exchanged = true;
        const double voting0 = t_[4];  // (the vote inside is charged to t_[4], not to the ghost positions' phase)
        timed(t_[2], [&] {
          g_.update_ghosts(
              [&] {
                if (!voted && pack_) {  // the owned atoms' packing ahead of the vote (a rebuild packs again)
                  tl_.host_mark(7);     // (the host: the exchange is enqueued)
                  const auto flags = flags_stream();
                  tl_.mark(2, g_.grid().stream());
                  list_->update(g_.grid(), cellint::ListPart::Interior, pairs_);
                  interior_checked = pairs_;
                  tl_.mark(3, g_.grid().stream());
                  vote(flags);
                  return;
                }
                tl_.host_mark(7);
                if (!voted) vote(g_.grid().stream());
                if (moved.check_pairs) {
                  list_->update(g_.grid(), cellint::ListPart::Interior, true);
                  interior_checked = true;
                }
                if (moved.any()) return;
                tl_.mark(2, g_.grid().stream());
                list_->update(g_.grid(), cellint::ListPart::Interior);
                if (!pack_) forces(cellint::ListPart::Interior);
                tl_.mark(3, g_.grid().stream());
              },
              [&] {
                if (moved.check_pairs) {
                  list_->update(g_.grid(), cellint::ListPart::Border, true);
                  border_checked = true;
                }
                if (moved.any()) return;
                tl_.mark(4, g_.grid().stream());  // (the exchange's stream: the ghosts are in)
                list_->update(g_.grid(), cellint::ListPart::Border);
                if (!pack_) forces(cellint::ListPart::Border);
              });
          if (moved.any()) return;
          tl_.mark(5, g_.grid().stream());
          if (pack_) forces();  // every row at once
          tl_.mark(6, g_.grid().stream());
        });
        t_[2] -= t_[4] - voting0;
      } else if (!moved.any()) {
        tl_.host_mark(7);
        tl_.mark(2, g_.grid().stream());
        timed(t_[2], [&] { g_.update_ghosts(); });  // the ghosts' new positions
        tl_.mark(3, g_.grid().stream());
        tl_.mark(4, g_.grid().stream());
        timed(t_[3], [&] { list_->update(g_.grid()); });  // packs the positions for the pair kernel
        tl_.mark(5, g_.grid().stream());
        timed(t_[3], [&] { forces(); });
        tl_.mark(6, g_.grid().stream());
      }
      if (moved.check_pairs) {  // the pair check, then a second vote: a rebuild only where a pair may be missed
        ++pair_checks_;
        bool needed = true;
        timed(t_[4], [&] { needed = rebuild_needed(interior_checked, border_checked, exchanged); });
        if (!needed) {
          moved.relist = moved.redistribute = false;
          timed(t_[3], [&] { forces(); });
        }
      }
      moved.expect_bound();
      if (moved.redistribute) {
        timed(t_[1], [&] { rebuild(false); });  // migrate, new ghosts, list
        timed(t_[3], [&] { forces(); });
      } else if (moved.relist) {  // the same atoms and ghosts: the ghosts' positions (unless already), the list
        timed(t_[1], [&] {
          if (!exchanged) g_.update_ghosts();
          relist();
        });
        timed(t_[3], [&] { forces(); });
      }
      kick_pending_ = true;  // v += dt/2 F/m: with the next step's first half kick, or now where v is read
      if (thermo_step) {
        timed(t_[0], [&] { settle_kick(); });
        thermo(out, step, print);
      }
    }
    settle_kick();
    B::synchronize();
    MPI_Barrier(g_.comm());
    out.loop_s = MPI_Wtime() - t0;  // (device_: the last step, a thermo step, looked at the list)
    tl_.finish();
    if (tl_.on()) print_timeline();
    reduce_phases(g_.comm(), t_, out);
    out.ranks = g_.decomposition().ranks;
    out.rebuilds = rebuilds_ - rebuilds0;
    out.redistributions = redistributions_ - moves0;
    out.pair_checks = pair_checks_ - checks0;
    if (o.breakdown && out.rebuilds > 0) {
      const auto& rt = g_.rebuild_times();
      const double mine[5] = {rt.classify, rt.migrate, rt.ghosts, rt.build, list_s_};
      double most[5] = {0, 0, 0, 0, 0};
      MPI_Allreduce(mine, most, 5, MPI_DOUBLE, MPI_MAX, g_.comm());
      // (redistribute()'s parts per redistribution, the list's build per rebuild)
      for (int q = 0; q < 4; ++q)
        out.rebuild_parts[static_cast<std::size_t>(q)] =
            out.redistributions > 0 ? most[q] / static_cast<double>(out.redistributions) : 0.0;
      out.rebuild_parts[4] = most[4] / static_cast<double>(out.rebuilds);
      std::array<double, 4> least_mpi{}, most_mpi{};
      MPI_Allreduce(rt.in_mpi.data(), least_mpi.data(), 4, MPI_DOUBLE, MPI_MIN, g_.comm());
      MPI_Allreduce(rt.in_mpi.data(), most_mpi.data(), 4, MPI_DOUBLE, MPI_MAX, g_.comm());
      const double per = out.redistributions > 0 ? 1.0 / static_cast<double>(out.redistributions) : 0.0;
      for (std::size_t q = 0; q < 4; ++q) {
        out.rebuild_mpi_least[q] = least_mpi[q] * per;
        out.rebuild_mpi_most[q] = most_mpi[q] * per;
      }
      MPI_Allreduce(rt.build_parts.data(), out.build_parts.data(), 3, MPI_DOUBLE, MPI_MAX, g_.comm());
      MPI_Allreduce(rt.migrate_parts.data(), out.migrate_parts.data(), 3, MPI_DOUBLE, MPI_MAX, g_.comm());
      for (double& t : out.build_parts) t *= per;
      for (double& t : out.migrate_parts) t *= per;
    }
    MPI_Allreduce(g_.rebuild_times().arrivals.data(), out.arrivals.data(), 2, MPI_LONG, MPI_SUM, g_.comm());
    out.transport = g_.halo_transport();
    out.ghosts = g_.sum(static_cast<double>(g_.ghost_count())) / g_.size();
    g_.pull_positions();
    const auto& p = g_.particles();
    std::vector<std::array<double, 3>> x(p.size());
    for (std::size_t i = 0; i < p.size(); ++i) x[i] = {double(p.x[0][i]), double(p.x[1][i]), double(p.x[2][i])};
    out.final_x = g_.gather(x);
    return out;
  }

 private:
  static constexpr Index lanes1 = B::is_gpu_like ? Index(1) << 14 : Index(64), lanes2 = 64;

  std::array<Acc*, 3> velocities() {
    auto& grid = g_.grid();
    return {grid.attribute(vel_[0]), grid.attribute(vel_[1]), grid.attribute(vel_[2])};
  }

  // --timeline: each rank's mean timeline of the steps without a rebuild, printed by rank 0 (collective)
  void print_timeline() {
    if (device_) {  // (one rank)
      std::printf("GPU timeline: none (one rank on a periodic box: no step waits for the GPU; --overlap pack runs the "
                  "voting loop, which records one)\n");
      return;
    }
    double mine[10] = {static_cast<double>(tl_.steps())};
    for (std::size_t k = 1; k < 10; ++k) mine[k] = tl_.mean_ms(k);
    std::vector<double> all(10 * static_cast<std::size_t>(g_.size()));
    MPI_Gather(mine, 10, MPI_DOUBLE, all.data(), 10, MPI_DOUBLE, 0, g_.comm());
    if (g_.rank() != 0) return;
    std::printf("GPU timeline of a step without a rebuild (ms from the step's start, the mean over such steps):\n");
    for (int q = 0; q < g_.size(); ++q) {
      const double* t = &all[10 * static_cast<std::size_t>(q)];
      std::printf("  rank %d (%.0f steps): kick and drift done %.4f, pairs start %.4f, ", q, t[0], t[1], t[2]);
      if (!r_.overlap)
        std::printf("ghosts in %.4f, positions packed %.4f, rows done %.4f\n", t[3], t[5], t[6]);
      else if (pack_)
        std::printf("owned packed %.4f, ghosts in %.4f, rows start %.4f, rows done %.4f\n", t[3], t[4], t[5], t[6]);
      else
        std::printf("interior rows done %.4f, ghosts in %.4f, border rows done %.4f, step done %.4f\n", t[3], t[4],
                    t[5], t[6]);
      if (r_.overlap)  // (host_mark(): when the host got there; without overlap the vote comes first)
        std::printf("    the host: exchange enqueued %.4f, the kick's flags read %.4f, the vote done %.4f\n", t[7],
                    t[8], t[9]);
    }
  }

  // Velocity Verlet over the owned atoms (the ghosts, v = 0 and F = 0, stay where update_ghosts() put them; with
  // --ghosts-ahead theirs may be arriving while the kick runs, so it neither reads nor writes them, and their
  // displacements are their owners', checked on the owners' ranks). kick_drift(): v += dt/2 F/m, or dt F/m where the
  // previous step's second half kick is pending (the two are one kernel, as leapfrog); x += dt v; and in the same pass
  // the displacement flags that moved_too_far() reads. (One rank on a periodic box, device_, has no ghosts.)
  lj::KickDrift<Real, Acc, Force> next_kick() {
    auto& grid = g_.grid();
    const auto v = velocities();
    return {{grid.positions(0), grid.positions(1), grid.positions(2)},
            {v[0], v[1], v[2]},
            forces_.data(),
            static_cast<Acc>((kick_pending_ ? 1.0 : 0.5) * r_.o.dt),
            static_cast<Acc>(r_.o.dt)};
  }
  void kick_drift() {
    auto& grid = g_.grid();
    const auto kick = next_kick();
    kick_pending_ = false;
    if (device_) {  // (no vote: no flags)
      cellint::detail::parallel_for<B>(grid.size(), kick, grid.stream());
      return;
    }
    moved_.fill_bytes(0, grid.stream());
    const Real half = static_cast<Real>(0.5 * skin_),
               far = static_cast<Real>(r_.redistribute_any_step ? 0.5 * (skin_ + margin_) : std::max(0.0, relist_far()));
    KickDriftMoved<Real, Acc, Force> k{kick,
                                       {{grid.positions(0), grid.positions(1), grid.positions(2)},
                                        {ref_[0].data(), ref_[1].data(), ref_[2].data()},
                                        half * half,
                                        moved_.data()},
                                       grid.original_index(),
                                       g_.owned()};
    if (margin_ > 0 && !solo_) {  // (else every rebuild redistributes, or none: the second reference is not read)
      for (int d = 0; d < 3; ++d) k.moved.ref2[d] = counted_[d] ? moved_ref_[d].data() : nullptr;
      k.moved.limit2b = far * far;
      // the bound that the rule keeps (moved_too_far() checks it), with 1 % of the skin for rounding
      const Real bound = static_cast<Real>(0.5 * (skin_ + margin_) + 0.01 * skin_);
      k.moved.limit2c = bound * bound;
    }
    cellint::detail::parallel_for<B>(grid.size(), k, grid.stream());
  }
  // The second half kick of the last step, where the velocities are read.
  void settle_kick() {
    if (!kick_pending_) return;
    auto& grid = g_.grid();
    const auto v = velocities();
    if (half_) clear_ghosts(forces_.data());  // (ghosts: v = 0, as F = 0 keeps it)
    lj::Kick<Acc, Force> k{{v[0], v[1], v[2]}, forces_.data(), static_cast<Acc>(0.5 * r_.o.dt)};
    cellint::detail::parallel_for<B>(grid.size(), k, grid.stream());
    kick_pending_ = false;
  }

  // What the ranks' displacements ask for: a new list (an atom moved more than skin / 2 since the list's build), and a
  // redistribution with it. With a ghost layer of cutoff + skin + margin, a list built over the rank's atoms and ghosts
  // holds every pair of its rows while no atom has moved more than (skin + margin) / 2 since the last redistribution
  // (every atom within reach of an owned one is then in the rank's grid, owned atoms having moved out of their sub-box
  // by that much at most). So a rebuild redistributes too when an atom has moved more than margin / 2 since the last
  // one (the list's rule keeps every atom within skin / 2 of its place at the rebuild until the next; with the pair
  // check, within max_move_, a little more, and the bound is (skin + margin) / 2 - max_move_): redistributions
  // come only with list rebuilds, never between two (--redistribute relist, the default). --redistribute any (the
  // rule before it) redistributes at any step where an atom has moved more than (skin + margin) / 2, which rebuilds
  // the list there too, out of its own rhythm. The moves are measured along the axes that the ghost layer or an open
  // face bounds (counted_: a move along a periodic axis with one rank leaves every neighbour in the rank's grid); with
  // none (one rank on a periodic box) no rebuild redistributes.
  // With the pair trigger a list rebuild that the first vote asks for waits for the pair check (check_pairs), after
  // the ghosts' positions, and a second vote: the rows may still hold every pair within the cutoff.
  struct Moved {
    bool relist = false, redistribute = false, check_pairs = false;
    bool past_bound = false;  // an atom moved more than (skin + margin) / 2 since the last redistribution
    bool any() const { return relist || redistribute; }
    // (after the votes: every rank throws alike, no message in flight)
    void expect_bound() const {
      if (past_bound && !redistribute)
        throw std::logic_error(
            "an atom moved more than (skin + margin) / 2 since the last redistribution and the step does not "
            "redistribute: its rank's ghost layer may miss a pair (a defect of the rebuild rule)");
    }
  };
  // A stream ordered after the kick only, for reading its flags while the grid's stream has more work (GPU backends:
  // a side stream, made at first use; else the grid's stream).
  typename B::Stream flags_stream() {
    auto& grid = g_.grid();
    if constexpr (VoteStream::value) {
      if (!vote_stream_) vote_stream_ = std::make_unique<typename VoteStream::type>();
      vote_stream_->fork(grid.stream());
      return vote_stream_->get();
    } else {
      return grid.stream();
    }
  }
  Moved moved_too_far(typename B::Stream s) {  // (waits for stream s; one MPI_Allreduce)
    unsigned* mine = flags_host_.reserve(3);   // (page-locked: the copy needs no staging by the driver)
    unsigned any[3] = {0, 0, 0};
    B::copy(mine, moved_.data(), 3 * sizeof(unsigned), cellint::CopyKind::DeviceToHost, s);  // (kick_drift()'s flags)
    tl_.host_mark(8);
    MPI_Allreduce(mine, any, 3, MPI_UNSIGNED, MPI_MAX, g_.comm());
    tl_.host_mark(9);
    Moved m;
    m.relist = any[0] != 0;
    m.redistribute = r_.redistribute_any_step ? any[1] != 0 || (margin_ <= 0 && m.relist)
                                              : m.relist && (margin_ <= 0 || relist_far() <= 0 || any[1] != 0);
    if (solo_) m.redistribute = false;  // (no ghost layer, nothing migrates, the list wraps periodic positions)
    m.check_pairs = pairs_ && m.relist && !(r_.redistribute_any_step && m.redistribute);
    m.past_bound = any[2] != 0;
    return m;
  }

  // With redistributions at list rebuilds: how far an atom may have moved since the last redistribution at a list
  // rebuild that does not redistribute ((skin + margin) / 2 less the farthest any list lets an atom move before its
  // next rebuild: margin / 2 with the half-skin trigger).
  double relist_far() const { return 0.5 * (skin_ + margin_) - max_move_; }

  // The pair check of every rank's list (both parts packed with the check; the ghosts' positions current), then the
  // ranks' vote: whether any list may miss a pair. (Ranks whose list checks no pairs ask for a rebuild when an atom
  // passed skin / 2.)
  bool rebuild_needed(bool interior_checked, bool border_checked, bool& exchanged) {
    auto& grid = g_.grid();
    if (!interior_checked) list_->update(grid, cellint::ListPart::Interior, true);
    if (!exchanged) {
      g_.update_ghosts();
      exchanged = true;
    }
    if (!border_checked) list_->update(grid, cellint::ListPart::Border, true);
    const unsigned mine = list_->rebuild_needed(grid) ? 1u : 0u;
    unsigned any = 0;
    MPI_Allreduce(&mine, &any, 1, MPI_UNSIGNED, MPI_MAX, g_.comm());
    return any != 0;
  }

  // Where the list decides on the backend: its rebuilds since the last look (waits for the backend; grows the rows
  // where one overflowed, and reports a non-finite position).
  void look_at_list() {
    const long builds = list_->check(g_.grid()).builds;
    rebuilds_ += builds - builds_seen_;
    builds_seen_ = builds;
  }

  // A new list over the same owned atoms and ghosts (their positions current), and its reference positions.
  void relist() {
    auto& grid = g_.grid();
    const double t0 = MPI_Wtime();
    list_->build(grid);
    if (r_.o.breakdown) {
      B::synchronize();
      list_s_ += MPI_Wtime() - t0;
    }
    keep_positions(ref_);
    ++rebuilds_;
  }
  void keep_positions(cellint::Buffer<B, Real> (&to)[3]) {
    auto& grid = g_.grid();
    const std::size_t all = static_cast<std::size_t>(grid.size());
    for (int d = 0; d < 3; ++d) {
      to[d].resize_with_room(std::max<std::size_t>(all, 1));  // (the count creeps: room saves reallocations)
      B::copy(to[d].data(), grid.positions(d), sizeof(Real) * all, cellint::CopyKind::DeviceToDevice, grid.stream());
    }
  }

  // migration, the ghost layer, velocities and the list: on the host the first time (exchange()), then on the backend
  // (redistribute(): only atoms that change ranks and ghosts cross to the host)
  void rebuild(bool first) {
    auto& grid = g_.grid();
    if (first) {
      const auto& p = g_.particles();
      g_.exchange();
      const std::size_t all = static_cast<std::size_t>(grid.size());
      for (int d = 0; d < 3; ++d) {
        std::vector<Acc> v(all, Acc(0));  // ghosts: 0
        for (std::size_t i = 0; i < p.size(); ++i)
          v[i] = static_cast<Acc>(p.field[3 * i + static_cast<std::size_t>(d)]);
        vel_[static_cast<std::size_t>(d)] = grid.template attach<Acc>(v.data());
      }
    } else {
      g_.redistribute(vel_);  // (ghosts' velocities: 0)
    }
    const std::size_t all = static_cast<std::size_t>(grid.size());
    const Index own = g_.owned();
    if (!list_) {
      cellint::ListOptions lo;
      // update(grid) checks the displacements at every call where the list decides (device_), else never: the ranks
      // decide together (moved_too_far)
      lo.every = device_ ? 1 : INT_MAX;
      lo.trigger = lj::trigger_of(r_.o.neigh_trigger);
      lo.half = half_;
      list_ = std::make_unique<List>(grid, static_cast<Real>(skin_), lo, own);
    } else {
      const double t0 = MPI_Wtime();
      list_->set_targets(own, !pack_);  // (pack computes every row at once: no interior and border rows to sort)
      list_->build(grid);
      if (r_.o.breakdown) {
        B::synchronize();
        list_s_ += MPI_Wtime() - t0;
      }
    }
    forces_.resize_with_room(std::max<std::size_t>(all, 1));
    energies_.resize_with_room(std::max<std::size_t>(all, 1));
    keep_positions(ref_);
    if (margin_ > 0 && !solo_) keep_positions(moved_ref_);
    // the pair check where any rank's list does it (Auto: by its particle count), and the farthest move it allows
    double mine[2] = {list_->checks_pairs() ? 1.0 : 0.0, static_cast<double>(list_->max_move())}, most[2] = {0, 0};
    MPI_Allreduce(mine, most, 2, MPI_DOUBLE, MPI_MAX, g_.comm());
    pairs_ = most[0] != 0;
    max_move_ = most[1];
    if (pairs_ && !solo_ && !r_.redistribute_any_step && relist_far() < 0) {
      // the margin leaves no room for the pair check's longer moves (a margin of 0: every list rebuild redistributes):
      // the half-skin rule, whose moves stay within skin / 2
      pairs_ = false;
      max_move_ = 0.5 * skin_;
    }
    ++rebuilds_;
    ++redistributions_;
  }

  // The ghosts' slots of a per-slot array set to zero (a half list's shares, see ClearGhosts).
  template <class T>
  void clear_ghosts(T* values) {
    auto& grid = g_.grid();
    cellint::detail::parallel_for<B>(grid.size(), ClearGhosts<T>{values, grid.original_index(), g_.owned()},
                                     grid.stream());
  }

  void forces(cellint::ListPart part = cellint::ListPart::All) {
    cellint::interact(*list_, g_.grid(), forces_only_, forces_.data(), part);
  }

  // energies and velocities summed on the backend (ghosts add nothing: v = 0, no rows), then over the ranks
  void thermo(Outcome& out, long step, bool print) {
    auto& grid = g_.grid();
    cellint::interact(*list_, grid, lj_, energies_.data());
    if (half_) clear_ghosts(energies_.data());  // (their shares are their owners' ranks' to count)
    const auto v = velocities();
    const Index n = grid.size(), l1 = std::max<Index>(1, std::min<Index>(n, lanes1));
    lj::ThermoPartials<Acc, Accum> k1{{v[0], v[1], v[2]}, energies_.data(), n, l1, B::is_gpu_like, partials_.data()};
    cellint::detail::parallel_for<B>(l1, k1, grid.stream(), (n + l1 - 1) / l1);
    const Index l2 = std::min<Index>(l1, lanes2);
    cellint::detail::parallel_for<B>(l2, lj::SumTriples{partials_.data(), l1, l2, totals_.data()}, grid.stream());
    std::vector<double> h(3 * static_cast<std::size_t>(l2));
    B::copy(h.data(), totals_.data(), sizeof(double) * h.size(), cellint::CopyKind::DeviceToHost, grid.stream());
    double mine[3] = {0, 0, 0}, sum[3] = {0, 0, 0};
    for (Index i = 0; i < l2; ++i)
      for (int q = 0; q < 3; ++q) mine[q] += h[3 * static_cast<std::size_t>(i) + static_cast<std::size_t>(q)];
    MPI_Allreduce(mine, sum, 3, MPI_DOUBLE, MPI_SUM, g_.comm());
    const lj::Thermo th = thermo_line(step, sum[0], sum[1], sum[2], n_, volume_);
    if (g_.rank() == 0) {
      out.thermo.push_back(th);
      if (print) std::printf("%8ld %12.8g %12.8g %12.8g %12.8g\n", th.step, th.temp, th.e_pair, th.tot_eng, th.press);
    }
  }

  const Run& r_;
  bool half_;  // a half list: each pair with an owned atom once (ghosts' rows empty), every row at once
  double skin_;
  double margin_;  // ghost layer beyond cutoff + skin: list rebuilds without redistribution while atoms stay within it
  Grid g_;
  LJ lj_;
  ForcesOnly forces_only_;
  std::size_t n_;
  double volume_;
  std::unique_ptr<List> list_;
  std::array<cellint::Attribute<Acc>, 3> vel_;
  cellint::Buffer<B, Force> forces_;
  cellint::Buffer<B, Accum> energies_;
  cellint::Buffer<B, Real> ref_[3];        // positions at the list's build
  cellint::Buffer<B, Real> moved_ref_[3];  // positions at the last redistribution
  // The axes along which a move counts towards a redistribution: those split over ranks (the ghost layer and the
  // sub-box's faces) and open ones (an atom outside the box is reported there). Along a periodic axis with one rank
  // the rank's grid is periodic and its list folds any coordinate, so moves along it need no redistribution; with no
  // such axis (one rank, a periodic box: solo_) none ever comes.
  std::array<bool, 3> counted_{};
  bool solo_ = true;
  // solo_ with --overlap auto: no vote; the list checks and rebuilds on the backend (update(grid)), as in cellint_lj
  bool device_ = false;
  long builds_seen_ = 0;  // device_: the list's builds at the last look_at_list()
  cellint::Buffer<B, unsigned> moved_;
  cellint::mpi::detail::HostStaging<B, unsigned> flags_host_;  // moved_ on the host
  cellint::Buffer<B, double> partials_, totals_;
  double t_[5] = {0, 0, 0, 0, 0};
  double list_s_ = 0;  // --breakdown: the list's builds in the loop
  long rebuilds_ = 0, redistributions_ = 0, pair_checks_ = 0;
  bool pairs_ = false;     // some rank's list checks pairs (a rebuild the first vote asks for waits for a second)
  double max_move_ = 0;    // the farthest an atom may move from its place at a list build before the next (any list)
  bool kick_pending_ = false;  // the last step's second half kick is still to be applied
  // the rebuild vote inside update_ghosts(meanwhile) (with overlap, where the exchange is enqueued without waiting for
  // the GPUs: peer copies ordered by flags or events, or host memory); else before the exchange (host-staged messages
  // measured 0.66 -> 1.05 ms a step with it inside, 2 H200s)
  bool vote_beside_ = false;
  // with overlap: the owned atoms' packing beside the exchange, then every row in one kernel (--overlap pack; auto
  // where the exchange is short: 0.06 ms a step, against 0.3 ms through host buffers, which only the interior rows
  // (--overlap on) hide)
  bool pack_ = false;
  // GPU backends: the stream the vote's flags are read on with --overlap pack (flags_stream())
  using VoteStream = cellint::mpi::detail::SideStreamOf<B>;  // (B::SideStream, or a stand-in: value false)
  std::unique_ptr<typename VoteStream::type> vote_stream_;
  cellint::examples::StepTimeline<B, 10> tl_;  // --timeline
};

/// The loop a run uses: none (cells), full or half (list).
template <class B>
std::string loop_of(const Run& r) {
  if (r.o.list != "auto") return r.o.list;
  return B::is_gpu_like ? "full" : "half";
}

template <class B, class Real, class Acc>
Outcome simulate(MPI_Comm comm, const Run& r, const lj::Lattice& lat, bool print) {
  Outcome out;
  if (loop_of<B>(r) != "none") {
    ListLoop<B, Real, Acc> loop(comm, r, lat, loop_of<B>(r) == "half");
    out = loop.run(print);
  } else {
    out = simulate_cells<B, Real, Acc>(comm, r, lat, print);
  }
  int rank = 0, size = 1;
  MPI_Comm_rank(comm, &rank);
  MPI_Comm_size(comm, &size);
  if (print && rank == 0) {
    const long n = static_cast<long>(lat.x[0].size());
    const int steps = r.o.steps;
    std::printf("Loop time of %.6g s on %d ranks for %d steps with %ld atoms: %.4g atom-steps/s\n", out.loop_s, size,
                steps, n, out.loop_s > 0 ? static_cast<double>(n) * steps / out.loop_s : 0.0);
    const double ms = steps > 0 ? 1e3 / steps : 0;
    if (out.loop == "list")
      std::printf(
          "Per step (ms, the slowest rank's%s): pair computation%s %.4g, ghost positions%s %.4g, migration and "
          "rebuilds %.4g (%ld rebuilds, %ld with redistribution, %ld pair checks), integration %.4g, votes and thermo "
          "sums %.4g; %.0f ghosts per rank (%s%s; overlap %s%s)\n",
          r.o.breakdown ? "" : "; without --breakdown GPU work is charged to the phase that waits for it",
          r.overlap && !out.device_list ? " (after rebuilds)" : "", out.compute_s * ms,
          r.overlap && !out.device_list ? " with the rows" : "", out.exchange_s * ms, out.migrate_s * ms, out.rebuilds,
          out.redistributions, out.pair_checks, out.integrate_s * ms, out.reduce_s * ms, out.ghosts,
          out.transport.c_str(), out.ghosts_ahead ? ", sent ahead of the kick" : "", out.overlap_mode.c_str(),
          out.device_list ? "; the list checks and rebuilds on the device, no vote" : "");
    if (out.loop == "list" && r.o.breakdown && out.rebuilds > 0 && !out.device_list) {
      const auto& q = out.rebuild_parts;
      std::printf(
          "One rebuild (ms, the slowest rank's): redistribution's classification %.3g, migration %.3g, ghost layer "
          "%.3g, grid build %.3g (per redistribution); list build %.3g\n",
          1e3 * q[0], 1e3 * q[1], 1e3 * q[2], 1e3 * q[3], 1e3 * q[4]);
      const auto& lo = out.rebuild_mpi_least;
      const auto& hi = out.rebuild_mpi_most;
      std::printf(
          "  of which in MPI calls (ms, the least and the most over the ranks): classification %.3g-%.3g, migration "
          "%.3g-%.3g, ghost layer %.3g-%.3g, grid build %.3g-%.3g\n",
          1e3 * lo[0], 1e3 * hi[0], 1e3 * lo[1], 1e3 * hi[1], 1e3 * lo[2], 1e3 * hi[2], 1e3 * lo[3], 1e3 * hi[3]);
      const auto& b = out.build_parts;
      const auto& g = out.migrate_parts;
      std::printf(
          "  migration (ms): the leaving atoms packed (into inboxes or to the host) %.3g, counts and host messages "
          "%.3g, "
          "the new owned set %.3g; "
          "grid build (ms): the grid %.3g, the carried attributes %.3g, the update plan and peers %.3g\n",
          1e3 * g[0], 1e3 * g[1], 1e3 * g[2], 1e3 * b[0], 1e3 * b[1], 1e3 * b[2]);
      std::printf("  atoms that changed ranks: %ld through the GPUs' memory, %ld through the host\n", out.arrivals[0],
                  out.arrivals[1]);
    }
    if (out.loop != "list")
      std::printf(
          "Per step (ms, the slowest rank's): pair computation %.4g, halo exchange and grid build %.4g, "
          "migration %.4g, integration %.4g, thermo sums %.4g; %.0f ghosts per rank\n",
          out.compute_s * ms, out.exchange_s * ms, out.migrate_s * ms, out.integrate_s * ms, out.reduce_s * ms,
          out.ghosts);
  }
  return out;
}

/// The processor's name (/proc/cpuinfo), for the summary.
std::string cpu_name() {
  FILE* f = std::fopen("/proc/cpuinfo", "r");
  std::string name = "unknown CPU";
  if (!f) return name;
  char line[512];
  while (std::fgets(line, sizeof line, f))
    if (std::strncmp(line, "model name", 10) == 0) {
      const char* c = std::strchr(line, ':');
      if (c) name = std::string(c + 2, std::strcspn(c + 2, "\n"));
      break;
    }
  std::fclose(f);
  return name;
}

/// Each rank on a GPU of its node: (rank on the node) mod (GPUs on the node).
template <class B>
void select_gpu() {
#if defined(__CUDACC__)
  if constexpr (B::device_memory) {
    MPI_Comm node;
    MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node);
    int local = 0, count = 0;
    MPI_Comm_rank(node, &local);
    MPI_Comm_free(&node);
    if (cudaGetDeviceCount(&count) == cudaSuccess && count > 0) cudaSetDevice(local % count);
  }
#endif
}

template <class B>
void write_json(const Run& r, const Outcome& out, std::size_t atoms) {
  FILE* f = std::fopen(r.json.c_str(), "w");
  if (!f) throw std::runtime_error("cannot write " + r.json);
  int size = 1;
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  const double per = r.o.steps > 0 ? 1.0 / r.o.steps : 0;
  const std::string device = B::device_memory ? std::string(B::properties().name) : cpu_name();
  std::fprintf(
      f,
      "{\n  \"program\": \"lj_mpi\",\n  \"device\": \"%s\",\n  \"backend\": \"%s\",\n  \"precision\": "
      "\"%s\",\n  \"math\": \"%s\",\n  \"loop\": \"%s\",\n  \"list\": \"%s\",\n  \"ranks\": %d,\n"
      "  \"decomposition\": [%d, %d, %d],\n  \"unit_cells\": %d,\n  \"replicate\": [%d, %d, %d],\n"
      "  \"atoms\": %zu,\n  \"steps\": %d,\n  \"loop_s\": %.6g,\n"
      "  \"atom_steps_per_s\": %.6g,\n"
      "  \"rebuilds\": %ld,\n  \"redistributions\": %ld,\n  \"pair_checks\": %ld,\n  \"ghosts_per_rank\": %.0f,\n"
      "  \"halo_transport\": \"%s\",\n"
      "  \"overlap\": %s,\n  \"overlap_mode\": \"%s\",\n  \"rebuilds_decided\": \"%s\",\n  \"ghosts_ahead\": %s,\n"
      "  \"breakdown\": %s,\n",
      device.c_str(), B::name(), r.o.precision.c_str(),
      r.o.precision == "double" ? lj::lj_math_name<B, double>() : lj::lj_math_name<B, float>(), out.loop.c_str(),
      out.list.c_str(), size,
      out.ranks[0], out.ranks[1], out.ranks[2], r.o.cells, r.o.replicate[0], r.o.replicate[1], r.o.replicate[2], atoms,
      r.o.steps, out.loop_s, out.loop_s > 0 ? static_cast<double>(atoms) * r.o.steps / out.loop_s : 0.0, out.rebuilds,
      out.redistributions, out.pair_checks, out.ghosts,
      out.transport.empty() ? "the whole set through the host (cell loop)" : out.transport.c_str(),
      out.loop == "list" && r.overlap ? "true" : "false", out.overlap_mode.c_str(),
      out.loop != "list" ? "every step (cell loop)" : out.device_list ? "on the device" : "by a vote of the ranks",
      out.ghosts_ahead ? "true" : "false", r.o.breakdown ? "true" : "false");
  std::fprintf(f,
               "  \"seconds_per_step\": {\"compute\": %.6g, \"halo_exchange\": %.6g, \"migration\": %.6g, "
               "\"integration\": %.6g, \"reductions\": %.6g},\n",
               out.compute_s * per, out.exchange_s * per, out.migrate_s * per, out.integrate_s * per,
               out.reduce_s * per);
  const auto& q = out.rebuild_parts;
  std::fprintf(f,
               "  \"seconds_per_rebuild\": {\"classification\": %.6g, \"migration\": %.6g, \"ghost_layer\": %.6g, "
               "\"grid_build\": %.6g, \"list_build\": %.6g},\n",
               q[0], q[1], q[2], q[3], q[4]);
  const auto& lo = out.rebuild_mpi_least;
  const auto& hi = out.rebuild_mpi_most;
  std::fprintf(f,
               "  \"seconds_per_redistribution_in_mpi\": {\"least\": [%.6g, %.6g, %.6g, %.6g], "
               "\"most\": [%.6g, %.6g, %.6g, %.6g]},\n",
               lo[0], lo[1], lo[2], lo[3], hi[0], hi[1], hi[2], hi[3]);
  std::fprintf(f, "  \"atoms_changing_ranks\": {\"through_gpu_memory\": %ld, \"through_host\": %ld}\n}\n",
               out.arrivals[0], out.arrivals[1]);
  std::fclose(f);
}

template <class B, class Real, class Acc>
int run(const Run& r) {
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  const lj::Lattice lat = lj::make_fcc(r.o);
  const Outcome dist = simulate<B, Real, Acc>(MPI_COMM_WORLD, r, lat, true);
  if (rank == 0 && !r.json.empty()) write_json<B>(r, dist, lat.x[0].size());
  if (r.check_serial < 0) return 0;
  int bad = 0;
  if (rank == 0) {
    Run alone = r;
    alone.ranks = {};
    const Outcome ref = simulate<B, Real, Acc>(MPI_COMM_SELF, alone, lat, false);
    const lj::Thermo &a = dist.thermo.front(), &b = ref.thermo.front();
    // double: identical to 10 digits; float positions: the ghosts' x + L and the periodic images' dr round differently
    const bool exact = std::is_same<Real, double>::value;
    const double tol = exact ? 5e-11 : 2e-6;
    auto same = [&](double x, double y) { return std::fabs(x - y) <= tol * std::max(1.0, std::fabs(y)); };
    const bool step0 = same(a.temp, b.temp) && same(a.e_pair, b.e_pair) && same(a.press, b.press);
    double worst = 0;
    const double* L = lat.box;
    for (const auto& [id, x] : ref.final_x) {
      const auto it = dist.final_x.find(id);
      if (it == dist.final_x.end()) {
        worst = INFINITY;
        break;
      }
      for (int d = 0; d < 3; ++d) {
        double dx = std::fabs(it->second[d] - x[d]);
        dx = std::min(dx, L[d] - dx);  // (either may have wrapped)
        worst = std::max(worst, dx);
      }
    }
    const bool same_atoms = dist.final_x.size() == ref.final_x.size();
    char agree[64] = "identical to 10 digits";
    if (!exact) std::snprintf(agree, sizeof agree, "agrees to %.0e", tol);
    std::printf(
        "Serial check: step-0 thermo %s (E_pair %.10g vs %.10g); %s; largest position difference after %d "
        "steps %.3g (tolerance %.3g): %s\n",
        step0 ? agree : "DIFFERS", a.e_pair, b.e_pair,
        same_atoms ? "every atom present once" : "ATOMS LOST OR DUPLICATED", r.o.steps, worst, r.check_serial,
        step0 && same_atoms && worst <= r.check_serial ? "passed" : "FAILED");
    bad = !(step0 && same_atoms && worst <= r.check_serial);
  }
  MPI_Bcast(&bad, 1, MPI_INT, 0, MPI_COMM_WORLD);
  return bad;
}

template <class B>
int run_backend(const Run& r) {
  select_gpu<B>();
  if (r.o.precision == "float") return run<B, float, float>(r);
  if (r.o.precision == "mixed") return run<B, float, double>(r);
  return run<B, double, double>(r);
}

}  // namespace

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rc = 0;
  try {
    const Run r = parse(argc, argv);
    rc = cellint::examples::with_backend("cellint_lj_mpi", r.o.backend,
                                         [&](auto backend) { return run_backend<decltype(backend)>(r); });
  } catch (const std::exception& e) {
    std::fprintf(stderr, "cellint_lj_mpi: %s\n", e.what());
    rc = 2;
  }
  MPI_Finalize();
  return rc;
}
