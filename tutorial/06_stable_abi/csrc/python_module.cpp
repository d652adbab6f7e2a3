// The Python module `extension_cpp._C`, built against the limited API.
//
// The module has no functions: importing it loads this shared library, whose
// static initialisers run TORCH_LIBRARY / TORCH_LIBRARY_IMPL and register the
// ops with the dispatcher. Everything is then reached through torch.ops. With
// no pybind11 and only Py_LIMITED_API calls, one `cp39-abi3` build loads on
// every CPython from 3.9 up.
// Pin the limited API to CPython 3.9 here, the one file that includes
// Python.h: recent torch's BuildExtension defines 3.10 for py_limited_api
// builds, and the wheel promises 3.9.
#undef Py_LIMITED_API
#define Py_LIMITED_API 0x03090000
#include <Python.h>

extern "C" PyMODINIT_FUNC PyInit__C(void) {
  static PyModuleDef module = {
      PyModuleDef_HEAD_INIT,
      "_C",                                                                // m_name
      "Loads the extension_cpp operators (see torch.ops.extension_cpp).",  // m_doc
      -1,       // m_size: no per-module state
      nullptr,  // m_methods
  };
  return PyModule_Create(&module);
}
