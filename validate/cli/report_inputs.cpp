#include "validate/cli/report_inputs.hpp"

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <optional>
#include <set>
#include <sstream>
#include <streambuf>
#include <utility>

#include "common/config.hpp"
#include "common/config_fields.hpp"
#include "common/errors.hpp"
#include "common/stats.hpp"
#include "validate/cli/report_model.hpp"
#include "validate/cli/report_timeline.hpp"
#include "validate/record/log_reader.hpp"
#include "validate/record/python_json.hpp"
#include "validate/record/run_record.hpp"
#include "validate/record/trace_reader.hpp"

namespace gemmar::report {
namespace {
namespace fs = std::filesystem;
using json = nlohmann::json;
using Phases = std::vector<std::pair<std::string, double>>;

// ---------------------------------------------------------------------------------------------------------
// Field readers for what the record layer does not read (verdict, findings, model, floors): a wrong type is
// a UsageError naming the field, which skips the record it belongs to.

[[noreturn]] void bad(const std::string& where, const std::string& field, const std::string& what) {
  throw UsageError(where + ": field '" + field + "' " + what);
}

bool present(const json& j, const char* key) { return j.is_object() && j.contains(key) && !j.at(key).is_null(); }

std::optional<double> opt_number(const json& j, const char* key, const std::string& where,
                                 const std::string& prefix = "") {
  if (!present(j, key)) return std::nullopt;
  const json& v = j.at(key);
  if (!v.is_number()) bad(where, prefix + key, std::string("must be a number, got ") + v.type_name());
  return v.get<double>();
}

std::optional<std::string> opt_string(const json& j, const char* key) {
  if (!present(j, key) || !j.at(key).is_string()) return std::nullopt;
  return j.at(key).get<std::string>();
}

size_t phase_rank(const std::string& name) {
  const auto& order = all_phase_names();
  const auto it = std::find(order.begin(), order.end(), name);
  return size_t(it - order.begin());
}

void sort_phases(Phases& p) {
  std::stable_sort(p.begin(), p.end(), [](const auto& a, const auto& b) {
    const size_t ra = phase_rank(a.first), rb = phase_rank(b.first);
    return ra != rb ? ra < rb : a.first < b.first;
  });
}

// {"gemm": 441.9, ...} (null = phase absent) or [{"name": "gemm", "us": 441.9, ...}, ...].
Phases read_phases(const json& v, const std::string& where, const std::string& field) {
  Phases out;
  if (v.is_null()) return out;
  if (v.is_object()) {
    for (auto it = v.begin(); it != v.end(); ++it) {
      if (it->is_null()) continue;
      if (!it->is_number()) bad(where, field + "." + it.key(), std::string("must be a number, got ") + it->type_name());
      out.emplace_back(it.key(), it->get<double>());
    }
  } else if (v.is_array()) {
    for (size_t i = 0; i < v.size(); ++i) {
      const json& p = v[i];
      const std::string f = field + "[" + std::to_string(i) + "]";
      if (!p.is_object()) bad(where, f, "must be an object {name, us}");
      const auto name = opt_string(p, "name");
      if (!name) bad(where, f + ".name", "is missing or not a string");
      const auto us = opt_number(p, "us", where, f + ".");
      if (!us) bad(where, f + ".us", "is missing");
      auto hit = std::find_if(out.begin(), out.end(), [&](const auto& e) { return e.first == *name; });
      if (hit == out.end())
        out.emplace_back(*name, *us);
      else
        hit->second += *us;
    }
  } else {
    bad(where, field, std::string("must be an object or a list of phases, got ") + v.type_name());
  }
  sort_phases(out);
  return out;
}

json phases_json(const Phases& p) {
  json a = json::array();
  for (const auto& [name, us] : p) a.push_back({name, us});
  return a;
}

struct Model {
  std::optional<double> total_us, lower_bound_us;
  Phases phases;
  std::string from;  // where it came from, shown on the page
  std::string profile;
  json extra = json::object();  // gemmar's own model: phase_detail, in_server_us, notes
};

std::optional<Model> read_model(const json& m, const std::string& where, const std::string& field,
                                const std::string& from) {
  if (m.is_null()) return std::nullopt;
  if (!m.is_object()) bad(where, field, std::string("must be an object, got ") + m.type_name());
  Model out;
  out.total_us = opt_number(m, "total_us", where, field + ".");
  out.lower_bound_us = opt_number(m, "lower_bound_us", where, field + ".");
  if (m.contains("phases")) out.phases = read_phases(m.at("phases"), where, field + ".phases");
  if (m.contains("phases") && m.at("phases").is_array()) out.extra["phase_detail"] = m.at("phases");
  out.profile = opt_string(m, "profile").value_or("");
  out.from = from;
  return out;
}

json model_json(const Model& m) {
  json j = {{"total_us", m.total_us ? json(*m.total_us) : json(nullptr)},
            {"lower_bound_us", m.lower_bound_us ? json(*m.lower_bound_us) : json(nullptr)},
            {"phases", phases_json(m.phases)},
            {"from", m.from}};
  if (!m.profile.empty()) j["profile"] = m.profile;
  for (auto it = m.extra.begin(); it != m.extra.end(); ++it) j[it.key()] = it.value();
  return j;
}

json read_findings(const json& v, const std::string& where) {
  json out = json::array();
  if (v.is_null()) return out;
  if (!v.is_array()) bad(where, "findings", std::string("must be a list, got ") + v.type_name());
  for (size_t i = 0; i < v.size(); ++i) {
    const json& f = v[i];
    if (f.is_string()) {
      out.push_back({{"code", f}, {"severity", ""}, {"message", ""}});
      continue;
    }
    const std::string field = "findings[" + std::to_string(i) + "]";
    if (!f.is_object()) bad(where, field, "must be an object {code, severity, message}");
    const auto code = opt_string(f, "code");
    if (!code) bad(where, field + ".code", "is missing or not a string");
    out.push_back({{"code", *code},
                   {"severity", opt_string(f, "severity").value_or("")},
                   {"message", opt_string(f, "message").value_or(opt_string(f, "sentence").value_or(""))}});
  }
  return out;
}

// "pass" / "fail" from a string, a bool, or an object {"verdict"|"pass", "findings"}.
std::optional<std::string> read_verdict(const json& v, const std::string& where, json* findings) {
  if (v.is_null()) return std::nullopt;
  if (v.is_boolean()) return v.get<bool>() ? "pass" : "fail";
  if (v.is_string()) {
    const std::string s = v.get<std::string>();
    if (s != "pass" && s != "fail") bad(where, "verdict", "must be \"pass\" or \"fail\", got \"" + s + "\"");
    return s;
  }
  if (v.is_object()) {
    if (findings && v.contains("findings")) *findings = read_findings(v.at("findings"), where);
    const json inner = v.contains("verdict") ? v.at("verdict") : (v.contains("pass") ? v.at("pass") : json(nullptr));
    return read_verdict(inner, where, nullptr);
  }
  bad(where, "verdict", std::string("must be \"pass\"/\"fail\" or an object, got ") + v.type_name());
}

// ---------------------------------------------------------------------------------------------------------

struct Run {
  std::string source;
  RunRecord rec;
  std::optional<std::string> verdict;
  json findings = json::array();
  std::optional<Model> model;
  std::optional<double> floor, floor_stderr;
  std::string floor_from;
  std::optional<double> band_lo, band_hi;
  std::string profile, profile_from;
  std::string machine, machine_from;  // the device the run ran on ("" when no input names it)
  Config eff;
  std::string label;
  size_t group = 0;
  json trace;  // trace_iteration() of the --trace attached to it
};

struct ModelDoc {
  std::string source;
  Model model;
  std::string label;           // config label, empty when the document names no config
  std::optional<Shape> shape;  // absent when the document names none
  int pull_blocks = 64;        // the grid it was predicted for (matters on the pull wire only)
  json config;
  size_t used_by = 0;
  // A `gemmar model --json` file the user gave (it wins over gemmar's model of the runs), not the predictions a
  // results document carries beside its runs (validate's model_predictions: gemmar's model of each run wins).
  bool given = true;
  size_t covers = 0;  // groups of its config and shape whose model gemmar computed instead (not given)
};

struct Sweep {
  json j;
};

// The runs of one config and shape.
struct Group {
  std::string label;
  Config eff;
  Config cfg;
  std::optional<int> pull;
  Shape shape;
  std::vector<size_t> runs;
  std::string machine, profile;
};

// A trace fits a config when every phase it shows is one the config runs and every phase only a kernel can run is
// there (copy-engine legs may be missing from a kernel trace): the rule `gemmar check --trace` attaches by.
bool trace_fits(const std::set<std::string>& trace, const std::vector<std::string>& config) {
  if (trace.empty()) return false;
  for (const auto& p : trace)
    if (std::find(config.begin(), config.end(), p) == config.end()) return false;
  for (const char* k : {"gemm", "reduce", "quantize", "dequantize", "pull", "allreduce"})
    if (std::find(config.begin(), config.end(), k) != config.end() && !trace.count(k)) return false;
  return true;
}

std::string join_names(const std::set<std::string>& s) {
  std::string out;
  for (const auto& x : s) out += (out.empty() ? "" : ", ") + x;
  return out.empty() ? "none" : out;
}

std::string strip_source(const std::string& msg, const std::string& source) {
  if (msg.rfind(source + ": ", 0) == 0) return msg.substr(source.size() + 2);
  return msg;
}

// A config document's fields through the field table (common/config_fields.hpp); none when it names no mode or
// holds a field the table refuses.
std::optional<Config> config_from_json(const json& c) {
  if (!c.is_object() || !present(c, "mode") || !c.at("mode").is_string()) return std::nullopt;
  Config cfg;
  try {
    gemmar::config_from_json(c, "config", cfg);
  } catch (const UsageError&) {
    return std::nullopt;
  }
  return cfg;
}

std::optional<Shape> shape_from_json(const json& s) {
  if (!s.is_object()) return std::nullopt;
  Shape sh;
  for (const char* k : {"m", "n", "k", "world"})
    if (!present(s, k) || !s.at(k).is_number_integer()) return std::nullopt;
  sh.m = s.at("m").get<int64_t>();
  sh.n = s.at("n").get<int64_t>();
  sh.k = s.at("k").get<int64_t>();
  sh.world = int(s.at("world").get<int64_t>());
  return sh;
}

// Drops ANSI escape sequences (CSI "ESC [ ... final", and two-byte "ESC x") from a stream: coloured logs
// keep their RESULT_JSON lines readable. The state survives across buffer refills.
// ---------------------------------------------------------------------------------------------------------

class Builder {
 public:
  explicit Builder(const ReadOptions& o) : opt_(o) {}

