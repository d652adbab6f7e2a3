"""Generates the pages and page fragments that come from other files.

At `builder-inited`, before Sphinx reads any source, this writes under
docs/_generated/:

  tutorial/NN_name.md      one page per tutorial/NN_* checkpoint: its README
                           (MyST include, with that step's diff) and a link to
                           each of its files
  tutorial/appendix_name.md  one page per side path in tutorial/appendix/: its
                           README and a link to each of its files
  results/*.md             one page per machine's benchmark results
                           (docs/results/perf/), nested under Performance
  fragments/*.md           pieces the hand-written pages include: tutorial/
                           README.md, the tutorial toctree, the op schemas read
                           from the live registry, and the results pages of
                           docs/results/ (or a note that one is missing and
                           which command produces it), the C++/CUDA or Triton
                           page's included

Nothing here is pasted: if a checkpoint, a schema or a results page changes,
the next build shows the change. At `build-finished` it prints the site's
word count, page by page (the docs are meant to be read: see
tests/docs/test_site.py's budget), and writes it to docs/_build/wordcount.json.
"""

import glob
import json
import os
import re
import subprocess
from html.parser import HTMLParser

from sphinx.application import Sphinx

from tools.docs.render_results import value_range

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
DOCS = os.path.join(REPO, "docs")
GENERATED = os.path.join(DOCS, "_generated")
RESULTS = os.path.join(DOCS, "results")

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
        f"Run `{command}`, then put its page there (`docs/results/README.md` says how).\n:::\n"
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


_LINK = re.compile(r"(!?)\[([^\]]*)\]\(([^)\s]+)\)")
_FENCE = re.compile(r"^\s*(```|~~~)")


def _rewrite_links(text: str, folder: str, out_dir: str, tutorial: str) -> str:
    """Makes a README's relative links work on its generated page.

    A README links to files beside it (``[ops.cpp](csrc/ops.cpp)``), to other
    checkpoints (``../02_impl/README.md``) and to pages of the site
    (``../../docs/stable_abi.md``), which is right on GitHub but not in
    Sphinx. A link to a checkpoint goes to that checkpoint's page, a link to a
    docs/ page goes there, a link to a file of the repository becomes a
    download of that file, and images are re-pointed at the file, so the page
    never has a dead link. Absolute URLs and #anchors are left alone.
    `tutorial` is the tutorial/ folder that holds `folder`.
    """

    def fix(m: re.Match) -> str:
        bang, label, target = m.groups()
        if re.match(r"^[a-z][a-z0-9+.-]*:", target) or target.startswith("#"):
            return m.group(0)
        path, _, anchor = target.partition("#")
        full = os.path.normpath(os.path.join(folder, path))
        if bang:
            return f"![{label}]({os.path.relpath(full, out_dir)})"
        if full.startswith(DOCS + os.sep) and path.endswith(".md"):  # a page of the site
            return f"[{label}]({os.path.relpath(full, out_dir)}{'#' + anchor if anchor else ''})"
        rel = os.path.relpath(full, tutorial).split(os.sep)
        if full == os.path.join(tutorial, "README.md") or full == tutorial:
            return f"[{label}](../../tutorial/index.md{'#' + anchor if anchor else ''})"
        if re.match(r"^\d\d_", rel[0]) and os.path.isdir(os.path.join(tutorial, rel[0])):
            if rel[1:] in ([], ["README.md"]):
                return f"[{label}]({rel[0]}.md{'#' + anchor if anchor else ''})"
        if rel[0] == "appendix" and len(rel) >= 2 and rel[2:] in ([], ["README.md"]):
            return f"[{label}](appendix_{rel[1]}.md)"
        if os.path.isfile(full):
            # A Markdown link to a file that is not a page is a download in
            # MyST; unlike the {download} role, its label may hold markup.
            return f"[{label}]({os.path.relpath(full, out_dir)})"
        return f"{label} (`{os.path.relpath(full, os.path.dirname(tutorial))}`)"

    out, fenced = [], False
    for line in text.splitlines():
        if _FENCE.match(line):
            fenced = not fenced
        out.append(line if fenced else _LINK.sub(fix, line))
    return "\n".join(out)


