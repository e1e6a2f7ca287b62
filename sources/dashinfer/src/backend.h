// Internal backend interface: one forward pass over a chunk of tokens with a
// per-layer KV cache owned by the backend.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "dashinfer/dashinfer.h"

namespace dashinfer {

class Backend {
 public:
  virtual ~Backend() = default;
  virtual std::string Describe() const = 0;
  // Runs tokens[0..n) at positions pos0.., writing their K/V into the cache
  // (positions >= pos0+n are stale and never read: attention is causal), and
  // stores the last token's logits (vocab_size floats) into host `logits`.
  virtual void Forward(const int32_t* tokens, int n, int pos0, float* logits) = 0;
};

std::unique_ptr<Backend> MakeCpuBackend(const Model& model, Profiler* profiler);
// Defined in cuda/backend_cuda.cpp, or in engine.cpp as a stub that throws
// when the build has DASHINFER_ENABLE_CUDA=OFF.
std::unique_ptr<Backend> MakeCudaBackend(const Model& model, Profiler* profiler);

}  // namespace dashinfer
