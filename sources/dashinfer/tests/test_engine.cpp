// Engine: determinism, KV-cache consistency, limits, profiling, and the
// platform switch (CUDA skipped visibly when not built / no device).
#include <thread>

#include "test_util.h"

using namespace dashinfer;
using dashinfer_test::ScopedEnv;
using dashinfer_test::SmallConfig;

TEST(Engine, GenerateIsDeterministic) {
  for (NormType norm : {NormType::kRMSNorm, NormType::kLayerNorm}) {
    Model m = MakeRandomModel(SmallConfig(norm), 7);
    Engine a(m, Platform::kCPU), b(m, Platform::kCPU);
    const std::vector<int> prompt = {1, 5, 9, 13};
    const auto ga = a.Generate(prompt, 12);
    EXPECT_EQ(ga.size(), 12u);
    EXPECT_EQ(ga, a.Generate(prompt, 12));  // same engine again (cache reuse)
    EXPECT_EQ(ga, b.Generate(prompt, 12));  // fresh engine
    for (int t : ga) EXPECT_TRUE(t >= 0 && t < 101);
  }
}

// Token k of generate() must be the argmax of a cache-free prefill of
// prompt + generated[0..k): checks the incremental KV-cache path.
TEST(Engine, KVCacheMatchesFullRecompute) {
  Model m = MakeRandomModel(SmallConfig(), 21);
  Engine e(m, Platform::kCPU);
  std::vector<int> seq = {3, 1, 4, 1, 5};
  const auto gen = e.Generate(seq, 8);
  for (int tok : gen) {
    const auto logits = e.Forward(seq);
    EXPECT_EQ(int(std::max_element(logits.begin(), logits.end()) - logits.begin()), tok);
    seq.push_back(tok);
  }
}

TEST(Engine, LimitsAndErrors) {
  ModelConfig c = SmallConfig();
  c.eos_token_id = -1;
  Model m = MakeRandomModel(c, 2);
  Engine e(m, Platform::kCPU);
  EXPECT_THROW(e.Generate({}, 3), std::invalid_argument);
  EXPECT_THROW(e.Generate({101}, 3), std::invalid_argument);
  EXPECT_THROW(e.Generate(std::vector<int>(41, 1), 1), std::invalid_argument);
  EXPECT_TRUE(e.Generate({1}, 0).empty());
  // KV cache of 40: a 38-token prompt leaves room for 3 tokens (the last one
  // needs no cache slot), then stops early.
  EXPECT_EQ(e.Generate(std::vector<int>(38, 2), 10).size(), 3u);
  EXPECT_THROW(ParsePlatform("tpu"), std::invalid_argument);
}

TEST(Engine, EosStopsGeneration) {
  Model m = MakeRandomModel(SmallConfig(), 7);
  const auto free_run = Engine(m, Platform::kCPU).Generate({1, 2}, 6);
  m.config.eos_token_id = free_run[2];
  const auto stopped = Engine(m, Platform::kCPU).Generate({1, 2}, 6);
  ASSERT_LE(stopped.size(), 3u);
  EXPECT_EQ(stopped.back(), free_run[2]);
}

TEST(Engine, ParallelEnginesAgree) {  // also a TSan target: independent engines in threads
  Model m = MakeRandomModel(SmallConfig(), 9);
  const auto want = Engine(m, Platform::kCPU).Generate({4, 2}, 6);
  std::vector<std::vector<int>> got(3);
  std::vector<std::thread> ts;
  Engine shared(m, Platform::kCPU);  // and one engine shared by threads (internal mutex)
  std::vector<std::vector<int>> got_shared(3);
  for (int i = 0; i < 3; ++i)
    ts.emplace_back([&, i] {
      got[i] = Engine(m, Platform::kCPU).Generate({4, 2}, 6);
      got_shared[i] = shared.Generate({4, 2}, 6);
    });
  for (auto& t : ts) t.join();
  for (int i = 0; i < 3; ++i) {
    EXPECT_EQ(got[i], want);
    EXPECT_EQ(got_shared[i], want);
  }
}

TEST(Engine, InfoAndVersion) {
  Engine e(MakeRandomModel(SmallConfig(), 1), Platform::kCPU);
  EXPECT_NE(e.Info().find("platform cpu"), std::string::npos) << e.Info();
  EXPECT_NE(BuildInfo().find("version=" + Version()), std::string::npos);
  EXPECT_FALSE(Version().empty());
}

TEST(Engine, ProfileTable) {
#if !DASHINFER_PROFILE
  GTEST_SKIP() << "built with DASHINFER_PROFILE=OFF";
#else
  Model m = MakeRandomModel(SmallConfig(), 3);
  {
    ScopedEnv off("AS_PROFILE", "OFF");
    Engine e(m, Platform::kCPU);
    EXPECT_FALSE(e.profiling());
    EXPECT_NE(e.ProfileTable().find("AS_PROFILE=ON"), std::string::npos);
  }
  ScopedEnv on("AS_PROFILE", "ON");
  Engine e(m, Platform::kCPU);
  ASSERT_TRUE(e.profiling());
  e.Generate({1, 2, 3}, 4);
  const std::string t = e.ProfileTable();
  for (const char* s : {"*** forward ***", "opname", "percentage", "Gemm", "Attention", "Rotary",
                        "RMSNorm", "SwiGLU", "Embedding", "GenerateOp"})
    EXPECT_NE(t.find(s), std::string::npos) << s << "\n" << t;
  // Gemm: 7 per layer per step + lm_head; 4 forward passes (1 prefill + 3 decode).
  EXPECT_NE(t.find("Gemm                " + std::to_string(4 * (2 * 7 + 1))), std::string::npos) << t;
  e.ResetProfile();
  EXPECT_EQ(e.ProfileTable().find("Gemm"), std::string::npos);
#endif
}
