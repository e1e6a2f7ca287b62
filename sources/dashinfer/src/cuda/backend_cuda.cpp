// CUDA backend: weights and KV cache in device memory, own kernels
// (kernels.cu), cuBLAS for GEMM when the build found it. Constructing it
// without a usable GPU throws "no CUDA device: ..." so callers (tests, the
// Python package) can skip cleanly instead of crashing.
#include <cuda_runtime_api.h>

#include <cstdlib>
#include <cstring>
#include <sstream>
#include <stdexcept>
#include <vector>

#include "../backend.h"
#include "../logging.h"
#include "../profiler.h"
#include "kernels.cuh"

#if DASHINFER_HAVE_CUBLAS
#include <cublas_v2.h>
#endif
#if DASHINFER_HAVE_NCCL
#include <nccl.h>
#endif

#define DI_CUDA_CHECK(expr)                                                              \
  do {                                                                                   \
    cudaError_t di_err_ = (expr);                                                        \
    if (di_err_ != cudaSuccess)                                                          \
      throw std::runtime_error(std::string("CUDA error at " __FILE__ ":") +              \
                               std::to_string(__LINE__) + ": " #expr ": " +              \
                               cudaGetErrorString(di_err_));                             \
  } while (0)

namespace dashinfer {

int CudaDeviceCount() {
  int n = 0;
  return cudaGetDeviceCount(&n) == cudaSuccess ? n : 0;
}

namespace {

// Owning device buffer of floats (or raw bytes via reinterpret).
class DeviceBuffer {
 public:
  DeviceBuffer() = default;
  explicit DeviceBuffer(size_t floats) { Resize(floats); }
  ~DeviceBuffer() {
    if (p_) cudaFree(p_);  // no throw from a destructor
  }
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;
  DeviceBuffer(DeviceBuffer&& o) noexcept : p_(o.p_), n_(o.n_) { o.p_ = nullptr, o.n_ = 0; }
  void Resize(size_t floats) {
    if (floats <= n_) return;
    if (p_) cudaFree(p_);
    p_ = nullptr;
    DI_CUDA_CHECK(cudaMalloc(reinterpret_cast<void**>(&p_), floats * sizeof(float)));
    n_ = floats;
  }
  float* get() const { return p_; }

 private:
  float* p_ = nullptr;
  size_t n_ = 0;
};

class CudaBackend final : public Backend {
 public:
  CudaBackend(const Model& m, Profiler* prof) : c_(m.config), prof_(prof) {
    int count = 0;
    const cudaError_t err = cudaGetDeviceCount(&count);
    if (err != cudaSuccess || count == 0)
      throw std::runtime_error(std::string("no CUDA device: cudaGetDeviceCount: ") +
                               (err != cudaSuccess ? cudaGetErrorString(err) : "0 devices"));
    const char* dev_env = std::getenv("DASHINFER_CUDA_DEVICE");
    device_ = dev_env ? std::atoi(dev_env) : 0;
    if (device_ < 0 || device_ >= count)
      throw std::runtime_error("DASHINFER_CUDA_DEVICE=" + std::to_string(device_) +
                               " but only " + std::to_string(count) + " CUDA device(s)");
    DI_CUDA_CHECK(cudaSetDevice(device_));
    DI_CUDA_CHECK(cudaGetDeviceProperties(&props_, device_));
    DI_CUDA_CHECK(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking));
    const size_t smem = cuda::AttentionSmemBytes(c_.max_seq_len, c_.head_dim);
    if (smem + 256 > props_.sharedMemPerBlock)  // + the kernel's static `red`
      throw std::invalid_argument("max_seq_len " + std::to_string(c_.max_seq_len) +
                                  " too large for the CUDA attention kernel's shared memory");
#if DASHINFER_HAVE_CUBLAS
    const char* g = std::getenv("DASHINFER_CUDA_GEMM");  // "own" forces kernels.cu GEMM
    use_cublas_ = !(g && std::strcmp(g, "own") == 0);
    if (use_cublas_) {
      if (cublasCreate(&cublas_) != CUBLAS_STATUS_SUCCESS)
        throw std::runtime_error("cublasCreate failed");
      cublasSetStream(cublas_, stream_);
      // Plain fp32 (no TF32) so results track the CPU backend closely.
      cublasSetMathMode(cublas_, CUBLAS_DEFAULT_MATH);
    }
#endif
    auto up = [this](const std::vector<float>& host) {
      DeviceBuffer b(host.size());
      DI_CUDA_CHECK(cudaMemcpy(b.get(), host.data(), host.size() * 4, cudaMemcpyHostToDevice));
      buffers_.push_back(std::move(b));
      return buffers_.back().get();
    };
    auto w = [&](const std::string& n) { return up(m.weights.at(n).data); };
    auto wopt = [&](const std::string& n) {
      auto it = m.weights.find(n);
      return it == m.weights.end() ? nullptr : up(it->second.data);
    };
    embed_ = w("embed");
    final_norm_ = w("final_norm.weight");
    final_norm_b_ = wopt("final_norm.bias");
    if (c_.tie_word_embeddings) {
      const int V = c_.vocab_size, H = c_.hidden_size;
      const std::vector<float>& e = m.weights.at("embed").data;
      std::vector<float> t(size_t(V) * H);
      for (int v = 0; v < V; ++v)
        for (int h = 0; h < H; ++h) t[size_t(h) * V + v] = e[size_t(v) * H + h];
      lm_head_ = up(t);
    } else {
      lm_head_ = w("lm_head");
    }
    const size_t kv = size_t(c_.max_seq_len) * c_.num_kv_heads * c_.head_dim;
    for (int l = 0; l < c_.num_layers; ++l) {
      const std::string p = "layers." + std::to_string(l) + ".";
      Layer L{w(p + "attn_norm.weight"), wopt(p + "attn_norm.bias"), w(p + "wq"), w(p + "wk"),
              w(p + "wv"), w(p + "wo"), w(p + "ffn_norm.weight"), wopt(p + "ffn_norm.bias"),
              w(p + "w_gate"), w(p + "w_up"), w(p + "w_down"), up(std::vector<float>(kv)),
              up(std::vector<float>(kv))};
      layers_.push_back(L);
    }
    // Pageable cudaMemcpy may return before its DMA lands, and our stream is
    // non-blocking (no implicit ordering with the legacy stream): fence once.
    DI_CUDA_CHECK(cudaDeviceSynchronize());
    prof_->set_sync([s = stream_] { cudaStreamSynchronize(s); });
  }

