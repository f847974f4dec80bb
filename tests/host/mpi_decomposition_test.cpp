// cellint::mpi's decomposition arithmetic, without MPI: the choice of ranks per axis, the owner of a position (edges,
// the upper face of an open box, wrapping, NaN), neighbours and their periodic shifts, and the checks' messages.
#include <catch2/catch.hpp>

#include <cmath>
#include <limits>

#include "cellint/mpi/decomposition.hpp"

namespace {
using namespace cellint;
using namespace cellint::mpi;

Box<double, 3> box3(double lx, double ly, double lz, bool periodic) {
  Box<double, 3> b;
  b.lengths[0] = lx;
  b.lengths[1] = ly;
  b.lengths[2] = lz;
  for (int d = 0; d < 3; ++d) b.periodic[d] = periodic;
  return b;
}

TEST_CASE("balanced_ranks: the least ghost surface, even counts on ties, fixed axes kept", "[mpi]") {
  const auto cube = box3(10, 10, 10, true);
  CHECK(balanced_ranks<double, 3>(1, cube) == std::array<int, 3>{1, 1, 1});
  CHECK(balanced_ranks<double, 3>(8, cube) == std::array<int, 3>{2, 2, 2});
  CHECK(balanced_ranks<double, 3>(4, cube) == std::array<int, 3>{2, 2, 1});  // (1 x 1 x 4 has the same surface)
  CHECK(balanced_ranks<double, 3>(7, cube) == std::array<int, 3>{7, 1, 1});  // a prime: one axis
  // a long box is cut along its long axis
  CHECK(balanced_ranks<double, 3>(4, box3(40, 10, 10, true)) == std::array<int, 3>{4, 1, 1});
  // fixed counts are kept; the rest is chosen
  CHECK(balanced_ranks<double, 3>(8, cube, {1, 0, 0}) == std::array<int, 3>{1, 4, 2});
  CHECK_THROWS_WITH((balanced_ranks<double, 3>(6, cube, {4, 0, 0})), Catch::Contains("cannot be split with 4"));
}

TEST_CASE("Decomposition: owners, edges, wrapping and neighbours", "[mpi]") {
  Decomposition<double, 2> d;
  d.global.origin[0] = -1;
  d.global.lengths[0] = 9;  // [-1, 8): three sub-boxes of 3
  d.global.lengths[1] = 4;
  d.global.periodic[0] = true;
  d.global.periodic[1] = false;
  d.ranks = {3, 2};
  d.ghost = 1;
  REQUIRE_NOTHROW(d.check(6));
  CHECK(d.lo(0, 1) == 2.0);
  CHECK(d.hi(0, 2) == 8.0);
  CHECK(d.coord_of(0, -1.0) == 0);
  CHECK(d.coord_of(0, 1.999999) == 0);
  CHECK(d.coord_of(0, 2.0) == 1);  // a lower edge belongs to its sub-box
  CHECK(d.coord_of(0, 8.0) == 0);  // periodic: wrapped to the origin
  CHECK(d.coord_of(0, -1.5) == 2);
  CHECK(d.coord_of(0, 17.5) == 0);  // two lengths beyond
  CHECK(d.coord_of(1, 4.0) == 1);   // the upper face of an open box is inside (as for CellGrid)
  CHECK(d.coord_of(1, 4.001) == -1);
  CHECK(d.coord_of(1, -0.001) == -1);
  CHECK(d.coord_of(1, std::numeric_limits<double>::quiet_NaN()) == -1);
  CHECK(d.rank_of({2, 1}) == 5);
  CHECK(d.coords_of(5) == std::array<int, 2>{2, 1});
  double shift = 0;
  CHECK(d.neighbor({0, 0}, 0, -1, &shift) == 2);  // through the periodic boundary: the position gains +L
  CHECK(shift == 9.0);
  CHECK(d.neighbor({2, 0}, 0, +1, &shift) == 0);
  CHECK(shift == -9.0);
  CHECK(d.neighbor({1, 0}, 0, +1, &shift) == 2);
  CHECK(shift == 0.0);
  CHECK(d.neighbor({0, 0}, 1, -1) == -1);  // open axis: none
  CHECK(d.neighbor({0, 0}, 1, +1) == 3);
}

TEST_CASE("Decomposition::check names the limit", "[mpi]") {
  Decomposition<double, 3> d;
  d.global = box3(12, 12, 12, true);
  d.ranks = {2, 2, 1};
  d.ghost = 2.5;
  CHECK_THROWS_WITH(d.check(3), Catch::Contains("4 sub-boxes but the communicator has 3 ranks"));
  d.ranks = {6, 1, 1};  // 2 wide, thinner than the ghost layer
  CHECK_THROWS_WITH(d.check(6), Catch::Contains("along axis 0 the 6 sub-boxes are 2 wide, thinner than the ghost"));
  d.ranks = {4, 1, 1};  // 3 wide: fine
  CHECK_NOTHROW(d.check(4));
  d.ghost = std::nan("");
  CHECK_THROWS_WITH(d.check(4), Catch::Contains("ghost layer's width"));
}

}  // namespace
