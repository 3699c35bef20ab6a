// safetensors (https://github.com/huggingface/safetensors), the ecosystem's tensor file: 8 bytes of little-endian
// header length N, N bytes of JSON header ({"name": {"dtype", "shape", "data_offsets": [begin, end]}, ...,
// "__metadata__": {string: string}}), then the raw little-endian bytes, row-major, offsets relative to the
// start of the byte buffer. gemmar reads the tensor dumps of `gemmar verify` with it (mmap: only the pages of
// the rows it samples are read) and writes them for `gemmar run --dump`.
//
// The reader checks everything a header can lie about, and every error is a UsageError (exit 2) that names the
// file and, where there is one, the tensor: header length beyond the file, JSON that is not an object,
// unknown dtype, a shape whose byte size differs from its offsets, offsets beyond the file (truncated),
// overlapping tensors or holes in the byte buffer (the format forbids both), a non-string metadata value.
#pragma once
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

namespace gemmar::safetensors {

struct TensorInfo {
  std::string name;
  std::string dtype;            // as spelled in the file: "F8_E4M3", "U8", "BF16", "F32", "I64", ...
  std::vector<int64_t> shape;   // empty: a scalar
  uint64_t begin = 0, end = 0;  // byte offsets into the byte buffer
  int64_t numel() const;
};

// Bytes per element of a dtype spelling; 0 when safetensors has no such dtype.
size_t dtype_size(const std::string& dtype);
// "[16, 2048]"
std::string shape_text(const std::vector<int64_t>& shape);

class File {
 public:
  // Maps the file read-only and validates its header. UsageError naming the file (and tensor) on any fault.
  static File open(const std::string& path);
  File(File&&) noexcept;
  File& operator=(File&&) noexcept;
  ~File();

  const std::string& path() const { return path_; }
  uint64_t file_bytes() const { return size_; }
  const std::map<std::string, std::string>& metadata() const { return metadata_; }
  bool has(const std::string& name) const { return tensors_.count(name) != 0; }
  // UsageError "<path>: no tensor 'name'" when absent.
  const TensorInfo& tensor(const std::string& name) const;
  std::vector<std::string> names() const;
  // The tensor's bytes (mapped; valid while the File lives). Pages are read on first touch.
  const uint8_t* data(const TensorInfo&) const;
  // Drops the mapped pages of bytes [from, to) of the tensor from this process (they stay in the page cache and
  // are read again on the next touch): a streaming reader keeps its resident set at the rows in flight.
  void release(const TensorInfo&, uint64_t from, uint64_t to) const;

 private:
  File() = default;
  std::string path_;
  uint64_t size_ = 0;
  const uint8_t* map_ = nullptr;
  uint64_t data_start_ = 0;
  std::map<std::string, std::string> metadata_;
  std::map<std::string, TensorInfo> tensors_;
};

// A tensor to write: its bytes are given whole (little-endian, row-major, numel * dtype_size bytes).
struct TensorOut {
  std::string name;
  std::string dtype;
  std::vector<int64_t> shape;
  const void* data = nullptr;
  size_t bytes = 0;
};

// Writes a safetensors file (tensors in the given order, the header padded with spaces to a multiple of 8
// bytes as the reference implementation does). Written to PATH.tmp then renamed: a reader never sees half a
// file. EnvironmentError (exit 3) when the file cannot be written; GEMMAR_CHECK on a byte count that does not
// match the shape.
void write_file(const std::string& path, const std::map<std::string, std::string>& metadata,
                const std::vector<TensorOut>& tensors);

}  // namespace gemmar::safetensors
