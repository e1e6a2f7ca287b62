/* Operators. Outputs come first. All tensors of one call must be contiguous
 * and live on the same device; f32/f16/bf16 are supported everywhere and
 * accumulation is done in f32. On NVIDIA every op runs a CUDA kernel on the
 * default stream of the current device (no CPU fallback). */
#ifndef LLAISYS_OPS_H
#define LLAISYS_OPS_H

#include "tensor.h"

#define LLAISYS_OP LLAISYS_EXTERN_C LLAISYS_API llaisysStatus_t

/* c = a + b (same shape). */
LLAISYS_OP llaisysAdd(llaisysTensor_t c, llaisysTensor_t a, llaisysTensor_t b);
/* vals: 1-D [n]; max_idx: i64 [1]; max_val: [1] dtype of vals. First index wins ties. */
LLAISYS_OP llaisysArgmax(llaisysTensor_t max_idx, llaisysTensor_t max_val,
                         llaisysTensor_t vals);
/* out[i,:] = weight[index[i],:]; index i64 [n], weight [V,d], out [n,d]. */
LLAISYS_OP llaisysEmbedding(llaisysTensor_t out, llaisysTensor_t index,
                            llaisysTensor_t weight);
/* out = in W^T + bias; in [M,K], weight [N,K], bias [N] or NULL, out [M,N]. */
LLAISYS_OP llaisysLinear(llaisysTensor_t out, llaisysTensor_t in,
                         llaisysTensor_t weight, llaisysTensor_t bias);
/* out = in / sqrt(mean(in^2, -1) + eps) * weight; in/out [M,d], weight [d]. */
LLAISYS_OP llaisysRmsNorm(llaisysTensor_t out, llaisysTensor_t in,
                          llaisysTensor_t weight, float eps);
/* Rotary embedding (half-split layout): in/out [seq, nhead, d] (d even),
 * pos_ids i64 [seq]; angle(j) = pos / theta^(2j/d). */
LLAISYS_OP llaisysRoPE(llaisysTensor_t out, llaisysTensor_t in,
                       llaisysTensor_t pos_ids, float theta);
/* Causal attention with grouped-query heads.
 * q [L, nhead, d], k [S, nkvhead, d], v [S, nkvhead, dv], out [L, nhead, dv];
 * nhead % nkvhead == 0, S >= L; query i sees keys j <= i + (S - L). */
LLAISYS_OP llaisysSelfAttention(llaisysTensor_t out, llaisysTensor_t q,
                                llaisysTensor_t k, llaisysTensor_t v, float scale);
/* out = up * gate * sigmoid(gate). */
LLAISYS_OP llaisysSwiGLU(llaisysTensor_t out, llaisysTensor_t gate,
                         llaisysTensor_t up);

/* GEMM used by the last NVIDIA linear on this thread: "cublas", "tiled", or
 * "none" (no NVIDIA linear yet / CPU-only build). */
LLAISYS_EXTERN_C LLAISYS_API const char *llaisysLinearLastBackend(void);

#undef LLAISYS_OP
#endif /* LLAISYS_OPS_H */
