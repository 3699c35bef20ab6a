// gemmar report RESULTS... --out DIR (docs/spec.md section 4). This side reads every results file and normalises
// it into one document (validate/cli/report_inputs.hpp: runs, per-config aggregates, models, sweeps, skipped
// records); the figures and the pages are drawn from that document alone by the Python package
// reports/gemmar_report under Debian's python3 + matplotlib, started without a shell into a temp directory
// beside --out. The directory is renamed into place only when the whole report was written.
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/atomic_file.hpp"
#include "common/errors.hpp"
#include "common/json_text.hpp"
#include "validate/cli/cli.hpp"
#include "validate/cli/data_dir.hpp"
#include "validate/cli/report_inputs.hpp"
#include "validate/cli/report_timeline.hpp"
#include "validate/record/python_json.hpp"
#include "validate/record/run_record.hpp"

extern char** environ;

namespace gemmar::cli {
namespace {
namespace fs = std::filesystem;

// The script's own exit codes, chosen apart from Python's (1: uncaught exception, 2: argparse).
constexpr int kScriptBadInput = 10;
constexpr int kScriptEnvironment = 11;

std::string env_or(const char* name, const std::string& fallback) {
  const char* v = std::getenv(name);
  return (v && *v) ? std::string(v) : fallback;
}

struct ChildResult {
  int exit_code = -1;  // -1 when killed by a signal
  int signal = 0;
  std::string output;  // stdout and stderr together (stdout is ours to keep clean for --json)
};

// posix_spawn (no shell: paths with spaces or quotes reach the script as they are).
ChildResult run_child(const std::vector<std::string>& argv) {
  int fds[2];
  if (::pipe(fds) != 0) throw EnvironmentError(std::string("cannot create a pipe: ") + std::strerror(errno));
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addclose(&actions, fds[0]);
  posix_spawn_file_actions_adddup2(&actions, fds[1], STDOUT_FILENO);
  posix_spawn_file_actions_adddup2(&actions, fds[1], STDERR_FILENO);
  posix_spawn_file_actions_addclose(&actions, fds[1]);
  std::vector<char*> cargv;
  for (const auto& a : argv) cargv.push_back(const_cast<char*>(a.c_str()));
  cargv.push_back(nullptr);
  // MPLBACKEND: no display is ever needed; the script also selects Agg itself.
  std::vector<std::string> env_store;
  for (char** e = environ; e && *e; ++e)
    if (std::strncmp(*e, "MPLBACKEND=", 11) != 0) env_store.emplace_back(*e);
  env_store.emplace_back("MPLBACKEND=Agg");
  std::vector<char*> cenv;
  for (auto& e : env_store) cenv.push_back(e.data());
  cenv.push_back(nullptr);
  pid_t pid = 0;
  const int rc = ::posix_spawn(&pid, cargv[0], &actions, nullptr, cargv.data(), cenv.data());
  posix_spawn_file_actions_destroy(&actions);
  ::close(fds[1]);
  if (rc != 0) {
    ::close(fds[0]);
    throw EnvironmentError("cannot run the report interpreter " + argv[0] + ": " + std::strerror(rc) +
                           " (set GEMMAR_PYTHON to a python3 with matplotlib)");
  }
  ChildResult res;
  char buf[4096];
  for (;;) {
    const ssize_t n = ::read(fds[0], buf, sizeof buf);
    if (n > 0) {
      res.output.append(buf, size_t(n));
    } else if (n == 0 || errno != EINTR) {
      break;
    }
  }
  ::close(fds[0]);
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  if (WIFEXITED(status)) res.exit_code = WEXITSTATUS(status);
  if (WIFSIGNALED(status)) res.signal = WTERMSIG(status);
  return res;
}

// The last non-empty line: the script writes its one-line error last, after any library warnings. Its own
// "gemmar report: " prefix is dropped (main() adds it once).
std::string last_line(const std::string& s) {
  size_t end = s.find_last_not_of("\r\n \t");
  if (end == std::string::npos) return "";
  const size_t begin = s.rfind('\n', end);
  std::string line =
      s.substr(begin == std::string::npos ? 0 : begin + 1, end - (begin == std::string::npos ? 0 : begin + 1) + 1);
  const std::string prefix = "gemmar report: ";
  if (line.rfind(prefix, 0) == 0) line = line.substr(prefix.size());
  return line;
}

// "out/" and "out/." name the directory "out".
fs::path normal_dir(const std::string& s) {
  fs::path p = fs::path(s).lexically_normal();
  if (!p.has_filename() && p.has_parent_path()) p = p.parent_path();
  return p;
}

po::options_description report_options_description() {
  po::options_description desc("gemmar report options");
  desc.add_options()(
      "results", po::value<std::vector<std::string>>()->multitoken(),
      "results files: gemmar run / benchmark logs (RESULT_JSON lines), gemmar check --json, gemmar model "
      "[sweep] --json, gemmar validate's results.json (kind detected per file)")(
      "out", po::value<std::string>(),
      "report directory to write (new, empty, or a previous gemmar output with --force)")(
      "force", po::bool_switch()->default_value(false), "replace --out when it holds a previous gemmar output")(
      "max-line-bytes", po::value<size_t>()->default_value(size_t(1) << 20), "longest log line read as a record")(
      "quiet", po::bool_switch()->default_value(false), "print nothing on success (used by gemmar validate)")(
      "trace", po::value<std::vector<std::string>>(),
      "kernel trace ([RUN=]FILE, repeatable): rocprofv3 CSV or Chrome-trace JSON; its kernels become the run's "
      "timeline (RUN: the run's source or 1-based index)");
  add_common_options(desc);
  return desc;
}

// The script that draws the report (run_report.py in the reports directory), after checking that `python` runs
// and the package is complete.
fs::path report_runner(const std::string& python) {
  const DataLocation reports = locate(DataItem::Reports);
  const fs::path& reports_dir = reports.path;
  const fs::path runner = reports_dir / "run_report.py";
  if (::access(python.c_str(), X_OK) != 0)
    throw EnvironmentError("report interpreter '" + python +
                           "' not found or not executable (GEMMAR_PYTHON; "
                           "install python3-matplotlib for /usr/bin/python3)");
  std::error_code ec;
  if (!fs::is_regular_file(runner, ec) || !fs::is_regular_file(reports_dir / "gemmar_report" / "__init__.py", ec))
    throw EnvironmentError("report package not found in '" + reports_dir.string() + "' (chosen by " +
                           reports.chosen_by +
                           "; it needs run_report.py and gemmar_report/: install gemmar "
                           "with cmake --install or its .deb, or set GEMMAR_REPORTS_DIR)");
  return runner;
}

// An input beside --out (gemmar validate's results.json, read from its temp directory) is named relative to
// --out, so that the page stays right once the directory is renamed into place.
std::vector<std::string> display_names(const std::vector<std::string>& results, const fs::path& out) {
  std::vector<std::string> names;
  for (const auto& r : results) {
    const fs::path rel = fs::absolute(r).lexically_normal().lexically_relative(fs::absolute(out).lexically_normal());
    const bool beside =
        !rel.empty() && rel.begin() != rel.end() && *rel.begin() == ".." && std::distance(rel.begin(), rel.end()) == 2;
    names.push_back(beside ? rel.string() : r);
  }
  return names;
}

// Draws the figures and pages of report.json into `dir`; returns the script's manifest.json.
nlohmann::json draw_report(const std::string& python, const fs::path& runner, const fs::path& doc_path,
                           const fs::path& dir) {
  // -I: ignore PYTHON* variables and the user's site-packages (another interpreter's environment must not
  // leak in); -B: no __pycache__ written into the source tree.
  const std::vector<std::string> argv{python, "-I", "-B", runner.string(), doc_path.string(), "--out", dir.string()};
  const ChildResult child = run_child(argv);
  const std::string msg = last_line(child.output);
  if (child.signal != 0) throw EnvironmentError("report script killed by signal " + std::to_string(child.signal));
  if (child.exit_code == kScriptBadInput) throw EnvironmentError("report document rejected by the script: " + msg);
  if (child.exit_code == kScriptEnvironment) throw EnvironmentError(msg);
  if (child.exit_code != 0)
    throw EnvironmentError("report script failed (exit " + std::to_string(child.exit_code) + "): " + msg);

  nlohmann::json manifest;
  std::ifstream in(dir / "manifest.json");
  if (!in) throw EnvironmentError("report script wrote no manifest.json in " + dir.string());
  try {
    in >> manifest;
  } catch (const nlohmann::json::exception& e) {
    throw EnvironmentError("report manifest.json unreadable: " + std::string(e.what()));
  }
  return manifest;
}

void print_report(const nlohmann::json& doc, const nlohmann::json& manifest, const fs::path& out) {
  const auto& s = doc["summary"];
  std::cout << "report: " << (out / "index.html").string() << "  (" << s["runs"].get<size_t>() << " runs in "
            << s["groups"].get<size_t>() << " config groups, " << s["fail"].get<size_t>() << " failing, "
            << s["skipped"].get<size_t>() << " records skipped)\n";
  for (const auto& f : manifest.value("figures", nlohmann::json::array()))
    std::cout << "  figure  " << (out / f.get<std::string>()).string() << "\n";
  for (const auto& sk : manifest.value("skipped", nlohmann::json::array()))
    std::cout << "  not drawn " << sk.value("figure", "") << ": " << sk.value("reason", "") << "\n";
  size_t shown = 0;
  for (const auto& sk : doc["skipped"]) {
    if (shown++ == 10) {
      std::cout << "  ... " << (doc["skipped"].size() - 10) << " more skipped records listed in "
                << (out / "runs.html").string() << "\n";
      break;
    }
    std::cout << "  skipped record " << sk["source"].get<std::string>() << ": " << sk["reason"].get<std::string>()
              << "\n";
  }
}

}  // namespace

int cmd_report(const Args& args) {
  po::options_description desc = report_options_description();
  po::positional_options_description pos;
  pos.add("results", -1);
  po::variables_map vm;
  if (!parse(
          args, desc, vm, std::cout,
          "gemmar report RESULTS... --out DIR [--force] [--trace [RUN=]FILE]... [--json]\n"
          "  env GEMMAR_PYTHON (default /usr/bin/python3), GEMMAR_REPORTS_DIR (default <exe>/../share/gemmar/reports)",
          &pos))
    return kExitOk;
  GEMMAR_USAGE_CHECK(vm.count("results") && !vm["results"].as<std::vector<std::string>>().empty(),
                     "RESULTS: give at least one results file (see --help)");
  GEMMAR_USAGE_CHECK(vm.count("out") && !vm["out"].as<std::string>().empty(),
                     "--out: the report directory is required");
  const auto results = vm["results"].as<std::vector<std::string>>();
  const fs::path out = normal_dir(vm["out"].as<std::string>());
  report::ReadOptions ro;
  ro.max_line_bytes = vm["max-line-bytes"].as<size_t>();
  GEMMAR_USAGE_CHECK(ro.max_line_bytes >= 64, "--max-line-bytes: ", ro.max_line_bytes, " is too small (>= 64)");

  // Before any work: --out must not destroy what gemmar did not write, nor an input.
  OutputDirCheck oc;
  oc.force = vm["force"].as<bool>();
  for (const auto& r : results) oc.inputs.emplace_back(r);
  if (vm.count("trace"))
    for (const auto& t : vm["trace"].as<std::vector<std::string>>()) oc.inputs.emplace_back(t.substr(t.find('=') + 1));
  check_output_dir(out, oc);
  const std::string python = env_or("GEMMAR_PYTHON", "/usr/bin/python3");
  const fs::path runner = report_runner(python);

  ro.display_names = display_names(results, out);
  if (vm.count("trace")) ro.traces = vm["trace"].as<std::vector<std::string>>();
  // Every input read and normalised here; bad records are skipped and listed, unreadable files are exit 2.
  const nlohmann::json doc = report::build_report_document(results, ro);
  AtomicDirectory dir(out, "gemmar report");
  const fs::path doc_path = dir.path() / "report.json";
  write_file_atomic(doc_path, dump_python_json(doc) + "\n");
  report::write_timelines(doc, dir.path());
  const nlohmann::json manifest = draw_report(python, runner, doc_path, dir.path());
  dir.commit();

  if (vm["quiet"].as<bool>()) return kExitOk;
  if (vm["json"].as<bool>()) {
    nlohmann::json j = manifest;
    j["out"] = out.string();
    j["index"] = (out / "index.html").string();
    j["skipped_records"] = doc["skipped"];
    j["summary"] = doc["summary"];
    std::cout << json_text(j, 2) << "\n";
  } else {
    print_report(doc, manifest, out);
  }
  return kExitOk;
}

}  // namespace gemmar::cli
