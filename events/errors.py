"""The project's exceptions: one root, specific subclasses, messages that say how to fix the problem."""

from __future__ import annotations


class PalimpsestError(Exception):
    """Root of every error Palimpsest raises on purpose."""


class InvalidInputError(PalimpsestError, ValueError):
    """Input was rejected at the boundary; nothing was written.

    ``problems`` holds one ``(location, message)`` pair per invalid field, where
    ``location`` reads like ``messages[3].occurred_at``.
    """

    def __init__(self, problems: list[tuple[str, str]], *, what: str = "input") -> None:
        self.problems = tuple(problems)
        self.what = what
        lines = [f"  - {loc}: {msg}" for loc, msg in self.problems]
        super().__init__(
            f"rejected {what}: {len(self.problems)} problem(s); nothing was written\n" + "\n".join(lines)
        )

    def __reduce__(self):  # crosses process boundaries (Ray) with its problems (and its subclass) intact
        return _rebuild_invalid_input, (list(self.problems), self.what, type(self))


def _rebuild_invalid_input(problems: list[tuple[str, str]], what: str,
                           kind: type[InvalidInputError] | None = None) -> InvalidInputError:
    return (kind or InvalidInputError)(problems, what=what)


class QueryLimitError(InvalidInputError):
    """A read-only query ran past one of its cost limits (time, rows, memory) and was stopped; each problem names
    the limit, its setting and how to narrow the query."""


class QueryForbiddenError(InvalidInputError):
    """A read-only query asked for something its sandbox forbids (a file, a secret, a setting): 403 over HTTP."""


class ConcurrencyError(PalimpsestError):
    """An append raced another writer: the expected sequence number was already taken."""


class UnknownEventError(PalimpsestError):
    """The log holds an event kind or version this code cannot decode."""


class StoreError(PalimpsestError):
    """The store directory is missing, locked or inconsistent."""


class ShardUnavailableError(PalimpsestError):
    """A shard actor could not be reached even after retries."""


class EncoderError(PalimpsestError):
    """The text encoder could not embed: a misconfigured kind, an unreachable or refusing endpoint, vectors of the
    wrong shape. Raised before anything is written (vectors are computed before their events are appended)."""


class LlmError(PalimpsestError):
    """The LLM provider was misconfigured or misused, or replay found no recorded call.

    Model misbehaviour (timeouts, bad JSON, server errors) is never raised: it is
    recorded in an ``llm_call_recorded`` event and the offline fallback takes over.
    """
