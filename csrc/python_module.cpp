// The Python module `extension_cpp._C` (and `extension_cpp_stable._C`, whose
// build compiles this same file), built against the limited API.
//
// Importing it loads this shared library, whose static initialisers run
// TORCH_LIBRARY / TORCH_LIBRARY_IMPL (or their STABLE_ forms) and register
// the ops with the dispatcher; everything is then reached through torch.ops.
// The module itself holds three constants: MESSAGES, the words of every error
// (checks.h), which the Python fake kernels raise in the same words;
// MAX_DIMS, the rank limit they check (checks.h); and KERNELS, the kernel set
// this library was built with ("fast" or "simple", EXTENSION_CPP_KERNELS in
// build_options.py). With no pybind11 and only Py_LIMITED_API calls, one
// `cp39-abi3` build loads on every CPython from 3.9 up.
//
// Pin the limited API to CPython 3.9 here, the one file that includes
// Python.h: recent torch's BuildExtension defines 3.10 for py_limited_api
// builds, and the wheel promises 3.9.
#undef Py_LIMITED_API
#define Py_LIMITED_API 0x03090000
#include <Python.h>

#include "checks.h"

namespace {

// build_options.py passes EXTENSION_CPP_FAST_KERNELS=1 or 0 to every file.
#if EXTENSION_CPP_FAST_KERNELS
constexpr const char* kKernels = "fast";
#else
constexpr const char* kKernels = "simple";
#endif

// {key: text} for every message in checks.h's kMessages.
PyObject* messages() {
  PyObject* dict = PyDict_New();
  if (dict == nullptr) {
    return nullptr;
  }
  for (const auto& message : extension_cpp::checks::kMessages) {
    PyObject* text = PyUnicode_FromString(message.text);
    const int failed = text == nullptr || PyDict_SetItemString(dict, message.key, text) != 0;
    Py_XDECREF(text);
    if (failed) {
      Py_DECREF(dict);
      return nullptr;
    }
  }
  return dict;
}

}  // namespace

extern "C" PyMODINIT_FUNC PyInit__C(void) {
  static PyModuleDef module = {
      PyModuleDef_HEAD_INIT,
      "_C",                                                              // m_name
      "Loads this package's operators (see torch.ops.<package name>).",  // m_doc
      -1,       // m_size: no per-module state
      nullptr,  // m_methods
  };
  PyObject* m = PyModule_Create(&module);
  if (m == nullptr) {
    return nullptr;
  }
  PyObject* words = messages();
  if (words == nullptr || PyModule_AddObject(m, "MESSAGES", words) != 0) {
    Py_XDECREF(words);
    Py_DECREF(m);
    return nullptr;
  }
  if (PyModule_AddIntConstant(m, "MAX_DIMS", extension_cpp::checks::kMaxInputDims) != 0 ||
      PyModule_AddStringConstant(m, "KERNELS", kKernels) != 0) {
    Py_DECREF(m);
    return nullptr;
  }
  return m;
}
