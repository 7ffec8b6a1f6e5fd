"""Shard reads of the declared operations (:mod:`palimpsest.operations`): one query type, each reader by name.

An operation answered by a shard reader has no query model of its own: its parameters are validated by the
operation's request model before they are sent, in a :class:`DeclaredQuery` that names the operation and the
module of its reader. A reader module registers with ``@reader("<operation name>")`` and takes the parameters
as keywords; the shard imports the module on first use (only modules of this package), so adding a read is
one declaration and one reader module, with no table to edit.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from typing import Any

from actors.commands import UserQuery
from actors.decision import Answer
from events.errors import InvalidInputError

READERS: dict[str, Callable[..., Answer]] = {}


class DeclaredQuery(UserQuery):
    operation: str  # the operation's name, its reader's key in READERS
    module: str  # the module that registers the reader, e.g. "actors.reads_user_stats"
    params: dict[str, Any]  # validated by the operation's request model


def reader(operation: str) -> Callable:
    """Register the decorated ``read(core, tenant, user_id, **params) -> Answer`` as the operation's reader."""

    def register(read: Callable[..., Answer]) -> Callable[..., Answer]:
        READERS[operation] = read
        return read

    return register


def read(core, q: DeclaredQuery) -> Answer:
    if q.operation not in READERS and q.module.startswith(f"{__package__}."):
        importlib.import_module(q.module)
    found = READERS.get(q.operation)
    if found is None:
        raise InvalidInputError([("operation", f"{q.operation!r} has no shard reader in {q.module!r}; register one "
                                               "with @actors.declared.reader")], what="query")
    return found(core, q.tenant, q.user_id, **q.params)
