// Model description helpers: validation, expected weight shapes, and the
// seeded random model used by tests, the CLI and the Python package.
#include <cmath>
#include <random>
#include <sstream>
#include <stdexcept>

#include "dashinfer/dashinfer.h"
#include "logging.h"

namespace dashinfer {

void ModelConfig::Validate() const {
  auto need = [](bool ok, const std::string& what) {
    if (!ok) throw std::invalid_argument("invalid ModelConfig: " + what);
  };
  need(num_layers >= 1, "num_layers must be >= 1");
  need(hidden_size >= 1 && ffn_size >= 1 && vocab_size >= 1, "sizes must be >= 1");
  need(num_heads >= 1 && num_kv_heads >= 1, "num_heads/num_kv_heads must be >= 1");
  need(num_heads % num_kv_heads == 0, "num_heads must be a multiple of num_kv_heads (GQA)");
  need(head_dim >= 2 && head_dim % 2 == 0, "head_dim must be even (rotary pairs)");
  need(max_seq_len >= 1, "max_seq_len must be >= 1");
  need(rope_theta > 0 && norm_eps > 0, "rope_theta and norm_eps must be > 0");
  need(eos_token_id < vocab_size, "eos_token_id must be < vocab_size");
}

int64_t Tensor::numel() const {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  return n;
}

std::map<std::string, std::vector<int64_t>> ExpectedWeightShapes(const ModelConfig& c) {
  const int64_t H = c.hidden_size, q = int64_t(c.num_heads) * c.head_dim,
                kv = int64_t(c.num_kv_heads) * c.head_dim, F = c.ffn_size, V = c.vocab_size;
  const bool ln = c.norm_type == NormType::kLayerNorm;
  std::map<std::string, std::vector<int64_t>> s;
  s["embed"] = {V, H};
  for (int l = 0; l < c.num_layers; ++l) {
    const std::string p = "layers." + std::to_string(l) + ".";
    for (const char* norm : {"attn_norm", "ffn_norm"}) {
      s[p + norm + ".weight"] = {H};
      if (ln) s[p + norm + ".bias"] = {H};
    }
    s[p + "wq"] = {H, q};
    s[p + "wk"] = {H, kv};
    s[p + "wv"] = {H, kv};
    s[p + "wo"] = {q, H};
    s[p + "w_gate"] = {H, F};
    s[p + "w_up"] = {H, F};
    s[p + "w_down"] = {F, H};
  }
  s["final_norm.weight"] = {H};
  if (ln) s["final_norm.bias"] = {H};
  if (!c.tie_word_embeddings) s["lm_head"] = {H, V};
  return s;
}

void Model::Validate() const {
  config.Validate();
  for (const auto& [name, shape] : ExpectedWeightShapes(config)) {
    auto it = weights.find(name);
    if (it == weights.end()) throw std::invalid_argument("model is missing weight '" + name + "'");
    if (it->second.shape != shape || it->second.numel() != int64_t(it->second.data.size())) {
      std::ostringstream os;
      os << "weight '" << name << "' has shape [";
      for (auto d : it->second.shape) os << d << ",";
      os << "] / " << it->second.data.size() << " values; expected [";
      for (auto d : shape) os << d << ",";
      os << "]";
      throw std::invalid_argument(os.str());
    }
  }
}

Model MakeRandomModel(const ModelConfig& cfg, uint64_t seed) {
  cfg.Validate();
  Model m;
  m.config = cfg;
  m.seed = seed;
  m.producer = "dashinfer random(seed=" + std::to_string(seed) + ")";
  std::mt19937_64 rng(seed);  // the engine of mt19937_64 is fully specified
  // Uniform in [-1, 1) from the top 24 bits: portable, unlike <random>'s
  // distributions whose algorithms are implementation-defined.
  auto uni = [&rng]() { return float(int64_t(rng() >> 40) - (1 << 23)) / float(1 << 23); };
  for (const auto& [name, shape] : ExpectedWeightShapes(cfg)) {  // sorted: stable order
    Tensor t;
    t.shape = shape;
    t.data.resize(t.numel());
    const bool is_norm = name.find("norm") != std::string::npos;
    const bool is_bias = name.size() > 5 && name.compare(name.size() - 5, 5, ".bias") == 0;
    // 1/sqrt(fan_in) keeps activations O(1) through the residual stream.
    const float scale = shape.size() == 2 && name != "embed" ? 1.0f / std::sqrt(float(shape[0]))
                                                             : 1.0f;
    for (float& v : t.data) {
      const float u = uni();
      v = is_bias ? 0.1f * u : is_norm ? 1.0f + 0.1f * u : scale * u;
    }
    m.weights.emplace(name, std::move(t));
  }
  return m;
}

Platform ParsePlatform(const std::string& name) {
  if (name == "cpu" || name == "CPU") return Platform::kCPU;
  if (name == "cuda" || name == "CUDA" || name == "gpu") return Platform::kCUDA;
  throw std::invalid_argument("unknown platform '" + name + "' (expected cpu or cuda)");
}

const char* PlatformName(Platform p) { return p == Platform::kCUDA ? "cuda" : "cpu"; }

}  // namespace dashinfer
