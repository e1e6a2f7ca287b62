// Protobuf model files (proto/model.proto). Built only with protobuf
// (DASHINFER_WITH_SYSTEM_DEPS=ON); otherwise the API throws a clear error.
#include <cstring>
#include <fstream>
#include <stdexcept>

#include "dashinfer/dashinfer.h"
#include "logging.h"

#if DASHINFER_HAVE_PROTOBUF
#include "model.pb.h"

namespace dashinfer {
namespace {

// bfloat16 = upper half of a float32, rounded to nearest even.
uint16_t FloatToBF16(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  if ((u & 0x7fffffffu) > 0x7f800000u) return uint16_t((u >> 16) | 0x40);  // keep NaN a NaN
  return uint16_t((u + 0x7fffu + ((u >> 16) & 1u)) >> 16);
}
float BF16ToFloat(uint16_t h) {
  uint32_t u = uint32_t(h) << 16;
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}

// The file format is little-endian; all supported hosts (x86, arm64 Linux,
// Apple silicon) are too, so raw payloads are plain memcpy's.
static_assert(sizeof(float) == 4, "float32 expected");

}  // namespace

void SaveModel(const Model& model, const std::string& path, DataType storage, bool raw_bytes) {
  model.Validate();
  proto::Model pm;
  const ModelConfig& c = model.config;
  proto::ModelConfig* pc = pm.mutable_config();
  pc->set_name(c.name);
  pc->set_num_layers(c.num_layers);
  pc->set_hidden_size(c.hidden_size);
  pc->set_num_heads(c.num_heads);
  pc->set_num_kv_heads(c.num_kv_heads);
  pc->set_head_dim(c.head_dim);
  pc->set_ffn_size(c.ffn_size);
  pc->set_vocab_size(c.vocab_size);
  pc->set_rope_theta(c.rope_theta);
  pc->set_norm_eps(c.norm_eps);
  pc->set_norm_type(c.norm_type == NormType::kLayerNorm ? proto::LAYER_NORM : proto::RMS_NORM);
  pc->set_dtype(storage == DataType::kBFloat16 ? proto::BFLOAT16 : proto::FLOAT32);
  pc->set_max_seq_len(c.max_seq_len);
  pc->set_tie_word_embeddings(c.tie_word_embeddings);
  pc->set_eos_token_id(c.eos_token_id);
  pm.set_producer(model.producer);
  pm.set_seed(model.seed);
  for (const auto& [name, t] : model.weights) {
    proto::Tensor* pt = pm.add_tensors();
    pt->set_name(name);
    for (int64_t d : t.shape) pt->add_shape(uint64_t(d));
    if (storage == DataType::kBFloat16) {
      pt->set_dtype(proto::BFLOAT16);
      std::string raw(t.data.size() * 2, '\0');
      for (size_t i = 0; i < t.data.size(); ++i) {
        const uint16_t h = FloatToBF16(t.data[i]);
        std::memcpy(&raw[2 * i], &h, 2);
      }
      pt->set_raw(std::move(raw));
    } else if (raw_bytes) {
      pt->set_dtype(proto::FLOAT32);
      pt->set_raw(std::string(reinterpret_cast<const char*>(t.data.data()), t.data.size() * 4));
    } else {
      pt->set_dtype(proto::FLOAT32);
      pt->mutable_data()->Add(t.data.begin(), t.data.end());
    }
  }
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  if (!out || !pm.SerializeToOstream(&out))
    throw std::runtime_error("cannot write model file '" + path + "'");
  LOG(INFO) << "saved model '" << c.name << "' (" << model.weights.size() << " tensors, "
            << (storage == DataType::kBFloat16 ? "bf16" : "fp32") << ") to " << path;
}

Model LoadModel(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw std::runtime_error("cannot open model file '" + path + "'");
  proto::Model pm;
  if (!pm.ParseFromIstream(&in))
    throw std::runtime_error("'" + path + "' is not a dashinfer model (protobuf parse failed)");
  Model m;
  const proto::ModelConfig& pc = pm.config();
  ModelConfig& c = m.config;
  c.name = pc.name();
  c.num_layers = int(pc.num_layers());
  c.hidden_size = int(pc.hidden_size());
  c.num_heads = int(pc.num_heads());
  c.num_kv_heads = int(pc.num_kv_heads());
  c.head_dim = int(pc.head_dim());
  c.ffn_size = int(pc.ffn_size());
  c.vocab_size = int(pc.vocab_size());
  c.rope_theta = pc.rope_theta();
  c.norm_eps = pc.norm_eps();
  c.norm_type = pc.norm_type() == proto::LAYER_NORM ? NormType::kLayerNorm : NormType::kRMSNorm;
  c.dtype = pc.dtype() == proto::BFLOAT16 ? DataType::kBFloat16 : DataType::kFloat32;
  c.max_seq_len = int(pc.max_seq_len());
  c.tie_word_embeddings = pc.tie_word_embeddings();
  c.eos_token_id = pc.eos_token_id();
  m.producer = pm.producer();
  m.seed = pm.seed();
  for (const proto::Tensor& pt : pm.tensors()) {
    Tensor t;
    for (uint64_t d : pt.shape()) t.shape.push_back(int64_t(d));
    const int64_t n = t.numel();
    t.data.resize(size_t(n));
    const std::string& raw = pt.raw();
    if (pt.data_size() > 0) {
      if (pt.data_size() != n) throw std::runtime_error("tensor '" + pt.name() + "': bad size");
      std::copy(pt.data().begin(), pt.data().end(), t.data.begin());
    } else if (pt.dtype() == proto::BFLOAT16) {
      if (int64_t(raw.size()) != 2 * n) throw std::runtime_error("tensor '" + pt.name() + "': bad size");
      for (int64_t i = 0; i < n; ++i) {
        uint16_t h;
        std::memcpy(&h, raw.data() + 2 * i, 2);
        t.data[size_t(i)] = BF16ToFloat(h);
      }
    } else {
      if (int64_t(raw.size()) != 4 * n) throw std::runtime_error("tensor '" + pt.name() + "': bad size");
      std::memcpy(t.data.data(), raw.data(), raw.size());
    }
    m.weights[pt.name()] = std::move(t);
  }
  m.Validate();  // shapes must match the config before an engine trusts them
  LOG(INFO) << "loaded model '" << c.name << "' from " << path << ": " << c.num_layers
            << " layers, hidden " << c.hidden_size << ", heads " << c.num_heads << "/"
            << c.num_kv_heads << "x" << c.head_dim << ", ffn " << c.ffn_size << ", vocab "
            << c.vocab_size << ", " << m.weights.size() << " tensors"
            << (m.producer.empty() ? "" : ", producer: " + m.producer);
  return m;
}

}  // namespace dashinfer

#else  // !DASHINFER_HAVE_PROTOBUF

namespace dashinfer {
void SaveModel(const Model&, const std::string&, DataType, bool) {
  throw std::runtime_error("dashinfer was built without protobuf (DASHINFER_WITH_SYSTEM_DEPS=OFF): "
                           "model files are unavailable, use MakeRandomModel");
}
Model LoadModel(const std::string& path) {
  throw std::runtime_error("cannot load '" + path + "': dashinfer was built without protobuf "
                           "(DASHINFER_WITH_SYSTEM_DEPS=OFF)");
}
}  // namespace dashinfer
#endif
