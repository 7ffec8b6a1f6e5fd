"""Re-embedding: move a store to another encoder by recording new vectors as events, then one switch per user.

    palimpsest --store S reembed --embedder multilingual-e5-small [--dry-run]
    mem.reembed("multilingual-e5-small")

1. Every graph label gets a vector of the current encoder first (the ordinary label pass), so the next step sees
   every label.
2. Backfill: each shard lists, per user, the messages and graph labels with no vector of the new model; they are
   encoded in batches (a progress bar) and recorded as ``message_embedded`` / ``graph_labels_embedded`` (ahead)
   events beside the old ones. Searches keep using the old vectors meanwhile.
3. Switch: each shard appends one ``embedder_switched`` event per user, all or none (messages that arrived during
   the backfill are encoded and the switch asked again), then ``store.json`` names the new encoder and this
   process encodes with it.

Every step reads what is left from the log, so a run interrupted anywhere (even by ``kill -9``) is finished by
running it again, with no vector recorded twice. Switching back to an encoder the store had needs no encoding:
its vectors are still in the log. Replay reads the recorded vectors and never calls a model.
"""

from __future__ import annotations

import time
from dataclasses import replace
import numpy as np
import structlog
from tqdm import tqdm

from actors import commands as c
from events.errors import EncoderError
from projections.adapters import encoder_kinds
from projections.adapters.embedding import encode_labels

log = structlog.get_logger("palimpsest.reembed")
BATCH = 128  # texts per encoder call and per recorded command
SWITCH_ROUNDS = 5  # switch attempts, each after encoding what arrived during the previous one
ESTIMATE_SAMPLE = 32  # texts encoded by a dry run to estimate the time


def plan(mem, model: str, tenant: str | None = None, user_id: str | None = None) -> list[dict]:
    """(``mem``: a :class:`palimpsest.Memory`.) Per user: what is left to encode for ``model`` (messages as ``(id, text)``, labels)."""
    return [row for part in mem.shards.ask_each(c.MissingEmbeddings(model_id=model, tenant=tenant, user_id=user_id),
                                                tenant, user_id) for row in part]


def reembed(mem, embedder: str, *, dry_run: bool = False, progress: bool = False,
            batch_size: int = BATCH) -> dict:
    """Move ``mem`` to ``embedder`` (see the module docstring); returns what was done (or, dry, what would be)."""
    encoder_kinds.parse(embedder)
    model = encoder_kinds.model_id(embedder)
    started = time.perf_counter()
    if not dry_run:
        mem.embed_labels()
    todo = plan(mem, model)
    messages, labels = sum(len(r["messages"]) for r in todo), sum(len(r["labels"]) for r in todo)
    report = {"embedder": embedder, "model_id": model, "previous": mem.config.embedder, "users": len(todo),
              "messages": messages, "labels": labels}
    if dry_run:
        return {**report, "dry_run": True, "estimate_seconds": _estimate(embedder, todo, messages + labels)}
    target = encoder_kinds.make_embedder(embedder)
    bar = tqdm(total=messages + labels, unit="text", desc="re-embed", disable=not progress)
    try:
        _backfill(mem, target, model, todo, batch_size, bar)
        switched = _switch(mem, embedder, target, model, batch_size, bar)
    finally:
        bar.close()
    cfg = replace(mem.config, embedder=embedder.strip(), model_id=model, dim=target.dim)
    cfg.save(mem.path)
    mem.adopt_encoder(cfg, target)
    mem.embed_labels()  # labels no vector of the new model covered (staged during the switch): the new encoder's
    report.update(switched=switched, seconds=round(time.perf_counter() - started, 3))
    log.info("reembedded", **report)
    return report


def _estimate(embedder: str, todo: list[dict], total: int) -> float:
    """Seconds to encode ``total`` texts, from a sample of the first ones (the encoder is loaded to time it)."""
    if not total:
        return 0.0
    sample = [t for r in todo for _, t in r["messages"]][:ESTIMATE_SAMPLE] or \
             [x for r in todo for x in r["labels"]][:ESTIMATE_SAMPLE]
    target = encoder_kinds.make_embedder(embedder)
    target.encode(sample[:2])  # a first call pays one-off costs
    t0 = time.perf_counter()
    target.encode(sample)
    return round((time.perf_counter() - t0) / len(sample) * total, 1)


def _backfill(mem, target, model: str, todo: list[dict], batch_size: int, bar) -> None:
    for row in todo:
        tenant, user_id = row["tenant"], row["user_id"]
        pending = row["messages"]
        for start in range(0, len(pending), batch_size):
            chunk = pending[start:start + batch_size]
            ids, texts = (tuple(x) for x in zip(*chunk))
            vectors = _checked(target, target.encode(list(texts)), len(texts))
            mem.shards.send(tenant, user_id, c.RecordEmbeddings(
                tenant=tenant, user_id=user_id, model_id=model, message_ids=ids, input_texts=texts, vectors=vectors))
            bar.update(len(chunk))
        for start in range(0, len(row["labels"]), batch_size):
            chunk = tuple(row["labels"][start:start + batch_size])
            vectors = _checked(target, encode_labels(target, list(chunk)), len(chunk))
            mem.shards.send(tenant, user_id, c.RecordEmbeddings(tenant=tenant, user_id=user_id, model_id=model,
                                                                labels=chunk, label_vectors=vectors))
            bar.update(len(chunk))


def _checked(target, vectors: np.ndarray, n: int) -> np.ndarray:
    vectors = np.asarray(vectors, dtype=np.float32)
    if vectors.shape != (n, target.dim):
        raise EncoderError(f"{target.model_id} returned vectors of shape {vectors.shape} for {n} texts, expected "
                           f"({n}, {target.dim}); nothing of this batch was recorded")
    return vectors


def _switch(mem, embedder: str, target, model: str, batch_size: int, bar) -> int:
    """Switch every shard; a shard that still lacks vectors names its users, which are filled in and asked again."""
    switched = 0
    for _ in range(SWITCH_ROUNDS):
        command = c.SwitchEmbedder(embedder=embedder.strip(), model_id=model, dim=target.dim)
        outcomes = mem.shards.send_each(command)
        switched += sum(o["switched"] for o in outcomes)
        lacking = [key for o in outcomes for key in o["missing"]]
        if not lacking:
            return switched
        rows = []
        for key in lacking:
            tenant, _, user_id = key.partition("/")
            rows += plan(mem, model, tenant, user_id)
        bar.total += sum(len(r["messages"]) + len(r["labels"]) for r in rows)
        _backfill(mem, target, model, rows, batch_size, bar)
    raise EncoderError(f"the switch to {model!r} kept finding new messages without its vectors after "
                       f"{SWITCH_ROUNDS} rounds (an ingest is running); run the re-embedding again when it is done: "
                       "what was recorded stays")
