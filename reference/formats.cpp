#include "reference/formats.hpp"

namespace gemmar::reference {
namespace {
std::array<float, 256> build_table(Fp8Format f) {
  std::array<float, 256> t{};
  for (int c = 0; c < 256; ++c) t[size_t(c)] = decode_fp8(uint8_t(c), f);
  return t;
}
}  // namespace

const std::array<float, 256>& decode_table(Fp8Format f) {
  static const std::array<float, 256> fn = build_table(Fp8Format::E4M3FN);
  static const std::array<float, 256> fnuz = build_table(Fp8Format::E4M3FNUZ);
  return is_fnuz(f) ? fnuz : fn;
}

}  // namespace gemmar::reference