def _file_links(folder: str, out_dir: str, files: list[str], what: str) -> list[str]:
    """One line: every file of the folder, each a link to the file itself."""
    rel = os.path.relpath(folder, out_dir)
    links = [f"{{download}}`{f} <{rel}/{f}>`" for f in files]
    return [f"**The files of `{what}/`:** " + ", ".join(links) + ".", ""]


def _appendix_page(folder: str, out_dir: str, tutorial: str) -> str:
    """One page for a side path in tutorial/appendix/: its README and its files."""
    name = "appendix_" + os.path.basename(folder)
    what = f"tutorial/appendix/{os.path.basename(folder)}"
    files = _checkpoint_files(folder)
    with open(os.path.join(folder, "README.md"), encoding="utf-8") as f:
        readme = f.read()
    lines = [f"% Generated by tools/docs/generate.py from {what}. Do not edit.", ""]
    lines += [_rewrite_links(readme, folder, out_dir, tutorial), ""]
    lines += _file_links(folder, out_dir, files, what)
    lines += [
        "Its tests run in `make tutorial`.",
        "",
    ]
    _write(os.path.join(out_dir, f"{name}.md"), "\n".join(lines))
    return name


def _tutorial_pages(tutorial_dir: str) -> list[str]:
    """The checkpoint and side-path pages; returns the tutorial's README and toctree."""
    out_dir = os.path.join(GENERATED, "tutorial")
    stages = sorted(
        d for d in glob.glob(os.path.join(tutorial_dir, "[0-9][0-9]_*")) if os.path.isdir(d)
    )
    written = set()
    docnames = []
    for stage in stages:
        name = os.path.basename(stage)
        lines = [f"% Generated by tools/docs/generate.py from tutorial/{name}. Do not edit.", ""]
        files = _checkpoint_files(stage)
        readme = os.path.join(stage, "README.md")
        text = f"# {name}\n"
        if os.path.exists(readme):
            with open(readme, encoding="utf-8") as f:
                text = _rewrite_links(f.read(), stage, out_dir, tutorial_dir)
        # The README shows what the step changed (its diff); the files
        # themselves are a click away rather than printed a second time,
        # linked where the diff ends and the reader starts to build.
        links = "\n".join(_file_links(stage, out_dir, files, f"tutorial/{name}"))
        before, heading, after = text.partition("\n## Build and run")
        text = f"{before}\n\n{links}{heading}{after}" if heading else f"{text}\n\n{links}"
        lines += [text, ""]
        _write(os.path.join(out_dir, f"{name}.md"), "\n".join(lines))
        written.add(f"{name}.md")
        docnames.append(f"/_generated/tutorial/{name}")
    for side in sorted(glob.glob(os.path.join(tutorial_dir, "appendix", "*", "README.md"))):
        name = _appendix_page(os.path.dirname(side), out_dir, tutorial_dir)
        written.add(f"{name}.md")
        docnames.append(f"/_generated/tutorial/{name}")
    if os.path.isdir(out_dir):  # drop pages of checkpoints that no longer exist
        for f in os.listdir(out_dir):
            if f not in written:
                os.remove(os.path.join(out_dir, f))
    if docnames:
        toc = "```{toctree}\n:maxdepth: 1\n:hidden:\n\n" + "\n".join(docnames) + "\n```\n"
    else:
        toc = (
            ":::{admonition} No checkpoints found\n:class: warning\n\n"
            f"There is no `NN_name` folder in `{os.path.relpath(tutorial_dir, REPO)}/` "
            "yet, so there are no tutorial pages to show.\n:::\n"
        )
    readme = os.path.join(tutorial_dir, "README.md")
    intro = ""
    if os.path.exists(readme):
        with open(readme, encoding="utf-8") as f:
            # Shown inside docs/tutorial/index.md, whose title it keeps.
            text = re.sub(r"\A# [^\n]*\n", "", f.read())
        intro = _rewrite_links(text, tutorial_dir, os.path.join(DOCS, "tutorial"), tutorial_dir)
        intro = intro.replace("(../../tutorial/index.md", "(index.md")
        intro = re.sub(r"\]\((\d\d_\w+|appendix_\w+)\.md", r"](../_generated/tutorial/\1.md", intro)
    return [intro, toc]


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
# Results pages, committed to docs/results/ (docs/results/README.md)


