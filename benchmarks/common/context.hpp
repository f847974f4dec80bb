#pragma once
/// @file
/// The context every benchmark JSON carries: card, driver, toolkit, compiler, date, commit and
/// the measured ceilings (from the JSON written by benchmarks/ceilings).

#include <array>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <fstream>
#include <sstream>
#include <string>

#include "cellint/version.hpp"
#include "json.hpp"

namespace cellint::bench {

/// What was measured on which machine and code.
struct Context {
  std::string backend;             ///< cuda, hip, emulated, host
  std::string card;                ///< device name
  std::string driver;              ///< driver version ("580.159" / CPU: kernel release)
  std::string cuda;                ///< CUDA runtime / driver API versions ("" off CUDA)
  std::string compiler;            ///< compiler that built the benchmark
  std::string date;                ///< UTC, ISO 8601
  std::string commit;              ///< CELLINT_COMMIT or git rev-parse
  std::string ceilings_file;       ///< where the ceilings came from ("" if none)
  double peak_fp32_tflops = NAN;   ///< measured FP32 FMA rate (2 flop per FMA)
  double bandwidth_tbs = NAN;      ///< measured device-memory bandwidth (read + write)
  int multiprocessors = 0;         ///< SMs / CUs / CPU threads
};

/// Output of a shell command, trailing newline removed ("" on failure).
inline std::string shell_output(const char* cmd) {
  std::string r;
  if (FILE* p = popen(cmd, "r")) {
    std::array<char, 256> b{};
    while (std::fgets(b.data(), static_cast<int>(b.size()), p)) r += b.data();
    if (pclose(p) != 0) r.clear();
  }
  while (!r.empty() && (r.back() == '\n' || r.back() == '\r' || r.back() == ' ')) r.pop_back();
  return r;
}

/// The commit: $CELLINT_COMMIT if set, else `git rev-parse` (+ "-dirty" with local changes
/// to tracked files), else "unknown".
inline std::string current_commit() {
  if (const char* c = std::getenv("CELLINT_COMMIT"); c && *c) return c;
  std::string h = shell_output("git rev-parse --short=12 HEAD 2>/dev/null");
  if (h.empty()) return "unknown";
  if (!shell_output("git status --porcelain --untracked-files=no 2>/dev/null | head -1").empty()) h += "-dirty";
  return h;
}

/// The current time in UTC, ISO 8601.
inline std::string utc_now() {
  std::time_t t = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char b[32];
  std::strftime(b, sizeof b, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return b;
}

/// The NVIDIA kernel-module version from /proc ("" when absent).
inline std::string nvidia_driver_version() {
  std::ifstream in("/proc/driver/nvidia/version");
  std::string line;
  if (!std::getline(in, line)) return {};
  // "NVRM version: NVIDIA UNIX x86_64 Kernel Module  580.159  Tue ..." -> "580.159"
  const std::string tag = "Kernel Module";
  std::size_t p = line.find(tag);
  if (p == std::string::npos) return line;
  // the version is the first token after the tag that starts with a digit ("... Open Kernel
  // Module for x86_64  580.159.04  Release Build ...")
  std::istringstream rest(line.substr(p + tag.size()));
  std::string tok;
  while (rest >> tok)
    if (!tok.empty() && tok[0] >= '0' && tok[0] <= '9') return tok;
  return line;
}

/// The CPU model name from /proc/cpuinfo ("host CPU" when absent).
inline std::string cpu_model_name() {
  std::ifstream in("/proc/cpuinfo");
  std::string line;
  while (std::getline(in, line))
    if (line.rfind("model name", 0) == 0) {
      std::size_t p = line.find(':');
      if (p != std::string::npos) return line.substr(line.find_first_not_of(' ', p + 1));
    }
  return "host CPU";
}

/// The compiler that built this translation unit.
inline std::string compiler_text() {
  std::string r;
#if defined(__CUDACC_VER_MAJOR__)
  r = "nvcc " + std::to_string(__CUDACC_VER_MAJOR__) + "." + std::to_string(__CUDACC_VER_MINOR__) + "." +
      std::to_string(__CUDACC_VER_BUILD__) + " + ";
#endif
#if defined(__clang__)
  r += std::string("clang ") + __clang_version__;
#elif defined(__GNUC__)
  r += "g++ " + std::to_string(__GNUC__) + "." + std::to_string(__GNUC_MINOR__) + "." + std::to_string(__GNUC_PATCHLEVEL__);
#endif
  return r;
}

/// Fills date, commit, compiler, and the ceilings from `ceilings_path` ("" to skip).
inline void fill_common_context(Context& c, const std::string& ceilings_path) {
  c.date = utc_now();
  c.commit = current_commit();
  c.compiler = compiler_text();
  if (!ceilings_path.empty()) {
    const std::string text = read_text_file(ceilings_path);
    if (text.empty()) {
      std::fprintf(stderr, "warning: cannot read ceilings file %s; fractions of peak are left empty\n",
                   ceilings_path.c_str());
    } else {
      c.ceilings_file = ceilings_path;
      c.peak_fp32_tflops = json_find_number(text, "peak_fp32_tflops");
      c.bandwidth_tbs = json_find_number(text, "bandwidth_tbs");
    }
  }
}

/// The context as JSON members of the top-level object.
inline void add_context(JsonObject& o, const Context& c) {
  o.str("backend", c.backend)
      .str("card", c.card)
      .str("driver", c.driver)
      .str("cuda", c.cuda)
      .str("compiler", c.compiler)
      .str("cellint_version", CELLINT_VERSION_STRING)
      .str("date", c.date)
      .str("commit", c.commit)
      .integer("multiprocessors", c.multiprocessors)
      .num("peak_fp32_tflops", c.peak_fp32_tflops)
      .num("bandwidth_tbs", c.bandwidth_tbs)
      .str("ceilings_file", c.ceilings_file);
}

}  // namespace cellint::bench
