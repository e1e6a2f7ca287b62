// Own CUDA kernels for the tiny transformer block. Written for clarity and
// exact fp32 semantics (no fast-math, no TF32) so results match the CPU
// backend to ~1e-5; throughput is not the goal. cuBLAS, when found, replaces
// only Gemm (see backend_cuda.cpp).
#include <cfloat>

#include "kernels.cuh"

namespace dashinfer {
namespace cuda {
namespace {

constexpr int kTile = 16;
constexpr int kBlock = 256;

// Classic shared-memory tiled SGEMM, C[M,N] = A[M,K] @ B[K,N].
__global__ void GemmTiled(int M, int N, int K, const float* A, const float* B, float* C) {
  __shared__ float As[kTile][kTile];
  __shared__ float Bs[kTile][kTile + 1];
  const int row = blockIdx.y * kTile + threadIdx.y, col = blockIdx.x * kTile + threadIdx.x;
  float acc = 0.f;
  for (int k0 = 0; k0 < K; k0 += kTile) {
    const int ka = k0 + threadIdx.x, kb = k0 + threadIdx.y;
    As[threadIdx.y][threadIdx.x] = (row < M && ka < K) ? A[(int64_t)row * K + ka] : 0.f;
    Bs[threadIdx.y][threadIdx.x] = (kb < K && col < N) ? B[(int64_t)kb * N + col] : 0.f;
    __syncthreads();
#pragma unroll
    for (int k = 0; k < kTile; ++k) acc += As[threadIdx.y][k] * Bs[k][threadIdx.x];
    __syncthreads();
  }
  if (row < M && col < N) C[(int64_t)row * N + col] = acc;
}

// Decode steps have M == 1: one thread per output column, coalesced over B.
__global__ void Gemv(int N, int K, const float* a, const float* B, float* c) {
  const int col = blockIdx.x * blockDim.x + threadIdx.x;
  if (col >= N) return;
  float acc = 0.f;
  for (int k = 0; k < K; ++k) acc += a[k] * B[(int64_t)k * N + col];
  c[col] = acc;
}

// Block-wide sum/max (blockDim.x a multiple of 32, <= 1024). `red` has 32 slots.
__device__ float BlockReduce(float v, float* red, bool is_max) {
  for (int o = 16; o > 0; o >>= 1) {
    const float other = __shfl_xor_sync(0xffffffffu, v, o);
    v = is_max ? fmaxf(v, other) : v + other;
  }
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32, nwarps = blockDim.x / 32;
  __syncthreads();  // `red` may still be read by a previous reduction
  if (lane == 0) red[warp] = v;
  __syncthreads();
  v = lane < nwarps ? red[lane] : (is_max ? -FLT_MAX : 0.f);
  for (int o = 16; o > 0; o >>= 1) {
    const float other = __shfl_xor_sync(0xffffffffu, v, o);
    v = is_max ? fmaxf(v, other) : v + other;
  }
  return v;  // every thread holds the result
}

__global__ void RMSNormK(const float* x, const float* g, float* y, int cols, float eps) {
  __shared__ float red[32];
  const float* xr = x + (int64_t)blockIdx.x * cols;
  float* yr = y + (int64_t)blockIdx.x * cols;
  float ss = 0.f;
  for (int c = threadIdx.x; c < cols; c += blockDim.x) ss += xr[c] * xr[c];
  ss = BlockReduce(ss, red, false);
  const float inv = rsqrtf(ss / cols + eps);
  for (int c = threadIdx.x; c < cols; c += blockDim.x) yr[c] = xr[c] * inv * g[c];
}

__global__ void LayerNormK(const float* x, const float* g, const float* b, float* y, int cols,
                           float eps) {
  __shared__ float red[32];
  const float* xr = x + (int64_t)blockIdx.x * cols;
  float* yr = y + (int64_t)blockIdx.x * cols;
  float s = 0.f;
  for (int c = threadIdx.x; c < cols; c += blockDim.x) s += xr[c];
  const float mean = BlockReduce(s, red, false) / cols;
  float v = 0.f;
  for (int c = threadIdx.x; c < cols; c += blockDim.x) v += (xr[c] - mean) * (xr[c] - mean);
  const float inv = rsqrtf(BlockReduce(v, red, false) / cols + eps);
  for (int c = threadIdx.x; c < cols; c += blockDim.x) yr[c] = (xr[c] - mean) * inv * g[c] + b[c];
}

__global__ void RotaryK(float* x, int n, int heads, int head_dim, int pos0, float theta) {
  const int half = head_dim / 2;
  const int64_t idx = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
  if (idx >= (int64_t)n * heads * half) return;
  const int j = idx % half;
  const int64_t ih = idx / half;  // token * heads + head
  const int i = ih / heads;
  float* v = x + ih * head_dim;
  const float ang = (float)(pos0 + i) * powf(theta, -2.0f * j / head_dim);
  float s, c;
  sincosf(ang, &s, &c);
  const float a = v[j], b = v[j + half];
  v[j] = a * c - b * s;
  v[j + half] = b * c + a * s;
}

// One block per (query token, head). Shared memory: q (head_dim) + scores
// (pos0 + n). Causal: query i sees keys 0 .. pos0 + i.
__global__ void AttentionK(const float* q, const float* kc, const float* vc, float* out,
                           int pos0, int heads, int kv_heads, int head_dim) {
  extern __shared__ float smem[];
  __shared__ float red[32];
  float* qs = smem;
  float* scores = smem + head_dim;
  const int i = blockIdx.x, h = blockIdx.y, kvh = h / (heads / kv_heads), len = pos0 + i + 1;
  const int64_t kv_stride = (int64_t)kv_heads * head_dim;
  const float* qv = q + ((int64_t)i * heads + h) * head_dim;
  for (int d = threadIdx.x; d < head_dim; d += blockDim.x) qs[d] = qv[d];
  __syncthreads();
  const float scale = rsqrtf((float)head_dim);
  float mx = -FLT_MAX;
  for (int t = threadIdx.x; t < len; t += blockDim.x) {
    const float* kv = kc + t * kv_stride + kvh * head_dim;
    float dot = 0.f;
    for (int d = 0; d < head_dim; ++d) dot += qs[d] * kv[d];
    scores[t] = dot * scale;
    mx = fmaxf(mx, scores[t]);
  }
  mx = BlockReduce(mx, red, true);
  float sum = 0.f;
  for (int t = threadIdx.x; t < len; t += blockDim.x) {
    scores[t] = expf(scores[t] - mx);
    sum += scores[t];
  }
  const float inv = 1.f / BlockReduce(sum, red, false);  // also syncs `scores`
  float* o = out + ((int64_t)i * heads + h) * head_dim;
  for (int d = threadIdx.x; d < head_dim; d += blockDim.x) {
    float acc = 0.f;
    for (int t = 0; t < len; ++t) acc += scores[t] * vc[t * kv_stride + kvh * head_dim + d];
    o[d] = acc * inv;
  }
}

__global__ void SwiGLUK(const float* g, const float* u, float* out, int64_t n) {
  const int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out[i] = g[i] / (1.f + expf(-g[i])) * u[i];
}

__global__ void AddK(float* x, const float* y, int64_t n) {
  const int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) x[i] += y[i];
}

__global__ void EmbeddingK(const int32_t* ids, int n, const float* table, int dim, float* out) {
  const int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= (int64_t)n * dim) return;
  out[i] = table[(int64_t)ids[i / dim] * dim + i % dim];
}

unsigned Blocks(int64_t n, int per = kBlock) { return unsigned((n + per - 1) / per); }

}  // namespace

