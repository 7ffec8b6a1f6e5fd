"""Residual layer norms as ``Add`` and ``LayerNormalization``, not ONNX Runtime's fused ``SkipLayerNormalization``.

ONNX Runtime's CPU kernel of ``SkipLayerNormalization`` (residual, bias and
norm in one operator) is several times slower than the two ``Add`` and the
``LayerNormalization`` it stands for: on one thread, a ``(1, 152, 384)`` input
took ~300 µs fused against ~65 µs split (onnxruntime 1.32, this project's
2-core x86 VMs). A BERT layer has two, so a 152-token e5 query spent about a
quarter of its run in them. e5's int8 query graph, one thread, old and new
graph taking turns on each question (quiet): MemDaily dev's 97 questions over
64 tokens p50 / p95 17.0 / 33.0 → 13.4 / 26.0 ms, the other 503 6.1 / 9.9 →
5.3 / 8.4, LoCoMo dev's 5.7 / 7.5 → 5.1 / 6.4. The split gives the same floats
up to rounding (e5 passages: least cosine with the fused graph's 0.99992).

:func:`split` rewrites a graph's fused nodes in place: the MiniLM graph's,
whose fusions ONNX Runtime's transformer optimizer makes, and e5's, built by
hand with them. Sessions keep ONNX Runtime from fusing them again at load
(:data:`DISABLED_FUSIONS`).
"""

from __future__ import annotations

SKIP = "SkipLayerNormalization"
DISABLED_FUSIONS = ["SkipLayerNormFusion"]  # ONNX Runtime's graph transformer that would fuse the pair back


def split(model) -> int:
    """Replace each ``SkipLayerNormalization`` of ``model`` (an ``onnx.ModelProto``, opset 17 or later) by
    ``Add(input, bias)``, ``Add(…, skip)`` and ``LayerNormalization``; how many were replaced. A node whose mean
    or inverse deviation output is used is left as it is."""
    from onnx import helper

    nodes, replaced = [], 0
    for node in model.graph.node:
        if node.op_type != SKIP or any(name for name in node.output[1:3]):
            nodes.append(node)
            continue
        epsilon = next((a.f for a in node.attribute if a.name == "epsilon"), 1e-12)
        x, skip, gamma = node.input[:3]
        beta = node.input[3] if len(node.input) > 3 else ""
        bias = node.input[4] if len(node.input) > 4 else ""
        summed = node.output[3] if len(node.output) > 3 and node.output[3] else f"{node.name or node.output[0]}.sum"
        if bias:
            biased = f"{summed}.biased"
            nodes.append(helper.make_node("Add", [x, bias], [biased], name=f"{biased}.add"))
            x = biased
        nodes.append(helper.make_node("Add", [x, skip], [summed], name=f"{summed}.add"))
        nodes.append(helper.make_node("LayerNormalization", [summed, gamma, *([beta] if beta else [])],
                                      [node.output[0]], name=f"{node.output[0]}.norm", axis=-1, epsilon=epsilon))
        replaced += 1
    if replaced:
        del model.graph.node[:]
        model.graph.node.extend(nodes)
    return replaced

