// gemmar verify's input side: one rank's safetensors dump opened and checked (metadata, dtypes, shapes, layouts;
// a UsageError naming the file and tensor for anything that is not a consistent dump of one run), the W files of
// one run ordered by rank, and the rows they hold read out (through mmap: only the pages of the rows read are
// touched). The format: docs/verify.md; its writer: dump_write.hpp.
#pragma once
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "common/config.hpp"
#include "reference/formats.hpp"
#include "reference/operands.hpp"
#include "reference/quant.hpp"
#include "validate/record/safetensors.hpp"

namespace gemmar::dump {

struct RankFile {
  explicit RankFile(safetensors::File f) : file(std::move(f)) {}
  safetensors::File file;
  int rank = 0, world = 0;
  Config config;
  Fp8Format fp8 = Fp8Format::E4M3FN;
  Fp8Format wire_format = Fp8Format::E4M3FN;
  std::optional<int> pull_blocks;
  std::map<std::string, std::string> meta;
  int64_t m = 0, n = 0, k = 0;  // m: the real M; the file holds `file_rows` rows of A, out and partial
  int64_t file_rows = 0;
  std::vector<int64_t> rows;  // row-subset dumps: the global rows held
  bool partial = false, wire = false;
  bool scatter = false;  // the fp8 scatter's codes and scales ('scatter', 'scatter_scale')
};

[[noreturn]] void bad(const std::string& path, const std::string& what);
std::string meta_get(const RankFile& f, const std::string& key, bool required);
int64_t meta_int(const RankFile& f, const std::string& key, const std::string& text, int64_t lo, int64_t hi);
// The scale shapes of docs/spec.md 1.2, as the file stores them (dump_write.cpp writes the same).
std::vector<int64_t> scale_shape(Quant q, reference::Operand op, int64_t rows, int64_t k);
RankFile open_rank_file(const std::string& path);
// The same run on every rank: everything but the rank must agree with rank 0.
void check_consistent(const RankFile& f0, const RankFile& f);

// The W files of one run, ordered by rank (UsageError for a missing, repeated or extra rank).
struct DumpRun {
  std::vector<RankFile> files;
  std::vector<const RankFile*> by_rank;
  const RankFile& rank(int r) const { return *by_rank[size_t(r)]; }
};
DumpRun open_run(const std::vector<std::string>& paths);

// The A rows (codes and scales in the quant's A layout over the given file rows) and the whole of B.
reference::RankOperands read_operands(const RankFile& f, const std::vector<int64_t>& file_rows, const Shape& shape);
// Only the A rows, into op.a (op.b kept): verify reads B once per rank and A block by block.
void read_a_rows(const RankFile& f, const std::vector<int64_t>& file_rows, const Shape& shape,
                 reference::RankOperands& op);
// A bf16 tensor's rows ([file rows, N]) copied out.
std::vector<uint16_t> read_bf16_rows(const RankFile& f, const std::string& name, const std::vector<int64_t>& file_rows);

}  // namespace gemmar::dump