# --------------------------------------------------------------------------
# Stale results: a part measured before the last change to what it measures
# (written here: Sphinx and the docs tools we use know nothing of git history
# or of which sources a committed results page measured).


def _gpu(steps: str) -> str:
    """The command that reruns a GPU page: make gpu's parts that make it."""
    return f"make gpu STEPS=build,{steps} on a GPU machine"


# What a results page measures (a change there makes it stale) and how to
# rerun it. Perf pages are split by part below.
CODE = ("csrc", "extension_cpp", "harness", "setup.py", "build_options.py")
# The kernels' pages leave out the packages' testing modules, which
# re-export the harness and run no kernel (git pathspecs).
KERNELS = (
    "csrc",
    "extension_cpp",
    ":(exclude)extension_cpp/testing",
    ":(exclude)stable/extension_cpp_stable/testing",
    "setup.py",
    "build_options.py",
)
# Sources only a GPU runs: a CPU machine's perf page leaves them out.
CUDA_ONLY = (
    ":(exclude)csrc/*.cuh",
    ":(exclude)csrc/cuda",
    ":(exclude)csrc/fast/cuda",
    ":(exclude)stable/csrc/*.cu",
)
# Sources only a CPU runs: a GPU machine's perf page leaves them out.
CPU_ONLY = (":(exclude)csrc/cpu", ":(exclude)csrc/fast/cpu")
TRITON = "tutorial/appendix/triton"
MEASURES = {
    "tutorial_matrix.md": (("tutorial", *CODE), "make tutorial"),
    "tutorial_matrix_gpu.md": (("tutorial", *CODE), _gpu("tutorial")),
    "conformance.md": (CODE, "make test"),
    "conformance-stable.md": ((*CODE, "stable"), "make test"),
    "conformance-gpu.md": (CODE, _gpu("cuda")),
    "compatibility.md": ((*CODE, "stable"), "make matrix"),
    "compute-sanitizer.md": (KERNELS, _gpu("sanitizer")),
    "cpp_or_triton.md": ((*KERNELS, TRITON), _gpu("bench")),
    "conformance-triton-gpu.md": (("harness", TRITON), _gpu("triton")),
}
# A perf page's parts (benchmarks/page.py's TITLES) and what each measures.
PERF_PARTS = {
    "Every layout": ("layouts", KERNELS),
    "Whole calls, by size": ("ratios", KERNELS),
    "Stable ABI against classic": ("stable", (*KERNELS, "stable")),
    "Bandwidth": ("bandwidth", KERNELS),
}
_STAMP = re.compile(r"at commit `([0-9a-f]{7,40})")
_DATE = re.compile(r"\b(20\d\d-\d\d-\d\d)\b")
# A perf part's stamp line ends "; <machine>, torch <version>."
_MACHINE = re.compile(r"\d\d(?: \d\d:\d\d UTC)?; (.+?), torch \S+\.$", re.M)
# Found at build time, printed with the word count: (page and part, why, rerun).
STALE: list[tuple[str, str, str]] = []


def _git(repo: str, *args: str) -> str | None:
    try:
        return subprocess.run(
            ["git", *args], cwd=repo, capture_output=True, text=True, check=True
        ).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return None


def changed_since(commit: str, paths: tuple[str, ...], repo: str = REPO) -> str | None:
    """Why results measured at `commit` are stale, or None if they are not:
    the commits since it that changed `paths`, or that it is not in the history.
    Commits whose changes there add up to none (a change and its revert)
    leave the results current."""
    if _git(repo, "rev-parse", "-q", "--verify", f"{commit}^{{commit}}") is None:
        return f"its commit `{commit}` is not in this checkout's history"
    if _git(repo, "diff", "--quiet", commit, "HEAD", "--", *paths) is not None:
        return None  # git diff --quiet exits 1, and _git gives None, where they differ
    log = _git(repo, "log", "--no-merges", "--format=%h %cs", f"{commit}..HEAD", "--", *paths)
    if not log:
        return None
    commits = log.splitlines()
    last, date = commits[0].split()
    s = "s" if len(commits) > 1 else ""
    return (
        f"{len(commits)} commit{s} since `{commit}` changed what it measures "
        f"(the last `{last}`, {date})"
    )


