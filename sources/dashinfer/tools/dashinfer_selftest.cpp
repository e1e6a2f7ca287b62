// dashinfer_selftest: dependency-free checks (no gtest/protobuf/glog needed),
// so a bare GPU machine can validate a DASHINFER_WITH_SYSTEM_DEPS=OFF build.
//   --platform cpu : generate() determinism, KV cache vs recompute, profiling
//   --platform cuda: each CUDA kernel vs the CPU op, CUDA engine vs CPU engine
// Exit 0 = pass, 1 = fail, 77 = skipped (no CUDA build / no device).
#include <algorithm>
#include <array>
#include <cmath>
#include <cstring>
#include <iostream>
#include <random>
#include <string>
#include <vector>

#include "dashinfer/dashinfer.h"
#include "dashinfer/ops.h"
#if DASHINFER_WITH_CUDA
#include <cuda_runtime_api.h>

#include "cuda/kernels.cuh"
#endif

using namespace dashinfer;

static int g_failures = 0;
#define EXPECT(cond, what)                                                \
  do {                                                                    \
    if (!(cond)) {                                                        \
      ++g_failures;                                                       \
      std::cout << "FAIL " << __LINE__ << ": " << what << "\n";           \
    } else {                                                              \
      std::cout << "ok   " << what << "\n";                               \
    }                                                                     \
  } while (0)

static std::vector<float> Rand(size_t n, unsigned seed) {
  std::mt19937 r(seed);
  std::uniform_real_distribution<float> d(-1.f, 1.f);
  std::vector<float> v(n);
  for (float& x : v) x = d(r);
  return v;
}
static float MaxDiff(const std::vector<float>& a, const std::vector<float>& b) {
  float m = 0;
  for (size_t i = 0; i < a.size(); ++i) m = std::max(m, std::fabs(a[i] - b[i]));
  return m;
}

static ModelConfig Config(NormType norm, bool tied) {
  ModelConfig c;
  c.num_layers = 3, c.hidden_size = 96, c.num_heads = 8, c.num_kv_heads = 2, c.head_dim = 12;
  c.ffn_size = 160, c.vocab_size = 300, c.max_seq_len = 96, c.norm_type = norm;
  c.tie_word_embeddings = tied;
  return c;
}

static void CpuChecks() {
  Model m = MakeRandomModel(Config(NormType::kRMSNorm, false), 7);
  Engine e(m, Platform::kCPU);
  std::cout << e.Info() << "\n";
  std::vector<int> seq = {1, 2, 3, 4, 5};
  const auto gen = e.Generate(seq, 10);
  EXPECT(gen == Engine(m, Platform::kCPU).Generate(seq, 10), "cpu generate deterministic");
  bool cache_ok = true;
  for (int t : gen) {
    auto l = e.Forward(seq);
    cache_ok &= int(std::max_element(l.begin(), l.end()) - l.begin()) == t;
    seq.push_back(t);
  }
  EXPECT(cache_ok, "cpu KV cache == full recompute");
  if (e.profiling()) {
    std::cout << e.ProfileTable();
    EXPECT(e.ProfileTable().find("Attention") != std::string::npos, "profile table has ops");
  }
}

#if DASHINFER_WITH_CUDA
// Runs `launch` on device copies of `inputs`, returns output buffer `out_idx`.
struct Dev {
  std::vector<float*> ptrs;
  explicit Dev(const std::vector<std::vector<float>>& host) {
    for (const auto& h : host) {
      float* p = nullptr;
      cudaMalloc(reinterpret_cast<void**>(&p), std::max<size_t>(1, h.size()) * 4);
      cudaMemcpy(p, h.data(), h.size() * 4, cudaMemcpyHostToDevice);
      ptrs.push_back(p);
    }
  }
  ~Dev() {
    for (float* p : ptrs) cudaFree(p);
  }
  std::vector<float> Get(size_t i, size_t n) {
    std::vector<float> h(n);
    cudaDeviceSynchronize();
    cudaMemcpy(h.data(), ptrs[i], n * 4, cudaMemcpyDeviceToHost);
    return h;
  }
};

