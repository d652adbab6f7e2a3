"""Checks the built documentation site, statically and in headless Chromium.

`make docs` must have built docs/_build/html first (`make test` does so).
Every generated page is parsed: each href and src that points inside the site
must name a file that exists (and, for #anchors, an id on that page), and no
page may carry the markers Sphinx leaves where an include or a directive
failed. Then every page is loaded in headless Chromium and must render its
article with no uncaught JavaScript error, and the landing and tutorial pages
are screenshotted to docs/_build/screenshots/ for a human to look at.
"""

import glob
import os
import re
import shutil
import subprocess
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
        "hardening.html",
    }
    assert expected <= pages, f"missing pages: {sorted(expected - pages)}"


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
        "compatibility.md": "compatibility.html",
        "conformance.xml": "conformance.html",
        "perf": "performance.html",
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


def _screenshot_pages() -> list[str]:
    pages = ["index.html", "tutorial/index.html", "conformance.html", "troubleshooting.html"]
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
