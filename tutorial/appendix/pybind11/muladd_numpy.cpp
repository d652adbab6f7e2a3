// mymuladd bound with plain pybind11: NumPy arrays in, a NumPy array out.
//
// This is the binding the operator tutorials replace. It works in eager
// Python, but PyTorch sees an opaque Python function: no dispatcher, no
// device dispatch, no autograd, and torch.compile cannot trace through it
// (see README.md and the test that shows the graph break).
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>

#include <stdexcept>

namespace py = pybind11;

// a, b: float32 arrays of one shape. Returns a * b + c as a new C-ordered array.
py::array_t<float> muladd(py::array_t<float, py::array::c_style | py::array::forcecast> a,
                          py::array_t<float, py::array::c_style | py::array::forcecast> b,
                          double c) {
  if (a.ndim() != b.ndim() || !std::equal(a.shape(), a.shape() + a.ndim(), b.shape())) {
    throw std::invalid_argument("muladd: expected a and b to have the same shape");
  }
  py::array_t<float> out(std::vector<py::ssize_t>(a.shape(), a.shape() + a.ndim()));
  const float* pa = a.data();
  const float* pb = b.data();
  float* po = out.mutable_data();
  for (py::ssize_t i = 0; i < a.size(); ++i) {
    po[i] = pa[i] * pb[i] + static_cast<float>(c);
  }
  return out;
}

PYBIND11_MODULE(muladd_numpy, m) {
  m.doc() = "mymuladd with pybind11 and NumPy, for comparison with the TORCH_LIBRARY op";
  m.def("muladd", &muladd, py::arg("a"), py::arg("b"), py::arg("c"));
}
