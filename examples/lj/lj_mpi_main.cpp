// cellint_lj_mpi: LAMMPS's bench/in.lj, decomposed over MPI ranks with cellint::mpi (velocity Verlet NVE, the
// lattice and velocities of cellint_lj and LAMMPS).
//
//   mpiexec -n 4 cellint_lj_mpi                       # in.lj, 32,000 atoms, 100 steps, thermo every 10
//   mpiexec -n 8 cellint_lj_mpi --cells 10 --check-serial 1e-9
//
// Each step: v += dt/2 F, x += dt v on the rank's own atoms; migrate() (atoms that left the sub-box go to their new
// owner, velocities and forces with them); exchange() (the ghost layer, the rank's grid); the forces; v += dt/2 F.
// Thermo lines sum over the ranks. With --check-serial TOL, rank 0 runs the same system alone (one rank, MPI_COMM_SELF)
// and compares: step-0 thermo identical to 10 digits, every atom's final position within TOL. This version stages on
// the host (docs/mpi.md): the Host backend, or Emulated to run the GPU kernels on the CPU.

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <map>
#include <mpi.h>
#include <stdexcept>
#include <string>
#include <vector>

#include "cellint/backend/emulated.hpp"
#include "cellint/backend/host.hpp"
#include "cellint/mpi/distributed_grid.hpp"
#include "cellint/potentials/lennard_jones.hpp"

#include "../common/args.hpp"
#include "lj.hpp"

namespace {

struct Run {
  lj::Options o;
  std::string backend = "host";
  std::array<int, 3> ranks{};  // 0: balanced_ranks() chooses
  double check_serial = -1;    // < 0: off
  std::string json;            // summary file (rank 0; empty: none)
};

void usage(const char* prog) {
  std::printf(
      "usage: mpiexec -n P %s [options]\n"
      "LAMMPS bench/in.lj decomposed over MPI ranks (cellint::mpi; positions and sums in double).\n"
      "  --cells N           fcc unit cells per side, 4N^3 atoms (default 20 = 32,000)\n"
      "  --steps N           time steps (default 100)\n"
      "  --dt X              time step in tau (default 0.005)\n"
      "  --thermo N          thermo line every N steps (default 10; 0: first and last)\n"
      "  --shifted           shift the potential to zero at the cutoff\n"
      "  --cutoff X          cutoff in sigma (default 2.5)\n"
      "  --ranks X,Y,Z       ranks per axis (default: chosen; 0 on an axis: chosen)\n"
      "  --backend B         host | emulated (the GPU kernels on the CPU) (default host)\n"
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
      r.backend = args.value();
      if (r.backend != "host" && r.backend != "emulated") args.fail("--backend must be host or emulated");
    } else if (a == "--ranks") {
      const std::string v = args.value();
      if (std::sscanf(v.c_str(), "%d,%d,%d", &r.ranks[0], &r.ranks[1], &r.ranks[2]) != 3)
        args.fail("--ranks expects three counts 'X,Y,Z', got '" + v + "'");
    } else if (a == "--check-serial") {
      r.check_serial = args.real();
    } else if (a == "--json") {
      r.json = args.value();
    } else {
      args.fail("unknown option " + a + " (see --help)");
    }
  }
  return r;
}

/// What a run leaves: its thermo lines (on the communicator's rank 0) and every atom's final position (gathered on
/// rank 0, by id).
struct Outcome {
  std::vector<lj::Thermo> thermo;
  std::map<std::uint64_t, std::array<double, 3>> final_x;
  double loop_s = 0;
  // seconds over the loop by phase, the largest over the ranks: integration, migration, halo exchange (with the
  // grid's build), the pair computation, the thermo sums
  double integrate_s = 0, migrate_s = 0, exchange_s = 0, compute_s = 0, reduce_s = 0;
  std::array<int, 3> ranks{};
};

