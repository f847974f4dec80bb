// A step's GPU timeline for the demos' --timeline: events recorded at named points of a time step, on whichever
// stream the point's work is on (or, for host_mark(), on a stream of its own with no work: the time the host got
// there, on the GPU's clock), read one step later (after the step's next wait for the device, so that reading
// them never waits), their times from the step's first point summed over the steps. CUDA builds only (cudaEvent_t on
// the CUDA backend's streams); elsewhere every call does nothing.
#pragma once

#include <array>
#include <cstddef>
#include <type_traits>

#if defined(__CUDACC__)
#include <cuda_runtime.h>
#endif

namespace cellint::examples {

template <class B, std::size_t Points>
class StepTimeline {
#if defined(__CUDACC__)
  static constexpr bool on_gpu = std::is_same_v<typename B::Stream, cudaStream_t>;
#else
  static constexpr bool on_gpu = false;
#endif

 public:
  StepTimeline() = default;
  StepTimeline(const StepTimeline&) = delete;
  StepTimeline& operator=(const StepTimeline&) = delete;
  ~StepTimeline() {
#if defined(__CUDACC__)
    if constexpr (on_gpu)
      for (auto& set : ev_)
        for (cudaEvent_t& e : set)
          if (e) (void)cudaEventDestroy(e);
    if constexpr (on_gpu)
      if (idle_) (void)cudaStreamDestroy(idle_);
#endif
  }
  /// Whether it records (`enable` called, a CUDA build, the CUDA backend).
  bool on() const { return on_gpu && enabled_; }
  void enable() { enabled_ = on_gpu; }
  /// Starts a step's record.
  void begin() {
    if (!on()) return;
    cur_ ^= 1u;
    recorded_[cur_] = 0;
  }
  /// Records point k on stream s.
  template <class Stream>
  void mark(std::size_t k, Stream s) {
#if defined(__CUDACC__)
    if constexpr (on_gpu) {
      if (!enabled_) return;
      cudaEvent_t& e = ev_[cur_][k];
      if (!e && cudaEventCreate(&e) != cudaSuccess) e = nullptr;
      if (e && cudaEventRecord(e, s) == cudaSuccess) recorded_[cur_] |= 1u << k;
    }
#else
    (void)k;
    (void)s;
#endif
  }
  /// Records point k when the host gets here (on a stream with no work of its own).
  void host_mark(std::size_t k) {
#if defined(__CUDACC__)
    if constexpr (on_gpu) {
      if (!enabled_) return;
      if (!idle_ && cudaStreamCreateWithFlags(&idle_, cudaStreamNonBlocking) != cudaSuccess) idle_ = nullptr;
      if (idle_) mark(k, idle_);
    }
#else
    (void)k;
#endif
  }
  /// Drops the current step's record (a step of another kind).
  void drop() { recorded_[cur_] = 0; }
  /// Adds the previous step's record, if complete, to the sums: call once the device was waited for in this step.
  void previous_done() {
    if (on()) collect(cur_ ^ 1u);
  }
  /// Adds the current step's record (waits for the device).
  void finish() {
    if (on()) collect(cur_);
  }
  /// Mean milliseconds from point 0 to point k over the steps that recorded every point.
  double mean_ms(std::size_t k) const { return steps_ ? sum_[k] / static_cast<double>(steps_) : 0.0; }
  long steps() const { return steps_; }

 private:
  void collect(std::size_t set) {
#if defined(__CUDACC__)
    if constexpr (on_gpu) {
      if (recorded_[set] != (1u << Points) - 1u) return;
      std::array<double, Points> add{};
      for (std::size_t k = 1; k < Points; ++k) {
        float ms = 0;
        if (cudaEventSynchronize(ev_[set][k]) != cudaSuccess ||
            cudaEventElapsedTime(&ms, ev_[set][0], ev_[set][k]) != cudaSuccess) {
          (void)cudaGetLastError();
          recorded_[set] = 0;
          return;  // (a step whose times cannot all be read is not counted)
        }
        add[k] = ms;
      }
      for (std::size_t k = 1; k < Points; ++k) sum_[k] += add[k];
      ++steps_;
    }
#endif
    recorded_[set] = 0;
  }

#if defined(__CUDACC__)
  std::array<std::array<cudaEvent_t, Points>, 2> ev_{};
  cudaStream_t idle_ = nullptr;  // host_mark()'s
#endif
  std::array<unsigned, 2> recorded_{};
  std::size_t cur_ = 0;
  std::array<double, Points> sum_{};
  long steps_ = 0;
  bool enabled_ = false;
};

}  // namespace cellint::examples
