"""Builders for episode tests: turns with hand-made unit vectors, an independent batch segmenter, summaries.

Topic A lies near e1, topic B near e2, a digression X on e3. ``events_of``
records each message followed by its embedding, as the decider does.
``batch_segment`` is the reference the incremental fold is checked against:
it decides every position from the whole prefix, splits, caps, then merges,
without the fold's pending queue.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from datetime import timedelta

import numpy as np

from events.model import MessageEmbedded, MessageRecorded
from projections.folds import lexical, messages
from projections.folds.episodes import (
    EpisodeMember,
    EpisodeState,
    SegmentationConfig,
    fold,
    hard_reason,
    make_episode,
    window_similarity,
)
from projections.queries.summaries import (
    DEFAULT_SUMMARY,
    EpisodeSummary,
    SummaryConfig,
    summarize,
)
from tests.builders import T0, embedding, message, stream

__all__ = ["A", "B", "Turn", "X", "batch_segment", "events_of", "on", "summarised", "unit"]


def unit(*weights: float) -> np.ndarray:
    v = np.zeros(4)
    v[: len(weights)] = weights
    return v / np.linalg.norm(v)


A, B, X = unit(1, 0, 0.1), unit(0.1, 1, 0), unit(0, 0, 1)


@dataclass
class Turn:
    text: str
    vector: np.ndarray | None
    at: float = 0.0  # minutes after T0
    role: str = "user"
    conversation_id: str = "conv-1"
    speaker: str | None = None
    metadata: dict = field(default_factory=dict)


def events_of(*turns: Turn) -> list[tuple[str, object]]:
    """(event id, event) pairs: each message m<i> followed by its embedding e<i> (when it has a vector)."""
    out = []
    for i, t in enumerate(turns):
        msg = message(t.text, f"c{i}", role=t.role, speaker=t.speaker, conversation_id=t.conversation_id,
                      turn_id=f"t{i}", occurred_at=T0 + timedelta(minutes=t.at))
        if t.metadata:
            msg = MessageRecorded.model_validate({**msg.model_dump(), "metadata": t.metadata})
        out.append((f"m{i:02d}", msg))
        if t.vector is not None:
            out.append((f"e{i:02d}", embedding(f"m{i:02d}", t.vector)))
    return out


def on(topic: np.ndarray, n: int, start: float = 0.0, text: str = "turn", **kw) -> list[Turn]:
    """``n`` turns on ``topic``, one minute apart from ``start``."""
    return [Turn(f"{text} {i}", topic, at=start + i, **kw) for i in range(n)]


def batch_segment(envelopes, config: SegmentationConfig) -> list:
    """Independent reference: decide every position from the whole prefix, split, cap, then merge small pieces."""
    msgs, events, vecs = [], [], []
    for env in envelopes:
        if isinstance(env.event, MessageRecorded):
            msgs.append(EpisodeMember(env.event_id, env.seq, env.event.conversation_id, env.event.turn_id,
                                      env.event.role, env.event.occurred_at))
            events.append(env.event)
            vecs.append(None)
        elif isinstance(env.event, MessageEmbedded) and msgs and env.event.message_event_id == msgs[-1].event_id:
            vecs[-1] = env.event.array()
    n, w = len(msgs), config.window
    hard = [hard_reason(msgs[i - 1] if i else None, events[i], config) for i in range(n)]
    reasons: list[str | None] = list(hard)
    for i in range(n):
        if hard[i] is not None:
            continue
        seg_start = max(j for j in range(i) if hard[j] is not None)
        nxt_hard = min([j for j in range(i + 1, n) if hard[j] is not None], default=n)
        end = min(i + w, nxt_hard)
        undecided = end == n and nxt_hard == n and (end - i < w or vecs[n - 1] is None)
        if undecided:
            break  # this and every later position wait for more of the stream
        before = [v for v in vecs[max(i - w, seg_start) : i] if v is not None]
        after = [v for v in vecs[i:end] if v is not None]
        sim = window_similarity(before, after)
        reasons[i] = "topic_shift" if sim is not None and sim < config.topic_threshold else None
    members = [replace(m, vector=v) for m, v in zip(msgs, vecs)]
    chunks: list[tuple[str, list]] = []
    for m, r in zip(members, reasons):
        if r is not None:
            chunks.append((r, [m]))
        else:
            chunks[-1][1].append(m)
    pieces = [(r if k == 0 else "max_size", c[k : k + config.max_size])
              for r, c in chunks for k in range(0, len(c), config.max_size)]
    out: list[tuple[str, list]] = []
    for idx, (r, piece) in enumerate(pieces):
        last = idx == len(pieces) - 1
        if (not last and r == "topic_shift" and len(piece) < config.min_size and out
                and len(out[-1][1]) + len(piece) <= config.max_size):
            out[-1] = (out[-1][0], out[-1][1] + piece)
        else:
            out.append((r, piece))
    return [make_episode(r, piece, is_open=k == len(out) - 1) for k, (r, piece) in enumerate(out)]


def summarised(
    corpus: list[str], episode: list[tuple[str | None, str]], vectors=None, config: SummaryConfig = DEFAULT_SUMMARY
) -> EpisodeSummary:
    """Summary of one episode of ``(speaker, text)`` turns, with ``corpus`` messages recorded a day earlier."""
    pairs = [(f"k{i}", message(t, f"k{i}", occurred_at=T0 - timedelta(days=1))) for i, t in enumerate(corpus)]
    turns = [Turn(t, (vectors or [A] * len(episode))[i], at=i, speaker=s) for i, (s, t) in enumerate(episode)]
    evs = stream(*pairs, *events_of(*turns))
    state = fold(EpisodeState(), evs, SegmentationConfig())
    store = messages.MessageStore()
    index = lexical.LexicalIndex()
    for env in evs:
        messages.evolve(store, env)
        lexical.evolve(index, env)
    return summarize(state.episodes()[-1], store.by_id, index, config)
