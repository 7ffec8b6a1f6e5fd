"""Replay's LLM: answers from recorded ``llm_call_recorded`` events and never opens a connection.

SPEC principle 2, "replay never calls a model": a step that asked a live
``LlmClient`` during ingestion gets, during replay, the very answer (or the
very failure) it got then, so it takes the same branch and writes the same
events. Running a new model over old data is a re-derivation with a live
client, never a replay.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from actors.llm.client import LlmResult, call_parameters, checked_messages, prompt_sha256
from actors.llm.config import LlmConfig
from actors.llm.parsing import MalformedOutputError, SchemaOrModel, validate
from events.envelope import Envelope
from events.errors import LlmError
from events.model import Event, LlmCallRecorded


class RecordedLlm:
    """A ``StructuredLlm`` backed by recorded calls, keyed by (purpose, prompt_sha256).

    The prompt hash covers the model and sampling settings, which replay may
    not know; without a ``config`` it tries each (model, temperature,
    max_tokens) that occurs in the records. A prompt recorded several times
    is answered in recorded order (the last answer repeats once exhausted),
    so a replay sees what the live run saw call by call.
    """

    def __init__(self, records: Iterable[Event | Envelope], config: LlmConfig | None = None) -> None:
        """Keep the ``llm_call_recorded`` events among ``records`` (other kinds are ignored), in order."""
        self._calls: dict[tuple[str, str], list[LlmCallRecorded]] = {}
        self._cursor: dict[tuple[str, str], int] = {}
        self._lock = threading.Lock()
        signatures: dict[tuple[str, float, int], None] = {}
        for record in records:
            event = record.event if isinstance(record, Envelope) else record
            if isinstance(event, LlmCallRecorded):
                self._calls.setdefault((event.purpose, event.prompt_sha256), []).append(event)
                params = event.parameters
                signatures[(event.model, params.get("temperature"), params.get("max_tokens"))] = None
        if config is not None:
            signatures = {(config.model, config.temperature, config.max_tokens): None}
        self._signatures = tuple(signatures)

    def __len__(self) -> int:
        """How many calls were recorded."""
        return sum(len(calls) for calls in self._calls.values())

    def complete_json(
        self, purpose: str, messages: Sequence[Mapping[str, str]], schema_or_model: SchemaOrModel, **params: Any
    ) -> LlmResult:
        """The recorded result of this exact call, with ``replayed=True``.

        Raises ``LlmError`` when nothing was recorded for the prompt, when records
        from different models match it (pass ``config`` to choose), or when the
        recorded answer no longer fits ``schema_or_model``.
        """
        asked = checked_messages(messages)
        matches: dict[str, tuple[str, str]] = {}
        for model, temperature, max_tokens in self._signatures:
            parameters = call_parameters(temperature, max_tokens, schema_or_model, params)
            key = (purpose, prompt_sha256(model, asked, parameters))
            if key in self._calls:
                matches[model] = key
        if not matches:
            raise LlmError(
                f"no recorded call for this prompt; replay never calls a model (purpose={purpose!r}, "
                f"{len(self)} calls recorded). Record it with a live LlmClient first, or re-derive with one "
                "as a new, explicit step"
            )
        if len(matches) > 1:
            raise LlmError(
                f"recorded calls from several models match this prompt ({sorted(matches)}); "
                "pass RecordedLlm(records, config=...) with the model to replay"
            )
        (key,) = matches.values()
        event = self._next(key)
        return LlmResult(event=event, parsed=_parsed(event, schema_or_model), replayed=True)

    def _next(self, key: tuple[str, str]) -> LlmCallRecorded:
        with self._lock:
            calls, cursor = self._calls[key], self._cursor.get(key, 0)
            self._cursor[key] = min(cursor + 1, len(calls) - 1)
            return calls[cursor]


def _parsed(event: LlmCallRecorded, schema_or_model: SchemaOrModel) -> Any:
    """The recorded answer as the live call returned it (a model instance for a pydantic model)."""
    if event.parsed_json is None:
        return None
    try:
        return validate(json.loads(event.parsed_json), schema_or_model)
    except MalformedOutputError as exc:
        raise LlmError(
            f"the recorded answer of call {event.prompt_sha256[:12]} no longer fits the schema ({exc}); "
            "the schema's code changed since recording: re-derive with a live LlmClient as an explicit step"
        ) from None
