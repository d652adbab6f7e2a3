// The extension_cpp operators: their schemas.
//
// TORCH_LIBRARY declares what each op is: its name, arguments and results.
// This step gives the ops no kernels yet, so calling one raises "Could not
// run ... with arguments from the 'CPU' backend"; step 2 adds the kernels.
#include <torch/library.h>

namespace extension_cpp {

// Step 1: the schemas. `float` is a C++ double; `Tensor(a!)` marks out as
// written to; `-> ()` returns nothing.
TORCH_LIBRARY(extension_cpp, m) {
  m.def("mymuladd(Tensor a, Tensor b, float c) -> Tensor");
  m.def("mymul(Tensor a, Tensor b) -> Tensor");
  m.def("myadd_out(Tensor a, Tensor b, Tensor(a!) out) -> ()");
}

}  // namespace extension_cpp