template <class B>
Outcome simulate(MPI_Comm comm, const Run& r, const lj::Lattice& lat, bool print) {
  using Grid = cellint::mpi::DistributedGrid<B, double, 3>;
  using LJ = cellint::LennardJones<double, 3>;
  const lj::Options& o = r.o;
  const auto box = cellint::Box<double, 3>::cube(0.0, lat.box, true);
  Grid g(comm, box, o.cutoff, r.ranks);
  const LJ f = LJ::make(1.0, 1.0, o.cutoff, o.shifted);
  const std::size_t n = lat.x[0].size();
  // fields: velocity (0..2), force (3..5): they move with the atom
  auto& p = g.particles();
  p.fields = 6;
  for (std::size_t i = 0; i < n; ++i)
    if (static_cast<int>(i % static_cast<std::size_t>(g.size())) == g.rank()) {
      const double x[3] = {lat.x[0][i], lat.x[1][i], lat.x[2][i]};
      const double fields[6] = {lat.v[0][i], lat.v[1][i], lat.v[2][i], 0, 0, 0};
      p.push(i, x, fields);
    }
  g.migrate(true);
  if (print && g.rank() == 0) {
    const auto& d = g.decomposition();
    std::printf("cellint_lj_mpi: %zu atoms, %d ranks (%d x %d x %d), ghost layer %.3g, backend %s\n", n, g.size(),
                d.ranks[0], d.ranks[1], d.ranks[2], static_cast<double>(d.ghost), B::name());
    std::printf("%8s %12s %12s %12s %12s\n", "Step", "Temp", "E_pair", "TotEng", "Press");
  }
  Outcome out;
  const double volume = lat.box * lat.box * lat.box, dof = 3.0 * static_cast<double>(n) - 3.0;
  double t_integrate = 0, t_migrate = 0, t_exchange = 0, t_compute = 0, t_reduce = 0;
  auto timed = [](double& total, auto&& work) {
    const double t = MPI_Wtime();
    work();
    total += MPI_Wtime() - t;
  };
  // forces of the own atoms into fields 3..5; on thermo steps also the energy and virial, summed over the ranks
  auto forces = [&](bool sums, double* e_pair, double* virial) {
    timed(t_exchange, [&] { g.exchange(); });
    double e = 0, w = 0;
    timed(t_compute, [&] {
      const auto acc = g.interact(f);
      for (std::size_t i = 0; i < p.size(); ++i) {
        for (int d = 0; d < 3; ++d) p.field[6 * i + 3 + static_cast<std::size_t>(d)] = acc[i].force[d];
        e += acc[i].energy;
        w += acc[i].virial;
      }
    });
    if (sums)
      timed(t_reduce, [&] {
        *e_pair = g.sum(e);
        *virial = g.sum(w);
      });
  };
  auto thermo = [&](long step, double e_pair, double virial) {
    double k = 0;
    for (std::size_t i = 0; i < p.size(); ++i)
      for (int d = 0; d < 3; ++d) k += p.field[6 * i + static_cast<std::size_t>(d)] * p.field[6 * i + d];
    double ke = 0;
    timed(t_reduce, [&] { ke = 0.5 * g.sum(k); });
    lj::Thermo t;
    t.step = step;
    t.temp = 2 * ke / dof;
    t.e_pair = e_pair / static_cast<double>(n);
    t.tot_eng = (ke + e_pair) / static_cast<double>(n);
    t.press = (2 * ke + virial) / (3 * volume);
    if (g.rank() == 0) {
      out.thermo.push_back(t);
      if (print) std::printf("%8ld %12.8g %12.8g %12.8g %12.8g\n", t.step, t.temp, t.e_pair, t.tot_eng, t.press);
    }
  };
  double e_pair = 0, virial = 0;
  forces(true, &e_pair, &virial);
  thermo(0, e_pair, virial);
  t_integrate = t_migrate = t_exchange = t_compute = t_reduce = 0;
  MPI_Barrier(comm);
  const double t0 = MPI_Wtime();
  for (long step = 1; step <= o.steps; ++step) {
    const bool thermo_step = step == o.steps || (o.thermo > 0 && step % o.thermo == 0);
    timed(t_integrate, [&] {
      for (std::size_t i = 0; i < p.size(); ++i)
        for (int d = 0; d < 3; ++d) {
          double* v = &p.field[6 * i + static_cast<std::size_t>(d)];
          *v += 0.5 * o.dt * v[3];
          p.x[d][i] += o.dt * *v;
        }
    });
    timed(t_migrate, [&] { g.migrate(); });
    forces(thermo_step, &e_pair, &virial);
    timed(t_integrate, [&] {
      for (std::size_t i = 0; i < p.size(); ++i)
        for (int d = 0; d < 3; ++d) p.field[6 * i + d] += 0.5 * o.dt * p.field[6 * i + 3 + static_cast<std::size_t>(d)];
    });
    if (thermo_step) thermo(step, e_pair, virial);
  }
  MPI_Barrier(comm);
  out.loop_s = MPI_Wtime() - t0;
  {
    const double mine[5] = {t_integrate, t_migrate, t_exchange, t_compute, t_reduce};
    double most[5] = {0, 0, 0, 0, 0};
    MPI_Reduce(mine, most, 5, MPI_DOUBLE, MPI_MAX, 0, comm);
    out.integrate_s = most[0], out.migrate_s = most[1], out.exchange_s = most[2], out.compute_s = most[3];
    out.reduce_s = most[4];
    out.ranks = g.decomposition().ranks;
  }
  // final positions, gathered by id on rank 0
  std::vector<std::array<double, 3>> x(p.size());
  for (std::size_t i = 0; i < p.size(); ++i) x[i] = {p.x[0][i], p.x[1][i], p.x[2][i]};
  out.final_x = g.gather(x);
  const int size = g.size();
  if (print && g.rank() == 0) {
    std::printf("Loop time of %.6g s on %d ranks for %d steps with %zu atoms: %.4g atom-steps/s\n", out.loop_s, size,
                o.steps, n, out.loop_s > 0 ? static_cast<double>(n) * o.steps / out.loop_s : 0.0);
    const double ms = o.steps > 0 ? 1e3 / o.steps : 0;
    std::printf(
        "Per step (ms, the slowest rank's): pair computation %.4g, halo exchange and grid build %.4g, "
        "migration %.4g, integration %.4g, thermo sums %.4g\n",
        out.compute_s * ms, out.exchange_s * ms, out.migrate_s * ms, out.integrate_s * ms, out.reduce_s * ms);
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

void write_json(const Run& r, const Outcome& out, std::size_t atoms, const char* backend) {
  FILE* f = std::fopen(r.json.c_str(), "w");
  if (!f) throw std::runtime_error("cannot write " + r.json);
  int size = 1;
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  const double per = r.o.steps > 0 ? 1.0 / r.o.steps : 0;
  std::fprintf(f,
               "{\n  \"program\": \"lj_mpi\",\n  \"device\": \"%s\",\n  \"backend\": \"%s\",\n  \"ranks\": %d,\n"
               "  \"decomposition\": [%d, %d, %d],\n  \"atoms\": %zu,\n  \"steps\": %d,\n  \"loop_s\": %.6g,\n"
               "  \"atom_steps_per_s\": %.6g,\n",
               cpu_name().c_str(), backend, size, out.ranks[0], out.ranks[1], out.ranks[2], atoms, r.o.steps,
               out.loop_s, out.loop_s > 0 ? static_cast<double>(atoms) * r.o.steps / out.loop_s : 0.0);
  std::fprintf(f,
               "  \"seconds_per_step\": {\"compute\": %.6g, \"halo_exchange\": %.6g, \"migration\": %.6g, "
               "\"integration\": %.6g, \"reductions\": %.6g}\n}\n",
               out.compute_s * per, out.exchange_s * per, out.migrate_s * per, out.integrate_s * per,
               out.reduce_s * per);
  std::fclose(f);
}

template <class B>
int run(const Run& r) {
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  const lj::Lattice lat = lj::make_fcc(r.o);
  const Outcome dist = simulate<B>(MPI_COMM_WORLD, r, lat, true);
  if (rank == 0 && !r.json.empty()) write_json(r, dist, lat.x[0].size(), B::name());
  if (r.check_serial < 0) return 0;
  int bad = 0;
  if (rank == 0) {
    Run alone = r;
    alone.ranks = {};
    const Outcome ref = simulate<B>(MPI_COMM_SELF, alone, lat, false);
    const lj::Thermo &a = dist.thermo.front(), &b = ref.thermo.front();
    auto same10 = [](double x, double y) { return std::fabs(x - y) <= 5e-11 * std::max(1.0, std::fabs(y)); };
    const bool step0 = same10(a.temp, b.temp) && same10(a.e_pair, b.e_pair) && same10(a.press, b.press);
    double worst = 0;
    const double L = lat.box;
    for (const auto& [id, x] : ref.final_x) {
      const auto it = dist.final_x.find(id);
      if (it == dist.final_x.end()) {
        worst = INFINITY;
        break;
      }
      for (int d = 0; d < 3; ++d) {
        double dx = std::fabs(it->second[d] - x[d]);
        dx = std::min(dx, L - dx);  // (either may have wrapped)
        worst = std::max(worst, dx);
      }
    }
    const bool same_atoms = dist.final_x.size() == ref.final_x.size();
    std::printf(
        "Serial check: step-0 thermo %s (E_pair %.10g vs %.10g); %s; largest position difference after %d "
        "steps %.3g (tolerance %.3g): %s\n",
        step0 ? "identical to 10 digits" : "DIFFERS", a.e_pair, b.e_pair,
        same_atoms ? "every atom present once" : "ATOMS LOST OR DUPLICATED", r.o.steps, worst, r.check_serial,
        step0 && same_atoms && worst <= r.check_serial ? "passed" : "FAILED");
    bad = !(step0 && same_atoms && worst <= r.check_serial);
  }
  MPI_Bcast(&bad, 1, MPI_INT, 0, MPI_COMM_WORLD);
  return bad;
}

}  // namespace

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rc = 0;
  try {
    const Run r = parse(argc, argv);
    rc = r.backend == "emulated" ? run<cellint::Emulated>(r) : run<cellint::Host>(r);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "cellint_lj_mpi: %s\n", e.what());
    rc = 2;
  }
  MPI_Finalize();
  return rc;
}