  ~CudaBackend() override {
    prof_->set_sync(nullptr);
    if (stream_) cudaStreamSynchronize(stream_);
#if DASHINFER_HAVE_CUBLAS
    if (cublas_) cublasDestroy(cublas_);
#endif
    buffers_.clear();
    if (stream_) cudaStreamDestroy(stream_);
  }

  std::string Describe() const override {
    std::ostringstream os;
    os << "cuda backend (device " << device_ << ": " << props_.name << ", sm_" << props_.major
       << props_.minor << ", gemm=" << (use_cublas_ ? "cublas" : "own kernels");
#if DASHINFER_HAVE_NCCL
    int v = 0;
    ncclGetVersion(&v);
    os << ", nccl " << v;
#endif
    os << ")";
    return os.str();
  }

  void Forward(const int32_t* tokens, int n, int pos0, float* logits) override {
    CHECK(n >= 1 && pos0 >= 0 && pos0 + n <= c_.max_seq_len) << "KV cache overflow";
    const int H = c_.hidden_size, F = c_.ffn_size, hd = c_.head_dim, nh = c_.num_heads,
              nkv = c_.num_kv_heads, qd = nh * hd, kvd = nkv * hd;
    ids_.Resize(size_t(n));  // int32 fits in a float-sized slot
    x_.Resize(size_t(n) * H), h_.Resize(size_t(n) * H), tmp_.Resize(size_t(n) * H);
    q_.Resize(size_t(n) * qd), att_.Resize(size_t(n) * qd);
    g_.Resize(size_t(n) * F), u_.Resize(size_t(n) * F), logits_.Resize(size_t(c_.vocab_size));
    int32_t* ids = reinterpret_cast<int32_t*>(ids_.get());
    DI_CUDA_CHECK(cudaMemcpyAsync(ids, tokens, size_t(n) * 4, cudaMemcpyHostToDevice, stream_));
    {
      DI_PROFILE_OP(prof_, "Embedding");
      DI_CUDA_CHECK(cuda::Embedding(ids, n, embed_, H, x_.get(), stream_));
    }
    for (const Layer& L : layers_) {
      Norm(x_.get(), L.attn_norm, L.attn_norm_b, h_.get(), n);
      float* kc = L.k_cache + size_t(pos0) * kvd;
      float* vc = L.v_cache + size_t(pos0) * kvd;
      Gemm(n, qd, H, h_.get(), L.wq, q_.get());
      Gemm(n, kvd, H, h_.get(), L.wk, kc);
      Gemm(n, kvd, H, h_.get(), L.wv, vc);
      {
        DI_PROFILE_OP(prof_, "Rotary");
        DI_CUDA_CHECK(cuda::Rotary(q_.get(), n, nh, hd, pos0, c_.rope_theta, stream_));
        DI_CUDA_CHECK(cuda::Rotary(kc, n, nkv, hd, pos0, c_.rope_theta, stream_));
      }
      {
        DI_PROFILE_OP(prof_, "Attention");
        DI_CUDA_CHECK(cuda::Attention(q_.get(), L.k_cache, L.v_cache, att_.get(), n, pos0, nh,
                                      nkv, hd, stream_));
      }
      Gemm(n, H, qd, att_.get(), L.wo, tmp_.get());
      {
        DI_PROFILE_OP(prof_, "Binary");
        DI_CUDA_CHECK(cuda::Add(x_.get(), tmp_.get(), int64_t(n) * H, stream_));
      }
      Norm(x_.get(), L.ffn_norm, L.ffn_norm_b, h_.get(), n);
      Gemm(n, F, H, h_.get(), L.w_gate, g_.get());
      Gemm(n, F, H, h_.get(), L.w_up, u_.get());
      {
        DI_PROFILE_OP(prof_, "SwiGLU");
        DI_CUDA_CHECK(cuda::SwiGLU(g_.get(), u_.get(), g_.get(), int64_t(n) * F, stream_));
      }
      Gemm(n, H, F, g_.get(), L.w_down, tmp_.get());
      {
        DI_PROFILE_OP(prof_, "Binary");
        DI_CUDA_CHECK(cuda::Add(x_.get(), tmp_.get(), int64_t(n) * H, stream_));
      }
    }
    Norm(x_.get() + size_t(n - 1) * H, final_norm_, final_norm_b_, h_.get(), 1);
    Gemm(1, c_.vocab_size, H, h_.get(), lm_head_, logits_.get());
    DI_CUDA_CHECK(cudaMemcpyAsync(logits, logits_.get(), size_t(c_.vocab_size) * 4,
                                  cudaMemcpyDeviceToHost, stream_));
    DI_CUDA_CHECK(cudaStreamSynchronize(stream_));  // surfaces async kernel faults here
  }

