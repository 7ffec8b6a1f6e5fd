"""projections.adapters.onnx_layernorm: a fused residual layer norm split into Add, Add and LayerNormalization
gives ONNX Runtime's floats, and a node whose statistics are read is left fused."""

from __future__ import annotations

import numpy as np
import onnxruntime as ort
import pytest
from onnx import TensorProto, helper, numpy_helper

from projections.adapters import onnx_layernorm

HIDDEN = 16


def fused_model(bias: bool = True, outputs: tuple[str, ...] = ("y",)):
    rng = np.random.default_rng(7)
    inits = [numpy_helper.from_array(rng.normal(size=HIDDEN).astype(np.float32), name)
             for name in ("gamma", "beta", "bias")]
    inputs = ["x", "skip", "gamma", "beta", *(["bias"] if bias else [])]
    node = helper.make_node(onnx_layernorm.SKIP, inputs, list(outputs), name="sln", domain="com.microsoft",
                            epsilon=1e-5)
    graph = helper.make_graph(
        [node], "g", [helper.make_tensor_value_info(n, TensorProto.FLOAT, [2, 3, HIDDEN]) for n in ("x", "skip")],
        [helper.make_tensor_value_info(o, TensorProto.FLOAT, None) for o in outputs if o], inits)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17), helper.make_opsetid("com.microsoft", 1)])


def run(model) -> list[np.ndarray]:
    rng = np.random.default_rng(3)
    feeds = {n: rng.normal(size=(2, 3, HIDDEN)).astype(np.float32) for n in ("x", "skip")}
    session = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"],
                                   disabled_optimizers=onnx_layernorm.DISABLED_FUSIONS)
    return session.run(None, feeds)


@pytest.mark.parametrize("bias", [True, False])
def test_the_split_nodes_give_the_fused_kernels_floats(bias):
    fused = fused_model(bias)
    expected = run(fused)[0]
    split = fused_model(bias)
    assert onnx_layernorm.split(split) == 1
    assert sorted(n.op_type for n in split.graph.node) == ["Add"] * (2 if bias else 1) + ["LayerNormalization"]
    assert np.allclose(run(split)[0], expected, atol=1e-5)


def test_the_sum_output_is_kept_under_its_name():
    model = fused_model(outputs=("y", "", "", "summed"))
    expected = run(model)
    assert onnx_layernorm.split(model) == 1
    got = run(model)
    assert [o.name for o in model.graph.output] == ["y", "summed"]
    assert all(np.allclose(a, b, atol=1e-5) for a, b in zip(got, expected))


def test_a_node_whose_mean_is_read_stays_fused():
    model = fused_model(outputs=("y", "mean"))
    assert onnx_layernorm.split(model) == 0
    assert [n.op_type for n in model.graph.node] == [onnx_layernorm.SKIP]
