// Cooperative fibers on one OS thread: the scheduler under every kernel-on-host runner (CUDA device code compiled as
// host C++ for the CPU tests; cuda_on_host.h for vocab / optimizers, attention's and positional's runners). Each
// emulated GPU thread is a fiber; a barrier is an arrival and yields until its last participant arrives. Why fibers
// and not one OS thread an emulated thread (what cuda_on_host.h did until session 25): a cluster of 16 CTAs of 1024
// threads was 16384 OS threads meeting at futex barriers, and the sampler's runner spent 414 s of system time for
// 144 s of user time on a 2-core machine (session 24). Here a barrier costs a few _setjmp / _longjmp a thread.
//
// Switches: a fiber's first entry goes through ucontext (makecontext sets up its stack); every later switch is
// _setjmp / _longjmp, which unlike swapcontext makes no sigprocmask system call. Build the runner with
// -U_FORTIFY_SOURCE: the fortified longjmp rejects a jump to another stack.
//
// The scheduler runs the fibers in passes, ascending on even passes and descending on odd ones, so a kernel that reads
// another thread's shared-memory write without a barrier between them sees the write missing in one of the two orders
// (one fixed order would hide every such race in one direction). A pass in which no fiber arrives at a barrier or
// returns means none ever will: the runner aborts with a message instead of hanging (a barrier some threads of the
// block never reach, as a GPU would hang or fault).
//
// Stacks: kStackBytes each, one mapping reused by every run, with a PROT_NONE guard page below each, so an overflow
// faults at once instead of writing into the neighbouring fiber's stack. MLOPS_FIBERS_STACK_REPORT=1 in the environment
// fills new stacks with a pattern and prints to stderr the deepest use so far after each run that deepened it.
// Test-only, like the rest of mlops/common/testing/ (cmake/mlops.cmake leaves it out of the installed headers).
// Header-only: `inline` state, one scheduler a process (a runner's fork workers each have their own).
#pragma once
#include <setjmp.h>
#include <sys/mman.h>
#include <ucontext.h>
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

