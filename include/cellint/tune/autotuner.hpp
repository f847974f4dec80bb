#pragma once
/// @file
/// Auto: the first time a (functor, precision, dimension, grid shape, particles-per-cell bucket,
/// device) is seen, time every eligible strategy with a few launch shapes, cache the winner and
/// use it from then on. The table of decisions and timings is exposed and can be persisted.

#include <algorithm>
#include <chrono>
#include <cmath>
#include <fstream>
#include <iomanip>
#include <map>
#include <mutex>
#include <cstring>
#include <sstream>
#include <string>
#include <tuple>
#include <typeindex>
#include <typeinfo>
#include <vector>

#include "cellint/strategies/strategy.hpp"

namespace cellint {

/// One timed candidate.
struct TunedCandidate {
  StrategyKind strategy;  ///< strategy
  Tuning tuning;          ///< knobs it ran with
  float ms;               ///< median time of the timed runs, milliseconds
};

/// One cached decision.
struct TuneEntry {
  StrategyKind strategy = StrategyKind::ParPartNoLoop;  ///< the winner
  Tuning tuning{};                                      ///< its knobs
  std::vector<TunedCandidate> timings;                  ///< every candidate timed (empty when loaded from file)
  float tuning_ms = 0;                                  ///< total time spent tuning
};

/// Process-wide autotuner behind interact<Auto>. Thread-safe.
class Autotuner {
  /// The fields that identify a decision (the text key is formatted from them).
  struct CallKey {
    std::type_index backend, functor, real;
    const char* backend_name;  ///< follows from `backend`; for the text only
    int dim;
    Index cells[3];
    int ppc, mc;
    char device[sizeof(DeviceProperties::name)];
    bool operator<(const CallKey& o) const {
      const auto a = std::tie(backend, functor, real, dim, cells[0], cells[1], cells[2], ppc, mc);
      const auto b = std::tie(o.backend, o.functor, o.real, o.dim, o.cells[0], o.cells[1], o.cells[2], o.ppc, o.mc);
      if (a != b) return a < b;
      return std::strncmp(device, o.device, sizeof(device)) < 0;
    }
    /// "backend|device|functor type|precision type|dim|cells|ppc2^b|mc2^b", as in the cache file.
    std::string text() const {
      std::ostringstream s;
      s << backend_name << '|' << device << '|' << functor.name() << '|' << real.name() << '|' << dim << '|';
      for (int d = 0; d < dim; ++d) s << cells[d] << (d + 1 < dim ? "x" : "|");
      s << "ppc2^" << ppc << "|mc2^" << mc;
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
  /// Timed runs per candidate (median taken); default 3 after one warm-up. A run of a candidate
  /// faster than 0.2 ms times up to 64 back-to-back calls and divides.
  void set_repetitions(int r) { reps_ = std::max(1, r); }
  /// Persist decisions in `path` (loaded now if it exists, appended on each new decision).
  void set_cache_file(const std::string& path) {
    std::lock_guard<std::mutex> l(m_);
    file_ = path;
    std::ifstream in(path);
    std::string key;
    int k = 0, th = 0, pl = 0, sx = 0, sy = 0, sz = 0;
    while (in >> std::quoted(key) >> k >> th >> pl >> sx >> sy >> sz) {
      TuneEntry e;
      e.strategy = static_cast<StrategyKind>(k);
      e.tuning.threads = static_cast<unsigned>(th);
      e.tuning.pencil_length = pl;
      e.tuning.subbox[0] = sx;
      e.tuning.subbox[1] = sy;
      e.tuning.subbox[2] = sz;
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

  /// The cache key of a call (functor type, precision, dimension, cells, ppc bucket, device).
  template <class B, class R, int D, class F>
  static std::string key(const CellGrid<B, R, D>& g, const F&) {
    return call_key<B, R, D, F>(g, B::properties()).text();
  }
  /// Mean particles per cell in half octaves.
  template <class B, class R, int D>
  static int ppc_bucket(const CellGrid<B, R, D>& g) {
    const double ppc = g.cell_count() ? static_cast<double>(g.size()) / g.cell_count() : 0.0;
    return ppc > 0 ? static_cast<int>(std::floor(std::log2(ppc) * 2)) : -99;
  }
  /// M_C in octaves: shared-memory strategies' eligibility and shapes depend on it.
  static int mc_bucket(Index mc) { return mc > 0 ? static_cast<int>(std::ceil(std::log2(mc))) : 0; }

  /// Runs the cached winner for this call, tuning first when the key is new.
  template <class B, class R, int D, class F>
  Report run(const CellGrid<B, R, D>& g, const F& f, typename F::Accum* out, const Tuning& user) {
    // The fast path of every call after the first: the decision found by the same fields as
    // the text key, without formatting it (a few microseconds per call matter to kernels of a
    // few microseconds).
    const CallKey ck = call_key<B, R, D, F>(g, B::properties());
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
    if (hit) {
      const Report r = interact_with(known.strategy, g, f, out, known.tuning);
      return Report{r.strategy, r.shape, 0};
    }
    const std::string k = ck.text();
    TuneEntry e;
    bool found = false;
    {
      std::lock_guard<std::mutex> l(m_);
      auto it = table_.find(k);
      if (it != table_.end()) {
        e = it->second;
        found = true;
      } else {
        // Hysteresis: a simulation whose fullest cell drifts into the next M_C octave keeps the
        // decision of the neighbouring octave while that strategy still supports the grid,
        // instead of re-timing in the middle of a run.
        const int mc = mc_bucket(g.max_per_cell());
        const std::string base = k.substr(0, k.rfind("|mc2^") + 5);
        for (int dm : {-1, 1}) {
          auto nb = table_.find(base + std::to_string(mc + dm));
          if (nb != table_.end() && supports(nb->second.strategy, g, f, nb->second.tuning).ok) {
            e = nb->second;
            e.timings.clear();
            e.tuning_ms = 0;
            table_[k] = e;
            found = true;
            break;
          }
        }
      }
    }
    Report rep;
    if (!found) {
      e = tune(g, f, out, user);
      rep.tuning_ms = e.tuning_ms;
      std::lock_guard<std::mutex> l(m_);
      table_[k] = e;
      if (!file_.empty()) {
        std::ofstream o(file_, std::ios::app);
        o << std::quoted(k) << ' ' << static_cast<int>(e.strategy) << ' ' << e.tuning.threads << ' '
          << e.tuning.pencil_length << ' ' << e.tuning.subbox[0] << ' ' << e.tuning.subbox[1] << ' '
          << e.tuning.subbox[2] << '\n';
      }
    }
    {
      std::lock_guard<std::mutex> l(m_);
      fast_[ck] = Decision{e.strategy, e.tuning};
    }
    const Report r = interact_with(e.strategy, g, f, out, e.tuning);
    rep.strategy = r.strategy;
    rep.shape = r.shape;
    return rep;
  }

 private:
  /// The fields of key() on the device described by `p`.
  template <class B, class R, int D, class F>
  static CallKey call_key(const CellGrid<B, R, D>& g, const DeviceProperties& p) {
    CallKey k{typeid(B), typeid(F), typeid(R), B::name(), D, {}, ppc_bucket(g), mc_bucket(g.max_per_cell()), {}};
    for (int d = 0; d < D; ++d) k.cells[d] = g.geometry().cells[d];
    std::memcpy(k.device, p.name, sizeof(k.device));
    return k;
  }
  template <class B, class R, int D, class F>
  TuneEntry tune(const CellGrid<B, R, D>& g, const F& f, typename F::Accum* out, const Tuning& user) {
    typename B::Timer total(g.stream());
    total.start();
    std::vector<std::pair<StrategyKind, Tuning>> cands;
    for (StrategyKind s : strategies_for<B>()) {
      const bool threads_matter = s == StrategyKind::ParPartNoLoop || s == StrategyKind::ParCell ||
                                  s == StrategyKind::ParCellSM;
      if (threads_matter && user.threads == 0) {
        for (unsigned th : {64u, 128u, 256u}) {
          Tuning t = user;
          t.threads = th;
          cands.emplace_back(s, t);
        }
      } else if ((s == StrategyKind::XPencil || s == StrategyKind::XPencilTile) && user.pencil_length == 0) {
        // The rule's pencil length and two others. X-pencil: shorter pencils than the rule's
        // (smaller blocks, fewer threads waiting at each row's barrier); X-pencil-tile: longer
        // ones (the rule aims at three blocks per multiprocessor; longer pencils stage fewer ghost
        // cells per target). A length the rule picks anyway is timed once more, harmlessly.
        cands.emplace_back(s, user);
        static constexpr int pencil_lengths[2][2] = {{1, 2}, {2, 4}};
        for (int len : pencil_lengths[s == StrategyKind::XPencil ? 0 : 1]) {
          Tuning t = user;
          t.pencil_length = len;
          cands.emplace_back(s, t);
        }
      } else {
        cands.emplace_back(s, user);
      }
    }
    TuneEntry best;
    float best_ms = -1;
    for (const auto& c : cands) {
      if (!supports(c.first, g, f, c.second).ok) continue;
      typename B::Timer timer(g.stream());
      interact_with(c.first, g, f, out, c.second);  // warm-up (and JIT / attribute setup)
      // A call shorter than batch_ms is timed as a batch of back-to-back calls (as they run in
      // a simulation): one launch of a few microseconds, timed alone, is mostly launch latency
      // and event jitter, and ranked the small-grid candidates by noise.
      timer.start();
      interact_with(c.first, g, f, out, c.second);
      timer.stop();
      const float once = timer.elapsed_ms();
      const int batch = once > 0 && once < batch_ms ? std::min(max_batch, static_cast<int>(std::ceil(batch_ms / once))) : 1;
      std::vector<float> ms;
      for (int r = 0; r < reps_; ++r) {
        // On a GPU a batch whose enqueueing took about as long as its execution measured the
        // host, not the kernels: a host thread that stalls for a few milliseconds (seen on the
        // benchmark machine: 25 us per launch instead of 4) made the winner a matter of luck.
        // Such a batch is timed again, at most twice, and the fastest try is kept.
        float sample = -1;
        for (int attempt = 0; attempt < 3; ++attempt) {
          const auto h0 = std::chrono::steady_clock::now();
          timer.start();
          for (int k = 0; k < batch; ++k) interact_with(c.first, g, f, out, c.second);
          timer.stop();
          const double host_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - h0).count();
          const float gpu_ms = timer.elapsed_ms();
          if (sample < 0 || gpu_ms < sample) sample = gpu_ms;
          if (!B::device_memory || host_ms < 0.9 * gpu_ms) break;  // CPU backends: always host time
        }
        ms.push_back(sample / static_cast<float>(batch));
      }
      std::sort(ms.begin(), ms.end());
      const float med = ms[ms.size() / 2];
      best.timings.push_back({c.first, c.second, med});
      if (best_ms < 0 || med < best_ms) {
        best_ms = med;
        best.strategy = c.first;
        best.tuning = c.second;
      }
    }
    if (best_ms < 0) throw Unsupported("cellint: Auto found no strategy that can run this grid on this backend");
    B::synchronize(g.stream());
    total.stop();
    best.tuning_ms = total.elapsed_ms();
    return best;
  }

  static constexpr float batch_ms = 0.2f;  ///< shortest timed span per repetition (see tune())
  static constexpr int max_batch = 64;      ///< most calls in one timed span
  mutable std::mutex m_;
  std::map<std::string, TuneEntry> table_;
  std::map<CallKey, Decision> fast_;  ///< the decisions of table_ used so far, by CallKey
  std::string file_;
  int reps_ = 3;
};

}  // namespace cellint
