// gemmar check: verdicts on benchmark output (SPEC section 4).
#include <iostream>
#include <optional>
#include <string>
#include <vector>

#include "common/errors.hpp"
#include "common/json_text.hpp"
#include "model/model.hpp"
#include "validate/cli/cli.hpp"
#include "validate/record/log_reader.hpp"
#include "validate/record/trace_reader.hpp"
#include "validate/verdict/verdict.hpp"

namespace gemmar::cli {

namespace {

constexpr const char* kUsageLine =
    "gemmar check [FILE|-]... [--profile P] [--pull-blocks B] [--baseline FILE] [--trace [RUN=]FILE]... "
    "[--phase-map FILE] [--phase-pattern phase=REGEX]... [--json]";

std::optional<size_t> parse_index(const std::string& s) {
  if (s.empty() || s.find_first_not_of("0123456789") != std::string::npos || s.size() > 9) return std::nullopt;
  return size_t(std::stoul(s));
}

// Attaches trace phases to the runs: "RUN=FILE" names the run by its source ("log:12") or 1-based index;
// plain FILEs are paired with the runs in input order.
void attach_traces(std::vector<RunRecord*>& runs, const std::vector<std::string>& specs,
                   const std::vector<PhasePattern>& patterns) {
  size_t next_plain = 0;
  for (const auto& spec : specs) {
    RunRecord* target = nullptr;
    std::string file = spec;
    const size_t eq = spec.find('=');
    if (eq != std::string::npos) {
      const std::string who = spec.substr(0, eq);
      file = spec.substr(eq + 1);
      if (auto idx = parse_index(who)) {
        GEMMAR_USAGE_CHECK(*idx >= 1 && *idx <= runs.size(), "--trace ", spec, ": run index ", *idx,
                           " is out of range [1, ", runs.size(), "]");
        target = runs[*idx - 1];
      } else {
        for (auto* r : runs)
          if (r->source == who) target = r;
        GEMMAR_USAGE_CHECK(target, "--trace ", spec, ": no valid run has source '", who, "'");
      }
    } else {
      GEMMAR_USAGE_CHECK(next_plain < runs.size(), "--trace ", spec, ": more traces than runs (", runs.size(),
                         " valid); name the run with RUN=FILE");
      target = runs[next_plain++];
    }
    const TracePhases tp = read_trace(file, patterns);
    for (const auto& [phase, us] : tp.phases_us) target->phases_us[phase] = us;
    target->raw["trace"] = {{"file", file}, {"format", tp.format}, {"iterations", tp.iterations},
                            {"devices", tp.devices}, {"kernels_matched", tp.kernels_matched},
                            {"kernels_unmatched", tp.kernels_unmatched}};
  }
}

}  // namespace

int cmd_check(const Args& args) {
  po::options_description desc("gemmar check options");
  desc.add_options()
      ("input", po::value<std::vector<std::string>>()->multitoken(), "log files to read ('-' = stdin)")
      ("profile", po::value<std::string>(), "model profile (mi355x|mi300x|h200|h200-1gpu|FILE); overrides the "
                                            "runs' own profile field; default mi355x")
      ("pull-blocks", po::value<int>(), "pull grid for runs that carry no pull_blocks (default 64)")
      ("baseline", po::value<std::vector<std::string>>(), "log of baseline runs, matched by shape and config")
      ("trace", po::value<std::vector<std::string>>(), "kernel trace ([RUN=]FILE, repeatable): rocprofv3 CSV or "
                                                       "Chrome-trace JSON; its phases attach to the run")
      ("phase-map", po::value<std::string>(), "file of phase=REGEX lines or a JSON object, replacing the defaults")
      ("phase-pattern", po::value<std::vector<std::string>>(), "phase=REGEX, overriding one phase (repeatable)")
      ("no-timing", po::bool_switch()->default_value(false), "judge numerics only (times are not GPU times)")
      ("floors-at-run-m", po::bool_switch()->default_value(false),
       "derive the floors at each run's own M (default: once per N, K, W, quant at M=16384)")
      ("max-line-bytes", po::value<size_t>()->default_value(size_t(1) << 20), "longest line read as a record");
  add_common_options(desc);
  po::positional_options_description pos;
  pos.add("input", -1);
  po::variables_map vm;
  if (!parse(args, desc, vm, std::cout, kUsageLine, &pos)) return kExitOk;

  GEMMAR_USAGE_CHECK(vm.count("input"), "gemmar check: no input (give FILE... or '-' for stdin)");
  const auto inputs = vm["input"].as<std::vector<std::string>>();
  LogReadOptions ro;
  ro.max_line_bytes = vm["max-line-bytes"].as<size_t>();
  GEMMAR_USAGE_CHECK(ro.max_line_bytes >= 64, "--max-line-bytes: ", ro.max_line_bytes, " is too small (>= 64)");

  JudgeOptions jo;
  if (vm.count("profile")) {
    jo.profile = vm["profile"].as<std::string>();
    (void)model::load_profile(*jo.profile);  // a bad --profile is exit 2 before anything is judged
  }
  if (vm.count("pull-blocks")) {
    const int b = vm["pull-blocks"].as<int>();
    GEMMAR_USAGE_CHECK(b >= 1 && b <= 65536, "--pull-blocks: ", b, " is out of range [1, 65536]");
    jo.pull_blocks = b;
  }
  jo.judge_timing = !vm["no-timing"].as<bool>();
  jo.floors_at_run_m = vm["floors-at-run-m"].as<bool>();
  if (vm.count("baseline")) {
    for (const auto& path : vm["baseline"].as<std::vector<std::string>>()) {
      int64_t skipped = 0;
      read_log_file(path, [&](LogEntry&& e) {
        if (e.record) jo.baseline.push_back(std::move(*e.record));
        else ++skipped;
      }, ro);
      if (skipped) std::cerr << "gemmar check: --baseline " << path << ": skipped " << skipped << " invalid record(s)\n";
    }
    GEMMAR_USAGE_CHECK(!jo.baseline.empty(), "--baseline: no valid runs in the baseline file(s)");
  }

  std::vector<PhasePattern> patterns = default_phase_patterns();
  if (vm.count("phase-map")) patterns = load_phase_map(vm["phase-map"].as<std::string>());
  if (vm.count("phase-pattern"))
    for (const auto& s : vm["phase-pattern"].as<std::vector<std::string>>()) apply_phase_override(patterns, s);

  // Entries in input order; invalid ones become failing verdicts in place.
  std::vector<LogEntry> entries;
  for (const auto& path : inputs) read_log_file(path, [&](LogEntry&& e) { entries.push_back(std::move(e)); }, ro);
  if (entries.empty()) {
    std::string list;
    for (const auto& p : inputs) list += (list.empty() ? "" : ", ") + (p == "-" ? std::string("stdin") : p);
    throw UsageError(list + ": no runs found (no RESULT_JSON lines and no JSON objects with benchmark fields)");
  }

  if (vm.count("trace")) {
    std::vector<RunRecord*> runs;
    for (auto& e : entries)
      if (e.record) runs.push_back(&*e.record);
    attach_traces(runs, vm["trace"].as<std::vector<std::string>>(), patterns);
  }

  std::vector<Verdict> verdicts;
  verdicts.reserve(entries.size());
  for (const auto& e : entries)
    verdicts.push_back(e.record ? judge(*e.record, jo) : invalid_record_verdict(e.source, e.error, e.raw));

  if (vm["json"].as<bool>())
    std::cout << json_text(to_json(verdicts), 2) << "\n";
  else
    std::cout << verdict_table(verdicts);
  for (const auto& v : verdicts)
    if (!v.pass) return kExitCheckFailed;
  return kExitOk;
}

}  // namespace gemmar::cli
