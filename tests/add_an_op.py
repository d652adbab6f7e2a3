"""The checklist of docs/copy_your_own_op.md ("Add an op"), as edits.

``add(project, name)`` adds a one-input op, ``mysquare(a) = a * a``, to a
package made by tools/copy_op.py: a schema, a functor, a CPU kernel and its
``m.impl`` line, the derivatives and their Autograd kernel, and the Python
function, fake kernel and batching rule. The page shows the snippets between
the ``[name]`` markers below, so what it shows is what tests/test_copy_op.py
builds and runs the harness on.
"""

from __future__ import annotations

from pathlib import Path

# [schema] csrc/ops.cpp, inside TORCH_LIBRARY(<package>, m):
SCHEMA = """\
  m.def("mysquare(Tensor a) -> Tensor", {at::Tag::pt2_compliant_tag});
"""
# [end schema]

# [functor] csrc/elementwise.h, beside MulOp:
FUNCTOR = """\
template <typename T>
struct SquareOp {
  C10_HOST_DEVICE T operator()(T a) const { return a * a; }
};

"""
# [end functor]

# [kernel] csrc/cpu/ops_cpu.cpp, beside mymul_cpu:
KERNEL = """\
at::Tensor mysquare_cpu(const at::Tensor& a) {
  const Prepared prepared = prepare("mysquare", a);
  at::Tensor out = new_output(a, prepared);
  AT_DISPATCH_V2(a.scalar_type(), "mysquare_cpu", AT_WRAP([&] {
                   elementwise_cpu(out.mutable_data_ptr<scalar_t>(), a.const_data_ptr<scalar_t>(),
                                   prepared.layout, SquareOp<opmath_t<scalar_t>>{});
                 }),
                 AT_EXPAND(AT_FLOATING_TYPES), at::kHalf, at::kBFloat16);
  return out;
}

"""
# [end kernel]

# [impl] csrc/cpu/ops_cpu.cpp, inside TORCH_LIBRARY_IMPL(<package>, CPU, m):
IMPL = """\
  m.impl("mysquare", &mysquare_cpu);
"""
# [end impl]

# [autograd] csrc/autograd.cpp, beside mymul_autograd:
AUTOGRAD = """\
// d(a * a) = 2 * a * da: mysquare's backward and tangent.
struct SquareBackward : torch::autograd::TraceableFunction {
  SavedVariable a;

  variable_list apply(variable_list&& grads) override {
    const at::Tensor& grad = grads[0];
    return {grad.defined() ? grad.mul(a.unpack()).mul(2) : at::Tensor()};
  }

  std::string name() const override { return "SquareBackward"; }

  void release_variables() override {
    const std::lock_guard<std::mutex> lock(mutex_);
    a.reset_data();
  }
};

at::Tensor mysquare_autograd(c10::DispatchKeySet ks, const at::Tensor& a) {
  static const auto mysquare = op<at::Tensor(const at::Tensor&)>("extension_cpp::mysquare");
  auto node = backward_node<SquareBackward>(a);
  if (node) {
    node->a = SavedVariable(a, /*is_output=*/false);
  }
  return with_derivatives(
      node, [&] { return mysquare.redispatch(below_autograd(ks), a); },
      [&] { return tangent(a).mul(primal(a)).mul(2); }, a);
}

"""
# [end autograd]

# [autograd impl] csrc/autograd.cpp, inside TORCH_LIBRARY_IMPL(<package>, Autograd, m):
AUTOGRAD_IMPL = """\
  m.impl("mysquare", &mysquare_autograd);
"""
# [end autograd impl]

# [python] <package>/ops.py, at the end:
PYTHON = '''

__all__ += ["mysquare"]
_mysquare = _library.mysquare


def mysquare(a: Tensor) -> Tensor:
    """Returns ``a * a``, laid out as ``torch.mul(a, a)`` would be."""
    return _mysquare(a)
'''
# [end python]

# [library] <package>/_library.py, at the end:
LIBRARY = """

mysquare = _ops.mysquare.default


@torch.library.register_fake(f"{NAMESPACE}::mysquare")
def _mysquare_fake(a: Tensor) -> Tensor:
    _checks.check_input("mysquare", a)
    return _checks.elementwise_output(a, a)


@torch.library.register_vmap(f"{NAMESPACE}::mysquare")
def _mysquare_vmap(info, in_dims, a: Tensor):
    return mysquare(a), in_dims[0]  # elementwise: the batch dimension stays put
"""
# [end library]

# (file, anchor, text, before): text goes on the line after the first line
# that contains anchor, or on the line before it.
EDITS = [
    ("csrc/ops.cpp", "TORCH_LIBRARY({package}, m) {{", SCHEMA, False),
    ("csrc/elementwise.h", "// A one-input functor f(x)", FUNCTOR, True),
    ("csrc/cpu/ops_cpu.cpp", "at::Tensor mymul_cpu(", KERNEL, True),
    ("csrc/cpu/ops_cpu.cpp", "TORCH_LIBRARY_IMPL({package}, CPU, m) {{", IMPL, False),
    ("csrc/autograd.cpp", "bool requires_grad(const at::Tensor& t)", AUTOGRAD, True),
    ("csrc/autograd.cpp", "TORCH_LIBRARY_IMPL({package}, Autograd, m) {{", AUTOGRAD_IMPL, False),
]


def _insert(path: Path, anchor: str, text: str, before: bool) -> None:
    lines = path.read_text().splitlines(keepends=True)
    at = next(i for i, line in enumerate(lines) if anchor in line)
    lines.insert(at if before else at + 1, text)
    path.write_text("".join(lines))


def add(project: Path, package: str) -> set[str]:
    """Adds mysquare to the package in project; returns the files it changed."""
    changed = set()
    for file, anchor, text, before in EDITS:
        text = text.replace("extension_cpp::", f"{package}::")
        _insert(project / file, anchor.format(package=package), text, before)
        changed.add(file)
    for name, text in (("_library.py", LIBRARY), ("ops.py", PYTHON)):
        path = project / package / name
        path.write_text(path.read_text() + text)
        changed.add(f"{package}/{name}")
    return changed
