"""Adapters for the agent frameworks users already build with, each an optional extra:

- :mod:`palimpsest.integrations.langgraph_store`: a LangGraph long-term store (``pip install 'palimpsest[langgraph]'``);
- :mod:`palimpsest.integrations.agents_session`: an OpenAI Agents SDK session with long-term recall
  (``pip install 'palimpsest[agents]'``).

Nothing here is imported by ``palimpsest`` itself: a framework is imported only when its adapter is, and a
missing one is a :class:`MissingExtraError` naming the extra to install. An adapter used after its ``close()``
raises :class:`ClosedError`.
"""

from __future__ import annotations

from typing import Any

from events.commands import ID_RULE, id_problem
from events.errors import PalimpsestError


class MissingExtraError(PalimpsestError, ImportError):
    """An integration's framework is not installed; the message names the extra that installs it."""


class ClosedError(PalimpsestError):
    """An adapter was used after its ``close()``; the message says how to open it again."""


def missing(package: str, extra: str, what: str) -> MissingExtraError:
    """The error for ``what`` when ``package`` cannot be imported."""
    return MissingExtraError(f"{what} needs the {package!r} package, which is not installed; install it with "
                             f"`pip install 'palimpsest[{extra}]'` (or `pip install {package}`)")


def id_problems(ids: list[tuple[str, Any]]) -> list[tuple[str, str]]:
    """A ``(field, fix)`` for each ``(field, id)`` that is no valid tenant or user id (ids in canonical form)."""
    problems = []
    for field, value in ids:
        if problem := id_problem(value):
            fix = (f"remove the spaces at either end, e.g. {value.strip()!r:.60}" if problem.endswith("spaces")
                   else f"give an id of {ID_RULE}")
            problems.append((field, f"{value!r:.60}: {problem}; {fix}"))
    return problems
