// Grid geometry: cells per axis from the cutoff, x-fastest linearisation, clear errors.
#include <catch2/catch.hpp>

#include "cellint/core/grid_geometry.hpp"

using namespace cellint;

TEST_CASE("cells per axis are the largest count with width >= cutoff", "[host][geometry]") {
  const auto g = make_geometry(Box<double, 3>::cube(0.0, 10.0, false), 3.0);
  for (int d = 0; d < 3; ++d) {
    CHECK(g.cells[d] == 3);
    CHECK(g.width[d] >= 3.0);
  }
  const auto h = make_geometry(Box<float, 2>::cube(-1.0f, 32.0f, true), 1.0f);
  CHECK(h.cells[0] == 32);
  CHECK(h.cell_count() == 32 * 32);
  const auto w = make_geometry(Box<double, 3>::cube(0.0, 10.0, false), 1.0, 2.5);
  CHECK(w.cells[0] == 4);  // min_cell_width 2.5
}

TEST_CASE("non-cubic boxes and fewer than three cells on an open axis", "[host][geometry]") {
  Box<double, 3> b;
  b.lengths = Vec<double, 3>{{6.0, 1.5, 2.2}};
  const auto g = make_geometry(b, 1.0);
  CHECK(g.cells[0] == 6);
  CHECK(g.cells[1] == 1);
  CHECK(g.cells[2] == 2);
}

TEST_CASE("x-fastest linear index round-trips", "[host][geometry]") {
  Box<double, 3> b;
  b.lengths = Vec<double, 3>{{5.0, 4.0, 3.0}};
  const auto g = make_geometry(b, 1.0);
  for (Index l = 0; l < g.cell_count(); ++l) {
    Index c[3];
    g.coords(l, c);
    CHECK(g.linear(c) == l);
  }
  Index c[3] = {1, 0, 0};
  CHECK(g.linear(c) == 1);  // x fastest
  Index y[3] = {0, 1, 0};
  CHECK(g.linear(y) == 5);
  CHECK(g.axis_cell(5.0, 0) == 4);  // the upper face belongs to the last cell
  CHECK(g.axis_cell(0.0, 0) == 0);
}

TEST_CASE("bad geometry gives errors naming the limit", "[host][geometry][errors]") {
  using Catch::Matchers::Contains;
  CHECK_THROWS_WITH(make_geometry(Box<double, 3>::cube(0, 10, false), 0.0), Contains("cutoff must be positive"));
  CHECK_THROWS_WITH(make_geometry(Box<double, 3>::cube(0, 10, false), std::nan("")), Contains("cutoff"));
  CHECK_THROWS_WITH(make_geometry(Box<double, 3>::cube(0, 10, false), 11.0), Contains("larger than the box"));
  CHECK_THROWS_WITH(make_geometry(Box<double, 3>::cube(0, 10, true), 4.0),
                    Contains("periodic axis x") && Contains("at least 3 cells"));
  CHECK_THROWS_AS(make_geometry(Box<double, 3>::cube(0, -1, false), 1.0), InvalidArgument);
}
