"""Small helpers shared by the public API modules: results from shard actors, and "now"."""

from __future__ import annotations

from datetime import UTC, datetime

import ray

from events.errors import InvalidInputError, PalimpsestError


def get(refs):
    """``ray.get`` that raises a shard's own Palimpsest error as itself, without Ray's wrapping and traceback."""
    try:
        return ray.get(refs)
    except ray.exceptions.RayTaskError as exc:
        if isinstance(exc.cause, PalimpsestError):
            raise exc.cause from None
        raise


def aware(now: datetime | None, what: str) -> datetime:
    """``now`` or the current time; a naive datetime is ambiguous and refused."""
    if now is None:
        return datetime.now(UTC)
    if not isinstance(now, datetime) or now.tzinfo is None:
        raise InvalidInputError([("now", f"{now!r} is not a timezone-aware datetime; e.g. datetime.now(UTC)")], what=what)
    return now
