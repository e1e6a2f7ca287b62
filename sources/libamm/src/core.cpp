// Registry, parameter handling and input validation shared by all algorithms.
#include <torch/torch.h>

#include <ATen/CPUGeneratorImpl.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <set>
#include <sstream>
#include <stdexcept>

#include "detail.h"

namespace libamm {

double AmmParams::knob(const std::string& name, double fallback) const {
  auto it = knobs.find(name);
  return it == knobs.end() ? fallback : it->second;
}

namespace detail {

at::Generator make_generator(uint64_t seed) {
  return at::make_generator<at::CPUGeneratorImpl>(seed);
}

int64_t clamp_size(int64_t requested, int64_t upper) {
  return std::max<int64_t>(1, std::min(requested, std::max<int64_t>(1, upper)));
}

int64_t int_knob(const AmmParams& p, const std::string& name,
                 int64_t fallback, int64_t min_value) {
  const double v = p.knob(name, static_cast<double>(fallback));
  TORCH_CHECK(std::isfinite(v) && v == std::floor(v),
              "libamm: knob '", name, "' must be an integer, got ", v);
  const auto i = static_cast<int64_t>(v);
  TORCH_CHECK(i >= min_value, "libamm: knob '", name, "' must be >= ",
              min_value, ", got ", i);
  return i;
}

}  // namespace detail

at::Tensor Algorithm::amm(const at::Tensor& A, const at::Tensor& B,
                          const AmmParams& params) const {
  TORCH_CHECK(A.defined() && B.defined(), "libamm: undefined input tensor");
  TORCH_CHECK(A.dim() == 2 && B.dim() == 2, "libamm(", name(),
              "): A and B must be 2-D, got ", A.sizes(), " and ", B.sizes());
  TORCH_CHECK(A.size(1) == B.size(0), "libamm(", name(),
              "): inner dimensions differ: ", A.sizes(), " @ ", B.sizes());
  TORCH_CHECK(A.scalar_type() == B.scalar_type(), "libamm(", name(),
              "): dtype mismatch ", A.scalar_type(), " vs ", B.scalar_type());
  TORCH_CHECK(A.scalar_type() == at::kFloat || A.scalar_type() == at::kDouble,
              "libamm(", name(), "): only float32/float64 are supported, got ",
              A.scalar_type());
  TORCH_CHECK(A.device() == B.device(), "libamm(", name(),
              "): A and B are on different devices");
  TORCH_CHECK(params.sketch_size >= 1, "libamm(", name(),
              "): sketch_size must be >= 1, got ", params.sketch_size);

  // Reject unknown knobs: a misspelt knob would otherwise be ignored.
  std::set<std::string> known;
  for (const auto& k : knobs()) known.insert(k.name);
  for (const auto& kv : params.knobs) {
    TORCH_CHECK(known.count(kv.first), "libamm(", name(),
                "): unknown knob '", kv.first, "'");
  }

  // No autograd graph: these are numerical kernels, and recording the graph
  // of e.g. 50 k-means iterations would only waste memory.
  at::NoGradGuard no_grad;
  if (A.size(0) == 0 || B.size(1) == 0 || A.size(1) == 0) {
    return at::zeros({A.size(0), B.size(1)}, A.options());
  }
  return compute(A.contiguous(), B.contiguous(), params);
}

namespace {
// Anonymous namespace is fine here: core.cpp is the only TU that defines
// these names (algorithm TUs use libamm::algo_<name> namespaces instead).
struct RegistryEntry {
  const char* name;
  AlgorithmPtr (*factory)();
  bool listed;  // false for aliases
};

const std::vector<RegistryEntry>& registry_table() {
  // Explicit table: referencing every factory from here is what keeps each
  // algorithm's object file in the link (see detail.h).
  static const std::vector<RegistryEntry> table = {
      {"exact", &detail::make_exact, true},
      {"crs", &detail::make_crs, true},
      {"importance", &detail::make_importance, true},
      {"weighted_cr", &detail::make_importance, false},
      {"count_sketch", &detail::make_count_sketch, true},
      {"random_projection", &detail::make_random_projection, true},
      {"jl", &detail::make_random_projection, false},
      {"cooccurring_fd", &detail::make_cooccurring_fd, true},
      {"coofd", &detail::make_cooccurring_fd, false},
      {"block_lra", &detail::make_block_lra, true},
      {"pq", &detail::make_pq, true},
  };
  return table;
}
}  // namespace

AlgorithmPtr create(const std::string& name) {
  for (const auto& e : registry_table()) {
    if (name == e.name) return e.factory();
  }
  std::ostringstream msg;
  msg << "libamm: unknown algorithm '" << name << "'; available:";
  for (const auto& n : list()) msg << ' ' << n;
  throw std::invalid_argument(msg.str());
}

std::vector<std::string> list() {
  std::vector<std::string> names;
  for (const auto& e : registry_table()) {
    if (e.listed) names.emplace_back(e.name);
  }
  std::sort(names.begin(), names.end());
  return names;
}

bool has(const std::string& name) {
  for (const auto& e : registry_table()) {
    if (name == e.name) return true;
  }
  return false;
}

at::Tensor amm(const std::string& name, const at::Tensor& A,
               const at::Tensor& B, const AmmParams& params) {
  return create(name)->amm(A, B, params);
}

double relative_frobenius_error(const at::Tensor& approx,
                                const at::Tensor& exact) {
  TORCH_CHECK(approx.sizes() == exact.sizes(),
              "libamm: shape mismatch in relative_frobenius_error");
  // Accumulate in float64 so the metric itself is not the noise floor.
  const auto e = exact.to(at::kDouble);
  const double denom = e.norm().item<double>();
  const double num = (approx.to(at::kDouble) - e).norm().item<double>();
  if (denom == 0.0) return num == 0.0 ? 0.0 : INFINITY;
  return num / denom;
}

}  // namespace libamm