cudaError_t Gemm(int M, int N, int K, const float* A, const float* B, float* C, cudaStream_t s) {
  if (M == 1) {
    Gemv<<<Blocks(N), kBlock, 0, s>>>(N, K, A, B, C);
  } else {
    dim3 grid((N + kTile - 1) / kTile, (M + kTile - 1) / kTile), block(kTile, kTile);
    GemmTiled<<<grid, block, 0, s>>>(M, N, K, A, B, C);
  }
  return cudaGetLastError();
}

cudaError_t RMSNorm(const float* x, const float* g, float* y, int rows, int cols, float eps,
                    cudaStream_t s) {
  RMSNormK<<<rows, kBlock, 0, s>>>(x, g, y, cols, eps);
  return cudaGetLastError();
}

cudaError_t LayerNorm(const float* x, const float* g, const float* b, float* y, int rows,
                      int cols, float eps, cudaStream_t s) {
  LayerNormK<<<rows, kBlock, 0, s>>>(x, g, b, y, cols, eps);
  return cudaGetLastError();
}

cudaError_t Rotary(float* x, int n, int heads, int head_dim, int pos0, float theta,
                   cudaStream_t s) {
  RotaryK<<<Blocks(int64_t(n) * heads * (head_dim / 2)), kBlock, 0, s>>>(x, n, heads, head_dim,
                                                                          pos0, theta);
  return cudaGetLastError();
}

size_t AttentionSmemBytes(int max_len, int head_dim) {
  return sizeof(float) * (size_t(max_len) + size_t(head_dim));
}

cudaError_t Attention(const float* q, const float* kc, const float* vc, float* out, int n,
                      int pos0, int heads, int kv_heads, int head_dim, cudaStream_t s) {
  dim3 grid(n, heads);
  AttentionK<<<grid, 128, AttentionSmemBytes(pos0 + n, head_dim), s>>>(q, kc, vc, out, pos0,
                                                                       heads, kv_heads, head_dim);
  return cudaGetLastError();
}

cudaError_t SwiGLU(const float* g, const float* u, float* out, int64_t n, cudaStream_t s) {
  SwiGLUK<<<Blocks(n), kBlock, 0, s>>>(g, u, out, n);
  return cudaGetLastError();
}

cudaError_t Add(float* x, const float* y, int64_t n, cudaStream_t s) {
  AddK<<<Blocks(n), kBlock, 0, s>>>(x, y, n);
  return cudaGetLastError();
}

cudaError_t Embedding(const int32_t* ids, int n, const float* table, int dim, float* out,
                      cudaStream_t s) {
  EmbeddingK<<<Blocks(int64_t(n) * dim), kBlock, 0, s>>>(ids, n, table, dim, out);
  return cudaGetLastError();
}

}  // namespace cuda
}  // namespace dashinfer
