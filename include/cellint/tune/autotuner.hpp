#pragma once
/// @file
/// Auto, the strategy of interact<Auto> (the default): the first time a key is seen, time the strategies that can run,
/// cache the fastest and use it from then on. The table of decisions and timings is exposed and can be persisted.
///
/// **Key.** Backend, device name, functor type, precision, dimension, cells per axis, the mean particles per cell in
/// half octaves and M_C (the fullest cell) in octaves: Autotuner::key().
///
/// **Candidates.** auto_candidates() (strategies/registry.hpp): the backend's strategies that supports() accepts for
/// the grid (and that their tag's auto_eligible() admits: all-pairs only where every source is a candidate of every
/// target or the pairs are few), each with the shapes its tag's candidates() lists (its policy: Par-Part-NoLoop, Par-Cell and Par-Cell-SM
/// with 128, 64 and 256 threads unless Tuning::threads is set, X-pencil and X-pencil-tile at the rule's pencil length
/// and two others unless Tuning::pencil_length is set, the rest once with the caller's Tuning). Every strategy's first
/// shape is timed before any second shape, and on the Host backend the half-shell cell loop comes first (it evaluates
/// each pair once).
///
/// **What the first call of a key costs.** It is bounded, so that a call of seconds is not paid ten times or more:
/// - Only one candidate can run: it runs once, untimed.
/// - A candidate gets a warm-up call and set_repetitions() (3) timed runs; Auto keeps the median. A run shorter than
///   0.2 ms is a batch of back-to-back calls (at most 64).
/// - A call of 20 ms or more is its own sample: no further runs. On the CPU backends (Host, Emulated: nothing is
///   compiled or loaded lazily) the first call is timed and, when that long, is the only call of the candidate; should
///   the winner's calls turn out short (under 20 ms), a candidate whose one call took more than 4x the winner's is
///   timed again (a CPU shared with other work can stall a call of a millisecond for a second).
/// - A candidate whose fastest run so far exceeds 1.5x the best median so far is abandoned: it cannot win
///   (TunedCandidate::abandoned; its `ms` is then that fastest run).
/// - Time budget (set_time_budget(); 3 s on the CPU backends and 30 s on GPUs by default): another candidate is started
///   only while the time spent tuning plus the best time so far fits the budget (a candidate that can win needs less
///   than the best time to show it). The best so far is kept; TuneEntry::untimed counts the candidates left out. A
///   budget of 0 runs the first candidate, untimed. A decision made under a tight budget is cached like any other
///   (clear() forgets it).
/// - `out` receives the winner's result: its last tuning run is kept when no other candidate ran after it (on the CPU
///   backends a long call's result is copied aside while others run, and back), else the winner runs once more.
/// So on the CPU backends, with calls of 20 ms or more, the first call costs one call of each candidate timed (the
/// slower ones included) and at most one more, and with the default budget a first call longer than 1.5 s is the only
/// one made.
///
/// **Two sets** (interact(targets, sources, f, out)): the key adds the sources' ppc and M_C buckets; the candidates are
/// those that run two sets.
///
/// **Reproducible** (Tuning::reproducible): no timing and no cache; the first strategy of reproducible_order() (a
/// function of the grid alone) that can run, at its rule's shape, so that the next run of the program adds in the same
/// order.
///
/// **Progress.** Once tuning has taken more than a second, each candidate timed is reported on stderr
/// ("cellint: Auto tuning <key>: cell-loop-half: 2.71 s (best so far)"), then the choice. set_verbose(false) or the
/// environment variable CELLINT_AUTO_QUIET=1 silences this; set_log() sends the lines elsewhere.
///
/// **Later calls.** Auto finds the decision by the key's fields (no string is formatted) and checks the strategy's
/// supports() for this grid, a cheap host computation, before running it. A decision that does not fit (another grid
/// with the same key whose fullest cell no longer fits the chosen strategy's shared memory, or a cache file written
/// elsewhere) is tuned again for this grid and replaces the key's decision (also in the cache file). Auto throws
/// Unsupported only when no strategy can run the grid.
///
/// **Cache file** (set_cache_file()): one line per decision, later lines winning:
/// `"key" strategy threads pencil_length subbox_x subbox_y subbox_z`, the strategy by name (to_string(); written so) or
/// by its StrategyKind number (as older files have it).

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <functional>
#include <iomanip>
#include <limits>
#include <map>
#include <mutex>
#include <optional>
#include <sstream>
#include <string>
#include <tuple>
#include <typeindex>
#include <typeinfo>
#include <vector>

