// gemmar check: verdicts on benchmark output (docs/spec.md section 4).
#include <algorithm>
#include <functional>
#include <iostream>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "common/errors.hpp"
#include "common/json_text.hpp"
#include "model/model.hpp"
#include "validate/cli/baseline.hpp"
#include "validate/cli/cli.hpp"
#include "validate/cli/progress.hpp"
#include "validate/record/log_reader.hpp"
#include "validate/record/trace_reader.hpp"
#include "validate/verdict/across_runs.hpp"
#include "validate/verdict/log_verdicts.hpp"
#include "validate/verdict/verdict.hpp"

namespace gemmar::cli {

namespace {

constexpr const char* kUsageLine =
    "gemmar check [FILE|-]... [--profile P] [--pull-blocks B] [--world W] [--expect N] [--baseline FILE]... "
    "[--trace [RUN=]FILE]... [--phase-map FILE] [--phase-pattern phase=REGEX]... [--no-timing] "
    "[--floors-at-run-m] [--max-line-bytes N] [--json]";

std::optional<size_t> parse_index(const std::string& s) {
  if (s.empty() || s.find_first_not_of("0123456789") != std::string::npos || s.size() > 9) return std::nullopt;
  return size_t(std::stoul(s));
}

std::string join(const std::set<std::string>& s) {
  std::string out;
  for (const auto& x : s) out += (out.empty() ? "" : ", ") + x;
  return out.empty() ? "none" : out;
}

// The phases a config's kernels show in a trace: the model's phases (their names do not depend on the
// profile) less the launch skew. Empty when the model rejects the shape.
std::set<std::string> config_phases(const RunRecord& r) {
  static const model::Profile prof = model::load_profile("mi355x");
  std::set<std::string> out;
  try {
    for (const auto& ph : model::predict(prof, r.shape, r.config).phases)
      if (ph.name != "skew" && ph.name != "output") out.insert(ph.name);
  } catch (const Error&) {
  }
  return out;
}

// A trace matches a run's config when every phase it shows is one the config runs, and every phase only a
// kernel can do (the GEMM, reduce, quantize, dequantize, pull, the 2-stage all-reduce) is there. Copy-engine
// legs (scatter, gather, drain) may be absent: a kernel trace does not always show copies.
bool trace_matches(const std::set<std::string>& trace, const std::set<std::string>& config) {
  if (trace.empty() || config.empty()) return false;
  for (const auto& p : trace)
    if (!config.count(p)) return false;
  for (const char* k : {"gemm", "reduce", "quantize", "dequantize", "pull", "allreduce"})
    if (config.count(k) && !trace.count(k)) return false;
  return true;
}

std::string run_label(size_t index, const RunRecord& r) {
  return std::to_string(index) + " (" + r.source + ": " + config_label(r.config) + " M=" + std::to_string(r.shape.m) +
         ")";
}

// Attaches trace phases to the runs: "RUN=FILE" names the run by its source ("log:12") or 1-based index;
// a plain FILE goes to the one run whose config its kernels match (exit 2 listing the candidates otherwise).
void attach_traces(std::vector<RunRecord*>& runs, const std::vector<std::string>& specs,
                   const std::vector<PhasePattern>& patterns) {
  std::set<RunRecord*> taken;
  for (const auto& spec : specs) {
    RunRecord* target = nullptr;
    std::string file = spec;
    const size_t eq = spec.find('=');
    std::string who;
    if (eq != std::string::npos) {
      who = spec.substr(0, eq);
      file = spec.substr(eq + 1);
    }
    const TracePhases tp = read_trace(file, patterns);
    std::set<std::string> phases;
    for (const auto& [phase, us] : tp.phases_us) phases.insert(phase);
    if (!who.empty()) {
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
      std::vector<size_t> candidates;
      for (size_t i = 0; i < runs.size(); ++i)
        if (!taken.count(runs[i]) && trace_matches(phases, config_phases(*runs[i]))) candidates.push_back(i);
      if (candidates.size() != 1) {
        std::string list;
        const bool none = candidates.empty();
        if (none)
          for (size_t i = 0; i < runs.size(); ++i) candidates.push_back(i);
        for (size_t n = 0; n < candidates.size() && n < 20; ++n)
          list += (n ? "; " : "") + run_label(candidates[n] + 1, *runs[candidates[n]]);
        if (candidates.size() > 20) list += "; ...";
        throw UsageError("--trace " + file + ": its kernels (phases " + join(phases) + ") " +
                         (none ? "match no run's config" : "match " + std::to_string(candidates.size()) + " runs") +
                         "; name the run with --trace RUN=" + file + " (RUN = index or source). " +
                         (none ? "Runs: " : "Candidates: ") + (list.empty() ? "none" : list));
      }
      target = runs[candidates.front()];
    }
    taken.insert(target);
    for (const auto& [phase, us] : tp.phases_us) target->phases_us[phase] = us;
    const std::set<std::string> expected = config_phases(*target);
    target->raw["trace"] = {{"file", file},
                            {"format", tp.format},
                            {"iterations", tp.iterations},
                            {"devices", tp.devices},
                            {"kernels_matched", tp.kernels_matched},
                            {"kernels_unmatched", tp.kernels_unmatched},
                            {"unmatched_names", tp.unmatched_names},
                            {"phases", phases},
                            {"matches_config", trace_matches(phases, expected)}};
  }
}

po::options_description check_options_description() {
  po::options_description desc("gemmar check options");
  desc.add_options()("input", po::value<std::vector<std::string>>()->multitoken(), "log files to read ('-' = stdin)")(
      "profile", po::value<std::string>(),
      ("model profile (" + model::profile_choices() +
       "|FILE); overrides the runs' own profile field; default: the profile of the run's device")
          .c_str())("pull-blocks", po::value<int>(), "pull grid for runs that carry no pull_blocks (default 64)")(
      "world", po::value<int>()->default_value(8), "world_size for records that carry none (older benchmarks)")(
      "expect", po::value<int>(), "fail each input that holds fewer than N runs")(
      "baseline", po::value<std::vector<std::string>>(), "log of baseline runs, matched by shape and config")(
      "trace", po::value<std::vector<std::string>>(),
      "kernel trace ([RUN=]FILE, repeatable): rocprofv3 CSV or "
      "Chrome-trace JSON; its phases attach to the run")(
      "phase-map", po::value<std::string>(), "file of phase=REGEX lines or a JSON object, replacing the defaults")(
      "phase-pattern", po::value<std::vector<std::string>>(), "phase=REGEX, overriding one phase (repeatable)")(
      "no-timing", po::bool_switch()->default_value(false), "judge numerics only (times are not GPU times)")(
      "floors-at-run-m", po::bool_switch()->default_value(false),
      "derive the floors at each run's own M (default: once per N, K, W, quant at M=16384)")(
      "max-line-bytes", po::value<size_t>()->default_value(size_t(1) << 20), "longest line read as a record")(
      "tee", po::bool_switch()->default_value(false),
      "copy stdin ('-') to stdout as it is read, so the benchmark's own output still shows (the verdicts go to "
      "stderr as each record arrives, the table follows at the end)");
  add_common_options(desc);
  return desc;
}

struct CheckOptions {
  std::vector<std::string> inputs;
  bool tee = false;     // --tee: stdin copied to stdout as read
  bool stream = false;  // each record of stdin judged as it arrives, its verdict on stderr (not with --json, --trace)
  LogReadOptions read;
  std::optional<int> expect;
  JudgeOptions judge;
  std::vector<PhasePattern> patterns;
};

// Every option checked (exit 2) before any input is read; the baselines are read here.
CheckOptions check_options(const po::variables_map& vm) {
  CheckOptions o;
  GEMMAR_USAGE_CHECK(vm.count("input"), "no input (give FILE... or '-' for stdin)");
  o.inputs = vm["input"].as<std::vector<std::string>>();
  LogReadOptions& ro = o.read;
  ro.max_line_bytes = vm["max-line-bytes"].as<size_t>();
  GEMMAR_USAGE_CHECK(ro.max_line_bytes >= 64, "--max-line-bytes: ", ro.max_line_bytes, " is too small (>= 64)");
  ro.defaults.world = vm["world"].as<int>();
  GEMMAR_USAGE_CHECK(ro.defaults.world >= 1 && ro.defaults.world <= 512, "--world: ", ro.defaults.world,
                     " is out of range [1, 512]");
  if (vm.count("expect")) {
    o.expect = vm["expect"].as<int>();
    GEMMAR_USAGE_CHECK(*o.expect >= 1, "--expect: ", *o.expect, " is not a positive number of runs");
  }

  JudgeOptions& jo = o.judge;
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
  if (vm.count("baseline"))
    jo.baseline = read_baseline_runs(vm["baseline"].as<std::vector<std::string>>(), ro, "gemmar check");

  const bool from_stdin = std::find(o.inputs.begin(), o.inputs.end(), "-") != o.inputs.end();
  o.tee = vm["tee"].as<bool>();
  GEMMAR_USAGE_CHECK(!o.tee || from_stdin, "--tee: copies stdin to stdout; give '-' as an input");
  GEMMAR_USAGE_CHECK(!o.tee || !vm["json"].as<bool>(),
                     "--tee: with --json stdout holds one JSON document only; leave one of them out");
  o.stream = from_stdin && !vm["json"].as<bool>() && !vm.count("trace");

  o.patterns = default_phase_patterns();
  if (vm.count("phase-map")) o.patterns = load_phase_map(vm["phase-map"].as<std::string>());
  if (vm.count("phase-pattern"))
    for (const auto& s : vm["phase-pattern"].as<std::vector<std::string>>()) apply_phase_override(o.patterns, s);
  return o;
}

// Entries in input order; invalid ones become failing verdicts in place. Per input: the failures its log shows
// and how many runs it held (log_verdicts: BENCHMARK_FAILED / SWEEP_* / RUNS_MISSING, judged after the runs).
struct ReadInputs {
  std::vector<LogEntry> entries;
  std::vector<std::optional<Verdict>> judged;  // entries judged as they arrived (stdin, streamed)
  std::vector<Verdict> log_verdicts;
  int64_t unread_gemm_ar = 0, quoted_records = 0;
  std::string first_unread;
};

Verdict entry_verdict(const LogEntry& e, const JudgeOptions& jo) {
  return e.kind == "other" ? other_record_verdict(e)
         : e.record        ? judge(*e.record, jo)
                           : invalid_record_verdict(e.source, e.error, e.raw);
}

// stdin through read(2): each record judged when its line arrives and its verdict printed to stderr (a benchmark
// piping an hour-long sweep shows verdicts as they come), the bytes copied to stdout first with --tee.
LogReadStats read_stdin(const CheckOptions& o, ReadInputs& in) {
  Progress progress(o.stream ? &std::cerr : nullptr, "gemmar check", {}, stderr_is_terminal());
  auto sink = [&](LogEntry&& e) {
    if (o.stream) {
      Verdict v = entry_verdict(e, o.judge);
      const std::string what =
          e.source + " " +
          (e.record ? config_label(e.record->config) + " M=" + std::to_string(e.record->shape.m) : e.kind);
      progress.finished(in.entries.size(), what, v, -1);
      in.judged.resize(in.entries.size());
      in.judged.push_back(std::move(v));
    }
    in.entries.push_back(std::move(e));
  };
  auto tee = [](const char* p, size_t n) { std::cout.write(p, std::streamsize(n)).flush(); };
  return read_log_fd(0, "stdin", sink, o.read, o.tee ? tee : std::function<void(const char*, size_t)>());
}

void read_input(const std::string& path, const CheckOptions& o, ReadInputs& in) {
  const size_t before = in.entries.size();
  const LogReadStats st = path == "-" ? read_stdin(o, in)
                                      : read_log_file(
                                            path, [&](LogEntry&& e) { in.entries.push_back(std::move(e)); }, o.read);
  const std::string name = path == "-" ? "stdin" : path;
  size_t runs_found = 0;
  // A finished run that did not validate (rank 0 then exits 1 by design). Rank lines with no record after
  // them do not count: rank 0 never printed its result, so its exit is a failure of its own.
  bool not_validated = false;
  for (size_t i = before; i < in.entries.size(); ++i) {
    const LogEntry& e = in.entries[i];
    if (e.kind == "other") continue;
    ++runs_found;
    not_validated =
        not_validated || !e.rank_failures.empty() || (e.record && e.record->validated && !*e.record->validated);
  }
  for (auto& v : log_level_verdicts(st, name, not_validated)) in.log_verdicts.push_back(std::move(v));
  if (in.unread_gemm_ar == 0) in.first_unread = st.context.first_unread_gemm_ar;
  in.unread_gemm_ar += st.context.unread_gemm_ar_lines;
  in.quoted_records += st.context.embedded_records;
  if (o.expect && runs_found < size_t(*o.expect))
    in.log_verdicts.push_back(
        failed_entry_verdict(name + ":" + std::to_string(st.lines), "RUNS_MISSING",
                             name + " holds " + std::to_string(runs_found) + " run(s) in " + std::to_string(st.lines) +
                                 " lines, fewer than the --expect " + std::to_string(*o.expect) +
                                 ": the benchmark stopped early or its output was cut; look at the end of the log."));
}

// Inputs with nothing to judge are exit 2, saying what the input held instead.
void require_runs(const CheckOptions& o, const ReadInputs& in) {
  if (!in.entries.empty() || !in.log_verdicts.empty()) return;
  std::string list;
  for (const auto& p : o.inputs) list += (list.empty() ? "" : ", ") + (p == "-" ? std::string("stdin") : p);
  if (in.unread_gemm_ar > 0)
    throw UsageError(list + ": no runs found: " + std::to_string(in.unread_gemm_ar) +
                     " [gemm_ar] line(s) that are not bench_gemm_ar.py's `[gemm_ar] mode=... validated=...` summary "
                     "(pytest's own prints have no n, k or validated; e.g. " +
                     in.first_unread + "); judge the benchmark's RESULT_JSON lines or its --json-out file instead");
  if (in.quoted_records > 0)
    throw UsageError(list + ": no runs found: " + std::to_string(in.quoted_records) +
                     " RESULT_JSON only quoted inside other lines (a repr such as pytest's CompletedProcess(... "
                     "stdout='...')), not read as records; judge the benchmark's own output");
  throw UsageError(list +
                   ": no runs found (no RESULT_JSON lines, no [gemm_ar] lines and no JSON objects with "
                   "benchmark fields)");
}

std::vector<Verdict> judge_inputs(ReadInputs& in, const JudgeOptions& jo) {
  std::vector<Verdict> verdicts;
  verdicts.reserve(in.entries.size() + in.log_verdicts.size());
  for (size_t i = 0; i < in.entries.size(); ++i)
    verdicts.push_back(i < in.judged.size() && in.judged[i] ? std::move(*in.judged[i])
                                                            : entry_verdict(in.entries[i], jo));
  judge_repeats(verdicts);
  for (auto& v : in.log_verdicts) verdicts.push_back(std::move(v));
  return verdicts;
}

}  // namespace

int cmd_check(const Args& args) {
  po::options_description desc = check_options_description();
  po::positional_options_description pos;
  pos.add("input", -1);
  po::variables_map vm;
  if (!parse(args, desc, vm, std::cout, kUsageLine, &pos)) return kExitOk;
  const CheckOptions o = check_options(vm);

  ReadInputs in;
  for (const auto& path : o.inputs) read_input(path, o, in);
  require_runs(o, in);
  if (vm.count("trace")) {
    std::vector<RunRecord*> runs;
    for (auto& e : in.entries)
      if (e.record) runs.push_back(&*e.record);
    GEMMAR_USAGE_CHECK(!runs.empty(), "--trace: the input holds no valid run to attach a trace to");
    attach_traces(runs, vm["trace"].as<std::vector<std::string>>(), o.patterns);
  }

  const std::vector<Verdict> verdicts = judge_inputs(in, o.judge);
  if (vm["json"].as<bool>())
    std::cout << json_text(to_json(verdicts), 2) << "\n";
  else
    std::cout << verdict_table(verdicts);
  for (const auto& v : verdicts)
    if (!v.pass) return kExitCheckFailed;
  return kExitOk;
}

}  // namespace gemmar::cli
