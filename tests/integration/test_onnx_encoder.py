"""The ONNX Runtime encoder gives sentence-transformers' vectors, survives a broken cache file, and can be turned off."""

from __future__ import annotations

import numpy as np
import pytest

from projections.adapters import onnx_batches, onnx_encoder, onnx_query
from projections.adapters.embedding import (LABEL_BATCH_SIZE, QUERY_TOKENS, HashEmbedder, MiniLMEmbedder,
                                            encode_labels, encode_queries, packaged_model_path)
from projections.adapters.encoder_kinds import make_embedder

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
    for session in embedder._onnx.workers:  # one thread each, a session per core (at most onnx_batches.MAX_WORKERS)
        options = session.get_session_options()
        assert options.get_session_config_entry("session.intra_op.allow_spinning") == "0"
        assert options.intra_op_num_threads == 1
    assert len(embedder._onnx.workers) == onnx_batches.workers() and embedder._onnx.workers[0] is embedder._onnx.session
    expected = reference.encode(TEXTS, normalize_embeddings=True)
    batch = embedder.encode(TEXTS)
    assert batch.dtype == np.float32 and batch.shape == (len(TEXTS), 384)
    assert np.abs(batch - expected).max() < 1e-4
    single = np.stack([embedder.encode([t])[0] for t in TEXTS])
    assert np.abs(single - expected).max() < 1e-4
    assert np.allclose(np.linalg.norm(batch, axis=1), 1.0, atol=1e-5)


def _spy_workers(monkeypatch, onnx) -> list[tuple[int, int]]:
    """(worker, rows) of each run on the encoder's batch sessions."""
    runs = []
    for n, session in enumerate(onnx.workers):
        monkeypatch.setattr(session, "run", lambda out, feeds, n=n, run=session.run:
                            runs.append((n, len(feeds["input_ids"]))) or run(out, feeds), raising=False)
    return runs


def test_labels_run_in_small_batches_with_the_same_vectors(monkeypatch):
    embedder = MiniLMEmbedder()
    labels = [f"label {i}" + " word" * (i % 7) for i in range(40)]
    runs = _spy_workers(monkeypatch, embedder._onnx)
    got = encode_labels(embedder, labels)
    assert sorted(rows for _, rows in runs) == sorted([LABEL_BATCH_SIZE, LABEL_BATCH_SIZE, 40 - 2 * LABEL_BATCH_SIZE])
    runs.clear()
    assert np.abs(got - embedder.encode(labels)).max() < 1e-6
    assert sorted(rows for _, rows in runs) == sorted([onnx_batches.ROWS, 40 - onnx_batches.ROWS])
    hashed = HashEmbedder()  # an encoder without encode_labels: its encode
    assert np.array_equal(encode_labels(hashed, labels), hashed.encode(labels))


def test_a_batch_is_shared_out_over_the_sessions_with_the_vectors_of_one_session(monkeypatch):
    embedder = MiniLMEmbedder()
    onnx = embedder._onnx
    if len(onnx.workers) < 2:
        onnx.workers = [onnx.session, onnx_query.session(onnx.path, 1)]  # a one-core machine: two sessions anyway
    texts = [f"turn {i}: " + "we talked about the trip to Hangzhou " * (i % 9) + "西湖" * (i % 4) for i in range(150)]
    runs = _spy_workers(monkeypatch, onnx)
    together = embedder.encode(texts)
    assert sum(rows for _, rows in runs) == len(texts) and {n for n, _ in runs} == set(range(len(onnx.workers)))
    alone = onnx._run(onnx.session, texts, onnx_batches.ROWS)  # every run on one session, in the same order
    assert np.abs(together - alone).max() < 1e-6
    assert np.abs(together - embedder.encode(texts[::-1])[::-1]).max() < 1e-5  # other runs: the same vectors

    def broken(out, feeds):
        raise RuntimeError("the session failed")

    monkeypatch.setattr(onnx.workers[1], "run", broken, raising=False)
    with pytest.raises(RuntimeError, match="the session failed"):  # raised in the caller, not lost in a thread
        embedder.encode(texts)


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


def test_a_query_vector_reads_the_first_query_tokens_tokens_and_a_short_query_whole():
    embedder = make_embedder("minilm")
    short = "What did Caroline research after the support group meeting?"
    assert embedder.query_prefix(short, QUERY_TOKENS) == short
    chinese = "我上周五和妈妈一起去超市买了水果，然后回家做饭，晚上还看了一部关于长城历史的纪录片，觉得很有意思。" * 3
    cut = embedder.query_prefix(chinese, QUERY_TOKENS)
    assert chinese.startswith(cut) and len(embedder._tokenizer.encode(cut).ids) == QUERY_TOKENS
    english = "tell me everything about the climbing trip we planned " * 10
    # [CLS], ten words, [SEP]: cut at the tenth word's end
    assert embedder.query_prefix(english, 12) == "tell me everything about the climbing trip we planned tell"
    vectors = encode_queries(embedder, [short, chinese])
    assert np.abs(vectors - embedder.encode_queries([short, cut])).max() < 1e-5
    assert float(vectors[1] @ embedder.encode_queries([chinese])[0]) < 0.9999  # the whole text: another vector
    hashed = HashEmbedder()  # no query_prefix: a query is encoded whole
    assert np.array_equal(encode_queries(hashed, [chinese]), hashed.encode([chinese]))


