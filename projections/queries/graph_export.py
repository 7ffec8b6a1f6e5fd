"""Exports of one user's memory graph: GraphML for other tools, and a self-contained HTML view.

Both read the resolved :class:`projections.folds.graph.GraphView` (merges applied)
and draw three kinds of vertices:

- the canonical nodes, id ``<type>:<label>``, kind = node type
  (subject, topic, object, attribute, value);
- one vertex per memory, id ``memory:<memory id>``, kind ``memory``, joined to
  its topic node by a ``member`` edge, so memory-to-memory edges (causality,
  reference) have endpoints;
- one vertex per conclusion, id ``conclusion:<conclusion id>``, kind
  ``conclusion``, with a ``source`` edge to each source memory.

Edges keep their edge type, relation name, importance, time and source memory.
The HTML page embeds its data, styles and script inline (no CDN, no network,
no URL at all: "/" is escaped in the embedded JSON); it lays the graph out
with a small force simulation, colours nodes by kind and edges by edge type,
shows labels on hover and lets nodes be dragged. Pure functions: the caller
writes the strings to files.
"""

from __future__ import annotations

import html
import json
import xml.etree.ElementTree as ET

from projections.folds.graph import GraphState

GRAPHML_NS = "http://graphml.graphdrawing.org/xmlns"
NODE_COLOURS = {"subject": "#e4572e", "topic": "#2e86ab", "object": "#3bb273", "attribute": "#a5a5a5",
                "value": "#c9a227", "memory": "#7768ae", "conclusion": "#d1495b"}
EDGE_COLOURS = {"memory_type": "#8d99ae", "core_relation": "#2e86ab", "attribute": "#c8c8c8", "causality": "#e4572e",
                "reference": "#7768ae", "member": "#dddddd", "source": "#d1495b"}
_NODE_KEYS = (("label", "string"), ("kind", "string"), ("memory_ids", "string"), ("merged_ids", "string"),
              ("memory_type", "string"), ("status", "string"), ("consolidated", "boolean"), ("importance", "double"),
              ("created_at", "string"), ("turn_ids", "string"), ("confidence", "double"), ("version", "int"))
_EDGE_KEYS = (("edge_type", "string"), ("relation", "string"), ("importance", "double"), ("occurred_at", "string"),
              ("memory_id", "string"), ("origin", "string"))


def _elements(state: GraphState) -> tuple[list[dict], list[dict]]:
    """Vertices and edges as plain dicts (attribute name → value), in a deterministic order."""
    view = state.view()
    vertices = [{"id": nid, "label": n.label, "kind": n.node_type, "memory_ids": " ".join(n.memory_ids),
                 "merged_ids": " ".join(n.merged_ids)} for nid, n in sorted(view.nodes.items())]
    edges = []
    for m in sorted(state.memories.values(), key=lambda m: (m.seq, m.memory_id)):
        vertices.append({"id": f"memory:{m.memory_id}", "label": " ".join(x for x in (m.subject, m.topic, m.object) if x),
                         "kind": "memory", "memory_type": m.memory_type, "status": m.status,
                         "consolidated": m.consolidated, "importance": m.importance,
                         "created_at": m.created_at.isoformat(), "turn_ids": " ".join(m.source_turn_ids)})
        edges.append({"id": f"{m.memory_id}/member", "source": f"memory:{m.memory_id}",
                      "target": view.canonical_of[m.topic_node], "edge_type": "member", "relation": "member",
                      "memory_id": m.memory_id, "origin": "structure"})
    for e in view.edges:
        ends = [eid if kind == "node" else f"memory:{eid}"
                for kind, eid in ((e.source_kind, e.source_id), (e.target_kind, e.target_id))]
        edges.append({"id": e.edge_id, "source": ends[0], "target": ends[1], "edge_type": e.edge_type,
                      "relation": e.relation, "importance": e.importance, "occurred_at": e.occurred_at.isoformat(),
                      "memory_id": e.memory_id or "", "origin": e.origin})
    for c in sorted(state.conclusions.values(), key=lambda c: (c.seq, c.conclusion_id)):
        cid = f"conclusion:{c.conclusion_id}"
        vertices.append({"id": cid, "label": c.statement, "kind": "conclusion", "confidence": c.confidence,
                         "version": c.version, "status": "superseded" if c.superseded_by else "current",
                         "memory_ids": " ".join(c.source_memory_ids)})
        edges += [{"id": f"{c.conclusion_id}/source/{mid}", "source": cid, "target": f"memory:{mid}",
                   "edge_type": "source", "relation": "source", "origin": "abstraction"}
                  for mid in c.source_memory_ids if mid in state.memories]
    return vertices, edges


