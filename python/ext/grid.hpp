#pragma once
// Grid<B, R, D>: a cellint::CellGrid behind the GridBase interface. The interaction calls are
// declared here and defined in calls.hpp, which each generated translation unit instantiates for
// one group of functors (the instantiation matrix is split so that builds run in parallel).

#include <chrono>
#include <optional>

#include "api.hpp"
#include "cpu_pairs.hpp"
#include "functors.hpp"

namespace cellint::py {

template <class B, class R, int D>
class Grid;

/// The groups of built-in interactions, one translation unit each per backend, real type and dimension.
template <class B, class R, int D>
CallReport call_lennard_jones(Grid<B, R, D>& g, const Request& r);
template <class B, class R, int D>
CallReport call_count(Grid<B, R, D>& g, const Request& r);
template <class B, class R, int D>
CallReport call_density(Grid<B, R, D>& g, const Request& r);
template <class B, class R, int D>
CallReport call_soft_sphere(Grid<B, R, D>& g, const Request& r);
template <class B, class R, int D>
std::uint64_t call_count_pairs(Grid<B, R, D>& g, double cutoff, bool half);
template <class B, class R, int D>
void call_fill_pairs(Grid<B, R, D>& g, const PairsOut& out);

/// Adds the time of its scope to cpp_seconds().
struct CppClock {
  std::chrono::steady_clock::time_point t0 = std::chrono::steady_clock::now();
  ~CppClock() { cpp_seconds() += std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count(); }
};

/// Makes a grid's GPU the calling thread's current device for one call, and restores the previous one after it (a
/// no-op for the CPU).
template <class B>
struct CurrentDevice {
  explicit CurrentDevice(int) {}
};
#if defined(CELLINT_PY_CUDA) && defined(__CUDACC__)
template <>
struct CurrentDevice<Cuda> {
  int previous = -1, device;
  explicit CurrentDevice(int d) : device(d) {
    if (cudaGetDevice(&previous) == cudaSuccess && previous != device) cudaSetDevice(device);
  }
  ~CurrentDevice() {
    if (previous >= 0 && previous != device) cudaSetDevice(previous);
  }
  CurrentDevice(const CurrentDevice&) = delete;
  CurrentDevice& operator=(const CurrentDevice&) = delete;
};
#endif

template <class B, class R, int D>
class Grid final : public GridBase {
 public:
  using CG = CellGrid<B, R, D>;
  static Box<R, D> box_of(const GridSpec& s) {
    Box<R, D> b;
    for (int d = 0; d < D; ++d) {
      b.origin[d] = static_cast<R>(s.lo[d]);
      b.lengths[d] = static_cast<R>(s.length[d]);
      b.periodic[d] = s.periodic[d];
    }
    return b;
  }
  static GridOptions<R> options_of(const GridSpec& s) {
    GridOptions<R> o;
    o.min_cell_width = static_cast<R>(s.min_cell_width);
    o.stable = s.stable;
    return o;
  }
  explicit Grid(const GridSpec& s) : spec(s), grid(box_of(s), static_cast<R>(s.cutoff), options_of(s)) {}

  Device device() const override { return B::device_memory ? Device::Cuda : Device::Cpu; }
  int dim() const override { return D; }
  int real_bytes() const override { return sizeof(R); }
  int device_index() const override { return spec.device_id; }

