// Auto (tune/autotuner.hpp) on the Host backend: decisions that no longer fit are tuned again,
// the cache file's strategy numbers and names, and the cost of the first call of a key (calls
// counted through the functor's init(), once per particle and call), the time budget and the
// progress lines.
#include <catch2/catch.hpp>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iomanip>
#include <string>
#include <vector>

#include "support/strategy_check.hpp"

#if defined(_OPENMP)
#include <omp.h>
#endif

using namespace cellint;
using namespace cellint::test;

namespace {

/// Sums a weight over the neighbours within the cutoff; `spin` dependent multiply-adds per pair
/// make a call as slow as a test needs, and `inits` counts init() calls (one per particle and
/// call on the Host strategies). No symmetric(): only the cell loop can run it on the Host.
struct Pairs {
  struct Accum {
    double count;
    double w;
  };
  double rc2 = 1;
  int spin = 0;
  std::atomic<long>* inits = nullptr;
  Accum init() const {
    if (inits) inits->fetch_add(1, std::memory_order_relaxed);
    return {};
  }
  void operator()(Accum& a, const NoPayload&, const NoPayload&, const Vec<double, 3>& dr, double r2) const {
    const double h = rc2 - r2;
    double x = h;
    for (int k = 0; k < spin; ++k) x = x * 0.75 + dr[0] * 0.25;
    a.count += 1;
    a.w += h * h + 1e-3 * x;
  }
};

/// Pairs with Newton's third law: the half-shell cell loop can run it too.
struct PairsSym : Pairs {
  void symmetric(Accum& ai, Accum& aj, const NoPayload& pi, const NoPayload& pj, const Vec<double, 3>& dr,
                 double r2) const {
    (*this)(ai, pi, pj, dr, r2);
    Vec<double, 3> m;
    for (int d = 0; d < 3; ++d) m[d] = -dr[d];
    (*this)(aj, pj, pi, m, r2);
  }
};

/// A periodic grid of `cells`^3 cells of width 1 with `ppc` uniform particles per cell.
CellGrid<Host, double, 3> make_grid(int cells, double ppc) {
  CellGrid<Host, double, 3> g(Box<double, 3>::cube(0, cells, true), 1.0);
  g.build(make_positions(g.geometry(), ppc, Distribution::Uniform, fresh_seed()));
  return g;
}

/// "" when `got` (sorted order) agrees with brute force for functor `f` on `g`.
template <class F>
std::string agrees_with_brute_force(const CellGrid<Host, double, 3>& g, const F& f,
                                    const std::vector<Pairs::Accum>& got) {
  F plain = f;
  plain.inits = nullptr;
  std::vector<Pairs::Accum> ref(got.size());
  interact_with(StrategyKind::BruteForce, g, plain, ref.data());
  for (std::size_t i = 0; i < ref.size(); ++i) {
    const bool ok = got[i].count == ref[i].count && std::abs(got[i].w - ref[i].w) <= 1e-9 * (1 + std::abs(ref[i].w));
    if (!ok)
      return "particle " + std::to_string(i) + ": count " + std::to_string(got[i].count) + " vs " +
             std::to_string(ref[i].count) + ", w " + std::to_string(got[i].w) + " vs " + std::to_string(ref[i].w);
  }
  return "";
}

/// A file name of its own in the temporary directory (removed by the destructor).
struct TempFile {
  std::string path;
  TempFile() {
    static int count = 0;
    path = (std::filesystem::temp_directory_path() /
            ("cellint_autotuner_test_" + std::to_string(std::chrono::steady_clock::now().time_since_epoch().count()) +
             "_" + std::to_string(++count) + ".txt"))
               .string();
  }
  ~TempFile() { std::remove(path.c_str()); }
  std::vector<std::string> lines() const {
    std::ifstream in(path);
    std::vector<std::string> r;
    for (std::string l; std::getline(in, l);) r.push_back(l);
    return r;
  }
};

/// Leaves the process-wide Autotuner as the other tests expect it, and runs the test on one
/// OpenMP thread: on a machine shared with other work, threads waiting at a barrier (the
/// half-shell loop has one per colour class) for a descheduled one make call times erratic, by
/// up to a second here, and these tests depend on how long calls take.
struct ResetAutotuner {
#if defined(_OPENMP)
  int threads = omp_get_max_threads();
#endif
  ResetAutotuner() {
    reset();
#if defined(_OPENMP)
    omp_set_num_threads(1);
#endif
  }
  ~ResetAutotuner() {
    reset();
#if defined(_OPENMP)
    omp_set_num_threads(threads);
#endif
  }
  static void reset() {
    Autotuner& a = Autotuner::instance();
    a.set_cache_file("");
    a.clear();
    a.set_repetitions(3);
    a.set_time_budget(-1);
    a.set_verbose(true);
    a.set_log({});
  }
};

/// Makes a call of strategy `k` with `f` on `g` last at least `ms` (doubling `f.spin`; the
/// fastest of three calls counts, so that a cold or interrupted call does not end the search
/// early).
template <class F>
void slow_down(const CellGrid<Host, double, 3>& g, F& f, StrategyKind k, double ms) {
  std::vector<Pairs::Accum> out(static_cast<std::size_t>(g.size()));
  for (f.spin = 16; f.spin < (1 << 20); f.spin *= 2) {
    double fastest = 1e300;
    for (int i = 0; i < 3; ++i) {
      const auto t0 = std::chrono::steady_clock::now();
      interact_with(k, g, f, out.data());
      fastest =
          std::min(fastest, std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
    }
    if (fastest >= ms) return;
  }
}

}  // namespace

TEST_CASE("Auto tunes again when a cached decision cannot run the grid (numbers and names in the cache file)",
          "[host][auto]") {
  ResetAutotuner reset;
  Autotuner& tuner = Autotuner::instance();
  const auto g = make_grid(5, 6);
  const Pairs f{};  // no symmetric(): cell-loop-half cannot run it
  REQUIRE_FALSE(supports(StrategyKind::CellLoopHalf, g, f).ok);
  const std::string key = Autotuner::key(g, f);
  // The StrategyKind number (the format of older files) and the name.
  for (const std::string& stale :
       {std::to_string(static_cast<int>(StrategyKind::CellLoopHalf)), std::string("cell-loop-half")}) {
    INFO("cached strategy: " << stale);
    TempFile file;
    std::ofstream(file.path) << std::quoted(key) << ' ' << stale << " 0 0 0 0 0\n";
    tuner.clear();
    tuner.set_cache_file(file.path);
    REQUIRE(tuner.table().count(key) == 1);
    REQUIRE(tuner.table().at(key).strategy == StrategyKind::CellLoopHalf);

    std::vector<Pairs::Accum> out(static_cast<std::size_t>(g.size()));
    Report r;
    REQUIRE_NOTHROW(r = interact(g, f, out.data()));
    CHECK(r.strategy == StrategyKind::CellLoop);
    CHECK(r.tuning_ms > 0);
    CHECK(agrees_with_brute_force(g, f, out) == "");
    CHECK(tuner.table().at(key).strategy == StrategyKind::CellLoop);
    // The new decision is used from then on, and appended to the file by name.
    const Report r2 = interact(g, f, out.data());
    CHECK(r2.strategy == StrategyKind::CellLoop);
    CHECK(r2.tuning_ms == 0);
    const auto lines = file.lines();
    REQUIRE(lines.size() == 2);
    CHECK(lines[1].find("\" cell-loop ") != std::string::npos);
    // Reloaded, the later line wins: no tuning.
    tuner.clear();
    tuner.set_cache_file(file.path);
    CHECK(tuner.table().at(key).strategy == StrategyKind::CellLoop);
    CHECK(interact(g, f, out.data()).tuning_ms == 0);
  }
  // Lines that name no strategy Auto could choose are skipped.
  TempFile bad;
  std::ofstream(bad.path) << std::quoted(key) << " auto 0 0 0 0 0\n"
                          << std::quoted(key) << " 99 0 0 0 0 0\n"
                          << std::quoted(key) << " cell-loop-quarter 0 0 0 0 0\n"
                          << std::quoted(key) << " cell-loop\n";
  tuner.clear();
  tuner.set_cache_file(bad.path);
  CHECK(tuner.table().empty());
}

TEST_CASE("Auto's first call makes about one call per candidate when calls are long", "[host][auto]") {
  ResetAutotuner reset;
  Autotuner& tuner = Autotuner::instance();
  const auto g = make_grid(6, 10);
  const long n = g.size();
  std::atomic<long> inits{0};
  PairsSym f;
  // Five times the length of a call that is its own sample (20 ms), so that the test holds
  // while other processes slow this one down or stop doing so.
  slow_down(g, f, StrategyKind::CellLoopHalf, 100);
  INFO("spin " << f.spin << ", " << n << " particles");
  f.inits = &inits;
  std::vector<Pairs::Accum> out(static_cast<std::size_t>(n));
  const auto t0 = std::chrono::steady_clock::now();
  const Report r = interact(g, f, out.data());
  const double wall = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  const long calls = inits.load() / n;
  INFO("first call: " << calls << " calls, " << wall << " ms, tuning_ms " << r.tuning_ms);
  CHECK(inits.load() % n == 0);
  CHECK(calls >= 1);
  CHECK(calls <= 3);  // 2 candidates, and at most one more run of the winner
  CHECK(r.tuning_ms > 0);
  const TuneEntry e = tuner.table().at(Autotuner::key(g, f));
  CHECK(e.candidates == 2);
  CHECK(static_cast<int>(e.timings.size()) + e.untimed == 2);
  REQUIRE_FALSE(e.timings.empty());
  CHECK(e.timings[0].strategy == StrategyKind::CellLoopHalf);  // Newton's third law first
  long counted = 0;
  for (const TunedCandidate& c : e.timings) {
    INFO(to_string(c.strategy) << ": " << c.ms << " ms, " << c.calls << " calls");
    CHECK(c.ms >= 20);
    CHECK(c.calls == 1);
    counted += c.calls;
  }
  CHECK((calls == counted || calls == counted + 1));
  CHECK(r.strategy == e.strategy);
  CHECK(agrees_with_brute_force(g, f, out) == "");
  // Later calls: one call each.
  inits = 0;
  CHECK(interact(g, f, out.data()).tuning_ms == 0);
  CHECK(inits.load() == n);
}

TEST_CASE("Auto with a time budget of 0 runs the first candidate once; a lone candidate runs once, untimed",
          "[host][auto]") {
  ResetAutotuner reset;
  Autotuner& tuner = Autotuner::instance();
  const auto g = make_grid(5, 8);
  const long n = g.size();
  std::atomic<long> inits{0};
  std::vector<Pairs::Accum> out(static_cast<std::size_t>(n));

  tuner.set_time_budget(0);
  PairsSym fs;
  fs.inits = &inits;
  const Report r = interact(g, fs, out.data());
  CHECK(inits.load() == n);
  CHECK(r.strategy == StrategyKind::CellLoopHalf);
  CHECK(agrees_with_brute_force(g, fs, out) == "");
  TuneEntry e = tuner.table().at(Autotuner::key(g, fs));
  CHECK(e.timings.empty());
  CHECK(e.candidates == 2);
  CHECK(e.untimed == 2);

  // Without symmetric() only the cell loop can run: nothing to time, whatever the budget.
  tuner.set_time_budget(-1);
  inits = 0;
  Pairs f;
  f.inits = &inits;
  const Report r1 = interact(g, f, out.data());
  CHECK(inits.load() == n);
  CHECK(r1.strategy == StrategyKind::CellLoop);
  CHECK(agrees_with_brute_force(g, f, out) == "");
  e = tuner.table().at(Autotuner::key(g, f));
  CHECK(e.timings.empty());
  CHECK(e.candidates == 1);
}

TEST_CASE("Auto says what it tunes when tuning takes long, and can be silenced", "[host][auto]") {
  ResetAutotuner reset;
  Autotuner& tuner = Autotuner::instance();
  const auto g = make_grid(4, 8);
  const PairsSym f{};
  std::vector<Pairs::Accum> out(static_cast<std::size_t>(g.size()));
  std::vector<std::string> lines;
  tuner.set_log([&](const std::string& l) { lines.push_back(l); });
  tuner.set_verbose(true, 0.0);  // every tuning counts as long
  interact(g, f, out.data());
  const std::string prefix = "cellint: Auto tuning " + Autotuner::key(g, f) + ": ";
  // Two candidates (a candidate timed again has a second line) and the choice.
  REQUIRE(lines.size() >= 3);
  for (const std::string& l : lines) CHECK(l.rfind(prefix, 0) == 0);
  CHECK(lines[0].find("cell-loop-half: ") != std::string::npos);
  CHECK(lines[0].find("(best so far)") != std::string::npos);
  CHECK(lines[1].find("cell-loop: ") != std::string::npos);
  CHECK(lines.back().find("chose cell-loop") != std::string::npos);
  // Tunings shorter than the threshold (1 s by default) say nothing.
  lines.clear();
  tuner.clear();
  tuner.set_verbose(true);
  interact(g, f, out.data());
  CHECK(lines.empty());
  // Silenced.
  tuner.clear();
  tuner.set_verbose(false, 0.0);
  interact(g, f, out.data());
  CHECK(lines.empty());
#if defined(__unix__) || defined(__APPLE__)
  tuner.clear();
  tuner.set_verbose(true, 0.0);
  ::setenv("CELLINT_AUTO_QUIET", "1", 1);
  interact(g, f, out.data());
  ::unsetenv("CELLINT_AUTO_QUIET");
  CHECK(lines.empty());
#endif
}
