// A toy op that includes torch/extension.h, built with py_limited_api=True.
#include <torch/extension.h>

at::Tensor twice(const at::Tensor& x) { return x * 2; }

TORCH_LIBRARY(toy, m) { m.def("twice(Tensor x) -> Tensor", &twice); }