def _mark(why: str, command: str) -> str:
    """A warning at the top of a stale part: why, and the command that reruns it."""
    # "1 commit since `abc` changed what it measures (the last ...)" -> "since `abc`"
    why = re.sub(r"\d+ commits? (since `[^`]+`) changed what it measures \(.*?\)", r"\1", why)
    return f":::{{warning}}\n**Stale**: {why}. Rerun: `{command}`.\n:::\n"


def _split_parts(text: str) -> list[list[str]]:
    """The page's lines cut at each level-2 heading: the preamble, then the parts."""
    parts: list[list[str]] = [[]]
    for line in text.splitlines():
        if line.startswith("## "):
            parts.append([])
        parts[-1].append(line)
    return parts


def mark_stale(name: str, text: str, repo: str = REPO) -> tuple[str, list[tuple[str, str, str]]]:
    """The results page `name` (relative to docs/results/) with a warning on each
    stale part, and those parts: (page and part, why, how to rerun). A part is
    stale when its stamped commit predates a change to the code it measures, or,
    on a perf page (one machine each), when it ran on another machine than the
    page's newest part."""
    if _git(repo, "rev-parse", "HEAD") is None:
        return text, []  # not a git checkout: nothing to compare with
    perf = name.startswith("perf/")
    cuda = perf and os.path.basename(name) == "cuda.md"
    parts = _split_parts(text)
    stamps = []  # (index, heading, commit, date, machine)
    for i, lines in enumerate(parts):
        body = "\n".join(lines)
        commit = _STAMP.search(body)
        if commit:
            heading = lines[0][3:].split(" (")[0].strip() if lines[0].startswith("## ") else ""
            date = _DATE.search(body[commit.end() :])
            machine = _MACHINE.search(body) if perf else None
            stamps.append(
                (i, heading, commit[1], date[1] if date else "", machine[1] if machine else "")
            )
    newest = max(stamps, key=lambda s: s[3])[4] if perf and stamps else ""
    found = []
    for i, heading, commit, _, machine in stamps:
        if perf:
            part, paths = PERF_PARTS.get(heading, (None, KERNELS))
            paths = (*paths, *(CPU_ONLY if cuda else CUDA_ONLY))
            command = "make bench BENCH_OUT=docs/results/perf"
            command += " BENCH_DEVICE=cuda" if cuda else ""
            command += f" BENCH_PARTS={part}" if part else ""
            cores = re.search(r"cpu-(\d+)cores", name)
            command += (
                " on a GPU machine" if cuda else f" on a {cores[1]}-core CPU" if cores else ""
            )
        else:
            paths, command = MEASURES.get(name, (CODE, "see docs/results/README.md"))
        reasons = [r for r in [changed_since(commit, paths, repo)] if r]
        if machine and newest and machine != newest:
            reasons.append(f"it ran on {machine}, the rest of this page on {newest}")
        if not reasons:
            continue
        why = "; ".join(reasons)
        found.append((f"{name}" + (f", {heading}" if heading else ""), why, command))
        lines = parts[i]
        at = 1 if lines and lines[0].startswith("#") else 0
        parts[i] = [*lines[:at], *([""] if at else []), _mark(why, command), *lines[at:]]
    return "\n".join(line for lines in parts for line in lines) + "\n", found


def _results_copy(name: str) -> str:
    """docs/results/<name>, stale parts marked, as a fragment; returns its path."""
    with open(os.path.join(RESULTS, name), encoding="utf-8") as f:
        text, found = mark_stale(name, f.read())
    STALE.extend(found)
    path = os.path.join(GENERATED, "fragments", "results", name)
    _write(path, text)
    return path


def _from_srcdir(path: str) -> str:
    """A path Sphinx reads relative to docs/, whichever page includes the fragment."""
    return "/" + os.path.relpath(path, DOCS).replace(os.sep, "/")


def _include_or_missing(name: str, what: str, command: str) -> str:
    path = os.path.join(RESULTS, name)
    if not os.path.exists(path):
        return _missing(what, path, command)
    return f"```{{include}} {_from_srcdir(_results_copy(name))}\n```\n"


