#pragma once
/// @file
/// StepGraph: records the work of a time step once and replays it with one launch (CUDA and HIP graphs); on the CPU
/// backends it simply runs the step.

#include <type_traits>
#include <utility>

#include "cellint/backend/traits.hpp"

namespace cellint {

namespace detail {
template <class B>
using graph_member = typename B::Graph;
/// B::Graph where B has graphs, else an empty stand-in.
template <class B, bool = backend_has<graph_member, B>::value>
struct graph_of {
  struct type {};
};
template <class B>
struct graph_of<B, true> {
  using type = typename B::Graph;
};
}  // namespace detail

/// Whether `Backend` records work into graphs (Cuda, Hip).
template <class Backend>
inline constexpr bool has_graphs_v = detail::backend_has<detail::graph_member, Backend>::value;

/// A stream that steps can be recorded from: a new stream on CUDA and HIP (their default stream cannot be recorded),
/// the default stream elsewhere. Make the grid on it: `CellGrid<B, R, D> grid(box, rc, {}, own.get());`.
template <class Backend>
class OwnStream {
 public:
  /// The stream (a new one where graphs exist).
  typename Backend::Stream get() const {
    if constexpr (has_graphs_v<Backend>)
      return owner_.get();
    else
      return {};
  }

 private:
  struct None {};
  template <class B, bool = has_graphs_v<B>>
  struct owner_of {
    using type = None;
  };
  template <class B>
  struct owner_of<B, true> {
    using type = typename B::StreamOwner;
  };
  typename owner_of<Backend>::type owner_;
};

/// The kernels of one time step recorded once and launched together: a GPU runs a recorded sequence without the
/// host's per-kernel launch cost and without gaps between the kernels, which is most of a step's time for small
/// systems (tens of thousands of particles).
///
/// @code
///   cellint::OwnStream<Backend> own;                      // recording needs a stream other than the default
///   cellint::CellGrid<Backend, float, 3> grid(box, rc, {}, own.get());
///   cellint::StepGraph<Backend> step(grid.stream());
///   for (long s = 0; s < steps; ++s) {
///     if (/* anything the step reads moved: a grid.rebuild(), a list that grew */) step.reset();
///     step.run([&] { integrate_first_half(); list.update(grid); interact(list, grid, f, out); integrate_second_half(); });
///   }
/// @endcode
///
/// run(issue) records what `issue()` enqueues on the stream the first time (and after reset()), then launches the
/// recording. What `issue()` decides on the host is therefore decided once: it must not wait for the device, read
/// results, or make choices that differ from step to step (a NeighborList's rebuild decision is made on the device and
/// is recorded correctly; its ListOptions::every > 1 is a host-side choice and is not). Buffers it uses must stay where
/// they are: call reset() after anything that reallocates or swaps them (CellGrid::rebuild() swaps positions and
/// attributes; NeighborList::check() may grow the rows). On backends without graphs (Host, Emulated) run() calls
/// `issue()` every time.
template <class Backend>
class StepGraph {
 public:
  /// Steps recorded and replayed on stream `s`.
  explicit StepGraph(typename Backend::Stream s = {}) : stream_(s) {}
  /// Runs the step: records `issue()` if nothing is recorded, then launches the recording (or, without graphs, calls
  /// `issue()`).
  template <class Fn>
  void run(Fn&& issue) {
    if constexpr (has_graphs_v<Backend>) {
      if (!graph_.recorded()) {
        graph_.record(stream_, issue);
        ++recordings_;
      }
      graph_.replay(stream_);
    } else {
      issue();
    }
  }
  /// Drops the recording: the next run() records again.
  void reset() {
    if constexpr (has_graphs_v<Backend>) graph_.release();
  }
  /// How many times a step was recorded.
  long recordings() const { return recordings_; }

 private:
  typename Backend::Stream stream_;
  typename detail::graph_of<Backend>::type graph_;
  long recordings_ = 0;
};

}  // namespace cellint
