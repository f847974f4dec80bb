// cellint::mpi on the CPU, run by CTest under mpiexec with 1, 2, 3, 4 and 8 ranks: every owned particle's sums equal
// the single-rank run's (counts exactly, Lennard-Jones forces to rounding) for every strategy of the backend, 2D and
// 3D, open and periodic, uniform and clustered; migration keeps every particle exactly once; bad input is an error on
// every rank. Each test case is collective: every rank runs it, rank 0 checks what the others sent it.
#define CATCH_CONFIG_RUNNER
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <map>
#include <mpi.h>
#include <random>
#include <string>
#include <vector>

#include "cellint/backend/emulated.hpp"
#include "cellint/backend/host.hpp"
#include "cellint/lists/neighbor_list.hpp"
#include "cellint/mpi/distributed_grid.hpp"
#include "cellint/potentials/counting.hpp"
#include "cellint/potentials/lennard_jones.hpp"

#include "support/generators.hpp"

namespace {
using namespace cellint;
using cellint::test::Distribution;

int world_rank() {
  int r = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &r);
  return r;
}
int world_size() {
  int s = 1;
  MPI_Comm_size(MPI_COMM_WORLD, &s);
  return s;
}
/// A seed that differs run to run, the same on every rank.
std::uint64_t shared_seed() {
  std::uint64_t s = cellint::test::fresh_seed();
  MPI_Bcast(&s, 1, MPI_UINT64_T, 0, MPI_COMM_WORLD);
  return s;
}

/// How far a distributed force may be from the single-rank one, relative to max(1, |F|). Double: rounding. Float: a
/// ghost's position is x + L rounded once by its sender, a periodic image's is formed in the kernel, and the two
/// roundings of dr (~1e-6 at these coordinates) differ by up to 13 dr/r relatively in each pair's LJ force; the net
/// force cancels pair forces several times larger in clustered and on-face inputs (1.8e-3 seen, 2D on faces, 3 ranks).
/// A missing or doubled pair is an error of order 1.
template <class Real>
constexpr double same_sums() {
  return sizeof(Real) == 4 ? 1e-2 : 1e-12;
}

/// A distributed Lennard-Jones result against the single-rank one: the largest force difference relative to
/// max(1, |F|), or energy difference relative to max(1, |E|).
template <int Dim, class Accum>
double difference(const Accum& got, const Accum& want) {
  double scale = 1, worst = 0;
  for (int d = 0; d < Dim; ++d) scale = std::max(scale, std::abs(want.force[d]));
  for (int d = 0; d < Dim; ++d) worst = std::max(worst, std::abs(got.force[d] - want.force[d]) / scale);
  return std::max(worst, std::abs(got.energy - want.energy) / std::max(1.0, std::abs(want.energy)));
}

template <class Real, int Dim>
Box<Real, Dim> test_box(bool periodic, int cells) {
  Box<Real, Dim> b;
  for (int d = 0; d < Dim; ++d) {
    b.origin[d] = Real(-1.5) + Real(d);
    b.lengths[d] = static_cast<Real>(cells + d);  // (cells + d) cells of width 1 along axis d
    b.periodic[d] = periodic;
  }
  return b;
}

/// The same positions on every rank; each rank first holds every size-th particle (not its own), so that the first
/// migration moves most of them.
template <class B, class Real, int Dim, class Positions>
void scatter(mpi::DistributedGrid<B, Real, Dim>& g, const Positions& x) {
  auto& p = g.particles();
  p.clear();
  for (std::size_t i = 0; i < x[0].size(); ++i)
    if (static_cast<int>(i % static_cast<std::size_t>(g.size())) == g.rank()) {
      Real xi[Dim];
      for (int d = 0; d < Dim; ++d) xi[d] = x[d][i];
      const double f = static_cast<double>(i);  // one field: the id again, to check fields travel with the particle
      p.push(i, xi, &f);
    }
}

/// Ranks per axis: balanced_ranks()'s choice (all zero), or, with `spread` and an even count of at least 4, two along x
/// and the rest along y (so that edge and corner ghosts travel through two faces whatever the balanced choice).
template <int Dim>
std::array<int, Dim> ranks_for(bool spread) {
  std::array<int, Dim> r{};
  const int size = world_size();
  if (spread && size >= 4 && size % 2 == 0) {
    r.fill(1);
    r[0] = 2;
    r[1] = size / 2;
  }
  return r;
}

