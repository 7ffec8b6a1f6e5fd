"""The memory inspector at /ui in a real browser (Debian's Chromium driven by Playwright) on a real served store.

One served store (local Ray, Ray Serve, a DuckDB log, LanceDB; one shard;
the hash embedder: no assertion here needs the real model) and one browser
for the module. Tenant ``demo`` holds the shipped sample dialogue, tenant ``beta`` a
user with the same id whose turns carry a marker; every page is read with
one tenant's key and must show nothing of the other. What the page shows is
checked against what the API answers, never against numbers written here.
Screenshots go to ``$PALIMPSEST_SCREENSHOTS`` (default: a temporary directory).
"""

from __future__ import annotations

import os
from importlib import resources
from pathlib import Path

import httpx
import pytest

from palimpsest.formats import read_jsonl
from palimpsest.server.admission import READ, Overloaded
from palimpsest.server.admission_http import overloaded
from palimpsest.server.keys import KeyRing
from palimpsest.server.run import start
from palimpsest.server.settings import ServeSettings
from tests.integration.inspector_pages import (
    graph_boxes, inside, new_page, open_view, overlapping_labels, sign_in, tab_to,
)
from tests.integration.browser import chromium
from tests.serve_helpers import free_port

sync_api = pytest.importorskip("playwright.sync_api", reason="the browser tests need playwright: `make install`")
pytestmark = pytest.mark.integration
JUNE = "2024-06-01T00:00:00+00:00"
BETA = ["BETAMARK I prefer oolong tea in the morning", "BETAMARK we decided to use Kotlin for Orion",
        "BETAMARK 我喜欢周末去海边散步"]
DEMO_MARKS = ["Atlas", "PostgreSQL", "Neovim", "麻婆豆腐"]  # words only the demo tenant's dialogue holds


@pytest.fixture(scope="module")
def world(ray_cluster, tmp_path_factory):
    store = tmp_path_factory.mktemp("inspector") / "store"
    # One shard: both tenants' users share its log and its LanceDB table, the harder case for isolation.
    running = start(ServeSettings(store=str(store), port=free_port()), embedder="hash", num_shards=1)
    ring = KeyRing(store)
    keys = {"demo": ring.create("demo")[0], "beta": ring.create("beta")[0]}
    client = httpx.Client(base_url=running.url, timeout=120)
    with resources.as_file(resources.files("palimpsest") / "data" / "sample_dialogue.jsonl") as path:
        sample = [{k: v for k, v in m.items() if k not in ("tenant", "user_id")} for m in read_jsonl(Path(path))]
    beta = [{"text": t, "occurred_at": f"2024-03-0{i + 5}T09:00:00+00:00", "speaker": "Maya"} for i, t in enumerate(BETA)]
    apis = {t: _Api(client, keys[t]) for t in keys}
    demo_ids = apis["demo"].post("/v1/users/maya/messages", {"messages": sample})["memory_ids"]
    apis["beta"].post("/v1/users/maya/messages", {"messages": beta})
    apis["demo"].post("/v1/users/maya/context", {"query": "What does Maya drink in the morning?", "token_budget": 200,
                                                  "now": "2024-05-10T00:00:00+00:00"})
    apis["demo"].post("/v1/consolidate", {})  # node merges, links, conclusions in the demo tenant's graph
    apis["demo"].post("/v1/archive/sweep", {"user_id": "maya", "now": JUNE})
    yield {"url": running.url, "keys": keys, "api": apis, "memory": running.memory, "demo_ids": demo_ids}
    client.close()
    running.stop()


class _Api:
    def __init__(self, client: httpx.Client, key: str) -> None:
        self.client, self.headers = client, {"Authorization": f"Bearer {key}"}

    def get(self, path: str) -> dict:
        r = self.client.get(path, headers=self.headers)
        assert r.status_code == 200, r.text
        return r.json()

    def post(self, path: str, body: dict) -> dict:
        r = self.client.post(path, json=body, headers=self.headers)
        assert r.status_code == 200, r.text
        return r.json()


