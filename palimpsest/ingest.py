"""Ingest: embed validated messages in chunks and send each shard its part as one ``RecordMessages`` command.

The encoder works on the next chunk while the shards append the previous
ones (at most two chunks in flight per shard), and the graph rules read a
chunk on a helper thread while the encoder embeds it; a call returns once
every message is durable.
"""

from __future__ import annotations

from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor

from tqdm import tqdm

from actors import commands as c
from events.commands import RecordMessage
from palimpsest.phases import timed
from palimpsest.remote import Shards
from palimpsest.remote import get as _get
from projections.adapters.embedding import Embedder

QUIET_S = 60.0  # the lease an ingest renews at each chunk: long enough for a slow chunk, short if the driver dies


def send_batches(shards: Shards, embedder: Embedder, commands: list[RecordMessage],
                 graph_of: Callable[[list[RecordMessage]], tuple[list[tuple], list[tuple]]] | None, batch_size: int,
                 progress: bool) -> tuple[dict[int, dict], dict[int, int]]:
    """Per message (by position): its outcome ``{"memory_id", "created"}``; and the graph memories sent with it."""
    shard_of = shards.route([(m.tenant, m.user_id) for m in commands])
    in_flight: list = []
    results: dict[int, dict] = {}
    staging: dict[int, int] = {}  # command → graph memories sent with it (staged if the message is new)
    bar = tqdm(total=len(commands), unit="msg", desc="ingest", disable=not progress)
    # The graph rules are Python on one core; the encoder's sessions let go of the GIL: side by side, neither
    # leaves a core idle while the other runs.
    rules = ThreadPoolExecutor(1, thread_name_prefix="graph-rules") if graph_of else None
    quiet = len(commands) > batch_size  # several chunks: the shards wait with their idle work meanwhile
    try:
        for start in range(0, len(commands), batch_size):
            chunk = list(range(start, min(start + batch_size, len(commands))))
            if quiet:  # renew the lease (actors.warm): no reply awaited
                shards.on_live("quiet", QUIET_S)
            reading = rules.submit(graph_of, [commands[i] for i in chunk]) if rules else None
            with timed("encode"):
                vectors = embedder.encode([commands[i].index_text() for i in chunk])
            graph, readings = reading.result() if reading else (None, None)
            with timed("shard"):
                _send(shards, embedder, commands, chunk, shard_of, vectors, graph, readings, in_flight, results,
                      staging)
            bar.update(len(chunk))
    finally:
        if rules:
            rules.shutdown(cancel_futures=True)
        if quiet:
            shards.on_live("quiet", 0.0)
    with timed("shard"):
        for ref, idx in in_flight:
            results.update(zip(idx, _get(ref)[0]))
    bar.close()
    return results, staging


def _send(shards: Shards, embedder: Embedder, commands: list[RecordMessage], chunk: list[int], shard_of: list[int],
          vectors, graph, readings, in_flight: list, results: dict[int, dict], staging: dict[int, int]) -> None:
    """One chunk to its shards, a ``RecordMessages`` command each; then wait for work older than one chunk."""
    staging.update(zip(chunk, map(len, graph or ())))
    by_shard: dict[int, list[int]] = {}
    for pos, i in enumerate(chunk):
        by_shard.setdefault(shard_of[i], []).append(pos)
    for shard, positions in by_shard.items():
        command = c.RecordMessages(
            messages=tuple(commands[chunk[p]] for p in positions), vectors=vectors[positions],
            model_id=embedder.model_id, graph=tuple(graph[p] for p in positions) if graph else None,
            readings=tuple(readings[p] for p in positions) if readings else None,
        )
        in_flight.append((shards.submit(shard, [command]), [chunk[p] for p in positions]))
    # Keep the encoder busy while shards append: wait only for work older than one chunk.
    while len(in_flight) > 2 * max(1, len(by_shard)):
        ref, idx = in_flight.pop(0)
        results.update(zip(idx, _get(ref)[0]))
