// Host-side views of the number formats (docs/spec.md 1.2): e4m3fn, e4m3fnuz and bf16. The conversions themselves
// live in numerics_inline.hpp, shared with the GPU kernels; this adds Fp8Format dispatch and decode tables.
#pragma once
#include <array>
#include <cstdint>

#include "common/config.hpp"
#include "reference/numerics_inline.hpp"

namespace gemmar::reference {

inline bool is_fnuz(Fp8Format f) { return f == Fp8Format::E4M3FNUZ; }
inline float fp8_max(Fp8Format f) { return numerics::fp8_max(is_fnuz(f)); }
inline uint8_t encode_fp8(float x, Fp8Format f) { return numerics::f32_to_e4m3(x, is_fnuz(f)); }
inline float decode_fp8(uint8_t c, Fp8Format f) { return numerics::e4m3_to_f32(c, is_fnuz(f)); }
inline uint16_t to_bf16(float x) { return numerics::f32_to_bf16(x); }
inline float from_bf16(uint16_t h) { return numerics::bf16_to_f32(h); }

// All 256 decoded values of a format (NaN codes decode to NaN), for the hot loops of the emulation.
const std::array<float, 256>& decode_table(Fp8Format);

}  // namespace gemmar::reference
