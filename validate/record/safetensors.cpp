#include "validate/record/safetensors.hpp"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>

#include <nlohmann/json.hpp>

#include "common/errors.hpp"

namespace gemmar::safetensors {

namespace {

constexpr uint64_t kMaxHeaderBytes = 100'000'000;  // the reference implementation's limit

[[noreturn]] void bad(const std::string& path, const std::string& what) { throw UsageError(path + ": " + what); }

}  // namespace

int64_t TensorInfo::numel() const {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  return n;
}

size_t dtype_size(const std::string& d) {
  static const std::map<std::string, size_t> sizes{
      {"BOOL", 1}, {"U8", 1},   {"I8", 1},  {"F8_E4M3", 1}, {"F8_E5M2", 1}, {"F8_E8M0", 1}, {"I16", 2}, {"U16", 2},
      {"F16", 2},  {"BF16", 2}, {"I32", 4}, {"U32", 4},     {"F32", 4},     {"I64", 8},     {"U64", 8}, {"F64", 8}};
  const auto it = sizes.find(d);
  return it == sizes.end() ? 0 : it->second;
}

std::string shape_text(const std::vector<int64_t>& shape) {
  std::string s = "[";
  for (size_t i = 0; i < shape.size(); ++i) s += (i ? ", " : "") + std::to_string(shape[i]);
  return s + "]";
}

File::File(File&& o) noexcept { *this = std::move(o); }
File& File::operator=(File&& o) noexcept {
  if (this != &o) {
    if (map_) munmap(const_cast<uint8_t*>(map_), size_);
    path_ = std::move(o.path_);
    size_ = o.size_;
    map_ = o.map_;
    data_start_ = o.data_start_;
    metadata_ = std::move(o.metadata_);
    tensors_ = std::move(o.tensors_);
    o.map_ = nullptr;
    o.size_ = 0;
  }
  return *this;
}
File::~File() {
  if (map_) munmap(const_cast<uint8_t*>(map_), size_);
}

namespace {

// Maps the whole file read-only; `size` is its length (>= 8: a header length fits).
const uint8_t* map_file(const std::string& path, uint64_t& size) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) bad(path, std::string("cannot open: ") + std::strerror(errno));
  struct stat st {};
  if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    ::close(fd);
    bad(path, "not a regular file");
  }
  size = uint64_t(st.st_size);
  if (size < 8) {
    ::close(fd);
    bad(path, "file is " + std::to_string(size) + " bytes, too short for a safetensors header (truncated?)");
  }
  void* m = mmap(nullptr, size, PROT_READ, MAP_PRIVATE, fd, 0);
  ::close(fd);
  if (m == MAP_FAILED) bad(path, std::string("cannot map: ") + std::strerror(errno));
  return static_cast<const uint8_t*>(m);
}

// The header's length: the file's first 8 bytes, a little-endian u64, the header's bytes following them.
uint64_t header_length(const std::string& path, const uint8_t* map, uint64_t size) {
  uint64_t n = 0;
  for (int i = 7; i >= 0; --i) n = (n << 8) | map[i];
  if (n > kMaxHeaderBytes)
    bad(path, "header length " + std::to_string(n) + " is not plausible (not a safetensors file?)");
  if (8 + n > size)
    bad(path, "header length " + std::to_string(n) + " runs past the end of the " + std::to_string(size) +
                  "-byte file (truncated, or not a safetensors file)");
  return n;
}

// The header: one JSON object of `n` bytes after its length.
nlohmann::json read_header(const std::string& path, const uint8_t* map, uint64_t n) {
  nlohmann::json h;
  try {
    h = nlohmann::json::parse(reinterpret_cast<const char*>(map + 8), reinterpret_cast<const char*>(map + 8 + n));
  } catch (const nlohmann::json::exception& e) {
    bad(path, std::string("header is not valid JSON: ") + e.what());
  }
  if (!h.is_object()) bad(path, "header is not a JSON object");
  return h;
}