#include "cellint/strategies/run.hpp"

namespace cellint {

/// One timed candidate.
struct TunedCandidate {
  StrategyKind strategy;   ///< strategy
  Tuning tuning;           ///< knobs it ran with
  float ms;                ///< median time of the timed runs, milliseconds (abandoned: its fastest run)
  int calls = 0;           ///< calls made of it while tuning (warm-up and batches included)
  bool abandoned = false;  ///< stopped early: slower than 1.5x the best so far, it could not win
};

/// One cached decision.
struct TuneEntry {
  StrategyKind strategy = StrategyKind::ParPartNoLoop;  ///< the winner
  Tuning tuning{};                                      ///< its knobs
  std::vector<TunedCandidate> timings;  ///< every candidate timed, in order (empty when loaded from file)
  float tuning_ms = 0;                  ///< wall time of the call that tuned (the winner's result included)
  int candidates = 0;                   ///< candidates that could run on the grid (0 when loaded from file)
  int untimed = 0;  ///< of those, not timed: a lone candidate, all under a budget of 0, or those the budget left out
};

/// Process-wide autotuner behind interact<Auto>. Thread-safe. The file comment above describes what it times, what the
/// first call of a key costs and how to bound it.
class Autotuner {
  /// The fields that identify a decision (the text key is formatted from them).
  struct CallKey {
    std::type_index backend, functor, real;
    const char* backend_name;  ///< follows from `backend`; for the text only
    int dim;
    Index cells[3];
    int ppc, mc;
    char device[sizeof(DeviceProperties::name)];
    bool two = false;      ///< two sets: the sources' buckets follow
    int sppc = 0, smc = 0;  ///< the sources' ppc and M_C buckets (two sets)
    bool operator<(const CallKey& o) const {
      const auto a = std::tie(backend, functor, real, dim, cells[0], cells[1], cells[2], ppc, mc, two, sppc, smc);
      const auto b = std::tie(o.backend, o.functor, o.real, o.dim, o.cells[0], o.cells[1], o.cells[2], o.ppc, o.mc,
                              o.two, o.sppc, o.smc);
      if (a != b) return a < b;
      return std::strncmp(device, o.device, sizeof(device)) < 0;
    }
    /// "backend|device|functor type|precision type|dim|cells|ppc2^b|mc2^b", as in the cache file; two sets insert
    /// "|sources ppc2^b mc2^b" before the targets' M_C.
    std::string text() const {
      std::ostringstream s;
      s << backend_name << '|' << device << '|' << functor.name() << '|' << real.name() << '|' << dim << '|';
      for (int d = 0; d < dim; ++d) s << cells[d] << (d + 1 < dim ? "x" : "|");
      s << "ppc2^" << ppc;
      if (two) s << "|sources ppc2^" << sppc << " mc2^" << smc;
      s << "|mc2^" << mc;
      return s.str();
    }
  };
  /// What a call needs of a TuneEntry.
  struct Decision {
    StrategyKind strategy;
    Tuning tuning;
  };