  void build(const void* positions, std::int64_t n) override {
    CppClock clock;
    CurrentDevice<B> on(spec.device_id);
    CELLINT_EXPECTS(n >= 0 && n <= CG::max_size(), "cellint.CellGrid.build: ", n, " particles; at most ",
                    CG::max_size());
    const Index m = static_cast<Index>(n);
    Deinterleave<R, D> k{static_cast<const R*>(positions), {}};
    std::array<const R*, D> xyz;
    for (int d = 0; d < D; ++d) {
      axis[d].resize(static_cast<std::size_t>(std::max<Index>(m, 1)));
      k.out[d] = axis[d].data();
      xyz[d] = axis[d].data();
    }
    detail::parallel_for<B>(m, k, grid.stream());
    pairs_counted = false;
    grid.build_from_backend(xyz, m);
    wraps.resize(static_cast<std::size_t>(D) * static_cast<std::size_t>(std::max<Index>(m, 1)));
    RecordWraps<R, D> w{static_cast<const R*>(positions), grid.original_index(), {}, {}, m, wraps.data()};
    for (int d = 0; d < D; ++d) {
      w.pos[d] = grid.positions(d);
      w.inv_length[d] = grid.geometry().box.periodic[d] ? R(1) / grid.geometry().box.lengths[d] : R(0);
    }
    detail::parallel_for<B>(m, w, grid.stream());
    if (m != last_n)  // (the library keeps attributes for a build of the same count, even after a failed one)
      for (auto& h : handles) h.reset();
    last_n = m;
  }
  std::int64_t size() const override { return grid.built() ? grid.size() : 0; }
  std::int64_t max_per_cell() const override { return grid.built() ? grid.max_per_cell() : 0; }
  std::array<std::int64_t, 3> cells() const override {
    std::array<std::int64_t, 3> c{1, 1, 1};
    for (int d = 0; d < D; ++d) c[d] = grid.geometry().cells[d];
    return c;
  }
  void attach(int which, const void* values) override {
    CppClock clock;
    CurrentDevice<B> on(spec.device_id);
    CELLINT_EXPECTS(grid.built(), "cellint.CellGrid.attach: call build() first");
    const Index n = grid.size();
    std::vector<R> h(static_cast<std::size_t>(n));
    if (n) B::copy(h.data(), values, h.size() * sizeof(R), CopyKind::DeviceToHost, grid.stream());
    B::synchronize(grid.stream());
    if (handles[which]) {  // replace the values of the attribute already attached
      grid.from_user_order(h, grid.attribute(*handles[which]));
    } else {
      handles[which] = grid.attach(h.data());
    }
  }
  bool attached(int which) const override { return handles[which].has_value(); }
  void sorted(std::int64_t* index, void* positions) const override {
    CppClock clock;
    CurrentDevice<B> on(spec.device_id);
    CELLINT_EXPECTS(grid.built(), "cellint.CellGrid: call build() first");
    SortedCopy<R, D> k{grid.original_index(), {}, index, static_cast<R*>(positions)};
    for (int d = 0; d < D; ++d) k.pos[d] = grid.positions(d);
    detail::parallel_for<B>(grid.size(), k, grid.stream());
    B::synchronize(grid.stream());
  }
  CallReport interact(const Request& r) override {
    CppClock clock;
    CurrentDevice<B> on(spec.device_id);
    CELLINT_EXPECTS(grid.built(), "cellint.CellGrid.interact: call build() first");
    switch (r.kind) {
      case Interaction::LennardJones:
        return call_lennard_jones(*this, r);
      case Interaction::NeighborCount:
        return call_count(*this, r);
      case Interaction::Density:
        return call_density(*this, r);
      case Interaction::SoftSphere:
        return call_soft_sphere(*this, r);
    }
    throw InvalidArgument("cellint: unknown interaction");
  }
  std::uint64_t count_pairs(double cutoff, bool half) override {
    CppClock clock;
    CurrentDevice<B> on(spec.device_id);
    CELLINT_EXPECTS(grid.built(), "cellint.CellGrid.neighbor_pairs: call build() first");
    CELLINT_EXPECTS(cutoff > 0 && cutoff <= spec.cutoff, "cellint.CellGrid.neighbor_pairs: cutoff ", cutoff,
                    " must be positive and at most the grid's cutoff ", spec.cutoff);
    return call_count_pairs(*this, cutoff, half);
  }
  void fill_pairs(const PairsOut& out) override {
    CppClock clock;
    CurrentDevice<B> on(spec.device_id);
    CELLINT_EXPECTS(pairs_counted && grid.built(), "cellint: fill_pairs without count_pairs");
    CELLINT_EXPECTS(out.pairs == pair_total, "cellint: fill_pairs for ", out.pairs,
                    " pairs, but the last "
                    "count_pairs() found ",
                    pair_total, " (was the grid used from another thread in between?)");
    call_fill_pairs(*this, out);
  }

  GridSpec spec;
  CG grid;
  Index last_n = -1;                       // particles of the last successful build()
  std::optional<Attribute<R>> handles[2];  // mass, radius
  // the pair search between its two passes
  bool pairs_counted = false;
  PairRule<R, D> rule;
  Buffer<B, std::uint32_t> pair_count, pair_offset;
  std::uint64_t pair_total = 0;
  Buffer<B, std::uint64_t> pair_packed;  // the GPU's second pass: packed slots, then expanded into the outputs
  Buffer<B, std::int32_t> wraps;  // RecordWraps's: the pair search's shifts refer to the positions given to build()
  // scratch kept from call to call: an allocation on a GPU costs more than a small call's work (and a free waits)
  Buffer<B, R> axis[D];                   // build(): one array per axis
  Buffer<B, unsigned char> accumulators;  // interact(): the functor's sorted results
  Buffer<B, std::uint32_t> pair_rows;     // the pair search's per-target rows, sorted order
  Buffer<B, std::uint64_t> small;         // a few words read back by the host
  /// Backend scratch of `n` elements of T, at least one (grown, never shrunk).
  template <class T>
  T* accumulator_space(Index n) {
    accumulators.resize(sizeof(T) * static_cast<std::size_t>(std::max<Index>(n, 1)));
    return reinterpret_cast<T*>(accumulators.data());
  }
  CpuPairs<R, D> cpu_pairs;  // the CPU's pair search (Host)
};

/// The library's Report, flattened.
inline CallReport flatten(const Report& rep) {
  CallReport c;
  c.strategy = to_string(rep.strategy);
  c.blocks = rep.shape.grid;
  c.threads = rep.shape.block;
  c.shared_bytes = rep.shape.shared_bytes;
  c.tuning_ms = rep.tuning_ms;
  c.statistics = rep.stats.collected;
  c.pairs_examined = rep.stats.pairs_examined;
  c.pairs_within = rep.stats.pairs_within;
  c.each_pair_once = rep.stats.each_pair_once;
  c.ms = rep.stats.ms;
  return c;
}

/// Strategy by name (ValueError listing the names otherwise).
inline StrategyKind strategy_named(const std::string& name) {
  const auto k = strategy_from_name(name);
  CELLINT_EXPECTS(k.has_value(), "cellint: no strategy named '", name, "'; the names are ", strategy_names());
  return *k;
}

/// The factory of one backend: a Grid of the spec's real type and dimension.
template <class B>
std::unique_ptr<GridBase> make_grid(const GridSpec& s) {
  CppClock clock;
  if (s.dim == 2 && s.real_bytes == 4) return std::make_unique<Grid<B, float, 2>>(s);
  if (s.dim == 2 && s.real_bytes == 8) return std::make_unique<Grid<B, double, 2>>(s);
  if (s.dim == 3 && s.real_bytes == 4) return std::make_unique<Grid<B, float, 3>>(s);
  if (s.dim == 3 && s.real_bytes == 8) return std::make_unique<Grid<B, double, 3>>(s);
  throw InvalidArgument(detail::cat("cellint: no grid of dimension ", s.dim, " and ", s.real_bytes, "-byte reals"));
}

}  // namespace cellint::py
