// Engine front end + the CPU backend. The CPU backend doubles as the
// reference that the CUDA backend is tested against.
#include <cstdlib>
#include <cstring>
#include <sstream>
#include <stdexcept>

#include "backend.h"
#include "config.h"  // generated: version and build knobs
#include "dashinfer/dashinfer.h"
#include "dashinfer/ops.h"
#include "logging.h"
#include "profiler.h"

#if DASHINFER_HAVE_OPENMP
#include <omp.h>
#endif
#if DASHINFER_MULTINUMA
#include <mpi.h>
#include <numa.h>
#endif

namespace dashinfer {
namespace {

class CpuBackend final : public Backend {
 public:
  CpuBackend(const Model& m, Profiler* prof) : c_(m.config), prof_(prof) {
    auto w = [&m](const std::string& n) { return m.weights.at(n).data.data(); };
    auto wopt = [&m](const std::string& n) {
      auto it = m.weights.find(n);
      return it == m.weights.end() ? nullptr : it->second.data.data();
    };
    embed_ = w("embed");
    final_norm_ = w("final_norm.weight");
    final_norm_b_ = wopt("final_norm.bias");
    if (c_.tie_word_embeddings) {
      // logits = h @ embed^T; transpose once so decode uses the plain GEMM.
      const int V = c_.vocab_size, H = c_.hidden_size;
      lm_head_t_.resize(size_t(V) * H);
      for (int v = 0; v < V; ++v)
        for (int h = 0; h < H; ++h) lm_head_t_[size_t(h) * V + v] = embed_[size_t(v) * H + h];
      lm_head_ = lm_head_t_.data();
    } else {
      lm_head_ = w("lm_head");
    }
#if DASHINFER_HAVE_OPENMP
    // Start the OpenMP thread pool now, so the first profiled op is not billed for it.
#pragma omp parallel
    { (void)0; }
#endif
    const size_t kv_elems = size_t(c_.max_seq_len) * c_.num_kv_heads * c_.head_dim;
    for (int l = 0; l < c_.num_layers; ++l) {
      const std::string p = "layers." + std::to_string(l) + ".";
      layers_.push_back({w(p + "attn_norm.weight"), wopt(p + "attn_norm.bias"), w(p + "wq"),
                         w(p + "wk"), w(p + "wv"), w(p + "wo"), w(p + "ffn_norm.weight"),
                         wopt(p + "ffn_norm.bias"), w(p + "w_gate"), w(p + "w_up"),
                         w(p + "w_down"), std::vector<float>(kv_elems),
                         std::vector<float>(kv_elems)});
    }
  }

  std::string Describe() const override {
    std::ostringstream os;
    os << "cpu backend";
#if DASHINFER_HAVE_OPENMP
    os << " (OpenMP, " << omp_get_max_threads() << " threads)";
#else
    os << " (single-threaded, built without OpenMP)";
#endif
    return os.str();
  }

  void Forward(const int32_t* tokens, int n, int pos0, float* logits) override {
    CHECK(n >= 1 && pos0 >= 0 && pos0 + n <= c_.max_seq_len)
        << "KV cache overflow: pos0=" << pos0 << " n=" << n << " max_seq_len=" << c_.max_seq_len;
    const int H = c_.hidden_size, F = c_.ffn_size, hd = c_.head_dim, nh = c_.num_heads,
              nkv = c_.num_kv_heads, qd = nh * hd, kvd = nkv * hd;
    x_.resize(size_t(n) * H);
    h_.resize(size_t(n) * H);
    tmp_.resize(size_t(n) * H);
    q_.resize(size_t(n) * qd);
    att_.resize(size_t(n) * qd);
    g_.resize(size_t(n) * F);
    u_.resize(size_t(n) * F);
    {
      DI_PROFILE_OP(prof_, "Embedding");
      cpu::Embedding(tokens, n, embed_, H, x_.data());
    }
    for (Layer& L : layers_) {
      Norm(x_.data(), L.attn_norm, L.attn_norm_b, h_.data(), n);
      float* kc = L.k_cache.data() + size_t(pos0) * kvd;  // this chunk's cache rows
      float* vc = L.v_cache.data() + size_t(pos0) * kvd;
      Gemm(n, qd, H, h_.data(), L.wq, q_.data());
      Gemm(n, kvd, H, h_.data(), L.wk, kc);  // K/V straight into the cache
      Gemm(n, kvd, H, h_.data(), L.wv, vc);
      {
        DI_PROFILE_OP(prof_, "Rotary");
        cpu::Rotary(q_.data(), n, nh, hd, pos0, c_.rope_theta);
        cpu::Rotary(kc, n, nkv, hd, pos0, c_.rope_theta);
      }
      {
        DI_PROFILE_OP(prof_, "Attention");
        cpu::Attention(q_.data(), L.k_cache.data(), L.v_cache.data(), att_.data(), n, pos0, nh,
                       nkv, hd);
      }
      Gemm(n, H, qd, att_.data(), L.wo, tmp_.data());
      {
        DI_PROFILE_OP(prof_, "Binary");
        cpu::Add(x_.data(), tmp_.data(), int64_t(n) * H);
      }
      Norm(x_.data(), L.ffn_norm, L.ffn_norm_b, h_.data(), n);
      Gemm(n, F, H, h_.data(), L.w_gate, g_.data());
      Gemm(n, F, H, h_.data(), L.w_up, u_.data());
      {
        DI_PROFILE_OP(prof_, "SwiGLU");
        cpu::SwiGLU(g_.data(), u_.data(), g_.data(), int64_t(n) * F);
      }
      Gemm(n, H, F, g_.data(), L.w_down, tmp_.data());
      {
        DI_PROFILE_OP(prof_, "Binary");
        cpu::Add(x_.data(), tmp_.data(), int64_t(n) * H);
      }
    }
    // Only the last position's logits are needed for greedy decoding.
    Norm(x_.data() + size_t(n - 1) * H, final_norm_, final_norm_b_, h_.data(), 1);
    Gemm(1, c_.vocab_size, H, h_.data(), lm_head_, logits);
  }

