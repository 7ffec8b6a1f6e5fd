"""Driving the inspector's pages in the browser tests: a fresh tab, sign-in, views, and the graph's geometry."""

from __future__ import annotations

import json

GRAPH_GEOMETRY = """() => {
  const box = el => { const r = el.getBoundingClientRect(); return [r.left, r.top, r.right, r.bottom]; };
  return {svg: box(document.querySelector(".pg-svg")), window: [0, 0, window.innerWidth, window.innerHeight],
          nodes: [...document.querySelectorAll(".pg-node")].map(g => {
            const label = g.querySelector("text");
            return {id: g.dataset.id, circle: box(g.querySelector("circle")), label: box(label),
                    text: label.textContent, size: parseFloat(getComputedStyle(label).fontSize)};
          })};
}"""


def new_page(browser, width: int = 1280, height: int = 800):
    """A tab of its own (its own session storage); ``page.errors`` collects the page's uncaught script errors."""
    page = browser.new_context(viewport={"width": width, "height": height}).new_page()
    page.errors = []
    page.on("pageerror", lambda exc: page.errors.append(str(exc)))
    return page


def sign_in(page, world: dict, tenant: str):
    page.goto(world["url"] + "/ui")
    page.fill("#key", world["keys"][tenant])
    page.press("#key", "Enter")
    page.wait_for_selector("#search-form")
    return page


def open_view(page, where: str) -> None:
    """Go to a view (``#/notes``, ``#/memory/ID``, ...) and wait until it has rendered (or said why it could not)."""
    page.evaluate(f"location.hash = {json.dumps(where)}")
    page.wait_for_function("([name]) => document.getElementById('view').dataset.ready === name",
                           arg=[where.split("/")[1]])


def tab_to(page, selector: str, limit: int = 60) -> None:
    """Press Tab until the focused element matches ``selector`` (fails after ``limit`` presses)."""
    for _ in range(limit):
        page.keyboard.press("Tab")
        if page.evaluate("([s]) => document.activeElement !== null && document.activeElement.matches(s)", [selector]):
            return
    raise AssertionError(f"{selector} was not reached with {limit} Tab presses")


def graph_boxes(page) -> dict:
    return page.evaluate(GRAPH_GEOMETRY)


def inside(boxes: dict, slack: float = 1.0, in_window: bool = True) -> list[str]:
    """Every node whose circle or label leaves the SVG (or the window), or whose label is empty or under 11 px."""
    def within(box, frame):
        return (box[0] >= frame[0] - slack and box[1] >= frame[1] - slack and box[2] <= frame[2] + slack
                and box[3] <= frame[3] + slack)

    problems = []
    for node in boxes["nodes"]:
        for part in ("circle", "label"):
            if not (within(node[part], boxes["svg"]) and (not in_window or within(node[part], boxes["window"]))):
                problems.append(f"{node['id']}: {part} at {node[part]} outside {boxes['svg']}")
        if not node["text"].strip() or node["size"] < 11:
            problems.append(f"{node['id']}: label {node['text']!r} at {node['size']} px")
    return problems


def overlapping_labels(boxes: dict, slack: float = 1.0) -> list[tuple[str, str]]:
    """Pairs of nodes whose labels overlap by more than ``slack`` pixels both ways."""
    nodes, found = boxes["nodes"], []
    for i, a in enumerate(nodes):
        for b in nodes[i + 1:]:
            x = min(a["label"][2], b["label"][2]) - max(a["label"][0], b["label"][0])
            y = min(a["label"][3], b["label"][3]) - max(a["label"][1], b["label"][1])
            if x > slack and y > slack:
                found.append((a["text"], b["text"]))
    return found
