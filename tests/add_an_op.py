"""The checklist of docs/copy_your_own_op.md ("Add an op"), as edits.

``add(project, name)`` adds a one-input op, ``mysquare(a) = a * a``, to a
package made by scripts/copy_op.py: a schema, a functor, a CPU kernel and its
``m.impl`` line, and the Python function, fake kernel and derivative. The
page shows the snippets between the ``[name]`` markers below, so what it
shows is what tests/test_copy_op.py builds and runs the harness on.
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
  check_input("mysquare", a);
  at::Tensor out = new_output(a, a);
  const BinaryLayout layout = merged_layout("mysquare", out, a);
  AT_DISPATCH_V2(a.scalar_type(), "mysquare_cpu", AT_WRAP([&] {
                   elementwise_cpu(out.mutable_data_ptr<scalar_t>(), a.const_data_ptr<scalar_t>(),
                                   layout, SquareOp<opmath_t<scalar_t>>{});
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

# [python] <package>/ops.py, at the end:
PYTHON = '''

__all__ += ["mysquare"]
_mysquare = _ops.mysquare.default


def mysquare(a: Tensor) -> Tensor:
    """Returns ``a * a``, laid out as ``torch.mul(a, a)`` would be."""
    return _mysquare(a)


@torch.library.register_fake(f"{_NAMESPACE}::mysquare")
def _mysquare_fake(a: Tensor) -> Tensor:
    _checks.check_input("mysquare", a)
    return _checks.elementwise_output(a, a)


def _mysquare_backward(ctx, grad: Tensor) -> Tensor:
    (a,) = ctx.saved_tensors
    return grad * 2 * a


torch.library.register_autograd(
    f"{_NAMESPACE}::mysquare",
    _mysquare_backward,
    setup_context=lambda ctx, inputs, output: ctx.save_for_backward(inputs[0]),
)


@torch.library.register_vmap(f"{_NAMESPACE}::mysquare")
def _mysquare_vmap(info, in_dims, a: Tensor):
    return _mysquare(a), in_dims[0]  # elementwise: the batch dimension stays put
'''
# [end python]

# (file, anchor, text, before): text goes on the line after the first line
# that contains anchor, or on the line before it.
EDITS = [
    ("csrc/ops.cpp", "TORCH_LIBRARY({package}, m) {{", SCHEMA, False),
    ("csrc/elementwise.h", "// A one-input functor f(x)", FUNCTOR, True),
    ("csrc/cpu/ops_cpu.cpp", "at::Tensor mymul_cpu(", KERNEL, True),
    ("csrc/cpu/ops_cpu.cpp", "TORCH_LIBRARY_IMPL({package}, CPU, m) {{", IMPL, False),
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
        _insert(project / file, anchor.format(package=package), text, before)
        changed.add(file)
    ops_py = project / package / "ops.py"
    ops_py.write_text(ops_py.read_text() + PYTHON)
    changed.add(f"{package}/ops.py")
    return changed