std::map<std::string, std::string> read_metadata(const std::string& path, const nlohmann::json& v) {
  if (!v.is_object()) bad(path, "__metadata__ is not an object");
  std::map<std::string, std::string> out;
  for (auto m2 = v.begin(); m2 != v.end(); ++m2) {
    if (!m2.value().is_string())
      bad(path, "__metadata__ '" + m2.key() + "' is not a string (safetensors metadata values are strings)");
    out[m2.key()] = m2.value().get<std::string>();
  }
  return out;
}

// One tensor's header entry: a known dtype, a plausible shape, and data_offsets that span exactly its bytes
// inside the `buffer` bytes of data.
TensorInfo read_tensor_info(const std::string& path, const std::string& name, const nlohmann::json& v,
                            uint64_t buffer) {
  const std::string where = "tensor '" + name + "'";
  if (!v.is_object()) bad(path, where + ": header entry is not an object");
  TensorInfo t;
  t.name = name;
  if (!v.contains("dtype") || !v["dtype"].is_string()) bad(path, where + ": no dtype string");
  t.dtype = v["dtype"].get<std::string>();
  const size_t es = dtype_size(t.dtype);
  if (es == 0) bad(path, where + ": unknown dtype '" + t.dtype + "'");
  if (!v.contains("shape") || !v["shape"].is_array()) bad(path, where + ": no shape array");
  uint64_t numel = 1;
  for (const auto& d : v["shape"]) {
    if (!d.is_number_unsigned()) bad(path, where + ": shape entries must be non-negative integers");
    const uint64_t x = d.get<uint64_t>();
    if (x > (uint64_t(1) << 40) || (x && numel > (uint64_t(1) << 50) / x))
      bad(path, where + ": shape " + v["shape"].dump() + " is not plausible");
    numel *= x;
    t.shape.push_back(int64_t(x));
  }
  const auto& off = v.contains("data_offsets") ? v["data_offsets"] : nlohmann::json();
  if (!off.is_array() || off.size() != 2 || !off[0].is_number_unsigned() || !off[1].is_number_unsigned())
    bad(path, where + ": data_offsets must be [begin, end]");
  t.begin = off[0].get<uint64_t>();
  t.end = off[1].get<uint64_t>();
  if (t.end < t.begin) bad(path, where + ": data_offsets end before they begin");
  if (t.end - t.begin != numel * es)
    bad(path, where + ": shape " + shape_text(t.shape) + " of " + t.dtype + " is " + std::to_string(numel * es) +
                  " bytes but its data_offsets span " + std::to_string(t.end - t.begin) + " (the header lies)");
  if (t.end > buffer)
    bad(path, where + ": its bytes end at " + std::to_string(t.end) + " but the file holds only " +
                  std::to_string(buffer) + " bytes of data (truncated)");
  return t;
}

// The tensors tile the data buffer: no overlap, no hole, nothing after the last.
void check_tiling(const std::string& path, const std::map<std::string, TensorInfo>& tensors, uint64_t buffer) {
  std::vector<const TensorInfo*> by_offset;
  for (const auto& [name, t] : tensors) by_offset.push_back(&t);
  std::sort(by_offset.begin(), by_offset.end(), [](const TensorInfo* a, const TensorInfo* b) {
    return a->begin != b->begin ? a->begin < b->begin : a->end < b->end;
  });
  uint64_t at = 0;
  for (const TensorInfo* t : by_offset) {
    if (t->begin < at) bad(path, "tensor '" + t->name + "' overlaps the tensor before it (the header lies)");
    if (t->begin > at)
      bad(path, "tensor '" + t->name + "': a hole of " + std::to_string(t->begin - at) +
                    " bytes before it (the header lies)");
    at = t->end;
  }
  if (at != buffer)
    bad(path, std::to_string(buffer - at) + " bytes after the last tensor that no tensor covers (the header lies)");
}

}  // namespace

