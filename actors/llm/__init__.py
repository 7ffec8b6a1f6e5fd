"""The optional LLM provider: an OpenAI-compatible client whose every call is an event, and its replay twin.

No Ray here: LLM-driven steps receive a ``StructuredLlm`` (a live
``LlmClient`` or a replaying ``RecordedLlm``) and take their offline
fallback when ``LlmConfig.from_env()`` is None or a result is not ``ok``.
"""

from actors.llm.client import LlmClient, LlmResult, StructuredLlm
from actors.llm.config import LlmConfig
from actors.llm.parsing import MalformedOutputError, parse_lenient, parse_structured, validate
from actors.llm.replay import RecordedLlm

__all__ = [
    "LlmClient",
    "LlmConfig",
    "LlmResult",
    "MalformedOutputError",
    "RecordedLlm",
    "StructuredLlm",
    "parse_lenient",
    "parse_structured",
    "validate",
]