def to_graphml(state: GraphState) -> str:
    """The graph as GraphML (directed; parallel edges kept, each with its own id)."""
    ET.register_namespace("", GRAPHML_NS)
    def q(tag: str) -> str:
        return f"{{{GRAPHML_NS}}}{tag}"

    root = ET.Element(q("graphml"))
    for scope, keys in (("node", _NODE_KEYS), ("edge", _EDGE_KEYS)):
        for name, kind in keys:
            ET.SubElement(root, q("key"), {"id": f"{scope[0]}_{name}", "for": scope, "attr.name": name, "attr.type": kind})
    graph = ET.SubElement(root, q("graph"), {"id": "memory-graph", "edgedefault": "directed"})
    vertices, edges = _elements(state)

    def data(parent: ET.Element, scope: str, keys: tuple, record: dict) -> None:
        for name, _ in keys:
            if record.get(name) not in (None, ""):
                value = record[name]
                text = str(value).lower() if isinstance(value, bool) else str(value)  # GraphML booleans: true/false
                ET.SubElement(parent, q("data"), {"key": f"{scope}_{name}"}).text = text

    for v in vertices:
        data(ET.SubElement(graph, q("node"), {"id": v["id"]}), "n", _NODE_KEYS, v)
    for e in edges:
        data(ET.SubElement(graph, q("edge"), {"id": e["id"], "source": e["source"], "target": e["target"]}),
             "e", _EDGE_KEYS, e)
    return '<?xml version="1.0" encoding="UTF-8"?>\n' + ET.tostring(root, encoding="unicode")


def _script_json(value: object) -> str:
    # Safe inside <script>: no "</script>", no HTML entities, and no "://" even when a label holds a URL.
    text = json.dumps(value, ensure_ascii=False, sort_keys=True)
    return text.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026").replace("/", "\\/")


def to_html(state: GraphState, title: str = "Memory graph") -> str:
    """One self-contained HTML page (inline SVG and script, nothing fetched) showing the graph."""
    vertices, edges = _elements(state)
    payload = {"nodes": [{"id": v["id"], "label": v["label"], "kind": v["kind"],
                          "info": "\n".join(f"{k}: {v[k]}" for k in ("kind", "memory_type", "status", "importance",
                                                                      "created_at", "confidence", "version") if k in v)}
                         for v in vertices],
               "edges": [{"source": e["source"], "target": e["target"], "type": e["edge_type"],
                          "relation": e["relation"]} for e in edges],
               "nodeColours": NODE_COLOURS, "edgeColours": EDGE_COLOURS}
    return _PAGE.replace("__TITLE__", html.escape(title)).replace("__DATA__", _script_json(payload))


