#pragma once
/// @file
/// Timing helpers on any backend: the paper's method (N back-to-back asynchronous calls between
/// one pair of events, total / N) with a median over event-timed batches of the same calls, and
/// wall-clock timing of synchronous host-side operations (binning).

#include <algorithm>
#include <chrono>
#include <cmath>
#include <vector>

namespace cellint::bench {

/// Median of a sample (NaN when empty).
inline double median_of(std::vector<double> v) {
  if (v.empty()) return NAN;
  std::sort(v.begin(), v.end());
  const std::size_t m = v.size() / 2;
  return v.size() % 2 ? v[m] : 0.5 * (v[m - 1] + v[m]);
}

/// The times of one timed case, in milliseconds per call unless said otherwise.
struct Timing {
  int reps = 0;            ///< calls timed (after the cap)
  int batches = 0;         ///< event-timed batches the calls were split into
  double warm_ms = NAN;    ///< per-call estimate from the warm-up calls
  double total_ms = NAN;   ///< all `reps` calls, one event pair
  double mean_ms = NAN;    ///< total_ms / reps: the paper's number
  double median_ms = NAN;  ///< median over batches of (batch time / batch size)
  double min_ms = NAN;     ///< fastest batch, per call
  double max_ms = NAN;     ///< slowest batch, per call
  double host_us = NAN;    ///< host wall-clock time to enqueue one call, microseconds (when it
                           ///< exceeds the GPU time per call, the host is the bottleneck)
  int tries = 1;           ///< timed tries (more than one when the first ones were host-bound)
};

/// Milliseconds of wall-clock time since `t0`.
inline double ms_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
}

/// Times `call()` (which only enqueues work on stream `s`) as the paper does: `warmup` untimed
/// calls (at least one, which also estimates the cost), then `reps` calls back to back, split
/// into `batches` batches each between its own event pair, all inside one outer event pair.
/// When the estimate says `reps` calls would take longer than `max_ms`, fewer calls are timed
/// (at least one per batch); Timing::reps says how many.
template <class B, class Call>
Timing time_calls(Call&& call, typename B::Stream s, int reps, int batches, int warmup, double max_ms) {
  Timing t;
  {
    typename B::Timer w(s);
    const int n = std::max(1, warmup);
    w.start();
    for (int i = 0; i < n; ++i) call();
    w.stop();
    t.warm_ms = static_cast<double>(w.elapsed_ms()) / n;
  }
  batches = std::max(1, std::min(batches, reps));
  if (max_ms > 0 && t.warm_ms > 0 && t.warm_ms * reps > max_ms)
    reps = std::max(batches, static_cast<int>(max_ms / t.warm_ms));
  const int per_batch = std::max(1, reps / batches);
  t.batches = batches;
  t.reps = per_batch * batches;

  // A try whose enqueueing took about as long as the GPU work measured the host (a host thread
  // that stalls for a few milliseconds: seen as 25 us per launch instead of 4): on GPU backends
  // it is timed again, at most twice, and the fastest try is kept (Timing::tries).
  for (int attempt = 0; attempt < 3; ++attempt) {
    Timing a = t;
    typename B::Timer outer(s);
    std::vector<typename B::Timer> timers;
    timers.reserve(static_cast<std::size_t>(batches));
    for (int b = 0; b < batches; ++b) timers.emplace_back(s);
    const auto h0 = std::chrono::steady_clock::now();
    outer.start();
    for (int b = 0; b < batches; ++b) {
      timers[b].start();
      for (int i = 0; i < per_batch; ++i) call();
      timers[b].stop();
    }
    outer.stop();
    a.host_us = 1e3 * ms_since(h0) / a.reps;
    a.total_ms = outer.elapsed_ms();
    a.mean_ms = a.total_ms / a.reps;
    std::vector<double> per;
    for (auto& x : timers) per.push_back(static_cast<double>(x.elapsed_ms()) / per_batch);
    a.median_ms = median_of(per);
    a.min_ms = *std::min_element(per.begin(), per.end());
    a.max_ms = *std::max_element(per.begin(), per.end());
    if (attempt == 0 || a.mean_ms < t.mean_ms) t = a;
    t.tries = attempt + 1;
    if (!B::device_memory || 1e-3 * a.host_us < 0.9 * a.mean_ms) break;
  }
  return t;
}

}  // namespace cellint::bench
