#include "validate/harness/dump_write.hpp"

#include <filesystem>
#include <system_error>

#include "common/config_fields.hpp"
#include "common/errors.hpp"
#include "reference/formats.hpp"
#include "reference/operands.hpp"
#include "validate/harness/verify_files.hpp"
#include "validate/record/safetensors.hpp"

namespace gemmar {

namespace fs = std::filesystem;
using dump::scale_shape;
using reference::Operand;

void write_rank_dump(const std::string& path, const RankDump& d) {
  GEMMAR_CHECK(d.a_codes && d.a_scales && d.b_codes && d.b_scales && d.out);
  const Quant q = d.config.quant;
  const int64_t R = d.rows.empty() ? d.shape.m : int64_t(d.rows.size());
  const int64_t N = d.shape.n, K = d.shape.k;
  std::map<std::string, std::string> meta = d.extra_metadata;
  meta["format"] = kDumpFormat;
  meta["version"] = kDumpVersion;
  meta["rank"] = std::to_string(d.rank);
  meta["world"] = std::to_string(d.shape.world);
  meta["m"] = std::to_string(d.shape.m);
  meta["n"] = std::to_string(N);
  meta["k"] = std::to_string(K);
  // Every config field through the table (common/config_fields.hpp); a backend's own pull grid stands.
  for (const auto& [key, value] : config_to_metadata(d.config))
    if (key != "pull_blocks" || !meta.count(key)) meta[key] = value;
  meta["fp8_format"] = to_string(d.fp8_format);
  const std::string code_dtype = d.fp8_format == Fp8Format::E4M3FN ? "F8_E4M3" : "U8";
  std::vector<safetensors::TensorOut> t;
  t.push_back({"a", code_dtype, {R, K}, d.a_codes->data(), d.a_codes->size()});
  t.push_back({"a_scale", "F32", scale_shape(q, Operand::A, R, K), d.a_scales->data(), d.a_scales->size() * 4});
  t.push_back({"b", code_dtype, {N, K}, d.b_codes->data(), d.b_codes->size()});
  t.push_back({"b_scale", "F32", scale_shape(q, Operand::B, N, K), d.b_scales->data(), d.b_scales->size() * 4});
  t.push_back({"out", "BF16", {R, N}, d.out->data(), d.out->size() * 2});
  if (d.partial) t.push_back({"partial", "BF16", {R, N}, d.partial->data(), d.partial->size() * 2});
  if (!d.rows.empty()) t.push_back({"rows", "I64", {R}, d.rows.data(), d.rows.size() * 8});
  safetensors::write_file(path, meta, t);
}

void dump_backend_result(const std::string& dir, const RunRequest& req, const BackendResult& res) {
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec) throw EnvironmentError("--dump " + dir + ": cannot create the directory: " + ec.message());
  reference::OperandSpec spec;
  spec.shape = req.shape;
  spec.quant = req.config.quant;
  spec.seed = req.seed;
  // The fnuz-read-as-fn fault runs on e4m3fnuz operands (the CPU backend encodes them so): the dump holds them.
  if (req.inject.fnuz_read_as_fn) spec.fp8_format = Fp8Format::E4M3FNUZ;
  bool every_row = int64_t(res.rows.size()) == req.shape.m;
  for (size_t i = 0; every_row && i < res.rows.size(); ++i) every_row = res.rows[i] == int64_t(i);
  for (int r = 0; r < req.shape.world; ++r) {
    const reference::RankOperands ops = reference::make_rank_operands(spec, r, res.rows);
    std::vector<uint16_t> partial;
    if (!res.partials.empty())
      for (float x : res.partials[size_t(r)]) partial.push_back(reference::to_bf16(x));
    RankDump d;
    d.rank = r;
    d.shape = req.shape;
    d.config = req.config;
    d.fp8_format = spec.fp8_format;
    if (!every_row) d.rows = res.rows;
    d.a_codes = &ops.a.codes;
    d.a_scales = &ops.a.scales;
    d.b_codes = &ops.b.codes;
    d.b_scales = &ops.b.scales;
    d.out = &res.outputs[size_t(r)];
    if (!partial.empty()) d.partial = &partial;
    d.extra_metadata = {{"producer", "gemmar run"},
                        {"backend", res.backend},
                        {"seed", std::to_string(req.seed)},
                        {"inject", req.inject.label()},
                        {"pull_blocks", std::to_string(req.inject.pull_blocks.value_or(req.config.pull_blocks))},
                        {"profile", req.profile.empty() ? default_profile(res.backend, res.device, res.ranks_per_device)
                                                        : req.profile}};
    if (!res.device.empty()) d.extra_metadata["device"] = res.device;
    if (!res.gemm_impl.empty()) d.extra_metadata["gemm_impl"] = res.gemm_impl;
    write_rank_dump((fs::path(dir) / ("rank" + std::to_string(r) + ".safetensors")).string(), d);
  }
}

}  // namespace gemmar