QUESTIONS = ["What did Caroline research after the support group meeting?", "When did Melanie paint a sunrise?",
             "你上周五和谁去了超市？", "ok"]


LONG = "我们聊过的长城纪录片" * 2 + "吗？"  # over ONE_THREAD_TOKENS tokens, within QUERY_TOKENS (not cut)


def spy(monkeypatch, onnx) -> list[tuple[str, int]]:
    """(session name, rows) of each run on the encoder's sessions."""
    runs = []
    named = [(name, getattr(onnx, name)) for name in ("session", "query_session", "long_session")]
    named += [("session", worker) for worker in onnx.workers if worker is not onnx.session]  # the batch sessions
    for name, session in named:
        if session is not None:
            monkeypatch.setattr(session, "run", lambda out, feeds, name=name, run=session.run:
                                runs.append((name, len(feeds["input_ids"]))) or run(out, feeds), raising=False)
    return runs


def test_long_mode_keeps_short_queries_on_float32_one_thread_and_runs_long_ones_on_int8_two(monkeypatch):
    monkeypatch.setenv("PALIMPSEST_QUERY_INT8", "long")
    embedder = MiniLMEmbedder()
    onnx = embedder._onnx
    assert onnx_query.ONE_THREAD_TOKENS < len(onnx.tokenizer.encode(LONG).ids) <= QUERY_TOKENS
    assert onnx.query_path == onnx_query.int8_path(onnx.path) and onnx.query_path.is_file()
    short_options, long_options = onnx.query_session.get_session_options(), onnx.long_session.get_session_options()
    assert (short_options.intra_op_num_threads, long_options.intra_op_num_threads) == (1, 2)
    for options in (short_options, long_options):
        assert options.get_session_config_entry("session.intra_op.allow_spinning") == "0"
    runs = spy(monkeypatch, onnx)
    short = encode_queries(embedder, QUESTIONS)
    # several short ones: together, on the float32 batch session ("ok" in a run of its own: a run is padded to its
    # longest row, and no row to more than twice its length)
    assert sorted(runs) == [("session", 1), ("session", len(QUESTIONS) - 1)]
    assert np.abs(short - embedder.encode(QUESTIONS)).max() < 1e-5
    runs.clear()
    one, long = encode_queries(embedder, [QUESTIONS[0]]), encode_queries(embedder, [LONG])
    assert runs == [("query_session", 1), ("long_session", 1)]
    assert np.abs(one - embedder.encode([QUESTIONS[0]])).max() < 1e-5
    cosine = float(long[0] @ embedder.encode([LONG])[0])
    assert onnx_query.MIN_COSINE <= cosine < 0.9999  # close to the float32 vector, and not the float32 graph
    runs.clear()
    mixed = encode_queries(embedder, [LONG, QUESTIONS[0], LONG + "？", QUESTIONS[1]])
    # int8 runs one query at a time (its activations are quantized over the batch): a vector never depends on
    # the other queries asked with it
    assert sorted(runs) == [("long_session", 1), ("long_session", 1), ("session", 2)]
    assert np.abs(mixed[0] - long[0]).max() < 1e-6 and np.abs(mixed[1] - one[0]).max() < 1e-5
    assert np.array_equal(embedder.encode(QUESTIONS), embedder.encode(QUESTIONS))  # turns: the float32 graph


def test_every_query_on_float32_when_int8_is_off(monkeypatch):
    monkeypatch.setenv("PALIMPSEST_QUERY_INT8", "off")
    embedder = MiniLMEmbedder()
    onnx = embedder._onnx
    assert onnx.query_path == onnx.path
    assert onnx.query_session.get_session_options().intra_op_num_threads == 1
    assert onnx.long_session.get_session_options().intra_op_num_threads == 2
    runs = spy(monkeypatch, onnx)
    texts = [*QUESTIONS, LONG]
    assert np.abs(encode_queries(embedder, texts) - embedder.encode(texts)).max() < 1e-5
    runs.clear()
    encode_queries(embedder, [QUESTIONS[0]]), encode_queries(embedder, [LONG])
    assert runs == [("query_session", 1), ("long_session", 1)]  # a long one on the float32 graph, two threads


