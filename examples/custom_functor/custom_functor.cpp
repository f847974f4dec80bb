// The smallest user program: a custom functor (a Gaussian density sum) on the CPU. It is also
// the consumer test that CI builds against an installed cellint (tests/consumer).
#include <cellint/cellint.hpp>

#include <cmath>
#include <cstdio>

// [readme-example]
struct GaussianDensity {
  using Accum = double;  // what each particle accumulates
  double inv_h2;         // parameters live in the functor, by value
  CELLINT_HD void operator()(double& rho, const cellint::NoPayload&, const cellint::NoPayload&,
                             const cellint::Vec<double, 3>& /*dr*/, double r2) const {
    rho += std::exp(-r2 * inv_h2);  // called for every neighbour closer than the cutoff
  }
};

int main() {
  using namespace cellint;
  CellGrid<Host, double, 3> grid(Box<double, 3>::cube(0.0, 4.0, /*periodic=*/true), /*cutoff=*/1.0);
  grid.build(std::array<std::vector<double>, 3>{{{0.2, 3.7, 2.0}, {1.0, 1.0, 3.0}, {1.0, 1.0, 1.0}}});
  std::vector<double> rho(grid.size());                  // results in the grid's sorted order
  interact(grid, GaussianDensity{1.0}, rho.data());      // Auto picks the strategy
  const std::vector<double> user = grid.to_user_order(rho.data());
  // [readme-example]
  const double expect = std::exp(-0.25);  // particles 0 and 1 are 0.5 apart across the x face
  std::printf("rho = %.6f %.6f %.6f (expected %.6f %.6f 0)\n", user[0], user[1], user[2], expect, expect);
  const bool ok = std::abs(user[0] - expect) < 1e-12 && std::abs(user[1] - expect) < 1e-12 && user[2] == 0.0;
  return ok ? 0 : 1;
}
