// One run of a Python implementation, judged: its RESULT_JSON record (the benchmark's fields and times, read by the
// same reader as `gemmar check`) and the verify of its tensor dump (verify.hpp: the bit-exact collective, NaN/inf,
// rank agreement, relL2 against the fp32 reference) become one record, judged once by the same judge.
#pragma once
#include <string>

#include <nlohmann/json.hpp>

#include "validate/harness/run_driver.hpp"
#include "validate/harness/verify.hpp"

namespace gemmar {

struct PythonJudgeOptions {
  VerifyOptions verify;      // --check-rows, --seed (the relL2's rows), --floors-at-run-m
  JudgeOptions judge;        // --profile, --baseline; judge_timing follows the record (no time: not judged)
  int ranks_per_device = 1;  // the implementation's placement: W for every rank on one device
};

// `result` is the runner's RESULT_JSON object; its "dump" names the run's dump directory. A record or dump that
// cannot be read is a failing verdict (INVALID_RECORD) naming why; so is a dump of another shape or config.
RunOutcome judge_python_run(const nlohmann::json& result, const std::string& source, const PythonJudgeOptions&);

// A run that produced no record (it raised, crashed or timed out): a failing verdict, BENCHMARK_FAILED with `why`;
// the record holds the planned shape and config, validated false.
RunOutcome failed_python_run(const Shape&, const Config&, const std::string& source, const std::string& why);

}  // namespace gemmar
