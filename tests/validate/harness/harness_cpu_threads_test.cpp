// OpenMP threads from the cores other processes leave free (validate/harness/cpu_threads.hpp): within [1, cores]
// on its own, the user's OMP_NUM_THREADS left alone, and one thread fewer beside a process that keeps a core busy.
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <omp.h>

#include <chrono>
#include <cstdlib>
#include <thread>

#include <gtest/gtest.h>

#include "validate/harness/cpu_threads.hpp"

namespace {

TEST(HarnessCpuThreads, ChoosesBetweenOneThreadAndEveryCore) {
  unsetenv("OMP_NUM_THREADS");
  const int t = gemmar::fit_threads_to_free_cores();
  EXPECT_GE(t, 1);
  EXPECT_LE(t, omp_get_num_procs());
  EXPECT_EQ(omp_get_max_threads(), t);
}

TEST(HarnessCpuThreads, LeavesTheUsersChoiceAlone) {
  setenv("OMP_NUM_THREADS", "1", 1);
  EXPECT_EQ(gemmar::fit_threads_to_free_cores(), 0);
  unsetenv("OMP_NUM_THREADS");
}

// Beside a busy child, the threads never exceed the cores it leaves (others' load may lower them further).
TEST(HarnessCpuThreads, LeavesABusyProcessItsCore) {
  unsetenv("OMP_NUM_THREADS");
  const pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    volatile unsigned long spin = 0;
    for (;;) spin = spin + 1;
  }
  gemmar::fit_threads_to_free_cores();  // starts a window that sees the child
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  const int t = gemmar::fit_threads_to_free_cores();
  kill(child, SIGKILL);
  waitpid(child, nullptr, 0);
  EXPECT_LE(t, std::max(1, omp_get_num_procs() - 1));
}

}  // namespace
