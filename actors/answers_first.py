"""Commands whose decider asks a language model: the model is asked first, with no lock held.

A decider is a pure function of the state, the command and its dependencies;
with a language model configured, some of them (new messages: graph memories
and note operations; replies: which memories were used; note reviews;
feedback judging) ask it. :func:`handle` keeps those asks out of the shard's
locks in rounds:

1. under both locks, each command is decided with :class:`AnswersFirst` as
   its model: an ask already answered gets that answer; any other ask is
   noted, answered as failed for now, and the decision is dropped before
   anything is appended (a decision is only data until its commit);
2. with no lock held, the noted asks go to the model;
3. the command is decided again under the locks, now with every answer it
   asked for, and committed with its ``llm_call_recorded`` events, as a live
   call would have been.

Event ids drawn by a dropped decision are drawn again in the same order by
the next (:func:`actors.decision.drawing_ids`), so a prompt naming an id made
earlier in the same decision (a note added earlier in a batch) is the same
prompt in every round. A command another client changed the state under
between rounds may ask something new: it takes another round. After
``MAX_ROUNDS`` the command is decided with the live model under the locks, as
before (logged): it is never refused for it.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping, Sequence
from contextlib import AbstractContextManager, nullcontext
from typing import Any

import structlog

from actors.llm.client import LlmResult, canonical_json
from actors.llm.parsing import json_schema_of
from events.model import LlmCallRecorded

log = structlog.get_logger("palimpsest.shard")
MAX_ROUNDS = 4
NOT_ASKED = "not asked yet: the decision is made again once the model has answered"
Ask = tuple[str, list[dict[str, str]], Any, dict[str, Any]]  # purpose, messages, schema or model, parameters


def ask_key(purpose: str, messages: Sequence[Mapping[str, str]], schema_or_model: Any, params: Mapping) -> str:
    """What identifies an ask: its purpose, messages, output schema and parameters (canonical JSON)."""
    return canonical_json([purpose, [dict(m) for m in messages], json_schema_of(schema_or_model), dict(params)])


class AnswersFirst:
    """A ``StructuredLlm`` that answers from calls already made and notes every other ask in ``missed``."""

    def __init__(self, answers: Mapping[str, LlmResult], config=None) -> None:
        self.answers = answers
        self.config = config  # the live client's settings (which steps ask the model, e.g. ``feedback_judge``)
        self.missed: dict[str, Ask] = {}

    def complete_json(self, purpose: str, messages: Sequence[Mapping[str, str]], schema_or_model: Any,
                      **params: Any) -> LlmResult:
        key = ask_key(purpose, messages, schema_or_model, params)
        answer = self.answers.get(key)
        if answer is not None:
            return copy.deepcopy(answer)  # a decider that edits what it parsed leaves the next round's copy as asked
        self.missed.setdefault(key, (purpose, [dict(m) for m in messages], schema_or_model, params))
        placeholder = LlmCallRecorded(purpose=purpose, model="", base_url="", prompt_sha256="", messages_json="[]",
                                      error=NOT_ASKED)
        return LlmResult(event=placeholder, parsed=None)


def handle(core, commands: list, *, writing: AbstractContextManager | None = None,
           projections: AbstractContextManager | None = None, after_commit=None) -> list:
    """Apply ``commands`` on ``core`` (a :class:`~actors.core.ShardCore`) in order, asking its model outside the
    locks (``writing`` then ``projections``, as :class:`actors.shard.ShardActor` holds them); their outcomes.

    ``after_commit`` runs under the locks after each round that applied commands (the shard's injected-crash
    check)."""
    writing = writing if writing is not None else nullcontext()
    projections = projections if projections is not None else nullcontext()
    llm = core.llm
    if llm is None:  # no model: nothing to ask
        with writing, projections:
            outcomes = core.handle_live(commands)
            if after_commit is not None:
                after_commit()
            return outcomes
    answers: dict[str, LlmResult] = {}
    ids: dict[str, list[str]] = {}  # per command id: the event ids its decisions drew, in order
    outcomes: list = []
    remaining = list(commands)
    for _ in range(MAX_ROUNDS):
        with writing, projections:
            done, missed = core.handle_answered(remaining, AnswersFirst(answers, getattr(llm, "config", None)), ids)
            if after_commit is not None:
                after_commit()
        outcomes += done
        remaining = remaining[len(done):]
        if not remaining:
            return outcomes
        for key, (purpose, messages, schema, params) in missed.items():  # no lock held: the one slow step
            answers[key] = llm.complete_json(purpose, messages, schema, **params)
    log.warning("model_asked_under_lock", commands=len(remaining), rounds=MAX_ROUNDS,
                reason="the state kept changing between rounds")
    with writing, projections:
        outcomes += core.handle_live(remaining)
        if after_commit is not None:
            after_commit()
    return outcomes
