// Host-only: the pybind11 module over every op (g++, <torch/extension.h>, ~1.5 GB).
#include <torch/extension.h>

std::vector<at::Tensor> layernorm_fwd(const at::Tensor&, const at::Tensor&, const at::Tensor&, double);
std::vector<at::Tensor> rmsnorm_fwd(const at::Tensor&, const at::Tensor&, double);
at::Tensor layernorm_bwd(const at::Tensor&, const at::Tensor&, const at::Tensor&, const at::Tensor&, const at::Tensor&);
at::Tensor rmsnorm_bwd(const at::Tensor&, const at::Tensor&, const at::Tensor&, const at::Tensor&, const at::Tensor&);
at::Tensor softmax_fwd(const at::Tensor&);
at::Tensor log_softmax_fwd(const at::Tensor&);
at::Tensor softmax_bwd(const at::Tensor&, const at::Tensor&);
at::Tensor log_softmax_bwd(const at::Tensor&, const at::Tensor&);
at::Tensor attention_fwd(const at::Tensor&, const at::Tensor&, const at::Tensor&, bool);
at::Tensor activation_fwd(const at::Tensor&, const std::string&);
at::Tensor activation_bwd(const at::Tensor&, const at::Tensor&, const std::string&);
void fill_fwd(at::Tensor&, double);
void arange_fwd(at::Tensor&, double, double);
void cast_fwd(const at::Tensor&, at::Tensor&);

PYBIND11_MODULE(TORCH_EXTENSION_NAME, m) {
  m.def("layernorm_fwd", &layernorm_fwd);
  m.def("rmsnorm_fwd", &rmsnorm_fwd);
  m.def("layernorm_bwd", &layernorm_bwd);
  m.def("rmsnorm_bwd", &rmsnorm_bwd);
  m.def("softmax_fwd", &softmax_fwd);
  m.def("log_softmax_fwd", &log_softmax_fwd);
  m.def("softmax_bwd", &softmax_bwd);
  m.def("log_softmax_bwd", &log_softmax_bwd);
  m.def("attention_fwd", &attention_fwd);
  m.def("activation_fwd", &activation_fwd);
  m.def("activation_bwd", &activation_bwd);
  m.def("fill_fwd", &fill_fwd);
  m.def("arange_fwd", &arange_fwd);
  m.def("cast_fwd", &cast_fwd);
}
