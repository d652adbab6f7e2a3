"""Checks the built documentation site, statically and in headless Chromium.

`make docs` must have built docs/_build/html first (`make test` does so).
Every generated page is parsed: each href and src that points inside the site
must name a file that exists (and, for #anchors, an id on that page), and no
page may carry the markers Sphinx leaves where an include or a directive
failed. The site must stay readable in one sitting (its word count), keep
its reading order, and link PyTorch's own docs where their APIs first
appear. Then every page is loaded in headless Chromium and must render its
article with no uncaught JavaScript error, and the index, Getting started,
the Tutorial, one tutorial step and Performance are screenshotted at 1280 px
to docs/_build/screenshots/ for a human to look at (the Tutorial page holds
the stage matrix, which must fit that width). Without Chromium the browser
checks skip, saying how to install it, except under CI (CI=true), where they
must run.
"""

import glob
import json
import os
import re
import shutil
import subprocess
from html import unescape
from html.parser import HTMLParser
from urllib.parse import unquote, urlsplit

import pytest

from tools.docs import generate  # the word count the build prints

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
DOCS = os.path.join(REPO, "docs")
SITE = os.path.join(DOCS, "_build", "html")
SCREENSHOTS = os.path.join(DOCS, "_build", "screenshots")
TUTORIAL = os.environ.get("TUTORIAL_DIR", os.path.join(REPO, "tutorial"))

# What Sphinx and docutils put in the HTML when something went wrong but the
# build went on (the build fails on these too, under -W; this catches a site
# built without it).
FAILURE_MARKERS = [
    'class="system-message"',
    'class="problematic"',
    "Include file",
    "not found or reading it failed",
]


