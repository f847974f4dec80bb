// The interaction benchmark on the CPU backends: Emulated (the GPU strategy kernels run block
// by block on the CPU) or Host (the CPU cell loops). For smoke tests and CI, not for timings
// that mean anything about a GPU. See interaction_bench.hpp for what is measured.
//
//   interaction_bench --backend emulated --cells 2,4 --ppc 2 --strategy par-part-noloop,x-pencil --reps 2

#include <cstring>
#include <string>
#include <sys/utsname.h>

#include "cellint/backend/emulated.hpp"
#include "cellint/backend/host.hpp"
#include "interaction/interaction_bench.hpp"

CELLINT_BENCH_FAMILIES(CELLINT_BENCH_EXTERN, cellint::Emulated)
CELLINT_BENCH_FAMILIES(CELLINT_BENCH_EXTERN, cellint::Host)

namespace {

// The value of --backend (either "--backend X" or "--backend=X"); "emulated" by default.
std::string backend_arg(int argc, char** argv) {
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--backend") == 0 && i + 1 < argc) return argv[i + 1];
    if (std::strncmp(argv[i], "--backend=", 10) == 0) return argv[i] + 10;
  }
  return "emulated";
}

template <class B>
cellint::bench::Context cpu_context() {
  cellint::bench::Context c;
  c.backend = B::name();
  c.card = cellint::bench::cpu_model_name();
  if (std::string(B::name()) == "emulated") c.card += " (emulated GPU: H100-like limits)";
  utsname u{};
  if (uname(&u) == 0) c.driver = std::string(u.sysname) + " " + u.release;
  c.multiprocessors = cellint::Host::properties().multiprocessors;
  return c;
}

}  // namespace

int main(int argc, char** argv) {
  const std::string b = backend_arg(argc, argv);
  if (b == "emulated") {
    // Correctness aids of the emulator (shuffled thread order, poisoned shared memory) cost
    // time and are what the tests are for; the benchmark runs the plain schedule.
    cellint::Emulated::options().shuffle = false;
    cellint::Emulated::options().poison_shared = false;
    return cellint::bench::bench_main<cellint::Emulated>(argc, argv, cpu_context<cellint::Emulated>());
  }
  if (b == "host") return cellint::bench::bench_main<cellint::Host>(argc, argv, cpu_context<cellint::Host>());
  std::fprintf(stderr, "interaction_bench: --backend must be emulated or host, not '%s'\n", b.c_str());
  return 2;
}
