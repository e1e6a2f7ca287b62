// Host-callable launchers for the CUDA kernels (device pointers, row-major,
// same semantics as the CPU ops in dashinfer/ops.h). They return the launch
// status instead of throwing so kernels.cu stays free of C++ runtime/logging
// dependencies; backend_cuda.cpp turns errors into exceptions.
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>

namespace dashinfer {
namespace cuda {

cudaError_t Gemm(int M, int N, int K, const float* A, const float* B, float* C, cudaStream_t s);
cudaError_t RMSNorm(const float* x, const float* gamma, float* y, int rows, int cols, float eps,
                    cudaStream_t s);
cudaError_t LayerNorm(const float* x, const float* gamma, const float* beta, float* y, int rows,
                      int cols, float eps, cudaStream_t s);
cudaError_t Rotary(float* x, int n, int heads, int head_dim, int pos0, float theta,
                   cudaStream_t s);
// Dynamic shared memory the attention kernel needs for `max_len` keys.
size_t AttentionSmemBytes(int max_len, int head_dim);
cudaError_t Attention(const float* q, const float* k_cache, const float* v_cache, float* out,
                      int n, int pos0, int heads, int kv_heads, int head_dim, cudaStream_t s);
cudaError_t SwiGLU(const float* gate, const float* up, float* out, int64_t n, cudaStream_t s);
cudaError_t Add(float* x, const float* y, int64_t n, cudaStream_t s);
cudaError_t Embedding(const int32_t* ids, int n, const float* table, int dim, float* out,
                      cudaStream_t s);

}  // namespace cuda
}  // namespace dashinfer