 public:
  /// The process-wide instance.
  static Autotuner& instance() {
    static Autotuner a;
    return a;
  }
  /// Timed runs per candidate (median taken); default 3 after one warm-up. A run of a candidate faster than 0.2 ms
  /// times up to 64 back-to-back calls and divides; a call of 20 ms or more is timed once.
  void set_repetitions(int r) {
    std::lock_guard<std::mutex> l(m_);
    reps_ = std::max(1, r);
  }
  /// Bounds the time the first call of a key spends tuning: no further candidate is started once the time spent plus
  /// the best time so far exceeds `seconds` (see the file comment). 0 runs the first candidate that can run, untimed;
  /// infinity times every candidate; a negative value restores the default (3 s on the CPU backends, Host and Emulated;
  /// 30 s on GPUs).
  void set_time_budget(double seconds) {
    std::lock_guard<std::mutex> l(m_);
    budget_s_ = seconds;
  }
  /// Reports the candidates and the choice of a tuning that has taken longer than `after_seconds` (default: on, after
  /// one second). The environment variable CELLINT_AUTO_QUIET=1 (any value but 0) silences it too.
  void set_verbose(bool on, double after_seconds = 1.0) {
    std::lock_guard<std::mutex> l(m_);
    verbose_ = on;
    verbose_after_s_ = after_seconds;
  }
  /// Where the progress lines go (one call per line, without its newline); empty: stderr.
  void set_log(std::function<void(const std::string&)> sink) {
    std::lock_guard<std::mutex> l(m_);
    log_ = std::move(sink);
  }
  /// Persist decisions in `path`: loaded now if it exists (lines that do not parse are skipped; later lines win),
  /// appended on each new decision.
  void set_cache_file(const std::string& path) {
    std::lock_guard<std::mutex> l(m_);
    file_ = path;
    fast_.clear();  // the loaded decisions take precedence over those used so far
    std::ifstream in(path);
    std::string line;
    while (std::getline(in, line)) {
      std::istringstream ls(line);
      std::string key, name;
      long th = 0, pl = 0, sb[3] = {0, 0, 0};
      TuneEntry e;
      if (!(ls >> std::quoted(key) >> name >> th >> pl >> sb[0] >> sb[1] >> sb[2])) continue;
      if (!strategy_from_name(name, e.strategy) || std::min({th, pl, sb[0], sb[1], sb[2]}) < 0) continue;
      e.tuning.threads = static_cast<unsigned>(th);
      e.tuning.pencil_length = static_cast<int>(pl);
      for (int d = 0; d < 3; ++d) e.tuning.subbox[d] = static_cast<int>(sb[d]);
      table_[key] = e;
    }
  }
  /// Forget every decision.
  void clear() {
    std::lock_guard<std::mutex> l(m_);
    table_.clear();
    fast_.clear();
  }
  /// All decisions so far, by key.
  std::map<std::string, TuneEntry> table() const {
    std::lock_guard<std::mutex> l(m_);
    return table_;
  }

  /// The strategy named `s` in a cache file: its name (cellint::strategy_from_name()), or its StrategyKind number
  /// (older files). False (and `k` unchanged) for anything else, Auto included.
  static bool strategy_from_name(const std::string& s, StrategyKind& k) {
    std::optional<StrategyKind> r;
    if (!s.empty() && s.size() <= 3 && s.find_first_not_of("0123456789") == std::string::npos)
      r = static_cast<StrategyKind>(std::atoi(s.c_str()));
    else
      r = cellint::strategy_from_name(s);
    if (!r || static_cast<int>(*r) >= static_cast<int>(StrategyKind::Auto)) return false;
    k = *r;
    return true;
  }