  // `path` is opened; `name` is what the page and the messages call it.
  void read_file(const std::string& path, const std::string& name) {
    std::error_code ec;
    if (!fs::exists(path, ec)) throw UsageError(name + ": no such file");
    if (!fs::is_regular_file(path, ec)) throw UsageError(name + ": not a regular file");
    std::ifstream in(path, std::ios::binary);
    if (!in) throw UsageError(name + ": cannot be read (" + std::strerror(errno) + ")");
    // A whole-file JSON document (check / validate / model output) starts with '{'; anything else is a log.
    char c = 0;
    bool any = false;
    while (in.get(c)) {
      if (!std::isspace(static_cast<unsigned char>(c))) {
        any = true;
        break;
      }
    }
    if (!any) throw UsageError(name + ": empty file (expected RESULT_JSON lines or a gemmar JSON document)");
    in.clear();
    in.seekg(0);
    if (c == '{') {
      std::ostringstream ss;
      ss << in.rdbuf();
      json doc;
      bool parsed = false;
      try {
        doc = parse_python_json(ss.str());
        parsed = true;
      } catch (const json::exception&) {
        // One JSON object per line (a log of bare records) or a broken document: read as a log below.
      }
      if (parsed) {
        read_document(doc, name);
        return;
      }
      in.clear();
      in.seekg(0);
    }
    read_log(in, name);
  }

  json finish();

 private:
  // The steps of finish().
  void borrow_floors();
  std::vector<Group> make_groups() const;
  ModelDoc* doc_model_for(const Group&, bool given);
  void attach_traces();
  std::string series(const std::string& machine, const std::string& profile, const std::string& label) const;
  json speedup(const std::vector<Group>&, const json& jgroups, size_t index) const;
  json aggregate(const std::vector<size_t>& runs) const;
  json group_phases(const Group&) const;
  std::optional<Model> group_model(const Group&);
  json group_json(const Group&, size_t index);
  void put_where_the_time_went(json& jg, const Group&) const;
  json configs_json(const std::vector<Group>&, const std::vector<size_t>& order) const;
  json run_json(size_t index) const;
  json models_json();
  json placements_json() const;

  void add_skipped(const std::string& source, const std::string& reason) {
    skipped_.push_back({{"source", source}, {"reason", strip_source(reason, source)}});
  }

  void read_log(std::istream& in, const std::string& path) {
    // The record layer's reader strips colours and merges the lines every rank printed for one run.
    LogReadOptions lo;
    lo.max_line_bytes = opt_.max_line_bytes;
    hint_ = machine_hint(in, path);
    size_t runs = 0, skipped = 0;
    const LogReadStats st = gemmar::read_log(
        in, path,
        [&](LogEntry&& e) {
          if (!e.record) {
            add_skipped(e.source, e.error.empty() ? "not a run record" : e.error);
            ++skipped;
            return;
          }
          if (add_run(std::move(*e.record), e.raw, json::object(), e.source))
            ++runs;
          else
            ++skipped;
        },
        lo);
    hint_.reset();
    const size_t duplicates = size_t(st.rank_duplicates);
    if (runs == 0 && skipped == 0 && duplicates == 0)
      throw UsageError(path + ": no RESULT_JSON lines and no JSON run objects (not a results file)");
    if (duplicates)
      notes_.push_back(path + ": " + std::to_string(duplicates) +
                       " RESULT_JSON line(s) repeat an earlier record exactly (the same run printed by several "
                       "ranks) and are counted once");
    inputs_.push_back({{"file", path},
                       {"kind", "log (RESULT_JSON lines)"},
                       {"runs", runs},
                       {"skipped", skipped},
                       {"models", 0},
                       {"sweeps", 0},
                       {"duplicates", duplicates}});
  }

