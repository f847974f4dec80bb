#pragma once
// Execution contexts for the Emulated backend's cooperative fibers: create a context on a stack, switch from one
// context to another on the same OS thread.
//
// Two implementations with one interface (Context, context_prepare, context_start, context_switch,
// context_unusable_reason):
//  * x86-64 System V, g++/clang only: a switch of a few instructions that saves the callee-saved registers, MXCSR and
//    the x87 control word on the old stack and swaps stack pointers (no system call; 15-30 ns per fiber and barrier
//    measured, cache misses included);
//  * everywhere else, with CELLINT_EMULATED_UCONTEXT defined, under nvcc/hipcc and under ASan/TSan: glibc
//    makecontext/swapcontext (about 0.25-0.3 us per switch: swapcontext makes one sigprocmask system call).
// The implementations live in different inline namespaces, so the scheduler state of translation units that pick
// different ones stays apart in one program.

#include <cstddef>
#include <cstdint>
#include <cstdlib>

#include "cellint/core/macros.hpp"

#if !defined(CELLINT_EMULATED_UCONTEXT)
#  if !defined(__x86_64__) || !(defined(__GNUC__) || defined(__clang__)) || defined(_WIN32) || \
      defined(__CUDACC__) || defined(__HIPCC__) || defined(__HIP__) || defined(__NVCOMPILER) ||  \
      defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#    define CELLINT_EMULATED_UCONTEXT 1
#  elif defined(__has_feature)
#    if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer)
#      define CELLINT_EMULATED_UCONTEXT 1
#    endif
#  endif
#endif

#if defined(CELLINT_EMULATED_UCONTEXT)
#  include <ucontext.h>
#  define CELLINT_DETAIL_EMU_ABI ucontext_v1
#else
#  include <sys/syscall.h>
#  include <unistd.h>
#  define CELLINT_DETAIL_EMU_ABI x86_64_v1
#endif