def _tutorial_matrix_fragment() -> str:
    """The last walk without a GPU, then the last one on a GPU machine, whose
    CUDA cells ran. Each table sits in a container so the stylesheet can size
    it to fit 1280 px, and says which run it shows."""
    sections = []
    for name, title, command in (
        ("tutorial_matrix.md", "Without a GPU", "make tutorial"),
        ("tutorial_matrix_gpu.md", "On a GPU machine", _gpu("tutorial")),
    ):
        body = _include_or_missing(name, "The tutorial stage matrix", command)
        sections.append(f"**{title}:**\n\n::::{{container}} stage-matrix\n{body}::::\n")
    _share_footnotes(
        os.path.join(GENERATED, "fragments", "results", "tutorial_matrix.md"),
        os.path.join(GENERATED, "fragments", "results", "tutorial_matrix_gpu.md"),
    )
    return "\n".join(sections)


def _share_footnotes(first: str, second: str, prefix: str = "gpu-") -> None:
    """The second table's footnotes that say what the first's say (same text
    under its label less the prefix) point at the first's; the page shows each
    reason once."""
    if not (os.path.exists(first) and os.path.exists(second)):
        return
    with open(first, encoding="utf-8") as f:
        notes = dict(re.findall(r"^\[\^([\w-]+)\]: (.*)$", f.read(), re.M))
    with open(second, encoding="utf-8") as f:
        text = f.read()
    for label, body in re.findall(r"^\[\^([\w-]+)\]: (.*)$", text, re.M):
        shared = label.removeprefix(prefix)
        if label != shared and notes.get(shared) == body:
            text = re.sub(rf"^\[\^{re.escape(label)}\]: .*\n+", "", text, flags=re.M)
            text = text.replace(f"[^{label}]", f"[^{shared}]")
    _write(second, text)


def _conformance_fragment() -> str:
    """The last recorded runs of the suite: on a GPU machine (every CUDA case
    ran), then without one, for the classic build and the stable-ABI one."""
    sections = []
    for name, title, command in (
        ("conformance-gpu.md", "On a GPU machine", _gpu("cuda")),
        ("conformance.md", "Without a GPU", "make test"),
        ("conformance-stable.md", "The stable-ABI build, without a GPU", "make test"),
    ):
        sections.append(f"### {title}\n\n" + _include_or_missing(name, "These results", command))
    return "\n".join(sections)


def _machine_pages(perf: str) -> list[str]:
    """docs/results/perf/*.md, CPUs by core count, then the GPU."""

    def order(path: str) -> tuple:
        cores = re.search(r"cpu-(\d+)cores", os.path.basename(path))
        return (0, int(cores[1])) if cores else (1, os.path.basename(path))

    return sorted(glob.glob(os.path.join(perf, "*.md")), key=order)


def _results_page(table: str) -> str:
    """A page of its own for one machine's benchmark results (its H1 is the title)."""
    name = os.path.splitext(os.path.basename(table))[0]
    copy = _results_copy(os.path.relpath(table, RESULTS))
    lines = [
        f"% Generated by tools/docs/generate.py from {os.path.relpath(table, REPO)}. Do not edit.",
        "",
        f"```{{include}} {_from_srcdir(copy)}\n```",
        "",
    ]
    _write(os.path.join(GENERATED, "results", f"{name}.md"), "\n".join(lines))
    return f"/_generated/results/{name}"


def _performance_fragment() -> str:
    """A toctree of the results pages, one per kind of machine."""
    perf = os.path.join(RESULTS, "perf")
    tables = _machine_pages(perf)
    if not tables:
        return _missing("The benchmark results", perf, "make bench")
    pages = [_results_page(t) for t in tables]
    return "```{toctree}\n:maxdepth: 1\n\n" + "\n".join([*pages, "/design_notes"]) + "\n```\n"