 private:
  struct Layer {
    const float *attn_norm, *attn_norm_b, *wq, *wk, *wv, *wo, *ffn_norm, *ffn_norm_b, *w_gate,
        *w_up, *w_down;
    float *k_cache, *v_cache;
  };

  void Gemm(int M, int N, int K, const float* A, const float* B, float* C) {
    DI_PROFILE_OP(prof_, "Gemm");  // one entry per GEMM call
#if DASHINFER_HAVE_CUBLAS
    if (use_cublas_) {
      // Row-major C = A B  <=>  column-major C^T = B^T A^T: swap operands.
      const float one = 1.f, zero = 0.f;
      if (cublasSgemm(cublas_, CUBLAS_OP_N, CUBLAS_OP_N, N, M, K, &one, B, N, A, K, &zero, C, N) !=
          CUBLAS_STATUS_SUCCESS)
        throw std::runtime_error("cublasSgemm failed");
      return;
    }
#endif
    DI_CUDA_CHECK(cuda::Gemm(M, N, K, A, B, C, stream_));
  }

  void Norm(const float* x, const float* g, const float* b, float* y, int rows) {
    if (c_.norm_type == NormType::kLayerNorm) {
      DI_PROFILE_OP(prof_, "LayerNorm");
      DI_CUDA_CHECK(cuda::LayerNorm(x, g, b, y, rows, c_.hidden_size, c_.norm_eps, stream_));
    } else {
      DI_PROFILE_OP(prof_, "RMSNorm");
      DI_CUDA_CHECK(cuda::RMSNorm(x, g, y, rows, c_.hidden_size, c_.norm_eps, stream_));
    }
  }

  ModelConfig c_;
  Profiler* prof_;
  int device_ = 0;
  cudaDeviceProp props_{};
  cudaStream_t stream_ = nullptr;
  bool use_cublas_ = false;
#if DASHINFER_HAVE_CUBLAS
  cublasHandle_t cublas_ = nullptr;
#endif
  std::vector<DeviceBuffer> buffers_;  // weights and KV caches
  const float *embed_, *final_norm_, *final_norm_b_, *lm_head_;
  std::vector<Layer> layers_;
  DeviceBuffer ids_, x_, h_, tmp_, q_, att_, g_, u_, logits_;
};

}  // namespace

std::unique_ptr<Backend> MakeCudaBackend(const Model& model, Profiler* profiler) {
  return std::make_unique<CudaBackend>(model, profiler);
}

}  // namespace dashinfer