@pytest.fixture(scope="module")
def browser():
    yield from chromium(sync_api)


@pytest.fixture(scope="module")
def shots(tmp_path_factory) -> Path:
    where = os.environ.get("PALIMPSEST_SCREENSHOTS")
    path = Path(where) if where else tmp_path_factory.mktemp("inspector-screenshots")
    path.mkdir(parents=True, exist_ok=True)
    return path


def test_search_shows_each_hit_s_score_terms_and_the_assembled_context(world, browser, shots):
    page = sign_in(new_page(browser), world, "demo")
    query = "What does Maya drink in the morning?"
    page.fill("#q", query)
    # Compared with the search the page itself made: every search and context records touches, so a second search
    # asked after them may order two near-tied hits the other way (retention moved).
    with page.expect_response(lambda r: r.url.endswith("/v1/users/maya/search")) as answered:
        page.press("#q", "Enter")  # the keyboard submits the form
    page.wait_for_selector(".hit")
    hits = answered.value.json()["hits"]
    shown = page.locator(".hit")
    assert shown.count() == len(hits) > 0
    for i, hit in enumerate(hits):
        row = shown.nth(i)
        assert row.locator(".hit-text").inner_text() == hit["text"]
        segments = row.locator(".seg")
        assert [segments.nth(j).get_attribute("data-term") for j in range(segments.count())] == list(hit["terms"])
    tokens, budget = page.inner_text(".tokens").split(" tokens")[0].split(" / ")
    assert 0 < int(tokens) <= int(budget) == 300 and page.inner_text("#context-text").strip()
    page.screenshot(path=str(shots / "search.png"), full_page=True)
    phone = sign_in(new_page(browser, width=390, height=844), world, "demo")
    phone.fill("#q", "麻婆豆腐一定要做吗？")
    phone.click("#search-form button[type=submit]")
    phone.wait_for_selector(".hit")
    assert phone.evaluate("document.documentElement.scrollWidth <= window.innerWidth")
    assert "麻婆豆腐" in phone.inner_text("#results")
    phone.screenshot(path=str(shots / "search-phone.png"), full_page=True)
    assert page.errors == [] and phone.errors == []


def test_a_read_refused_at_capacity_is_sent_again_after_its_retry_after(world, browser):
    # The server's admission refuses a read it has no slot for (503, Retry-After) before doing anything: the page
    # waits as told and asks again. The first search answers with the refusal the server sends; the next go through.
    page = sign_in(new_page(browser), world, "demo")
    refused = []

    def refuse_once(route):
        if refused:
            return route.continue_()
        refused.append(route.request.url)
        answer = overloaded(Overloaded(READ, "no read slot is free", retry_after_s=1))
        route.fulfill(status=answer.status_code, headers=dict(answer.headers), body=answer.body)

    page.route("**/v1/users/maya/search", refuse_once)
    page.fill("#q", "What does Maya drink in the morning?")
    with page.expect_response(lambda r: r.url.endswith("/search") and r.status == 200):
        page.press("#q", "Enter")
    page.wait_for_selector(".hit")
    assert len(refused) == 1 and "capacity" not in page.inner_text("body")
    assert page.errors == []


