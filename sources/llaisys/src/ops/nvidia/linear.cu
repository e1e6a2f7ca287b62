// linear: out[M,N] = in[M,K] * W[N,K]^T + bias[N].
//
// With cuBLAS (LLAISYS_HAVE_CUBLAS, set by CMake only when CUDA::cublas exists)
// the GEMM is cublasGemmEx with f32 compute for every dtype; otherwise, or when
// the environment variable LLAISYS_DISABLE_CUBLAS is set to something other
// than "0" (lets tests cover both paths on one build), a shared-memory tiled
// kernel of our own runs. Both are CUDA; there is no CPU fallback.
#include "common.cuh"

#include <cstdlib>
#include <cstring>

#ifdef LLAISYS_HAVE_CUBLAS
#include <cublas_v2.h>
#include <unordered_map>
#endif

namespace llaisys::nvidia {
namespace {

thread_local const char *t_last_backend = "none";

// 64x64 output tile per block, K consumed 16 at a time, 256 threads each
// computing a 4x4 sub-tile with a stride of 16 rows/cols, which keeps the
// shared-memory reads of a warp conflict-free (broadcast on A, distinct banks
// on B). Operands are converted to f32 while being staged in shared memory.
constexpr int BM = 64, BN = 64, BK = 16, TPR = 16, RM = BM / TPR, RN = BN / TPR;

template <typename T>
__global__ __launch_bounds__(256) void linearTiledKernel(T *out, const T *x, const T *w, const T *bias, int M, int N,
                                                         int K) {
    __shared__ float As[BK][BM + 1]; // +1: fewer bank conflicts on the transposed store
    __shared__ float Bs[BK][BN + 1];
    const int tx = threadIdx.x % TPR, ty = threadIdx.x / TPR;
    const int m0 = blockIdx.y * BM, n0 = blockIdx.x * BN;
    float acc[RM][RN] = {};
    for (int k0 = 0; k0 < K; k0 += BK) {
        // Consecutive threads read consecutive k of one row: coalesced along K,
        // which is the contiguous dimension of both x and W.
        for (int e = threadIdx.x; e < BM * BK; e += blockDim.x) {
            int r = e / BK, c = e % BK, gk = k0 + c;
            int gm = m0 + r, gn = n0 + r;
            As[c][r] = (gm < M && gk < K) ? toF(x[size_t(gm) * K + gk]) : 0.f;
            Bs[c][r] = (gn < N && gk < K) ? toF(w[size_t(gn) * K + gk]) : 0.f;
        }
        __syncthreads();
#pragma unroll
        for (int kk = 0; kk < BK; ++kk) {
            float a[RM], b[RN];
#pragma unroll
            for (int i = 0; i < RM; ++i) a[i] = As[kk][ty + i * TPR];
#pragma unroll
            for (int j = 0; j < RN; ++j) b[j] = Bs[kk][tx + j * TPR];
#pragma unroll
            for (int i = 0; i < RM; ++i)
#pragma unroll
                for (int j = 0; j < RN; ++j) acc[i][j] = fmaf(a[i], b[j], acc[i][j]);
        }
        __syncthreads();
    }
#pragma unroll
    for (int i = 0; i < RM; ++i) {
        int m = m0 + ty + i * TPR;
        if (m >= M) continue;
#pragma unroll
        for (int j = 0; j < RN; ++j) {
            int n = n0 + tx + j * TPR;
            if (n < N) out[size_t(m) * N + n] = fromF<T>(acc[i][j] + (bias ? toF(bias[n]) : 0.f));
        }
    }
}

void linearTiled(void *out, const void *in, const void *weight, const void *bias, llaisysDataType_t dt, int M, int N,
                 int K) {
    dim3 grid((N + BN - 1) / BN, (M + BM - 1) / BM);
    if (grid.y > 65535u) fail(LLAISYS_ERROR_INVALID_ARGUMENT, "linear: M = ", M, " too large for the tiled kernel");
    dispatchCuda(dt, [&](auto tag) {
        using T = decltype(tag);
        linearTiledKernel<T><<<grid, 256>>>(static_cast<T *>(out), static_cast<const T *>(in),
                                            static_cast<const T *>(weight), static_cast<const T *>(bias), M, N, K);
    });
    LLAISYS_CUDA_CHECK_LAUNCH("linearTiledKernel");
    t_last_backend = "tiled";
}

bool cublasDisabledByEnv() {
    const char *e = std::getenv("LLAISYS_DISABLE_CUBLAS");
    return e && *e && std::strcmp(e, "0") != 0;
}

#ifdef LLAISYS_HAVE_CUBLAS

#define LLAISYS_CUBLAS_CHECK(call)                                                                        \
    do {                                                                                                  \
        cublasStatus_t st_ = (call);                                                                      \
        if (st_ != CUBLAS_STATUS_SUCCESS)                                                                 \
            fail(LLAISYS_ERROR_CUDA, "cuBLAS error: ", #call, " failed: ", cublasGetStatusString(st_), " (", \
                 int(st_), ") [", __FILE__, ":", __LINE__, "]");                                          \
    } while (0)

// One handle per (thread, device). Handles are intentionally never destroyed:
// destroying them from static destructors can run after the CUDA runtime has
// been torn down at process exit.
cublasHandle_t handleForCurrentDevice() {
    thread_local std::unordered_map<int, cublasHandle_t> handles;
    int dev = 0;
    LLAISYS_CUDA_CHECK(cudaGetDevice(&dev));
    auto it = handles.find(dev);
    if (it != handles.end()) return it->second;
    cublasHandle_t h = nullptr;
    LLAISYS_CUBLAS_CHECK(cublasCreate(&h));
    LLAISYS_CUBLAS_CHECK(cublasSetStream(h, nullptr)); // ops run on the default stream
    handles.emplace(dev, h);
    return h;
}

template <typename T>
__global__ void broadcastBiasKernel(T *out, const T *bias, size_t M, size_t N) {
    for (size_t i = blockIdx.x * size_t(blockDim.x) + threadIdx.x; i < M * N; i += size_t(blockDim.x) * gridDim.x)
        out[i] = bias[i % N];
}

// Returns false if cuBLAS does not support this dtype on this GPU (e.g. bf16
// before sm_80), so the caller can use the tiled kernel instead.
bool linearCublas(void *out, const void *in, const void *weight, const void *bias, llaisysDataType_t dt, int M, int N,
                  int K) {
    cudaDataType_t ty = dt == LLAISYS_DTYPE_F32 ? CUDA_R_32F : dt == LLAISYS_DTYPE_F16 ? CUDA_R_16F : CUDA_R_16BF;
    float alpha = 1.f, beta = 0.f;
    if (bias) {
        // out = bias (broadcast), then GEMM with beta = 1: the bias is added in
        // the f32 epilogue, so the result is rounded only once.
        dispatchCuda(dt, [&](auto tag) {
            using T = decltype(tag);
            size_t n = size_t(M) * N;
            broadcastBiasKernel<T><<<gridFor(n, 256), 256>>>(static_cast<T *>(out), static_cast<const T *>(bias),
                                                             size_t(M), size_t(N));
        });
        LLAISYS_CUDA_CHECK_LAUNCH("broadcastBiasKernel");
        beta = 1.f;
    }
    // Row-major out[M,N] is column-major out^T[N,M] = W[N,K] * in^T[K,M]; in
    // column-major terms W (row-major [N,K]) is a KxN matrix, hence OP_T on it.
    cublasStatus_t st = cublasGemmEx(handleForCurrentDevice(), CUBLAS_OP_T, CUBLAS_OP_N, N, M, K, &alpha, weight, ty,
                                     K, in, ty, K, &beta, out, ty, N, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT);
    if (st == CUBLAS_STATUS_NOT_SUPPORTED || st == CUBLAS_STATUS_ARCH_MISMATCH) return false;
    LLAISYS_CUBLAS_CHECK(st);
    t_last_backend = "cublas";
    return true;
}
#endif

} // namespace

const char *lastLinearBackend() { return t_last_backend; }

void linear(void *out, const void *in, const void *weight, const void *bias, llaisysDataType_t dt, size_t M, size_t N,
            size_t K) {
    int m = checkedInt(M, "linear M"), n = checkedInt(N, "linear N"), k = checkedInt(K, "linear K");
    if (!m || !n) return;
#ifdef LLAISYS_HAVE_CUBLAS
    if (k && !cublasDisabledByEnv() && linearCublas(out, in, weight, bias, dt, m, n, k)) return;
#else
    (void)cublasDisabledByEnv;
#endif
    linearTiled(out, in, weight, bias, dt, m, n, k);
}

} // namespace llaisys::nvidia
