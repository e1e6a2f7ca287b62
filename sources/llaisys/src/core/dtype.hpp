// Host-side dtype helpers: sizes, names and IEEE f16 / bfloat16 <-> f32
// conversion with round-to-nearest-even (the rounding torch and the CUDA
// intrinsics __float2half_rn / __float2bfloat16 use), so CPU and GPU results
// of the same f32 value round identically.
#pragma once

#include "error.hpp"

#include <cstdint>
#include <cstring>

namespace llaisys {

struct f16_t { uint16_t bits; };
struct bf16_t { uint16_t bits; };

inline size_t dtypeSize(llaisysDataType_t dt) {
    switch (dt) {
    case LLAISYS_DTYPE_F32: return 4;
    case LLAISYS_DTYPE_F16: return 2;
    case LLAISYS_DTYPE_BF16: return 2;
    case LLAISYS_DTYPE_I64: return 8;
    }
    fail(LLAISYS_ERROR_INVALID_ARGUMENT, "unknown dtype ", int(dt));
}

inline const char *dtypeName(llaisysDataType_t dt) {
    switch (dt) {
    case LLAISYS_DTYPE_F32: return "f32";
    case LLAISYS_DTYPE_F16: return "f16";
    case LLAISYS_DTYPE_BF16: return "bf16";
    case LLAISYS_DTYPE_I64: return "i64";
    }
    return "?";
}

inline bool isFloatDtype(llaisysDataType_t dt) {
    return dt == LLAISYS_DTYPE_F32 || dt == LLAISYS_DTYPE_F16 || dt == LLAISYS_DTYPE_BF16;
}

inline uint32_t f32Bits(float f) { uint32_t u; std::memcpy(&u, &f, 4); return u; }
inline float bitsF32(uint32_t u) { float f; std::memcpy(&f, &u, 4); return f; }

inline float toF32(float v) { return v; }
inline float toF32(bf16_t v) { return bitsF32(uint32_t(v.bits) << 16); }
inline float toF32(f16_t v) {
    uint32_t sign = uint32_t(v.bits & 0x8000) << 16;
    uint32_t exp = (v.bits >> 10) & 0x1f, man = v.bits & 0x3ff;
    if (exp == 0x1f) return bitsF32(sign | 0x7f800000u | (man << 13)); // inf/nan
    if (exp == 0) {
        if (man == 0) return bitsF32(sign);
        // subnormal: value = man * 2^-24
        float f = float(man) * 5.9604644775390625e-8f;
        return sign ? -f : f;
    }
    return bitsF32(sign | ((exp + 112) << 23) | (man << 13));
}

template <typename T> T fromF32(float f);
template <> inline float fromF32<float>(float f) { return f; }
template <> inline bf16_t fromF32<bf16_t>(float f) {
    uint32_t u = f32Bits(f);
    if ((u & 0x7fffffffu) > 0x7f800000u) return bf16_t{uint16_t((u >> 16) | 0x40)}; // quiet nan
    u += 0x7fffu + ((u >> 16) & 1u); // round to nearest even
    return bf16_t{uint16_t(u >> 16)};
}
template <> inline f16_t fromF32<f16_t>(float f) {
    uint32_t u = f32Bits(f);
    uint16_t sign = uint16_t((u >> 16) & 0x8000);
    uint32_t a = u & 0x7fffffffu;
    if (a > 0x7f800000u) return f16_t{uint16_t(sign | 0x7e00)};     // nan
    if (a >= 0x477ff000u) return f16_t{uint16_t(sign | 0x7c00)};    // rounds to inf
    if (a < 0x38800000u) {                                            // f16 subnormal / zero
        // result = round(|f| / 2^-24) as an integer mantissa, ties to even
        uint32_t exp = a >> 23;
        if (exp < 102) return f16_t{sign}; // below half the smallest subnormal
        uint32_t man = (a & 0x7fffffu) | 0x800000u;
        uint32_t shift = 126 - exp;       // 14..24
        uint32_t q = man >> shift, rem = man & ((1u << shift) - 1), half = 1u << (shift - 1);
        if (rem > half || (rem == half && (q & 1))) ++q;
        return f16_t{uint16_t(sign | q)};
    }
    // normal: rebias exponent, round the 13 dropped mantissa bits to even
    uint32_t r = a - 0x38000000u;
    r += 0xfffu + ((r >> 13) & 1u);
    return f16_t{uint16_t(sign | (r >> 13))};
}

template <typename T> struct DtypeOf;
template <> struct DtypeOf<float> { static constexpr llaisysDataType_t value = LLAISYS_DTYPE_F32; };
template <> struct DtypeOf<f16_t> { static constexpr llaisysDataType_t value = LLAISYS_DTYPE_F16; };
template <> struct DtypeOf<bf16_t> { static constexpr llaisysDataType_t value = LLAISYS_DTYPE_BF16; };

// Calls fn(T{}) with T the C++ element type of a float dtype.
template <typename Fn> void dispatchFloat(llaisysDataType_t dt, Fn &&fn) {
    switch (dt) {
    case LLAISYS_DTYPE_F32: fn(float{}); return;
    case LLAISYS_DTYPE_F16: fn(f16_t{}); return;
    case LLAISYS_DTYPE_BF16: fn(bf16_t{}); return;
    default: fail(LLAISYS_ERROR_INVALID_ARGUMENT, "dtype ", dtypeName(dt), " is not f32/f16/bf16");
    }
}

} // namespace llaisys
