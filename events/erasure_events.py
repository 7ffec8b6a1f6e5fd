"""Erasure of a user: the event that records it, and what a forgotten user's stored events decode to.

``user_forgotten`` is stored in clear (it holds no personal data) after the user's last event; the shard
then destroys the user's data keys, so every event before it stays in the log, sealed and unreadable.
A new message for the same user id later is sealed under a fresh key generation.
"""

from __future__ import annotations

from datetime import datetime
from typing import ClassVar

from pydantic import AwareDatetime, Field

from events.model import Event


class UserForgotten(Event):
    """A user was forgotten: its data keys up to ``key_generation`` destroyed, its projections dropped.

    ``through_seq`` is the user's last seq before this event: every event up to it is erased.
    """

    kind: ClassVar[str] = "user_forgotten"
    schema_version: ClassVar[int] = 1

    key_generation: int = Field(ge=1)
    through_seq: int = Field(ge=0)
    at: AwareDatetime

    def occurred(self, recorded_at: datetime) -> datetime:
        return self.at


class PayloadErased(Event):
    """Never stored: the decoded form of a stored event whose data key was destroyed (its kind stays in the
    envelope). No projection reads it, so replay skips it."""

    kind: ClassVar[str] = "payload_erased"
    schema_version: ClassVar[int] = 1

    key_generation: int


ERASURE_EVENT_TYPES: dict[str, type[Event]] = {UserForgotten.kind: UserForgotten}
