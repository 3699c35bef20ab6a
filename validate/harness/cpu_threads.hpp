// OpenMP threads from the cores other processes leave free, so that gemmar is never slower under load than it
// would be on fewer threads. With every core's thread running, one core shared with a busy process makes each
// parallel loop wait for the thread that core time-slices, and the threads that finished spin in the barrier on
// CPU the others need: measured on the 2-core machine beside one busy process, a `gemmar run` took 2.28 s on two
// threads and 1.12 s on one (issue 47). The wait policy cannot be changed once
// the OpenMP runtime has started (it reads OMP_WAIT_POLICY when the library loads, before main), the thread count
// can: before each unit of work, the cores others used since the previous look are left to them.
#pragma once

namespace gemmar {

// When OMP_NUM_THREADS is set, does nothing (the user's choice). Otherwise sets omp_set_num_threads to the cores
// others left free since the last call (at least 1): /proc/stat's busy time (niced work too) less this process's
// own (/proc/self/stat). The first call measures over 50 ms. Returns the threads chosen (0: left as they were).
int fit_threads_to_free_cores();

}  // namespace gemmar
