#pragma once
// Seeded particle-position generators for tests: uniform, clustered, lattice, on cell/box faces.

#include <algorithm>
#include <array>
#include <cstdint>
#include <cstdlib>
#include <random>
#include <vector>

#include "cellint/core/grid_geometry.hpp"

namespace cellint::test {

enum class Distribution { Uniform, Clustered, Lattice, OnFaces };

inline const char* to_string(Distribution d) {
  switch (d) {
    case Distribution::Uniform: return "uniform";
    case Distribution::Clustered: return "clustered";
    case Distribution::Lattice: return "lattice";
    case Distribution::OnFaces: return "on-faces";
  }
  return "?";
}

/// A fresh seed per run (CELLINT_TEST_SEED overrides it to replay a failure).
inline std::uint64_t fresh_seed() {
  if (const char* s = std::getenv("CELLINT_TEST_SEED")) return std::strtoull(s, nullptr, 10);
  static std::uint64_t base = std::random_device{}() * 0x9E3779B97F4A7C15ull;
  return base++;
}

/// Non-deduced wrapper (std::array's size is a std::size_t, Dim an int).
template <class T> struct identity { using type = T; };

template <class Real, int Dim>
using Positions = std::array<std::vector<Real>, Dim>;

/// `ppc` particles per cell on average over the grid `g` (its box), drawn from `dist`.
///  - Clustered: a few cells (1 in 16, at least one) hold 20x the average, the rest uniform;
///    about one cell in 8 is left empty.
///  - Lattice: a simple cubic lattice with ~ppc points per cell, jittered by nothing.
///  - OnFaces: uniform, then each coordinate snapped with probability 1/2 onto a cell face
///    (box faces included; the upper face of an open axis too).
template <class Real, int Dim>
Positions<Real, Dim> make_positions(const GridGeometry<Real, Dim>& g, double ppc, Distribution dist,
                                    std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> u(0.0, 1.0);
  const Index nc = g.cell_count();
  Positions<Real, Dim> p;
  auto push_in_cell = [&](Index cell) {
    Index c[Dim];
    g.coords(cell, c);
    for (int d = 0; d < Dim; ++d) {
      double x = g.box.origin[d] + (c[d] + u(rng)) * static_cast<double>(g.width[d]);
      x = std::min(x, static_cast<double>(g.box.origin[d]) + g.box.lengths[d]);
      p[d].push_back(static_cast<Real>(x));
    }
  };
  auto push_uniform = [&]() {
    for (int d = 0; d < Dim; ++d) p[d].push_back(static_cast<Real>(g.box.origin[d] + u(rng) * g.box.lengths[d]));
  };
  const Index n = static_cast<Index>(ppc * nc + 0.5);
  switch (dist) {
    case Distribution::Uniform:
      for (Index i = 0; i < n; ++i) push_uniform();
      break;
    case Distribution::Clustered: {
      std::vector<char> empty(static_cast<std::size_t>(nc), 0);
      for (Index c = 0; c < nc; ++c) empty[c] = u(rng) < 0.125;
      const Index dense = std::max<Index>(1, nc / 16);
      std::vector<char> chosen(static_cast<std::size_t>(nc), 0);
      for (Index k = 0; k < dense; ++k) {
        Index cell = static_cast<Index>(u(rng) * nc) % nc;
        while (chosen[cell]) cell = static_cast<Index>(u(rng) * nc) % nc;  // distinct: no cell holds 40x or 60x
        chosen[cell] = 1;
        empty[cell] = 0;
        for (int j = 0; j < static_cast<int>(20 * ppc + 0.5); ++j) push_in_cell(cell);
      }
      for (Index i = 0; i < n; ++i) {
        const Index cell = static_cast<Index>(u(rng) * nc) % nc;
        if (!empty[cell]) push_in_cell(cell);
      }
      break;
    }
    case Distribution::Lattice: {
      int per_axis = 1;
      while (std::pow(per_axis + 1, Dim) <= ppc) ++per_axis;
      Index m[Dim];
      Index total = 1;
      for (int d = 0; d < Dim; ++d) {
        m[d] = g.cells[d] * per_axis;
        total *= m[d];
      }
      for (Index k = 0; k < total; ++k) {
        Index r = k;
        for (int d = 0; d < Dim; ++d) {
          const Index q = r % m[d];
          r /= m[d];
          p[d].push_back(static_cast<Real>(g.box.origin[d] + (q + 0.5) * static_cast<double>(g.box.lengths[d]) / m[d]));
        }
      }
      break;
    }
    case Distribution::OnFaces:
      for (Index i = 0; i < n; ++i) {
        for (int d = 0; d < Dim; ++d) {
          double x = g.box.origin[d] + u(rng) * g.box.lengths[d];
          if (u(rng) < 0.5) {
            const Index face = static_cast<Index>(u(rng) * (g.cells[d] + 1));  // 0..cells
            x = g.box.origin[d] + face * static_cast<double>(g.width[d]);
            if (g.box.periodic[d] && face == g.cells[d]) x = g.box.origin[d];
          }
          p[d].push_back(static_cast<Real>(x));
        }
      }
      break;
  }
  return p;
}

/// Converts positions to another precision.
template <class To, class From, std::size_t Dim>
std::array<std::vector<To>, Dim> convert(const std::array<std::vector<From>, Dim>& p) {
  std::array<std::vector<To>, Dim> r;
  for (std::size_t d = 0; d < Dim; ++d) r[d].assign(p[d].begin(), p[d].end());
  return r;
}

}  // namespace cellint::test
