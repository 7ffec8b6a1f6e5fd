"""Where the optional LLM lives and how patiently to call it: a frozen config, read from the environment.

No base URL means no LLM: ``LlmConfig.from_env()`` returns None and every
LLM-driven step uses its deterministic offline fallback (SPEC principle 3).
So does ``OPENAI_BASE_URL`` without ``PALIMPSEST_LLM_MODEL`` (an agent's own
endpoint, most often; a warning says how to use it), while
``PALIMPSEST_LLM_BASE_URL`` without a model is an error.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from urllib.parse import urlsplit

import structlog

from events.errors import LlmError

log = structlog.get_logger("palimpsest.llm")

# Environment variables, first match wins; the OPENAI_* names let an existing
# OpenAI-compatible setup (vLLM, Ollama, llama.cpp server) work unchanged.
ENV_BASE_URL = ("PALIMPSEST_LLM_BASE_URL", "OPENAI_BASE_URL")
ENV_API_KEY = ("PALIMPSEST_LLM_API_KEY", "OPENAI_API_KEY")
ENV_MODEL = ("PALIMPSEST_LLM_MODEL",)
ENV_FEEDBACK_JUDGE = "PALIMPSEST_LLM_FEEDBACK_JUDGE"  # 1: the model judges the user's feedback too
ENV_NUMBERS = {
    "timeout_s": "PALIMPSEST_LLM_TIMEOUT_S",
    "max_retries": "PALIMPSEST_LLM_MAX_RETRIES",
    "backoff_base_s": "PALIMPSEST_LLM_BACKOFF_BASE_S",
    "temperature": "PALIMPSEST_LLM_TEMPERATURE",
    "max_tokens": "PALIMPSEST_LLM_MAX_TOKENS",
}

# field -> (type, accepted?, what a good value looks like)
_NUMBER_RULES: dict[str, tuple[type, Callable[[float], bool], str]] = {
    "timeout_s": (float, lambda v: v > 0, "a number of seconds > 0, e.g. 30"),
    "max_retries": (int, lambda v: v >= 0, "an integer >= 0, e.g. 3"),
    "backoff_base_s": (float, lambda v: v >= 0, "a number of seconds >= 0, e.g. 0.5"),
    "temperature": (float, lambda v: 0 <= v <= 2, "a number from 0 to 2, e.g. 0"),
    "max_tokens": (int, lambda v: v > 0, "an integer > 0, e.g. 1024"),
}


@dataclass(frozen=True, slots=True)
class LlmConfig:
    """An OpenAI-compatible chat endpoint and the call policy for it.

    ``max_retries`` counts attempts after the first one (re-asks for bad
    output included), so a call makes at most ``1 + max_retries`` attempts.
    ``timeout_s`` bounds the connection and each read of one request.
    The API key is kept out of ``repr`` so it never reaches a log line.
    """

    base_url: str
    model: str
    api_key: str | None = field(default=None, repr=False)
    timeout_s: float = 30.0
    max_retries: int = 3
    backoff_base_s: float = 0.5
    temperature: float = 0.0
    max_tokens: int = 1024
    # The Feedback Judge asks the model too (actors.llm.feedback_judge); off: the offline EN/ZH rules judge.
    feedback_judge: bool = False

    def __post_init__(self) -> None:
        object.__setattr__(self, "base_url", _check_base_url(self.base_url, "base_url"))
        if not isinstance(self.model, str) or not self.model.strip():
            raise LlmError("LlmConfig.model is empty; pass the model name the endpoint serves, e.g. 'gpt-4o-mini'")
        for name in _NUMBER_RULES:
            _check_number(name, getattr(self, name), source=f"LlmConfig.{name}")

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None) -> LlmConfig | None:
        """The config described by the environment, or None when no base URL is set (offline mode).

        Raises ``LlmError`` naming the variable when a value is unusable.
        """
        env = os.environ if environ is None else environ
        base_var, base_url = _first(env, ENV_BASE_URL)
        if not base_url:
            return None
        _check_base_url(base_url, base_var)
        _, model = _first(env, ENV_MODEL)
        if not model and base_var != ENV_BASE_URL[0]:
            # OPENAI_BASE_URL alone is most often the agent's own endpoint, not a request for the memory to use one
            log.warning("llm_model_unset_running_offline", variable=base_var,
                        fix="set PALIMPSEST_LLM_MODEL to the model the endpoint serves for the memory to use it")
            return None
        if not model:
            raise LlmError(
                f"{base_var} is set but PALIMPSEST_LLM_MODEL is not; set it to the model name the endpoint "
                "serves (e.g. gpt-4o-mini, llama3.1:8b), or unset the base URL to run offline"
            )
        _, api_key = _first(env, ENV_API_KEY)
        numbers = {}
        for name, var in ENV_NUMBERS.items():
            raw = env.get(var, "").strip()
            if raw:
                numbers[name] = _check_number(name, _convert(name, raw, var), source=var)
        judge_var = ENV_FEEDBACK_JUDGE
        raw = env.get(judge_var, "").strip().lower()
        if raw not in ("", "0", "1", "true", "false", "yes", "no", "on", "off"):
            raise LlmError(f"{judge_var}={raw!r}: use 1 to let the model judge feedback, 0 (default) for the rules")
        return cls(base_url=base_url, model=model, api_key=api_key or None,
                   feedback_judge=raw in ("1", "true", "yes", "on"), **numbers)


def _first(env: Mapping[str, str], names: tuple[str, ...]) -> tuple[str, str]:
    """The first of ``names`` set to a non-blank value, and that value (stripped)."""
    for name in names:
        value = env.get(name, "").strip()
        if value:
            return name, value
    return names[0], ""


def _check_base_url(value: object, source: str) -> str:
    """``value`` without a trailing slash, if it is an http(s) URL with a host."""
    parts = urlsplit(value) if isinstance(value, str) else None
    if parts is None or parts.scheme not in ("http", "https") or not parts.netloc:
        raise LlmError(
            f"{source}={value!r} is not an http(s) URL; set it to the endpoint's API root, "
            "e.g. http://127.0.0.1:11434/v1 (Ollama) or https://api.openai.com/v1"
        )
    return value.rstrip("/")


def _convert(name: str, raw: str, var: str) -> float | int:
    kind, _, hint = _NUMBER_RULES[name]
    try:
        return kind(raw)
    except ValueError:
        raise LlmError(f"{var}={raw!r} is not {hint}; fix or unset it") from None


def _check_number(name: str, value: object, *, source: str) -> float | int:
    kind, accepted, hint = _NUMBER_RULES[name]
    numeric = isinstance(value, int | float) and not isinstance(value, bool)
    if not numeric or (kind is int and not isinstance(value, int)) or not accepted(value):
        raise LlmError(f"{source}={value!r} is not {hint}; fix it")
    return value