namespace mlops::testing::fibers {

// 64 KB a fiber: every runner's deepest stack was below 4.4 KB at -O1 (MLOPS_FIBERS_STACK_REPORT, session 25: vocab,
// optimizers, positional and attention), so there is room for a -O0 build or a deeper kernel.
inline constexpr size_t kStackBytes = 64 * 1024;

struct Fiber {
  ucontext_t ctx;  // the first entry only
  jmp_buf jb;      // where the fiber yielded
  bool started = false;
  bool done = false;
};

struct State {
  std::vector<Fiber> fibers;
  int current = -1;   // the running fiber, -1 in the scheduler
  jmp_buf scheduler;  // where a yielding fiber returns to
  uint64_t progress = 0;  // arrivals and returns: a pass that adds none is a deadlock
  void (*invoke)(const void*, int) = nullptr;
  const void* body = nullptr;
  char* stacks = nullptr;
  size_t stack_count = 0;
  bool report = std::getenv("MLOPS_FIBERS_STACK_REPORT") != nullptr;
  size_t deepest = 0;  // the report's: bytes of the deepest stack so far
};
inline State g_state;

inline int current() { return g_state.current; }

// The running fiber gives the OS thread back to the scheduler; it resumes at the next pass.
inline void yield() {
  Fiber& f = g_state.fibers[size_t(g_state.current)];
  if (!_setjmp(f.jb)) _longjmp(g_state.scheduler, 1);
}

// A barrier of `count` fibers, reusable (generations). arrive() returns the generation to wait for, so a fiber can
// arrive, run on and wait later (barrier.cluster.arrive / .wait); arrive_and_wait() is __syncthreads' meaning.
struct Barrier {
  unsigned count = 0, arrived = 0, gen = 0;
  Barrier() = default;
  explicit Barrier(unsigned n) : count(n) {}
  unsigned arrive() {
    const unsigned g = gen;
    ++g_state.progress;
    if (++arrived == count) {
      arrived = 0;
      ++gen;
    }
    return g;
  }
  void wait(unsigned g) const {
    while (gen == g) yield();
  }
  void arrive_and_wait() { wait(arrive()); }
};

namespace detail {
inline void entry() {
  State& s = g_state;
  s.invoke(s.body, s.current);
  s.fibers[size_t(s.current)].done = true;
  ++s.progress;
  _longjmp(s.scheduler, 1);
}

inline char* stacks_for(size_t n) {
  State& s = g_state;
  if (n <= s.stack_count) return s.stacks;
  if (s.stacks) munmap(s.stacks, s.stack_count * kStackBytes);
  const size_t bytes = n * kStackBytes;
  void* m = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (m == MAP_FAILED) {
    std::fprintf(stderr, "fibers: cannot map %zu stacks of %zu bytes\n", n, kStackBytes);
    std::abort();
  }
  const size_t page = size_t(sysconf(_SC_PAGESIZE));
  for (size_t i = 0; i < n; ++i) mprotect(static_cast<char*>(m) + i * kStackBytes, page, PROT_NONE);
  if (s.report)
    for (size_t i = 0; i < n; ++i)
      std::memset(static_cast<char*>(m) + i * kStackBytes + page, 0x5a, kStackBytes - page);
  s.stacks = static_cast<char*>(m);
  s.stack_count = n;
  return s.stacks;
}
// The bytes of a stack (growing down from lo + size) that are no longer the report's 0x5a fill: 8 bytes a step from
// the low end while the words are untouched (the stacks are page-aligned), then byte by byte.
inline size_t stack_used(const char* lo, size_t size) {
  size_t untouched = 0;
  for (uint64_t word; untouched + 8 <= size; untouched += 8) {
    std::memcpy(&word, lo + untouched, 8);
    if (word != 0x5a5a5a5a5a5a5a5aull) break;
  }
  while (untouched < size && lo[untouched] == 0x5a) ++untouched;
  return size - untouched;
}
}  // namespace detail

// Runs body(i) for i in [0, n) as n fibers until every one returns. resume(i) runs in the scheduler before fiber i
// starts or resumes: it restores what the runner keeps a fiber (its threadIdx, blockIdx, cluster rank), since the
// fibers share one OS thread and so its thread_local variables.
template <class Body, class Resume>
void run(int n, const Body& body, const Resume& resume) {
  State& s = g_state;
  if (s.current >= 0) {
    std::fprintf(stderr, "fibers: run() called from a fiber\n");
    std::abort();
  }
  char* const stacks = detail::stacks_for(size_t(n));
  s.fibers.assign(size_t(n), Fiber{});
  s.body = &body;
  s.invoke = [](const void* b, int i) { (*static_cast<const Body*>(b))(i); };
  for (int i = 0; i < n; ++i) {
    Fiber& f = s.fibers[size_t(i)];
    getcontext(&f.ctx);
    f.ctx.uc_stack.ss_sp = stacks + size_t(i) * kStackBytes;
    f.ctx.uc_stack.ss_size = kStackBytes;
    f.ctx.uc_link = nullptr;
    makecontext(&f.ctx, detail::entry, 0);
  }
  int left = n;
  for (long pass = 0; left > 0; ++pass) {
    const uint64_t before = s.progress;
    for (int k = 0; k < n; ++k) {
      const int i = pass % 2 == 0 ? k : n - 1 - k;
      Fiber& f = s.fibers[size_t(i)];
      if (f.done) continue;
      resume(i);
      s.current = i;
      if (!_setjmp(s.scheduler)) {
        if (!f.started) {
          f.started = true;
          setcontext(&f.ctx);
        }
        _longjmp(f.jb, 1);
      }
      s.current = -1;
      if (f.done) --left;
    }
    if (left > 0 && s.progress == before) {
      std::printf("fibers: %d of %d threads wait at a barrier the others never reach (deadlock)\n", left, n);
      std::fflush(stdout);
      std::abort();
    }
  }
  if (s.report) {
    const size_t page = size_t(sysconf(_SC_PAGESIZE));
    for (int i = 0; i < n; ++i) {
      const size_t used = detail::stack_used(stacks + size_t(i) * kStackBytes + page, kStackBytes - page);
      if (used > s.deepest) {
        s.deepest = used;
        std::fprintf(stderr, "fibers: deepest stack %zu of %zu bytes\n", used, kStackBytes - page);
      }
    }
  }
}

}  // namespace mlops::testing::fibers
