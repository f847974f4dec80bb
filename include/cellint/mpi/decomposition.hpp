#pragma once
/// @file
/// A Cartesian decomposition of the box over ranks: P_0 x ... x P_{Dim-1} sub-boxes of equal size, rank r at
/// coordinates (c_0, c_1, ...) with c_0 fastest (the order of the cells), each sub-box [origin + c L / P, origin +
/// (c + 1) L / P) per axis. No MPI here: the arithmetic alone, which DistributedGrid and the tests share.
///
/// A sub-box holds its own particles plus a ghost layer of width `ghost` (>= the cutoff, + the skin with neighbour
/// lists) copied from its neighbours. Along an axis with one rank the sub-box is the whole box: a periodic axis stays
/// periodic in the rank's grid (no ghosts), an open one stays open.

#include <algorithm>
#include <array>
#include <cmath>
#include <string>
#include <vector>

#include "cellint/core/box.hpp"
#include "cellint/core/error.hpp"

namespace cellint::mpi {

/// Ranks per axis for `nranks` ranks on `box`: the factorisation whose sub-boxes are closest to cubes (least surface
/// per volume, so least halo), axes with a fixed count in `fixed` (> 0) kept. Throws InvalidArgument when the fixed
/// counts do not divide `nranks`.
template <class Real, int Dim>
std::array<int, Dim> balanced_ranks(int nranks, const Box<Real, Dim>& box, std::array<int, Dim> fixed = {}) {
  int free_count = nranks;
  for (int d = 0; d < Dim; ++d)
    if (fixed[d] > 0) {
      if (free_count % fixed[d] != 0)
        throw InvalidArgument(detail::cat("cellint::mpi: ", nranks, " ranks cannot be split with ", fixed[d],
                                          " along axis ", d, "; give counts whose product is the number of ranks"));
      free_count /= fixed[d];
    }
  // every assignment of the free count's divisors to the free axes whose product is the count (an odometer)
  std::vector<int> divisors;
  for (int p = 1; p <= free_count; ++p)
    if (free_count % p == 0) divisors.push_back(p);
  std::array<int, Dim> best = fixed;
  double best_cost = -1;
  int best_most = 0;
  std::array<std::size_t, Dim> k{};
  for (;;) {
    std::array<int, Dim> trial = fixed;
    long product = 1;
    int most = 0;
    double cost = 0;  // surface of one sub-box over its volume: the faces of the split axes
    for (int d = 0; d < Dim; ++d) {
      if (fixed[d] <= 0) {
        trial[d] = divisors[k[d]];
        product *= trial[d];
      }
      most = std::max(most, trial[d]);
      if (trial[d] > 1) cost += trial[d] / static_cast<double>(box.lengths[d]);
    }
    // the least surface; of equal ones, the most even counts
    if (product == free_count &&
        (best_cost < 0 || cost < best_cost - 1e-12 || (cost <= best_cost + 1e-12 && most < best_most)))
      best_cost = cost, best_most = most, best = trial;
    int d = 0;
    for (; d < Dim; ++d) {
      if (fixed[d] > 0) continue;
      if (++k[d] < divisors.size()) break;
      k[d] = 0;
    }
    if (d == Dim) break;
  }
  return best;
}

/// The decomposition: the global box, ranks per axis and the ghost layer's width.
template <class Real, int Dim>
struct Decomposition {
  Box<Real, Dim> global{};       ///< the whole box
  std::array<int, Dim> ranks{};  ///< ranks per axis
  Real ghost = 0;                ///< ghost layer width (>= cutoff)