_PAGE = """<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>__TITLE__</title>
<style>
body{margin:0;font:13px system-ui,sans-serif;background:#fafafa;color:#222}
header{padding:8px 12px;border-bottom:1px solid #ddd}
#legend span{display:inline-block;margin-right:12px}
#legend i{display:inline-block;width:10px;height:10px;border-radius:50%;margin-right:4px;vertical-align:middle}
#legend b{display:inline-block;width:16px;height:3px;margin-right:4px;vertical-align:middle}
svg{display:block;width:100%;height:calc(100vh - 90px);background:#fff;cursor:grab}
circle{stroke:#fff;stroke-width:1.5px;cursor:pointer}
circle:hover{stroke:#000}
#info{position:fixed;right:12px;top:70px;max-width:320px;white-space:pre-wrap;background:#fffe;
border:1px solid #ccc;padding:6px 8px;display:none}
</style></head>
<body><header><strong>__TITLE__</strong> <span id="count"></span><div id="legend"></div></header>
<svg id="view" viewBox="0 0 1000 700"><g id="edges"></g><g id="nodes"></g></svg><div id="info"></div>
<script type="application/json" id="graph-data">__DATA__</script>
<script>
(function () {
  const data = JSON.parse(document.getElementById("graph-data").textContent);
  const svg = document.getElementById("view"), NS = svg.namespaceURI, W = 1000, H = 700;
  const info = document.getElementById("info");
  const make = (tag, attrs) => { const el = document.createElementNS(NS, tag);
    for (const k in attrs) el.setAttribute(k, attrs[k]); return el; };
  const nodes = data.nodes.map((n, i) => Object.assign({}, n, {
    x: W / 2 + 300 * Math.cos(2 * Math.PI * i / data.nodes.length),
    y: H / 2 + 250 * Math.sin(2 * Math.PI * i / data.nodes.length), vx: 0, vy: 0}));
  const byId = new Map(nodes.map(n => [n.id, n]));
  const links = data.edges.filter(e => byId.has(e.source) && byId.has(e.target))
    .map(e => Object.assign({}, e, {s: byId.get(e.source), t: byId.get(e.target)}));
  const steps = Math.max(30, Math.min(300, Math.floor(3e7 / Math.max(1, nodes.length * nodes.length))));
  for (let step = 0; step < steps; step++) {
    const cool = 1 - step / steps;
    for (let i = 0; i < nodes.length; i++) for (let j = i + 1; j < nodes.length; j++) {
      const a = nodes[i], b = nodes[j]; let dx = a.x - b.x, dy = a.y - b.y;
      const d2 = Math.max(dx * dx + dy * dy, 25), f = 800 / d2;
      a.vx += dx * f; a.vy += dy * f; b.vx -= dx * f; b.vy -= dy * f;
    }
    for (const l of links) {
      const dx = l.t.x - l.s.x, dy = l.t.y - l.s.y, d = Math.sqrt(dx * dx + dy * dy) || 1, f = (d - 60) * 0.02;
      l.s.vx += dx / d * f; l.s.vy += dy / d * f; l.t.vx -= dx / d * f; l.t.vy -= dy / d * f;
    }
    for (const n of nodes) {
      n.vx += (W / 2 - n.x) * 0.005; n.vy += (H / 2 - n.y) * 0.005;
      n.x += Math.max(-20, Math.min(20, n.vx)) * cool; n.y += Math.max(-20, Math.min(20, n.vy)) * cool;
      n.vx *= 0.5; n.vy *= 0.5;
    }
  }
  const edgeLayer = document.getElementById("edges"), nodeLayer = document.getElementById("nodes");
  for (const l of links) {
    l.el = make("line", {stroke: data.edgeColours[l.type] || "#999", "stroke-width": 1.5});
    const tip = make("title", {}); tip.textContent = l.type + ": " + l.relation; l.el.appendChild(tip);
    edgeLayer.appendChild(l.el);
  }
  const place = () => { for (const l of links) { l.el.setAttribute("x1", l.s.x); l.el.setAttribute("y1", l.s.y);
    l.el.setAttribute("x2", l.t.x); l.el.setAttribute("y2", l.t.y); }
    for (const n of nodes) { n.el.setAttribute("cx", n.x); n.el.setAttribute("cy", n.y); } };
  let dragging = null;
  for (const n of nodes) {
    n.el = make("circle", {r: n.kind === "memory" || n.kind === "conclusion" ? 5 : 8,
                           fill: data.nodeColours[n.kind] || "#999"});
    const tip = make("title", {}); tip.textContent = n.label; n.el.appendChild(tip);
    n.el.addEventListener("mouseenter", () => { info.textContent = n.label + "\\n" + n.info; info.style.display = "block"; });
    n.el.addEventListener("mouseleave", () => { info.style.display = "none"; });
    n.el.addEventListener("pointerdown", ev => { dragging = n; ev.preventDefault(); });
    nodeLayer.appendChild(n.el);
  }
  svg.addEventListener("pointermove", ev => { if (!dragging) return;
    const p = new DOMPoint(ev.clientX, ev.clientY).matrixTransform(svg.getScreenCTM().inverse());
    dragging.x = p.x; dragging.y = p.y; place(); });
  window.addEventListener("pointerup", () => { dragging = null; });
  place();
  document.getElementById("count").textContent = nodes.length + " nodes, " + links.length + " edges";
  const legend = document.getElementById("legend");
  for (const [k, c] of Object.entries(data.nodeColours)) legend.insertAdjacentHTML("beforeend",
    "<span><i style=\\"background:" + c + "\\"></i>" + k + "</span>");
  for (const [k, c] of Object.entries(data.edgeColours)) legend.insertAdjacentHTML("beforeend",
    "<span><b style=\\"background:" + c + "\\"></b>" + k + "</span>");
})();
</script></body></html>
"""
