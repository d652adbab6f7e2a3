"""Generates the pages and page fragments that come from other files.

At `builder-inited`, before Sphinx reads any source, this writes under
docs/_generated/:

  tutorial/NN_name.md      one page per tutorial/NN_* checkpoint: its README
                           (MyST include), every source file (literalinclude)
                           and the diff from the previous checkpoint
  tutorial/NN_name.diff    that diff, made with difflib at build time
  tutorial/appendix_name.md  one page per side path in tutorial/appendix/: its
                           README, its files, and how the tests it names fared
                           in the recorded junit runs (docs/results/*.xml)
  results/*.md             one page per results table (each benchmark run, the
                           compatibility matrix), nested under Performance and
                           Compatibility by the toctrees in their fragments
  fragments/*.md           pieces the hand-written pages include: the tutorial
                           toctree, the op schemas read from the live registry,
                           and the results tables (or a note that a results
                           file is missing and which command produces it),
                           those of the C++/CUDA or Triton page included

Nothing here is pasted: if a checkpoint, a schema or a results file changes,
the next build shows the change.
"""

import difflib
import glob
import os
import re
import subprocess

from sphinx.application import Sphinx

DOCS = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
REPO = os.path.dirname(DOCS)
GENERATED = os.path.join(DOCS, "_generated")
RESULTS = os.path.join(DOCS, "results")

LANGUAGES = {
    ".py": "python",
    ".cpp": "cpp",
    ".h": "cpp",
    ".hpp": "cpp",
    ".cu": "cuda",
    ".cuh": "cuda",
    ".toml": "toml",
    ".txt": "text",
    ".cfg": "ini",
    ".sh": "bash",
}
# Build outputs a checkpoint may hold when it is not a git checkout.
SKIP_PARTS = {"build", "dist", "__pycache__", ".pytest_cache", ".ruff_cache"}
SKIP_SUFFIXES = (".so", ".pyc", ".o", ".egg-info", ".diff", ".orig")
SKIP_NAMES = {"_build_info.py"}


def _write(path: str, text: str) -> None:
    """Writes only on change, so Sphinx's incremental build stays incremental."""
    os.makedirs(os.path.dirname(path), exist_ok=True)
    if os.path.exists(path):
        with open(path, encoding="utf-8") as f:
            if f.read() == text:
                return
    with open(path, "w", encoding="utf-8") as f:
        f.write(text)


def _missing(what: str, path: str, command: str) -> str:
    rel = os.path.relpath(path, REPO)
    return (
        ":::{admonition} Results missing\n:class: warning\n\n"
        f"{what} are not here yet: `{rel}` does not exist. "
        f"Run `{command}` to produce it, then `make docs`.\n:::\n"
    )


# --------------------------------------------------------------------------
# Tutorial checkpoints


def _checkpoint_files(stage: str) -> list[str]:
    """Source files of a checkpoint, relative to it, sorted, README excluded."""
    try:
        out = subprocess.run(
            ["git", "ls-files", "--cached", "--others", "--exclude-standard", "."],
            cwd=stage,
            capture_output=True,
            text=True,
            check=True,
        ).stdout.split()
        files = [f for f in out if os.path.isfile(os.path.join(stage, f))]
    except (OSError, subprocess.CalledProcessError):
        files = [
            os.path.relpath(os.path.join(d, f), stage)
            for d, _, names in os.walk(stage)
            for f in names
        ]
    keep = []
    for f in files:
        parts = f.split(os.sep)
        if SKIP_PARTS & set(parts) or f.endswith(SKIP_SUFFIXES) or parts[-1] in SKIP_NAMES:
            continue
        if any(p.endswith(".egg-info") for p in parts) or f == "README.md":
            continue
        keep.append(f)
    # setup.py first, then C++ sources, then Python: the order a reader builds in.
    return sorted(keep, key=lambda f: (f != "setup.py", not f.startswith("csrc"), f))


def _read_lines(path: str) -> list[str]:
    try:
        with open(path, encoding="utf-8") as f:
            return f.read().splitlines(keepends=True)
    except (FileNotFoundError, UnicodeDecodeError):
        return []


