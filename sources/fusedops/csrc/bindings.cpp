#include "fusedops.h"

namespace fusedops {
bool has_cuda() {
#ifdef FUSEDOPS_CUDA
  return true;
#else
  return false;
#endif
}
}  // namespace fusedops

PYBIND11_MODULE(TORCH_EXTENSION_NAME, m) {
  m.doc() = "fused transformer ops (RMSNorm, SwiGLU, rotary embedding)";
  m.def("rms_norm", &fusedops::rms_norm, "x * rsqrt(mean(x^2) + eps) * weight",
        py::arg("x"), py::arg("weight"), py::arg("eps") = 1e-6);
  m.def("swiglu", &fusedops::swiglu, "silu(gate) * up", py::arg("gate"), py::arg("up"));
  m.def("rotary", &fusedops::rotary, "rotary position embedding over the last dimension",
        py::arg("x"), py::arg("positions"), py::arg("theta") = 10000.0);
  m.def("has_cuda", &fusedops::has_cuda, "built with the CUDA kernels");
}