def test_a_hit_s_detail_shows_its_source_turn_and_retention_curve(world, browser, shots):
    page = sign_in(new_page(browser), world, "demo")
    page.fill("#q", "What does Maya drink in the morning?")
    page.uncheck("#search-form input[name=context]")  # no context: no access is recorded while the page reads
    page.press("#q", "Enter")
    page.wait_for_selector(".hit")
    memory_id = page.locator(".hit").first.get_attribute("data-memory-id")
    # A search hit is not an access (only a context or a reply that uses the memory counts), and a context may show
    # a note in place of its turn: the agent's reply uses the hit, so the card has an access to draw (a reply is a
    # command, durable when answered). Compared with the card the page itself read: a touch of an earlier search may
    # still wait for its group commit, so a card asked for later may list one access more.
    api = world["api"]["demo"]
    text = api.get(f"/v1/users/maya/memories/{memory_id}")["memory"]["text"]
    used = api.post("/v1/users/maya/reply", {"reply": f"As you told me: {text}", "memory_ids": [memory_id],
                                               "query": "What does Maya drink in the morning?"})["used"]
    assert memory_id in [u["memory_id"] for u in used]
    with page.expect_response(lambda r: f"/v1/users/maya/memories/{memory_id}" in r.url) as answered:
        page.locator(".detail-link").first.click()
    page.wait_for_selector("svg.curve polyline")
    card = answered.value.json()
    assert card["memory"]["memory_id"] == memory_id
    assert card["memory"] == world["api"]["demo"].get(f"/v1/users/maya/memories/{memory_id}")["memory"]
    assert page.inner_text("blockquote.turn") == card["memory"]["text"]
    points = page.get_attribute("svg.curve polyline", "points").split()
    assert len(points) >= 80
    assert page.locator("svg.curve circle.access").count() == len(card["curve"]["accesses"]) > 0
    assert page.locator("svg.curve .projected, svg.curve .archived").count() >= 1  # the archival date is marked
    assert "Why it ranked #1" in page.inner_text("#view")  # the hit's score terms came along
    explained = world["api"]["demo"].get(f"/v1/users/maya/explain/{memory_id}")
    assert f"Source events ({len(explained['source_events'])})" in page.inner_text("#view")  # the log's own account
    page.screenshot(path=str(shots / "memory.png"), full_page=True)
    assert page.errors == []


def test_a_note_s_history_shows_its_supersession_chain(world, browser, shots):
    page = sign_in(new_page(browser), world, "demo")
    open_view(page, "#/notes")
    changed = page.locator(".history-link", has_text="changed")
    assert changed.count() >= 1
    note_id = changed.first.locator("xpath=..").get_attribute("data-note-id")
    changed.first.click()
    page.wait_for_selector(".version")
    chain = world["api"]["demo"].get(f"/v1/users/maya/notes/{note_id}")["chain"]
    versions = page.locator(".version")
    assert versions.count() == len(chain) >= 2
    for i, version in enumerate(chain):
        assert version["text"] in versions.nth(i).inner_text() and version["status"] in versions.nth(i).get_attribute("class")
    page.screenshot(path=str(shots / "note-history.png"), full_page=True)
    assert page.errors == []


def test_the_graph_fits_the_window_labels_every_node_and_answers_the_keyboard(world, browser, shots):
    page = sign_in(new_page(browser), world, "demo")
    open_view(page, "#/graph")
    data = world["api"]["demo"].get("/v1/users/maya/graph/view")["data"]
    boxes = graph_boxes(page)
    assert len(boxes["nodes"]) == len(data["nodes"]) > 10
    assert inside(boxes) == [] and overlapping_labels(boxes) == []
    page.screenshot(path=str(shots / "graph.png"))
    first = page.locator(".pg-node").first
    first.focus()
    page.keyboard.press("Enter")
    assert page.inner_text(".pg-details h3") == data["nodes"][0]["label"]
    page.click("[data-zoom=in]")
    page.click("[data-zoom=in]")
    assert inside(graph_boxes(page)) != []  # zoomed in: some nodes leave the view
    page.click("[data-zoom=fit]")
    assert inside(graph_boxes(page)) == []
    page.uncheck(".pg-types input[value=member]")
    assert page.locator(".pg-edge:visible").count() == sum(e["type"] != "member" for e in data["edges"])
    assert page.errors == []


def test_the_standalone_graph_html_fits_a_1200_by_800_window(world, browser, shots):
    html = world["memory"].graph_export("demo", "maya")["html"]
    (shots / "graph.html").write_text(html, encoding="utf-8")
    page = new_page(browser, width=1200, height=800)
    page.goto((shots / "graph.html").as_uri())
    page.wait_for_selector(".pg-node")
    boxes = graph_boxes(page)
    assert len(boxes["nodes"]) > 10 and inside(boxes) == [] and overlapping_labels(boxes) == []
    page.screenshot(path=str(shots / "graph-standalone.png"))
    assert page.errors == []


