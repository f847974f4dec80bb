#pragma once
/// @file
/// The benchmark axes, their defaults (the paper's section 7.1 campaign) and the command line.

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <stdexcept>
#include <string>
#include <vector>

namespace cellint::bench {

/// Defaults of every axis, in one place.
namespace defaults {
inline const std::vector<int> cells = {2, 4, 8, 16, 32};      ///< d: d^Dim cells (paper 7.1)
inline const std::vector<double> ppc = {1, 10, 100};           ///< mean particles per cell (paper 7.1)
inline constexpr int dim = 3;                                  ///< dimension
inline constexpr const char* precision = "float";              ///< the paper computes in float
inline constexpr const char* functor = "paper";                ///< LennardJonesPaper
inline constexpr int reps = 200;                               ///< asynchronous calls timed together (paper 7.1)
inline constexpr int batches = 5;                              ///< the reps split into batches for a median
inline constexpr int warmup = 3;                               ///< untimed calls before timing
inline constexpr double max_ms = 1500;                         ///< cap on timed milliseconds per case (reps shrink)
inline constexpr int binning_reps = 5;                         ///< timed builds (median)
inline constexpr double scaling_ppc = 10;                      ///< --scaling: particles per cell
inline constexpr double scaling_min = 1e3;                     ///< --scaling: smallest N
inline constexpr double scaling_max = 1e8;                     ///< --scaling: largest N (or the memory limit)
inline constexpr int scaling_per_decade = 2;                   ///< --scaling: N = 1, 3.16, 10, ... x 10^k
inline constexpr double check_max_n = 4e6;                     ///< compare with the baseline up to this N
inline constexpr std::uint64_t seed = 20240607;                ///< position seed
}  // namespace defaults

/// Parsed command line.
struct Options {
  std::string backend;                               ///< host build only: host | emulated
  std::vector<std::string> strategies = {"all"};     ///< names, "all", "auto"
  std::vector<int> cells = defaults::cells;
  std::vector<double> ppc = defaults::ppc;
  std::vector<int> dims = {defaults::dim};
  std::vector<std::string> precisions = {defaults::precision};
  std::vector<std::string> functors = {defaults::functor};
  int reps = defaults::reps;
  int batches = defaults::batches;
  int warmup = defaults::warmup;
  double max_ms = defaults::max_ms;
  int binning_reps = defaults::binning_reps;
  bool binning_stable = false;  ///< also time GridOptions::stable builds
  bool stats = false;           ///< also time one call with Tuning::statistics and record its CallStats
  bool reproducible = false;    ///< also time Auto with Tuning::reproducible on a stable grid
  bool scaling = false;
  double scaling_min = defaults::scaling_min;
  double scaling_max = defaults::scaling_max;
  int scaling_per_decade = defaults::scaling_per_decade;
  double check_max_n = defaults::check_max_n;
  std::uint64_t seed = defaults::seed;
  std::string json;      ///< output file ("" = none)
  std::string ceilings;  ///< ceilings JSON to read peaks from
  std::string label;     ///< free tag stored in the JSON ("paper", "cost", ...)
  bool table = true;     ///< print the final table
  std::string command;   ///< the command line, for the JSON
};

/// The usage text.
inline const char* usage_text() {
  return R"(usage: interaction_bench [options]
  --strategy LIST     strategy names (par-part-noloop, par-part-loop, par-cell, par-cell-sm,
                      all-in-sm, x-pencil, x-pencil-reg, x-pencil-tile, cell-loop, cell-loop-half), 'all'
                      (every cell strategy of the backend; all-pairs only by name) and/or 'auto'; comma
                      separated [all]
  --cells LIST        cells per side d (d^dim cells, width = cutoff = 1) [2,4,8,16,32]
  --ppc LIST          mean particles per cell [1,10,100]
  --dim LIST          2 and/or 3 [3]
  --precision LIST    float | double | mixed (float positions, double sums) [float]
  --functor LIST      paper (LJ energy, no cutoff test, 21 flop) | lj (LJ force+energy+virial
                      with cutoff test) | cheap (5 flop) | lj150 (paper + 150 flop) |
                      paper-fast, lj-fast (the same with FastMath: approximate reciprocal) [paper]
  --reps N            calls timed back to back with one event pair [200]
  --batches B         the reps split into B event-timed batches for a median [5]
  --warmup N          untimed calls first [3]
  --max-ms MS         cap on timed milliseconds per case: reps shrink to fit [1500]
  --binning-reps N    timed builds for the binning median [5]
  --binning-stable    also time the stable binning (radix sort by cell) -> binning_stable_ms
  --stats             also make one call with Tuning::statistics -> stats_* (pairs examined and within the
                      cutoff, minimum bytes, the call's time with the counting pass after it)
  --reproducible      with auto: also time Auto with Tuning::reproducible on a stable grid -> reproducible_*
  --scaling           sweep N from --scaling-min to --scaling-max at --ppc (first value, 10
                      unless given) particles per cell; d chosen per N; stops at out-of-memory
  --scaling-min N / --scaling-max N / --scaling-per-decade K   [1e3 / 1e8 / 2]
  --check-max-n N     compare outputs with the baseline strategy up to N particles [4e6]
  --seed S            position seed
  --json FILE         write results as JSON (rewritten after every configuration)
  --ceilings FILE     JSON from the ceilings benchmark (peak_fp32_tflops, bandwidth_tbs)
  --label TEXT        tag stored in the JSON
  --backend NAME      host build only: emulated | host [emulated]
  --no-table          skip the final table on stdout
)";
}

/// Splits "a,b,c".
inline std::vector<std::string> split_list(const std::string& s) {
  std::vector<std::string> r;
  std::size_t p = 0;
  while (p <= s.size()) {
    const std::size_t q = s.find(',', p);
    const std::string item = s.substr(p, q == std::string::npos ? std::string::npos : q - p);
    if (!item.empty()) r.push_back(item);
    if (q == std::string::npos) break;
    p = q + 1;
  }
  return r;
}

/// A number ("1e6" accepted); throws std::invalid_argument naming the option.
inline double parse_number(const std::string& opt, const std::string& s) {
  char* end = nullptr;
  const double v = std::strtod(s.c_str(), &end);
  if (s.empty() || *end != '\0' || !std::isfinite(v))
    throw std::invalid_argument(opt + ": '" + s + "' is not a number");
  return v;
}

/// A positive integer.
inline int parse_positive(const std::string& opt, const std::string& s) {
  const double v = parse_number(opt, s);
  if (v < 1 || v != std::floor(v) || v > 2e9) throw std::invalid_argument(opt + ": '" + s + "' must be a positive integer");
  return static_cast<int>(v);
}

/// Parses argv; throws std::invalid_argument with a readable message.
inline Options parse_options(int argc, char** argv) {
  Options o;
  bool ppc_given = false;
  for (int i = 0; i < argc; ++i) o.command += (i ? " " : "") + std::string(argv[i]);
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i], val;
    const std::size_t eq = a.find('=');
    bool has_inline = false;
    if (a.rfind("--", 0) == 0 && eq != std::string::npos) {
      val = a.substr(eq + 1);
      a = a.substr(0, eq);
      has_inline = true;
    }
    auto next = [&]() -> std::string {
      if (has_inline) return val;
      if (i + 1 >= argc) throw std::invalid_argument(a + " needs a value");
      return argv[++i];
    };
    if (a == "--help" || a == "-h") {
      std::fputs(usage_text(), stdout);
      std::exit(0);
    } else if (a == "--strategy" || a == "--strategies") {
      o.strategies = split_list(next());
    } else if (a == "--cells") {
      o.cells.clear();
      for (auto& s : split_list(next())) o.cells.push_back(parse_positive(a, s));
    } else if (a == "--ppc") {
      o.ppc.clear();
      for (auto& s : split_list(next())) {
        const double v = parse_number(a, s);
        if (v <= 0) throw std::invalid_argument("--ppc: values must be > 0");
        o.ppc.push_back(v);
      }
      ppc_given = true;
    } else if (a == "--dim") {
      o.dims.clear();
      for (auto& s : split_list(next())) {
        const int d = parse_positive(a, s);
        if (d != 2 && d != 3) throw std::invalid_argument("--dim: 2 or 3");
        o.dims.push_back(d);
      }
    } else if (a == "--precision") {
      o.precisions = split_list(next());
      for (auto& p : o.precisions)
        if (p != "float" && p != "double" && p != "mixed")
          throw std::invalid_argument("--precision: float, double or mixed, not '" + p + "'");
    } else if (a == "--functor" || a == "--functors") {
      o.functors = split_list(next());
      for (auto& f : o.functors)
        if (f != "paper" && f != "lj" && f != "cheap" && f != "lj150" && f != "paper-fast" && f != "lj-fast")
          throw std::invalid_argument("--functor: paper, paper-fast, lj, lj-fast, cheap or lj150, not '" + f + "'");
    } else if (a == "--reps") {
      o.reps = parse_positive(a, next());
    } else if (a == "--batches") {
      o.batches = parse_positive(a, next());
    } else if (a == "--warmup") {
      o.warmup = static_cast<int>(parse_number(a, next()));
      if (o.warmup < 0) throw std::invalid_argument("--warmup: must be >= 0");
    } else if (a == "--max-ms") {
      o.max_ms = parse_number(a, next());
    } else if (a == "--binning-stable") {
      o.binning_stable = true;
    } else if (a == "--stats") {
      o.stats = true;
    } else if (a == "--reproducible") {
      o.reproducible = true;
    } else if (a == "--binning-reps") {
      o.binning_reps = parse_positive(a, next());
    } else if (a == "--scaling") {
      o.scaling = true;
    } else if (a == "--scaling-min") {
      o.scaling_min = parse_number(a, next());
    } else if (a == "--scaling-max") {
      o.scaling_max = parse_number(a, next());
    } else if (a == "--scaling-per-decade") {
      o.scaling_per_decade = parse_positive(a, next());
    } else if (a == "--check-max-n") {
      o.check_max_n = parse_number(a, next());
    } else if (a == "--seed") {
      o.seed = static_cast<std::uint64_t>(parse_number(a, next()));
    } else if (a == "--json") {
      o.json = next();
    } else if (a == "--ceilings") {
      o.ceilings = next();
    } else if (a == "--label") {
      o.label = next();
    } else if (a == "--backend") {
      o.backend = next();
    } else if (a == "--no-table") {
      o.table = false;
    } else {
      throw std::invalid_argument("unknown option '" + a + "' (see --help)");
    }
  }
  if (o.scaling && !ppc_given) o.ppc = {defaults::scaling_ppc};
  if (o.batches > o.reps) o.batches = o.reps;
  if (o.strategies.empty()) throw std::invalid_argument("--strategy: empty list");
  if (o.scaling && o.scaling_max < o.scaling_min) throw std::invalid_argument("--scaling-max < --scaling-min");
  return o;
}

}  // namespace cellint::bench