def _stage_diff(prev: str, stage: str) -> str:
    prev_name, name = os.path.basename(prev), os.path.basename(stage)
    files = sorted(set(_checkpoint_files(prev)) | set(_checkpoint_files(stage)) | {"README.md"})
    chunks = []
    for f in files:
        a = _read_lines(os.path.join(prev, f))
        b = _read_lines(os.path.join(stage, f))
        chunks.extend(
            difflib.unified_diff(a, b, f"tutorial/{prev_name}/{f}", f"tutorial/{name}/{f}")
        )
    return "".join(line if line.endswith("\n") else line + "\n" for line in chunks)


def _label(*parts: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", "-".join(parts).lower()).strip("-")


_LINK = re.compile(r"(!?)\[([^\]]*)\]\(([^)\s]+)\)")
_FENCE = re.compile(r"^\s*(```|~~~)")


def _rewrite_links(text: str, stage: str, out_dir: str, files: list[str]) -> str:
    """Makes a README's relative links work on its generated page.

    A README links to files beside it (``[ops.cpp](csrc/ops.cpp)``) and to
    other checkpoints (``../02_impl/README.md``), which is right on GitHub but
    not in Sphinx. Links to a file this page shows go to its listing, links to
    a checkpoint go to that checkpoint's page, links to a docs/ page go there,
    images are re-pointed at the file, and any other relative link becomes
    plain code text, so the page
    never has a dead link. Absolute URLs and #anchors are left alone.
    """
    name = os.path.basename(stage)

    def fix(m: re.Match) -> str:
        bang, label, target = m.groups()
        if re.match(r"^[a-z][a-z0-9+.-]*:", target) or target.startswith("#"):
            return m.group(0)
        path = target.split("#")[0]
        full = os.path.normpath(os.path.join(stage, path))
        if bang:
            return f"![{label}]({os.path.relpath(full, out_dir)})"
        if full.startswith(DOCS + os.sep) and path.endswith(".md"):  # a page of the site
            return f"[{label}]({os.path.relpath(full, out_dir)})"
        rel = os.path.relpath(full, stage)
        if rel in files:
            return f"[{label}](#{_label('tutorial', name, rel)})"
        other = os.path.relpath(full, os.path.dirname(stage)).split(os.sep)[0]
        if re.match(r"^\d\d_", other) and os.path.isdir(
            os.path.join(os.path.dirname(stage), other)
        ):
            if rel.endswith("README.md") or os.path.isdir(full):
                return f"[{label}]({other}.md)"
            inner = os.path.relpath(full, os.path.join(os.path.dirname(stage), other))
            return f"[{label}]({other}.md#{_label('tutorial', other, inner)})"
        return f"{label} (`{os.path.relpath(full, os.path.dirname(os.path.dirname(stage)))}`)"

    out, fenced = [], False
    for line in text.splitlines():
        if _FENCE.match(line):
            fenced = not fenced
        out.append(line if fenced else _LINK.sub(fix, line))
    return "\n".join(out)


def _source_listing(folder: str, out_dir: str, files: list[str], what: str) -> list[str]:
    rel = os.path.relpath(folder, out_dir)
    lines = []
    for f in files:
        language = LANGUAGES.get(os.path.splitext(f)[1], "text")
        lines += [
            f"```{{literalinclude}} {rel}/{f}",
            f":language: {language}",
            f":caption: {what}/{f}",
            f":name: {_label('tutorial', os.path.basename(folder), f)}",
            "```",
            "",
        ]
    return lines


_TEST_NAME = re.compile(r"\b(test_(?!tutorial_appendix\b)\w+)")
APPENDIX_TESTS = "test_tutorial_appendix"


def _appendix_results(readme_text: str) -> list[str]:
    """How the tests a side path's README names fared in the last recorded runs."""
    import render_results

    names = sorted(set(_TEST_NAME.findall(readme_text)))
    lines = ["## Test results", ""]
    if not names:
        return lines + ["The README names no test.", ""]
    lines += [
        f"The tests this page names ({', '.join(f'`{n}`' for n in names)}, in "
        f"`tests/conformance/{APPENDIX_TESTS}.py`), as recorded by the last runs:",
        "",
    ]
    for xml, title, command in (
        ("conformance.xml", "On the machine that built these docs", "make test"),
        ("conformance-gpu.xml", "On a GPU machine", "make test-conformance on a GPU machine"),
    ):
        path = os.path.join(RESULTS, xml)
        lines += [f"### {title}", ""]
        if not os.path.exists(path):
            lines += [_missing("These results", path, command), ""]
            continue
        table = render_results.render_tests(path, APPENDIX_TESTS, names)
        rel = os.path.relpath(path, REPO)
        lines += [table or f"`{rel}` has no result for these tests: run `{command}`.", ""]
    return lines


def _appendix_page(folder: str, out_dir: str) -> str:
    """One page for a side path in tutorial/appendix/: README, code, test results."""
    name = "appendix_" + os.path.basename(folder)
    what = f"tutorial/appendix/{os.path.basename(folder)}"
    files = _checkpoint_files(folder)
    with open(os.path.join(folder, "README.md"), encoding="utf-8") as f:
        readme = f.read()
    lines = [f"% Generated by docs/_ext/generate.py from {what}. Do not edit.", ""]
    lines += [_rewrite_links(readme, folder, out_dir, files), ""]
    lines += ["## The code", "", f"Every file in `{what}/`, as it is in the repository.", ""]
    lines += _source_listing(folder, out_dir, files, what)
    lines += _appendix_results(readme)
    _write(os.path.join(out_dir, f"{name}.md"), "\n".join(lines))
    return name


def _tutorial_pages(tutorial_dir: str) -> list[str]:
    out_dir = os.path.join(GENERATED, "tutorial")
    stages = sorted(
        d for d in glob.glob(os.path.join(tutorial_dir, "[0-9][0-9]_*")) if os.path.isdir(d)
    )
    written = set()
    docnames = []
    for i, stage in enumerate(stages):
        name = os.path.basename(stage)
        lines = [f"% Generated by docs/_ext/generate.py from tutorial/{name}. Do not edit.", ""]
        files = _checkpoint_files(stage)
        readme = os.path.join(stage, "README.md")
        if os.path.exists(readme):
            with open(readme, encoding="utf-8") as f:
                lines += [_rewrite_links(f.read(), stage, out_dir, files), ""]
        else:
            lines += [f"# {name}", ""]
        lines += ["## The code of this checkpoint", ""]
        lines += [
            f"Every file in `tutorial/{name}/`, as it is in the repository "
            "(`make tutorial` builds and checks each checkpoint in turn).",
            "",
        ]
        lines += _source_listing(stage, out_dir, files, f"tutorial/{name}")
        if i > 0:
            prev = os.path.basename(stages[i - 1])
            diff = _stage_diff(stages[i - 1], stage)
            lines += [f"## Every change since {prev}", ""]
            if diff:
                diff_name = f"{name}.diff"
                _write(os.path.join(out_dir, diff_name), diff)
                written.add(diff_name)
                lines += [
                    f"`diff -u tutorial/{prev} tutorial/{name}`, computed when these docs "
                    "were built:",
                    "",
                    f"```{{literalinclude}} {diff_name}",
                    ":language: diff",
                    "```",
                    "",
                ]
            else:
                lines += ["No file differs from the previous checkpoint.", ""]
        _write(os.path.join(out_dir, f"{name}.md"), "\n".join(lines))
        written.add(f"{name}.md")
        docnames.append(f"/_generated/tutorial/{name}")
    for side in sorted(glob.glob(os.path.join(tutorial_dir, "appendix", "*", "README.md"))):
        name = _appendix_page(os.path.dirname(side), out_dir)
        written.add(f"{name}.md")
        docnames.append(f"/_generated/tutorial/{name}")
    if os.path.isdir(out_dir):  # drop pages of checkpoints that no longer exist
        for f in os.listdir(out_dir):
            if f not in written:
                os.remove(os.path.join(out_dir, f))
    if docnames:
        toc = "```{toctree}\n:maxdepth: 1\n\n" + "\n".join(docnames) + "\n```\n"
    else:
        toc = (
            ":::{admonition} No checkpoints found\n:class: warning\n\n"
            f"There is no `NN_name` folder in `{os.path.relpath(tutorial_dir, REPO)}/` "
            "yet, so there are no tutorial pages to show.\n:::\n"
        )
    return [toc]


# --------------------------------------------------------------------------
# Op schemas, read from the dispatcher of the running process


def _schemas_fragment() -> str:
    import torch

    import extension_cpp  # noqa: F401  (loads the library that registers the ops)

    names = sorted(
        n for n in torch._C._dispatch_get_all_op_names() if n.startswith("extension_cpp::")
    )
    keys = ["CPU", "CUDA", "Autograd", "Meta"]
    lines = [
        f"Read from the dispatcher of torch {torch.__version__} when these docs were built.",
        "",
        "| op | schema | " + " | ".join(keys) + " |",
        "| --- | --- |" + " :-: |" * len(keys),
    ]
    for name in names:
        overload = getattr(torch.ops.extension_cpp, name.split("::")[1]).default
        has = [torch._C._dispatch_has_kernel_for_dispatch_key(name, k) for k in keys]
        marks = " | ".join("yes" if h else "no" for h in has)
        lines.append(f"| `{name}` | `{overload._schema}` | {marks} |")
    lines += [
        "",
        "CPU, CUDA and Autograd kernels are in `csrc/`; the Meta column is the fake kernel "
        "that `extension_cpp/ops.py` registers with `torch.library.register_fake`.",
        "",
    ]
    return "\n".join(lines)


# --------------------------------------------------------------------------
# Results made by other commands


def _from_srcdir(path: str) -> str:
    """A path Sphinx reads relative to docs/, whichever page includes the fragment."""
    return "/" + os.path.relpath(path, DOCS).replace(os.sep, "/")


def _include_or_missing(name: str, what: str, command: str) -> str:
    path = os.path.join(RESULTS, name)
    if not os.path.exists(path):
        return _missing(what, path, command)
    return f"```{{include}} {_from_srcdir(path)}\n```\n"


def _tutorial_matrix_fragment() -> str:
    """The walk on the machine that built these docs (make tutorial), then the
    last walk on a GPU machine, whose CUDA cells ran. Each table, in a
    container so the stylesheet can size it to fit 1280 px, says its torch."""
    sections = []
    for name, title, command in (
        ("tutorial_matrix.md", "Without a GPU", "make tutorial"),
        ("tutorial_matrix_gpu.md", "On a GPU machine", "make tutorial on a GPU machine"),
    ):
        body = _include_or_missing(name, "The tutorial stage matrix", command)
        sections.append(f"**{title}:**\n\n::::{{container}} stage-matrix\n{body}::::\n")
    return "\n".join(sections)


def _conformance_fragment() -> str:
    """The committed GPU run first (every CUDA case ran), then this machine's
    runs: the classic build, then the stable-ABI one."""
    import render_results

    sections = []
    for name, title, command in (
        ("conformance-gpu.xml", "On a GPU machine", "make test-conformance on a GPU machine"),
        ("conformance.xml", "On the machine that built these docs", "make test"),
        (
            "conformance-stable.xml",
            "The stable-ABI build (extension_cpp_stable), on the machine that built these docs",
            "make test",
        ),
    ):
        path = os.path.join(RESULTS, name)
        body = (
            render_results.render_conformance(path)
            if os.path.exists(path)
            else _missing("These results", path, command)
        )
        sections.append(f"### {title}\n\n{body}")
    return "\n\n".join(sections) + "\n"


GPU_SCRIPT = "bash scripts/triton_gpu_run.sh on a GPU machine"


def _cpp_or_triton_fragment() -> str:
    """The side-by-side tables of the C++ and Triton ops, from the GPU script's
    benchmark, and a link to its raw numbers."""
    table = os.path.join(RESULTS, "cpp_or_triton.md")
    if not os.path.exists(table):
        return _missing("The side-by-side measurements", table, GPU_SCRIPT)
    # Its title becomes a section of the page that includes it.
    text = f"```{{include}} {_from_srcdir(table)}\n:heading-offset: 1\n```\n"
    data = os.path.join(RESULTS, "cpp_or_triton.json")
    if os.path.exists(data):
        text += f"\nEvery number: {{download}}`cpp_or_triton.json <{_from_srcdir(data)}>`.\n"
    return text


def _conformance_triton_fragment() -> str:
    """The harness on the Triton ops, from the GPU script's test run."""
    import render_results

    path = os.path.join(RESULTS, "conformance-triton-gpu.xml")
    if not os.path.exists(path):
        return _missing("The Triton ops' conformance results", path, GPU_SCRIPT)
    return render_results.render_conformance(path, "bash scripts/triton_gpu_run.sh")


def _results_page(table: str, figures: list[str], source: str) -> str:
    """A page of its own for one results table (its H1 is the page title)."""
    name = os.path.splitext(os.path.basename(table))[0]
    lines = [
        f"% Generated by docs/_ext/generate.py from {os.path.relpath(table, REPO)}. Do not edit.",
        "",
        f"```{{include}} {_from_srcdir(table)}\n```",
        "",
    ]
    for p in figures:
        lines += [
            f"```{{figure}} {_from_srcdir(p)}",
            f":alt: {os.path.splitext(os.path.basename(p))[0]}",
            ":width: 100%",
            "",
            f"`docs/results/{os.path.relpath(p, RESULTS)}`",
            "```",
            "",
        ]
    lines += [f"Made by `{source}`.", ""]
    _write(os.path.join(GENERATED, "results", f"{name}.md"), "\n".join(lines))
    return f"/_generated/results/{name}"


def _toctree(docnames: list[str]) -> str:
    return "```{toctree}\n:maxdepth: 1\n\n" + "\n".join(docnames) + "\n```\n"


def _performance_fragment() -> str:
    """A toctree of one page per benchmark run (its tables and plots), and the raw data."""
    perf = os.path.join(RESULTS, "perf")
    tables = sorted(glob.glob(os.path.join(perf, "*.md")))
    data = sorted(glob.glob(os.path.join(perf, "*.json")))
    if not (tables or data):
        return _missing("The benchmark plots and tables", perf, "make bench")
    pages = []
    for t in tables:
        stem = os.path.splitext(t)[0]
        figures = sorted(glob.glob(glob.escape(stem) + "_*.png"))
        pages.append(_results_page(t, figures, "make bench"))
    lines = [_toctree(pages)] if pages else []
    if data:
        lines += ["Raw measurements:", ""]
        lines += [f"- {{download}}`{os.path.basename(d)} <{_from_srcdir(d)}>`" for d in data]
        lines.append("")
    return "\n".join(lines)


def _compatibility_fragment() -> str:
    path = os.path.join(RESULTS, "compatibility.md")
    if not os.path.exists(path):
        return _missing("The Python x torch compatibility table", path, "make matrix")
    return _toctree([_results_page(path, [], "make matrix")])


def _docnames_in(pieces: dict[str, str]) -> list[str]:
    return re.findall(r"^/_generated/results/(\S+)$", "\n".join(pieces.values()), re.M)


def generate(app: Sphinx) -> None:
    fragments = os.path.join(GENERATED, "fragments")
    tutorial_dir = os.path.abspath(app.config.tutorial_dir)
    (toc,) = _tutorial_pages(tutorial_dir)
    pieces = {
        "tutorial_toc.md": toc,
        "schemas.md": _schemas_fragment(),
        # In a container, so the stylesheet can size this table to fit 1280 px.
        "tutorial_matrix.md": _tutorial_matrix_fragment(),
        "compatibility.md": _compatibility_fragment(),
        "conformance.md": _conformance_fragment(),
        "performance.md": _performance_fragment(),
        "cpp_or_triton.md": _cpp_or_triton_fragment(),
        "conformance_triton.md": _conformance_triton_fragment(),
    }
    written = set()
    results = os.path.join(GENERATED, "results")
    if os.path.isdir(results):  # drop pages of results that no longer exist
        pages = {os.path.basename(d) + ".md" for d in _docnames_in(pieces)}
        for f in os.listdir(results):
            if f not in pages:
                os.remove(os.path.join(results, f))
    for name, text in pieces.items():
        _write(os.path.join(fragments, name), text)
        written.add(name)
    for f in os.listdir(fragments):
        if f not in written:
            os.remove(os.path.join(fragments, f))


def setup(app: Sphinx) -> dict:
    app.add_config_value("tutorial_dir", os.path.join(REPO, "tutorial"), "env")
    app.connect("builder-inited", generate)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