@pytest.mark.parametrize("setting", [None, "1", "all"])
def test_int8_for_every_query_by_default_close_to_the_float32_vectors(monkeypatch, setting):
    if setting is None:
        monkeypatch.delenv("PALIMPSEST_QUERY_INT8", raising=False)
    else:
        monkeypatch.setenv("PALIMPSEST_QUERY_INT8", setting)
    embedder = MiniLMEmbedder()
    onnx = embedder._onnx
    assert onnx.query_path == onnx_query.int8_path(onnx.path) and onnx.query_path.is_file()
    assert onnx.query_session.get_session_options().intra_op_num_threads == 1
    assert onnx.long_session.get_session_options().intra_op_num_threads == 2
    exact = embedder.encode(QUESTIONS)
    runs = spy(monkeypatch, onnx)
    query = encode_queries(embedder, QUESTIONS)
    assert runs == [("query_session", 1)] * len(QUESTIONS)  # one at a time
    runs.clear()
    long = encode_queries(embedder, [LONG, QUESTIONS[0]])
    assert runs == [("query_session", 1), ("long_session", 1)]  # past ONE_THREAD_TOKENS: two threads
    assert np.abs(long[1] - query[0]).max() < 1e-6  # the same vector whatever else is asked with it
    assert onnx_query.MIN_COSINE <= float(long[0] @ embedder.encode([LONG])[0]) < 0.9999
    cosines = np.sum(exact * query, axis=1)
    assert cosines.min() >= onnx_query.MIN_COSINE and cosines.max() < 0.9999  # close, and not the float32 graph
    assert np.allclose(np.linalg.norm(query, axis=1), 1.0, atol=1e-5)
    assert np.array_equal(embedder.encode(QUESTIONS), exact)  # turns and labels: the float32 graph, as before


def test_an_unknown_int8_setting_is_the_default(monkeypatch):
    monkeypatch.setenv("PALIMPSEST_QUERY_INT8", "sometimes")
    assert onnx_query.int8_mode() == "all"
    for value, mode in (("0", "off"), ("OFF", "off"), ("1", "all"), ("all", "all"), ("", "all"), ("long", "long")):
        monkeypatch.setenv("PALIMPSEST_QUERY_INT8", value)
        assert onnx_query.int8_mode() == mode


def test_a_broken_int8_file_is_made_again_and_a_rejected_one_leaves_queries_on_float32(tmp_path, monkeypatch):
    import shutil

    monkeypatch.setenv("PALIMPSEST_QUERY_INT8", "1")
    model_dir = packaged_model_path()
    graph = onnx_encoder.graph_path(model_dir)
    MiniLMEmbedder()  # this machine's float32 graph exists
    monkeypatch.setenv("PALIMPSEST_CACHE_DIR", str(tmp_path))
    shutil.copy(graph, onnx_encoder.graph_path(model_dir))  # no export needed in the new cache directory
    int8 = onnx_query.int8_path(onnx_encoder.graph_path(model_dir))
    int8.write_bytes(b"truncated by a crash")

    encoder = onnx_encoder.load(model_dir)

    assert encoder.query_path == int8 and int8.stat().st_size > 1_000_000
    assert not list(tmp_path.glob("*.part"))
    assert np.sum(encoder.encode(QUESTIONS) * encoder.encode_queries(QUESTIONS), axis=1).min() >= onnx_query.MIN_COSINE

    int8.unlink()
    monkeypatch.setattr(onnx_query, "MIN_COSINE", 0.99999)  # probes that cannot pass: the int8 graph is refused
    encoder = onnx_encoder.load(model_dir)
    assert encoder.query_path == encoder.path and not int8.exists()
    assert np.abs(encoder.encode_queries(QUESTIONS) - encoder.encode(QUESTIONS)).max() < 1e-5


def test_the_int8_check_encodes_each_probe_alone_as_queries_run(tmp_path, monkeypatch):
    """The check's figure is that of the vectors queries get: each probe in a run of its own (a run quantizes its
    activations over all its rows; probes run together gave least cosine 0.936 on an AVX-512 VNNI machine, where
    alone they give 0.978, and the int8 graph was refused there)."""
    import shutil

    monkeypatch.setenv("PALIMPSEST_QUERY_INT8", "1")
    model_dir = packaged_model_path()
    graph = onnx_encoder.graph_path(model_dir)
    MiniLMEmbedder()
    monkeypatch.setenv("PALIMPSEST_CACHE_DIR", str(tmp_path))
    shutil.copy(graph, onnx_encoder.graph_path(model_dir))
    seen: list[float] = []
    original = onnx_query.query_graph

    def recording(path, check, source=None):
        chosen = original(path, check, source)
        seen.append(check(chosen))
        return chosen

    monkeypatch.setattr(onnx_query, "query_graph", recording)
    encoder = onnx_encoder.load(model_dir)
    assert encoder.query_path == onnx_query.int8_path(encoder.path)
    probes = list(onnx_encoder.PROBES)
    alone = encoder.encode_queries(probes)  # one query per run on int8
    expected = onnx_query.least_cosine(alone, encoder.encode(probes))
    assert seen == [pytest.approx(expected, abs=1e-6)]
