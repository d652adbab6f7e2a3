"""Checks the built documentation site, statically and in headless Chromium.

`make docs` must have built docs/_build/html first (`make test` does so).
Every generated page is parsed: each href and src that points inside the site
must name a file that exists (and, for #anchors, an id on that page), and no
page may carry the markers Sphinx leaves where an include or a directive
failed. Then every page is loaded in headless Chromium and must render its
article with no uncaught JavaScript error, and the landing and tutorial pages
are screenshotted at 1280 px to docs/_build/screenshots/ for a human to look at
(the Tutorial page holds the stage matrix, which must fit that width).
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
    pytest.fail("no Chromium on PATH: run `make docs-deps` (apt-get install chromium)")


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
        "anatomy.html",
        "stable_abi.html",
        "autodiff.html",
        "aoti.html",
        "hardening.html",
        "cpp_or_triton.html",
    }
    assert expected <= pages, f"missing pages: {sorted(expected - pages)}"


TOP_LEVEL = [
    "Getting started",
    "Tutorial",
    "Copy this for your own op",
    "Check your own op in ten lines",
    "API reference",
    "Conformance",
    "Compatibility",
    "Classic or stable ABI?",
    "C++/CUDA or Triton?",
    "Performance",
    "Troubleshooting",
]


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


def test_results_pages_nest_under_performance_and_compatibility(site: str) -> None:
    results = sorted(glob.glob(os.path.join(site, "_generated", "results", "*.html")))
    assert results, "no results pages"
    for parent in ("performance.html", "compatibility.html"):
        with open(os.path.join(site, parent), encoding="utf-8") as f:
            html = f.read()
        article = html[html.index('role="main"') :]
        linked = {
            os.path.basename(p)
            for p in results
            if f"_generated/results/{os.path.basename(p)}" in article
        }
        assert linked, f"{parent} links to no results page"
    second = _sidebar_entries("performance.html", 2)
    assert any(e.startswith("Benchmarks") for e in second), second


def test_side_paths_have_pages_after_step_5(site: str) -> None:
    sides = sorted(
        os.path.basename(os.path.dirname(d))
        for d in glob.glob(os.path.join(TUTORIAL, "appendix", "*", "README.md"))
    )
    assert sides, "no tutorial/appendix/*/README.md"
    with open(os.path.join(site, "tutorial", "index.html"), encoding="utf-8") as f:
        index = f.read()
    article = index[index.index('role="main"') :]
    last_step = article.index("_generated/tutorial/05_")
    for side in sides:
        href = f"_generated/tutorial/appendix_{side}.html"
        assert href in article, f"the Tutorial page does not link to {href}"
        assert article.index(href) > last_step, f"{href} comes before step 5"
        with open(os.path.join(site, href), encoding="utf-8") as f:
            html = f.read()
        assert f"tutorial/appendix/{side}/" in html, f"{side}: no source listing"
        assert "Test results" in html, f"{side}: no test results section"


def test_matrix_cells_are_marks_with_footnotes(site: str) -> None:
    with open(os.path.join(site, "tutorial", "index.html"), encoding="utf-8") as f:
        html = f.read()
    table = html[html.index("<table") : html.index("</table>")]
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
        assert f"tutorial/{stage}/" in html, f"{stage}: no source listing on its page"


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
        "tutorial_matrix.md": "conformance.html",
        "tutorial_matrix_gpu.md": "conformance.html",
        "compatibility.md": "compatibility.html",
        "conformance.xml": "conformance.html",
        "conformance-stable.xml": "conformance.html",
        "perf": "performance.html",
        "cpp_or_triton.md": "cpp_or_triton.html",
        "conformance-triton-gpu.xml": "cpp_or_triton.html",
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
  d.querySelectorAll("article table").forEach(function (t) {{
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
    assert tables, "no table on the Tutorial page"
    table_width, wrapper_width, wrapper_scroll, page_scroll, page_width = tables[0]
    assert wrapper_scroll <= wrapper_width, f"the matrix scrolls: {tables[0]}"
    assert page_scroll <= page_width, f"the page scrolls sideways: {tables[0]}"
    assert table_width <= 1280


def _screenshot_pages() -> list[str]:
    pages = [
        "index.html",
        "tutorial/index.html",
        "copy_your_own_op.html",
        "check_your_op.html",
        "anatomy.html",
        "stable_abi.html",
        "autodiff.html",
        "conformance.html",
        "performance.html",
        "troubleshooting.html",
    ]
    pages += sorted(
        _rel(p) for p in glob.glob(os.path.join(SITE, "_generated", "tutorial", "*.html"))
    )
    return pages


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
