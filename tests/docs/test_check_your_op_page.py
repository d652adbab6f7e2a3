"""Check your own op (docs/check_your_op.md) against what runs.

A newcomer copies the page and runs pytest, so the page must show the whole
example (an op passed there only through code the page left out), install
the harness the way it can be installed, and print a failure as the harness
prints it. These read the sources and run one small op; they need no docs
build.
"""

import re
from pathlib import Path

import pytest
import torch

from extension_cpp_testing import OpSpec, run_all

REPO = Path(__file__).resolve().parents[2]
PAGE = REPO / "docs" / "check_your_op.md"


def _page() -> str:
    return PAGE.read_text(encoding="utf-8")


def _included(source: Path) -> str:
    """The text of every block the page includes from source."""
    text = source.read_text(encoding="utf-8")
    relative = re.escape(f"../{source.relative_to(REPO)}")
    directives = re.findall(
        rf"^```\{{literalinclude\}} {relative}\n((?::[\w-]+: .*\n)*)", _page(), re.M
    )
    assert directives, f"the page includes nothing from {source.relative_to(REPO)}"
    shown = []
    for options in directives:
        after = re.search(r'^:start-after: "(.*)"$', options, re.M)
        before = re.search(r'^:end-before: "(.*)"$', options, re.M)
        assert after, f"include whole regions, between markers: {options}"
        assert before, f"include whole regions, between markers: {options}"
        shown.append(text.split(after[1], 1)[1].split(before[1], 1)[0])
    return "\n".join(shown)


@pytest.mark.parametrize(
    "source", ["tests/test_check_your_own_op.py", "tests/test_check_your_cpp_op.py"]
)
def test_the_page_shows_every_line_of_the_example(source):
    """The page showed a spec whose op passed through a batching rule, dtype
    checks and an autograd.Function it did not show. Every line of the
    example's code, outside its docstring, markers and section rules, is on
    the page."""
    path = REPO / source
    code = path.read_text(encoding="utf-8").split('"""', 2)[2]
    shown = {line.rstrip() for line in _included(path).splitlines()}
    missing = [
        line
        for line in code.splitlines()
        if line.strip()
        and not re.fullmatch(r"# \[[\w-]+\]|# --.*", line.strip())
        and line.rstrip() not in shown
    ]
    assert not missing, f"the page leaves out these lines of {source}: {missing[:5]}"


def _user_pages() -> list[Path]:
    return [REPO / "README.md", REPO / "harness" / "README.md", *sorted(REPO.glob("docs/*.md"))]


@pytest.mark.parametrize("page", _user_pages(), ids=lambda p: str(p.relative_to(REPO)))
def test_the_harness_is_installed_from_where_it_is(page):
    """The index promised `pip install --no-deps extension-cpp-testing`, and
    pip answered "No matching distribution found": the harness is not on
    PyPI. Install lines name the clone's harness/ or a wheel file."""
    text = page.read_text(encoding="utf-8")
    offered = re.findall(r"pip install[^`\n]*\bextension[-_]cpp[-_]testing\b(?![^\s`]*\.whl)", text)
    assert not offered, f"{page.name} installs the harness from an index: {offered}"


def test_the_page_names_pytest_with_the_harness():
    """conformance_tests returns a pytest test; the install lines said nothing of pytest."""
    install = _page().split("## Install", 1)[1].split("\n## ", 1)[0]
    assert "pip install --no-deps ./harness" in install
    assert "pip install pytest" in install


# -- Reading a failure: the sample is what the harness prints ------------------


@torch.library.custom_op("check_your_op_page::wrong_sign_mul", mutates_args=())
def wrong_sign_mul(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    return a * b


@wrong_sign_mul.register_fake
def _(a, b):
    return torch.empty_like(a)


def _setup_context(ctx, inputs, output):
    ctx.save_for_backward(*inputs)


def _backward(ctx, grad):
    a, b = ctx.saved_tensors
    return -grad * b, grad * a  # the bug: the sign of a's gradient


wrong_sign_mul.register_autograd(_backward, setup_context=_setup_context)


def test_reading_a_failure_shows_what_the_harness_prints():
    """The page's sample carried a fix the harness no longer prints. Its
    first line, its second up to "...", and its fix line are those of a run."""
    section = _page().split("## Reading a failure", 1)[1]
    sample = re.search(r"```text\n(.*?)```", section, re.S)[1].splitlines()
    spec = OpSpec(
        torch.ops.check_your_op_page.wrong_sign_mul.default,
        reference=torch.mul,
        layouts=("contiguous",),
        devices=("cpu",),
        autodiff=("reverse",),
    )
    (failure,) = run_all(spec, checks=("gradcheck",))["gradcheck"]
    printed = str(failure).splitlines()
    assert sample[0] == printed[0]
    assert printed[1].startswith(sample[1].removesuffix("...").rstrip()), (sample[1], printed[1])
    assert sample[-1] == printed[-1]
