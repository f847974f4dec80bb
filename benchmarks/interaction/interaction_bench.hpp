#pragma once
/// @file
/// The interaction benchmark, written once for every backend (paper section 7; docs/benchmarks.md).
///
/// For each configuration (d^Dim cells of width = cutoff = 1 in an open cube, `ppc` particles per
/// cell on average, uniform positions):
///  1. generate the positions in backend memory and time the binning
///     (CellGrid::build_from_backend, median of several builds);
///  2. count the candidate pairs on the host from the cell counts: for every target, the sources
///     in its 3^Dim neighbour cells, itself excluded (the paper's "interactions per particle" is
///     this count over N);
///  3. for each requested strategy that supports() the case: warm up, time `reps` back-to-back
///     asynchronous calls between one event pair (total / reps: the paper's number) split into
///     event-timed batches (their median), then poison the output, run once more and compare
///     with the baseline strategy (Par-Part-NoLoop on GPU-like backends, the cell loop on Host);
///     unsupported strategies are recorded with their reason;
///  4. Auto: its choice, the tuning time and the per-candidate timings of the autotuner's table,
///     then its timed run (the cached decision).
/// Derived numbers: pairs/s = candidate pairs / time; GFLOP/s at the functor's flop per
/// candidate pair (paper: 21 for the LJ kernel); fraction of the measured FP32 peak; effective
/// bandwidth over the floor (positions read once + outputs written once).
///
/// One translation unit per (backend, precision, dimension) instantiates run_family() (see
/// benchmarks/CMakeLists.txt); the main TU declares them `extern` and dispatches at run time.

#include <algorithm>
#include <array>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <map>
#include <optional>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <vector>

#include "cellint/core/error.hpp"
#include "cellint/grid/cell_grid.hpp"
#include "cellint/interact.hpp"
#include "cellint/potentials/lennard_jones.hpp"
#include "common/context.hpp"
#include "common/functors.hpp"
#include "common/json.hpp"
#include "common/options.hpp"
#include "common/positions.hpp"
#include "common/timing.hpp"

namespace cellint::bench {

/// One configuration of the sweep.
struct Config {
  int d = 0;         ///< cells per side
  double ppc = 0;    ///< nominal particles per cell
  Index n = 0;       ///< particles
  bool scaling = false;
};

/// Everything a run accumulates: options, context, JSON records, table rows, progress.
struct Session {
  Options opt;
  Context ctx;
  std::vector<std::string> records;                ///< JSON objects, one per (config, strategy)
  std::vector<std::vector<std::string>> rows;      ///< final table
  long done = 0, total = 0;                        ///< progress
  int check_failures = 0;                          ///< outputs that disagreed with the baseline
  int errors = 0;                                  ///< strategies that threw
  std::vector<StrategyKind> kinds;                 ///< strategies to run (baseline first)
  std::vector<bool> requested;                     ///< whether kinds[i] was asked for
  std::vector<Config> configs;                     ///< the sweep

