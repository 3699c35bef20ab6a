#include "validate/harness/python_judge.hpp"

#include <algorithm>

#include "common/errors.hpp"

namespace gemmar {

namespace {

// What the verify of the dump measured, into the run's record: the fields verify's record carries and the
// benchmark's line does not (verify.cpp make_record, output_check record_numerics / ElementChecks::record).
void take_verified_numerics(RunRecord& rec, const VerifyResult& v) {
  const RunRecord& t = v.record;
  rec.rel_l2 = t.rel_l2;
  rec.validated = t.validated;
  rec.per_rank_rel_l2 = t.per_rank_rel_l2;
  rec.per_slice_rel_l2 = t.per_slice_rel_l2;
  rec.rel_l2_all_views = t.rel_l2_all_views;
  rec.rel_l2_all_views_stderr = t.rel_l2_all_views_stderr;
  rec.wrong_elements = t.wrong_elements;
  rec.wrong_elements_basis = t.wrong_elements_basis;
  rec.checked_rows = t.checked_rows;
  rec.checked_elements = t.checked_elements;
  rec.nonfinite_elements = t.nonfinite_elements;
  rec.disagreeing_elements = t.disagreeing_elements;
  rec.wire_recipe = t.wire_recipe;
  rec.operand_dtype = t.operand_dtype;
  if (!v.first_mismatches.empty()) {
    const Mismatch& mm = v.first_mismatches.front();
    rec.first_wrong_element =
        "rank " + std::to_string(mm.rank) + ", row " + std::to_string(mm.row) + ", col " + std::to_string(mm.col);
  }
}

// The dump must be of the run the record describes.
std::string dump_disagrees(const RunRecord& rec, const RunRecord& dumped) {
  const Shape& a = rec.shape;
  const Shape& b = dumped.shape;
  if (a.m != b.m || a.n != b.n || a.k != b.k || a.world != b.world)
    return "the dump holds M=" + std::to_string(b.m) + " N=" + std::to_string(b.n) + " K=" + std::to_string(b.k) +
           " W=" + std::to_string(b.world) + ", the record M=" + std::to_string(a.m) + " N=" + std::to_string(a.n) +
           " K=" + std::to_string(a.k) + " W=" + std::to_string(a.world);
  if (config_label(rec.config) != config_label(dumped.config) ||
      rec.config.fuse_quantize != dumped.config.fuse_quantize)
    return "the dump is " + config_label(dumped.config) + ", the record " + config_label(rec.config);
  return "";
}

// Replays of the same inputs whose bits differ from the dumped call (the runner's replay_mismatch_elements per
// rank): NONDETERMINISTIC, as a repeat of iteration 0 by the last timed replay.
void take_replay_mismatches(RunRecord& rec, const nlohmann::json& result) {
  const auto it = result.find("replay_mismatch_elements");
  if (it == result.end() || !it->is_array()) return;
  NondeterministicIteration nd;
  nd.iteration = result.value("iterations", 1);
  nd.repeat_of = 0;
  for (size_t r = 0; r < it->size(); ++r)
    if ((*it)[r].is_number_integer() && (*it)[r].get<int64_t>() > 0) nd.ranks.push_back(int(r));
  if (!nd.ranks.empty()) rec.nondeterministic_iterations.push_back(nd);
}

RunOutcome invalid(const std::string& source, const std::string& message, const nlohmann::json& raw,
                   const RunRecord* rec) {
  RunOutcome o;
  if (rec) o.record = *rec;
  o.record.source = source;
  o.record.raw = raw;
  o.verdict = invalid_record_verdict(source, message, raw);
  o.verdict.record = o.record;
  return o;
}

}  // namespace

RunOutcome judge_python_run(const nlohmann::json& result, const std::string& source, const PythonJudgeOptions& opt) {
  RunRecord rec;
  try {
    rec = run_record_from_json(result, source);
  } catch (const UsageError& e) {
    return invalid(source, std::string("the runner's RESULT_JSON: ") + e.what(), result, nullptr);
  }
  const std::string dump = result.value("dump", "");
  VerifyResult v;
  try {
    GEMMAR_USAGE_CHECK(!dump.empty(), "the runner's RESULT_JSON names no dump");
    const auto groups = dump_groups({dump});
    GEMMAR_USAGE_CHECK(groups.size() == 1, dump, ": ", groups.size(), " runs, expected one");
    v = verify_dump(groups.front(), opt.verify);
  } catch (const UsageError& e) {
    return invalid(source, std::string("the run's dump: ") + e.what(), result, &rec);
  }
  if (const std::string why = dump_disagrees(rec, v.record); !why.empty())
    return invalid(source, "the run's dump is not the run's: " + why, result, &rec);
  take_verified_numerics(rec, v);
  take_replay_mismatches(rec, result);
  rec.backend = "python";
  rec.profile = opt.judge.profile ? *opt.judge.profile
                                  : default_profile(result.value("array", "torch") == "numpy" ? "cpu" : "gpu",
                                                    rec.device.value_or(""), opt.ranks_per_device);
  rec.raw = run_record_to_json(rec);
  rec.raw["verify"] = {{"dump", dump},
                       {"partials", v.has_partials},
                       {"element_rows", v.element_rows},
                       {"diagnoses", v.diagnoses},
                       {"seconds", v.seconds_total}};
  return judge_outcome(std::move(rec), opt.judge);
}

RunOutcome failed_python_run(const Shape& shape, const Config& config, const std::string& source,
                             const std::string& why) {
  RunOutcome o;
  o.record.source = source;
  o.record.shape = shape;
  o.record.config = config;
  o.record.backend = "python";
  o.record.validated = false;
  o.record.raw = run_record_to_json(o.record);
  o.record.raw["error"] = why;
  o.verdict = failed_entry_verdict(source, "BENCHMARK_FAILED", why);
  o.verdict.record = o.record;
  return o;
}

}  // namespace gemmar