  /// The cache key of a call (functor type, precision, dimension, cells, ppc bucket, device).
  template <class B, class R, int D, class F>
  static std::string key(const CellGrid<B, R, D>& g, const F&) {
    return call_key<B, R, D, F>(g, g, B::properties()).text();
  }
  /// The cache key of a two-set call (the sources' ppc and M_C buckets added).
  template <class B, class R, int D, class F>
  static std::string key(const CellGrid<B, R, D>& targets, const CellGrid<B, R, D>& sources, const F&) {
    return call_key<B, R, D, F>(targets, sources, B::properties()).text();
  }
  /// The order in which Auto takes the first strategy that can run, at its rule's shape, with Tuning::reproducible
  /// (timing could choose another strategy in the next run, which adds in another order). It depends on the grid alone:
  /// on GPU-like backends all-in-sm first below 32 targets per cell on average (the usual winner there on the H100),
  /// then x-pencil, par-cell-sm, par-part-loop; on the CPU cell-loop-half, cell-loop, brute-force.
  template <class B>
  static std::vector<StrategyKind> reproducible_order(double targets_per_cell) {
    if (!B::is_gpu_like) return {StrategyKind::CellLoopHalf, StrategyKind::CellLoop, StrategyKind::BruteForce};
    std::vector<StrategyKind> r{StrategyKind::XPencil, StrategyKind::ParCellSM, StrategyKind::ParPartLoop};
    if (targets_per_cell < 32) r.insert(r.begin(), StrategyKind::AllInSM);
    return r;
  }
  /// Mean particles per cell in half octaves.
  template <class B, class R, int D>
  static int ppc_bucket(const CellGrid<B, R, D>& g) {
    const double ppc = g.cell_count() ? static_cast<double>(g.size()) / g.cell_count() : 0.0;
    return ppc > 0 ? static_cast<int>(std::floor(std::log2(ppc) * 2)) : -99;
  }
  /// M_C in octaves: shared-memory strategies' eligibility and shapes depend on it.
  static int mc_bucket(Index mc) { return mc > 0 ? static_cast<int>(std::ceil(std::log2(mc))) : 0; }

  /// Runs the cached winner for this call, tuning first when the key is new or its decision cannot run this grid.
  /// @throws Unsupported when no strategy can run the grid
  template <class B, class R, int D, class F>
  Report run(const CellGrid<B, R, D>& g, const F& f, typename F::Accum* out, const Tuning& user) {
    return run(g, g, f, out, user);
  }
  /// The same for the targets of one grid against the sources of another (one set when they are the same object). With
  /// Tuning::reproducible, the first of reproducible_order() that can run, untimed and not cached.
  /// @throws Unsupported when no strategy can run the grids
  template <class B, class R, int D, class F>
  Report run(const CellGrid<B, R, D>& g, const CellGrid<B, R, D>& src, const F& f, typename F::Accum* out,
             const Tuning& user) {
    const DeviceProperties p = B::properties();
    if (user.reproducible) {
      const auto c = detail::make_call(g, src, p);
      Report rep;
      for (StrategyKind k : reproducible_order<B>(c.mean_targets_per_cell()))
        if (detail::try_run_kind(k, c, f, out, user, rep)) return rep;
      throw Unsupported("cellint: Auto (reproducible) found no strategy that can run these grids on this backend");
    }
    // The fast path of every call after the first: the decision found by the same fields as the text key, without
    // formatting it (a few microseconds per call matter to kernels of a few microseconds), and checked against this
    // grid.
    const CallKey ck = call_key<B, R, D, F>(g, src, p);
    Decision known{};
    bool hit = false;
    {
      std::lock_guard<std::mutex> l(m_);
      auto it = fast_.find(ck);
      if (it != fast_.end()) {
        known = it->second;
        hit = true;
      }
    }
    Report rep;
    if (hit && run_if_supported(known, g, src, f, out, p, rep)) return rep;

    // First call of this CallKey (or its decision does not fit this grid): the table, as filled by earlier calls and
    // the cache file.
    const std::string k = ck.text();
    bool found = false;
    if (!hit) {
      std::lock_guard<std::mutex> l(m_);
      auto it = table_.find(k);
      if (it != table_.end()) {
        found = usable<B>(it->second, g, src, f, p);
        if (found) known = Decision{it->second.strategy, it->second.tuning};
      } else {
        // Hysteresis: a simulation whose fullest cell drifts into the next M_C octave keeps the decision of the
        // neighbouring octave while that strategy still supports the grid, instead of re-timing in the middle of a run.
        const int mc = mc_bucket(g.max_per_cell());
        const std::string base = k.substr(0, k.rfind("|mc2^") + 5);
        for (int dm : {-1, 1}) {
          auto nb = table_.find(base + std::to_string(mc + dm));
          if (nb != table_.end() && usable<B>(nb->second, g, src, f, p)) {
            TuneEntry e = nb->second;
            e.timings.clear();
            e.tuning_ms = 0;
            e.candidates = e.untimed = 0;
            table_[k] = e;
            known = Decision{e.strategy, e.tuning};
            found = true;
            break;
          }
        }
      }
      if (found) fast_[ck] = known;
    }
    if (found && run_if_supported(known, g, src, f, out, p, rep)) return rep;

    // Tune: for a new key, or again when the key's decision cannot run this grid (it is replaced, in the table, the
    // fast path and the cache file).
    Tuned t = tune(detail::make_call(g, src, p), f, out, user, k);
    {
      std::lock_guard<std::mutex> l(m_);
      table_[k] = t.entry;
      fast_[ck] = Decision{t.entry.strategy, t.entry.tuning};
      if (!file_.empty()) {
        std::ofstream o(file_, std::ios::app);
        o << std::quoted(k) << ' ' << to_string(t.entry.strategy) << ' ' << t.entry.tuning.threads << ' '
          << t.entry.tuning.pencil_length << ' ' << t.entry.tuning.subbox[0] << ' ' << t.entry.tuning.subbox[1] << ' '
          << t.entry.tuning.subbox[2] << '\n';
      }
    }
    rep.strategy = t.entry.strategy;
    rep.shape = t.shape;
    rep.tuning_ms = t.entry.tuning_ms;
    return rep;
  }

