// CPU reference operators (OpenMP-parallel). Public so tests and tools can
// check other backends against them. Every output element is computed by one
// thread in a fixed order, so results do not depend on the thread count.
#pragma once

#include <cstdint>

namespace dashinfer {
namespace cpu {

// C[M,N] = A[M,K] @ B[K,N]   (row-major; ldc == N)
void Gemm(int M, int N, int K, const float* A, const float* B, float* C);
// y = x / rms(x) * gamma, per row of `cols`
void RMSNorm(const float* x, const float* gamma, float* y, int rows, int cols, float eps);
// y = (x - mean) / sqrt(var + eps) * gamma + beta, per row
void LayerNorm(const float* x, const float* gamma, const float* beta, float* y, int rows,
               int cols, float eps);
// In-place rotary embedding, rotate-half (GPT-NeoX / HF Llama) convention:
// x is [n, heads, head_dim]; token i has position pos0 + i; pair (j, j+d/2)
// is rotated by angle pos * theta^(-2j/d).
void Rotary(float* x, int n, int heads, int head_dim, int pos0, float theta);
// In-place numerically stable softmax over each row.
void Softmax(float* x, int rows, int cols);
// Causal GQA attention. q: [n, heads, d]; caches: [max_seq, kv_heads, d]
// holding positions 0 .. pos0+n-1; out: [n, heads, d]. Query i sees keys
// 0 .. pos0+i. Head h reads kv head h / (heads / kv_heads).
void Attention(const float* q, const float* k_cache, const float* v_cache, float* out, int n,
               int pos0, int heads, int kv_heads, int head_dim);
// out = silu(gate) * up, elementwise over n values
void SwiGLU(const float* gate, const float* up, float* out, int64_t n);
// x += y
void Add(float* x, const float* y, int64_t n);
// out[i, :] = table[ids[i], :]
void Embedding(const int32_t* ids, int n, const float* table, int dim, float* out);
int Argmax(const float* x, int n);  // first maximum

}  // namespace cpu
}  // namespace dashinfer