template <class B, class Real, int Dim>
void compare_with_single_rank(bool periodic, Distribution dist, std::uint64_t seed, bool spread = false) {
  const int cells = 7;
  const Box<Real, Dim> box = test_box<Real, Dim>(periodic, cells);
  CellGrid<B, Real, Dim> shape(box, Real(1));
  const auto x = cellint::test::make_positions<Real, Dim>(shape.geometry(), 3.0, dist, seed);
  mpi::DistributedGrid<B, Real, Dim> g(MPI_COMM_WORLD, box, Real(1), ranks_for<Dim>(spread));
  g.particles().fields = 1;
  scatter(g, x);
  g.migrate(true);
  g.exchange();
  // fields travelled with their particles (into the ghost layer too)
  int wrong_fields = 0;
  const auto& cg = g;
  for (const auto* p : {&cg.particles(), &cg.ghosts()})
    for (std::size_t i = 0; i < p->size(); ++i) wrong_fields += p->field[i] != static_cast<double>(p->id[i]);
  // the reference: the whole system on one grid, on rank 0
  CellGrid<B, Real, Dim> whole(box, Real(1));
  whole.build(x);
  using LJ = LennardJones<Real, Dim, double>;
  // (softened: a pair closer than the generators' nearest ones would turn the rounding of dr, which differs between
  // strategies and between a periodic image and a ghost, into large relative force differences)
  const LJ lj = LJ::make(Real(1), Real(0.4), Real(1), true, Real(0.25));
  NeighborCount<Real, Dim> count;
  std::vector<unsigned> want_count, borderline;
  std::vector<typename LJ::Accum> want_lj;
  if (world_rank() == 0) {
    // pairs within 1e-5 of the cutoff (minimum image, in double)
    const std::size_t n = x[0].size();
    borderline.assign(n, 0);
    for (std::size_t i = 0; i < n; ++i)
      for (std::size_t j = i + 1; j < n; ++j) {
        double r2 = 0;
        for (int d = 0; d < Dim; ++d) {
          double dx = static_cast<double>(x[d][i]) - static_cast<double>(x[d][j]);
          if (periodic) dx -= box.lengths[d] * std::nearbyint(dx / box.lengths[d]);
          r2 += dx * dx;
        }
        if (std::abs(std::sqrt(r2) - 1.0) <= 1e-5) ++borderline[i], ++borderline[j];
      }
    Buffer<B, unsigned> c(x[0].size());
    interact_with(StrategyKind::Auto, whole, count, c.data());
    want_count = whole.to_user_order(c.data());
    Buffer<B, typename LJ::Accum> f(x[0].size());
    interact_with(StrategyKind::Auto, whole, lj, f.data());
    want_lj = whole.to_user_order(f.data());
  }
  for (StrategyKind k : strategies_for<B>()) {
    // (all ranks agree: a shared-memory strategy may refuse one rank's fullest cell)
    int ok = supports(k, g.grid(), count).ok && supports(k, g.grid(), lj).ok, all_ok = 0;
    MPI_Allreduce(&ok, &all_ok, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
    if (!all_ok) continue;
    const auto got_count = g.interact(count, k);
    const auto got_lj = g.interact(lj, k);
    const auto all_count = g.gather(got_count);
    const auto all_lj = g.gather(got_lj);
    if (world_rank() != 0) continue;
    INFO(world_size() << " ranks" << (spread ? " (2 along x)" : "") << ", " << Dim << "D, "
                      << (periodic ? "periodic" : "open") << ", " << cellint::test::to_string(dist) << ", "
                      << to_string(k) << ", seed " << seed);
    CHECK(all_count.size() == x[0].size());
    CHECK(all_lj.size() == x[0].size());
    if (all_count.size() != x[0].size() || all_lj.size() != x[0].size()) continue;
    int wrong = 0;
    double worst = 0;
    for (const auto& [id, c] : all_count) {
      // float: a pair within rounding of the cutoff may be in on one side and out on the other (a ghost's x + L is
      // rounded by its sender, a periodic image's dr in the kernel); such a pair explains a count off by one
      const unsigned slack = sizeof(Real) == 4 ? borderline[id] : 0;
      wrong += c + slack < want_count[id] || c > want_count[id] + slack;
      if (slack > 0) continue;  // (and its force may differ by such a pair's)
      worst = std::max(worst, difference<Dim>(all_lj.at(id), want_lj[id]));
    }
    CHECK(wrong == 0);
    CHECK(worst < same_sums<Real>());
  }
  const int all_wrong_fields = g.sum(wrong_fields);
  CHECK(all_wrong_fields == 0);
}

TEST_CASE("distributed sums equal the single-rank run's, every strategy", "[mpi]") {
  const std::uint64_t seed = shared_seed();
  for (bool periodic : {true, false})
    for (Distribution dist : {Distribution::Uniform, Distribution::Clustered, Distribution::OnFaces}) {
      compare_with_single_rank<Host, double, 3>(periodic, dist, seed);
      compare_with_single_rank<Host, float, 2>(periodic, dist, seed + 1);
      compare_with_single_rank<Emulated, float, 3>(periodic, dist, seed + 2);
      compare_with_single_rank<Emulated, double, 2>(periodic, dist, seed + 3);
      if (world_size() >= 4 && world_size() % 2 == 0) {
        compare_with_single_rank<Host, double, 3>(periodic, dist, seed + 4, true);
        compare_with_single_rank<Emulated, float, 2>(periodic, dist, seed + 5, true);
      }
    }
}

/// Between list rebuilds: every owned particle moves in the rank's grid (on the backend, slot order) by less than half
/// the skin, update_ghosts() sends the same ghosts' new positions, and a full list with rows for the owned particles
/// only (set_targets) gives each owned particle the single-rank run's sums at the moved positions. `overlap`: 0 ghosts
/// first, then every row; 1 the interior rows in update_ghosts(meanwhile), the border rows after it; 2 the border rows
/// in update_ghosts(meanwhile, then); 3 and 4 the ghosts sent ahead of the move (send_ghosts_ahead(), told where it
/// puts each particle), then as 2 and as 0.
template <class Real, int Dim>
struct MoveTo {  // send_ghosts_ahead()'s advance: slot s goes to to[.][s]
  const Real* to[Dim];
  CELLINT_HD void operator()(Index s, Real (&x)[Dim]) const {
    for (int d = 0; d < Dim; ++d) x[d] = to[d][s];
  }
};
template <class B, class Real, int Dim>
void ghosts_follow_owners(bool periodic, std::uint64_t seed, bool spread, int overlap) {
  const Real skin = Real(0.3);
  const Box<Real, Dim> box = test_box<Real, Dim>(periodic, 8);
  CellGrid<B, Real, Dim> shape(box, Real(1));
  const auto x = cellint::test::make_positions<Real, Dim>(shape.geometry(), 2.5, Distribution::Clustered, seed);
  // the move of particle `id`: below skin / 2 in length, none where it would leave an open box
  auto moved = [&](std::uint64_t id, const Real* xi, Real* out) {
    std::mt19937_64 rng(seed ^ (id * 0x9E3779B97F4A7C15ull));
    std::uniform_real_distribution<double> u(-1, 1);
    bool inside = true;
    for (int d = 0; d < Dim; ++d) {
      out[d] = static_cast<Real>(xi[d] + 0.45 * skin / std::sqrt(double(Dim)) * u(rng));
      inside = inside && (periodic || (out[d] >= box.origin[d] && out[d] < box.origin[d] + box.lengths[d]));
    }
    if (!inside)
      for (int d = 0; d < Dim; ++d) out[d] = xi[d];
  };
  mpi::DistributedGrid<B, Real, Dim> g(MPI_COMM_WORLD, box, Real(1), ranks_for<Dim>(spread), skin);
  g.particles().fields = 1;
  scatter(g, x);
  g.migrate(true);
  g.exchange();
  // how the ghosts travel: nothing on one rank (the grid holds the periodic images), host memory on these backends
  CHECK(std::string(g.halo_transport()) == (world_size() == 1 ? "none" : "host memory"));
  CHECK(g.ghosts_enqueued() == (world_size() == 1));
  const Index own = static_cast<Index>(g.particles().size());
  NeighborList<B, Real, Dim> list(g.grid(), skin, ListOptions{}, own);
  {  // move the owned particles in the grid, as an integrator would
    auto& grid = g.grid();
    const Index n = grid.size();
    std::vector<Index> user(static_cast<std::size_t>(n));
    std::array<std::vector<Real>, Dim> pos;
    B::copy(user.data(), grid.original_index(), sizeof(Index) * user.size(), CopyKind::DeviceToHost);
    for (int d = 0; d < Dim; ++d) {
      pos[d].resize(user.size());
      B::copy(pos[d].data(), grid.positions(d), sizeof(Real) * user.size(), CopyKind::DeviceToHost);
    }
    for (std::size_t s = 0; s < user.size(); ++s) {
      if (user[s] >= own) continue;  // a ghost: update_ghosts() brings its owner's move
      Real xi[Dim], to[Dim];
      for (int d = 0; d < Dim; ++d) xi[d] = pos[d][s];
      moved(g.particles().id[static_cast<std::size_t>(user[s])], xi, to);
      for (int d = 0; d < Dim; ++d) pos[d][s] = to[d];
    }
    if (overlap >= 3) {  // the ghosts' positions packed first, from where the move below puts their owners
      std::array<Buffer<B, Real>, Dim> to;
      MoveTo<Real, Dim> ahead{};
      for (int d = 0; d < Dim; ++d) {
        to[d] = Buffer<B, Real>(std::max<std::size_t>(user.size(), 1));
        B::copy(to[d].data(), pos[d].data(), sizeof(Real) * user.size(), CopyKind::HostToDevice);
        ahead.to[d] = to[d].data();
      }
      g.send_ghosts_ahead(ahead);
      B::synchronize();  // (before the buffers go)
      if (world_size() > 1) CHECK_THROWS_AS(g.send_ghosts_ahead(ahead), InvalidArgument);  // (one at a time)
      // the ghosts' slots as they are now: on a GPU with peer flags the first axis's may have arrived already
      std::vector<Real> now(user.size());
      for (int d = 0; d < Dim; ++d) {
        B::copy(now.data(), grid.positions(d), sizeof(Real) * user.size(), CopyKind::DeviceToHost);
        for (std::size_t s = 0; s < user.size(); ++s)
          if (user[s] >= own) pos[d][s] = now[s];
      }
    }
    for (int d = 0; d < Dim; ++d)  // (the ghosts' slots keep their values: written, not changed)
      B::copy(grid.positions(d), pos[d].data(), sizeof(Real) * user.size(), CopyKind::HostToDevice);
    B::synchronize();
  }
  using LJ = LennardJones<Real, Dim, double>;
  const LJ lj = LJ::make(Real(1), Real(0.4), Real(1), true, Real(0.25));
  Buffer<B, typename LJ::Accum> out(static_cast<std::size_t>(std::max<Index>(g.grid().size(), 1)));
  out.fill_bytes(0xff);  // (NaN: a row left out shows)
  if (overlap == 1) {    // interior rows while the ghosts travel, then the border rows
    int calls = 0;
    list.update(g.grid(), ListPart::Interior);
    g.update_ghosts([&] {
      ++calls;
      interact(list, g.grid(), lj, out.data(), ListPart::Interior);
    });
    list.update(g.grid(), ListPart::Border);
    interact(list, g.grid(), lj, out.data(), ListPart::Border);
    CHECK(calls == 1);
  } else if (overlap == 2 || overlap == 3) {  // the border rows as the ghosts arrive, on the exchange's stream
    int calls = 0, thens = 0;
    const auto stream = g.grid().stream();
    list.update(g.grid(), ListPart::Interior);
    g.update_ghosts(
        [&] {
          ++calls;
          CHECK(thens == 0);
          interact(list, g.grid(), lj, out.data(), ListPart::Interior);
        },
        [&] {
          ++thens;
          list.update(g.grid(), ListPart::Border);
          interact(list, g.grid(), lj, out.data(), ListPart::Border);
        });
    CHECK(calls == 1);
    CHECK(thens == 1);
    CHECK(g.grid().stream() == stream);  // (restored)
  } else {
    g.update_ghosts();
    list.update(g.grid());
    interact(list, g.grid(), lj, out.data());
  }
  const auto mine = g.owned_values(static_cast<const typename LJ::Accum*>(out.data()));
  const auto all = g.gather(mine);
  if (world_rank() != 0) return;
  INFO(world_size() << " ranks" << (spread ? " (2 along x)" : "") << ", " << Dim << "D, "
                    << (periodic ? "periodic" : "open") << ", ghosts updated in place"
                    << (overlap == 1   ? " beside the interior rows"
                        : overlap == 2 ? " beside the interior rows, border rows in then()"
                        : overlap == 3 ? " sent ahead of the move, border rows in then()"
                        : overlap == 4 ? " sent ahead of the move"
                                       : "")
                    << ", seed " << seed);
  std::array<std::vector<Real>, Dim> y;
  for (int d = 0; d < Dim; ++d) y[d].resize(x[0].size());
  for (std::size_t i = 0; i < x[0].size(); ++i) {
    Real xi[Dim], to[Dim];
    for (int d = 0; d < Dim; ++d) xi[d] = x[d][i];
    moved(i, xi, to);
    for (int d = 0; d < Dim; ++d) y[d][i] = to[d];
  }
  CellGrid<B, Real, Dim> whole(box, Real(1));
  whole.build(y);
  Buffer<B, typename LJ::Accum> f(x[0].size());
  interact_with(StrategyKind::Auto, whole, lj, f.data());
  const auto want = whole.to_user_order(f.data());
  REQUIRE(all.size() == want.size());
  double worst = 0;
  for (const auto& [id, a] : all) worst = std::max(worst, difference<Dim>(a, want[id]));
  CHECK(worst < same_sums<Real>());
}

TEST_CASE("ghosts updated in place follow their owners; a list over owned targets gives the single-rank sums",
          "[mpi]") {
  const std::uint64_t seed = shared_seed();
  for (bool periodic : {true, false}) {
    ghosts_follow_owners<Host, double, 3>(periodic, seed, false, 0);
    ghosts_follow_owners<Host, double, 3>(periodic, seed + 5, false, 1);
    ghosts_follow_owners<Emulated, float, 3>(periodic, seed + 1, false, 1);
    ghosts_follow_owners<Emulated, float, 3>(periodic, seed + 6, false, 2);
    ghosts_follow_owners<Emulated, double, 2>(periodic, seed + 2, false, 0);
    ghosts_follow_owners<Emulated, float, 3>(periodic, seed + 8, false, 3);
    ghosts_follow_owners<Host, double, 2>(periodic, seed + 9, false, 4);
    if (world_size() >= 4 && world_size() % 2 == 0) {
      ghosts_follow_owners<Host, float, 2>(periodic, seed + 3, true, 1);
      ghosts_follow_owners<Emulated, double, 3>(periodic, seed + 4, true, 0);
      ghosts_follow_owners<Host, double, 3>(periodic, seed + 7, true, 2);
      ghosts_follow_owners<Emulated, double, 3>(periodic, seed + 10, true, 3);
    }
  }
}

/// The device-resident rebuild: rounds of moves in the rank's grid (up to most of a sub-box, across rank boundaries and
/// the periodic wrap), each followed by redistribute(): every id is kept exactly once, carried attributes stay with
/// their particles (ghosts: zero), and a list over owned targets gives the single-rank sums at the gathered positions;
/// then small moves and update_ghosts() alone, checked the same way.
/// `slabs`: every rank along x (with 4 ranks, ranks 0 and 2 are not neighbours: the migration's counts go between
/// neighbours only).
template <class B, class Real, int Dim>
void redistribute_rounds(bool periodic, std::uint64_t seed, bool spread, bool slabs = false) {
  const Real skin = Real(0.3);
  const Box<Real, Dim> box = test_box<Real, Dim>(periodic, 8);
  CellGrid<B, Real, Dim> shape(box, Real(1));
  const auto x = cellint::test::make_positions<Real, Dim>(shape.geometry(), 2.0, Distribution::Clustered, seed);
  const std::size_t n = x[0].size();
  std::array<int, Dim> ranks = ranks_for<Dim>(spread);
  if (slabs) {
    ranks.fill(1);
    ranks[0] = world_size();
  }
  mpi::DistributedGrid<B, Real, Dim> g(MPI_COMM_WORLD, box, Real(1), ranks, skin);
  scatter(g, x);
  g.migrate(true);
  g.exchange();
  // carried: the id and minus the id, by user index (ghosts: 0)
  std::array<Attribute<double>, 2> carried;
  {
    const auto& p = g.particles();
    std::vector<double> a(static_cast<std::size_t>(g.grid().size()), 0.0), b(a.size(), 0.0);
    for (std::size_t i = 0; i < p.size(); ++i) a[i] = static_cast<double>(p.id[i]), b[i] = -a[i];
    carried[0] = g.grid().attach(a);
    carried[1] = g.grid().attach(b);
  }
  std::mt19937_64 rng(seed + static_cast<std::uint64_t>(world_rank()));
  // moves every owned particle in the grid by up to `step` per axis (none that would leave an open box)
  auto move = [&](double step) {
    auto& grid = g.grid();
    const std::size_t m = static_cast<std::size_t>(grid.size());
    std::vector<Index> user(m);
    std::array<std::vector<Real>, Dim> pos;
    B::copy(user.data(), grid.original_index(), sizeof(Index) * m, CopyKind::DeviceToHost);
    std::uniform_real_distribution<double> u(-step, step);
    for (int d = 0; d < Dim; ++d) {
      pos[d].resize(m);
      B::copy(pos[d].data(), grid.positions(d), sizeof(Real) * m, CopyKind::DeviceToHost);
    }
    for (std::size_t s = 0; s < m; ++s) {
      if (user[s] >= g.owned()) continue;
      for (int d = 0; d < Dim; ++d) {
        const Real to = static_cast<Real>(pos[d][s] + u(rng));
        if (periodic || (to >= box.origin[d] && to < box.origin[d] + box.lengths[d])) pos[d][s] = to;
      }
    }
    for (int d = 0; d < Dim; ++d) B::copy(grid.positions(d), pos[d].data(), sizeof(Real) * m, CopyKind::HostToDevice);
    B::synchronize();
  };
  using LJ = LennardJones<Real, Dim, double>;
  const LJ lj = LJ::make(Real(1), Real(0.4), Real(1), true, Real(0.25));
  auto check = [&](const char* what) {
    INFO(world_size() << " ranks" << (spread ? " (2 along x)" : "") << (slabs ? " (slabs)" : "") << ", " << Dim << "D, "
                      << (periodic ? "periodic" : "open") << ", " << what << ", seed " << seed);
    NeighborList<B, Real, Dim> list(g.grid(), skin, ListOptions{}, g.owned());
    Buffer<B, typename LJ::Accum> out(static_cast<std::size_t>(std::max<Index>(g.grid().size(), 1)));
    interact(list, g.grid(), lj, out.data());
    const auto forces = g.gather(g.owned_values(static_cast<const typename LJ::Accum*>(out.data())));
    std::vector<std::array<Real, Dim>> mine(static_cast<std::size_t>(g.owned()));
    for (int d = 0; d < Dim; ++d) {
      const auto xd = g.owned_values(static_cast<const Real*>(g.grid().positions(d)));
      for (std::size_t i = 0; i < xd.size(); ++i) mine[i][static_cast<std::size_t>(d)] = xd[i];
    }
    const auto where = g.gather(mine);
    // carried values by slot: owned ones follow their ids, ghosts hold zeros
    const auto ids = g.gather(std::vector<char>(static_cast<std::size_t>(g.owned()), 1));
    std::vector<double> a(static_cast<std::size_t>(g.grid().size())), b(a.size());
    B::copy(a.data(), g.grid().attribute(carried[0]), sizeof(double) * a.size(), CopyKind::DeviceToHost);
    B::copy(b.data(), g.grid().attribute(carried[1]), sizeof(double) * b.size(), CopyKind::DeviceToHost);
    std::vector<Index> user(a.size());
    B::copy(user.data(), g.grid().original_index(), sizeof(Index) * user.size(), CopyKind::DeviceToHost);
    const auto tags = g.gather(g.owned_values(g.grid().attribute(carried[0])));
    int wrong_ghosts = 0;
    for (std::size_t s = 0; s < a.size(); ++s)
      if (user[s] >= g.owned())
        wrong_ghosts += a[s] != 0.0 || b[s] != 0.0;
      else
        wrong_ghosts += b[s] != -a[s];
    const int all_wrong = g.sum(wrong_ghosts);
    const std::uint64_t count = g.global_count();
    if (world_rank() != 0) return;
    CHECK(count == n);
    CHECK(all_wrong == 0);
    REQUIRE(ids.size() == n);  // every id once (a map by id, of the gathered count)
    int wrong_tags = 0;
    for (const auto& [id, t] : tags) wrong_tags += t != static_cast<double>(id);
    CHECK(wrong_tags == 0);
    std::array<std::vector<Real>, Dim> y;
    for (int d = 0; d < Dim; ++d) y[d].resize(n);
    for (const auto& [id, p] : where)
      for (int d = 0; d < Dim; ++d) y[d][id] = p[static_cast<std::size_t>(d)];
    CellGrid<Host, Real, Dim> whole(box, Real(1));  // (the reference on the Host backend: no tuning)
    whole.build(y);
    std::vector<typename LJ::Accum> f(n);
    interact_with(StrategyKind::Auto, whole, lj, f.data());
    const auto want = whole.to_user_order(f);
    double worst = 0;
    for (const auto& [id, got] : forces) worst = std::max(worst, difference<Dim>(got, want[id]));
    CHECK(worst < same_sums<Real>());
  };
  double sub = 1e300;  // the narrowest sub-box: moves stay within one sub-box of their start along every axis
  for (int d = 0; d < Dim; ++d) sub = std::min(sub, double(box.lengths[d]) / g.decomposition().ranks[d]);
  for (int round = 0; round < 4; ++round) {
    move(round % 2 ? 0.45 * sub : 0.1);
    g.redistribute(carried);
    check("after redistribute()");
  }
  move(0.4 * skin / std::sqrt(double(Dim)));
  g.update_ghosts();
  check("after update_ghosts() on the redistributed grid");
  // a carried attribute's handle that is not the grid's on one rank: the same error on every rank, no rank left waiting
  // in a collective (the handle is read where particles leave, on some ranks only)
  {
    auto stale = carried;
    if (world_rank() == world_size() - 1) stale[1] = typename decltype(stale)::value_type{};
    CHECK_THROWS_WITH(g.redistribute(stale), Catch::Contains("carried attribute 1") && Catch::Contains("unset") &&
                                                 Catch::Contains("(rank " + std::to_string(world_size() - 1) + ")"));
  }
  // a position that is not finite on one rank: the same error on every rank, naming the particle
  if (world_rank() == world_size() - 1 && g.owned() > 0) {
    auto& grid = g.grid();
    std::vector<Index> user(static_cast<std::size_t>(grid.size()));
    B::copy(user.data(), grid.original_index(), sizeof(Index) * user.size(), CopyKind::DeviceToHost);
    const std::size_t slot = static_cast<std::size_t>(std::find(user.begin(), user.end(), Index(0)) - user.begin());
    const Real nan = std::numeric_limits<Real>::quiet_NaN();
    B::copy(grid.positions(Dim - 1) + slot, &nan, sizeof(Real), CopyKind::HostToDevice);
    B::synchronize();
  }
  CHECK_THROWS_WITH(g.redistribute(carried), Catch::Contains("has a non-finite position") &&
                                                 Catch::Contains("(rank " + std::to_string(world_size() - 1) + ")"));
}

TEST_CASE("redistribute(): migration and ghosts on the backend keep every particle once, with its attributes",
          "[mpi]") {
  const std::uint64_t seed = shared_seed();
  for (bool periodic : {true, false}) {
    redistribute_rounds<Host, double, 3>(periodic, seed, false);
    redistribute_rounds<Emulated, float, 3>(periodic, seed + 1, false);
    redistribute_rounds<Emulated, double, 2>(periodic, seed + 2, false);
    if (world_size() >= 4 && world_size() % 2 == 0) {
      redistribute_rounds<Host, float, 2>(periodic, seed + 3, true);
      redistribute_rounds<Emulated, double, 3>(periodic, seed + 4, true);
    }
    if (world_size() == 4) redistribute_rounds<Emulated, double, 3>(periodic, seed + 5, false, true);  // 4 x 1 x 1
  }
}

TEST_CASE("migration keeps every particle exactly once, across rank boundaries and the periodic wrap", "[mpi]") {
  const std::uint64_t seed = shared_seed();
  // the default decomposition, and slabs along x (with 4 or more ranks a rank has ranks that are not its neighbours:
  // the counts go between neighbours only)
  for (int run = 0; run < 4; ++run) {
    const bool slabs = run >= 2, periodic = run % 2 == 0;
    INFO((slabs ? "slabs" : "default decomposition") << (periodic ? ", periodic" : ", open"));
    const Box<double, 3> box = test_box<double, 3>(periodic, 9);
    mpi::DistributedGrid<Host, double, 3> g =
        slabs ? mpi::DistributedGrid<Host, double, 3>(MPI_COMM_WORLD, box, 1.0, {world_size(), 1, 1})
              : mpi::DistributedGrid<Host, double, 3>(MPI_COMM_WORLD, box, 1.0);
    CellGrid<Host, double, 3> shape(box, 1.0);
    const auto x = cellint::test::make_positions<double, 3>(shape.geometry(), 2.0, Distribution::Uniform, seed);
    const std::uint64_t n = x[0].size();
    g.particles().fields = 1;
    scatter(g, x);
    g.migrate(true);
    std::mt19937_64 rng(seed + static_cast<std::uint64_t>(g.rank()));
    int outside = 0, wrong_fields = 0;
    for (int step = 0; step < 20; ++step) {
      // each particle moves up to 0.9 of the narrowest sub-box (open box: reflected at the walls)
      double most = 1e300;
      for (int d = 0; d < 3; ++d) most = std::min(most, static_cast<double>(g.decomposition().width(d)));
      std::uniform_real_distribution<double> u(-0.9 * most, 0.9 * most);
      auto& p = g.particles();
      for (std::size_t i = 0; i < p.size(); ++i)
        for (int d = 0; d < 3; ++d) {
          double v = p.x[d][i] + u(rng);
          const double lo = box.origin[d], hi = box.origin[d] + box.lengths[d];
          if (!periodic) v = v < lo ? 2 * lo - v : v > hi ? 2 * hi - v : v;
          p.x[d][i] = v;
        }
      g.migrate();
      for (std::size_t i = 0; i < p.size(); ++i) {
        wrong_fields += p.field[i] != static_cast<double>(p.id[i]);
        for (int d = 0; d < 3; ++d) {
          const int c = g.decomposition().coord_of(d, p.x[d][i]);
          outside += c != g.coords()[d];
        }
      }
      CHECK(g.global_count() == n);
    }
    const auto ids = g.gather(g.particles().id);
    CHECK(g.sum(outside) == 0);
    CHECK(g.sum(wrong_fields) == 0);
    if (g.rank() == 0) {
      CHECK(ids.size() == n);  // every id once (a map: a duplicate would shrink it, and the count above holds)
      CHECK((ids.empty() || (ids.begin()->first == 0 && ids.rbegin()->first == n - 1)));
    }
  }
}

TEST_CASE("bad input is an error on every rank", "[mpi]") {
  const Box<double, 2> box = test_box<double, 2>(true, 8);
  const int size = world_size();
  // a decomposition that does not match the communicator
  CHECK_THROWS_WITH((mpi::DistributedGrid<Host, double, 2>(MPI_COMM_WORLD, box, 1.0, {size + 1, 1})),
                    Catch::Contains("ranks"));
  // sub-boxes thinner than the ghost layer: 8 wide, cut in 8 or more, with a ghost layer of 1.5
  if (size >= 8)
    CHECK_THROWS_WITH((mpi::DistributedGrid<Host, double, 2>(MPI_COMM_WORLD, box, 1.5, {size, 1})),
                      Catch::Contains("thinner than the ghost layer"));
  mpi::DistributedGrid<Host, double, 2> g(MPI_COMM_WORLD, box, 1.0);
  // a NaN position, on rank 0 only: every rank throws
  g.particles().clear();
  if (g.rank() == 0) {
    const double nan[2] = {std::nan(""), 0.0};
    g.particles().push(42, nan);
  }
  CHECK_THROWS_WITH(g.migrate(true), Catch::Contains("particle 42") && Catch::Contains("non-finite"));
  // a non-finite position that reaches exchange() without migrate(), on the last rank only: its grid's build fails
  // there alone, and every rank throws that error (the ghost plan's collectives come after the agreement on it)
  {
    mpi::DistributedGrid<Host, double, 2> e(MPI_COMM_WORLD, box, 1.0);
    if (e.rank() == size - 1) {
      const double bad[2] = {std::nan(""), 1.0};
      e.particles().push(9, bad);
    }
    CHECK_THROWS_WITH(e.exchange(), Catch::Contains("not finite"));
  }
  // a particle that jumped two sub-boxes along a split axis (with 3 or more ranks along it)
  if (size >= 4) {  // 4 or more ranks along y (9 long: sub-boxes at least 1.125 wide)
    mpi::DistributedGrid<Host, double, 2> j(MPI_COMM_WORLD, box, 1.0, {1, size});
    const auto& dec = j.decomposition();
    if (j.rank() == 0) {
      const double x[2] = {0.0, dec.lo(1, 2) + 0.1};  // sub-box 2 along y, two away from rank 0's
      j.particles().push(7, x);
    }
    CHECK_THROWS_WITH(j.migrate(), Catch::Contains("particle 7") && Catch::Contains("more than one sub-box"));
  }
  // outside an open box
  Box<double, 2> open = box;
  open.periodic[0] = open.periodic[1] = false;
  mpi::DistributedGrid<Host, double, 2> h(MPI_COMM_WORLD, open, 1.0);
  if (h.rank() == size - 1) {
    const double out[2] = {open.origin[0] + open.lengths[0] + 0.5, 0.0};
    h.particles().push(5, out);
  }
  CHECK_THROWS_WITH(h.migrate(true), Catch::Contains("particle 5") && Catch::Contains("outside the open box"));
}

}  // namespace

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rc = 0;
  {
    Catch::Session session;
    rc = session.run(argc, argv);
  }
  int worst = 0;
  MPI_Allreduce(&rc, &worst, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
  MPI_Finalize();
  return worst;
}
