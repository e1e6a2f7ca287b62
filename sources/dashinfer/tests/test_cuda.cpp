// CUDA engine vs the CPU engine. Skips visibly when the build has no CUDA or
// the machine has no GPU; the "no CUDA device" error path is tested instead.
#include "test_util.h"

using namespace dashinfer;
using dashinfer_test::MaxAbsDiff;
using dashinfer_test::SmallConfig;

TEST(Cuda, ClearErrorWithoutDevice) {
  if (CudaDeviceCount() > 0) GTEST_SKIP() << "a CUDA device is present";
  Model m = MakeRandomModel(SmallConfig(), 1);
  try {
    Engine e(m, Platform::kCUDA);
    FAIL() << "expected an exception";
  } catch (const std::runtime_error& err) {
    const std::string msg = err.what();
    EXPECT_TRUE(msg.find(CudaCompiled() ? "no CUDA device" : "built without CUDA") != std::string::npos)
        << msg;
  }
}

class CudaEngine : public ::testing::TestWithParam<NormType> {
 protected:
  void SetUp() override {
    if (!CudaCompiled()) GTEST_SKIP() << "built with DASHINFER_ENABLE_CUDA=OFF";
    if (CudaDeviceCount() == 0) GTEST_SKIP() << "no CUDA device";
  }
};

TEST_P(CudaEngine, MatchesCpu) {
  ModelConfig c = SmallConfig(GetParam());
  c.tie_word_embeddings = GetParam() == NormType::kLayerNorm;
  Model m = MakeRandomModel(c, 17);
  Engine cpu(m, Platform::kCPU), gpu(m, Platform::kCUDA);
  const std::vector<int> prompt = {5, 6, 7, 8, 9, 10, 11};
  EXPECT_LT(MaxAbsDiff(cpu.Forward(prompt), gpu.Forward(prompt)), 1e-3f);
  EXPECT_EQ(cpu.Generate(prompt, 10), gpu.Generate(prompt, 10));
  EXPECT_EQ(gpu.Generate(prompt, 10), gpu.Generate(prompt, 10));
}

INSTANTIATE_TEST_SUITE_P(Norms, CudaEngine, ::testing::Values(NormType::kRMSNorm, NormType::kLayerNorm),
                         [](const auto& info) {
                           return std::string(info.param == NormType::kLayerNorm ? "LayerNorm" : "RMSNorm");
                         });