 private:
  /// A tuning's outcome: the decision, and the launch shape of the run whose result is in `out`.
  struct Tuned {
    TuneEntry entry;
    LaunchShape shape{};
  };
  /// What timing one candidate found.
  struct Sample {
    float ms = 0;
    int calls = 0;
    bool abandoned = false;  ///< stopped early: it could not win
    bool single = false;     ///< one long call was its sample
    LaunchShape shape{};
  };
  /// The settings a tuning runs with (read once, under the lock).
  struct Settings {
    int reps;
    double budget_ms;
    bool verbose;
    double verbose_after_ms;
    std::function<void(const std::string&)> log;
  };
  /// The progress lines of one tuning: held until it has taken longer than the threshold, then written, and every later
  /// one at once.
  class Progress {
   public:
    Progress(const Settings& s, const std::string& key) : s_(s), prefix_("cellint: Auto tuning " + key + ": ") {}
    void line(const std::string& text) {
      if (!s_.verbose) return;
      held_.push_back(prefix_ + text);
    }
    void flush(double elapsed_ms) {
      if (!s_.verbose || (!started_ && elapsed_ms <= s_.verbose_after_ms)) return;
      started_ = true;
      for (const std::string& l : held_) {
        if (s_.log) {
          s_.log(l);
        } else {
          std::fputs((l + "\n").c_str(), stderr);
          std::fflush(stderr);
        }
      }
      held_.clear();
    }

   private:
    const Settings& s_;
    std::string prefix_;
    std::vector<std::string> held_;
    bool started_ = false;
  };

  static constexpr float batch_ms = 0.2f;    ///< shortest timed span per repetition (see tune())
  static constexpr int max_batch = 64;       ///< most calls in one timed span
  static constexpr float single_ms = 20.0f;  ///< a call at least this long is its own sample
  static constexpr float margin = 1.5f;      ///< a candidate this much slower than the best is abandoned
  static constexpr float retime_factor = 4;  ///< a single long call this much slower than a short best is timed again

