// Checks of mlops/common/testing/fibers.h, the scheduler under every kernel-on-host runner (tests/test_common_fibers.py
// builds and runs it). No argument: the barrier's meaning, the split arrive / wait, the alternating pass order (a read
// of another fiber's write without a barrier between them sees the old value in one direction or the other), a second
// run reusing the stacks; prints "N passed, M failed". "deadlock": one fiber skips a barrier the others wait at (the
// scheduler must abort with its message, not hang). "overflow": a fiber runs past its stack (the guard page must fault).
#include <cstdio>
#include <cstring>
#include <vector>

#include "mlops/common/testing/fibers.h"

namespace fibers = mlops::testing::fibers;

static int g_passed = 0, g_failed = 0;
static void check(bool ok, const char* what) {
  ++(ok ? g_passed : g_failed);
  if (!ok) std::printf("FAILED: %s\n", what);
}

// Each fiber writes its slot, meets the others, reads its neighbour's: every read sees the round's write.
static void barrier_rounds(int n, int rounds) {
  std::vector<int> slot(size_t(n), -1);
  std::vector<int> bad(size_t(n), 0);
  fibers::Barrier bar{unsigned(n)};
  fibers::run(
      n,
      [&](int i) {
        for (int r = 0; r < rounds; ++r) {
          slot[size_t(i)] = r * n + i;
          bar.arrive_and_wait();
          const int j = (i + 1 + r) % n;
          if (slot[size_t(j)] != r * n + j) ++bad[size_t(i)];
          bar.arrive_and_wait();  // nobody writes the next round before every read of this one
        }
      },
      [](int) {});
  int total = 0;
  for (int b : bad) total += b;
  char what[96];
  std::snprintf(what, sizeof what, "barrier rounds: %d fibers, %d rounds", n, rounds);
  check(total == 0, what);
}

// arrive(), work, wait(): a fiber may run on between its arrival and its wait, and wait() returns only once the
// generation it arrived at is complete.
static void split_arrive_wait(int n) {
  fibers::Barrier bar{unsigned(n)};
  int arrived = 0, ran_on = 0, early = 0;
  fibers::run(
      n,
      [&](int) {
        ++arrived;
        const unsigned g = bar.arrive();
        fibers::yield();  // run on; others arrive meanwhile
        ++ran_on;
        bar.wait(g);
        if (arrived != n) ++early;
      },
      [](int) {});
  check(early == 0, "split arrive / wait: wait returned before every fiber arrived");
  check(ran_on == n, "split arrive / wait: every fiber ran on and finished");
}

// Pass 0 runs ascending (up to the first barrier), pass 1 descending: a read of fiber i + 1's write before the barrier
// sees the old value, and after it a read of fiber i - 1's write does, so a missing barrier shows in both directions.
static void pass_order_exposes_races(int n) {
  std::vector<int> a(size_t(n), 0), b(size_t(n), 0);
  int stale_up = 0, stale_down = 0;
  fibers::Barrier bar{unsigned(n)};
  fibers::run(
      n,
      [&](int i) {
        a[size_t(i)] = 1;
        if (i + 1 < n && a[size_t(i + 1)] == 0) ++stale_up;  // no barrier between: a race
        bar.arrive_and_wait();
        b[size_t(i)] = 1;
        if (i > 0 && b[size_t(i - 1)] == 0) ++stale_down;  // no barrier between: a race
      },
      [](int) {});
  check(stale_up == n - 1, "pass order: ascending before the first barrier");
  check(stale_down == n - 1, "pass order: descending after it");
}

// resume(i) runs before fiber i starts or resumes: what a runner restores (its threadIdx).
static void resume_hook(int n) {
  int current = -1, wrong = 0;
  fibers::Barrier bar{unsigned(n)};
  fibers::run(
      n,
      [&](int i) {
        for (int r = 0; r < 3; ++r) {
          if (current != i || fibers::current() != i) ++wrong;
          bar.arrive_and_wait();
        }
      },
      [&](int i) { current = i; });
  check(wrong == 0, "resume hook: set for the fiber that runs");
}

int main(int argc, char** argv) {
  if (argc > 1 && std::strcmp(argv[1], "deadlock") == 0) {
    fibers::Barrier bar(64);
    fibers::run(
        64,
        [&](int i) {
          if (i != 17) bar.arrive_and_wait();  // fiber 17 never arrives
        },
        [](int) {});
    std::printf("deadlock not detected\n");
    return 0;
  }
  if (argc > 1 && std::strcmp(argv[1], "overflow") == 0) {
    fibers::run(
        4,
        [](int) {
          // ~4 KB a frame, well past the fiber's stack: the guard page below it faults
          struct Deep {
            static int go(int d) {
              volatile char pad[4096];
              pad[0] = char(d);
              return d > 0 ? go(d - 1) + pad[0] : pad[0];
            }
          };
          std::printf("%d\n", Deep::go(int(2 * fibers::kStackBytes / 4096)));
        },
        [](int) {});
    std::printf("overflow not detected\n");
    return 0;
  }
  for (int n : {1, 32, 256, 1024, 16384}) barrier_rounds(n, 3);
  barrier_rounds(4096, 1);  // a smaller run after the largest: the stacks are reused
  split_arrive_wait(96);
  pass_order_exposes_races(64);
  resume_hook(256);
  std::printf("%d passed, %d failed\n", g_passed, g_failed);
  return g_failed != 0;
}