  void read_document(const json& doc, const std::string& path) {
    if (!doc.is_object())
      throw UsageError(path + ": a JSON " + std::string(doc.type_name()) + ", not a gemmar results document");
    size_t runs = 0, skipped = 0, models = 0, sweeps = 0;
    std::string kind;
    if (doc.contains("runs") || doc.contains("model_sweeps")) {
      kind = (doc.contains("model_sweeps") || doc.contains("model_predictions") || doc.contains("machine"))
                 ? "validate results"
                 : "check --json";
      const json& rs = doc.contains("runs") ? doc.at("runs") : json::array();
      if (!rs.is_array()) throw UsageError(path + ": field 'runs' must be a list, got " + rs.type_name());
      for (size_t i = 0; i < rs.size(); ++i) (read_doc_run(rs[i], path, i) ? runs : skipped)++;
      if (doc.contains("model_sweeps") && doc.at("model_sweeps").is_array()) {
        const json& sw = doc.at("model_sweeps");
        for (size_t i = 0; i < sw.size(); ++i) {
          const std::string where = path + ": model_sweeps[" + std::to_string(i) + "]";
          try {
            add_sweep(sw[i], where);
            ++sweeps;
          } catch (const UsageError& e) {
            add_skipped(where, e.what());
            ++skipped;
          }
        }
      }
      if (doc.contains("model_predictions") && doc.at("model_predictions").is_array()) {
        const json& mp = doc.at("model_predictions");
        const std::string profile = opt_string(doc, "profile").value_or("");
        for (size_t i = 0; i < mp.size(); ++i) {
          const std::string where = path + ": model_predictions[" + std::to_string(i) + "]";
          try {
            add_model(mp[i], where, profile, false);
            ++models;
          } catch (const UsageError& e) {
            add_skipped(where, e.what());
            ++skipped;
          }
        }
      }
      if (present(doc, "profile")) {
        if (doc.at("profile").is_string())
          profile_names_.insert(doc.at("profile").get<std::string>());
        else
          profile_objects_.push_back({{"source", path}, {"value", doc.at("profile")}});
      }
      if (present(doc, "machine")) machines_.push_back({{"source", path}, {"value", doc.at("machine")}});
    } else if (doc.contains("points")) {
      kind = "model sweep --json";
      add_sweep(doc, path);  // a whole-file document that is wrong cannot be read at all: exit 2
      sweeps = 1;
    } else if (doc.contains("mode") || doc.contains("world_size")) {
      kind = "run record";
      try {
        RunRecord r = run_record_from_json(doc, path);
        (add_run(std::move(r), doc, json::object(), path) ? runs : skipped)++;
      } catch (const UsageError& e) {
        add_skipped(path, e.what());
        ++skipped;
      }
    } else if (doc.contains("phases") && (doc.contains("total_us") || doc.contains("lower_bound_us"))) {
      kind = "model --json";
      add_model(doc, path, "");
      models = 1;
    } else {
      throw UsageError(path +
                       ": a JSON document of no known kind (expected RESULT_JSON lines, a run record, "
                       "{\"runs\": ...}, a model or a model sweep)");
    }
    inputs_.push_back({{"file", path},
                       {"kind", kind},
                       {"runs", runs},
                       {"skipped", skipped},
                       {"models", models},
                       {"sweeps", sweeps},
                       {"duplicates", 0}});
  }

  // runs[i] of check / validate output: {source, verdict, findings, record, context}.
  bool read_doc_run(const json& r, const std::string& path, size_t i) {
    const std::string where = path + ": runs[" + std::to_string(i) + "]";
    if (!r.is_object()) {
      add_skipped(where, std::string("expected a JSON object, got ") + r.type_name());
      return false;
    }
    const std::string inner = opt_string(r, "source").value_or("");
    const std::string source = inner.empty() ? where : inner;
    const std::string shown = inner.empty() ? where : where + " (" + inner + ")";
    const json* rec = present(r, "record") ? &r.at("record") : (present(r, "mode") ? &r : nullptr);
    if (!rec) {
      std::string why = "no record";
      if (r.contains("findings") && r.at("findings").is_array() && !r.at("findings").empty() &&
          r.at("findings")[0].is_object())
        why = opt_string(r.at("findings")[0], "message").value_or(why);
      add_skipped(shown, strip_source(why, inner));
      return false;
    }
    try {
      RunRecord rr = run_record_from_json(*rec, source);
      json over = json::object();
      for (const char* k : {"verdict", "findings"})
        if (r.contains(k) && rec != &r) over[k] = r.at(k);
      if (r.contains("context")) over["context"] = r.at("context");
      return add_run(std::move(rr), *rec, over, source, shown);
    } catch (const UsageError& e) {
      add_skipped(shown, strip_source(e.what(), source));
      return false;
    }
  }

  // One run: the record plus what producers add (verdict, findings, model, floors), `over` from the
  // check/validate entry around it (its verdict, findings and context win). False (and skipped) when one
  // of those fields has the wrong type.
  bool add_run(RunRecord&& rec, const json& raw, const json& over, const std::string& source,
               const std::string& shown = "") {
    Run run;
    run.source = source;
    try {
      json findings = json::array();
      run.verdict = read_verdict(raw.contains("verdict") ? raw.at("verdict") : json(nullptr), source, &findings);
      if (raw.contains("findings")) {
        json f = read_findings(raw.at("findings"), source);
        findings.insert(findings.end(), f.begin(), f.end());
      }
      if (over.contains("verdict")) run.verdict = read_verdict(over.at("verdict"), source, nullptr);
      if (over.contains("findings")) findings = read_findings(over.at("findings"), source);
      run.findings = findings;
      run.model = read_model(raw.contains("model") ? raw.at("model") : json(nullptr), source, "model", "the run's own");
      const json floors =
          present(raw, "floor") ? raw.at("floor") : (present(raw, "floors") ? raw.at("floors") : json());
      const json ctx = over.contains("context") && over.at("context").is_object() ? over.at("context") : json::object();
      const json cfloors =
          present(ctx, "floors") ? ctx.at("floors") : (present(ctx, "floor") ? ctx.at("floor") : json());
      const std::string wire = to_string(effective_config(rec.config).gather_dtype);
      auto take_floor = [&](const json& f, const std::string& field, const std::string& from) {
        if (run.floor || f.is_null()) return;
        if (!f.is_object()) bad(source, field, std::string("must be an object {bf16, fp8}, got ") + f.type_name());
        if (auto x = opt_number(f, wire.c_str(), source, field + ".")) {
          run.floor = x;
          run.floor_stderr = opt_number(f, (wire + "_stderr").c_str(), source, field + ".");
          run.floor_from = from;
        }
      };
      take_floor(floors, "floor", "the run's own");
      take_floor(cfloors, "context.floors", "the verdict's context");
      if (!run.model && present(ctx, "model"))
        run.model = read_model(ctx.at("model"), source, "context.model", "the verdict's context");
      if (present(ctx, "numerics") && ctx.at("numerics").is_object()) {
        const json& num = ctx.at("numerics");
        run.band_lo = opt_number(num, "lower", source, "context.numerics.");
        run.band_hi = opt_number(num, "upper", source, "context.numerics.");
        if (!run.floor) {
          if (auto e = opt_number(num, "expected_floor", source, "context.numerics.")) {
            run.floor = e;
            run.floor_from = "the verdict's context";
          }
        }
      }
      place_run(run, rec, opt_string(ctx, "profile").value_or(""));
    } catch (const UsageError& e) {
      add_skipped(shown.empty() ? source : shown, e.what());
      return false;
    }
    if (!run.profile.empty()) profile_names_.insert(run.profile);
    run.eff = effective_config(rec.config);
    run.label = config_label(rec.config);
    if (rec.pull_blocks && has_pull(run.eff)) run.label += " pull=" + std::to_string(*rec.pull_blocks);
    if (rec.chunks && run.eff.mode == Mode::FusedSdma) {  // a chunks sweep: each count is a config of its own
      Config mori_default = rec.config;
      mori_default.chunks = 0;
      if (*rec.chunks != effective_chunks(rec.shape, mori_default))
        run.label += " chunks=" + std::to_string(*rec.chunks);
    }
    run.rec = std::move(rec);
    runs_.push_back(std::move(run));
    return true;
  }

