// _dashinfer: pybind11 bindings. Model configs cross the boundary as plain
// dicts (keys = ModelConfig field names) so Python needs no protobuf package.
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include "dashinfer/dashinfer.h"

namespace py = pybind11;
using namespace dashinfer;

namespace {

ModelConfig ConfigFromDict(const py::dict& d) {
  ModelConfig c;
  for (auto item : d) {
    const std::string k = py::str(item.first);
    const py::handle v = item.second;
    if (k == "name") c.name = v.cast<std::string>();
    else if (k == "num_layers") c.num_layers = v.cast<int>();
    else if (k == "hidden_size") c.hidden_size = v.cast<int>();
    else if (k == "num_heads") c.num_heads = v.cast<int>();
    else if (k == "num_kv_heads") c.num_kv_heads = v.cast<int>();
    else if (k == "head_dim") c.head_dim = v.cast<int>();
    else if (k == "ffn_size") c.ffn_size = v.cast<int>();
    else if (k == "vocab_size") c.vocab_size = v.cast<int>();
    else if (k == "max_seq_len") c.max_seq_len = v.cast<int>();
    else if (k == "rope_theta") c.rope_theta = v.cast<float>();
    else if (k == "norm_eps") c.norm_eps = v.cast<float>();
    else if (k == "tie_word_embeddings") c.tie_word_embeddings = v.cast<bool>();
    else if (k == "eos_token_id") c.eos_token_id = v.cast<int>();
    else if (k == "norm_type") {
      const std::string s = v.cast<std::string>();
      if (s != "rms" && s != "layer") throw py::value_error("norm_type must be 'rms' or 'layer'");
      c.norm_type = s == "layer" ? NormType::kLayerNorm : NormType::kRMSNorm;
    } else if (k == "dtype") {
      const std::string s = v.cast<std::string>();
      if (s != "float32" && s != "bfloat16") throw py::value_error("dtype must be float32|bfloat16");
      c.dtype = s == "bfloat16" ? DataType::kBFloat16 : DataType::kFloat32;
    } else {
      throw py::key_error("unknown model config key '" + k + "'");
    }
  }
  c.Validate();
  return c;
}

py::dict ConfigToDict(const ModelConfig& c) {
  py::dict d;
  d["name"] = c.name;
  d["num_layers"] = c.num_layers;
  d["hidden_size"] = c.hidden_size;
  d["num_heads"] = c.num_heads;
  d["num_kv_heads"] = c.num_kv_heads;
  d["head_dim"] = c.head_dim;
  d["ffn_size"] = c.ffn_size;
  d["vocab_size"] = c.vocab_size;
  d["max_seq_len"] = c.max_seq_len;
  d["rope_theta"] = c.rope_theta;
  d["norm_eps"] = c.norm_eps;
  d["norm_type"] = c.norm_type == NormType::kLayerNorm ? "layer" : "rms";
  d["dtype"] = c.dtype == DataType::kBFloat16 ? "bfloat16" : "float32";
  d["tie_word_embeddings"] = c.tie_word_embeddings;
  d["eos_token_id"] = c.eos_token_id;
  return d;
}

Model ModelFrom(const py::object& model, uint64_t seed) {
  if (py::isinstance<py::dict>(model)) return MakeRandomModel(ConfigFromDict(model), seed);
  return LoadModel(py::str(model).cast<std::string>());  // str or os.PathLike
}

}  // namespace

PYBIND11_MODULE(_dashinfer, m) {
  m.doc() = "DashInfer tiny transformer inference engine (CPU/OpenMP and CUDA)";
  InitLogging("dashinfer");
  // std::invalid_argument -> ValueError, std::runtime_error -> RuntimeError (pybind11 default).

  py::class_<Engine>(m, "Engine")
      .def(py::init([](const py::object& model, const std::string& platform, uint64_t seed) {
             Model mdl = ModelFrom(model, seed);
             const Platform p = ParsePlatform(platform);
             py::gil_scoped_release nogil;
             return std::make_unique<Engine>(std::move(mdl), p);
           }),
           py::arg("model"), py::arg("platform") = "cpu", py::arg("seed") = 0,
           "model: path of a protobuf model file, or a config dict (random weights from `seed`)")
      .def("generate", &Engine::Generate, py::arg("input_ids"), py::arg("max_new_tokens"),
           py::call_guard<py::gil_scoped_release>(), "Greedy decoding; returns the new token ids")
      .def("forward",
           [](Engine& e, const std::vector<int>& ids) {
             std::vector<float> l;
             {
               py::gil_scoped_release nogil;
               l = e.Forward(ids);
             }
             return py::array_t<float>(py::ssize_t(l.size()), l.data());
           },
           py::arg("input_ids"), "Prefill; returns the last token's logits (numpy float32)")
      .def("info", &Engine::Info)
      .def("profile_table", &Engine::ProfileTable)
      .def("get_op_profiling_info", &Engine::ProfileTable)  // name used by DashInfer docs
      .def("reset_profile", &Engine::ResetProfile)
      .def_property_readonly("profiling", &Engine::profiling)
      .def_property_readonly("platform", [](const Engine& e) { return PlatformName(e.platform()); })
      .def_property_readonly("config", [](const Engine& e) { return ConfigToDict(e.config()); });

  m.def("make_random_model",
        [](const std::string& path, const py::object& config, uint64_t seed, const std::string& dtype) {
          ModelConfig c = config.is_none() ? ModelConfig{} : ConfigFromDict(config);
          if (dtype != "float32" && dtype != "bfloat16") throw py::value_error("dtype: float32|bfloat16");
          SaveModel(MakeRandomModel(c, seed), path,
                    dtype == "bfloat16" ? DataType::kBFloat16 : DataType::kFloat32);
          return path;
        },
        py::arg("path"), py::arg("config") = py::none(), py::arg("seed") = 0,
        py::arg("dtype") = "float32", "Write a seeded random model (protobuf) to `path`");
  m.def("load_config", [](const std::string& path) { return ConfigToDict(LoadModel(path).config); },
        py::arg("path"));
  m.def("load_weights",
        [](const std::string& path) {
          Model mdl = LoadModel(path);
          py::dict out;
          for (const auto& [name, t] : mdl.weights) {
            std::vector<py::ssize_t> shape(t.shape.begin(), t.shape.end());
            out[py::str(name)] = py::array_t<float>(shape, t.data.data());  // copies
          }
          return out;
        },
        py::arg("path"), "name -> float32 numpy array (layout in proto/model.proto)");
  m.def("default_config", []() { return ConfigToDict(ModelConfig{}); });
  m.def("version", &Version);
  m.def("build_info", &BuildInfo);
  m.def("cuda_compiled", &CudaCompiled);
  m.def("cuda_device_count", &CudaDeviceCount);
  m.def("cuda_available", []() { return CudaCompiled() && CudaDeviceCount() > 0; });
  m.def("profile_compiled", []() { return BuildInfo().find("profile=compiled") != std::string::npos; });
  m.attr("__version__") = Version();
}