  /// The fields of key() on the device described by `p` (targets `g`, sources `s`; one set when the same object).
  template <class B, class R, int D, class F>
  static CallKey call_key(const CellGrid<B, R, D>& g, const CellGrid<B, R, D>& s, const DeviceProperties& p) {
    CallKey k{typeid(B), typeid(F), typeid(R), B::name(), D, {}, ppc_bucket(g), mc_bucket(g.max_per_cell()), {}};
    for (int d = 0; d < D; ++d) k.cells[d] = g.geometry().cells[d];
    std::memcpy(k.device, p.name, sizeof(k.device));
    if (&g != &s) {
      k.two = true;
      k.sppc = ppc_bucket(s);
      k.smc = mc_bucket(s.max_per_cell());
    }
    return k;
  }
  /// Runs decision `d` when its strategy supports these grids (a host computation; no string is formatted unless it
  /// says no); false, running nothing, otherwise.
  template <class B, class R, int D, class F>
  static bool run_if_supported(const Decision& d, const CellGrid<B, R, D>& g, const CellGrid<B, R, D>& s, const F& f,
                               typename F::Accum* out, const DeviceProperties& p, Report& rep) {
    return detail::try_run_kind(d.strategy, detail::make_call(g, s, p), f, out, d.tuning, rep);
  }
  /// Whether a table entry is a decision Auto could make for these grids: one of the backend's strategies, and it
  /// supports them.
  template <class B, class R, int D, class F>
  static bool usable(const TuneEntry& e, const CellGrid<B, R, D>& g, const CellGrid<B, R, D>& s, const F& f,
                     const DeviceProperties& p) {
    const std::vector<StrategyKind> all = strategies_for<B>();
    if (std::find(all.begin(), all.end(), e.strategy) == all.end()) return false;
    return detail::plan_support(e.strategy, detail::make_call(g, s, p), f, e.tuning).ok;
  }
  /// "x-pencil pencil_length=2", for the progress lines.
  static std::string describe(StrategyKind s, const Tuning& t) {
    std::ostringstream o;
    o << to_string(s);
    if (t.threads) o << " threads=" << t.threads;
    if (t.pencil_length) o << " pencil_length=" << t.pencil_length;
    if (t.subbox[0] || t.subbox[1] || t.subbox[2])
      o << " subbox=" << t.subbox[0] << 'x' << t.subbox[1] << 'x' << t.subbox[2];
    return o.str();
  }
  /// "0.42 ms", "12.3 ms", "2.71 s".
  static std::string format_ms(double ms) {
    char b[32];
    if (ms >= 1000)
      std::snprintf(b, sizeof(b), "%.2f s", ms / 1000);
    else
      std::snprintf(b, sizeof(b), ms >= 100 ? "%.0f ms" : ms >= 10 ? "%.1f ms" : "%.2f ms", ms);
    return b;
  }
  template <class B>
  Settings settings() const {
    std::lock_guard<std::mutex> l(m_);
    Settings s{reps_, 0, verbose_, verbose_after_s_ * 1e3, log_};
    const double budget_s = budget_s_ >= 0 ? budget_s_ : (B::device_memory ? 30.0 : 3.0);
    s.budget_ms = budget_s * 1e3;
    const char* quiet = std::getenv("CELLINT_AUTO_QUIET");
    if (quiet && *quiet && std::strcmp(quiet, "0") != 0) s.verbose = false;
    return s;
  }