def test_time_travel_asks_as_of_an_earlier_time(world, browser, shots):
    page = sign_in(new_page(browser), world, "demo")
    page.fill("#q", "coffee database editor")
    page.press("#q", "Enter")
    page.wait_for_selector(".hit")
    dates = lambda: [t[:10] for t in page.locator(".hit .meta").all_inner_texts()]  # noqa: E731
    assert max(dates()) > "2024-03-05"
    page.fill("#now", "2024-03-05T00:00")
    page.click("#search-form button[type=submit]")
    page.wait_for_function("() => [...document.querySelectorAll('.hit .meta')].every(m => m.textContent < '2024-03-05')")
    assert dates() and max(dates()) < "2024-03-05"
    assert "MySQL" not in page.inner_text("#context-text")  # the switch came in April
    page.screenshot(path=str(shots / "time-travel.png"), full_page=True)
    assert page.errors == []


def test_the_timeline_greys_archived_memories_and_restores_one(world, browser, shots):
    page = sign_in(new_page(browser), world, "demo")
    open_view(page, "#/timeline")
    archived = world["api"]["demo"].get("/v1/users/maya/archive")["archived"]
    assert page.locator(".turn.archived").count() == len(archived) > 0
    page.screenshot(path=str(shots / "timeline.png"), full_page=True)
    first = page.locator(".turn.archived").first
    memory_id = first.get_attribute("data-memory-id")
    first.locator("button").click()
    page.wait_for_selector(f".turn[data-memory-id='{memory_id}']:not(.archived)")
    assert memory_id not in {a["memory_id"] for a in world["api"]["demo"].get("/v1/users/maya/archive")["archived"]}
    assert page.errors == []


def test_the_counterfactual_shows_what_another_policy_would_archive(world, browser, shots):
    page = sign_in(new_page(browser), world, "demo")
    open_view(page, "#/counterfactual")
    page.select_option("#preset", "category-decay")
    page.fill("#cf-now", "2024-06-01T00:00")
    page.fill("#cf-queries", "What does Maya drink in the morning?")
    page.click("#cf-out >> xpath=preceding-sibling::form//button[@type='submit']")
    page.wait_for_selector("#cf-out .card")
    policies = world["api"]["demo"].get("/v1/policies")
    assert policies["aliases"] == {"seed-002": "category-decay"}  # the old name, still accepted, is not listed
    [category_decay] = [p for p in policies["presets"] if p["name"] == "category-decay"]
    [report] = world["api"]["demo"].post("/v1/counterfactual", {
        "policy": category_decay, "now": JUNE,
        "queries": [{"user_id": "maya", "query": "What does Maya drink in the morning?"}]})["users"]
    [by_old_name] = world["api"]["demo"].post("/v1/counterfactual", {
        "preset": "seed-002", "now": JUNE,
        "queries": [{"user_id": "maya", "query": "What does Maya drink in the morning?"}]})["users"]
    assert by_old_name == report
    head = page.inner_text("#cf-out .card h3")
    assert f"{report['archived_current']} under “default”, {report['archived_other']} under “category-decay”" in head
    assert page.locator("table.ranks tbody tr").count() == len(report["queries"][0]["ranks"])
    page.screenshot(path=str(shots / "counterfactual.png"), full_page=True)
    upload = shots / "strict-policy.json"
    upload.write_text('{"name": "strict", "archive_floor": 0.9}', encoding="utf-8")
    page.set_input_files("#policy-file", str(upload))
    page.wait_for_function("() => document.getElementById('policy-json').value.includes('strict')")
    page.click("#cf-out >> xpath=preceding-sibling::form//button[@type='submit']")
    page.wait_for_function("() => document.querySelector('#cf-out .card h3').textContent.includes('strict')")
    page.fill("#policy-json", '{"archive_floor": -1}')
    page.click("#cf-out >> xpath=preceding-sibling::form//button[@type='submit']")
    page.wait_for_function("() => document.getElementById('status').textContent.includes('archive_floor')")
    assert page.errors == []