class _Links(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.links: list[tuple[str, str]] = []  # (tag.attr, url)
        self.ids: set[str] = set()

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        for name, value in attrs:
            if value is None:
                continue
            if name == "id":
                self.ids.add(value)
            elif name in ("href", "src") and tag in (
                "a",
                "link",
                "script",
                "img",
                "source",
                "iframe",
            ):
                self.links.append((f"{tag}.{name}", value))


def _parse(path: str) -> _Links:
    parser = _Links()
    with open(path, encoding="utf-8") as f:
        parser.feed(f.read())
    return parser


def _pages() -> list[str]:
    return sorted(glob.glob(os.path.join(SITE, "**", "*.html"), recursive=True))


def _rel(page: str) -> str:
    return os.path.relpath(page, SITE)


@pytest.fixture(scope="session")
def site() -> str:
    if not os.path.exists(os.path.join(SITE, "index.html")):
        pytest.fail(f"no built site in {SITE}: run `make docs` first")
    return SITE


@pytest.fixture(scope="session")
def chromium() -> str:
    for name in ("chromium", "chromium-browser", "google-chrome"):
        path = shutil.which(name)
        if path:
            return path
    why = (
        "no Chromium on PATH: install it to run the browser checks "
        "(as root: make docs-deps, or apt-get install chromium)"
    )
    if os.environ.get("CI"):
        pytest.fail(f"{why}; CI must run them")
    pytest.skip(why)


def _run_chromium(chromium: str, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [
            chromium,
            "--headless",
            "--no-sandbox",  # CI runs as root
            "--disable-gpu",
            "--hide-scrollbars",
            "--enable-logging=stderr",
            "--v=0",
            *args,
        ],
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_expected_pages_exist(site: str) -> None:
    pages = {_rel(p) for p in _pages()}
    expected = {
        "index.html",
        "getting_started.html",
        "tutorial/index.html",
        "api.html",
        "conformance.html",
        "compatibility.html",
        "performance.html",
        "troubleshooting.html",
        "copy_your_own_op.html",
        "check_your_op.html",
        "what_the_harness_found.html",
        "anatomy.html",
        "stable_abi.html",
        "ship_wheels.html",
        "autodiff.html",
        "aoti.html",
        "hardening.html",
        "cpp_or_triton.html",
    }
    assert expected <= pages, f"missing pages: {sorted(expected - pages)}"


# The sidebar, in reading order: learn, then make your own, then look things up.
TOP_LEVEL = [
    "Getting started",
    "Tutorial",
    "Anatomy of a call",
    "Every autodiff mode",
    "Copy this for your own op",
    "Check your own op in ten lines",
    "What the harness found",
    "Classic or stable ABI?",
    "C++/CUDA or Triton?",
    "Ship wheels for your package",
    "Deploy without Python: AOTInductor",
    "API reference",
    "Conformance",
    "Compatibility matrix",
    "Performance",
    "Troubleshooting",
]
WORD_BUDGET = 32_000


def _sidebar_entries(page: str, level: int) -> list[str]:
    with open(os.path.join(SITE, page), encoding="utf-8") as f:
        html = f.read()
    sidebar = html[html.index('class="sidebar-tree"') :]
    sidebar = sidebar[: sidebar.index("</nav>")] if "</nav>" in sidebar else sidebar
    return re.findall(
        rf'class="toctree-l{level}[^"]*"><a class="[^"]*reference internal" href="[^"]*">([^<]*)<',
        sidebar,
    )


def test_sidebar_top_level_in_reading_order(site: str) -> None:
    assert _sidebar_entries("getting_started.html", 1) == TOP_LEVEL


def test_api_reference_is_the_api_alone(site: str) -> None:
    """Anatomy, Autodiff and AOTInductor are guides (top-level pages, see
    TOP_LEVEL), not sub-pages of the API reference."""
    assert "toctree-wrapper" not in _article(site, "api.html")


def test_results_pages_nest_under_performance(site: str) -> None:
    results = sorted(glob.glob(os.path.join(site, "_generated", "results", "*.html")))
    assert results, "no results pages"
    with open(os.path.join(site, "performance.html"), encoding="utf-8") as f:
        html = f.read()
    article = html[html.index('role="main"') :]
    for page in results:
        assert f"_generated/results/{os.path.basename(page)}" in article, page
    second = [e for e in _sidebar_entries("performance.html", 2) if e.startswith("Results: ")]
    assert len(second) == len(results), f"the sidebar lists {second} under Performance"


def test_one_results_page_per_kind_of_machine(site: str) -> None:
    """At most one page for each of the 2-core CPU, the 16-core CPU and the GPU."""
    pages = sorted(
        os.path.basename(p) for p in glob.glob(os.path.join(site, "_generated", "results", "*"))
    )
    kinds = [re.sub(r"\.html$", "", p) for p in pages if p.endswith(".html")]
    assert all(re.fullmatch(r"cpu-\d+cores|cuda", k) for k in kinds), kinds
    assert len(kinds) <= 3, kinds


def test_site_reads_in_one_sitting(site: str) -> None:
    """The budget the docs build prints: every page's article, code included."""
    counts = generate.site_words(site)
    total = sum(counts.values())
    with open(os.path.join(DOCS, "_build", generate.WORDCOUNT), encoding="utf-8") as f:
        assert json.load(f)["total"] == total, "wordcount.json is not this build's"
    largest = sorted(counts.items(), key=lambda kv: -kv[1])[:5]
    assert total <= WORD_BUDGET, f"{total} words (budget {WORD_BUDGET}); largest: {largest}"


def test_every_stale_results_part_is_marked(site: str) -> None:
    """The build lists stale results parts (docs/_build/stale.json, printed by
    make docs); each must carry its warning on the page that shows it."""
    with open(os.path.join(DOCS, "_build", generate.STALE_JSON), encoding="utf-8") as f:
        stale = json.load(f)
    marks = 0
    for page in _pages():
        with open(page, encoding="utf-8") as f:
            marks += f.read().count("<strong>Stale</strong>:")
    assert marks == len(stale), f"{marks} marks on the pages for {len(stale)} stale parts"


def _reading_order(site: str) -> list[str]:
    with open(os.path.join(site, "index.html"), encoding="utf-8") as f:
        html = f.read()
    sidebar = html[html.index('class="sidebar-tree"') :]
    hrefs = re.findall(r'<a class="reference internal" href="([^"#]+)', sidebar)
    return list(dict.fromkeys(["index.html", *hrefs]))


def _article(site: str, page: str) -> str:
    """The page's main article, without the theme's sidebar and footer."""
    with open(os.path.join(site, page), encoding="utf-8") as f:
        html = f.read()
    article = html[html.index('role="main"') :]
    return article[: article.rindex("</article>")]


def _prose(article: str) -> str:
    """An article's HTML without its code: what MyST rendered from prose."""
    return re.sub(r"<(pre|code)\b.*?</\1>", "", article, flags=re.S)


@pytest.mark.parametrize("page", [_rel(p) for p in _pages()] or ["<no pages>"])
def test_no_markup_reaches_the_page_unrendered(site: str, page: str) -> None:
    """A role MyST did not parse ({download}`...` whose label held backticks)
    shows as text; a dunder outside backticks (__init__) becomes bold init."""
    prose = _prose(_article(site, page))
    roles = re.findall(r"\{[a-z][\w:-]*\}`", unescape(re.sub(r"<[^>]+>", "", prose)))
    assert not roles, f"{page}: raw MyST roles in the text: {roles}"
    dunders = re.findall(r"[\w/.]<strong>\w+</strong>|<strong>\w+</strong>[\w.(]", prose)
    assert not dunders, f"{page}: a __name__ outside backticks, rendered bold: {dunders}"


def test_api_descriptions_are_not_repeated(site: str) -> None:
    """ "a, b, c: text" in a docstring's Args must stay one entry, not the same
    text under three names (napoleon's :param: fields split it)."""
    for page in ("api.html", "check_your_op.html"):
        article = _article(site, page)
        for fields in re.findall(r'<dl class="field-list[^"]*">(.*?)</dl>', article, re.S):
            items = [
                unescape(re.sub(r"<[^>]+>", "", i))
                for i in re.findall(r"<li>(.*?)</li>", fields, re.S)
            ]
            said = [re.split(r" [–-] ", i, maxsplit=1)[-1].strip() for i in items]
            repeated = {s[:80] for s in said if s and said.count(s) > 1}
            assert not repeated, f"{page}: descriptions repeated under several names: {repeated}"


@pytest.mark.parametrize(
    ("term", "target"),
    [
        ("opcheck", "library.html#torch.library.opcheck"),
        ("register_fake", "library.html#torch.library.register_fake"),
        ("OpOverload", "library.html"),
    ],
)
def test_torch_library_linked_where_first_met(site: str, term: str, target: str) -> None:
    """The first page (in reading order) that names one of torch.library's
    concepts links PyTorch's own documentation of it."""
    for page in _reading_order(site):
        article = _article(site, page)
        if term in unescape(re.sub(r"<[^>]+>", "", article)):
            links = re.findall(
                r'<a class="reference external" href="([^"]+)"[^>]*>(.*?)</a>', article, re.S
            )
            assert any(
                href.startswith("https://docs.pytorch.org/docs/stable/")
                and href.endswith(target)
                and term in re.sub(r"<[^>]+>", "", text)
                for href, text in links
            ), f"{page} is where {term} first appears; it should link {target}"
            return
    pytest.fail(f"no page names {term}")


def test_api_shows_parameters_once_per_function(site: str) -> None:
    article = _article(site, "api.html")
    functions = re.split(r'<dl class="py function">', article)[1:]
    assert len(functions) == 3, "expected mymuladd, mymul, myadd_out"
    for body in functions:
        assert body.count(">Parameters<") <= 1, body[:300]


def test_getting_started_takes_a_reader_to_make_tutorial(site: str) -> None:
    text = unescape(re.sub(r"<[^>]+>", "", _article(site, "getting_started.html")))
    for needed in ("git clone", "make tutorial", "Python 3.", "CUDA toolkit", "C++"):
        assert needed in text, needed
    assert not re.search(r"\b[A-Z]+_(TIME|TOTAL|VENV|CACHE)\b|DOWNLOAD\b", text), (
        "an unfilled measurement"
    )
    assert re.search(r"\d+ min", text), "what make tutorial costs in time"
    assert re.search(r"\d+(\.\d+)? GB", text), "what make tutorial costs in disk"


def test_index_offers_both_on_ramps_before_anything_else(site: str) -> None:
    """A learner goes to Getting started and the tutorial; someone with an op
    of their own goes to Check your own op, which needs no make tutorial."""
    article = _article(site, "index.html")
    start = article.index('id="where-to-start"')
    ramps = article[start : article.index("<section", start)]
    for href in ("getting_started.html", "tutorial/index.html", "check_your_op.html"):
        assert f'href="{href}' in ramps, f"the index's on-ramps do not link {href}"
    assert start < article.index('id="do-you-need-a-custom-op-at-all"')
    text = unescape(re.sub(r"<[^>]+>", "", ramps))
    assert "pip install" in text
    assert "pytest" in text
    getting_started = _article(site, "getting_started.html")
    first = getting_started[: getting_started.index("<h2")]
    assert 'href="check_your_op.html' in first, "Getting started should send an op's owner on"


def test_every_step_links_onward(site: str) -> None:
    """Each step ends with "Next:" and a link, the last one included."""
    stages = sorted(glob.glob(os.path.join(site, "_generated", "tutorial", "[0-9][0-9]_*.html")))
    assert stages, "no tutorial steps"
    for page in stages:
        article = _article(site, _rel(page))
        assert re.search(r"<p>Next:[^<]*(<[^a][^>]*>[^<]*)*<a ", article), (
            f"{_rel(page)} has no 'Next:' link"
        )


def test_matrix_cells_are_marks_with_footnotes(site: str) -> None:
    with open(os.path.join(site, "tutorial", "index.html"), encoding="utf-8") as f:
        html = f.read()
    matrix = html[html.index('class="stage-matrix') :]
    table = matrix[matrix.index("<table") : matrix.index("</table>")]
    cells = re.findall(r"<td[^>]*>(.*?)</td>", table, re.S)
    body = [re.sub(r"<[^>]+>", "", c).strip() for c in cells]
    marks = [c for c in body if not re.match(r"^(0\d_\w+|reference)$", c)]
    assert marks, "no matrix cells"
    for cell in marks:
        assert cell[:1] in ("✓", "✗", "–"), f"not a mark: {cell!r}"
        assert re.sub(r"[\d\s\[\]]", "", cell) == cell[0], f"more than a mark: {cell!r}"
    assert "✗" in "".join(marks)
    assert 'class="footnote-reference' in table, "a ✗ has no footnote"
    text = unescape(re.sub(r"<[^>]+>", "", html))
    assert "Could not run 'extension_cpp::mymuladd' with arguments from the 'CPU'" in text, (
        "the footnotes do not show the real error"
    )


def test_one_page_per_tutorial_checkpoint(site: str) -> None:
    stages = sorted(os.path.basename(d) for d in glob.glob(os.path.join(TUTORIAL, "[0-9][0-9]_*")))
    for stage in stages:
        page = os.path.join(site, "_generated", "tutorial", f"{stage}.html")
        assert os.path.exists(page), f"no page for tutorial/{stage}"
        with open(page, encoding="utf-8") as f:
            html = f.read()
        assert f"tutorial/{stage}/" in html, f"{stage}: no links to its files"
        # The prose and one diff (the README's), the files a click away.
        assert html.count('class="highlight-diff') <= 1, f"{stage}: more than one diff"
        assert 'class="code-block-caption"' not in html, f"{stage}: a file shown in full"
        downloads = re.findall(r'class="reference download internal"[^>]*href="([^"]+)"', html)
        assert downloads, f"{stage}: its files are not linked"
        for href in downloads:
            assert os.path.exists(os.path.join(os.path.dirname(page), unquote(href))), href


@pytest.mark.parametrize("page", [_rel(p) for p in _pages()] or ["<no pages>"])
def test_page_links_resolve(site: str, page: str) -> None:
    path = os.path.join(site, page)
    parsed = _parse(path)
    with open(path, encoding="utf-8") as f:
        html = f.read()
    for marker in FAILURE_MARKERS:
        assert marker not in html, f"{page}: contains {marker!r}, left by a failed directive"
    broken = []
    for where, url in parsed.links:
        parts = urlsplit(url)
        if parts.scheme or parts.netloc or url.startswith(("mailto:", "javascript:", "data:")):
            continue
        target = (
            os.path.normpath(os.path.join(os.path.dirname(path), unquote(parts.path)))
            if parts.path
            else path
        )
        if os.path.isdir(target):
            target = os.path.join(target, "index.html")
        if not os.path.exists(target):
            broken.append(f"{where}={url} (no file {_rel(target)})")
        elif parts.fragment and target.endswith(".html"):
            if unquote(parts.fragment) not in _parse(target).ids:
                broken.append(f"{where}={url} (no id {parts.fragment!r} in {_rel(target)})")
    assert not broken, f"{page}: broken links:\n  " + "\n  ".join(broken)


def test_results_are_shown_where_they_exist(site: str) -> None:
    """A results file that exists must be rendered, not reported as missing."""
    pages = {
        "tutorial_matrix.md": "tutorial/index.html",
        "tutorial_matrix_gpu.md": "tutorial/index.html",
        "compatibility.md": "compatibility.html",
        "compute-sanitizer.md": "hardening.html",
        "conformance.md": "conformance.html",
        "conformance-stable.md": "conformance.html",
        "conformance-gpu.md": "conformance.html",
        "perf": "performance.html",
        "cpp_or_triton.md": "cpp_or_triton.html",
        "conformance-triton-gpu.md": "cpp_or_triton.html",
    }
    for name, page in pages.items():
        with open(os.path.join(site, page), encoding="utf-8") as f:
            html = f.read()
        exists = os.path.exists(os.path.join(DOCS, "results", name))
        said_missing = f"docs/results/{name}</span></code> does not exist" in html
        assert said_missing != exists, (
            f"{page}: docs/results/{name} exists={exists}, page says missing={said_missing}"
        )


@pytest.mark.parametrize(
    "page", [_rel(p) for p in _pages() if "_static" not in p] or ["<no pages>"]
)
def test_page_renders_in_chromium(site: str, chromium: str, page: str) -> None:
    result = _run_chromium(chromium, "--dump-dom", "file://" + os.path.join(site, page))
    assert result.returncode == 0, (
        f"{page}: chromium exited {result.returncode}:\n{result.stderr[-2000:]}"
    )
    assert re.search(r"<article[^>]*role=\"main\"", result.stdout), (
        f"{page}: no main article in the DOM"
    )
    errors = [line for line in result.stderr.splitlines() if "Uncaught" in line]
    assert not errors, f"{page}: JavaScript errors:\n" + "\n".join(errors)


_FIT_PROBE = """<html><body style="margin:0">
<iframe id="f" src="{url}" style="width:1280px;height:1600px;border:0"></iframe>
<script>
document.getElementById("f").onload = function () {{
  var d = this.contentDocument, out = [];
  d.querySelectorAll("article div.stage-matrix table").forEach(function (t) {{
    var w = t.closest(".table-wrapper") || t.parentElement;
    out.push([t.getBoundingClientRect().width, w.clientWidth, w.scrollWidth,
              d.documentElement.scrollWidth, d.documentElement.clientWidth]);
  }});
  document.body.setAttribute("data-tables", JSON.stringify(out));
}};
</script></body></html>"""


def test_matrix_fits_1280px(site: str, chromium: str, tmp_path) -> None:
    """The matrix table needs no horizontal scrolling in a 1280 px window."""
    probe = tmp_path / "probe.html"
    probe.write_text(
        _FIT_PROBE.format(url="file://" + os.path.join(site, "tutorial", "index.html"))
    )
    result = _run_chromium(
        chromium,
        "--allow-file-access-from-files",
        "--virtual-time-budget=10000",
        "--window-size=1300,1700",
        "--dump-dom",
        f"file://{probe}",
    )
    found = re.search(r'data-tables="([^"]*)"', result.stdout)
    assert found, f"the probe did not run:\n{result.stderr[-2000:]}"
    tables = json.loads(unescape(found.group(1)))
    assert tables, "no stage matrix on the Tutorial page"
    table_width, wrapper_width, wrapper_scroll, page_scroll, page_width = tables[0]
    assert wrapper_scroll <= wrapper_width, f"the matrix scrolls: {tables[0]}"
    assert page_scroll <= page_width, f"the page scrolls sideways: {tables[0]}"
    assert table_width <= 1280


def _screenshot_pages() -> list[str]:
    """The pages a newcomer meets first, the one with the widest table, and the
    choice of ABI."""
    return [
        "index.html",
        "getting_started.html",
        "tutorial/index.html",
        "_generated/tutorial/03_fake.html",
        "performance.html",
        "stable_abi.html",
    ]


@pytest.mark.parametrize("page", _screenshot_pages())
def test_screenshot(site: str, chromium: str, page: str) -> None:
    os.makedirs(SCREENSHOTS, exist_ok=True)
    png = os.path.join(SCREENSHOTS, page.replace("/", "_").replace(".html", ".png"))
    if os.path.exists(png):
        os.remove(png)
    result = _run_chromium(
        chromium,
        "--window-size=1280,1600",
        f"--screenshot={png}",
        "file://" + os.path.join(site, page),
    )
    assert result.returncode == 0, (
        f"{page}: chromium exited {result.returncode}:\n{result.stderr[-2000:]}"
    )
    with open(png, "rb") as f:
        assert f.read(8) == b"\x89PNG\r\n\x1a\n", f"{png} is not a PNG"
    assert os.path.getsize(png) > 10_000, f"{png} is suspiciously small: a blank page?"