  void add_model(const json& doc, const std::string& where, const std::string& profile, bool given = true) {
    if (!doc.is_object()) throw UsageError(where + ": a model must be a JSON object");
    auto m = read_model(doc, where, "model", "model document " + where);
    if (m->phases.empty()) throw UsageError(where + ": field 'phases': a model needs at least one phase");
    if (m->profile.empty()) m->profile = profile;
    ModelDoc d;
    d.given = given;
    d.source = where;
    d.model = *m;
    d.shape = shape_from_json(doc.contains("shape") ? doc.at("shape") : json());
    const json cfg = doc.contains("config") ? doc.at("config") : json();
    if (auto c = config_from_json(cfg)) {
      d.label = config_label(*c);
      d.pull_blocks = c->pull_blocks;
      d.config = cfg;
    } else if (cfg.is_string()) {
      d.label = cfg.get<std::string>();  // validate's model_predictions name the config by its label
      d.config = cfg;
    } else if (cfg.is_object() && cfg.contains("label") && cfg.at("label").is_string()) {
      d.label = cfg.at("label").get<std::string>();
      d.config = cfg;
    }
    if (!d.model.profile.empty()) profile_names_.insert(d.model.profile);
    models_.push_back(std::move(d));
  }

  void add_sweep(const json& doc, const std::string& where) {
    if (!doc.is_object()) throw UsageError(where + ": a sweep must be a JSON object");
    const json& pts = doc.contains("points") ? doc.at("points") : json();
    if (!pts.is_array() || pts.empty())
      throw UsageError(where + ": field 'points': expected a non-empty list of {value, total_us}");
    json points = json::array();
    for (size_t i = 0; i < pts.size(); ++i) {
      const std::string f = "points[" + std::to_string(i) + "]";
      if (!pts[i].is_object()) bad(where, f, "must be an object {value, total_us}");
      std::optional<double> v = opt_number(pts[i], "value", where, f + ".");
      if (!v) v = opt_number(pts[i], "pull_blocks", where, f + ".");
      const auto t = opt_number(pts[i], "total_us", where, f + ".");
      if (!v || !t) bad(where, f, "needs value and total_us");
      points.push_back({*v, *t});
    }
    std::sort(points.begin(), points.end(),
              [](const json& a, const json& b) { return a[0].get<double>() < b[0].get<double>(); });
    json s = {{"source", where},
              {"param", opt_string(doc, "param").value_or("pull-blocks")},
              {"points", points},
              {"optimum", nullptr},
              {"band", nullptr},
              {"m", nullptr},
              {"config", nullptr},
              {"config_match", nullptr},
              {"profile", opt_string(doc, "profile").value_or("")}};
    if (present(doc, "optimum") && doc.at("optimum").is_object()) {
      const json& o = doc.at("optimum");
      if (auto v = opt_number(o, "value", where, "optimum.")) s["optimum"] = *v;
      if (present(o, "band")) {
        const json& b = o.at("band");
        if (!(b.is_array() && b.size() == 2 && b[0].is_number() && b[1].is_number()))
          bad(where, "optimum.band", "must be [lo, hi]");
        s["band"] = b;
      }
    }
    if (auto sh = shape_from_json(doc.contains("shape") ? doc.at("shape") : json())) {
      s["m"] = sh->m;
      s["shape"] = {{"m", sh->m}, {"n", sh->n}, {"k", sh->k}, {"world", sh->world}};
    }
    if (auto c = config_from_json(doc.contains("config") ? doc.at("config") : json())) {
      s["config"] = config_label(*c);
      s["config_match"] = {{"mode", to_string(effective_config(*c).mode)},
                           {"gather_dtype", to_string(effective_config(*c).gather_dtype)},
                           {"gather_transport", to_string(effective_config(*c).gather_transport)}};
    }
    if (!s["profile"].get<std::string>().empty()) profile_names_.insert(s["profile"].get<std::string>());
    sweeps_.push_back({s});
  }

  // The machine a run ran on (its record's device, else the one its log's text names) and the profile it is
  // modelled with (report_model.hpp profile_for_run: check's rule).
  void place_run(Run& run, const RunRecord& rec, const std::string& context_profile) {
    if (rec.device) {
      run.machine = *rec.device;
      run.machine_from = "the record's device";
    } else if (hint_) {
      run.machine = hint_->machine;
      run.machine_from = "named by the log at " + hint_->where;
    } else if (rec.backend && *rec.backend == "cpu-emulation") {
      run.machine = "CPU emulation";
      run.machine_from = "the record's backend";
    }
    run.profile = profile_for_run(rec, context_profile, run.machine);
    run.profile_from = rec.profile                ? "the record's"
                       : !context_profile.empty() ? "the verdict's context"
                       : run.machine.empty()      ? "gemmar's default (no machine named)"
                                                  : "gemmar's default for " + run.machine;
  }

