"""The ONNX Runtime encoder gives sentence-transformers' vectors, survives a broken cache file, and can be turned off."""

from __future__ import annotations

import numpy as np
import pytest

from projections.adapters import onnx_encoder
from projections.adapters.embedding import LABEL_BATCH_SIZE, HashEmbedder, MiniLMEmbedder, encode_labels, packaged_model_path

pytestmark = pytest.mark.model

TEXTS = [
    "What did Caroline research after the support group meeting?",
    "我上周五和妈妈一起去超市买了水果，然后回家做饭。",
    "ok",
    "",
    "a very long message " * 200,  # past the 256-token limit: truncated the same way
    "Émile's café — naïve 😀",
]


@pytest.fixture(scope="module")
def reference():
    from sentence_transformers import SentenceTransformer

    return SentenceTransformer(packaged_model_path(), device="cpu")


def test_same_vectors_as_sentence_transformers_in_one_batch_and_one_by_one(reference):
    embedder = MiniLMEmbedder()
    assert embedder.backend == "onnxruntime"
    # its pool threads sleep between runs (spinning ones take the cores a shard needs right then)
    assert embedder._onnx.session.get_session_options().get_session_config_entry(
        "session.intra_op.allow_spinning") == "0"
    expected = reference.encode(TEXTS, normalize_embeddings=True)
    batch = embedder.encode(TEXTS)
    assert batch.dtype == np.float32 and batch.shape == (len(TEXTS), 384)
    assert np.abs(batch - expected).max() < 1e-4
    single = np.stack([embedder.encode([t])[0] for t in TEXTS])
    assert np.abs(single - expected).max() < 1e-4
    assert np.allclose(np.linalg.norm(batch, axis=1), 1.0, atol=1e-5)


def test_labels_run_in_small_batches_with_the_same_vectors(monkeypatch):
    embedder = MiniLMEmbedder()
    labels = [f"label {i}" + " word" * (i % 7) for i in range(40)]
    runs = []
    session_run = embedder._onnx.session.run
    monkeypatch.setattr(embedder._onnx.session, "run", lambda out, feeds: runs.append(len(feeds["input_ids"]))
                        or session_run(out, feeds), raising=False)
    got = encode_labels(embedder, labels)
    assert runs == [LABEL_BATCH_SIZE, LABEL_BATCH_SIZE, 40 - 2 * LABEL_BATCH_SIZE]
    assert np.abs(got - embedder.encode(labels)).max() < 1e-6 and runs[3:] == [40]
    hashed = HashEmbedder()  # an encoder without encode_labels: its encode
    assert np.array_equal(encode_labels(hashed, labels), hashed.encode(labels))


def test_a_broken_cache_file_is_exported_again_with_each_layers_attention_fused(reference, tmp_path, monkeypatch):
    import onnx

    monkeypatch.setenv("PALIMPSEST_CACHE_DIR", str(tmp_path))
    attention = reference[0].auto_model.config._attn_implementation
    model_dir = packaged_model_path()
    path = onnx_encoder.graph_path(model_dir)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(b"not an onnx graph")  # hand-edited or truncated by a crash

    encoder = onnx_encoder.load(model_dir, lambda: reference)

    assert encoder is not None and path.stat().st_size > 1_000_000
    assert not list(tmp_path.glob("*.part"))  # no temporary file left behind
    assert np.abs(encoder.encode(TEXTS) - reference.encode(TEXTS, normalize_embeddings=True)).max() < 1e-4
    operators = [node.op_type for node in onnx.load(str(path)).graph.node]
    assert operators.count("Attention") == reference[0].auto_model.config.num_hidden_layers == 6
    assert reference[0].auto_model.config._attn_implementation == attention  # the caller's model as it was


def test_turned_off_by_the_environment(monkeypatch):
    monkeypatch.setenv("PALIMPSEST_ONNX", "0")
    embedder = MiniLMEmbedder()
    assert embedder.backend == "sentence-transformers"
    assert embedder.encode(["hello"]).shape == (1, 384)
