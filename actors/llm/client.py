"""A structured-output client for any OpenAI-compatible chat endpoint; every call becomes an event.

``LlmClient.complete_json`` never raises for what a model or server does
(timeouts, refused connections, 429/5xx, unparseable output): after its
retries it returns an ``LlmResult`` whose event records the error, and the
caller takes its offline fallback. Only misuse and misconfiguration raise
``LlmError``. Replay answers the same calls from the events (``actors.llm.replay``).
"""

from __future__ import annotations

import hashlib
import http.client
import json
import random
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from email.utils import parsedate_to_datetime
from typing import Any, Protocol

import structlog
from pydantic import BaseModel

from actors.llm.config import LlmConfig
from actors.llm.parsing import MalformedOutputError, SchemaOrModel, json_schema_of, parse_structured, schema_name
from events.errors import LlmError
from events.model import ROLES, LlmCallRecorded

log = structlog.get_logger("palimpsest.llm")

RETRYABLE_STATUS = frozenset({408, 409, 425, 429})  # plus every 5xx
MAX_BACKOFF_S = 30.0
MAX_RETRY_AFTER_S = 60.0  # a server asking for a longer pause is treated as down: the offline fallback is faster
REASK = "Your previous reply could not be used: {}. Reply again with only the JSON value, matching the schema exactly."
RESERVED_PARAMS = frozenset({"model", "messages", "response_format", "schema", "schema_sha256", "stream"})


@dataclass(frozen=True, slots=True)
class LlmResult:
    """One structured call: the event to append to the log, and the validated answer (None on failure).

    ``replayed`` is True when the answer came from a recorded event; its
    event is already in the log and must not be appended again.
    """

    event: LlmCallRecorded
    parsed: Any | None
    replayed: bool = False

    @property
    def ok(self) -> bool:
        return self.event.error is None


class StructuredLlm(Protocol):
    """What LLM-driven steps depend on: a live ``LlmClient`` or a replaying ``RecordedLlm``."""

    def complete_json(
        self, purpose: str, messages: Sequence[Mapping[str, str]], schema_or_model: SchemaOrModel, **params: Any
    ) -> LlmResult: ...


def canonical_json(value: Any) -> str:
    """Key-sorted, compact, UTF-8-preserving JSON: equal values give equal text (and equal hashes)."""
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def prompt_sha256(model: str, messages: list[dict[str, str]], parameters: Mapping[str, Any]) -> str:
    """The hash that identifies a call for replay: sha256 of the canonical JSON of model, messages, parameters."""
    payload = canonical_json({"model": model, "messages": messages, "parameters": dict(parameters)})
    return hashlib.sha256(payload.encode("utf-8")).hexdigest()


def checked_messages(messages: Sequence[Mapping[str, str]]) -> list[dict[str, str]]:
    """``messages`` as plain ``{"role", "content"}`` dicts; raises ``LlmError`` on a malformed one."""
    if isinstance(messages, str | bytes) or not messages:
        raise LlmError("messages must be a non-empty list of {'role': ..., 'content': ...} dicts")
    checked = []
    for i, message in enumerate(messages):
        role, content = message.get("role"), message.get("content")
        if role not in ROLES or not isinstance(content, str):
            raise LlmError(f"messages[{i}] needs a role in {ROLES} and a string content; got {dict(message)!r}")
        checked.append({"role": role, "content": content})
    return checked


def call_parameters(
    temperature: float, max_tokens: int, schema_or_model: SchemaOrModel, params: Mapping[str, Any]
) -> dict[str, Any]:
    """The hashed parameters of a call: sampling settings, extra ``params`` and the expected schema."""
    bad = sorted(set(params) & RESERVED_PARAMS)
    scalars = all(v is None or isinstance(v, str | int | float | bool) for v in params.values())
    if bad or not scalars:
        raise LlmError(
            f"extra parameters must be scalars and none of {sorted(RESERVED_PARAMS)}; got {dict(params)!r}"
        )
    schema = json_schema_of(schema_or_model)
    return {
        "temperature": temperature,
        "max_tokens": max_tokens,
        **params,
        "schema": schema_name(schema_or_model),
        "schema_sha256": hashlib.sha256(canonical_json(schema).encode("utf-8")).hexdigest(),
    }


class _Transient(Exception):
    """A failure worth retrying; ``retry_after`` is the server's requested pause in seconds, if any."""

    def __init__(self, reason: str, retry_after: float | None = None) -> None:
        super().__init__(reason)
        self.retry_after = retry_after


