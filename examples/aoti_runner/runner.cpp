// Runs an AOTInductor package that calls extension_cpp's ops, from C++ with
// no Python interpreter in the process.
//
//   aoti_runner MODEL.pt2 OPS_LIBRARY INPUT.bin EXPECTED.bin ROWS COLS [cpu|cuda]
//
// MODEL.pt2 is what export_model.py writes with
// torch._inductor.aoti_compile_and_package; INPUT.bin and EXPECTED.bin hold
// raw float32 values of the input (ROWS x COLS) and of the eager result
// (ROWS). The package's compiled code calls the custom ops through the
// dispatcher by name, so the library that registers them must be loaded
// first: here the same extension_cpp/_C.abi3.so that Python imports. Its
// TORCH_LIBRARY blocks register the ops when it is loaded; its one Python
// symbol (PyModule_Create2, used only by the module's PyInit function, which
// nothing here calls) stays unresolved thanks to lazy binding. OPS_LIBRARY
// "none" loads nothing: a package of Triton ops (export_model.py --ops
// extension_triton) carries their kernels, compiled by AOTInductor.
//
// Prints the result's size, the largest difference from the eager result,
// and whether a Python library is mapped into the process; exits non-zero if
// the results differ.
#include <ATen/ATen.h>
#include <dlfcn.h>
#include <torch/csrc/inductor/aoti_package/model_package_loader.h>

#include <cstring>
#include <fstream>
#include <iostream>
#include <iterator>
#include <string>
#include <vector>

namespace {

at::Tensor read_floats(const std::string& path, std::vector<int64_t> shape) {
  std::ifstream file(path, std::ios::binary);
  std::vector<char> bytes((std::istreambuf_iterator<char>(file)), std::istreambuf_iterator<char>());
  at::Tensor t = at::empty(shape, at::kFloat);
  if (bytes.size() != static_cast<size_t>(t.nbytes())) {
    throw std::runtime_error(path + ": expected " + std::to_string(t.nbytes()) + " bytes, got " +
                             std::to_string(bytes.size()));
  }
  std::memcpy(t.data_ptr<float>(), bytes.data(), bytes.size());
  return t;
}

bool python_in_process() {
  std::ifstream maps("/proc/self/maps");
  std::string line;
  while (std::getline(maps, line)) {
    if (line.find("libpython") != std::string::npos) {
      return true;
    }
  }
  return false;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 7) {
    std::cerr << "usage: " << argv[0]
              << " MODEL.pt2 OPS_LIBRARY INPUT.bin EXPECTED.bin ROWS COLS [cpu|cuda]\n";
    return 2;
  }
  if (std::string(argv[2]) != "none" && dlopen(argv[2], RTLD_LAZY | RTLD_GLOBAL) == nullptr) {
    std::cerr << "cannot load the ops library: " << dlerror() << "\n";
    return 1;
  }
  const int64_t rows = std::stoll(argv[5]), cols = std::stoll(argv[6]);
  const std::string device = argc > 7 ? argv[7] : "cpu";
  at::Tensor input = read_floats(argv[3], {rows, cols}).to(at::Device(device));
  const at::Tensor expected = read_floats(argv[4], {rows});

  torch::inductor::AOTIModelPackageLoader loader(argv[1]);
  const std::vector<at::Tensor> outputs = loader.run({input});
  const at::Tensor result = outputs.at(0).to(at::kCPU);
  const double diff = (result - expected).abs().max().item<double>();
  std::cout << "output size: " << result.numel() << "\n"
            << "max abs difference from eager: " << diff << "\n"
            << "python in process: " << (python_in_process() ? "yes" : "no") << "\n";
  return diff <= 1e-4 ? 0 : 1;
}
