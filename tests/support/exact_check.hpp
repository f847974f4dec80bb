#pragma once
// Functors whose results are exact integers (so every strategy must agree bit for bit with
// Par-Part-NoLoop) and the check that compares them: they cover what the oracle's Probe does
// not: no payload, no cutoff test, and a padded 16-byte payload.

#include <catch2/catch.hpp>

#include <algorithm>
#include <cstring>
#include <vector>

#include "support/strategy_check.hpp"

namespace cellint::test {

/// Counts every candidate pair of the 3^Dim neighbour cells (no cutoff test), no payload.
template <class Real, int Dim>
struct CountCandidates {
  using Accum = unsigned;
  static constexpr bool cutoff_test = false;
  CELLINT_HD void operator()(unsigned& n, const NoPayload&, const NoPayload&,
                             const Vec<Real, Dim>&, Real) const {
    ++n;
  }
};

/// Mixes the original indices of target and source into an exact integer sum; the payload
/// (8-byte aligned, 16 bytes) sits behind the staged coordinates.
template <class Real, int Dim>
struct IdMix {
  struct Payload {
    double weight;
    Index id;
  };
  struct Accum {
    unsigned long long mix;
    unsigned long long count;
  };
  template <class View>
  CELLINT_HD Payload load(const View& v, Index i) const {
    return {1.0, v.original[i]};
  }
  CELLINT_HD void operator()(Accum& a, const Payload& t, const Payload& s, const Vec<Real, Dim>&,
                             Real) const {
    a.mix += static_cast<unsigned long long>(t.id + 1) * 1000003ull +
             static_cast<unsigned long long>(s.id + 1) * static_cast<unsigned long long>(s.weight);
    a.count += 1;
  }
};

/// Runs strategy `k` and Par-Part-NoLoop with functor `f` on the same grid and requires
/// bit-identical results (the functors above accumulate integers, so the order does not matter).
template <class Backend, class Real, int Dim, class F>
void agree_with_par_part(StrategyKind k, const Case& c, const F& f, const Tuning& t = {}) {
  const std::uint64_t seed = fresh_seed();
  INFO(to_string(k) << ", " << Dim << "D, " << c.cells << " cells/axis, " << c.ppc << " per cell, "
                    << to_string(c.dist) << (c.periodic ? ", periodic" : ", open") << ", seed " << seed);
  Box<Real, Dim> box;
  for (int d = 0; d < Dim; ++d) {
    box.origin[d] = Real(0.5) * d;
    box.lengths[d] = static_cast<Real>(c.cells * c.width);
    box.periodic[d] = c.periodic;
  }
  GridOptions<Real> opts;
  opts.min_cell_width = static_cast<Real>(c.width);
  opts.stable = c.stable;
  CellGrid<Backend, Real, Dim> grid(box, Real(1), opts);
  grid.build(make_positions(grid.geometry(), c.ppc, c.dist, seed));
  using Accum = typename F::Accum;
  const std::size_t n = static_cast<std::size_t>(std::max<Index>(grid.size(), 1));
  Buffer<Backend, Accum> got(n), want(n);
  got.fill_bytes(0xFF);
  want.fill_bytes(0xEE);
  interact_with(StrategyKind::ParPartNoLoop, grid, f, want.data());
  REQUIRE(supports(k, grid, f, t).ok);
  interact_with(k, grid, f, got.data(), t);
  Backend::synchronize();
  const std::vector<Accum> a = got.to_host(), b = want.to_host();
  int bad = 0;
  for (Index i = 0; i < grid.size(); ++i) bad += std::memcmp(&a[i], &b[i], sizeof(Accum)) != 0;
  CHECK(bad == 0);
}

}  // namespace cellint::test