static void CudaOpChecks() {
  for (auto [M, N, K] : {std::array<int, 3>{1, 300, 96}, {7, 65, 19}, {33, 160, 96}}) {
    auto A = Rand(size_t(M) * K, 1), B = Rand(size_t(K) * N, 2);
    std::vector<float> C(size_t(M) * N);
    cpu::Gemm(M, N, K, A.data(), B.data(), C.data());
    Dev d({A, B, C});
    cuda::Gemm(M, N, K, d.ptrs[0], d.ptrs[1], d.ptrs[2], nullptr);
    EXPECT(MaxDiff(d.Get(2, C.size()), C) < 1e-4f, "cuda Gemm " << M << "x" << N << "x" << K);
  }
  const int rows = 5, cols = 96;
  auto x = Rand(rows * cols, 3), g = Rand(cols, 4), b = Rand(cols, 5);
  std::vector<float> y(x.size());
  cpu::RMSNorm(x.data(), g.data(), y.data(), rows, cols, 1e-5f);
  {
    Dev d({x, g, y});
    cuda::RMSNorm(d.ptrs[0], d.ptrs[1], d.ptrs[2], rows, cols, 1e-5f, nullptr);
    EXPECT(MaxDiff(d.Get(2, y.size()), y) < 1e-5f, "cuda RMSNorm");
  }
  cpu::LayerNorm(x.data(), g.data(), b.data(), y.data(), rows, cols, 1e-5f);
  {
    Dev d({x, g, b, y});
    cuda::LayerNorm(d.ptrs[0], d.ptrs[1], d.ptrs[2], d.ptrs[3], rows, cols, 1e-5f, nullptr);
    EXPECT(MaxDiff(d.Get(3, y.size()), y) < 1e-5f, "cuda LayerNorm");
  }
  const int n = 6, heads = 8, kvh = 2, hd = 12, pos0 = 40;
  auto q = Rand(n * heads * hd, 6), r = q;
  cpu::Rotary(r.data(), n, heads, hd, pos0, 10000.f);
  {
    Dev d({q});
    cuda::Rotary(d.ptrs[0], n, heads, hd, pos0, 10000.f, nullptr);
    EXPECT(MaxDiff(d.Get(0, q.size()), r) < 5e-5f, "cuda Rotary");  // powf/sincosf ulps at pos ~45
  }
  auto k = Rand((pos0 + n) * kvh * hd, 7), v = Rand((pos0 + n) * kvh * hd, 8);
  std::vector<float> o(q.size());
  cpu::Attention(q.data(), k.data(), v.data(), o.data(), n, pos0, heads, kvh, hd);
  {
    Dev d({q, k, v, o});
    cuda::Attention(d.ptrs[0], d.ptrs[1], d.ptrs[2], d.ptrs[3], n, pos0, heads, kvh, hd, nullptr);
    EXPECT(MaxDiff(d.Get(3, o.size()), o) < 2e-5f, "cuda causal GQA Attention");
  }
  auto gg = Rand(1000, 9), uu = Rand(1000, 10);
  std::vector<float> s(1000);
  cpu::SwiGLU(gg.data(), uu.data(), s.data(), 1000);
  {
    Dev d({gg, uu, s});
    cuda::SwiGLU(d.ptrs[0], d.ptrs[1], d.ptrs[2], 1000, nullptr);
    EXPECT(MaxDiff(d.Get(2, s.size()), s) < 1e-6f, "cuda SwiGLU");
  }
  EXPECT(cudaGetLastError() == cudaSuccess, "no CUDA errors in op checks");
}
#endif

static int CudaChecks() {
  if (!CudaCompiled()) {
    std::cout << "SKIP: built with DASHINFER_ENABLE_CUDA=OFF\n";
    return 77;
  }
  try {  // must fail cleanly without a device, succeed with one
    Engine probe(MakeRandomModel(Config(NormType::kRMSNorm, false), 1), Platform::kCUDA);
  } catch (const std::exception& e) {
    std::cout << "SKIP: " << e.what() << "\n";
    return std::string(e.what()).find("no CUDA device") != std::string::npos ? 77 : 1;
  }
#if DASHINFER_WITH_CUDA
  CudaOpChecks();
#endif
  for (bool ln : {false, true}) {
    Model m = MakeRandomModel(Config(ln ? NormType::kLayerNorm : NormType::kRMSNorm, ln), 11);
    Engine cpu(m, Platform::kCPU), gpu(m, Platform::kCUDA);
    std::cout << gpu.Info() << "\n";
    const std::vector<int> prompt = {10, 20, 30, 40, 50, 60, 70, 80};
    const float diff = MaxDiff(cpu.Forward(prompt), gpu.Forward(prompt));
    EXPECT(diff < 1e-3f, (ln ? "LayerNorm" : "RMSNorm") << " cuda logits vs cpu, max diff " << diff);
    const auto gc = cpu.Generate(prompt, 24), gg = gpu.Generate(prompt, 24);
    EXPECT(gc == gg, "cuda generate == cpu generate (24 tokens)");
    EXPECT(gg == gpu.Generate(prompt, 24), "cuda generate deterministic");
    if (gpu.profiling()) std::cout << gpu.ProfileTable();
  }
  return 0;
}

int main(int argc, char** argv) {
  std::string platform = "cpu";
  for (int i = 1; i + 1 < argc; ++i)
    if (std::strcmp(argv[i], "--platform") == 0) platform = argv[i + 1];
  InitLogging(argv[0]);
  std::cout << BuildInfo() << "\n";
  try {
    if (platform == "cuda") {
      const int rc = CudaChecks();
      if (rc != 0) return rc;
    } else {
      CpuChecks();
    }
  } catch (const std::exception& e) {
    std::cout << "FAIL: exception: " << e.what() << "\n";
    return 1;
  }
  std::cout << (g_failures ? "FAILED" : "PASSED") << " (" << g_failures << " failures)\n";
  return g_failures ? 1 : 0;
}
