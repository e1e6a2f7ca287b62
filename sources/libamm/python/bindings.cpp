// Python extension module `libamm._libamm`.
//
// <torch/extension.h> brings pybind11 (the copy shipped inside torch, so the
// pybind11 ABI matches torch's own bindings) plus the at::Tensor <-> torch.Tensor
// type casters, which live in libtorch_python. This TU is one of the heaviest
// in the tree (torch + pybind11 + Python headers).
#include <torch/extension.h>

#include <libamm/amm.h>

#include <map>
#include <string>

namespace py = pybind11;

namespace {

libamm::AmmParams libamm_py_params(int64_t sketch_size, uint64_t seed,
                                   const std::map<std::string, double>& knobs) {
  libamm::AmmParams p;
  p.sketch_size = sketch_size;
  p.seed = seed;
  p.knobs = knobs;
  return p;
}

}  // namespace

PYBIND11_MODULE(_libamm, m) {
  m.doc() = "libamm: approximate matrix multiplication on the PyTorch C++ API";
  m.attr("__version__") = LIBAMM_VERSION_STRING;

  py::class_<libamm::AmmParams>(m, "AmmParams")
      .def(py::init<>())
      .def_readwrite("sketch_size", &libamm::AmmParams::sketch_size)
      .def_readwrite("seed", &libamm::AmmParams::seed)
      .def_readwrite("knobs", &libamm::AmmParams::knobs)
      .def("__repr__", [](const libamm::AmmParams& p) {
        return "AmmParams(sketch_size=" + std::to_string(p.sketch_size) +
               ", seed=" + std::to_string(p.seed) + ", knobs=" +
               std::to_string(p.knobs.size()) + " set)";
      });

  py::class_<libamm::KnobInfo>(m, "KnobInfo")
      .def_readonly("name", &libamm::KnobInfo::name)
      .def_readonly("default", &libamm::KnobInfo::default_value)
      .def_readonly("help", &libamm::KnobInfo::help);

  // The default holder (std::unique_ptr) matches libamm::create()'s return.
  py::class_<libamm::Algorithm>(m, "Algorithm")
      .def_property_readonly("name", &libamm::Algorithm::name)
      .def_property_readonly("description", &libamm::Algorithm::description)
      .def("knobs", &libamm::Algorithm::knobs)
      // The GIL is released while the (possibly long) computation runs.
      .def("amm",
           [](const libamm::Algorithm& self, const at::Tensor& A,
              const at::Tensor& B, const libamm::AmmParams& params) {
             return self.amm(A, B, params);
           },
           py::arg("A"), py::arg("B"), py::arg("params"),
           py::call_guard<py::gil_scoped_release>())
      .def("amm",
           [](const libamm::Algorithm& self, const at::Tensor& A,
              const at::Tensor& B, int64_t sketch_size, uint64_t seed,
              const std::map<std::string, double>& knobs) {
             return self.amm(A, B, libamm_py_params(sketch_size, seed, knobs));
           },
           py::arg("A"), py::arg("B"), py::kw_only(),
           py::arg("sketch_size") = 64, py::arg("seed") = 42,
           py::arg("knobs") = std::map<std::string, double>{},
           py::call_guard<py::gil_scoped_release>());

  m.def("create", &libamm::create, py::arg("name"),
        "Create the algorithm registered under `name`.");
  m.def("list", &libamm::list, "Sorted names of the registered algorithms.");
  m.def("has", &libamm::has, py::arg("name"));
  m.def(
      "amm",
      [](const std::string& name, const at::Tensor& A, const at::Tensor& B,
         int64_t sketch_size, uint64_t seed,
         const std::map<std::string, double>& knobs) {
        return libamm::amm(name, A, B, libamm_py_params(sketch_size, seed, knobs));
      },
      py::arg("name"), py::arg("A"), py::arg("B"), py::kw_only(),
      py::arg("sketch_size") = 64, py::arg("seed") = 42,
      py::arg("knobs") = std::map<std::string, double>{},
      py::call_guard<py::gil_scoped_release>());
  m.def("relative_frobenius_error", &libamm::relative_frobenius_error,
        py::arg("approx"), py::arg("exact"));
}
