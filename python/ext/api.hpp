#pragma once
// The interface between the Python module (module.cpp, compiled by the host compiler with nanobind)
// and the grids of each backend (compiled by the host compiler for the CPU, by nvcc for CUDA). It
// uses the standard library only: neither side sees the other's headers.

#include <array>
#include <cstdint>
#include <memory>
#include <string>

namespace cellint::py {

/// Where a grid's memory lives.
enum class Device { Cpu, Cuda };

/// The built-in interactions.
enum class Interaction { LennardJones, NeighborCount, Density, SoftSphere };

/// Parameters of a built-in interaction (each reads the fields it needs).
struct Request {
  Interaction kind = Interaction::NeighborCount;
  double epsilon = 1, sigma = 1;  // Lennard-Jones, soft sphere
  bool shifted = false;           // Lennard-Jones: energy shifted to 0 at the cutoff
  double softening = 0;           // Lennard-Jones: r^2 -> r^2 + softening^2
  double alpha = 2;               // soft sphere: V = epsilon / alpha (1 - r / sigma)^alpha
  bool per_particle = false;      // density: attached "mass"; soft sphere: attached "radius"
  int kernel = 0;                 // density: 0 Gaussian, 1 cubic spline, 2 Wendland C2
  double h = 1;                   // density: smoothing length
  double mass = 1;                // density: mass of every particle (without an attached mass)
  bool self_term = true;          // density: add the particle's own m W(0)
  std::string strategy = "auto";  // a strategy's name (cellint::strategy_from_name)
  bool statistics = false;        // Tuning::statistics
  bool reproducible = false;      // Tuning::reproducible
  // outputs, user order, in the grid's memory and real type (null: not wanted)
  void* force = nullptr;   // (n, dim)
  void* energy = nullptr;  // (n)
  void* virial = nullptr;  // (n)
  void* scalar = nullptr;  // (n): density, or int32 neighbour counts
};

/// What one call did (cellint::Report, flattened).
struct CallReport {
  std::string strategy;
  unsigned blocks = 0, threads = 0;
  std::uint64_t shared_bytes = 0;
  double tuning_ms = 0;
  bool statistics = false;
  std::uint64_t pairs_examined = 0, pairs_within = 0;
  bool each_pair_once = false;
  double ms = 0;
};

/// Where the second pass of a pair search writes (arrays of `pairs` rows, the grid's memory).
struct PairsOut {
  std::uint64_t pairs = 0;  // rows of the arrays: must be what the last count_pairs() returned
  std::int64_t* i = nullptr;
  std::int64_t* j = nullptr;
  void* distance = nullptr;       // real
  void* vector = nullptr;         // real (pairs, dim): x_j - x_i + S L, or null
  std::int32_t* shift = nullptr;  // (pairs, dim): S, or null
};

/// A CellGrid of one backend, real type and dimension, behind a virtual interface.
class GridBase {
 public:
  virtual ~GridBase() = default;
  virtual Device device() const = 0;
  virtual int dim() const = 0;
  virtual int real_bytes() const = 0;
  virtual int device_index() const = 0;
  /// Bins n particles whose positions are a row-major (n, dim) array in the grid's memory.
  virtual void build(const void* positions, std::int64_t n) = 0;
  virtual std::int64_t size() const = 0;
  virtual std::int64_t max_per_cell() const = 0;
  virtual std::array<std::int64_t, 3> cells() const = 0;
  /// Attaches one value per particle (user order, grid memory, real type) as "mass" (0) or "radius" (1).
  virtual void attach(int which, const void* values) = 0;
  virtual bool attached(int which) const = 0;
  /// Copies the sorted slot -> user index permutation (int64, grid memory) and the sorted positions (row-major).
  virtual void sorted(std::int64_t* index, void* positions) const = 0;
  /// Runs a built-in interaction into the request's outputs.
  virtual CallReport interact(const Request& r) = 0;
  /// First pass of the pair search: counts pairs closer than `cutoff` (each once when `half`) and returns the total.
  virtual std::uint64_t count_pairs(double cutoff, bool half) = 0;
  /// Second pass: writes the pairs counted by the last count_pairs(), grouped by i in ascending order.
  virtual void fill_pairs(const PairsOut& out) = 0;
};

/// What a grid is made of.
struct GridSpec {
  int dim = 3;
  int real_bytes = 8;
  std::array<double, 3> lo{}, length{};
  std::array<bool, 3> periodic{};
  double cutoff = 1;
  double min_cell_width = 0;
  bool stable = false;
  int device_id = 0;
};

std::unique_ptr<GridBase> make_cpu_grid(const GridSpec& s);
#ifdef CELLINT_PY_CUDA
std::unique_ptr<GridBase> make_cuda_grid(const GridSpec& s);
std::string cuda_device_name(int device_id);
#endif

/// Seconds spent inside the library's calls (for measuring the Python layer's own overhead).
double& cpp_seconds();

}  // namespace cellint::py
