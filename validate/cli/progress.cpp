#include "validate/cli/progress.hpp"

#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <numeric>
#include <ostream>

namespace gemmar::cli {

namespace {

// "8 s", "1 min 20 s", "2 h 5 min".
std::string duration_text(double s) {
  char buf[40];
  if (s < 60)
    std::snprintf(buf, sizeof buf, "%.0f s", s);
  else if (s < 3600)
    std::snprintf(buf, sizeof buf, "%d min %02d s", int(s) / 60, int(s) % 60);
  else
    std::snprintf(buf, sizeof buf, "%d h %02d min", int(s) / 3600, int(s) % 3600 / 60);
  return buf;
}

std::string codes(const Verdict& v) {
  std::string s;
  for (const auto& f : v.findings)
    if (f.severity == Severity::Error && s.find(f.code) == std::string::npos) s += (s.empty() ? "" : ",") + f.code;
  return s;
}

}  // namespace

bool stderr_is_terminal() { return ::isatty(2) == 1; }

Progress::Progress(std::ostream* out, std::string command, std::vector<Unit> units, bool terminal)
    : out_(out),
      command_(std::move(command)),
      units_(std::move(units)),
      finished_(units_.size(), false),
      terminal_(terminal),
      start_(std::chrono::steady_clock::now()) {}

double Progress::seconds_left() const {
  double rate = 0, setup_rate = 0;
  if (plain_weight_ > 0) {
    rate = plain_seconds_ / plain_weight_;
    setup_rate = setup_setup_ > 0 ? std::max(0.0, setup_seconds_ - rate * setup_weight_) / setup_setup_ : 0;
  } else if (setup_weight_ + setup_setup_ > 0) {
    rate = setup_rate = setup_seconds_ / (setup_weight_ + setup_setup_);
  }
  double left = 0;
  for (size_t i = 0; i < units_.size(); ++i)
    if (!finished_[i]) left += rate * units_[i].weight + setup_rate * units_[i].setup;
  return left;
}

void Progress::finished(size_t index, const std::string& what, const Verdict& verdict, double seconds) {
  if (!out_) return;
  ++done_;
  if (index < units_.size() && !finished_[index]) {
    finished_[index] = true;
    const Unit& u = units_[index];
    (u.setup > 0 ? setup_seconds_ : plain_seconds_) += seconds;
    (u.setup > 0 ? setup_weight_ : plain_weight_) += u.weight;
    setup_setup_ += u.setup;
  }
  const size_t total = units_.size();
  const double elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
  // A plan whose later units share the first one's setup is estimated once one of them finished.
  bool plain_ahead = false;
  for (size_t i = 0; i < total; ++i) plain_ahead = plain_ahead || (!finished_[i] && units_[i].setup == 0);
  const double left = done_ < total && (plain_weight_ > 0 || !plain_ahead) ? seconds_left() : 0;
  const bool estimate = left > 0 && elapsed + left >= 5.0;
  const std::string verdict_text = verdict.pass ? "pass" : "FAIL " + codes(verdict);
  const std::string count = total ? std::to_string(done_) + "/" + std::to_string(total) : std::to_string(done_);
  char line[512];
  if (terminal_) {
    if (!header_done_) {
      std::snprintf(line, sizeof line, "%-9s %-44s %8s  %s\n", "#", "run", "seconds", "verdict");
      *out_ << command_ << ":\n" << line;
      header_done_ = true;
    }
    char secs[32] = "";
    if (seconds >= 0) std::snprintf(secs, sizeof secs, "%.2f", seconds);
    std::snprintf(line, sizeof line, "%-9s %-44s %8s  %s", count.c_str(), what.c_str(), secs, verdict_text.c_str());
    *out_ << line;
    if (estimate) *out_ << "   (" << duration_text(elapsed) << " in, about " << duration_text(left) << " left)";
  } else {
    *out_ << command_ << ": " << count << " " << what << " " << verdict_text;
    if (seconds > 0) {
      std::snprintf(line, sizeof line, " %.1fs", seconds);
      *out_ << line;
    }
    if (estimate) *out_ << ", ~" << duration_text(left) << " left";
  }
  *out_ << "\n" << std::flush;
}

PlanObserver progress_observer(Progress& progress) {
  return [&progress](const RunOutcome& o, size_t index, double seconds) {
    progress.finished(index, config_label(o.record.config) + " M=" + std::to_string(o.record.shape.m), o.verdict,
                      seconds);
  };
}

std::vector<Progress::Unit> plan_units(const RunPlan& plan) {
  std::vector<Progress::Unit> units;
  for (int64_t m : plan.m_values)
    for (size_t i = 0; i < plan.configs.size(); ++i)
      units.push_back({double(m) * (has_collective(plan.configs[i].mode) ? 1.0 : 1.0 / 3),
                       i == 0 && plan.configs.size() > 1 ? double(m) : 0.0});
  return units;
}

}  // namespace gemmar::cli