  /// Checks the decomposition against `nranks` ranks: the product of the counts must be the number of ranks, and
  /// every sub-box split along an axis must be at least as wide as the ghost layer (else a particle's neighbours
  /// would lie beyond the next rank). Throws InvalidArgument naming the axis and the limit.
  void check(int nranks) const {
    long product = 1;
    for (int d = 0; d < Dim; ++d) {
      if (ranks[d] < 1)
        throw InvalidArgument(detail::cat("cellint::mpi: ", ranks[d], " ranks along axis ", d, "; give at least 1"));
      product *= ranks[d];
    }
    if (product != nranks)
      throw InvalidArgument(detail::cat("cellint::mpi: the decomposition has ", product, " sub-boxes but the ",
                                        "communicator has ", nranks, " ranks; run with ", product,
                                        " ranks or let the decomposition choose (counts 0)"));
    if (!(ghost > Real(0)) || !std::isfinite(static_cast<double>(ghost)))
      throw InvalidArgument(detail::cat("cellint::mpi: the ghost layer's width is ", ghost,
                                        "; give the cutoff (plus the skin with neighbour lists)"));
    for (int d = 0; d < Dim; ++d)
      if (ranks[d] > 1 && width(d) < ghost)
        throw InvalidArgument(detail::cat("cellint::mpi: along axis ", d, " the ", ranks[d], " sub-boxes are ",
                                          width(d), " wide, thinner than the ghost layer (", ghost,
                                          "); use fewer ranks along that axis"));
  }
  /// Width of a sub-box along axis d.
  Real width(int d) const { return global.lengths[d] / static_cast<Real>(ranks[d]); }
  /// Number of ranks.
  int size() const {
    int n = 1;
    for (int d = 0; d < Dim; ++d) n *= ranks[d];
    return n;
  }
  /// Rank of coordinates c (each in [0, ranks[d])), x fastest.
  int rank_of(const std::array<int, Dim>& c) const {
    int r = 0;
    for (int d = Dim - 1; d >= 0; --d) r = r * ranks[d] + c[d];
    return r;
  }
  /// Coordinates of rank r.
  std::array<int, Dim> coords_of(int r) const {
    std::array<int, Dim> c{};
    for (int d = 0; d < Dim; ++d) {
      c[d] = r % ranks[d];
      r /= ranks[d];
    }
    return c;
  }
  /// Lower edge of the sub-boxes at coordinate c along axis d.
  Real lo(int d, int c) const { return global.origin[d] + width(d) * static_cast<Real>(c); }
  /// Upper edge (the next one's lower edge; the box's end for the last).
  Real hi(int d, int c) const { return c + 1 == ranks[d] ? global.origin[d] + global.lengths[d] : lo(d, c + 1); }
  /// Position x wrapped into the box on periodic axes (open axes unchanged).
  Real wrap(int d, Real x) const {
    if (!global.periodic[d]) return x;
    const Real L = global.lengths[d];
    Real u = x - global.origin[d];
    u -= L * std::floor(u / L);
    if (u >= L) u = 0;  // (rounding of a tiny negative)
    return global.origin[d] + u;
  }
  /// Coordinate along axis d of the sub-box that owns (wrapped) position x; -1 outside an open box or for NaN.
  int coord_of(int d, Real x) const {
    const Real w = wrap(d, x), u = w - global.origin[d];
    // (the upper face of an open box is inside, as for CellGrid)
    if (!(u >= Real(0)) || !(u < global.lengths[d] || (!global.periodic[d] && u == global.lengths[d]))) return -1;
    int c = static_cast<int>(std::floor(u / width(d)));
    if (c >= ranks[d]) c = ranks[d] - 1;
    // the edges lo()/hi() decide, not the division's rounding
    while (c > 0 && w < lo(d, c)) --c;
    while (c + 1 < ranks[d] && w >= hi(d, c)) ++c;
    return c;
  }
  /// The neighbour of coordinates c one step along axis d in direction dir (+1 or -1): its rank, or -1 past the end of
  /// an open axis. `shift` is what a particle's position gains when it crosses to that neighbour through the periodic
  /// boundary (+/- L, else 0).
  int neighbor(std::array<int, Dim> c, int d, int dir, Real* shift = nullptr) const {
    int n = c[d] + dir;
    Real s = 0;
    if (n < 0 || n >= ranks[d]) {
      if (!global.periodic[d]) return -1;
      s = n < 0 ? global.lengths[d] : -global.lengths[d];
      n = (n + ranks[d]) % ranks[d];
    }
    if (shift) *shift = s;
    c[d] = n;
    return rank_of(c);
  }
};

}  // namespace cellint::mpi
