#include "validate/harness/python_runner.hpp"

#include <stdlib.h>

#include <algorithm>
#include <chrono>
#include <deque>
#include <fstream>
#include <map>
#include <ostream>
#include <set>
#include <thread>

#include "common/config_fields.hpp"
#include "common/errors.hpp"
#include "validate/harness/child_process.hpp"
#include "validate/harness/python_judge.hpp"
#include "validate/harness/run_plan.hpp"

namespace gemmar {

namespace fs = std::filesystem;

namespace {

using Clock = std::chrono::steady_clock;
// What mori's anvil.cpp says when a job's SDMA queues cannot be created, typically because the previous job's are
// not yet released (mori's op worker @54e74a02: "back-to-back 8-rank jobs fail in hsaKmtCreateQueueExt
// (anvil.cpp:237)"). A run that failed so is retried once, after the queue wait.
constexpr const char* kQueueFailure = "hsaKmtCreateQueueExt";
// Lines of a run's own output kept to name its failure.
constexpr size_t kTailLines = 12;

double seconds_since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

// ---- the runner's lines -------------------------------------------------------------------------------------------

struct RunnerLine {
  std::string tag;  // DESCRIBE_JSON | SELFTEST_JSON | RUN_START | RESULT_JSON | RUN_FAILED | RUNNER_ERROR; "" other
  nlohmann::json body;
  std::string text;
};

// A tagged line, found anywhere in the line (torchrun --tee prefixes "[rank0]:"); its JSON must parse.
RunnerLine parse_line(const std::string& text) {
  static const char* const kTags[] = {"DESCRIBE_JSON ", "SELFTEST_JSON ", "RUN_START ",
                                      "RESULT_JSON ",   "RUN_FAILED ",    "RUNNER_ERROR "};
  RunnerLine line;
  line.text = text;
  for (const char* tag : kTags) {
    const size_t at = text.find(tag);
    if (at == std::string::npos) continue;
    const nlohmann::json body = nlohmann::json::parse(text.substr(at + std::strlen(tag)), nullptr, false);
    if (body.is_discarded() || !body.is_object()) continue;
    line.tag = std::string(tag, std::strlen(tag) - 1);
    line.body = body;
    break;
  }
  return line;
}

// ---- one start of the runner ------------------------------------------------------------------------------------

struct RunnerCall {
  std::string command;  // describe | selftest | run
  nlohmann::json body;  // the plan file
  std::string launcher = "single";
  int world = 1;
  fs::path dir;
  double timeout_s = 900;
  std::function<void(const RunnerLine&)> on_line;
};

struct CallResult {
  std::vector<int> exit_codes;
  bool timed_out = false;
  std::optional<std::pair<int, std::string>> runner_error;  // RUNNER_ERROR's exit and message
  std::deque<std::string> tail;                             // the last lines without a tag
  std::vector<fs::path> logs;
};

std::vector<ChildSpec> runner_children(const PythonOptions& o, const RunnerCall& c, const fs::path& plan_file) {
  const std::vector<std::string> script{o.runner.string(), c.command, plan_file.string()};
  std::vector<std::string> argv{o.python, "-u"};
  if (c.launcher == "direct") {
    std::vector<ChildSpec> out;
    const std::string port = std::to_string(free_local_port());
    for (int r = 0; r < c.world; ++r) {
      ChildSpec s{argv, {}, c.dir / ("rank" + std::to_string(r) + ".log")};
      s.argv.insert(s.argv.end(), script.begin(), script.end());
      // What torchrun sets for its workers, and the file group's directory for runners without torch.
      s.env = {"RANK=" + std::to_string(r),
               "LOCAL_RANK=" + std::to_string(r),
               "WORLD_SIZE=" + std::to_string(c.world),
               "LOCAL_WORLD_SIZE=" + std::to_string(c.world),
               "GROUP_RANK=0",
               "MASTER_ADDR=127.0.0.1",
               "MASTER_PORT=" + port,
               "GEMMAR_RUNNER_RENDEZVOUS=" + (plan_file.string() + ".rendezvous")};
      out.push_back(std::move(s));
    }
    return out;
  }
  if (c.launcher == "torchrun") {
    // `python -m torch.distributed.run`, not the torchrun script: the interpreter's own (mori's sweep.py does so).
    argv.insert(argv.end(),
                {"-m", "torch.distributed.run", "--standalone", "--nproc-per-node=" + std::to_string(c.world)});
  }
  ChildSpec s{argv, {"PYTHONUNBUFFERED=1"}, c.dir / "runner.log"};
  s.argv.insert(s.argv.end(), script.begin(), script.end());
  return {s};
}

std::string joined(const std::vector<std::string>& argv) {
  std::string s;
  for (const auto& a : argv) s += (s.empty() ? "" : " ") + a;
  return s;
}

void handle_lines(LogTail& tail, bool rest, const RunnerCall& c, CallResult& r, Clock::time_point& quiet_since) {
  for (const std::string& text : rest ? tail.read_rest() : tail.read_lines()) {
    const RunnerLine line = parse_line(text);
    if (line.tag.empty()) {
      r.tail.push_back(text);
      if (r.tail.size() > kTailLines) r.tail.pop_front();
    } else if (line.tag == "RUNNER_ERROR") {
      r.runner_error = {line.body.value("exit", 3), line.body.value("message", text)};
    }
    if (c.on_line) c.on_line(line);
    if (!line.tag.empty()) quiet_since = Clock::now();
  }
}

// Starts the runner (one process, torchrun, or W processes), feeds every line to on_line as it is written, and
// stops it when it has been silent (no tagged line) for timeout_s or when one of W direct ranks failed.
CallResult call_runner(const PythonOptions& o, const RunnerCall& c) {
  static int seq = 0;
  fs::create_directories(c.dir);
  const fs::path plan_file = c.dir / (c.command + "-" + std::to_string(++seq) + ".json");
  std::ofstream(plan_file) << c.body.dump(2) << "\n";
  const std::vector<ChildSpec> children = runner_children(o, c, plan_file);
  CallResult r;
  std::vector<LogTail> tails;
  for (const ChildSpec& s : children) {
    std::ofstream(s.log, std::ios::app) << "# gemmar: " << joined(s.argv) << "\n";
    LogTail t(s.log);
    (void)t.read_lines();  // past the header and any earlier call's output
    tails.push_back(std::move(t));
    r.logs.push_back(s.log);
  }
  std::optional<ChildGroup> started;
  try {
    started.emplace(children);
  } catch (const EnvironmentError& e) {
    throw EnvironmentError(std::string("--python: ") + e.what());
  }
  ChildGroup& group = *started;
  Clock::time_point quiet_since = Clock::now();
  std::optional<Clock::time_point> first_failure;
  for (;;) {
    for (LogTail& t : tails) handle_lines(t, false, c, r, quiet_since);
    if (!group.poll()) break;
    for (int code : group.exit_codes())
      if (code != ChildGroup::kRunning && code != 0 && !first_failure) first_failure = Clock::now();
    // A failed rank leaves the others waiting for it: torchrun ends them; gemmar's direct launcher does so here.
    if (first_failure && seconds_since(*first_failure) > 10) group.stop();
    if (seconds_since(quiet_since) > c.timeout_s) {
      r.timed_out = true;
      group.stop();
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  for (LogTail& t : tails) handle_lines(t, true, c, r, quiet_since);
  r.exit_codes = group.exit_codes();
  std::error_code ec;
  fs::remove_all(plan_file.string() + ".rendezvous", ec);  // the direct launcher's exchanges (partials, times)
  return r;
}

// What ended a call without the answer asked of it: the timeout, an exit code, the last lines.
std::string call_failure(const CallResult& r, double timeout_s) {
  std::string why;
  if (r.timed_out) {
    why = "stopped after " + std::to_string(int(timeout_s)) + " s without a line (--run-timeout: a hang?)";
  } else {
    for (size_t i = 0; i < r.exit_codes.size(); ++i)
      if (r.exit_codes[i] != 0)
        why += (why.empty() ? "" : ", ") +
               std::string(r.exit_codes.size() > 1 ? "rank " + std::to_string(i) + " " : "") +
               (r.exit_codes[i] < 0 ? "killed by signal " + std::to_string(-r.exit_codes[i])
                                    : "exited with code " + std::to_string(r.exit_codes[i]));
    if (why.empty()) why = "exited with code 0";
  }
  std::string last;
  for (const auto& l : r.tail) last += (last.empty() ? "" : " | ") + l;
  return why + (last.empty() ? "" : "; last lines: " + last) + " (log: " + r.logs.front().string() + ")";
}

[[noreturn]] void throw_runner_error(const PythonOptions& o, const std::pair<int, std::string>& e) {
  const std::string msg = e.second + " (interpreter: " + o.python + ")";
  if (e.first == 2) throw UsageError(msg);
  throw EnvironmentError(msg);
}

}  // namespace

namespace {

// ---- where the runner's files go --------------------------------------------------------------------------------

// A given directory, or a fresh one under $TMPDIR removed when done.
class WorkDir {
 public:
  explicit WorkDir(const fs::path& given) : path_(given) {
    if (!path_.empty()) return;
    const char* tmp = std::getenv("TMPDIR");
    std::string templ = std::string(tmp && *tmp ? tmp : "/tmp") + "/gemmar-python-XXXXXX";
    if (!::mkdtemp(templ.data())) throw EnvironmentError("cannot make a temp directory under " + templ);
    path_ = templ;
    owned_ = true;
  }
  ~WorkDir() {
    std::error_code ec;
    if (owned_) fs::remove_all(path_, ec);
  }
  WorkDir(const WorkDir&) = delete;
  WorkDir& operator=(const WorkDir&) = delete;
  const fs::path& path() const { return path_; }
  bool owned() const { return owned_; }
  void keep() { owned_ = false; }

 private:
  fs::path path_;
  bool owned_ = false;
};

// ---- waits between starts -------------------------------------------------------------------------------------

// When the last self-test or run call of the runner ended (describe creates no queues).
std::optional<Clock::time_point>& last_call_end() {
  static std::optional<Clock::time_point> t;
  return t;
}

// mori's README ("Let the SDMA queues drain between runs ... ~10s is enough"): the next start waits that long
// after the previous call ended.
void wait_for_queues(const PythonPlan& py, std::ostream* notes) {
  if (!last_call_end() || !(py.queue_wait_s > 0)) return;
  const double left = py.queue_wait_s - seconds_since(*last_call_end());
  if (!(left > 0)) return;
  if (notes)
    *notes << "gemmar: waiting " << left << " s before the next start of the runner (--queue-wait " << py.queue_wait_s
           << ": the previous processes' SDMA queues drain)\n"
           << std::flush;
  std::this_thread::sleep_for(std::chrono::duration<double>(left));
}

CallResult call_and_note_end(const PythonPlan& py, const RunnerCall& c, std::ostream* notes) {
  wait_for_queues(py, notes);
  CallResult r;
  try {
    r = call_runner(py.options, c);
  } catch (...) {
    last_call_end() = Clock::now();
    throw;
  }
  last_call_end() = Clock::now();
  return r;
}

bool mentions_queue_failure(const std::string& s) { return s.find(kQueueFailure) != std::string::npos; }

// ---- describe -------------------------------------------------------------------------------------------------

PythonImpl impl_from_json(const nlohmann::json& d) {
  PythonImpl i;
  i.raw = d;
  i.name = d.value("name", "");
  i.placement = d.value("placement", "one");
  i.array = d.value("array", "torch");
  if (d.contains("device") && d["device"].is_string()) i.device = d["device"].get<std::string>();
  i.device_count = d.value("device_count", 0);
  i.world = d.value("world", 0);
  i.queue_wait_s = d.value("queue_wait_s", 0.0);
  i.torchrun = d.value("torchrun", false);
  if (d.contains("m_values") && d["m_values"].is_array())
    for (const auto& m : d["m_values"]) i.m_values.push_back(m.get<int64_t>());
  return i;
}

// The launcher, the spawn mode and the queue wait, from the options and what the implementation is.
void resolve_launch(PythonPlan& plan) {
  const PythonOptions& o = plan.options;
  const PythonImpl& i = plan.impl;
  if (i.placement == "all" || i.world == 1) {
    plan.launcher = "single";
  } else if (o.launcher == "auto") {
    plan.launcher = i.torchrun ? "torchrun" : "direct";
  } else {
    if (o.launcher == "torchrun" && !i.torchrun)
      throw EnvironmentError("--launcher torchrun: " + o.python +
                             " cannot run torch.distributed.run (no torch); use --launcher direct");
    plan.launcher = o.launcher;
  }
  // One M per process for a process per rank (mori's README, "Measurement discipline": "A multi-M sweep once
  // reported 697 us and 1083 us for two M that pad to the same size; isolated, both were 697").
  plan.spawn = o.spawn != "auto" ? o.spawn : (i.placement == "one" ? "per-run" : "once");
  plan.queue_wait_s = o.queue_wait_s.value_or(i.queue_wait_s);
}

// The configs supported at every M; the others into `declined`.
void keep_supported(const nlohmann::json& supported, std::vector<Config>& configs, std::vector<Config>& declined) {
  std::vector<Config> kept;
  for (size_t i = 0; i < configs.size(); ++i) {
    bool all = supported.is_array() && i < supported.size() && supported[i].is_array() && !supported[i].empty();
    if (all)
      for (const auto& b : supported[i]) all = all && b.is_boolean() && b.get<bool>();
    (all ? kept : declined).push_back(configs[i]);
  }
  configs = std::move(kept);
}

// ---- the plan the runner reads ----------------------------------------------------------------------------------

nlohmann::json runner_body(const RunPlan& plan) {
  const Shape& s = plan.request.shape;
  return {{"impl", plan.python.options.impl},
          {"shape", {{"n", s.n}, {"k", s.k}, {"world", s.world}}},
          {"seed", plan.request.seed},
          {"warmup", plan.python.options.warmup},
          {"iterations", plan.request.iterations},
          {"eager", plan.request.eager},  // --eager: the timed calls launched eagerly, no graph captured
          {"runs", nlohmann::json::array()}};
}

}  // namespace

// ---- config <-> the runner ------------------------------------------------------------------------------------

// Every field of the table (common/config_fields.hpp) under the keys RESULT_JSON, run records and dump metadata
// use: the runner copies them into its RESULT_JSON and the dump's metadata as they are, so the plan, the record and
// the dump are read back by the same readers.
nlohmann::json python_config_json(const Config& c) { return config_to_json(c); }

// ---- describe ------------------------------------------------------------------------------------------------------

void describe_python_impl(PythonPlan& plan, Shape& shape, std::vector<Config>& configs, std::vector<int64_t>& m_values,
                          const std::vector<int64_t>& fallback_m, int default_world) {
  nlohmann::json candidates = nlohmann::json::array();
  for (const Config& c : configs) candidates.push_back(python_config_json(c));
  RunnerCall c;
  c.command = "describe";
  c.body = {
      {"impl", plan.options.impl},
      {"shape", {{"n", shape.n}, {"k", shape.k}, {"world", shape.world > 0 ? nlohmann::json(shape.world) : nullptr}}},
      {"default_world", default_world},
      {"m_values", m_values.empty() ? nlohmann::json(nullptr) : nlohmann::json(m_values)},
      {"fallback_m", fallback_m},
      {"candidates", candidates}};
  const WorkDir dir(plan.work_dir.empty() ? fs::path() : plan.work_dir / "runner");
  c.dir = dir.path();
  c.timeout_s = plan.options.run_timeout_s;
  std::optional<nlohmann::json> described;
  c.on_line = [&](const RunnerLine& l) {
    if (l.tag == "DESCRIBE_JSON") described = l.body;
  };
  const CallResult r = call_runner(plan.options, c);
  if (r.runner_error) throw_runner_error(plan.options, *r.runner_error);
  if (!described)
    throw EnvironmentError("--impl " + plan.options.impl +
                           ": the runner ended without describing the implementation: " + call_failure(r, c.timeout_s));
  plan.impl = impl_from_json(*described);
  GEMMAR_USAGE_CHECK(plan.impl.world >= 1, "--world: the implementation runs at W=", plan.impl.world);
  GEMMAR_USAGE_CHECK(
      plan.impl.placement != "one" || plan.impl.array != "torch" || plan.impl.world <= plan.impl.device_count,
      "--world ", plan.impl.world, ": ", plan.impl.name, " runs one rank per device and ", plan.impl.device_count,
      " device(s) are visible");
  shape.world = plan.impl.world;
  m_values = plan.impl.m_values;
  keep_supported((*described)["supported"], configs, plan.declined);
  resolve_launch(plan);
}

// ---- the self-test --------------------------------------------------------------------------------------------

namespace {

SelftestResult selftest_result(const Config& c, const nlohmann::json* got, const std::string& missing) {
  SelftestResult st;
  st.config = c;
  if (!got) {
    st.pass = false;
    st.message = config_label(c) + ": no self-test result: " + missing;
    return st;
  }
  st.pass = got->value("passed", false);
  st.seconds = got->value("seconds", 0.0);
  if (!st.pass) st.message = config_label(c) + ": the implementation's self_test failed: " + got->value("message", "");
  return st;
}

}  // namespace

std::vector<SelftestResult> python_selftest(const RunPlan& plan, std::ostream* notes) {
  const PythonPlan& py = plan.python;
  nlohmann::json body = runner_body(plan);
  const int64_t m = *std::min_element(plan.m_values.begin(), plan.m_values.end());
  std::vector<Config> configs;  // gemm-only moves nothing (as selftest_all)
  for (const Config& c : plan.configs)
    if (has_collective(c.mode)) configs.push_back(c);
  if (configs.empty()) return {};
  for (size_t i = 0; i < configs.size(); ++i)
    body["runs"].push_back({{"index", i + 1}, {"m", m}, {"config", python_config_json(configs[i])}, {"dump", ""}});
  const WorkDir dir(py.work_dir.empty() ? fs::path() : py.work_dir / "runner");
  std::map<int, nlohmann::json> got;
  CallResult r;
  for (int attempt = 0; attempt < 2; ++attempt) {
    got.clear();
    RunnerCall c{"selftest",
                 body,
                 py.launcher,
                 plan.request.shape.world,
                 dir.path(),
                 py.options.run_timeout_s,
                 [&](const RunnerLine& l) {
                   if (l.tag == "SELFTEST_JSON") got[l.body.value("run_index", 0)] = l.body;
                 }};
    r = call_and_note_end(py, c, notes);
    if (r.runner_error) throw_runner_error(py.options, *r.runner_error);
    bool queue = got.size() < configs.size() && mentions_queue_failure(call_failure(r, c.timeout_s));
    for (const auto& [idx, j] : got) queue = queue || mentions_queue_failure(j.value("message", ""));
    if (!queue || attempt == 1) break;
    if (notes)
      *notes << "gemmar: the self-test could not create its SDMA queues (" << kQueueFailure
             << ", mori's anvil.cpp); retrying it once\n";
  }
  std::vector<SelftestResult> out;
  for (size_t i = 0; i < configs.size(); ++i) {
    const auto it = got.find(int(i + 1));
    out.push_back(selftest_result(configs[i], it == got.end() ? nullptr : &it->second,
                                  call_failure(r, py.options.run_timeout_s)));
    if (it != got.end() && !it->second.value("provided", true) && notes && i == 0)
      *notes << "gemmar: " << py.impl.name << " has no self_test(): the self-test step checks nothing\n";
  }
  return out;
}

// ---- the runs -------------------------------------------------------------------------------------------------------

namespace {

struct PlannedRun {
  size_t index = 0;  // 0-based, the plan's order (every config at the first M, then the next M)
  int64_t m = 0;
  Config config;
  fs::path dump;
  int attempts = 0;
  bool done = false;
};

// Runs in execute_plan's order; dumps as `gemmar run --dump` lays them out (one run: the directory itself).
std::vector<PlannedRun> planned_runs(const RunPlan& plan, const fs::path& dumps, bool single_in_root) {
  std::vector<PlannedRun> runs;
  for (int64_t m : plan.m_values)
    for (const Config& c : plan.configs) {
      PlannedRun r;
      r.index = runs.size();
      r.m = m;
      r.config = c;
      std::string label = config_label(c);
      std::replace(label.begin(), label.end(), '/', '-');
      r.dump = single_in_root ? dumps
                              : dumps / ("run" + std::to_string(r.index + 1) + "-" + label + "-m" + std::to_string(m));
      runs.push_back(r);
    }
  return runs;
}

// One call of the runner's runs: what it did to each.
struct Batch {
  std::vector<size_t> runs;
  std::set<size_t> started;
  std::map<size_t, std::string> failed;  // RUN_FAILED's rank and exception
  std::map<size_t, std::deque<std::string>> lines;
  std::map<size_t, Clock::time_point> t0;
  std::optional<size_t> current;
};

struct Execution {
  const RunPlan& plan;
  std::ostream* log;
  std::ostream* notes;
  const PythonRunObserver& observer;
  PythonJudgeOptions judge;
  bool keep_dumps;
  std::vector<PlannedRun> runs;
  std::vector<std::optional<RunOutcome>> outcomes;
};

PythonJudgeOptions judge_options(const RunPlan& plan) {
  PythonJudgeOptions j;
  j.verify.check_rows = plan.request.check_rows;
  j.verify.seed = plan.request.seed;
  if (!plan.request.profile.empty()) j.judge.profile = plan.request.profile;
  j.judge.baseline = plan.baseline;
  j.ranks_per_device = plan.python.impl.placement == "all" ? plan.request.shape.world : 1;
  return j;
}

std::string source_of(const PlannedRun& r) { return "run:" + std::to_string(r.index + 1); }

void finish(Execution& x, PlannedRun& run, RunOutcome o, double seconds) {
  o.record.source = source_of(run);
  o.verdict.source = o.record.source;
  run.done = true;
  if (x.log) *x.log << result_json_line(o) << "\n" << std::flush;
  if (x.observer) x.observer(o, run.index, seconds);
  if (!x.keep_dumps) {
    std::error_code ec;
    fs::remove_all(run.dump, ec);
    if (o.record.raw.is_object()) {  // gone: the record must not name it
      o.record.raw.erase("dump");
      if (o.record.raw.contains("verify")) o.record.raw["verify"]["dump"] = "removed once verified";
    }
  }
  x.outcomes[run.index] = std::move(o);
}

// A RESULT_JSON as it arrives: verified and judged while the runner goes on with the next run.
void on_result(Execution& x, Batch& b, const nlohmann::json& body) {
  const size_t idx = size_t(body.value("run_index", 0)) - 1;
  if (idx >= x.runs.size() || x.runs[idx].done) return;
  const double seconds = b.t0.count(idx) ? seconds_since(b.t0[idx]) : body.value("seconds", 0.0);
  PlannedRun& run = x.runs[idx];
  RunOutcome o = judge_python_run(body, source_of(run), x.judge);
  if (o.verdict.context.invalid) {  // a record that could not be read still names the run it was
    o.record.shape = x.plan.request.shape;
    o.record.shape.m = run.m;
    o.record.config = run.config;
    o.record.backend = "python";
  }
  finish(x, run, std::move(o), seconds);
}

void on_line(Execution& x, Batch& b, const RunnerLine& l) {
  const size_t idx = size_t(l.body.is_object() ? l.body.value("run_index", 0) : 0) - 1;
  if (l.tag == "RUN_START") {
    b.started.insert(idx);
    b.t0[idx] = Clock::now();
    b.current = idx;
  } else if (l.tag == "RESULT_JSON") {
    on_result(x, b, l.body);
  } else if (l.tag == "RUN_FAILED" && !b.failed.count(idx)) {
    b.failed[idx] = "rank " + std::to_string(l.body.value("rank", 0)) + " raised " + l.body.value("error", "?");
  } else if (l.tag.empty() && b.current) {
    auto& q = b.lines[*b.current];
    q.push_back(l.text);
    if (q.size() > kTailLines) q.pop_front();
  }
}

std::string queue_failure_text(const std::string& cause, int attempts) {
  return std::string("SDMA queue creation failed (") + kQueueFailure +
         ", mori's anvil.cpp: the previous job's queues not yet released, or too many queues asked)" +
         (attempts ? " again after one retry and the queue wait: a process still holding SDMA queues (mori's README: "
                     "\"a leftover server holding queues\" is not fixed by waiting); "
                   : "; ") +
         cause;
}

// After a call: each of its runs without a result failed (retried once when its SDMA queues could not be created)
// or never started (left for the next call).
void settle_batch(Execution& x, Batch& b, const CallResult& r) {
  const bool any = !b.started.empty() || !b.failed.empty();
  for (size_t idx : b.runs) {
    PlannedRun& run = x.runs[idx];
    if (run.done) continue;
    if (!b.started.count(idx) && !b.failed.count(idx) && any) continue;  // another run's failure ended the call
    std::string own;
    for (const auto& l : b.lines[idx]) own += (own.empty() ? "" : " | ") + l;
    const std::string cause =
        b.failed.count(idx) ? b.failed[idx] + (own.empty() ? "" : "; its output: " + own)
        : b.started.count(idx)
            ? "the runner " + call_failure(r, x.plan.python.options.run_timeout_s)
            : "the runner ended before the run started: " + call_failure(r, x.plan.python.options.run_timeout_s);
    if (mentions_queue_failure(cause + own) && run.attempts == 0) {
      run.attempts = 1;
      if (x.notes)
        *x.notes << "gemmar: " << source_of(run) << " (" << config_label(run.config) << ", M=" << run.m
                 << "): SDMA queue creation failed (" << kQueueFailure << "); retrying it once after the queue wait\n";
      continue;
    }
    const std::string why = mentions_queue_failure(cause + own) ? queue_failure_text(cause, run.attempts) : cause;
    Shape s = x.plan.request.shape;
    s.m = run.m;
    finish(x, run, failed_python_run(s, run.config, source_of(run), why), 0);
  }
}

nlohmann::json batch_body(const Execution& x, const std::vector<size_t>& batch) {
  nlohmann::json body = runner_body(x.plan);
  for (size_t idx : batch) {
    const PlannedRun& r = x.runs[idx];
    body["runs"].push_back({{"index", r.index + 1},
                            {"m", r.m},
                            {"config", python_config_json(r.config)},
                            {"dump", fs::absolute(r.dump).string()}});
  }
  return body;
}

void run_batch(Execution& x, const std::vector<size_t>& batch, const fs::path& dir) {
  const PythonPlan& py = x.plan.python;
  Batch b;
  b.runs = batch;
  RunnerCall c{"run", batch_body(x, batch),     py.launcher, x.plan.request.shape.world,
               dir,   py.options.run_timeout_s, nullptr};
  c.on_line = [&](const RunnerLine& l) { on_line(x, b, l); };
  const CallResult r = call_and_note_end(py, c, x.notes);
  if (r.runner_error && b.started.empty()) throw_runner_error(py.options, *r.runner_error);
  settle_batch(x, b, r);
}

}  // namespace

std::vector<RunOutcome> execute_python_plan(const RunPlan& plan, std::ostream* log, std::ostream* notes,
                                            const PythonRunObserver& observer) {
  WorkDir work(plan.python.work_dir);
  const bool to_user = !plan.request.dump_dir.empty();
  const fs::path dumps = to_user ? fs::path(plan.request.dump_dir) : work.path() / "dumps";
  Execution x{plan, log, notes, observer, judge_options(plan), plan.python.options.keep_dumps || to_user, {}, {}};
  x.runs = planned_runs(plan, dumps, to_user && plan.m_values.size() * plan.configs.size() == 1);
  x.outcomes.resize(x.runs.size());
  for (;;) {
    std::vector<size_t> batch;
    for (const PlannedRun& r : x.runs)
      if (!r.done && (batch.empty() || plan.python.spawn == "once")) batch.push_back(r.index);
    if (batch.empty()) break;
    run_batch(x, batch, work.path() / "runner");
  }
  std::error_code ec;
  if (!x.keep_dumps) fs::remove(dumps, ec);  // empty by now: each run's dump went once judged
  std::vector<RunOutcome> out;
  bool failed = false;
  for (auto& o : x.outcomes) {
    for (const Finding& f : o->verdict.findings) failed = failed || f.code == "BENCHMARK_FAILED";
    out.push_back(std::move(*o));
  }
  if (failed && work.owned()) {  // the failures name their logs: keep them
    work.keep();
    if (notes) *notes << "gemmar: the runner's logs are kept in " << (work.path() / "runner").string() << "\n";
  }
  return out;
}

}  // namespace gemmar