File File::open(const std::string& path) {
  File f;
  f.path_ = path;
  f.map_ = map_file(path, f.size_);  // unmapped by ~File when a check below throws
  const uint64_t n = header_length(path, f.map_, f.size_);
  f.data_start_ = 8 + n;
  const nlohmann::json h = read_header(path, f.map_, n);
  const uint64_t buffer = f.size_ - f.data_start_;
  for (auto it = h.begin(); it != h.end(); ++it) {
    if (it.key() == "__metadata__")
      f.metadata_ = read_metadata(path, it.value());
    else
      f.tensors_[it.key()] = read_tensor_info(path, it.key(), it.value(), buffer);
  }
  check_tiling(path, f.tensors_, buffer);
  return f;
}

const TensorInfo& File::tensor(const std::string& name) const {
  const auto it = tensors_.find(name);
  if (it == tensors_.end()) bad(path_, "no tensor '" + name + "'");
  return it->second;
}

std::vector<std::string> File::names() const {
  std::vector<std::string> out;
  for (const auto& [n, t] : tensors_) out.push_back(n);
  return out;
}

const uint8_t* File::data(const TensorInfo& t) const { return map_ + data_start_ + t.begin; }

void File::release(const TensorInfo& t, uint64_t from, uint64_t to) const {
  // Whole pages strictly inside the range only: a page shared with bytes not yet read stays mapped.
  const uint64_t page = uint64_t(sysconf(_SC_PAGESIZE));
  const uint64_t lo = (data_start_ + t.begin + from + page - 1) / page * page;
  const uint64_t hi = (data_start_ + t.begin + std::min<uint64_t>(to, t.end - t.begin)) / page * page;
  if (hi > lo) madvise(const_cast<uint8_t*>(map_) + lo, hi - lo, MADV_DONTNEED);  // advice: a failure is harmless
}

void write_file(const std::string& path, const std::map<std::string, std::string>& metadata,
                const std::vector<TensorOut>& tensors) {
  nlohmann::ordered_json h;
  if (!metadata.empty()) {
    nlohmann::ordered_json m = nlohmann::ordered_json::object();
    for (const auto& [k, v] : metadata) m[k] = v;
    h["__metadata__"] = m;
  }
  uint64_t off = 0;
  for (const auto& t : tensors) {
    const size_t es = dtype_size(t.dtype);
    GEMMAR_CHECK(es > 0, "dtype ", t.dtype);
    uint64_t numel = 1;
    for (int64_t d : t.shape) numel *= uint64_t(d);
    GEMMAR_CHECK(numel * es == t.bytes, "tensor ", t.name, ": ", t.bytes, " bytes for shape ", shape_text(t.shape));
    h[t.name] = {{"dtype", t.dtype}, {"shape", t.shape}, {"data_offsets", {off, off + t.bytes}}};
    off += t.bytes;
  }
  std::string header = h.dump();
  header.append((8 - header.size() % 8) % 8, ' ');
  const std::string tmp = path + ".tmp";
  {
    std::ofstream os(tmp, std::ios::binary | std::ios::trunc);
    if (!os) throw EnvironmentError(tmp + ": cannot open for writing");
    uint8_t len[8];
    uint64_t n = header.size();
    for (int i = 0; i < 8; ++i) len[i] = uint8_t(n >> (8 * i));
    os.write(reinterpret_cast<const char*>(len), 8);
    os.write(header.data(), std::streamsize(header.size()));
    for (const auto& t : tensors) os.write(static_cast<const char*>(t.data), std::streamsize(t.bytes));
    os.flush();
    if (!os) throw EnvironmentError(tmp + ": write failed (disk full?)");
  }
  std::error_code ec;
  std::filesystem::rename(tmp, path, ec);
  if (ec) throw EnvironmentError(path + ": cannot rename " + tmp + ": " + ec.message());
}

}  // namespace gemmar::safetensors
