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
no URL at all: "/" is escaped in the embedded JSON). The script and style are
the graph view component (``graph_view.js``, ``graph_view.css`` beside this
module), the same one the inspector at ``/ui`` serves: a deterministic force
layout fitted to the window on load, every node labelled, zoom and pan,
filters by edge type and relation, details on click, keyboard access. Pure
functions: the caller writes the strings to files.
"""

from __future__ import annotations

import html
import json
import xml.etree.ElementTree as ET
from importlib import resources

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
                         "created_at": m.created_at.isoformat(), "turn_ids": " ".join(m.source_turn_ids),
                         "message_ids": m.source_message_ids})
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


def view_data(state: GraphState) -> dict:
    """What the graph view (``graph_view.js``) draws: vertices with a label, kind, details text and source messages."""
    vertices, edges = _elements(state)
    return {"nodes": [{"id": v["id"], "label": v["label"], "kind": v["kind"],
                       "info": "\n".join(f"{k}: {v[k]}" for k in _INFO_KEYS if v.get(k) not in (None, "")),
                       "message_ids": list(v.get("message_ids", ()))}
                      for v in vertices],
            "edges": [{"source": e["source"], "target": e["target"], "type": e["edge_type"],
                       "relation": e["relation"]} for e in edges],
            "nodeColours": NODE_COLOURS, "edgeColours": EDGE_COLOURS}


def view_assets() -> tuple[str, str]:
    """The graph view's script and stylesheet (package files beside this module), as text."""
    here = resources.files("projections.queries")
    return (here / "graph_view.js").read_text(encoding="utf-8"), (here / "graph_view.css").read_text(encoding="utf-8")


def to_html(state: GraphState, title: str = "Memory graph") -> str:
    """One self-contained HTML page (inline SVG, style and script, nothing fetched) showing the graph."""
    script, style = view_assets()
    return (_PAGE.replace("__TITLE__", html.escape(title)).replace("__STYLE__", style)
            .replace("__SCRIPT__", script).replace("__DATA__", _script_json(view_data(state))))


_INFO_KEYS = ("memory_type", "status", "importance", "created_at", "turn_ids", "confidence", "version", "memory_ids",
              "merged_ids")
_PAGE = """<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<title>__TITLE__</title>
<style>
html,body{height:100%;margin:0}
body{display:flex;flex-direction:column;background:#fafafa;color:#222;font-size:13px;
  font-family:"Noto Sans","Noto Sans CJK SC","Noto Sans SC","PingFang SC","Microsoft YaHei",system-ui,sans-serif}
header{padding:8px 12px 0}
#graph{flex:1;min-height:0;padding:0 12px 12px}
__STYLE__</style></head>
<body><header><strong>__TITLE__</strong></header><main id="graph"></main>
<script type="application/json" id="graph-data">__DATA__</script>
<script>
__SCRIPT__
PalimpsestGraph.mount(document.getElementById("graph"), JSON.parse(document.getElementById("graph-data").textContent));
</script></body></html>
"""