def _performance_headline() -> str:
    """Each results page's headline table, under a link to the page."""
    perf = os.path.join(RESULTS, "perf")
    tables = _machine_pages(perf)
    if not tables:
        return _missing("The benchmark results", perf, "make bench")
    lines = []
    for table in tables:
        with open(table, encoding="utf-8") as f:
            text = f.read()
        name = os.path.splitext(os.path.basename(table))[0]
        title = re.search(r"^# (?:Results: )?(.+)$", text, re.M)
        machine = re.search(r"\(`[\w-]+`; here (.+?)\), part by part", text)
        headline = re.search(r"^## Headline\n(.*?)(?=^## )", text, re.M | re.S)
        rows = [line for line in (headline[1] if headline else "").splitlines() if line[:1] == "|"]
        link = f"{{doc}}`{title[1] if title else name} </_generated/results/{name}>`"
        link += f" ({machine[1]})" if machine else ""
        lines += [f"**{link}:**", ""]
        stale = mark_stale(os.path.relpath(table, RESULTS), text)[1]
        if stale:
            parts = ", ".join(s[0].split(", ", 1)[-1] for s in stale)
            lines += [f"*Stale parts on that page: {parts}.*", ""]
        lines += rows or ["(no layout sweep on this page)"]
        lines.append("")
    triton = os.path.join(RESULTS, "cpp_or_triton.md")
    if os.path.exists(triton):
        with open(triton, encoding="utf-8") as f:
            text = f.read()
        rows = triton_headline(text)
        if rows:
            lines += [
                "**{doc}`C++/CUDA or Triton </cpp_or_triton>` (`make gpu`'s bench part):**",
                "",
            ]
            if mark_stale("cpp_or_triton.md", text)[1]:
                lines += ["*Stale: see that page.*", ""]
            lines += [*rows, ""]
    return "\n".join(lines)


def triton_headline(text: str) -> list[str]:
    """cpp_or_triton.md's layout tables in one table: for each size, how many
    (op, dtype, layout) cells have C++ at or above the fastest of Triton,
    eager and torch.compile (bandwidth, higher is faster), the lowest
    C++ / fastest ratio, and the A/A spread."""
    lines = []
    for size, body in re.findall(
        r"^## Layouts: (2\^\d+) elements.*?\n(.*?)(?=^## |\Z)", text, re.M | re.S
    ):
        rows = [r for r in body.splitlines() if r.startswith("|") and not r.startswith("|---")]
        if len(rows) < 2:
            continue
        header = [c.strip() for c in rows[0].strip("|").split("|")]
        ops, op = [], None
        for name in header[2:-1]:  # "mymul: C++", "Triton", ...; the last is A/A
            if ":" in name:
                op, name = (x.strip() for x in name.split(":"))
            ops.append((op, name))
        cells, controls = [], []
        for row in rows[1:]:
            values = [c.strip() for c in row.strip("|").split("|")]
            dtype, layout, numbers = values[0], values[1], [float(v) for v in values[2:]]
            controls.append(numbers[-1])
            by_op: dict = {}
            for (op, impl), v in zip(ops, numbers[:-1]):
                by_op.setdefault(op, {})[impl] = v
            for op, impls in by_op.items():
                best = max(v for k, v in impls.items() if k != "C++")
                cells.append((impls["C++"] / best, op, dtype, layout))
        if not cells:
            continue
        low = min(cells)
        at_least = sum(round(c[0], 2) >= 1.0 for c in cells)
        lines.append(
            f"| {size} | {at_least} of {len(cells)} | {low[0]:.2f} ({low[1]}, {low[2]}, {low[3]}) "
            f"| {value_range(controls)} |"
        )
    if not lines:
        return []
    return [
        "| GPU, kernels alone | C++ at or above the fastest of Triton, eager and compile "
        "| lowest | A/A |",
        "| --- | --- | --- | --- |",
        *lines,
    ]


def _cpp_or_triton_fragment() -> str:
    """The head of docs/results/cpp_or_triton.md: its title and stamp, then
    its summary (the full tables stay in the file), titles a level down."""
    path = os.path.join(RESULTS, "cpp_or_triton.md")
    if not os.path.exists(path):
        return _missing("The side-by-side measurements", path, _gpu("bench"))
    return (
        f"```{{include}} {_from_srcdir(_results_copy('cpp_or_triton.md'))}\n:heading-offset: 1\n"
        ":end-before: '## Contiguous tensors'\n```\n"
    )


def _conformance_triton_fragment() -> str:
    """The head of docs/results/conformance-triton-gpu.md: the run and its counts."""
    path = os.path.join(RESULTS, "conformance-triton-gpu.md")
    if not os.path.exists(path):
        return _missing("The Triton ops' harness results", path, _gpu("triton"))
    copy = _results_copy("conformance-triton-gpu.md")
    return f"```{{include}} {_from_srcdir(copy)}\n:end-before: '| test file |'\n```\n"


def _docnames_in(pieces: dict[str, str]) -> list[str]:
    return re.findall(r"^/_generated/results/(\S+)$", "\n".join(pieces.values()), re.M)


