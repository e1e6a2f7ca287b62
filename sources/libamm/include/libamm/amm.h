// libamm — approximate matrix multiplication (AMM) on the PyTorch C++ API.
//
// Public interface: every algorithm computes C ~= A @ B for a 2-D A (m x n)
// and a 2-D B (n x p) under a common parameter block, and is reachable by
// name through a registry:
//
//   auto algo = libamm::create("crs");
//   libamm::AmmParams p; p.sketch_size = 128; p.seed = 7;
//   at::Tensor C = algo->amm(A, B, p);
//
// This header deliberately includes only <ATen/core/Tensor.h> (not
// <torch/torch.h>): consumers that just call the library should not pay the
// ~1.3 GB / 15 s compile cost of the full torch umbrella header.
#pragma once

#include <ATen/core/Tensor.h>

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

// Kept in sync with project(libamm VERSION ...) in CMakeLists.txt.
#define LIBAMM_VERSION_STRING "0.1.0"

namespace libamm {

// Parameters shared by all algorithms.
//  * sketch_size: the algorithm's size knob ("k"): number of sampled
//    column/row pairs (crs, importance), sketch rows (count_sketch,
//    random_projection), sketch columns (cooccurring_fd), rank per block
//    (block_lra), centroids per sub-space (pq). Ignored by "exact".
//  * seed: every random choice goes through a torch::Generator seeded with
//    this value, so results are reproducible run to run.
//  * knobs: algorithm-specific numeric options (see Algorithm::knobs()).
//    Unknown names are rejected so that typos do not silently do nothing.
struct AmmParams {
  int64_t sketch_size = 64;
  uint64_t seed = 42;
  std::map<std::string, double> knobs;

  // Value of knob `name`, or `fallback` when it is not set.
  double knob(const std::string& name, double fallback) const;
};

// Description of one algorithm-specific knob.
struct KnobInfo {
  std::string name;
  double default_value;
  std::string help;
};

class Algorithm {
 public:
  virtual ~Algorithm() = default;

  // Registry name, e.g. "count_sketch".
  virtual std::string name() const = 0;
  // One-line human-readable description.
  virtual std::string description() const = 0;
  // Knobs accepted in AmmParams::knobs.
  virtual std::vector<KnobInfo> knobs() const { return {}; }

  // Validates A/B/params, then calls compute(). A and B must be 2-D
  // floating tensors (float32/float64) of matching dtype and device with
  // A.size(1) == B.size(0). Returns an m x p tensor of A's dtype.
  at::Tensor amm(const at::Tensor& A, const at::Tensor& B,
                 const AmmParams& params = AmmParams()) const;

 protected:
  virtual at::Tensor compute(const at::Tensor& A, const at::Tensor& B,
                             const AmmParams& params) const = 0;
};

using AlgorithmPtr = std::unique_ptr<Algorithm>;

// Registry. Names are listed sorted; aliases (e.g. "weighted_cr" for
// "importance") resolve to the same algorithm but are not listed.
AlgorithmPtr create(const std::string& name);
std::vector<std::string> list();
bool has(const std::string& name);

// Convenience: create(name)->amm(A, B, params).
at::Tensor amm(const std::string& name, const at::Tensor& A,
               const at::Tensor& B, const AmmParams& params = AmmParams());

// ||C - A@B||_F / ||A@B||_F (the metric used in tests and benchmarks).
double relative_frobenius_error(const at::Tensor& approx,
                                const at::Tensor& exact);

}  // namespace libamm
