"""Unit tests of the docs' generators: tutorial pages, README links, results tables.

These run without building the site: each one builds a small tutorial tree or
junit XML in tmp_path and checks what tools/docs/generate.py and
tools/docs/render_results.py make of it.
"""

import os
import textwrap

import pytest

from tools.docs import generate, render_results


def _write(path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(textwrap.dedent(text))


@pytest.fixture
def tutorial(tmp_path, monkeypatch):
    root = tmp_path / "tutorial"
    _write(
        root / "01_define" / "README.md",
        "# Define\n\nSee [ops.cpp](csrc/ops.cpp) and [next](../02_impl/README.md);\n"
        "[the tutorial](../README.md#building).\n",
    )
    _write(root / "01_define" / "csrc" / "ops.cpp", "// v1\n")
    _write(
        root / "02_impl" / "README.md",
        "# Impl\n\n```\n[kept](csrc/ops.cpp)\n```\n[gone](../../nowhere.txt) [web](https://pytorch.org)\n",
    )
    _write(root / "02_impl" / "csrc" / "ops.cpp", "// v2\n")
    _write(root / "02_impl" / "build" / "junk.o", "")
    _write(root / "walk.py", "")  # not a checkpoint
    _write(root / "README.md", "# Tutorial\n\n| [02_impl](02_impl/README.md) | kernels |\n")
    monkeypatch.setattr(generate, "GENERATED", str(tmp_path / "_generated"))
    return root


def test_one_page_per_checkpoint_links_its_files(tutorial, tmp_path) -> None:
    readme, toc = generate._tutorial_pages(str(tutorial))
    out = tmp_path / "_generated" / "tutorial"
    assert sorted(os.listdir(out)) == ["01_define.md", "02_impl.md"]
    assert "/_generated/tutorial/01_define\n/_generated/tutorial/02_impl" in toc
    page = (out / "02_impl.md").read_text()
    # The files are linked, not shown: no listing, and no diff besides the README's.
    assert "{download}`csrc/ops.cpp <../../tutorial/02_impl/csrc/ops.cpp>`" in page
    assert "literalinclude" not in page
    assert "junk.o" not in page
    assert "# Tutorial" not in readme  # the index page keeps its own title
    assert "[02_impl](../_generated/tutorial/02_impl.md)" in readme


def test_readme_links_point_at_the_site(tutorial, tmp_path) -> None:
    generate._tutorial_pages(str(tutorial))
    first = (tmp_path / "_generated" / "tutorial" / "01_define.md").read_text()
    assert "[ops.cpp](../../tutorial/01_define/csrc/ops.cpp)" in first
    assert "[next](02_impl.md)" in first
    assert "[the tutorial](../../tutorial/index.md#building)" in first
    second = (tmp_path / "_generated" / "tutorial" / "02_impl.md").read_text()
    assert "[kept](csrc/ops.cpp)" in second  # inside a code fence: untouched
    assert "gone (`nowhere.txt`)" in second
    assert "[web](https://pytorch.org)" in second


def test_no_checkpoints_says_so(tmp_path, monkeypatch) -> None:
    monkeypatch.setattr(generate, "GENERATED", str(tmp_path / "_generated"))
    _, toc = generate._tutorial_pages(str(tmp_path / "empty"))
    assert "No checkpoints found" in toc


def test_missing_results_name_the_command(tmp_path, monkeypatch) -> None:
    monkeypatch.setattr(generate, "RESULTS", str(tmp_path))
    text = generate._include_or_missing("compatibility.md", "The table", "make matrix")
    assert "does not exist" in text
    assert "`make matrix`" in text
    assert "make bench" in generate._performance_fragment()


def test_conformance_table_from_junit(tmp_path) -> None:
    xml = tmp_path / "conformance.xml"
    xml.write_text(
        """<?xml version="1.0" encoding="utf-8"?>
<testsuites><testsuite name="pytest" errors="0" failures="1" skipped="1" tests="4" time="1.5"
 timestamp="2026-01-02T03:04:05.000000+00:00" hostname="ci-box">
<properties><property name="commit" value="abc1234567" />
<property name="command" value="pytest tests" /><property name="gpu" value="NVIDIA GPU" />
<property name="os" value="Linux" /></properties>
<testcase classname="tests.conformance.test_ops" name="test_values[cpu]" time="0.1" />
<testcase classname="tests.conformance.test_ops" name="test_values[cuda]" time="0.1">
  <skipped type="pytest.skip" message="needs a CUDA GPU">skip</skipped></testcase>
<testcase classname="tests.conformance.test_ops.TestGrad" name="test_grad" time="0.1">
  <failure message="AssertionError: off by one">trace</failure></testcase>
<testcase classname="tests.conformance.test_ops" name="test_x" time="0.1">
  <skipped type="pytest.xfail" message="known">x</skipped></testcase>
</testsuite></testsuites>"""
    )
    md = render_results.render_conformance(str(xml))
    assert md.startswith("`pytest tests` at commit `abc1234567`, 2026-01-02 03:04 UTC")
    assert "| gpu | NVIDIA GPU |" in md
    assert "| os |" not in md  # shown: the properties a reader needs
    assert "**4 tests: 1 passed, 1 failed, 1 skipped, 1 xfailed.**" in md
    # One row per test file, classes folded into their file.
    assert "| `conformance/test_ops.py` | 1 | 1 |  | 1 | 1 |" in md
    assert "AssertionError: off by one" in md
    assert "| 1 | needs a CUDA GPU |" in md


def test_word_count_reads_the_article(tmp_path) -> None:
    page = tmp_path / "page.html"
    page.write_text(
        "<html><body><nav>Sidebar words not counted</nav>"
        '<article role="main"><h1>Two words</h1><p>and <code>three</code> more</p>'
        "<script>var x = 1;</script><article>nested counts</article></article>"
        "<footer>not this</footer></body></html>"
    )
    assert generate.page_words(str(page)) == 7
    (tmp_path / "search.html").write_text(page.read_text())
    assert generate.site_words(str(tmp_path)) == {"page.html": 7}


def test_performance_headline_links_each_machine_page(tmp_path, monkeypatch) -> None:
    monkeypatch.setattr(generate, "RESULTS", str(tmp_path))
    perf = tmp_path / "perf"
    perf.mkdir()
    for kind, machine in (("cpu-16cores", "Some CPU, 16 cores"), ("cpu-2cores", "X")):
        (perf / f"{kind}.md").write_text(
            f"# Results: {kind}\n\n`make bench` on a CPU (`{kind}`; here {machine}), part by part."
            "\n\n## Headline\n\nText.\n\n| run | cells |\n| --- | --- |\n| cpu | 1 of 1 |\n\n"
            "## Every layout\n\n| not | this |\n"
        )
    text = generate._performance_headline()
    assert text.index("cpu-2cores>`") < text.index("cpu-16cores>`")  # by core count
    assert "</_generated/results/cpu-16cores>` (Some CPU, 16 cores):" in text
    assert "| cpu | 1 of 1 |" in text
    assert "| not | this |" not in text


TRITON_LAYOUTS = """## Layouts: 2^20 elements, kernels alone (CUDA graph replays)

Text.

| dtype | layout | mymul: C++ | Triton | eager | compile | myadd_out: C++ | Triton | eager | A/A |
|---|---|---|---|---|---|---|---|---|---|
| float32 | contiguous | 1.00 | 0.99 | 1.00 | 0.90 | 1.01 | 1.00 | 0.98 | 1.00 |
| bfloat16 | one transposed | 0.90 | 1.20 | 0.30 | 0.95 | 1.10 | 1.00 | 0.30 | 0.98 |

## Layouts: 2^24 elements, kernels alone (CUDA graph replays)

| dtype | layout | mymul: C++ | Triton | eager | compile | myadd_out: C++ | Triton | eager | A/A |
|---|---|---|---|---|---|---|---|---|---|
| float16 | broadcast row | 0.92 | 1.00 | 0.40 | 0.46 | 0.99 | 0.98 | 0.41 | 1.01 |
"""


def test_triton_headline_counts_cells_at_or_above_the_fastest_other() -> None:
    """Each (op, dtype, layout) cell: C++ against the best of Triton, eager and
    compile of the same op (bandwidths: higher is faster); a tie counts."""
    assert generate.triton_headline(TRITON_LAYOUTS)[2:] == [
        "| 2^20 | 3 of 4 | 0.75 (mymul, bfloat16, one transposed) | 0.98-1.00 |",
        "| 2^24 | 1 of 2 | 0.92 (mymul, float16, broadcast row) | 1.01 |",
    ]


def _cell(folder, name: str, sha: str, failures: int = 0) -> None:
    cases = '<testcase classname="c" name="ok" time="1"/>' + (
        '<testcase classname="c" name="bad"><failure message="x"/></testcase>' * failures
    )
    facts = {"track": "oldest", "python": name, "torch": "2.8.0", "wheel": "w.whl", "sha256": sha}
    facts |= {"seed": "7", "commit": "abc", "refused": "ImportError: x"}
    props = "".join(f'<property name="{k}" value="{v}" />' for k, v in facts.items())
    suite = f'<testsuite time="3"><properties>{props}</properties>{cases}</testsuite>'
    xml = f"<testsuites>{suite}</testsuites>"
    (folder / f"matrix-oldest-{name}.xml").write_text(xml)


def test_compatibility_page_needs_one_wheel_file_per_track(tmp_path):
    _cell(tmp_path, "3.9", "aaa")
    _cell(tmp_path, "3.10", "aaa", failures=1)
    cells = render_results.matrix_cells(str(tmp_path))
    assert [(c["python"], c["ok"], c["seed"]) for c in cells] == [
        ("3.10", False, "7"),
        ("3.9", True, "7"),
    ]
    md = render_results.render_compatibility(cells)
    assert "| 3.9 | 2.8.0 | pass | 1 | 0 | 0 | 7 | 3 s |" in md
    assert "| 3.10 | 2.8.0 | FAIL | 1 | 1 |" in md
    assert "ImportError: x" in md
    _cell(tmp_path, "3.9", "bbb")  # another file tested in one cell: every row fails
    md = render_results.render_compatibility(render_results.matrix_cells(str(tmp_path)))
    assert "FAIL: 2 files" in md
    assert "| pass |" not in md


# --------------------------------------------------------------------------
# Stale results


def _git(repo, *args: str) -> str:
    import subprocess

    env = dict(os.environ, GIT_AUTHOR_NAME="t", GIT_AUTHOR_EMAIL="t@t", GIT_COMMITTER_NAME="t")
    env["GIT_COMMITTER_EMAIL"] = "t@t"
    return subprocess.run(
        ["git", *args], cwd=repo, env=env, capture_output=True, text=True, check=True
    ).stdout.strip()


@pytest.fixture
def history(tmp_path):
    """A repository whose kernel changed once after a first commit, then its docs."""
    _write(tmp_path / "csrc" / "ops.cpp", "// v1\n")
    _write(tmp_path / "docs" / "index.md", "# docs\n")
    _git(tmp_path, "init", "-q")
    _git(tmp_path, "add", ".")
    _git(tmp_path, "commit", "-qm", "v1")
    first = _git(tmp_path, "rev-parse", "--short=10", "HEAD")
    _write(tmp_path / "csrc" / "ops.cpp", "// v2\n")
    _git(tmp_path, "commit", "-qam", "v2")
    code = _git(tmp_path, "rev-parse", "--short=10", "HEAD")
    _write(tmp_path / "docs" / "index.md", "# docs, edited\n")
    _git(tmp_path, "commit", "-qam", "docs only")
    return tmp_path, first, code


def test_results_measured_before_a_code_change_are_marked(history) -> None:
    repo, first, code = history
    page = f"`make test` at commit `{first}`, 2026-01-02 03:04 UTC: 5 s of tests.\n\n| a |\n"
    text, found = generate.mark_stale("conformance.md", page, str(repo))
    assert len(found) == 1, found
    part, why, rerun = found[0]
    assert part == "conformance.md"
    assert rerun == "make test"
    assert f"1 commit since `{first}`" in why
    assert f"the last `{code[:7]}" in why
    assert text.startswith(f":::{{warning}}\n**Stale**: since `{first}`. Rerun: `make test`."), text
    # A change outside what the page measures (docs/) leaves it current.
    current = page.replace(first, code)
    assert generate.mark_stale("conformance.md", current, str(repo)) == (current, [])
    # A commit that is not in the history can't be judged current.
    unknown = page.replace(first, "0123456789")
    assert (
        "not in this checkout's history"
        in generate.mark_stale("conformance.md", unknown, str(repo))[1][0][1]
    )


def test_a_reverted_change_leaves_the_results_current(history) -> None:
    """Results measured at a commit are current again once every change since
    to what they measure is reverted: the code is the code they measured."""
    repo, _, code = history
    page = f"`make test` at commit `{code}`, 2026-01-02 03:04 UTC: 5 s of tests.\n\n| a |\n"
    _write(repo / "csrc" / "ops.cpp", "// v3\n")
    _git(repo, "commit", "-qam", "v3")
    assert len(generate.mark_stale("conformance.md", page, str(repo))[1]) == 1
    _git(repo, "revert", "--no-edit", "HEAD")
    assert generate.mark_stale("conformance.md", page, str(repo)) == (page, [])


def test_a_testing_module_change_leaves_the_kernel_pages_current(history) -> None:
    """extension_cpp/testing re-exports the harness: a change there makes the
    conformance page stale, not the kernels' (perf, compute-sanitizer)."""
    repo, _, code = history
    _write(repo / "extension_cpp" / "testing" / "pytest_plugin.py", "# v2\n")
    _git(repo, "add", ".")
    _git(repo, "commit", "-qm", "testing only")
    page = f"`make gpu` at commit `{code}`, 2026-01-02 03:04 UTC: 5 s of tests.\n\n| a |\n"
    assert generate.mark_stale("compute-sanitizer.md", page, str(repo))[1] == []
    assert generate.mark_stale("conformance.md", page, str(repo))[1] != []


def test_perf_parts_are_judged_alone_and_on_one_machine(history) -> None:
    repo, first, head = history
    stamp = "`python -m benchmarks.{}` at commit `{}`, 2026-01-0{}; CPU {}, 2 cores, torch 2.14.1."
    page = "\n".join(
        [
            "# Results: 2-core CPU",
            "",
            "## Every layout",
            "",
            stamp.format("layouts", head, 3, "A"),
            "",
            "## Whole calls, by size",
            "",
            stamp.format("ratios", head, 2, "B"),
            "",
            "## Stable ABI against classic",
            "",
            stamp.format("stable", first, 3, "A"),
        ]
    )
    text, found = generate.mark_stale("perf/cpu-2cores.md", page, str(repo))
    assert [f[0] for f in found] == [
        "perf/cpu-2cores.md, Whole calls, by size",
        "perf/cpu-2cores.md, Stable ABI against classic",
    ]
    assert "it ran on CPU B, 2 cores, the rest of this page on CPU A, 2 cores" in found[0][1]
    assert (
        found[0][2] == "make bench BENCH_OUT=docs/results/perf BENCH_PARTS=ratios on a 2-core CPU"
    )
    assert "1 commit since" in found[1][1]
    # Each mark sits under its part's heading; the current part has none.
    layouts, ratios = text.split("## Whole calls, by size")
    assert "Stale" not in layouts
    assert ratios.lstrip().startswith(":::{warning}")


CPU_PAGE = ("perf/cpu-2cores.md", "CPU A, 2 cores")
CUDA_PAGE = ("perf/cuda.md", "NVIDIA H200")


@pytest.mark.parametrize(
    ("changed", "current", "stale"),
    [
        (("csrc/fast/cuda/rows.cuh", "csrc/runtime.cuh"), CPU_PAGE, CUDA_PAGE),
        (("csrc/fast/cpu/run_loop.h", "csrc/cpu/ops_cpu.cpp"), CUDA_PAGE, CPU_PAGE),
    ],
    ids=["cuda-change", "cpu-change"],
)
def test_a_kernel_change_stales_only_the_perf_page_that_runs_it(
    history, changed, current, stale
) -> None:
    """A CPU machine's perf page runs no CUDA code and a GPU machine's times
    CUDA kernels only: a change to one kind's kernels makes that kind's page
    stale, not the other's."""
    repo, _, code = history
    for path in changed:
        _write(repo / path, "// v2\n")
    _git(repo, "add", ".")
    _git(repo, "commit", "-qm", "one kind's kernels")
    stamp = "`python -m benchmarks.layouts` at commit `{}`, 2026-01-03; {}, torch 2.14.1."

    def page(machine: str) -> str:
        return "\n".join(["# Results", "", "## Every layout", "", stamp.format(code, machine)])

    assert generate.mark_stale(current[0], page(current[1]), str(repo))[1] == []
    found = generate.mark_stale(stale[0], page(stale[1]), str(repo))[1]
    assert [f[0] for f in found] == [f"{stale[0]}, Every layout"]


def test_second_matrix_shares_the_first_ones_footnotes(tmp_path) -> None:
    first, second = tmp_path / "a.md", tmp_path / "b.md"
    first.write_text("| 01 | ✗[^no-cpu] |\n\n[^no-cpu]: **no CPU kernel**: `E`\n")
    second.write_text(
        "| 01 | ✗[^gpu-no-cpu] | ✗[^gpu-no-cuda] |\n\n"
        "[^gpu-no-cpu]: **no CPU kernel**: `E`\n\n[^gpu-no-cuda]: **no CUDA kernel**: `F`\n"
    )
    generate._share_footnotes(str(first), str(second))
    text = second.read_text()
    assert "| 01 | ✗[^no-cpu] | ✗[^gpu-no-cuda] |" in text
    assert "[^gpu-no-cpu]" not in text
    assert "[^gpu-no-cuda]: **no CUDA kernel**: `F`" in text