def test_every_view_reads_at_phone_width_and_is_reached_by_keyboard(world, browser, shots):
    page = sign_in(new_page(browser, width=390, height=844), world, "demo")
    memory_id = world["demo_ids"][2]
    for view in ("#/notes", "#/timeline", "#/graph", "#/counterfactual", f"#/memory/{memory_id}"):
        open_view(page, view)
        assert page.inner_text("#status") == "", view
        assert page.evaluate("() => document.documentElement.scrollWidth <= window.innerWidth"), view
        if view == "#/graph":  # the page scrolls on a phone: the graph fits its own frame
            boxes = graph_boxes(page)
            assert inside(boxes, in_window=False) == [] and overlapping_labels(boxes) == []
    assert page.locator("svg.curve polyline").count() == 1
    page.screenshot(path=str(shots / "memory-phone.png"), full_page=True)
    desk = sign_in(new_page(browser), world, "demo")  # keyboard only: the Notes tab, then a note's history
    tab_to(desk, "#tabs a[data-view=notes]")
    desk.keyboard.press("Enter")
    desk.wait_for_function("() => document.getElementById('view').dataset.ready === 'notes'")
    tab_to(desk, ".history-link")
    desk.keyboard.press("Enter")
    desk.wait_for_function("() => document.getElementById('view').dataset.ready === 'note'")
    assert desk.locator(".version").count() >= 1
    assert page.errors == [] and desk.errors == []


def test_a_wrong_key_sees_nothing(world, browser):
    page = new_page(browser)
    page.goto(world["url"] + "/ui")
    page.fill("#key", "plm_0000000000000000_not-a-key")
    page.click("#login-form button")
    page.wait_for_function("() => document.getElementById('status').textContent.includes('refused')")
    assert page.locator("#tabs").is_hidden() and page.locator("#login").is_visible()
    page.evaluate("sessionStorage.setItem('palimpsest.key', 'plm_0000000000000000_not-a-key');"
                  "sessionStorage.setItem('palimpsest.user', 'maya')")
    page.goto(world["url"] + "/ui#/notes")
    page.wait_for_function("() => document.getElementById('status').textContent.includes('refused')")
    text = page.inner_text("body")
    assert not any(mark in text for mark in [*DEMO_MARKS, "BETAMARK"]) and page.locator("#view *").count() == 0
    r = httpx.get(world["url"] + "/v1/users/maya/notes", headers={"Authorization": "Bearer plm_0000000000000000_x"})
    assert r.status_code == 401
    assert page.errors == []


@pytest.mark.parametrize("reader,other_marks", [("beta", DEMO_MARKS), ("demo", ["BETAMARK"])])
def test_a_tenant_s_key_shows_nothing_of_another_tenant_in_any_view(world, browser, reader, other_marks):
    page = sign_in(new_page(browser), world, reader)
    foreign = world["demo_ids"] if reader == "beta" else []
    seen_own = 0
    page.fill("#q", "tea coffee morning database editor 周末")
    page.press("#q", "Enter")
    page.wait_for_selector(".hit")
    views = ["#/notes", "#/timeline", "#/graph", "#/counterfactual"]
    if foreign:
        views.append(f"#/memory/{foreign[0]}")  # another tenant's memory id: not found
    for index, view in enumerate(["#/search", *views]):
        if index:
            open_view(page, view)
        html = page.content()
        leaked = [m for m in [*other_marks, *foreign] if m in html]
        assert not leaked, f"{reader} saw {leaked[:3]} in {view}"
        seen_own += (reader == "beta" and "BETAMARK" in html) or (reader == "demo" and "Atlas" in html)
    assert seen_own >= 2
    if foreign:
        assert "not found" in page.inner_text("#status")
    assert page.errors == []
