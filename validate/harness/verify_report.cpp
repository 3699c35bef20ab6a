// gemmar verify's output: the per-run text block printed before the verdict table, and the JSON beside it.
#include <cmath>
#include <cstdio>
#include <sstream>

#include "reference/formats.hpp"
#include "validate/harness/verify.hpp"

namespace gemmar {

namespace {

std::string sci(double v) {
  if (std::isnan(v)) return "NaN";
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.3g", v);
  return buf;
}

std::string hex16(uint16_t v) {
  char buf[16];
  std::snprintf(buf, sizeof buf, "0x%04x", v);
  return buf;
}

std::string list(const std::vector<int64_t>& v) {
  std::string s;
  for (size_t i = 0; i < v.size(); ++i) s += (i ? " " : "") + std::to_string(v[i]);
  return s;
}

std::string dlist(const std::vector<double>& v) {
  std::string s;
  for (size_t i = 0; i < v.size(); ++i) s += (i ? " " : "") + sci(v[i]);
  return s;
}

nlohmann::json mismatches_json(const std::vector<Mismatch>& ms) {
  nlohmann::json mm = nlohmann::json::array();
  for (const auto& m : ms)
    mm.push_back({{"rank", m.rank},
                  {"row", m.row},
                  {"col", m.col},
                  {"got", hex16(m.got)},
                  {"expected", hex16(m.expected)},
                  {"got_value", reference::from_bf16(m.got)},
                  {"expected_value", reference::from_bf16(m.expected)}});
  return mm;
}

void print_mismatches(std::ostream& os, const std::vector<Mismatch>& ms, const char* other) {
  for (const auto& m : ms)
    os << "    rank " << m.rank << " row " << m.row << " col " << m.col << ": " << hex16(m.got) << " ("
       << sci(reference::from_bf16(m.got)) << "), " << other << " " << hex16(m.expected) << " ("
       << sci(reference::from_bf16(m.expected)) << ")\n";
}

}  // namespace

nlohmann::json verify_results_to_json(const std::vector<VerifyResult>& results) {
  std::vector<Verdict> verdicts;
  for (const auto& r : results) verdicts.push_back(r.verdict);
  nlohmann::json j = to_json(verdicts);
  nlohmann::json v = nlohmann::json::array();
  for (const auto& r : results) {
    const nlohmann::json mm = mismatches_json(r.first_mismatches);
    nlohmann::json e = {{"source", r.source},
                        {"files", r.files},
                        {"checked_rows", r.rows.size()},
                        {"element_rows", r.element_rows},
                        {"nonfinite_elements", r.nonfinite_elements},
                        {"row_subset", r.row_subset},
                        {"partials", r.has_partials},
                        {"wire", r.has_wire},
                        {"first_mismatches", mm},
                        {"diagnoses", r.diagnoses},
                        {"seconds",
                         {{"read", r.seconds_read},
                          {"reference", r.seconds_reference},
                          {"elements", r.seconds_elements},
                          {"total", r.seconds_total}}}};
    if (!r.wrong_by_rank.empty()) {
      e["wrong_by_rank"] = r.wrong_by_rank;
      e["wrong_by_slice"] = r.wrong_by_slice;
    }
    if (!r.wire_recipe.empty()) e["wire_recipe"] = r.wire_recipe;
    e["scatter"] = r.has_scatter;
    if (!r.scatter_recipe.empty()) e["scatter_recipe"] = r.scatter_recipe;
    if (!r.scatter_wrong_by_rank.empty()) e["scatter_wrong_codes_by_rank"] = r.scatter_wrong_by_rank;
    if (r.has_partials) {
      nlohmann::json pr = nlohmann::json::array();
      for (double x : r.partial_rel_l2) pr.push_back(std::isfinite(x) ? nlohmann::json(x) : nlohmann::json(nullptr));
      e["partial_rel_l2"] = pr;
    }
    if (!r.disagreeing_by_rank.empty()) {
      e["disagreeing_by_rank"] = r.disagreeing_by_rank;
      e["disagreeing_by_slice"] = r.disagreeing_by_slice;
      e["first_disagreements"] = mismatches_json(r.first_disagreements);
    }
    if (r.wire_quantize_mismatches) e["wire_quantize_mismatches"] = *r.wire_quantize_mismatches;
    if (r.wire_gather_mismatches) e["wire_gather_mismatches"] = *r.wire_gather_mismatches;
    if (r.output_to_reference_ratio && std::isfinite(*r.output_to_reference_ratio))
      e["output_to_reference_ratio"] = *r.output_to_reference_ratio;
    v.push_back(e);
  }
  j["verify"] = v;
  return j;
}

std::string verify_text(const VerifyResult& r) {
  std::ostringstream os;
  const RunRecord& rec = r.record;
  char buf[200];
  os << "verify " << r.source << ": " << rec.shape.world << " ranks, M=" << rec.shape.m << " N=" << rec.shape.n
     << " K=" << rec.shape.k << ", " << config_label(rec.config) << "; element checks on " << r.element_rows << " rows"
     << (r.row_subset ? " (the rows the dump holds)" : " (every row)") << ", relL2 on " << r.rows.size()
     << (r.rows.size() >= size_t(r.element_rows) ? " rows (every row)" : " sampled rows") << "; partials "
     << (r.has_partials ? "yes" : "no (the reduce is not checked bit for bit)") << "\n";
  std::snprintf(buf, sizeof buf, "  read %.2f s, reference %.2f s, element checks %.2f s, total %.2f s\n",
                r.seconds_read, r.seconds_reference, r.seconds_elements, r.seconds_total);
  os << buf;
  if (!r.wrong_by_rank.empty()) {
    os << "  collective vs the emulation"
       << (r.has_partials  ? " over the dumped partials"
           : r.has_scatter ? " over the dumped fp8 scatter codes"
                           : " of the fp8 gather")
       << ": " << rec.wrong_elements.value_or(0) << " wrong elements; per rank [" << list(r.wrong_by_rank)
       << "], per slice [" << list(r.wrong_by_slice) << "]\n";
    print_mismatches(os, r.first_mismatches, "expected");
  }
  if (!r.scatter_recipe.empty()) os << "  fp8 scatter recipe: " << r.scatter_recipe << "\n";
  if (!r.wire_recipe.empty()) os << "  fp8 wire recipe: " << r.wire_recipe << "\n";
  if (!r.disagreeing_by_rank.empty()) {
    os << "  rank agreement: " << rec.disagreeing_elements.value_or(0) << " disagreeing elements; per rank ["
       << list(r.disagreeing_by_rank) << "], per slice [" << list(r.disagreeing_by_slice) << "]\n";
    print_mismatches(os, r.first_disagreements, "the others hold");
  }
  os << "  NaN/inf: " << r.nonfinite_elements << " elements\n";
  if (r.has_partials) os << "  each rank's partial vs its fp32 reference: relL2 [" << dlist(r.partial_rel_l2) << "]\n";
  os << "  relL2 vs the fp32 reference: per rank [" << dlist(rec.per_rank_rel_l2) << "]";
  if (!rec.per_slice_rel_l2.empty()) os << ", per slice [" << dlist(rec.per_slice_rel_l2) << "]";
  os << "\n";
  if (r.wire_quantize_mismatches)
    os << "  fp8 wire tensors: " << *r.wire_quantize_mismatches << " owned rows unexplained, "
       << *r.wire_gather_mismatches << " gather mismatches\n";
  for (const auto& d : r.diagnoses) os << "  diagnosis: " << d << "\n";
  return os.str();
}

}  // namespace gemmar
