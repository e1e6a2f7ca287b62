// Protobuf model files: round trips (float list, raw fp32 bytes, bf16), the
// wire schema itself, and clear errors for bad files / configs.
#include <fstream>

#include "model.pb.h"
#include "test_util.h"

using namespace dashinfer;
using dashinfer_test::SmallConfig;
using dashinfer_test::TempPath;

static void ExpectSameModel(const Model& a, const Model& b, float tol) {
  EXPECT_EQ(a.config.name, b.config.name);
  EXPECT_EQ(a.config.num_layers, b.config.num_layers);
  EXPECT_EQ(a.config.num_kv_heads, b.config.num_kv_heads);
  EXPECT_EQ(a.config.norm_type, b.config.norm_type);
  EXPECT_FLOAT_EQ(a.config.rope_theta, b.config.rope_theta);
  EXPECT_EQ(a.config.eos_token_id, b.config.eos_token_id);
  EXPECT_EQ(a.seed, b.seed);
  ASSERT_EQ(a.weights.size(), b.weights.size());
  for (const auto& [name, t] : a.weights) {
    const Tensor& u = b.weights.at(name);
    EXPECT_EQ(t.shape, u.shape) << name;
    ASSERT_EQ(t.data.size(), u.data.size()) << name;
    for (size_t i = 0; i < t.data.size(); ++i)
      ASSERT_NEAR(t.data[i], u.data[i], tol * (1.f + std::fabs(t.data[i]))) << name << "[" << i << "]";
  }
}

TEST(Proto, RoundTripFloatList) {
  ModelConfig c = SmallConfig(NormType::kLayerNorm);
  c.eos_token_id = 7;
  Model m = MakeRandomModel(c, 42);
  const std::string p = TempPath("fp32.pb");
  SaveModel(m, p);
  ExpectSameModel(m, LoadModel(p), 0.f);  // bit-exact
  std::remove(p.c_str());
}

TEST(Proto, RoundTripRawBytesAndBF16) {
  ModelConfig c = SmallConfig();
  c.tie_word_embeddings = true;
  Model m = MakeRandomModel(c, 3);
  const std::string p = TempPath("raw.pb"), q = TempPath("bf16.pb");
  SaveModel(m, p, DataType::kFloat32, /*raw_bytes=*/true);
  ExpectSameModel(m, LoadModel(p), 0.f);
  SaveModel(m, q, DataType::kBFloat16);
  Model b = LoadModel(q);
  EXPECT_EQ(b.config.dtype, DataType::kBFloat16);
  ExpectSameModel(m, b, 1.f / 128);  // bf16 keeps 8 significant bits
  std::remove(p.c_str());
  std::remove(q.c_str());
}

TEST(Proto, WireSchemaIsReadableWithGeneratedClasses) {
  Model m = MakeRandomModel(SmallConfig(), 5);
  const std::string p = TempPath("schema.pb");
  SaveModel(m, p);
  dashinfer::proto::Model pm;
  std::ifstream in(p, std::ios::binary);
  ASSERT_TRUE(pm.ParseFromIstream(&in));
  EXPECT_EQ(pm.config().hidden_size(), 48u);
  EXPECT_EQ(pm.config().num_kv_heads(), 2u);
  EXPECT_EQ(pm.seed(), 5u);
  EXPECT_EQ(size_t(pm.tensors_size()), m.weights.size());
  for (const auto& t : pm.tensors()) {
    EXPECT_EQ(t.dtype(), dashinfer::proto::FLOAT32);
    EXPECT_EQ(int64_t(t.data_size()), m.weights.at(t.name()).numel()) << t.name();
  }
  std::remove(p.c_str());
}

TEST(Proto, RandomModelIsSeedDeterministic) {
  Model a = MakeRandomModel(SmallConfig(), 11), b = MakeRandomModel(SmallConfig(), 11),
        c = MakeRandomModel(SmallConfig(), 12);
  EXPECT_EQ(a.weights.at("layers.1.wq").data, b.weights.at("layers.1.wq").data);
  EXPECT_NE(a.weights.at("layers.1.wq").data, c.weights.at("layers.1.wq").data);
}

TEST(Proto, ClearErrors) {
  EXPECT_THROW(LoadModel("/nonexistent/model.pb"), std::runtime_error);
  const std::string p = TempPath("garbage.pb");
  { std::ofstream(p) << "this is not a protobuf \xff\xff\xff\xff"; }
  EXPECT_THROW(LoadModel(p), std::runtime_error);
  std::remove(p.c_str());

  ModelConfig bad = SmallConfig();
  bad.num_kv_heads = 4;  // 6 % 4 != 0
  EXPECT_THROW(bad.Validate(), std::invalid_argument);
  Model m = MakeRandomModel(SmallConfig(), 1);
  m.weights.at("layers.0.wk").shape = {48, 17};
  EXPECT_THROW(m.Validate(), std::invalid_argument);
  m.weights.erase("lm_head");
  EXPECT_THROW(SaveModel(m, TempPath("never.pb")), std::invalid_argument);
}