def generate(app: Sphinx) -> None:
    fragments = os.path.join(GENERATED, "fragments")
    STALE.clear()
    tutorial_dir = os.path.abspath(app.config.tutorial_dir)
    readme, toc = _tutorial_pages(tutorial_dir)
    pieces = {
        "tutorial_readme.md": readme,
        "tutorial_toc.md": toc,
        "schemas.md": _schemas_fragment(),
        "tutorial_matrix.md": _tutorial_matrix_fragment(),
        "compatibility.md": _include_or_missing(
            "compatibility.md", "The Python x torch compatibility table", "make matrix"
        ),
        "conformance.md": _conformance_fragment(),
        "compute_sanitizer.md": _include_or_missing(
            "compute-sanitizer.md", "The compute-sanitizer results", "make compute-sanitizer"
        ),
        "performance.md": _performance_fragment(),
        "performance_headline.md": _performance_headline(),
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
        if f not in written and f != "results":  # results/: the marked copies
            os.remove(os.path.join(fragments, f))


# --------------------------------------------------------------------------
# Word count

WORDCOUNT = "wordcount.json"
STALE_JSON = "stale.json"  # the stale results parts the build found
# Sphinx's own pages, which nobody reads through.
NOT_READ = {"genindex.html", "search.html", "py-modindex.html"}


class _ArticleText(HTMLParser):
    """The text of a page's main article, as a reader meets it: prose, tables
    and code alike (each highlighted token of code is a text node of its own,
    so code counts about as many words as it has tokens)."""

    def __init__(self) -> None:
        super().__init__()
        self.depth = 0  # > 0 inside <article role="main">
        self.skip = 0  # inside <script> or <style>
        self.chunks: list[str] = []

    def handle_starttag(self, tag: str, attrs: list) -> None:
        if self.depth:
            self.depth += tag == "article"
            self.skip += tag in ("script", "style")
        elif tag == "article" and ("role", "main") in attrs:
            self.depth = 1

    def handle_endtag(self, tag: str) -> None:
        if self.depth:
            self.depth -= tag == "article"
            self.skip -= tag in ("script", "style")

    def handle_data(self, data: str) -> None:
        if self.depth and not self.skip:
            self.chunks.append(data)


def page_words(path: str) -> int:
    parser = _ArticleText()
    with open(path, encoding="utf-8") as f:
        parser.feed(f.read())
    return len(" ".join(parser.chunks).split())


def site_words(site: str) -> dict[str, int]:
    """Words per page of a built site, by path relative to it."""
    counts = {}
    for path in sorted(glob.glob(os.path.join(site, "**", "*.html"), recursive=True)):
        rel = os.path.relpath(path, site)
        if rel in NOT_READ or rel.startswith("_static"):
            continue
        counts[rel] = page_words(path)
    return counts


def report_words(app: Sphinx, exception: Exception | None) -> None:
    """Prints the site's word count and writes it to docs/_build/wordcount.json."""
    if exception is not None or app.builder.name != "html":
        return
    counts = site_words(app.outdir)
    total = sum(counts.values())
    largest = sorted(counts.items(), key=lambda kv: -kv[1])[:6]
    print(
        f"docs: {total} words on {len(counts)} pages; largest: "
        + ", ".join(f"{name.removesuffix('.html')} {n}" for name, n in largest)
    )
    path = os.path.join(os.path.dirname(app.doctreedir), WORDCOUNT)
    with open(path, "w", encoding="utf-8") as f:
        json.dump({"total": total, "pages": counts}, f, indent=1)
    stale = sorted(set(STALE))
    for part, why, command in stale:
        print(f"docs: STALE results: {part}: {why}; rerun: {command}")
    if stale:
        print(f"docs: {len(stale)} stale results parts, marked on their pages")
    with open(os.path.join(os.path.dirname(app.doctreedir), STALE_JSON), "w") as f:
        json.dump([{"part": p, "why": w, "rerun": c} for p, w, c in stale], f, indent=1)


def setup(app: Sphinx) -> dict:
    app.add_config_value("tutorial_dir", os.path.join(REPO, "tutorial"), "env")
    app.connect("builder-inited", generate)
    app.connect("build-finished", report_words)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
