#include "validate/cli/report_model.hpp"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <map>
#include <memory>
#include <sstream>

#include "common/errors.hpp"
#include "model/model.hpp"
#include "validate/verdict/expectations.hpp"

namespace gemmar::report {
namespace {
using json = nlohmann::json;

bool alnum(char c) { return std::isalnum(static_cast<unsigned char>(c)) != 0; }
bool digit(char c) { return std::isdigit(static_cast<unsigned char>(c)) != 0; }

// The device token starting at `s[i]`, or its length 0: "MI355X"/"MI300A" (MI, three digits, a letter), "gfx950",
// or an NVIDIA part "H100"/"H200"/"B200"/"GB200"/"A100" (one or two capitals, three digits). Upper case only for
// the part names, so a profile name in the text ("profile mi355x") is not read as a machine.
size_t device_token(const std::string& s, size_t i) {
  if (i > 0 && alnum(s[i - 1])) return 0;
  auto digits_at = [&](size_t p, size_t n) {
    for (size_t k = 0; k < n; ++k)
      if (p + k >= s.size() || !digit(s[p + k])) return false;
    return true;
  };
  auto ends_at = [&](size_t p) { return p >= s.size() || !alnum(s[p]); };
  if (s.compare(i, 2, "MI") == 0 && digits_at(i + 2, 3)) {
    const size_t e = i + 5 < s.size() && std::isupper(static_cast<unsigned char>(s[i + 5])) ? i + 6 : i + 5;
    return ends_at(e) ? e - i : 0;
  }
  if (s.compare(i, 3, "gfx") == 0 && i + 6 <= s.size() && alnum(s[i + 3]) && alnum(s[i + 4]) && alnum(s[i + 5]))
    return ends_at(i + 6) ? 6 : 0;
  const bool part = s[i] == 'H' || s[i] == 'B' || s[i] == 'A';
  const size_t caps = s.compare(i, 2, "GB") == 0 ? 2 : (part ? 1 : 0);
  if (caps && digits_at(i + caps, 3) && ends_at(i + caps + 3)) return caps + 3;
  return 0;
}

}  // namespace

std::optional<MachineHint> machine_hint(std::istream& in, const std::string& name) {
  const std::streampos start = in.tellg();
  std::string head(size_t(64) << 10, '\0');
  in.read(head.data(), std::streamsize(head.size()));
  head.resize(size_t(in.gcount()));
  in.clear();
  in.seekg(start);
  size_t line = 1;
  for (size_t i = 0; i < head.size(); ++i) {
    if (head[i] == '\n') {
      ++line;
      continue;
    }
    if (const size_t n = device_token(head, i))
      return MachineHint{head.substr(i, n), name + ":" + std::to_string(line)};
  }
  return std::nullopt;
}

namespace {

// gemmar's device text: "NVIDIA H200 (8 ranks on 1 device)" -> 8; anything else 1.
int ranks_per_device(const std::string& device) {
  const size_t at = device.find(" ranks on ");
  if (at == std::string::npos) return 1;
  size_t b = at;
  while (b > 0 && digit(device[b - 1])) --b;
  size_t e = at + 10;
  while (e < device.size() && digit(device[e])) ++e;
  if (b == at || e == at + 10 || at - b > 6 || e - at - 10 > 6) return 1;
  const int ranks = std::stoi(device.substr(b, at - b)), devices = std::stoi(device.substr(at + 10, e - at - 10));
  return devices > 0 ? std::max(1, ranks / devices) : 1;
}

}  // namespace

std::string profile_for_run(const RunRecord& r, const std::string& context_profile, const std::string& machine) {
  if (r.profile) return *r.profile;
  if (!context_profile.empty()) return context_profile;
  const std::string device = r.device.value_or(machine);
  return default_profile(r.backend.value_or("gpu"), device, ranks_per_device(device));
}

namespace {

json prediction_json(const model::Prediction& pr, const std::string& profile) {
  json j = model::to_json(pr);  // `gemmar model --json`'s document: each phase's time, bytes, FLOPs, ceiling
  json pairs = json::array();
  for (size_t i = 0; i < pr.phases.size(); ++i) {
    j["phases"][i]["lower_bound_us"] = pr.phases[i].lower_bound_us;  // its share of the lower bound, which it omits
    pairs.push_back({pr.phases[i].name, pr.phases[i].us});
  }
  j["phase_detail"] = std::move(j["phases"]);
  j["phases"] = std::move(pairs);
  j["profile"] = profile;
  j["from"] = "gemmar's model (profile " + profile + ") of the run's shape and config";
  return j;
}

}  // namespace

ModelResult model_for(const std::string& profile, const Shape& s, const Config& c) {
  // A report of 1000 runs asks for a few dozen (profile, shape, config): each is computed once.
  static std::map<std::string, std::pair<std::shared_ptr<model::Profile>, std::string>> profiles;
  static std::map<std::string, ModelResult> results;
  std::ostringstream key;
  key << profile << '|' << s.m << ',' << s.n << ',' << s.k << ',' << s.world << '|' << config_label(c) << '|'
      << c.pull_blocks << '|' << c.chunks;
  if (auto hit = results.find(key.str()); hit != results.end()) return hit->second;
  auto& prof = profiles[profile];
  if (!prof.first && prof.second.empty()) {
    try {
      prof.first = std::make_shared<model::Profile>(model::load_profile(profile));
    } catch (const Error& e) {
      prof.second = e.what();
    }
  }
  ModelResult r;
  if (!prof.first) {
    r.error = prof.second;
  } else {
    try {
      r.model = prediction_json(model::predict(*prof.first, s, c), profile);
      r.one_device = prof.first->params.one_device;
    } catch (const Error& e) {
      r.error = e.what();
    }
  }
  return results.emplace(key.str(), r).first->second;
}

std::optional<Config> split_baseline(const Config& c) {
  if (!has_collective(c.mode) || c.mode == Mode::SplitSdma) return std::nullopt;
  Config b = c;
  b.mode = Mode::SplitSdma;
  if (traits(c.mode).two_stage_allreduce) {
    b.gather_dtype = WireDtype::Bf16;
    b.gather_transport = Transport::Sdma;
  }
  return effective_config(b);
}

namespace {

// The collective each leg is, for nccl-tests' bus bandwidth (NVIDIA/nccl-tests doc/PERFORMANCE.md @dcf81895:
// algbw = S / t with S the whole array in bytes; busbw = algbw x 2(n-1)/n for an all-reduce, x (n-1)/n for a
// reduce-scatter or an all-gather). The scatter moves the bf16 partials (a reduce-scatter whose additions the reduce
// does), the gather and the pull the reduced slices on the wire (an all-gather), split-lsa's kernel the whole
// all-reduce. The drain is the tail of the scatter the GEMM did not hide: not a whole leg, no bandwidth.
struct Leg {
  const char* phase;
  const char* collective;
  int factor_times_n_over_n_minus_1;  // 2 for an all-reduce, 1 otherwise
  bool on_the_wire;                   // its bytes per element are the gather wire's (else bf16)
};
constexpr Leg kLegs[] = {
    {"scatter", "reduce-scatter", 1, false},
    {"gather", "all-gather", 1, true},
    {"pull", "all-gather", 1, true},
    {"allreduce", "all-reduce", 2, false},
};

const Leg* leg_of(const std::string& phase) {
  for (const auto& l : kLegs)
    if (phase == l.phase) return &l;
  return nullptr;
}

std::optional<double> num(const json& j, const char* key) {
  if (!j.is_object() || !j.contains(key) || !j.at(key).is_number()) return std::nullopt;
  const double v = j.at(key).get<double>();
  return std::isfinite(v) ? std::optional<double>(v) : std::nullopt;
}

json opt(std::optional<double> v) { return v ? json(*v) : json(nullptr); }

std::optional<double> ratio(std::optional<double> a, std::optional<double> b) {
  if (!a || !b || *b <= 0) return std::nullopt;
  return *a / *b;
}

// Bandwidths of one collective leg: S bytes at the measured and the model's time.
void put_bandwidth(json& row, const Leg& leg, const Shape& s, const Config& eff, const json* detail) {
  if (s.world < 2) return;
  std::optional<double> moved = detail ? num(*detail, "link_bytes") : std::nullopt;
  if (!moved && detail) moved = num(*detail, "bytes");  // a model document may state only the spec's bytes
  if (moved && *moved <= 0) {
    row["note"] = "moves no data here (a barrier)";
    return;
  }
  const double elem = leg.on_the_wire && uses_fp8_wire(eff) ? 1.0 : 2.0;
  const double bytes = double(padded_m(s, eff.quant)) * double(s.n) * elem;
  const double n = s.world, factor = leg.factor_times_n_over_n_minus_1 * (n - 1) / n;
  row["collective"] = leg.collective;
  row["bytes"] = bytes;
  row["busbw_factor"] = factor;
  auto bw = [&](const char* us_key, const char* alg, const char* bus) {
    if (auto us = num(row, us_key); us && *us > 0) {
      row[alg] = bytes / *us * 1e-3;  // bytes per us -> GB/s
      row[bus] = bytes / *us * 1e-3 * factor;
    }
  };
  bw("measured_us", "algbw_gbs", "busbw_gbs");
  bw("model_us", "model_algbw_gbs", "model_busbw_gbs");
}

// The phase names either side returns: the model's in its own (pipeline) order, whatever names it returns; a
// measured-only name goes before the first name that comes after it in all_phase_names (at the end when unknown).
std::vector<std::string> row_order(const json& measured, const json& model_detail) {
  const auto& order = all_phase_names();
  auto rank = [&](const std::string& n) { return size_t(std::find(order.begin(), order.end(), n) - order.begin()); };
  std::vector<std::string> names;
  for (const auto& ph : model_detail) names.push_back(ph.at("name").get<std::string>());
  for (const auto& ph : measured) {
    const std::string n = ph[0].get<std::string>();
    if (std::find(names.begin(), names.end(), n) != names.end()) continue;
    const size_t r = rank(n);
    auto at = std::find_if(names.begin(), names.end(), [&](const std::string& m) {
      const size_t rm = rank(m);
      return r < order.size() && rm < order.size() && rm > r;
    });
    names.insert(at, n);
  }
  return names;
}

json phase_row(const std::string& name, const json& measured, const json* detail, const Shape& s, const Config& eff) {
  std::optional<double> meas;
  for (const auto& ph : measured)
    if (ph[0] == name) meas = ph[1].get<double>();
  json row = {{"phase", name},
              {"measured_us", opt(meas)},
              {"model_us", detail ? opt(num(*detail, "us")) : json(nullptr)},
              {"ceiling_us", detail ? opt(num(*detail, "ceiling_us")) : json(nullptr)},
              {"bound_us", detail ? opt(num(*detail, "lower_bound_us")) : json(nullptr)},
              {"bound", detail && detail->contains("bound") ? detail->at("bound") : json("")}};
  row["measured_over_model"] = opt(ratio(meas, num(row, "model_us")));
  // The measured efficiency of a phase: its ceiling time over its measured time (model/model.hpp Phase::ceiling_us).
  const auto ceiling = num(row, "ceiling_us");
  row["efficiency"] = opt(ceiling && *ceiling > 0 ? ratio(ceiling, meas) : std::nullopt);
  if (const Leg* leg = leg_of(name)) put_bandwidth(row, *leg, s, eff, detail);
  if (name == "drain" && is_fused(eff.mode)) {
    // Its ceiling prices the scatter's bytes; the measured drain is only what the GEMM did not hide of them.
    row["efficiency"] = nullptr;
    row["note"] = "the scatter's tail after the GEMM: the rest of its puts ran under the GEMM";
  }
  return row;
}

// The GEMM's rate per device: 2 M N K per rank (the model's gemm FLOPs when it has them), times the ranks that share
// the device, over each time.
json gemm_rate(const json& rows, const json* gemm_detail, const Shape& s, int ranks_per_device) {
  double flops = 2.0 * double(s.m) * double(s.n) * double(s.k);
  if (gemm_detail)
    if (auto f = num(*gemm_detail, "flops"); f && *f > 0) flops = *f;
  flops *= ranks_per_device;
  json out = {{"flops", flops}, {"ranks_per_device", ranks_per_device}};
  for (const auto& row : rows) {
    if (row["phase"] != "gemm") continue;
    static const std::pair<const char*, const char*> kColumns[] = {
        {"measured_us", "measured"}, {"model_us", "model"}, {"ceiling_us", "ceiling"}};
    for (const auto& [col, key] : kColumns)
      if (auto us = num(row, col); us && *us > 0) out[key] = flops / *us * 1e-6;  // FLOPs per us -> TFLOP/s
  }
  return out;
}

}  // namespace

json phase_table(const json& measured, std::optional<double> total_us, const json& model, const Shape& s,
                 const Config& eff, int ranks_per_device) {
  json detail = model.is_object() && model.contains("phase_detail") ? model.at("phase_detail") : json::array();
  if (detail.empty() && model.is_object() && model.contains("phases"))  // a model document's {name: us} phases
    for (const auto& ph : model.at("phases")) detail.push_back({{"name", ph[0]}, {"us", ph[1]}});
  json rows = json::array();
  const json* gemm_detail = nullptr;
  for (const auto& name : row_order(measured, detail)) {
    const json* d = nullptr;
    for (const auto& ph : detail)
      if (ph.at("name") == name) d = &ph;
    if (name == "gemm") gemm_detail = d;
    rows.push_back(phase_row(name, measured, d, s, eff));
  }
  double sum = 0;
  for (const auto& ph : measured) sum += ph[1].get<double>();
  json out = {{"rows", rows},
              {"measured_total_us", opt(total_us)},
              {"measured_phase_sum_us", measured.empty() ? json(nullptr) : json(sum)},
              {"unattributed_us", nullptr},
              {"model_total_us", opt(num(model, "total_us"))},
              {"model_bound_us", opt(num(model, "lower_bound_us"))},
              {"gemm_tflops", gemm_rate(rows, gemm_detail, s, ranks_per_device)}};
  // What the phases do not cover: launch gaps, the cross-rank skew, host work. Negative when the phases (each a max
  // over ranks) add up to more than the total: then they overlapped or different ranks were slowest in each.
  if (total_us && !measured.empty()) out["unattributed_us"] = *total_us - sum;
  out["total_over_model"] = opt(ratio(total_us, num(model, "total_us")));
  return out;
}

}  // namespace gemmar::report