  ReadOptions opt_;
  std::optional<MachineHint> hint_;  // of the log being read
  size_t machine_keys_ = 0;          // distinct (machine, profile) of the runs
  std::vector<json> group_models_;   // per group (document order), for its runs' entries
  std::vector<Run> runs_;
  std::vector<ModelDoc> models_;
  std::vector<Sweep> sweeps_;
  json skipped_ = json::array();
  json inputs_ = json::array();
  std::vector<std::string> notes_;
  std::set<std::string> profile_names_;
  json profile_objects_ = json::array();
  json machines_ = json::array();
};

// ---------------------------------------------------------------------------------------------------------
// Aggregation.

json stats(std::vector<double> v) {
  std::vector<double> f;
  size_t nonfinite = 0;
  for (double x : v) (std::isfinite(x) ? f.push_back(x) : void(++nonfinite));
  if (f.empty()) return nonfinite ? json{{"n", 0}, {"nonfinite", nonfinite}} : json(nullptr);
  std::sort(f.begin(), f.end());
  return {{"n", f.size()}, {"median", median(f)}, {"min", f.front()}, {"max", f.back()}, {"nonfinite", nonfinite}};
}

size_t mode_rank(Mode m) {
  const auto& all = all_modes();
  return size_t(std::find(all.begin(), all.end(), m) - all.begin());
}

json shape_json(const Shape& s) { return {{"m", s.m}, {"n", s.n}, {"k", s.k}, {"world", s.world}}; }

void put_config_fields(json& j, const Config& eff, const std::string& label) {
  j["config"] = label;
  j["mode"] = to_string(eff.mode);
  j["quant"] = to_string(eff.quant);
  j["wire"] = has_collective(eff.mode) ? to_string(eff.gather_dtype) : "";
  j["transport"] = has_collective(eff.mode) ? to_string(eff.gather_transport) : "";
}

// Floors depend on shape, quant and data only: a run without one takes another input's for the same.
void Builder::borrow_floors() {
  std::map<std::tuple<int64_t, int64_t, int64_t, int, int, int>, const Run*> donors;
  for (const auto& r : runs_)
    if (r.floor && r.floor_from != "borrowed")
      donors.emplace(std::make_tuple(r.rec.shape.m, r.rec.shape.n, r.rec.shape.k, r.rec.shape.world,
                                     int(r.rec.config.quant), int(r.eff.gather_dtype)),
                     &r);
  size_t borrowed = 0;
  for (auto& r : runs_) {
    if (r.floor) continue;
    auto it = donors.find(std::make_tuple(r.rec.shape.m, r.rec.shape.n, r.rec.shape.k, r.rec.shape.world,
                                          int(r.rec.config.quant), int(r.eff.gather_dtype)));
    if (it == donors.end()) continue;
    r.floor = it->second->floor;
    r.floor_stderr = it->second->floor_stderr;
    r.floor_from = "borrowed from " + it->second->source + " (same shape and quant)";
    ++borrowed;
  }
  if (borrowed)
    notes_.push_back(std::to_string(borrowed) +
                     " run(s) without their own floor use the floor predicted for the "
                     "same shape, quant and wire by another input");
}

// One group per config and shape, in the order of their first run.
std::vector<Group> Builder::make_groups() const {
  std::vector<Group> groups;
  std::map<std::string, size_t> by_key;
  for (size_t i = 0; i < runs_.size(); ++i) {
    const Run& r = runs_[i];
    // Runs of two machines, or judged against two profiles, never share a median.
    const std::string key = r.machine + "|" + r.profile + "|" + r.label + "|" + std::to_string(r.rec.shape.m) + "|" +
                            std::to_string(r.rec.shape.n) + "|" + std::to_string(r.rec.shape.k) + "|" +
                            std::to_string(r.rec.shape.world);
    auto [it, fresh] = by_key.emplace(key, groups.size());
    if (fresh)
      groups.push_back({r.label, r.eff, r.rec.config, r.rec.pull_blocks, r.rec.shape, {}, r.machine, r.profile});
    groups[it->second].runs.push_back(i);
  }
  return groups;
}

// The groups' indices in the mode table's order, then by quant, wire, grid and shape.
std::vector<size_t> group_order(const std::vector<Group>& groups) {
  std::vector<size_t> order(groups.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    const Group &x = groups[a], &y = groups[b];
    auto k = [](const Group& g) {
      return std::make_tuple(mode_rank(g.eff.mode), int(g.eff.quant), int(g.eff.gather_dtype),
                             int(g.eff.gather_transport), int(g.eff.fuse_quantize), g.pull.value_or(0), g.shape.m,
                             g.shape.n, g.shape.k, g.shape.world);
    };
    return k(x) < k(y);
  });
  return order;
}

// Model documents become the model of every group with the same config and shape whose runs carry none.
ModelDoc* Builder::doc_model_for(const Group& g, bool given) {
  const std::string base = config_label(g.cfg);
  for (auto& d : models_)
    if (d.given == given && d.label == base && d.shape && d.shape->m == g.shape.m && d.shape->n == g.shape.n &&
        d.shape->k == g.shape.k && d.shape->world == g.shape.world &&
        (!has_pull(g.eff) || d.pull_blocks == g.pull.value_or(64)))  // runs without a grid: the default 64
      if (d.model.profile.empty() || d.model.profile == g.profile) return &d;
  return nullptr;
}

// Counts, median and min-max of time and relL2, rank spread and findings by code over a set of runs.
json Builder::aggregate(const std::vector<size_t>& idx) const {
  std::vector<double> times, times_ok, rels, spreads, floors, band_lo, band_hi;
  size_t pass = 0, fail = 0;
  std::map<std::string, std::pair<std::string, size_t>> codes;
  std::map<int, size_t> slowest;
  for (size_t i : idx) {
    const Run& r = runs_[i];
    std::optional<double> t = r.rec.max_rank_time_us;
    if (!t && !r.rec.per_rank_time_us.empty())
      t = *std::max_element(r.rec.per_rank_time_us.begin(), r.rec.per_rank_time_us.end());
    if (t) {
      times.push_back(*t);
      // A failed run's time is not the config's time (a silent copy is faster than physics allows).
      if (r.verdict != std::optional<std::string>("fail")) times_ok.push_back(*t);
    }
    if (r.rec.rel_l2) rels.push_back(*r.rec.rel_l2);
    if (r.verdict == std::optional<std::string>("pass")) ++pass;
    if (r.verdict == std::optional<std::string>("fail")) ++fail;
    for (const auto& f : r.findings) {
      auto& c = codes[f["code"].get<std::string>()];
      if (c.first.empty()) c.first = f["severity"].get<std::string>();
      ++c.second;
    }
    const auto& pr = r.rec.per_rank_time_us;
    if (pr.size() >= 2) {
      const double med = median(pr);
      if (med > 0 && std::isfinite(med)) {
        spreads.push_back((*std::max_element(pr.begin(), pr.end()) - *std::min_element(pr.begin(), pr.end())) / med *
                          100.0);
        ++slowest[int(std::max_element(pr.begin(), pr.end()) - pr.begin())];
      }
    }
    if (r.floor) floors.push_back(*r.floor);
    if (r.band_hi) band_hi.push_back(*r.band_hi);
    if (r.band_lo) band_lo.push_back(*r.band_lo);
  }
  json a = {{"runs", idx.size()},
            {"pass", pass},
            {"fail", fail},
            {"no_verdict", idx.size() - pass - fail},
            {"time_us", stats(times)},
            {"time_ok_us", stats(times_ok)},
            {"rel_l2", stats(rels)},
            {"rank_spread_pct", stats(spreads)}};
  a["floor"] = floors.empty() ? json(nullptr) : json(median(floors));
  a["band"] = band_hi.empty() ? json(nullptr)
                              : json::array({band_lo.empty() ? json(nullptr) : json(median(band_lo)), median(band_hi)});
  std::vector<std::pair<std::string, std::pair<std::string, size_t>>> cv(codes.begin(), codes.end());
  std::stable_sort(cv.begin(), cv.end(),
                   [](const auto& x, const auto& y) { return x.second.second > y.second.second; });
  json jc = json::array();
  for (const auto& [code, sc] : cv) jc.push_back({{"code", code}, {"severity", sc.first}, {"count", sc.second}});
  a["findings"] = jc;
  a["slowest_rank"] = nullptr;
  if (!slowest.empty()) {
    auto best = std::max_element(slowest.begin(), slowest.end(),
                                 [](const auto& x, const auto& y) { return x.second < y.second; });
    a["slowest_rank"] = {{"rank", best->first}, {"runs", best->second}};
  }
  return a;
}

// The median of each phase over the group's runs that measured phases (an empty list when none did).
json Builder::group_phases(const Group& g) const {
  std::map<std::string, std::vector<double>> phase_vals;
  for (size_t i : g.runs)
    for (const auto& [name, us] : runs_[i].rec.phases_us) phase_vals[name].push_back(us);
  if (phase_vals.empty()) return json::array();
  Phases p;
  for (auto& [name, v] : phase_vals) p.emplace_back(name, median(v));
  sort_phases(p);
  return phases_json(p);
}

// The group's model: a model document of its config, shape and profile (an input the user gave), else gemmar's
// model of its shape and config under its profile (what `gemmar check` judges it against), else, when gemmar's
// cannot be computed (an unknown profile), a results document's prediction for it or the runs' own (their
// record's or their verdict's context).
std::optional<Model> Builder::group_model(const Group& g) {
  if (ModelDoc* d = doc_model_for(g, true)) {
    ++d->used_by;
    return d->model;
  }
  Config cfg = g.cfg;
  cfg.pull_blocks = g.pull.value_or(Config{}.pull_blocks);
  const ModelResult mr = report::model_for(g.profile, g.shape, cfg);
  if (!mr.model.is_null()) {
    Model m;
    m.total_us = mr.model["total_us"].get<double>();
    m.lower_bound_us = mr.model["lower_bound_us"].get<double>();
    for (const auto& ph : mr.model["phases"]) m.phases.emplace_back(ph[0].get<std::string>(), ph[1].get<double>());
    m.from = mr.model["from"].get<std::string>();
    m.profile = g.profile;
    m.extra = {{"phase_detail", mr.model["phase_detail"]},
               {"in_server_us", mr.model["in_server_us"]},
               {"notes", mr.model["notes"]},
               {"fused_engaged", mr.model["fused_engaged"]},
               {"one_device", mr.one_device}};
    if (ModelDoc* d = doc_model_for(g, false)) ++d->covers;
    return m;
  }
  std::optional<Model> own;
  if (ModelDoc* d = doc_model_for(g, false)) {
    ++d->used_by;
    own = d->model;
  }
  for (size_t i : g.runs)
    if (runs_[i].model && (!own || (own->phases.empty() && !runs_[i].model->phases.empty()))) own = runs_[i].model;
  notes_.push_back(series(g.machine, g.profile, g.label) + " M=" + std::to_string(g.shape.m) +
                   ": gemmar's model could not be computed (" + mr.error + ")" +
                   (own ? "; " + own->from + " is drawn" : "; no model is drawn"));
  return own;
}

// The group's machine and series name, its table of each phase and its lanes (report_model.hpp,
// report_timeline.hpp). The measured total is the median of the passing runs (of all runs when none passed).
void Builder::put_where_the_time_went(json& jg, const Group& g) const {
  jg["machine"] = g.machine;
  jg["profile"] = g.profile;
  jg["series"] = series(g.machine, g.profile, g.label);
  const json& ok = jg["time_ok_us"];
  const json& t = ok.is_object() && ok.value("n", 0) > 0 ? ok : jg["time_us"];
  std::optional<double> total;
  if (t.is_object() && t.value("n", 0) > 0) total = t["median"].get<double>();
  const json& model = jg["model"];
  const bool one_device = model.is_object() && model.value("one_device", false);
  Config cfg = g.cfg;
  cfg.pull_blocks = g.pull.value_or(Config{}.pull_blocks);
  jg["phase_table"] = phase_table(jg["phases_us"], total, model, g.shape, g.eff, one_device ? g.shape.world : 1);
  jg["lanes"] = group_lanes(jg["phases_us"], total, model, g.profile, g.shape, cfg);
}

// A group's name on the figures: its config, and its machine and profile when the inputs hold more than one.
std::string Builder::series(const std::string& machine, const std::string& profile, const std::string& label) const {
  if (machine_keys_ <= 1) return label;
  // "NVIDIA H200 (8 ranks on 1 device)" is named "NVIDIA H200" here: its profile (h200-1gpu) says the rest.
  const std::string shown = machine.empty() ? std::string("machine not named") : machine.substr(0, machine.find(" ("));
  return label + " @ " + shown + " (" + profile + ")";
}

namespace {

std::optional<double> passing_median(const json& jg) {
  const json& ok = jg["time_ok_us"];
  if (ok.is_object() && ok.value("n", 0) > 0) return ok["median"].get<double>();
  return std::nullopt;
}

json speedup_entry(double baseline_us, double us, json extra) {
  extra["baseline_us"] = baseline_us;
  extra["us"] = us;
  extra["x"] = baseline_us / us;
  extra["margin_pct"] = (1.0 - us / baseline_us) * 100.0;  // mori's "fused is +21.8% against split"
  return extra;
}

}  // namespace

// Against the split baseline (report_model.hpp split_baseline): the measured medians of passing runs when the inputs
// hold the baseline's group on the same machine, profile and shape; gemmar's model of both; and the unfused
// baseline the runs measured themselves (gemmar run's unfused_baseline_us).
json Builder::speedup(const std::vector<Group>& groups, const json& jgroups, size_t gi) const {
  const Group& g = groups[gi];
  const auto b = split_baseline(g.eff);
  if (!b) return nullptr;
  json out = {{"baseline", config_label(*b)}, {"measured", nullptr}, {"model", nullptr}, {"in_run", nullptr}};
  std::optional<size_t> best;
  for (size_t j = 0; j < groups.size(); ++j) {
    const Group& h = groups[j];
    if (h.machine != g.machine || h.profile != g.profile || config_label(h.cfg) != config_label(*b) ||
        std::tie(h.shape.m, h.shape.n, h.shape.k, h.shape.world) !=
            std::tie(g.shape.m, g.shape.n, g.shape.k, g.shape.world) ||
        !passing_median(jgroups[j]))
      continue;
    if (!best || h.pull == g.pull) best = j;
  }
  const std::optional<double> us = passing_median(jgroups[gi]);
  if (us && best) out["measured"] = speedup_entry(*passing_median(jgroups[*best]), *us, {{"group", *best}});
  Config cfg = g.cfg, base = *b;
  cfg.pull_blocks = base.pull_blocks = g.pull.value_or(Config{}.pull_blocks);
  const ModelResult mine = report::model_for(g.profile, g.shape, cfg),
                    theirs = report::model_for(g.profile, g.shape, base);
  if (!mine.model.is_null() && !theirs.model.is_null())
    out["model"] = speedup_entry(theirs.model["total_us"].get<double>(), mine.model["total_us"].get<double>(),
                                 {{"profile", g.profile}});
  std::vector<double> unfused;
  std::string what;
  for (size_t i : g.runs)
    if (runs_[i].rec.unfused_baseline_us) {
      unfused.push_back(*runs_[i].rec.unfused_baseline_us);
      what = runs_[i].rec.unfused_baseline.value_or(what);
    }
  if (us && !unfused.empty()) out["in_run"] = speedup_entry(median(unfused), *us, {{"what", what}});
  return out;
}

// "[RUN=]FILE" of --trace: the kernels of one iteration beside the run they belong to (RUN: its source "log:12" or
// 1-based index; a plain FILE: the one run whose config runs every phase the trace shows, as `gemmar check --trace`
// picks it). A run without phases takes the trace's (per iteration, max over devices), as check does.
void Builder::attach_traces() {
  std::set<size_t> taken;
  for (const auto& spec : opt_.traces) {
    const size_t eq = spec.find('=');
    const std::string who = eq == std::string::npos ? "" : spec.substr(0, eq);
    const std::string file = eq == std::string::npos ? spec : spec.substr(eq + 1);
    std::vector<TraceKernel> kernels;
    const TracePhases tp = read_trace(file, default_phase_patterns(), &kernels);
    std::set<std::string> phases;
    for (const auto& [phase, us] : tp.phases_us) phases.insert(phase);
    std::vector<size_t> hits;
    for (size_t i = 0; i < runs_.size(); ++i) {
      const Run& r = runs_[i];
      const bool named = !who.empty() && (r.source == who || who == std::to_string(i + 1));
      if (named || (who.empty() && !taken.count(i) && trace_fits(phases, phase_names(r.eff)))) hits.push_back(i);
    }
    if (hits.size() != 1) {
      std::string list;
      for (size_t n = 0; n < hits.size() && n < 5; ++n) list += (n ? ", " : "") + runs_[hits[n]].source;
      if (hits.size() > 5) list += ", ...";
      throw UsageError("--trace " + spec + ": " +
                       (who.empty()
                            ? "its kernels (phases " + join_names(phases) + ") match " + std::to_string(hits.size()) +
                                  " runs" + (list.empty() ? "" : " (" + list + ")") +
                                  "; name the run with --trace RUN=" + file + " (RUN = a run's source or 1-based index)"
                            : "no run has source or index '" + who + "'"));
    }
    Run& r = runs_[hits[0]];
    taken.insert(hits[0]);
    if (r.rec.phases_us.empty()) r.rec.phases_us = tp.phases_us;
    r.trace = trace_iteration(kernels, file, tp.format);
  }
}

// The group's entry of the document; its runs learn their group's index.
json Builder::group_json(const Group& g, size_t index) {
  size_t with_phases = 0;
  for (size_t i : g.runs) {
    runs_[i].group = index;
    if (!runs_[i].rec.phases_us.empty()) ++with_phases;
  }
  json jg = aggregate(g.runs);
  jg["index"] = index;
  put_config_fields(jg, g.eff, g.label);
  jg["pull_blocks"] = g.pull ? json(*g.pull) : json(nullptr);
  jg["shape"] = shape_json(g.shape);
  jg["phases_us"] = group_phases(g);
  jg["phases_runs"] = with_phases;
  const std::optional<Model> model = group_model(g);
  jg["model"] = model ? model_json(*model) : json(nullptr);
  if (group_models_.size() <= index) group_models_.resize(index + 1);
  group_models_[index] = jg["model"];
  put_where_the_time_went(jg, g);
  json members = json::array();
  for (size_t i : g.runs) members.push_back(i);
  jg["members"] = members;
  return jg;
}

// The same per config over every shape (relL2 and rank spread hardly depend on M; one entry per config), in
// the groups' order.
json Builder::configs_json(const std::vector<Group>& groups, const std::vector<size_t>& order) const {
  std::vector<std::string> config_order;
  std::map<std::string, std::pair<Config, std::vector<size_t>>> by_config;
  for (size_t oi : order) {
    const Group& g = groups[oi];
    // Per machine and profile too: relL2 and rank spread of two machines are not one distribution.
    auto [it, fresh] = by_config.try_emplace(series(g.machine, g.profile, g.label), g.eff, std::vector<size_t>{});
    if (fresh) config_order.push_back(it->first);
    it->second.second.insert(it->second.second.end(), g.runs.begin(), g.runs.end());
  }
  json jconfigs = json::array();
  for (size_t ci = 0; ci < config_order.size(); ++ci) {
    const auto& [eff, idx] = by_config.at(config_order[ci]);
    json jc = aggregate(idx);
    jc["index"] = ci;
    put_config_fields(jc, eff, runs_[idx.front()].label);
    jc["series"] = config_order[ci];
    jc["machine"] = runs_[idx.front()].machine;
    jc["profile"] = runs_[idx.front()].profile;
    std::set<int64_t> ms;
    for (size_t i : idx) ms.insert(runs_[i].rec.shape.m);
    jc["m_values"] = std::vector<int64_t>(ms.begin(), ms.end());
    jconfigs.push_back(std::move(jc));
  }
  return jconfigs;
}

json Builder::run_json(size_t i) const {
  const Run& r = runs_[i];
  const RunRecord& rec = r.rec;
  std::optional<double> t = rec.max_rank_time_us;
  if (!t && !rec.per_rank_time_us.empty())
    t = *std::max_element(rec.per_rank_time_us.begin(), rec.per_rank_time_us.end());
  Phases ph(rec.phases_us.begin(), rec.phases_us.end());
  sort_phases(ph);
  // The run's model is its group's (the phases are there); its own, when it carried one, is kept beside.
  auto compact = [](const json& m) {
    if (!m.is_object()) return json(nullptr);
    json c = json::object();
    for (const char* k : {"total_us", "lower_bound_us", "from", "profile"})
      if (m.contains(k)) c[k] = m.at(k);
    return c;
  };
  const json model = r.group < group_models_.size() ? compact(group_models_[r.group]) : json(nullptr);
  json j = {
      {"index", i},
      {"source", r.source},
      {"group", r.group},
      {"config", r.label},
      {"mode", to_string(r.eff.mode)},
      {"quant", to_string(r.eff.quant)},
      {"wire", has_collective(r.eff.mode) ? to_string(r.eff.gather_dtype) : ""},
      {"transport", has_collective(r.eff.mode) ? to_string(r.eff.gather_transport) : ""},
      {"fuse_quantize", rec.config.fuse_quantize},
      {"pull_blocks", rec.pull_blocks ? json(*rec.pull_blocks) : json(nullptr)},
      {"m", rec.shape.m},
      {"n", rec.shape.n},
      {"k", rec.shape.k},
      {"world", rec.shape.world},
      {"time_us", t ? json(*t) : json(nullptr)},
      {"per_rank_time_us", rec.per_rank_time_us},
      {"rel_l2", rec.rel_l2 ? json(*rec.rel_l2) : json(nullptr)},
      {"per_rank_rel_l2", rec.per_rank_rel_l2},
      {"validated", rec.validated ? json(*rec.validated) : json(nullptr)},
      {"phases_us", phases_json(ph)},
      {"model", model},
      {"own_model", r.model ? compact(model_json(*r.model)) : json(nullptr)},
      {"floor", r.floor ? json(*r.floor) : json(nullptr)},
      {"floor_stderr", r.floor_stderr ? json(*r.floor_stderr) : json(nullptr)},
      {"floor_from", r.floor_from},
      {"band", r.band_hi ? json::array({r.band_lo ? json(*r.band_lo) : json(nullptr), *r.band_hi}) : json(nullptr)},
      {"verdict", r.verdict ? json(*r.verdict) : json(nullptr)},
      {"findings", r.findings},
      {"profile", r.profile},
      {"profile_from", r.profile_from},
      {"machine", r.machine},
      {"machine_from", r.machine_from},
      {"series", series(r.machine, r.profile, r.label)},
      {"backend", rec.backend.value_or("")},
      {"timing", rec.timing},
      {"timeline", "timeline/run-" + std::to_string(i) + ".json"}};
  if (r.trace.is_object()) j["trace"] = r.trace;
  return j;
}

// The model documents, each with how many groups it became the model of; a note per file whose models match
// no run.
json Builder::models_json() {
  json jmodels = json::array();
  std::map<std::string, std::vector<std::string>> unmatched;  // file -> configs
  for (const auto& d : models_) {
    jmodels.push_back({{"source", d.source},
                       {"config", d.label},
                       {"shape", d.shape ? shape_json(*d.shape) : json(nullptr)},
                       {"model", model_json(d.model)},
                       {"used_by_groups", d.used_by},
                       {"covers_groups", d.covers}});
    if (!d.used_by && !d.covers && !runs_.empty())
      unmatched[d.source.substr(0, d.source.find(": "))].push_back(
          (d.label.empty() ? std::string("an unnamed config") : d.label) +
          (d.shape ? " M=" + std::to_string(d.shape->m) : std::string(" (no shape given)")));
  }
  for (const auto& [file, configs] : unmatched) {
    std::string list;
    for (size_t i = 0; i < configs.size() && i < 3; ++i) list += (i ? ", " : "") + configs[i];
    if (configs.size() > 3) list += " and " + std::to_string(configs.size() - 3) + " more";
    // Beside runs, each group already has the model of its own shape: a model at another shape would stand beside
    // runs it does not describe (validate's predictions at the reference shape beside runs at 2048).
    notes_.push_back(file + ": " + std::to_string(configs.size()) + " model(s) match no run's config, shape and " +
                     "profile (" + list + "); listed with the model documents, not drawn beside the runs");
  }
  return jmodels;
}

// The machines and profiles the runs were placed on, with how each was chosen and how many runs each holds.
json Builder::placements_json() const {
  std::vector<std::string> keys;
  std::map<std::string, json> by_key;
  for (const auto& r : runs_) {
    const std::string key = r.machine + "|" + r.profile;
    auto [it, fresh] = by_key.try_emplace(key, json{{"machine", r.machine},
                                                    {"profile", r.profile},
                                                    {"machine_from", r.machine_from},
                                                    {"profile_from", r.profile_from},
                                                    {"runs", 0}});
    if (fresh) keys.push_back(key);
    it->second["runs"] = it->second["runs"].get<size_t>() + 1;
  }
  json out = json::array();
  for (const auto& k : keys) out.push_back(by_key.at(k));
  return out;
}

json Builder::finish() {
  attach_traces();
  borrow_floors();
  const json placements = placements_json();
  machine_keys_ = placements.size();
  const std::vector<Group> groups = make_groups();
  const std::vector<size_t> order = group_order(groups);
  std::vector<Group> ordered;
  for (size_t oi : order) ordered.push_back(groups[oi]);
  json jgroups = json::array();
  for (size_t gi = 0; gi < ordered.size(); ++gi) jgroups.push_back(group_json(ordered[gi], gi));
  for (size_t gi = 0; gi < ordered.size(); ++gi) jgroups[gi]["speedup"] = speedup(ordered, jgroups, gi);
  const json jconfigs = configs_json(groups, order);
  json jruns = json::array();
  for (size_t i = 0; i < runs_.size(); ++i) jruns.push_back(run_json(i));
  const json jmodels = models_json();  // after the groups: they mark the documents they use

  json jsweeps = json::array();
  for (const auto& s : sweeps_) jsweeps.push_back(s.j);
  json notes = json::array();
  for (const auto& n : notes_) notes.push_back(n);
  json names = json::array();
  for (const auto& n : profile_names_) names.push_back(n);
  size_t pass = 0, fail = 0;
  for (const auto& r : runs_) {
    if (r.verdict == std::optional<std::string>("pass")) ++pass;
    if (r.verdict == std::optional<std::string>("fail")) ++fail;
  }
  return {{"format", kDocumentFormat},
          {"inputs", inputs_},
          {"summary",
           {{"runs", runs_.size()},
            {"groups", groups.size()},
            {"configs", jconfigs.size()},
            {"pass", pass},
            {"fail", fail},
            {"no_verdict", runs_.size() - pass - fail},
            {"skipped", skipped_.size()},
            {"models", models_.size()},
            {"sweeps", sweeps_.size()}}},
          {"phase_order", all_phase_names()},
          {"placements", placements},
          {"groups", jgroups},
          {"configs", jconfigs},
          {"runs", jruns},
          {"models", jmodels},
          {"sweeps", jsweeps},
          {"profiles", names},
          {"profile_objects", profile_objects_},
          {"machines", machines_},
          {"skipped", skipped_},
          {"notes", notes}};
}

}  // namespace

json build_report_document(const std::vector<std::string>& files, const ReadOptions& opt) {
  Builder b(opt);
  for (size_t i = 0; i < files.size(); ++i)
    b.read_file(files[i],
                i < opt.display_names.size() && !opt.display_names[i].empty() ? opt.display_names[i] : files[i]);
  json doc = b.finish();
  const auto& s = doc["summary"];
  if (s["runs"].get<size_t>() == 0 && s["models"].get<size_t>() == 0 && s["sweeps"].get<size_t>() == 0) {
    std::string list;
    for (size_t i = 0; i < files.size(); ++i)
      list += (list.empty() ? "" : ", ") +
              (i < opt.display_names.size() && !opt.display_names[i].empty() ? opt.display_names[i] : files[i]);
    std::string first;
    if (!doc["skipped"].empty())
      first = "; " + std::to_string(doc["skipped"].size()) + " record(s) skipped, first " +
              doc["skipped"][0]["source"].get<std::string>() + ": " + doc["skipped"][0]["reason"].get<std::string>();
    throw UsageError(list + ": no readable run, model or sweep" + first);
  }
  return doc;
}

}  // namespace gemmar::report