  /// (Re)writes the JSON document, if --json was given.
  void flush_json() const {
    if (opt.json.empty()) return;
    JsonObject top;
    top.str("schema", "cellint-interaction-bench/1").str("benchmark", "interaction").str("label", opt.label);
    add_context(top, ctx);
    top.str("command", opt.command);
    JsonObject o;
    o.integer("reps", opt.reps).integer("batches", opt.batches).integer("warmup", opt.warmup)
        .num("max_ms", opt.max_ms).integer("binning_reps", opt.binning_reps).boolean("scaling", opt.scaling)
        .integer("seed", static_cast<long long>(opt.seed)).num("check_max_n", opt.check_max_n);
    top.raw("options", o.dump());
    top.str("timing_method",
            "ms = total / reps of reps back-to-back asynchronous calls between one event pair (paper 7.1); "
            "ms_median = median over event-timed batches of the same calls; inputs are not rotated, so small "
            "cases run from L2 as in the paper");
    top.str("bytes_note",
            "bytes_floor = positions read once + outputs written once; real traffic re-reads neighbour "
            "cells, so bandwidth_gbs is an effective (floor) bandwidth, not the DRAM traffic");
    top.raw("results", json_array(records));
    if (!write_text_file(opt.json, top.dump_pretty()))
      std::fprintf(stderr, "warning: cannot write %s\n", opt.json.c_str());
  }
};

namespace detail_bench {

/// Formats with printf-style `fmt`.
template <class... A>
std::string fmt(const char* f, A... a) {
  char b[256];
  std::snprintf(b, sizeof b, f, a...);
  return b;
}

/// Candidate pairs: sum over targets of the particles in the 3^Dim neighbour cells (open box),
/// the target itself excluded. `start` is the grid's cell_start (cell_count + 1 entries).
template <int Dim>
double candidate_pairs(const std::vector<Index>& start, const Index (&cells)[Dim]) {
  const std::size_t nc = start.size() - 1;
  std::vector<double> cnt(nc), tmp(nc);
  for (std::size_t c = 0; c < nc; ++c) cnt[c] = static_cast<double>(start[c + 1] - start[c]);
  std::vector<double> sum = cnt;
  // Separable box filter of radius 1 along each axis (open boundaries).
  std::size_t stride = 1;
  for (int d = 0; d < Dim; ++d) {
    const std::size_t len = static_cast<std::size_t>(cells[d]);
    for (std::size_t c = 0; c < nc; ++c) {
      const std::size_t i = (c / stride) % len;
      double v = sum[c];
      if (i > 0) v += sum[c - stride];
      if (i + 1 < len) v += sum[c + stride];
      tmp[c] = v;
    }
    sum.swap(tmp);
    stride *= len;
  }
  double pairs = 0, n = 0;
  for (std::size_t c = 0; c < nc; ++c) {
    pairs += cnt[c] * sum[c];
    n += cnt[c];
  }
  return pairs - n;
}

/// The strategies to run: the names resolved, the baseline first (added when not asked for).
template <class B>
void resolve_strategies(Session& s) {
  const StrategyKind baseline = B::is_gpu_like ? StrategyKind::ParPartNoLoop : StrategyKind::CellLoop;
  std::vector<StrategyKind> asked;
  auto add = [&](StrategyKind k) {
    if (std::find(asked.begin(), asked.end(), k) == asked.end()) asked.push_back(k);
  };
  for (const std::string& name : s.opt.strategies) {
    if (name == "all") {
      // every cell strategy of the backend: all-pairs does O(N^2) work on these grids (and calls a functor without a
      // cutoff test for every pair, not for the neighbour cells' pairs); examples/gravity2d measures it
      for (StrategyKind k : strategies_for<B>())
        if (k != StrategyKind::AllPairs) add(k);
      continue;
    }
    const std::optional<StrategyKind> k = strategy_from_name(name);
    if (!k)
      throw std::invalid_argument("--strategy: unknown strategy '" + name + "' (known: " + strategy_names() + ", all)");
    add(*k);
  }
  s.kinds = {baseline};
  s.requested = {std::find(asked.begin(), asked.end(), baseline) != asked.end()};
  for (StrategyKind k : asked)
    if (k != baseline) {
      s.kinds.push_back(k);
      s.requested.push_back(true);
    }
}

/// The sweep: paper grid (ppc outer, d inner, as in the paper's Table 1) or the N scaling.
inline std::vector<Config> make_configs(const Options& o, int dim) {
  std::vector<Config> r;
  if (o.scaling) {
    const double ppc = o.ppc.front();
    const int steps = static_cast<int>(std::floor(std::log10(o.scaling_max / o.scaling_min) * o.scaling_per_decade + 1e-9));
    for (int k = 0; k <= steps; ++k) {
      const double target = o.scaling_min * std::pow(10.0, static_cast<double>(k) / o.scaling_per_decade);
      const double want = std::round(target / std::pow(10.0, std::floor(std::log10(target)) - 1)) *
                          std::pow(10.0, std::floor(std::log10(target)) - 1);  // 2 significant digits
      Config c;
      c.scaling = true;
      c.ppc = ppc;
      c.n = static_cast<Index>(std::min(want, 2.0e9));
      c.d = std::max(1, static_cast<int>(std::lround(std::pow(want / ppc, 1.0 / dim))));
      r.push_back(c);
    }
  } else {
    for (double ppc : o.ppc)
      for (int d : o.cells) {
        Config c;
        c.d = d;
        c.ppc = ppc;
        c.n = static_cast<Index>(std::llround(ppc * std::pow(static_cast<double>(d), dim)));
        r.push_back(c);
      }
  }
  return r;
}

/// Relative tolerance of an output against the baseline's (different summation orders).
inline double check_tolerance(const std::string& precision, const std::string& functor) {
  const double t = precision == "double" ? 1e-10 : precision == "mixed" ? 1e-5 : 1e-4;
  return functor == "cheap" ? t * 10 : t;  // sums of signed terms cancel
}

/// ||a - r|| / ||r||; NaN if `a` holds a non-finite value (an unwritten, poisoned element).
template <class Acc>
double relative_error(const std::vector<Acc>& a, const std::vector<Acc>& r, long& non_finite) {
  double num = 0, den = 0;
  non_finite = 0;
  for (std::size_t i = 0; i < a.size() && i < r.size(); ++i) {
    const double x = static_cast<double>(a[i]), y = static_cast<double>(r[i]);
    if (!std::isfinite(x)) {
      ++non_finite;
      continue;
    }
    num += (x - y) * (x - y);
    den += y * y;
  }
  if (non_finite) return NAN;
  return den > 0 ? std::sqrt(num / den) : std::sqrt(num);
}

/// Prints one progress line to stderr.
inline void progress(Session& s, const Config& c, const std::string& functor, const std::string& strategy,
                     const std::string& what) {
  ++s.done;
  std::fprintf(stderr, "[%ld/%ld] %s%s d=%d ppc=%g %s %s\n", s.done, s.total,
               c.scaling ? detail_bench::fmt("N=%.3g ", static_cast<double>(c.n)).c_str() : "",
               functor.c_str(), c.d, c.ppc, strategy.c_str(), what.c_str());
}

/// Flattens the outputs to their scalar accumulation type.
template <class Acc, class Accum>
std::vector<Acc> flatten(const std::vector<Accum>& h) {
  static_assert(sizeof(Accum) % sizeof(Acc) == 0, "accumulator is not made of Acc values");
  std::vector<Acc> r(h.size() * (sizeof(Accum) / sizeof(Acc)));
  if (!h.empty()) std::memcpy(r.data(), h.data(), h.size() * sizeof(Accum));
  return r;
}

}  // namespace detail_bench

/// Runs every configuration of the session for functor `f` (named `fname`) on backend B with
/// positions of type R in D dimensions, accumulating in Acc.
template <class B, class R, int D, class Acc, class F>
void run_functor(Session& s, const F& f, const std::string& fname, const std::string& precision) {
  using Traits = FunctorTraits<F, R, D>;
  using Accum = typename Traits::Accum;
  const Options& o = s.opt;
  const int flop = Traits::flops;
  const typename B::Stream stream{};
  bool stop = false;
  for (const Config& c : s.configs) {
    if (stop) {  // scaling sweep past the memory limit
      s.done += static_cast<long>(s.kinds.size());
      continue;
    }
    const long done_before = s.done;
    try {
      // ---- positions and binning -------------------------------------------------------------
      const Index n = c.n;
      const std::uint64_t seed = o.seed ^ mix64(static_cast<std::uint64_t>(c.d) * 1000003ull +
                                                 static_cast<std::uint64_t>(c.ppc * 1000) + D);
      auto pos = uniform_positions<B, R, D>(n, R(0), static_cast<R>(c.d), seed, stream);
      std::array<const R*, D> p{};
      for (int d = 0; d < D; ++d) p[d] = pos[d].data();
      CellGrid<B, R, D> grid(Box<R, D>::cube(R(0), static_cast<R>(c.d), false), R(1), GridOptions<R>{}, stream);
      B::synchronize(stream);
      // Median (and minimum) of timed rebuilds of `g`, after a first build that allocates.
      auto time_builds = [&](CellGrid<B, R, D>& g, std::vector<double>& ms) {
        g.build_from_backend(p, n);
        double spent = 0;
        for (int r = 0; r < o.binning_reps && (r == 0 || spent < o.max_ms); ++r) {
          B::synchronize(stream);
          const auto t0 = std::chrono::steady_clock::now();
          g.build_from_backend(p, n);
          B::synchronize(stream);
          ms.push_back(ms_since(t0));
          spent += ms.back();
        }
        return median_of(ms);
      };
      std::vector<double> bms;
      const double bin_ms = time_builds(grid, bms);
      const double bin_min = *std::min_element(bms.begin(), bms.end());
      // The deterministic option (GridOptions::stable: radix sort by cell instead of the atomic
      // scatter), timed the same way on a second grid when asked for.
      double bin_stable_ms = NAN;
      if (o.binning_stable) {
        GridOptions<R> so;
        so.stable = true;
        CellGrid<B, R, D> sg(Box<R, D>::cube(R(0), static_cast<R>(c.d), false), R(1), so, stream);
        std::vector<double> sms;
        bin_stable_ms = time_builds(sg, sms);
      }

      std::vector<Index> start(static_cast<std::size_t>(grid.cell_count()) + 1);
      B::copy(start.data(), grid.cell_start(), sizeof(Index) * start.size(), CopyKind::DeviceToHost, stream);
      const double pairs = detail_bench::candidate_pairs<D>(start, grid.geometry().cells);
      const double per_particle = n ? pairs / n : 0;
      const double bytes_floor = static_cast<double>(n) * (D * sizeof(R) + sizeof(Accum));

      Buffer<B, Accum> out(static_cast<std::size_t>(std::max<Index>(n, 1)));
      std::vector<Acc> ref;
      bool have_ref = false;
      double base_ms = NAN;
      const bool check = n > 0 && n <= o.check_max_n;
      const double tol = detail_bench::check_tolerance(precision, fname);

      // ---- strategies --------------------------------------------------------------------------
      for (std::size_t si = 0; si < s.kinds.size(); ++si) {
        const StrategyKind k = s.kinds[si];
        const std::string sname = to_string(k);
        JsonObject rec;
        rec.str("mode", c.scaling ? "scaling" : "grid").str("label", o.label).str("backend", s.ctx.backend)
            .str("functor", fname).integer("flop_per_pair", flop).boolean("cutoff_test", Traits::cutoff_test)
            .str("precision", precision).integer("dim", D).integer("cells_per_side", c.d)
            .integer("cells", grid.cell_count()).num("ppc", c.ppc)
            .num("ppc_actual", grid.cell_count() ? static_cast<double>(n) / grid.cell_count() : 0.0)
            .integer("n", n).integer("max_per_cell", grid.max_per_cell()).num("candidate_pairs", pairs)
            .num("interactions_per_particle", per_particle).num("binning_ms", bin_ms).num("binning_ms_min", bin_min)
            .num("binning_stable_ms", bin_stable_ms)
            .integer("binning_reps", static_cast<long long>(bms.size())).str("strategy", sname)
            .boolean("baseline_only", !s.requested[si]).str("baseline", to_string(s.kinds.front()));

        const Support sp = supports(k, grid, f);
        if (!sp.ok) {
          rec.boolean("supported", false).str("reason", sp.reason);
          s.records.push_back(rec.dump());
          detail_bench::progress(s, c, fname, sname, "unsupported: " + sp.reason);
          continue;
        }
        try {
          Report rep;
          JsonObject autos;
          bool is_auto = k == StrategyKind::Auto;
          double tuning_wall = NAN;
          std::string cands = "[]";
          if (is_auto) {
            Autotuner::instance().clear();
            B::synchronize(stream);
            const auto t0 = std::chrono::steady_clock::now();
            rep = interact<Auto>(grid, f, out.data());
            B::synchronize(stream);
            tuning_wall = ms_since(t0);
            const auto table = Autotuner::instance().table();
            const auto it = table.find(Autotuner::key(grid, f));
            if (it != table.end()) {
              std::vector<std::string> cl;
              for (const TunedCandidate& tc : it->second.timings) {
                JsonObject j;
                j.str("strategy", to_string(tc.strategy)).integer("threads", tc.tuning.threads)
                    .integer("pencil_length", tc.tuning.pencil_length)
                    .str("subbox", detail_bench::fmt("%dx%dx%d", tc.tuning.subbox[0], tc.tuning.subbox[1],
                                                     tc.tuning.subbox[2]))
                    .num("ms", tc.ms);
                cl.push_back(j.dump());
              }
              cands = "[";
              for (std::size_t i = 0; i < cl.size(); ++i) cands += (i ? ", " : "") + cl[i];
              cands += "]";
            }
          } else {
            rep = interact_with(k, grid, f, out.data());
          }
          auto call = [&] {
            if (is_auto)
              interact<Auto>(grid, f, out.data());
            else
              interact_with(k, grid, f, out.data());
          };
          const Timing t = time_calls<B>(call, stream, o.reps, o.batches, o.warmup, o.max_ms);

          // ---- check against the baseline ---------------------------------------------------
          std::string verdict = "skipped";
          double rel = NAN;
          long bad = 0;
          if (check) {
            out.fill_bytes(0xFF, stream);  // NaN in every float / double
            call();
            std::vector<Accum> h(static_cast<std::size_t>(n));
            out.download(h.data(), stream);
            std::vector<Acc> flat = detail_bench::flatten<Acc>(h);
            if (si == 0) {
              for (Acc v : flat) bad += std::isfinite(static_cast<double>(v)) ? 0 : 1;
              verdict = bad ? "FAIL" : "reference";
              if (!bad) {
                ref = std::move(flat);
                have_ref = true;
              }
            } else if (have_ref) {
              rel = detail_bench::relative_error(flat, ref, bad);
              verdict = (std::isfinite(rel) && rel <= tol) ? "pass" : "FAIL";
            } else {
              verdict = "no reference";
            }
            if (verdict == "FAIL") ++s.check_failures;
          }

          const double ms = t.mean_ms;
          if (si == 0) base_ms = ms;
          const double pps = ms > 0 ? pairs / (ms * 1e-3) : NAN;
          const double gflops = pps * flop * 1e-9;
          const double gbs = ms > 0 ? bytes_floor / (ms * 1e-3) * 1e-9 : NAN;
          const double speedup = base_ms / ms;
          rec.boolean("supported", true).str("reason", "")
              .integer("grid", rep.shape.grid).integer("block", rep.shape.block)
              .integer("shared_bytes", static_cast<long long>(rep.shape.shared_bytes))
              .integer("reps", t.reps).integer("batches", t.batches).num("ms", ms).num("ms_median", t.median_ms)
              .num("ms_min", t.min_ms).num("ms_max", t.max_ms).num("ms_warmup", t.warm_ms).num("total_ms", t.total_ms).num("host_us", t.host_us).num("tries", t.tries)
              .num("pairs_per_s", pps).num("gflops", gflops)
              .num("fraction_peak_fp32", gflops / (s.ctx.peak_fp32_tflops * 1e3))
              .num("bytes_floor", bytes_floor).num("bandwidth_gbs", gbs)
              .num("fraction_bandwidth", gbs / (s.ctx.bandwidth_tbs * 1e3))
              .num("speedup_vs_baseline", speedup).str("check", verdict).num("rel_err", rel)
              .num("tolerance", tol).integer("non_finite", bad);
          if (is_auto)
            rec.str("auto_choice", to_string(rep.strategy)).num("tuning_ms", rep.tuning_ms)
                .num("tuning_wall_ms", tuning_wall).raw("auto_candidates", cands);
          std::string extra;
          if (o.stats) {
            // One call with the statistics (the kernels are the same; the counting pass and the host work after the
            // call are what the option costs), then its numbers.
            Tuning st;
            st.statistics = true;
            const auto t0 = std::chrono::steady_clock::now();
            const CallStats cs = interact_with(k, grid, f, out.data(), st).stats;
            rec.num("stats_wall_ms", ms_since(t0)).num("stats_ms", cs.ms)
                .num("stats_pairs_examined", static_cast<double>(cs.pairs_examined))
                .num("stats_pairs_within", static_cast<double>(cs.pairs_within))
                .num("stats_min_bytes", static_cast<double>(cs.min_bytes)).num("stats_gbs", cs.gbytes_per_s());
            extra += detail_bench::fmt(" [%.3g pairs examined, %.1f%% within]", static_cast<double>(cs.pairs_examined),
                                       100 * cs.hit_rate());
          }
          if (is_auto && o.reproducible) {
            // The reproducible mode: a stable grid, and Auto's fixed choice instead of the timed one.
            GridOptions<R> so;
            so.stable = true;
            CellGrid<B, R, D> sg(Box<R, D>::cube(R(0), static_cast<R>(c.d), false), R(1), so, stream);
            sg.build_from_backend(p, n);
            Tuning rt;
            rt.reproducible = true;
            Report rr;
            const Timing tr = time_calls<B>([&] { rr = interact(sg, f, out.data(), rt); }, stream, o.reps, o.batches,
                                            o.warmup, o.max_ms);
            rec.str("reproducible_choice", to_string(rr.strategy)).num("reproducible_ms", tr.mean_ms)
                .num("reproducible_ms_median", tr.median_ms);
            extra += detail_bench::fmt(" [reproducible: %s %.4g ms]", to_string(rr.strategy), tr.mean_ms);
          }
          s.records.push_back(rec.dump());

          const std::string label = is_auto ? "auto(" + std::string(to_string(rep.strategy)) + ")" : sname;
          detail_bench::progress(s, c, fname, label,
                                 detail_bench::fmt("%.4g ms (%.2fx)%s%s", ms, speedup,
                                                   verdict == "FAIL" ? " CHECK FAILED" : "",
                                                   t.tries > 1 ? detail_bench::fmt(" [host-bound: %d tries, %.1f us/launch]", t.tries, t.host_us).c_str() : "") + extra);
          s.rows.push_back({fname, precision, std::to_string(D) + "D",
                            c.scaling ? detail_bench::fmt("%.3g", static_cast<double>(n)) : std::to_string(c.d),
                            detail_bench::fmt("%g", c.ppc), std::to_string(n), detail_bench::fmt("%.1f", per_particle),
                            label, detail_bench::fmt("%.4g", ms), detail_bench::fmt("%.4g", t.median_ms),
                            detail_bench::fmt("%.3g", pps * 1e-9), detail_bench::fmt("%.1f", gflops),
                            std::isfinite(s.ctx.peak_fp32_tflops)
                                ? detail_bench::fmt("%.1f%%", 100 * gflops / (s.ctx.peak_fp32_tflops * 1e3))
                                : std::string("-"),
                            detail_bench::fmt("%.1f", gbs), detail_bench::fmt("%.2f", speedup),
                            detail_bench::fmt("%.3g", bin_ms), verdict});
        } catch (const OutOfMemory&) {
          throw;
        } catch (const std::exception& e) {
          ++s.errors;
          rec.boolean("supported", true).str("reason", "").str("error", e.what());
          s.records.push_back(rec.dump());
          detail_bench::progress(s, c, fname, sname, std::string("ERROR: ") + e.what());
        }
      }
    } catch (const OutOfMemory& e) {
      JsonObject rec;
      rec.str("mode", c.scaling ? "scaling" : "grid").str("label", o.label).str("functor", fname)
          .str("precision", precision).integer("dim", D).integer("cells_per_side", c.d).num("ppc", c.ppc)
          .integer("n", c.n).boolean("out_of_memory", true).str("error", e.what());
      s.records.push_back(rec.dump());
      std::fprintf(stderr, "out of memory at N=%.3g (d=%d): %s\n", static_cast<double>(c.n), c.d, e.what());
      s.done = done_before + static_cast<long>(s.kinds.size());
      if (c.scaling) stop = true;
    }
    s.flush_json();
  }
}

/// Runs every requested functor for positions R, dimension D, accumulation Acc on backend B.
template <class B, class R, int D, class Acc>
void run_family(Session& s, const std::string& precision) {
  for (const std::string& fn : s.opt.functors) {
    if (fn == "paper") {
      run_functor<B, R, D, Acc>(s, LennardJonesPaper<R, D, Acc>{}, fn, precision);
    } else if (fn == "paper-fast") {
      run_functor<B, R, D, Acc>(s, LennardJonesPaper<R, D, Acc, FastMath>{}, fn, precision);
    } else if (fn == "lj") {
      // sigma = cutoff / 2.5 (the usual truncation), shifted, softened like the paper's kernel
      run_functor<B, R, D, Acc>(s, LennardJones<R, D, Acc>::make(R(1), R(0.4), R(1), true, R(0.1)), fn, precision);
    } else if (fn == "lj-fast") {
      run_functor<B, R, D, Acc>(s, LennardJones<R, D, Acc, FastMath>::make(R(1), R(0.4), R(1), true, R(0.1)), fn,
                                precision);
    } else if (fn == "cheap") {
      run_functor<B, R, D, Acc>(s, CheapSum<R, D, Acc>{}, fn, precision);
    } else if (fn == "lj150") {
      run_functor<B, R, D, Acc>(s, PaperLJ150<R, D, Acc>{}, fn, precision);
    }
  }
}

/// Declares (CELLINT_BENCH_EXTERN) or instantiates (CELLINT_BENCH_INSTANTIATE) run_family for
/// one backend and (R, D, Acc).
#define CELLINT_BENCH_EXTERN(B, R, D, A) \
  extern template void ::cellint::bench::run_family<B, R, D, A>(::cellint::bench::Session&, const std::string&);
#define CELLINT_BENCH_INSTANTIATE(B, R, D, A) \
  template void ::cellint::bench::run_family<B, R, D, A>(::cellint::bench::Session&, const std::string&);
/// Applies X(B, R, D, Acc) to every family: float, double and mixed (float, double sums), 2D and 3D.
#if defined(CELLINT_BENCH_FULL_MATRIX)
#  define CELLINT_BENCH_FAMILIES(X, B) \
    X(B, float, 2, float) X(B, float, 3, float) X(B, double, 2, double) X(B, double, 3, double) \
    X(B, float, 2, double) X(B, float, 3, double)
#else  // float only (CI); -DCELLINT_FULL_MATRIX=ON builds the rest
#  define CELLINT_BENCH_FAMILIES(X, B) X(B, float, 2, float) X(B, float, 3, float)
#endif

/// Prints the final table to stdout.
inline void print_table(const Session& s) {
  const std::vector<std::string> head = {"functor", "prec", "dim", s.opt.scaling ? "N" : "d", "ppc", "n",
                                         "inter/p", "strategy", "ms", "ms_med", "Gpair/s", "GFLOP/s",
                                         "%peak", "GB/s", "speedup", "bin_ms", "check"};
  std::vector<std::size_t> w(head.size());
  for (std::size_t i = 0; i < head.size(); ++i) w[i] = head[i].size();
  for (const auto& r : s.rows)
    for (std::size_t i = 0; i < r.size() && i < w.size(); ++i) w[i] = std::max(w[i], r[i].size());
  auto line = [&](const std::vector<std::string>& r) {
    for (std::size_t i = 0; i < r.size(); ++i) std::printf("%s%*s", i ? "  " : "", static_cast<int>(w[i]), r[i].c_str());
    std::printf("\n");
  };
  std::printf("\n# %s on %s (%s), commit %s, %s\n", s.ctx.backend.c_str(), s.ctx.card.c_str(), s.ctx.driver.c_str(),
              s.ctx.commit.c_str(), s.ctx.date.c_str());
  std::printf("# ms = total/%d back-to-back calls (paper 7.1); speedup vs %s; GFLOP/s at the functor's flop per "
              "candidate pair\n",
              s.opt.reps, s.kinds.empty() ? "?" : to_string(s.kinds.front()));
  line(head);
  for (const auto& r : s.rows) line(r);
  std::fflush(stdout);
}

/// Runs the precision / dimension families the options ask for.
template <class B>
int run_session(Session& s) {
  detail_bench::resolve_strategies<B>(s);
  long per_dim_configs = 0;
  for (int d : s.opt.dims) per_dim_configs += static_cast<long>(detail_bench::make_configs(s.opt, d).size());
  s.total = per_dim_configs * static_cast<long>(s.opt.precisions.size() * s.opt.functors.size() * s.kinds.size());
  std::fprintf(stderr, "%s on %s: %ld cases (%zu strategies incl. baseline %s)\n", s.ctx.backend.c_str(),
               s.ctx.card.c_str(), s.total, s.kinds.size(), to_string(s.kinds.front()));
  for (int dim : s.opt.dims) {
    s.configs = detail_bench::make_configs(s.opt, dim);
    for (const std::string& p : s.opt.precisions) {
      if (p == "float" && dim == 2) run_family<B, float, 2, float>(s, p);
      if (p == "float" && dim == 3) run_family<B, float, 3, float>(s, p);
#if defined(CELLINT_BENCH_FULL_MATRIX)
      if (p == "double" && dim == 2) run_family<B, double, 2, double>(s, p);
      if (p == "double" && dim == 3) run_family<B, double, 3, double>(s, p);
      if (p == "mixed" && dim == 2) run_family<B, float, 2, double>(s, p);
      if (p == "mixed" && dim == 3) run_family<B, float, 3, double>(s, p);
#else
      if (p != "float") {
        std::fprintf(stderr, "precision %s is not built: configure with -DCELLINT_FULL_MATRIX=ON\n", p.c_str());
        return 2;
      }
#endif
    }
  }
  s.flush_json();
  if (s.opt.table) print_table(s);
  if (s.check_failures || s.errors)
    std::fprintf(stderr, "%d check failure(s), %d error(s)\n", s.check_failures, s.errors);
  return s.check_failures || s.errors ? 1 : 0;
}

/// Entry point shared by the per-backend mains: parses the command line, completes the context
/// (`ctx` arrives with backend, card, driver and toolkit filled in) and runs.
template <class B>
int bench_main(int argc, char** argv, Context ctx) {
  Session s;
  try {
    s.opt = parse_options(argc, argv);
  } catch (const std::invalid_argument& e) {
    std::fprintf(stderr, "interaction_bench: %s\n\n%s", e.what(), usage_text());
    return 2;
  }
  fill_common_context(ctx, s.opt.ceilings);
  s.ctx = ctx;
  try {
    return run_session<B>(s);
  } catch (const NoDevice& e) {
    std::fprintf(stderr, "interaction_bench: no usable device, skipping: %s\n", e.what());
    return 77;
  } catch (const std::invalid_argument& e) {
    std::fprintf(stderr, "interaction_bench: %s\n", e.what());
    return 2;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "interaction_bench: %s\n", e.what());
    s.flush_json();
    return 1;
  }
}

}  // namespace cellint::bench