  /// Times candidate (k, t): the median over the repetitions, or less when a call is long or the candidate falls behind
  /// `give_up_ms`. `warm`: it has run on this grid already (no warm-up, and the first call is not a sample). `out`
  /// holds its result afterwards.
  template <class B, class R, int D, class F>
  static Sample time_candidate(StrategyKind k, const Tuning& t, const detail::Call<B, R, D>& c, const F& f,
                               typename F::Accum* out, int reps, float give_up_ms, bool warm) {
    Sample s;
    typename B::Timer timer(c.stream);
    auto call = [&] {
      s.shape = detail::run_kind(k, c, f, out, t).shape;
      ++s.calls;
    };
    if (!warm && !B::device_memory) {
      // CPU backends: nothing is compiled or loaded on a first call, so a long first call is already a sample, and the
      // warm-up otherwise.
      timer.start();
      call();
      timer.stop();
      const float first = timer.elapsed_ms();
      if (first >= single_ms) {
        s.ms = first;
        s.single = true;
        return s;
      }
    } else if (!warm) {
      call();  // warm-up (and JIT / attribute setup)
    }
    // A call shorter than batch_ms is timed as a batch of back-to-back calls (as they run in a simulation): one launch
    // of a few microseconds, timed alone, is mostly launch latency and event jitter, and ranked the small-grid
    // candidates by noise.
    timer.start();
    call();
    timer.stop();
    const float once = timer.elapsed_ms();
    if (once >= single_ms || once > give_up_ms) {
      s.ms = once;
      s.single = once >= single_ms;
      s.abandoned = !s.single;
      return s;
    }
    const int batch =
        once > 0 && once < batch_ms ? std::min(max_batch, static_cast<int>(std::ceil(batch_ms / once))) : 1;
    std::vector<float> ms;
    float fastest = once;
    for (int r = 0; r < reps; ++r) {
      // On a GPU a batch whose enqueueing took about as long as its execution measured the host, not the kernels: a
      // host thread that stalls for a few milliseconds (seen on the benchmark machine: 25 us per launch instead of 4)
      // made the winner a matter of luck. Such a batch is timed again, at most twice, and the fastest try is kept.
      float sample = -1;
      for (int attempt = 0; attempt < 3; ++attempt) {
        const auto h0 = std::chrono::steady_clock::now();
        timer.start();
        for (int c = 0; c < batch; ++c) call();
        timer.stop();
        const double host_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - h0).count();
        const float gpu_ms = timer.elapsed_ms();
        if (sample < 0 || gpu_ms < sample) sample = gpu_ms;
        if (!B::device_memory || host_ms < 0.9 * gpu_ms) break;  // CPU backends: always host time
      }
      ms.push_back(sample / static_cast<float>(batch));
      fastest = std::min(fastest, ms.back());
      if (fastest > give_up_ms && r + 1 < reps) {  // its median cannot beat the best any more
        s.ms = fastest;
        s.abandoned = true;
        return s;
      }
    }
    std::sort(ms.begin(), ms.end());
    s.ms = ms[ms.size() / 2];
    return s;
  }

