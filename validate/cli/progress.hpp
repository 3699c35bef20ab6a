// Progress as nccl-tests prints it: one line per unit of work as it finishes (a config at one M for `run` and
// `validate`, a record for `check -`), on stderr, so that stdout stays the result (and `--json` one document: no
// line then). On a terminal the lines are columns under a header; otherwise one short line each. Work longer than a
// few seconds gets an estimate of the time left: each unit costs a rate times its weight, plus, for the first unit
// of a group sharing work (the partials every config at one M shares, computed by its first run), a setup rate
// times its setup weight; both rates from the units finished so far.
#pragma once
#include <chrono>
#include <iosfwd>
#include <string>
#include <vector>

#include "validate/harness/run_plan.hpp"
#include "validate/verdict/verdict.hpp"

namespace gemmar::cli {

// stderr is a terminal (isatty(2)).
bool stderr_is_terminal();

class Progress {
 public:
  struct Unit {
    double weight = 1;  // its own cost relative to the others'
    double setup = 0;   // the shared work it does first (0: none)
  };
  // `units` empty: units of unknown number, no estimate. `out` null: prints nothing.
  Progress(std::ostream* out, std::string command, std::vector<Unit> units, bool terminal);
  // Unit `index` finished: `what` names it (config and M, or a record's source and config); `seconds` < 0: not
  // timed (a record read from a log).
  void finished(size_t index, const std::string& what, const Verdict& verdict, double seconds);

 private:
  std::ostream* out_;
  std::string command_;
  // Seconds left: the rates of the finished units applied to those not yet finished.
  double seconds_left() const;

  std::vector<Unit> units_;
  std::vector<bool> finished_;
  bool terminal_;
  bool header_done_ = false;
  size_t done_ = 0;
  double plain_seconds_ = 0, plain_weight_ = 0;                    // finished units without setup
  double setup_seconds_ = 0, setup_weight_ = 0, setup_setup_ = 0;  // finished units with setup
  std::chrono::steady_clock::time_point start_;
};

// Reports each run of execute_plan to `progress`.
PlanObserver progress_observer(Progress& progress);

// A run plan's units, in execute_plan's order: each (M, config) weighs M (N, K and W are the plan's), a config
// without a collective (gemm-only) a third of that; with several configs, the first at each M also computes the
// partials they share (setup M).
std::vector<Progress::Unit> plan_units(const RunPlan& plan);

}  // namespace gemmar::cli
