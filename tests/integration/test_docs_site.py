"""The documentation site in a real browser: built with ``mkdocs build --strict`` into a temporary directory, served
from it over local HTTP (as ``make docs-serve`` does), and opened in Debian's Chromium through Playwright.

Every page opened must render (a title, an ``<h1>``, text in the article), load everything it asks for from the
site (no 404, no failed request, no uncaught script error, nothing fetched from another host: the site reads
offline), and show its images (the benchmark charts) decoded. Every link of those pages that stays in the site
must answer 200, and a link to a section must find that section's id on its page.
"""

from __future__ import annotations

import functools
import re
import threading
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import urldefrag, urlsplit

import httpx
import pytest

from tests.docs_build import built_site
from tests.integration.browser import chromium
from tests.integration.inspector_pages import new_page

sync_api = pytest.importorskip("playwright.sync_api", reason="the browser tests need playwright: `make install`")
pytest.importorskip("mkdocs", reason="the site needs mkdocs: pip install -e '.[docs]' (make install does)")
pytest.importorskip("material", reason="the site needs mkdocs-material: pip install -e '.[docs]'")
pytest.importorskip("mkdocstrings", reason="the site needs mkdocstrings: pip install -e '.[docs]'")

pytestmark = pytest.mark.integration
ROOT = Path(__file__).resolve().parents[2]
PAGES = ("index.html", "getting-started/", "benchmarks/", "benchmarks/results/", "reference/python/",
         "reference/cli/", "reference/http/", "reference/configuration/", "reference/settings/",
         "reference/events/", "reference/errors/")


class _QuietHandler(SimpleHTTPRequestHandler):
    def log_message(self, format: str, *args) -> None:  # noqa: A002 - the base class's name
        pass


@pytest.fixture(scope="module")
def site() -> Path:
    """The site as ``make docs`` builds it (the generated reference pages first), in strict mode: the session's
    one build (:func:`tests.docs_build.built_site`)."""
    build = built_site()
    assert build.returncode == 0, build.output
    return build.site


@pytest.fixture(scope="module")
def served(site):
    """The built site over HTTP on a free local port: directory links resolve to their index.html, a missing
    file is a real 404."""
    server = ThreadingHTTPServer(("127.0.0.1", 0), functools.partial(_QuietHandler, directory=str(site)))
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}/"
    server.shutdown()
    server.server_close()


@pytest.fixture(scope="module")
def browser():
    yield from chromium(sync_api)


def visit(browser, url: str):
    """Open ``url``; the page with what went wrong while it loaded: ``bad`` responses (4xx/5xx), ``failed``
    requests, ``foreign`` requests (to another host, refused: the site must read offline) and script ``errors``."""
    page = new_page(browser)
    page.bad, page.failed, page.foreign = [], [], []
    host = urlsplit(url).netloc

    def route(r):
        if urlsplit(r.request.url).netloc == host or r.request.url.startswith(("data:", "blob:")):
            r.continue_()
        else:
            page.foreign.append(r.request.url)
            r.abort()

    page.route("**/*", route)
    page.on("response", lambda r: r.status >= 400 and page.bad.append(f"{r.status} {r.url}"))
    page.on("requestfailed", lambda r: urlsplit(r.url).netloc == host and page.failed.append(r.url))
    response = page.goto(url, wait_until="load")
    assert response is not None and response.status == 200, url
    return page


def in_site_links(page, base: str) -> set[str]:
    hrefs = page.eval_on_selector_all("a[href]", "links => links.map(a => a.href)")
    return {h for h in hrefs if h.startswith(base)}


@pytest.fixture(scope="module")
def opened(browser, served):
    """Each page of PAGES opened once: ``{path: (title, h1, article text, links, images, problems)}``."""
    seen = {}
    for path in PAGES:
        page = visit(browser, served + path)
        page.wait_for_selector("article h1")
        images = page.eval_on_selector_all(
            "article img", "imgs => imgs.map(i => ({src: i.currentSrc || i.src, width: i.naturalWidth, "
                           "complete: i.complete}))")
        seen[path] = {"title": page.title(), "h1": page.inner_text("article h1"),
                      "text": page.inner_text("article"), "links": in_site_links(page, served), "images": images,
                      "problems": {"bad": page.bad, "failed": page.failed, "foreign": page.foreign,
                                   "errors": page.errors}}
        page.context.close()
    return seen


def test_every_page_renders_with_a_title_a_heading_and_content(opened):
    for path, page in opened.items():
        assert page["title"].strip() and page["title"].endswith("Palimpsest"), (path, page["title"])
        assert page["h1"].strip(), path
        assert len(page["text"].strip()) > len(page["h1"]) + 40, (path, page["text"][:200])
    assert "Command line" in opened["reference/cli/"]["h1"]
    assert "palimpsest keys create" in opened["reference/cli/"]["text"]
    assert "message_recorded" in opened["reference/events/"]["text"]


def test_every_page_loads_all_it_asks_for_from_the_site_and_nothing_from_elsewhere(opened):
    problems = {path: page["problems"] for path, page in opened.items() if any(page["problems"].values())}
    assert problems == {}


def test_every_link_within_the_site_resolves_and_every_section_link_finds_its_section(opened, served):
    links = set().union(*(page["links"] for page in opened.values()))
    assert len(links) > 40  # the navigation alone links every page
    pages: dict[str, tuple[int, str]] = {}
    with httpx.Client(timeout=30) as client:
        for link in sorted(links):
            url, _ = urldefrag(link)
            if url not in pages:
                r = client.get(url)
                pages[url] = (r.status_code, r.text if "html" in r.headers.get("content-type", "") else "")
    assert {url: status for url, (status, _) in pages.items() if status != 200} == {}
    missing = []
    for link in links:
        url, fragment = urldefrag(link)
        html = pages[url][1]
        if fragment and html and not re.search(rf'id="{re.escape(fragment)}"', html):
            missing.append(link)
    assert sorted(missing) == []


def test_the_benchmark_charts_load(opened, site):
    results = opened["benchmarks/results/"]
    expected = re.findall(r"!\[[^\]]*\]\(([^)]+\.png)\)", (ROOT / "docs" / "benchmarks" / "results.md").read_text(
        encoding="utf-8"))
    assert expected, "docs/benchmarks/results.md shows no chart: run python -m benchmarks.report"
    shown = {img["src"].rsplit("/", 1)[-1]: img for img in results["images"]}
    assert sorted(shown) == sorted(expected)
    assert [name for name, img in shown.items() if not (img["complete"] and img["width"] > 0)] == []
    assert all((site / "benchmarks" / name).is_file() for name in expected)
    overview = opened["benchmarks/"]
    assert any(link.rstrip("/").endswith("benchmarks/results") for link in overview["links"])