  /// Chooses the strategy for this call (see the file comment); `out` holds the winner's result.
  /// @throws Unsupported when no candidate can run
  template <class B, class R, int D, class F>
  Tuned tune(const detail::Call<B, R, D>& call, const F& f, typename F::Accum* out, const Tuning& user,
             const std::string& key) {
    const auto t0 = std::chrono::steady_clock::now();
    auto elapsed_ms = [&] {
      return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    };
    const Settings set = settings<B>();
    Progress progress(set, key);
    std::vector<std::pair<StrategyKind, Tuning>> cands;
    for (const auto& c : auto_candidates<B>(user))
      if (auto_eligible(c.first, call.views.targets, call.views.sources) && detail::plan_support(c.first, call, f, c.second).ok)
        cands.push_back(c);
    if (cands.empty()) throw Unsupported("cellint: Auto found no strategy that can run this grid on this backend");

    Tuned res;
    TuneEntry& e = res.entry;
    e.candidates = static_cast<int>(cands.size());
    if (cands.size() == 1 || set.budget_ms <= 0) {
      // Nothing to choose (or no time to): the first candidate, untimed.
      e.strategy = cands[0].first;
      e.tuning = cands[0].second;
      e.untimed = e.candidates;
      res.shape = detail::run_kind(e.strategy, call, f, out, e.tuning).shape;
      B::synchronize(call.stream);
      e.tuning_ms = static_cast<float>(elapsed_ms());
      progress.line(describe(e.strategy, e.tuning) +
                    (cands.size() == 1 ? " is the only candidate" : " is the first candidate (time budget 0)") +
                    ", run untimed: " + format_ms(e.tuning_ms));
      progress.flush(e.tuning_ms);
      return res;
    }

    const std::size_t n = static_cast<std::size_t>(call.targets());
    std::vector<typename F::Accum> kept;  // the best candidate's result, while others run (CPU backends)
    bool kept_valid = false;
    bool best_in_out = false;  // `out` holds the best candidate's result
    int best = -1;
    float best_ms = 0;
    std::vector<int> entry_of(cands.size(), -1);  // candidate -> index in e.timings
    // Times candidate i (again, when `warm`) and records what it showed.
    auto time_one = [&](std::size_t i, bool warm) {
      if (!B::device_memory && best_in_out && best_ms >= single_ms && n > 0) {
        // Copying the result aside costs far less than running the winner once more.
        kept.assign(out, out + n);
        kept_valid = true;
      }
      const auto& c = cands[i];
      const Sample s = time_candidate(c.first, c.second, call, f, out, set.reps,
                                      best >= 0 ? margin * best_ms : std::numeric_limits<float>::infinity(), warm);
      if (entry_of[i] < 0) {
        entry_of[i] = static_cast<int>(e.timings.size());
        e.timings.push_back({c.first, c.second, s.ms, 0, false});
      }
      TunedCandidate& tc = e.timings[static_cast<std::size_t>(entry_of[i])];
      tc.ms = s.ms;
      tc.calls += s.calls;
      tc.abandoned = s.abandoned;
      std::string note = warm ? " (timed again)" : "";
      if (best < 0 || s.ms < best_ms) {
        best = static_cast<int>(i);
        best_ms = s.ms;
        best_in_out = true;
        kept_valid = false;
        res.shape = s.shape;
        note += " (best so far)";
      } else {
        best_in_out = false;
        if (s.abandoned) note += " (abandoned after " + std::to_string(tc.calls) + " calls: over 1.5x the best)";
      }
      progress.line(describe(c.first, c.second) + ": " + format_ms(s.ms) + note);
      progress.flush(elapsed_ms());
      return s;
    };
    // Another candidate only while the budget can hold a call as fast as the best so far.
    auto within_budget = [&] { return best < 0 || elapsed_ms() + best_ms <= set.budget_ms; };

    std::vector<std::size_t> single;  // measured by one long call (CPU backends)
    std::size_t next = 0;
    for (; next < cands.size() && within_budget(); ++next)
      if (time_one(next, false).single && !B::device_memory) single.push_back(next);
    // On a CPU shared with other work a call of a millisecond can now and then take 20 ms, or a second (threads waiting
    // at a barrier for one that is descheduled). When the winner's calls are short, a candidate ranked by one call more
    // than 4x as long is timed again: no strategy is usually that far off the pace, so it was most likely interrupted,
    // and if it really is that slow, one more call costs little (it is abandoned after it).
    if (best_ms < single_ms)
      for (std::size_t i : single)
        if (e.timings[static_cast<std::size_t>(entry_of[i])].ms > retime_factor * best_ms && within_budget())
          time_one(i, true);

    e.strategy = cands[static_cast<std::size_t>(best)].first;
    e.tuning = cands[static_cast<std::size_t>(best)].second;
    e.untimed = static_cast<int>(cands.size() - next);
    if (e.untimed > 0) {
      char b[160];
      std::snprintf(b, sizeof(b), "%d of %d candidates not timed: the time budget of %.3g s holds no further call "
                    "(Autotuner::set_time_budget)", e.untimed, e.candidates, set.budget_ms / 1e3);
      progress.line(b);
    }
    if (!best_in_out) {
      if (kept_valid)
        std::copy(kept.begin(), kept.end(), out);
      else
        res.shape = detail::run_kind(e.strategy, call, f, out, e.tuning).shape;
    }
    B::synchronize(call.stream);
    e.tuning_ms = static_cast<float>(elapsed_ms());
    progress.line("chose " + describe(e.strategy, e.tuning) + " (" + format_ms(best_ms) + " a call) after " +
                  format_ms(e.tuning_ms) + "; Autotuner::set_verbose(false) or CELLINT_AUTO_QUIET=1 silences this");
    progress.flush(e.tuning_ms);
    return res;
  }

  mutable std::mutex m_;
  std::map<std::string, TuneEntry> table_;
  std::map<CallKey, Decision> fast_;  ///< the decisions of table_ used so far, by CallKey
  std::string file_;
  int reps_ = 3;
  double budget_s_ = -1;  ///< negative: the backend's default
  bool verbose_ = true;
  double verbose_after_s_ = 1.0;
  std::function<void(const std::string&)> log_;
};

}  // namespace cellint
