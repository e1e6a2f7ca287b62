// dashinfer_run: load a model file (or make a seeded random one) and greedily
// generate. Prints the new token ids on stdout, logs to stderr, and the
// operator profiling table when AS_PROFILE=ON (and DASHINFER_PROFILE=ON).
//
//   dashinfer_run --model m.pb [--platform cpu|cuda] [--prompt 1,2,3] [--max-new-tokens 16]
//   dashinfer_run --random 7 [--save m.pb] ...      # random model, optionally saved
#include <cstdlib>
#include <iostream>
#include <sstream>
#include <string>
#include <vector>

#include "dashinfer/dashinfer.h"


static int Usage(const char* argv0) {
  std::cerr << "usage: " << argv0
            << " (--model PATH | --random SEED [--save PATH]) [--platform cpu|cuda]"
               " [--prompt 1,2,3] [--max-new-tokens N] [--info]\n";
  return 2;
}

int main(int argc, char** argv) {
  dashinfer::InitLogging(argv[0]);  // glog to stderr, no log files under /tmp
  std::string model_path, save_path, platform = "cpu", prompt = "1,2,3,4";
  long long seed = -1;
  int max_new = 16;
  bool info = false;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    auto next = [&]() -> std::string {
      if (i + 1 >= argc) throw std::invalid_argument("missing value after " + a);
      return argv[++i];
    };
    try {
      if (a == "--model") model_path = next();
      else if (a == "--random") seed = std::stoll(next());
      else if (a == "--save") save_path = next();
      else if (a == "--platform") platform = next();
      else if (a == "--prompt") prompt = next();
      else if (a == "--max-new-tokens") max_new = std::stoi(next());
      else if (a == "--info") info = true;
      else if (a == "--version") { std::cout << dashinfer::Version() << "\n"; return 0; }
      else return Usage(argv[0]);
    } catch (const std::exception& e) {
      std::cerr << "error: " << e.what() << "\n";
      return Usage(argv[0]);
    }
  }
  if (model_path.empty() == (seed < 0)) return Usage(argv[0]);
  try {
    dashinfer::Model model = model_path.empty()
                                 ? dashinfer::MakeRandomModel(dashinfer::ModelConfig{}, uint64_t(seed))
                                 : dashinfer::LoadModel(model_path);
    if (!save_path.empty()) dashinfer::SaveModel(model, save_path);
    std::vector<int> ids;
    std::stringstream ss(prompt);
    for (std::string tok; std::getline(ss, tok, ',');) ids.push_back(std::stoi(tok));
    dashinfer::Engine engine(std::move(model), dashinfer::ParsePlatform(platform));
    if (info) std::cerr << engine.Info() << "\n";
    const std::vector<int> out = engine.Generate(ids, max_new);
    for (size_t i = 0; i < out.size(); ++i) std::cout << (i ? " " : "") << out[i];
    std::cout << "\n";
    if (engine.profiling()) std::cout << engine.ProfileTable();
  } catch (const std::exception& e) {
    std::cerr << "dashinfer_run: " << e.what() << "\n";
    return 1;
  }
  return 0;
}