class _Fatal(Exception):
    """A failure that another identical request would repeat (bad key, unknown model, bad request)."""


class _SchemaUnsupported(Exception):
    """The server answered 400 to ``response_format: json_schema``."""


class LlmClient:
    """Calls one endpoint with one model; remembers whether it accepts ``json_schema`` output.

    After the first 400 to ``json_schema`` every later call uses ``json_object``.
    Thread-safe: that flag is the only state, and flipping it twice is harmless.
    """

    def __init__(self, config: LlmConfig | None, *, sleep: Callable[[float], None] = time.sleep) -> None:
        if config is None:
            raise LlmError(
                "no LLM is configured: set PALIMPSEST_LLM_BASE_URL and PALIMPSEST_LLM_MODEL "
                "(or pass an LlmConfig), or use the offline fallback"
            )
        self.config = config
        self._sleep = sleep
        self._json_schema_ok = True

    def complete_json(
        self, purpose: str, messages: Sequence[Mapping[str, str]], schema_or_model: SchemaOrModel, **params: Any
    ) -> LlmResult:
        """Ask for JSON matching ``schema_or_model``; always returns a result with its ``llm_call_recorded`` event.

        Retries (at most ``config.max_retries``, with exponential backoff, or the
        server's Retry-After) on timeouts, connection errors, 429 and 5xx, and
        re-asks when the reply does not parse or validate. A 400 to
        ``json_schema`` switches to ``json_object`` with the schema in the
        system prompt, without using up a retry.
        """
        if not isinstance(purpose, str) or not purpose:
            raise LlmError("purpose must name the step that asks, e.g. 'note_extraction'")
        cfg = self.config
        asked = checked_messages(messages)
        parameters = call_parameters(cfg.temperature, cfg.max_tokens, schema_or_model, params)
        started = time.perf_counter()
        raw, parsed, error, requests = self._exchange(purpose, asked, schema_or_model, parameters)
        latency_ms = (time.perf_counter() - started) * 1000
        dumped = parsed.model_dump(mode="json") if isinstance(parsed, BaseModel) else parsed
        event = LlmCallRecorded(
            purpose=purpose,
            model=cfg.model,
            base_url=cfg.base_url,
            prompt_sha256=prompt_sha256(cfg.model, asked, parameters),
            messages_json=canonical_json(asked),
            parameters=parameters,
            raw_output=self._scrub(raw),
            parsed_json=None if error else canonical_json(dumped),
            error=self._scrub(error),
            attempts=requests,
            latency_ms=latency_ms,
        )
        log.info("llm.call", purpose=purpose, ok=error is None, attempts=requests, latency_ms=round(latency_ms, 1))
        if error:
            log.warning("llm.failed", purpose=purpose, model=cfg.model, error=event.error)
        return LlmResult(event=event, parsed=None if error else parsed)

    def _exchange(
        self, purpose: str, asked: list[dict[str, str]], schema_or_model: SchemaOrModel, parameters: dict[str, Any]
    ) -> tuple[str | None, Any, str | None, int]:
        """Requests until a reply validates or attempts run out: (last reply, parsed, error, requests made)."""
        schema = json_schema_of(schema_or_model)
        conversation, raw, requests, tries = asked, None, 0, 0
        while True:
            tries, requests = tries + 1, requests + 1
            try:
                json_schema = self._json_schema_ok  # read once: another thread may flip it mid-request
                raw = self._post(self._body(conversation, schema, parameters, json_schema), json_schema)
                return raw, parse_structured(raw, schema_or_model), None, requests
            except _SchemaUnsupported:
                self._json_schema_ok, tries = False, tries - 1
                continue
            except _Fatal as exc:
                return raw, None, str(exc), requests
            except MalformedOutputError as exc:
                error, delay = f"the reply did not match the schema: {exc}", 0.0
                # Only the latest bad reply is shown back, so a re-ask stays as short as the first ask.
                reask = {"role": "user", "content": REASK.format(exc)}
                conversation = [*asked, {"role": "assistant", "content": raw}, reask]
            except _Transient as exc:
                error, delay = str(exc), exc.retry_after if exc.retry_after is not None else self._backoff(tries)
                if delay > MAX_RETRY_AFTER_S:
                    return raw, None, f"{error}; gave up: the server asked for a {delay:.0f} s pause", requests
            if tries > self.config.max_retries:
                return raw, None, error, requests
            log.warning("llm.retry", purpose=purpose, attempt=requests, reason=error, delay_s=round(delay, 3))
            self._sleep(delay)

    def _body(
        self, conversation: list[dict[str, str]], schema: dict[str, Any], parameters: dict[str, Any], json_schema: bool
    ) -> bytes:
        """The chat-completions request: structured output by ``json_schema``, or ``json_object`` plus a prompt."""
        sent = {k: v for k, v in parameters.items() if k not in ("schema", "schema_sha256")}
        if json_schema:
            response_format = {"type": "json_schema", "json_schema": {"name": parameters["schema"], "schema": schema}}
        else:
            response_format = {"type": "json_object"}
            conversation = _with_schema_prompt(conversation, schema)
        body = {"model": self.config.model, "messages": conversation, "response_format": response_format, **sent}
        return json.dumps(body, ensure_ascii=False).encode("utf-8")

    def _post(self, body: bytes, json_schema: bool) -> str:
        """The assistant's reply text for one request; raises ``_Transient``, ``_Fatal`` or ``_SchemaUnsupported``."""
        cfg = self.config
        url = f"{cfg.base_url}/chat/completions"
        headers = {"Content-Type": "application/json", "Accept": "application/json", "User-Agent": "palimpsest"}
        if cfg.api_key:
            headers["Authorization"] = f"Bearer {cfg.api_key}"
        request = urllib.request.Request(url, data=body, headers=headers, method="POST")
        try:
            with urllib.request.urlopen(request, timeout=cfg.timeout_s) as response:
                payload = response.read()
        except urllib.error.HTTPError as exc:
            status, detail = exc.code, exc.read()[:500].decode("utf-8", "replace").strip()
            exc.close()
            if status == 400 and json_schema:
                raise _SchemaUnsupported from None
            if status in RETRYABLE_STATUS or status >= 500:
                retry_after = _retry_after(exc.headers.get("Retry-After"))
                raise _Transient(f"HTTP {status} from {url}: {detail}", retry_after) from None
            raise _Fatal(f"HTTP {status} from {url}: {detail}{_STATUS_HINTS.get(status, '')}") from None
        except TimeoutError:
            raise _Transient(f"no reply from {url} within {cfg.timeout_s} s") from None
        except urllib.error.URLError as exc:
            if isinstance(exc.reason, TimeoutError):
                raise _Transient(f"no reply from {url} within {cfg.timeout_s} s") from None
            raise _Transient(f"cannot reach {url}: {exc.reason}") from None
        except (OSError, http.client.HTTPException) as exc:
            raise _Transient(f"connection to {url} failed: {exc!r}") from None
        try:
            content = json.loads(payload)["choices"][0]["message"]["content"]
        except (ValueError, KeyError, IndexError, TypeError):
            raise _Transient(f"{url} answered with a body that is not a chat completion: {payload[:200]!r}") from None
        return content if isinstance(content, str) else ""  # a refusal (null content) is re-asked like bad JSON

    def _backoff(self, tries: int) -> float:
        # Jitter spreads the retries of many shard actors that failed together.
        delay = min(MAX_BACKOFF_S, self.config.backoff_base_s * 2 ** (tries - 1))
        return delay * random.uniform(0.5, 1.0)

    def _scrub(self, text: str | None) -> str | None:
        """``text`` with the API key masked: a server may echo headers into an error body."""
        key = self.config.api_key
        return text.replace(key, "***") if text and key else text


_STATUS_HINTS = {
    401: "; check PALIMPSEST_LLM_API_KEY",
    403: "; check PALIMPSEST_LLM_API_KEY and the key's permissions",
    404: "; check PALIMPSEST_LLM_BASE_URL (it should end at the API root, e.g. /v1) and PALIMPSEST_LLM_MODEL",
}


def _retry_after(value: str | None) -> float | None:
    """Seconds from a Retry-After header (delta-seconds or an HTTP date); None if absent or unreadable."""
    if not value:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        return max(0.0, parsedate_to_datetime(value).timestamp() - time.time())
    except (TypeError, ValueError):
        return None


def _with_schema_prompt(conversation: list[dict[str, str]], schema: dict[str, Any]) -> list[dict[str, str]]:
    """``conversation`` with the schema stated in its system message (some chat templates allow only one)."""
    instruction = "Reply with one JSON object only, no prose, matching this JSON schema:\n" + json.dumps(schema)
    if conversation[0]["role"] == "system":
        first = {"role": "system", "content": conversation[0]["content"] + "\n\n" + instruction}
        return [first, *conversation[1:]]
    return [{"role": "system", "content": instruction}, *conversation]
