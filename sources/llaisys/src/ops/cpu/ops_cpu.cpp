// Reference CPU kernels. Every op reads its inputs as f32, accumulates in f32
// (f64 only for rope angles) and rounds once when storing, the same numeric
// recipe the CUDA kernels follow, so both devices match torch within the test
// tolerances. With -DLLAISYS_USE_OPENMP=ON the outer loops of large calls run
// in parallel (the if() clauses keep small calls off the thread pool).
#include "../kernels.hpp"
#include "../../core/dtype.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

namespace llaisys::cpu {
namespace {

template <typename T> inline float ld(const void *p, size_t i) { return toF32(static_cast<const T *>(p)[i]); }
template <typename T> inline void st(void *p, size_t i, float v) { static_cast<T *>(p)[i] = fromF32<T>(v); }

} // namespace

void add(void *c, const void *a, const void *b, llaisysDataType_t dt, size_t n) {
    dispatchFloat(dt, [&](auto tag) {
        using T = decltype(tag);
#pragma omp parallel for if (n >= (1u << 16)) schedule(static)
        for (ptrdiff_t i = 0; i < ptrdiff_t(n); ++i) st<T>(c, i, ld<T>(a, i) + ld<T>(b, i));
    });
}

void argmax(int64_t *max_idx, void *max_val, const void *vals, llaisysDataType_t dt, size_t n) {
    dispatchFloat(dt, [&](auto tag) {
        using T = decltype(tag);
        size_t best = 0;
        float bv = ld<T>(vals, 0);
        for (size_t i = 1; i < n; ++i) {
            float v = ld<T>(vals, i);
            if (v > bv) { bv = v; best = i; } // strict '>' keeps the first maximum, like torch
        }
        *max_idx = int64_t(best);
        static_cast<T *>(max_val)[0] = static_cast<const T *>(vals)[best];
    });
}

void embedding(void *out, const int64_t *index, const void *weight, llaisysDataType_t dt, size_t n,
               size_t vocab, size_t d) {
    size_t es = dtypeSize(dt);
    for (size_t i = 0; i < n; ++i) {
        int64_t r = index[i];
        if (r < 0 || size_t(r) >= vocab)
            fail(LLAISYS_ERROR_INVALID_ARGUMENT, "embedding: index[", i, "] = ", r, " out of range [0, ", vocab, ")");
        std::copy_n(static_cast<const char *>(weight) + size_t(r) * d * es, d * es, static_cast<char *>(out) + i * d * es);
    }
}

void linear(void *out, const void *in, const void *weight, const void *bias, llaisysDataType_t dt, size_t M,
            size_t N, size_t K) {
    dispatchFloat(dt, [&](auto tag) {
        using T = decltype(tag);
        // Convert the weight once so the inner loop is a plain f32 dot product.
        std::vector<float> w(N * K);
        for (size_t i = 0; i < N * K; ++i) w[i] = ld<T>(weight, i);
#pragma omp parallel for if (M * N * K >= (1u << 20)) schedule(static)
        for (ptrdiff_t m = 0; m < ptrdiff_t(M); ++m) {
            std::vector<float> x(K);
            for (size_t k = 0; k < K; ++k) x[k] = ld<T>(in, m * K + k);
            for (size_t nn = 0; nn < N; ++nn) {
                const float *wr = &w[nn * K];
                float acc = 0.f;
                for (size_t k = 0; k < K; ++k) acc += x[k] * wr[k];
                if (bias) acc += ld<T>(bias, nn);
                st<T>(out, m * N + nn, acc);
            }
        }
    });
}

void rmsNorm(void *out, const void *in, const void *weight, llaisysDataType_t dt, size_t rows, size_t d,
             float eps) {
    dispatchFloat(dt, [&](auto tag) {
        using T = decltype(tag);
#pragma omp parallel for if (rows * d >= (1u << 16)) schedule(static)
        for (ptrdiff_t r = 0; r < ptrdiff_t(rows); ++r) {
            float ss = 0.f;
            for (size_t j = 0; j < d; ++j) { float v = ld<T>(in, r * d + j); ss += v * v; }
            float inv = 1.f / std::sqrt(ss / float(d) + eps);
            for (size_t j = 0; j < d; ++j) st<T>(out, r * d + j, ld<T>(in, r * d + j) * inv * ld<T>(weight, j));
        }
    });
}

void rope(void *out, const void *in, const int64_t *pos, llaisysDataType_t dt, size_t seq, size_t nhead, size_t d,
          float theta) {
    dispatchFloat(dt, [&](auto tag) {
        using T = decltype(tag);
        size_t half = d / 2;
#pragma omp parallel for if (seq * nhead * d >= (1u << 16)) schedule(static)
        for (ptrdiff_t s = 0; s < ptrdiff_t(seq); ++s) {
            for (size_t j = 0; j < half; ++j) {
                // f64 angle: positions can be large and f32 pos*freq loses digits.
                double ang = double(pos[s]) / std::pow(double(theta), 2.0 * double(j) / double(d));
                float c = float(std::cos(ang)), sn = float(std::sin(ang));
                for (size_t h = 0; h < nhead; ++h) {
                    size_t base = (size_t(s) * nhead + h) * d;
                    float a = ld<T>(in, base + j), b = ld<T>(in, base + j + half);
                    st<T>(out, base + j, a * c - b * sn);
                    st<T>(out, base + j + half, b * c + a * sn);
                }
            }
        }
    });
}

void selfAttention(void *out, const void *q, const void *k, const void *v, llaisysDataType_t dt, size_t L, size_t S,
                   size_t nhead, size_t nkvhead, size_t d, size_t dv, float scale) {
    dispatchFloat(dt, [&](auto tag) {
        using T = decltype(tag);
        size_t group = nhead / nkvhead;
#pragma omp parallel for if (L * nhead * S * d >= (1u << 18)) collapse(2) schedule(static)
        for (ptrdiff_t i = 0; i < ptrdiff_t(L); ++i) {
            for (ptrdiff_t h = 0; h < ptrdiff_t(nhead); ++h) {
                size_t kvh = size_t(h) / group;
                size_t visible = size_t(i) + (S - L) + 1; // causal: keys 0 .. i + S - L
                std::vector<float> p(visible), acc(dv, 0.f);
                float mx = -std::numeric_limits<float>::infinity();
                for (size_t j = 0; j < visible; ++j) {
                    float dot = 0.f;
                    for (size_t t = 0; t < d; ++t)
                        dot += ld<T>(q, (i * nhead + h) * d + t) * ld<T>(k, (j * nkvhead + kvh) * d + t);
                    p[j] = dot * scale;
                    mx = std::max(mx, p[j]);
                }
                float sum = 0.f;
                for (size_t j = 0; j < visible; ++j) { p[j] = std::exp(p[j] - mx); sum += p[j]; }
                for (size_t j = 0; j < visible; ++j)
                    for (size_t t = 0; t < dv; ++t) acc[t] += p[j] * ld<T>(v, (j * nkvhead + kvh) * dv + t);
                for (size_t t = 0; t < dv; ++t) st<T>(out, (i * nhead + h) * dv + t, acc[t] / sum);
            }
        }
    });
}

void swiglu(void *out, const void *gate, const void *up, llaisysDataType_t dt, size_t n) {
    dispatchFloat(dt, [&](auto tag) {
        using T = decltype(tag);
#pragma omp parallel for if (n >= (1u << 16)) schedule(static)
        for (ptrdiff_t i = 0; i < ptrdiff_t(n); ++i) {
            float g = ld<T>(gate, i);
            st<T>(out, i, ld<T>(up, i) * g / (1.f + std::exp(-g)));
        }
    });
}

} // namespace llaisys::cpu