 private:
  struct Layer {
    const float *attn_norm, *attn_norm_b, *wq, *wk, *wv, *wo, *ffn_norm, *ffn_norm_b, *w_gate,
        *w_up, *w_down;
    std::vector<float> k_cache, v_cache;  // [max_seq_len, kv_heads * head_dim]
  };

  // One profiler entry per GEMM call, like DashInfer's "Gemm" row.
  void Gemm(int M, int N, int K, const float* A, const float* B, float* C) {
    DI_PROFILE_OP(prof_, "Gemm");
    cpu::Gemm(M, N, K, A, B, C);
  }

  void Norm(const float* x, const float* g, const float* b, float* y, int rows) {
    if (c_.norm_type == NormType::kLayerNorm) {
      DI_PROFILE_OP(prof_, "LayerNorm");
      cpu::LayerNorm(x, g, b, y, rows, c_.hidden_size, c_.norm_eps);
    } else {
      DI_PROFILE_OP(prof_, "RMSNorm");
      cpu::RMSNorm(x, g, y, rows, c_.hidden_size, c_.norm_eps);
    }
  }

  ModelConfig c_;
  Profiler* prof_;
  const float *embed_, *final_norm_, *final_norm_b_, *lm_head_;
  std::vector<float> lm_head_t_;
  std::vector<Layer> layers_;
  std::vector<float> x_, h_, tmp_, q_, att_, g_, u_;  // activations, reused across calls
};

bool ProfileRequested() {
  const char* v = std::getenv("AS_PROFILE");
  return v && (std::strcmp(v, "ON") == 0 || std::strcmp(v, "on") == 0 || std::strcmp(v, "1") == 0);
}

}  // namespace

std::unique_ptr<Backend> MakeCpuBackend(const Model& model, Profiler* profiler) {
  return std::make_unique<CpuBackend>(model, profiler);
}

#if !DASHINFER_WITH_CUDA
std::unique_ptr<Backend> MakeCudaBackend(const Model&, Profiler*) {
  throw std::runtime_error(
      "platform 'cuda' requested but dashinfer was built without CUDA "
      "(configure with -DDASHINFER_ENABLE_CUDA=ON)");
}
int CudaDeviceCount() { return 0; }
#endif

bool CudaCompiled() { return DASHINFER_WITH_CUDA != 0; }

Engine::Engine(Model model, Platform platform) : model_(std::move(model)), platform_(platform) {
  Init();
}

Engine::Engine(const std::string& model_path, Platform platform)
    : model_(LoadModel(model_path)), platform_(platform) {
  Init();
}

Engine::~Engine() = default;

void Engine::Init() {
  model_.Validate();
  profiler_ = std::make_unique<Profiler>(DASHINFER_PROFILE && ProfileRequested());
  backend_ = platform_ == Platform::kCUDA ? MakeCudaBackend(model_, profiler_.get())
                                          : MakeCpuBackend(model_, profiler_.get());
  LOG(INFO) << "engine init: platform=" << PlatformName(platform_)
            << " (build platform " DASHINFER_PLATFORM_STR "), " << backend_->Describe()
            << ", model '" << model_.config.name << "', profiling "
            << (profiler_->enabled() ? "on" : "off");
}

std::vector<float> Engine::Forward(const std::vector<int>& ids) {
  std::lock_guard<std::mutex> lock(mu_);
  return Prefill(ids);
}

std::vector<float> Engine::Prefill(const std::vector<int>& ids) {
  const ModelConfig& c = model_.config;
  if (ids.empty()) throw std::invalid_argument("input_ids is empty");
  if (int(ids.size()) > c.max_seq_len)
    throw std::invalid_argument("input of " + std::to_string(ids.size()) +
                                " tokens exceeds max_seq_len " + std::to_string(c.max_seq_len));
  for (int t : ids)
    if (t < 0 || t >= c.vocab_size)
      throw std::invalid_argument("token id " + std::to_string(t) + " outside [0, vocab_size)");
  std::vector<int32_t> toks(ids.begin(), ids.end());
  std::vector<float> logits(size_t(c.vocab_size));
  backend_->Forward(toks.data(), int(toks.size()), 0, logits.data());
  return logits;
}

std::vector<int> Engine::Generate(const std::vector<int>& ids, int max_new_tokens) {
  if (max_new_tokens < 0) throw std::invalid_argument("max_new_tokens must be >= 0");
  std::lock_guard<std::mutex> lock(mu_);
  std::vector<int> out;
  std::vector<float> logits = Prefill(ids);  // validates ids
  if (max_new_tokens == 0) return out;
  const ModelConfig& c = model_.config;
  int pos = int(ids.size());
  while (true) {
    int32_t tok;
    {
      DI_PROFILE_OP(profiler_.get(), "GenerateOp");
      tok = cpu::Argmax(logits.data(), c.vocab_size);
    }
    out.push_back(tok);
    if (tok == c.eos_token_id || int(out.size()) >= max_new_tokens) break;
    if (pos >= c.max_seq_len) {
      LOG(WARNING) << "KV cache full (max_seq_len=" << c.max_seq_len << "), stopping early";
      break;
    }
    backend_->Forward(&tok, 1, pos++, logits.data());  // decode step with the KV cache
  }
  return out;
}

const ModelConfig& Engine::config() const { return model_.config; }
Platform Engine::platform() const { return platform_; }
bool Engine::profiling() const { return profiler_->enabled(); }
void Engine::ResetProfile() { profiler_->Reset(); }

std::string Engine::ProfileTable() const {
  if (!DASHINFER_PROFILE)
    return "operator profiling not compiled in (rebuild with -DDASHINFER_PROFILE=ON)\n";
  if (!profiler_->enabled())
    return "operator profiling disabled (set AS_PROFILE=ON before creating the engine)\n";
  return profiler_->Table();
}

std::string Engine::Info() const {
  const ModelConfig& c = model_.config;
  std::ostringstream os;
  os << "dashinfer " << Version() << " | platform " << PlatformName(platform_) << " | "
     << backend_->Describe() << " | model '" << c.name << "': " << c.num_layers << "L h"
     << c.hidden_size << " heads " << c.num_heads << "/" << c.num_kv_heads << "x" << c.head_dim
     << " ffn " << c.ffn_size << " vocab " << c.vocab_size << " max_seq " << c.max_seq_len
     << (c.norm_type == NormType::kLayerNorm ? " LayerNorm" : " RMSNorm") << " | "
     << BuildInfo();
  return os.str();
}

void InitLogging(const char* program) {
#if DASHINFER_HAVE_GLOG
  if (google::IsGoogleLoggingInitialized()) return;
  if (!std::getenv("GLOG_log_dir") && !std::getenv("GLOG_logtostderr")) FLAGS_logtostderr = true;
  google::InitGoogleLogging(program);
#else
  (void)program;
#endif
}

std::string Version() { return DASHINFER_RELEASE_VERSION_STR; }

std::string BuildInfo() {
  std::ostringstream os;
  os << "version=" << Version() << " platform=" DASHINFER_PLATFORM_STR
     << " cuda=" << (DASHINFER_WITH_CUDA ? "on(archs=" DASHINFER_CUDA_ARCHS_STR ")" : "off")
     << " cublas=" << (DASHINFER_HAVE_CUBLAS ? "yes" : "no")
     << " nccl=" << (DASHINFER_HAVE_NCCL ? "yes" : "no")
     << " openmp=" << (DASHINFER_HAVE_OPENMP ? "yes" : "no")
     << " profile=" << (DASHINFER_PROFILE ? "compiled" : "off")
     << " protobuf=" << (DASHINFER_HAVE_PROTOBUF ? "yes" : "no")
     << " glog=" << (DASHINFER_HAVE_GLOG ? "yes" : "no")
     << " cxx11_abi=" DASHINFER_CXX11_ABI_STR " sanitizer=" DASHINFER_SANITIZER_STR;
#if DASHINFER_MULTINUMA
  int mpi_major = 0, mpi_minor = 0;
  MPI_Get_version(&mpi_major, &mpi_minor);  // allowed before MPI_Init
  os << " multinuma=on(numa_nodes=" << (numa_available() >= 0 ? numa_num_configured_nodes() : 0)
     << ", mpi=" << mpi_major << "." << mpi_minor << ")";
#else
  os << " multinuma=off";
#endif
  os << " compiler=" DASHINFER_COMPILER_STR " build=" DASHINFER_BUILD_TYPE_STR;
  return os.str();
}

}  // namespace dashinfer
