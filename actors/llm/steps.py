"""What the LLM-driven steps share: who decided, why the offline rules took over, and how lines are shown.

Each step (``memory_ops``, ``titles``, ``distill``, ``review``, ``usage``,
``graph_ops``, ``causality``) asks a ``StructuredLlm`` once per batch and
returns the call's ``llm_call_recorded`` event beside the domain events it
led to; the shard appends both in one batch, so replay folds the recorded
decisions and never asks again. Pure apart from the call itself and the ids ``new_id`` mints.
``titles`` and ``distill`` also come as a prompt and a pure decision from the
answer (``title_prompt`` / ``title_from_answer``, ``distill_prompt`` /
``distillation_from_answer``): the shard asks those with no lock held (:mod:`actors.reactor`).
"""

from __future__ import annotations

from collections.abc import Sequence

from events.model import LlmCallRecorded, MessageRecorded

OFFLINE_ID = "rules-v1"
ERROR_CHARS = 240  # an HTTP error body can be 500 characters; a reason only needs its gist
LINE_CHARS = 1500  # one dialogue line in a prompt; longer messages are cut (a prompt must stay bounded)


def llm_decider(event: LlmCallRecorded) -> str:
    """The decider / reviewer / titler id of an answer read from ``event``: ``llm:<model>``."""
    return f"llm:{event.model}"


def clip(text: str, limit: int) -> str:
    """``text`` on one line, cut to ``limit`` characters with an ellipsis."""
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"


def unavailable(event: LlmCallRecorded) -> str:
    """The reason prefix of a decision the offline rules took because the call failed."""
    return f"llm unavailable ({clip(event.error or 'no usable answer', ERROR_CHARS)}); offline rules: "


def dialogue(messages: Sequence[tuple[str, MessageRecorded]], *, numbered: bool = True) -> str:
    """``messages`` as prompt lines: ``[i] <time> <role> (<speaker>): <text>``, oldest first.

    Times are shown so the model can tell a change over time from a contradiction.
    """
    lines = []
    for i, (_, message) in enumerate(messages):
        who = f"{message.role} ({message.speaker})" if message.speaker else message.role
        when = message.occurred_at.isoformat(timespec="minutes")
        head = f"[{i}] " if numbered else ""
        lines.append(f"{head}{when} {who}: {clip(message.text, LINE_CHARS)}")
    return "\n".join(lines)