namespace cellint::detail::emulated {
inline namespace CELLINT_DETAIL_EMU_ABI {

/// Entry point of a fiber: called once with the argument given to context_start; must never return.
using FiberEntry = void (*)(void*);

#if defined(CELLINT_EMULATED_UCONTEXT)

/// Saved state of a suspended fiber (or of the scheduler). Address-stable: never copy or move one that was prepared
/// (glibc keeps a pointer into the object itself).
struct Context {
  ucontext_t uc;
  bool prepared = false;
};

/// Once per context object: the system call that fills a ucontext.
inline void context_prepare(Context& c) {
  if (!c.prepared) {
    if (getcontext(&c.uc) != 0) std::abort();
    c.prepared = true;
  }
}

/// makecontext passes only `int` arguments: a pointer travels as two 32-bit halves.
inline void ucontext_trampoline(int fn_hi, int fn_lo, int arg_hi, int arg_lo) {
  const auto join = [](int hi, int lo) {
    return (static_cast<std::uintptr_t>(static_cast<std::uint32_t>(hi)) << 16 << 16) |
           static_cast<std::uintptr_t>(static_cast<std::uint32_t>(lo));
  };
  const auto fn = reinterpret_cast<FiberEntry>(join(fn_hi, fn_lo));
  fn(reinterpret_cast<void*>(join(arg_hi, arg_lo)));
  std::abort();  // a fiber entry never returns
}

/// Makes `c` start `fn(arg)` on the stack [lo, lo + bytes) at the next switch to it.
inline void context_start(Context& c, void* lo, std::size_t bytes, FiberEntry fn, void* arg) {
  context_prepare(c);
  c.uc.uc_stack.ss_sp = lo;
  c.uc.uc_stack.ss_size = bytes;
  c.uc.uc_stack.ss_flags = 0;
  c.uc.uc_link = nullptr;
  const auto f = reinterpret_cast<std::uintptr_t>(fn);
  const auto a = reinterpret_cast<std::uintptr_t>(arg);
  const auto hi = [](std::uintptr_t v) { return static_cast<int>(static_cast<std::uint32_t>(v >> 16 >> 16)); };
  const auto low = [](std::uintptr_t v) { return static_cast<int>(static_cast<std::uint32_t>(v)); };
  makecontext(&c.uc, reinterpret_cast<void (*)()>(&ucontext_trampoline), 4, hi(f), low(f), hi(a), low(a));
}

/// Saves the running context into `from` and resumes `to`.
inline void context_switch(Context& from, Context& to) {
  if (swapcontext(&from.uc, &to.uc) != 0) std::abort();
}

/// Whether this implementation can run in this process (always).
inline const char* context_unusable_reason() { return nullptr; }

#else  // x86-64 System V

/// Saved state of a suspended fiber (or of the scheduler): its stack pointer; everything else sits on its stack.
struct Context {
  void* sp = nullptr;
};

inline void context_prepare(Context&) {}

/// Saves rbp, rbx, r12-r15, MXCSR and the x87 control word on the current stack, stores the stack pointer into *save,
/// loads `load` as the stack pointer and restores the same set.
__attribute__((naked, noinline)) inline void x86_64_switch(void** /*save*/, void* /*load*/) {
  __asm__ volatile(
      "pushq %rbp\n\t"
      "pushq %rbx\n\t"
      "pushq %r12\n\t"
      "pushq %r13\n\t"
      "pushq %r14\n\t"
      "pushq %r15\n\t"
      "subq $8, %rsp\n\t"
      "stmxcsr (%rsp)\n\t"
      "fnstcw 4(%rsp)\n\t"
      "movq %rsp, (%rdi)\n\t"
      "movq %rsi, %rsp\n\t"
      "ldmxcsr (%rsp)\n\t"
      "fldcw 4(%rsp)\n\t"
      "addq $8, %rsp\n\t"
      "popq %r15\n\t"
      "popq %r14\n\t"
      "popq %r13\n\t"
      "popq %r12\n\t"
      "popq %rbx\n\t"
      "popq %rbp\n\t"
      "retq\n\t");
}

/// First code a new fiber runs (reached by the `ret` of x86_64_switch): calls r13(r12) on an aligned stack. Marked as
/// the outermost frame for unwinders and debuggers.
__attribute__((naked, noinline)) inline void x86_64_fiber_start() {
  __asm__ volatile(
      ".cfi_undefined rip\n\t"
      "movq %r12, %rdi\n\t"
      "callq *%r13\n\t"
      "ud2\n\t");
}

/// Makes `c` start `fn(arg)` on the stack [lo, lo + bytes) at the next switch to it: builds the frame that
/// x86_64_switch pops (control words, six registers, return address).
inline void context_start(Context& c, void* lo, std::size_t bytes, FiberEntry fn, void* arg) {
  std::uintptr_t top = (reinterpret_cast<std::uintptr_t>(lo) + bytes) & ~std::uintptr_t(15);
  auto* frame = reinterpret_cast<std::uint64_t*>(top - 64);  // after the pops and ret, rsp = top
  std::uint32_t mxcsr;
  std::uint16_t fpucw;
  __asm__ volatile("stmxcsr %0" : "=m"(mxcsr));
  __asm__ volatile("fnstcw %0" : "=m"(fpucw));
  frame[0] = static_cast<std::uint64_t>(mxcsr) | (static_cast<std::uint64_t>(fpucw) << 32);
  frame[1] = 0;                                       // r15
  frame[2] = 0;                                       // r14
  frame[3] = reinterpret_cast<std::uintptr_t>(fn);    // r13
  frame[4] = reinterpret_cast<std::uintptr_t>(arg);   // r12
  frame[5] = 0;                                       // rbx
  frame[6] = 0;                                       // rbp
  frame[7] = reinterpret_cast<std::uintptr_t>(&x86_64_fiber_start);  // return address
  c.sp = frame;
}

/// Saves the running context into `from` and resumes `to`.
CELLINT_INLINE void context_switch(Context& from, Context& to) { x86_64_switch(&from.sp, to.sp); }

/// Null when this implementation can run in this process; otherwise why not. It cannot when x86 user-space shadow
/// stacks are active (Linux 6.6+ with glibc's opt-in tunable), since it returns into a context without the matching
/// shadow-stack entry.
inline const char* context_unusable_reason() {
#if defined(__linux__) && defined(SYS_arch_prctl)
  static const bool shadow_stack = [] {
    unsigned long features = 0;
    return syscall(SYS_arch_prctl, 0x5005 /* ARCH_SHSTK_STATUS */, &features) == 0 && (features & 1ul) != 0;
  }();
  if (shadow_stack)
    return "x86 shadow stacks are active in this process and the Emulated backend's fast context "
           "switch does not maintain them; compile with -DCELLINT_EMULATED_UCONTEXT (glibc "
           "makecontext/swapcontext) or run without the glibc.cpu.x86_shstk tunable";
#endif
  return nullptr;
}

#endif

}  // inline namespace CELLINT_DETAIL_EMU_ABI
}  // namespace cellint::detail::emulated
