// DashInfer public C++ API: model description, model files, inference engine.
//
// Deliberately free of protobuf/glog types so that consumers of the installed
// library need neither to compile against it (both are private dependencies).
// User-facing errors (bad file, bad config, no CUDA device) are thrown as
// std::runtime_error / std::invalid_argument; internal invariants use CHECK.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

namespace dashinfer {

enum class NormType { kRMSNorm = 0, kLayerNorm = 1 };
enum class DataType { kFloat32 = 0, kBFloat16 = 1 };  // storage dtype only
enum class Platform { kCPU, kCUDA };

struct ModelConfig {
  std::string name = "tiny";
  int num_layers = 2;
  int hidden_size = 64;
  int num_heads = 4;
  int num_kv_heads = 2;
  int head_dim = 16;
  int ffn_size = 128;
  int vocab_size = 256;
  int max_seq_len = 128;
  float rope_theta = 10000.0f;
  float norm_eps = 1e-5f;
  NormType norm_type = NormType::kRMSNorm;
  DataType dtype = DataType::kFloat32;
  bool tie_word_embeddings = false;
  int eos_token_id = -1;

  // Throws std::invalid_argument naming the offending field.
  void Validate() const;
};

struct Tensor {
  std::vector<int64_t> shape;
  std::vector<float> data;  // row-major, always float32 in memory
  int64_t numel() const;
};

struct Model {
  ModelConfig config;
  std::map<std::string, Tensor> weights;
  std::string producer;
  uint64_t seed = 0;
  // Checks that every expected weight exists with the expected shape.
  void Validate() const;
};

// Name -> shape of every weight the config needs (see proto/model.proto).
std::map<std::string, std::vector<int64_t>> ExpectedWeightShapes(const ModelConfig& cfg);

// Deterministic for a given (config, seed) on every platform: uses its own
// integer-to-float mapping instead of std::uniform_real_distribution.
Model MakeRandomModel(const ModelConfig& cfg, uint64_t seed);

// Protobuf model files. Throw std::runtime_error on I/O or parse errors, and
// when the library was built with DASHINFER_WITH_SYSTEM_DEPS=OFF (no protobuf).
void SaveModel(const Model& model, const std::string& path,
               DataType storage = DataType::kFloat32, bool raw_bytes = false);
Model LoadModel(const std::string& path);

Platform ParsePlatform(const std::string& name);  // "cpu" | "cuda"
const char* PlatformName(Platform p);

class Backend;
class Profiler;

class Engine {
 public:
  // Profiling is enabled when compiled in (DASHINFER_PROFILE=ON) and the
  // environment has AS_PROFILE=ON at construction time.
  Engine(Model model, Platform platform);
  Engine(const std::string& model_path, Platform platform);
  ~Engine();
  Engine(const Engine&) = delete;
  Engine& operator=(const Engine&) = delete;

  // Generate/Forward serialise on an internal mutex (one KV cache per engine);
  // use one engine per thread for parallelism.
  // Greedy decoding: prefill `input_ids`, then one token at a time with the KV
  // cache. Returns only the new tokens; stops early at eos_token_id or when
  // the KV cache (max_seq_len) is full.
  std::vector<int> Generate(const std::vector<int>& input_ids, int max_new_tokens);
  // Prefill only; returns the logits of the last input token.
  std::vector<float> Forward(const std::vector<int>& input_ids);

  const ModelConfig& config() const;
  Platform platform() const;
  std::string Info() const;  // platform, device, build knobs, model shape
  bool profiling() const;
  std::string ProfileTable() const;  // seed-style table: "*** forward ***"
  void ResetProfile();

 private:
  void Init();
  std::vector<float> Prefill(const std::vector<int>& input_ids);  // caller holds mu_
  std::mutex mu_;
  Model model_;
  Platform platform_;
  std::unique_ptr<Profiler> profiler_;
  std::unique_ptr<Backend> backend_;
};

// Initialise glog once (no-op without glog or if already initialised): logs go
// to stderr unless GLOG_log_dir / GLOG_logtostderr say otherwise; silence INFO
// with GLOG_minloglevel=1. Called by the Python module and dashinfer_run.
void InitLogging(const char* program);

std::string Version();    // DASHINFER_RELEASE_VERSION
std::string BuildInfo();  // one line: platform, cuda archs, abi, sanitizer...
bool CudaCompiled();
int CudaDeviceCount();    // 0 when not compiled with CUDA or no device/driver

}  // namespace dashinfer
