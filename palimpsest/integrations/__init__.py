"""Adapters for the agent frameworks users already build with, each an optional extra:

- :mod:`palimpsest.integrations.langgraph_store`: a LangGraph long-term store (``pip install 'palimpsest[langgraph]'``);
- :mod:`palimpsest.integrations.agents_session`: an OpenAI Agents SDK session with long-term recall
  (``pip install 'palimpsest[agents]'``).

Nothing here is imported by ``palimpsest`` itself: a framework is imported only when its adapter is, and a
missing one is a :class:`MissingExtraError` naming the extra to install. An adapter used after its ``close()``
raises :class:`ClosedError`.
"""

from __future__ import annotations

from events.errors import PalimpsestError


class MissingExtraError(PalimpsestError, ImportError):
    """An integration's framework is not installed; the message names the extra that installs it."""


class ClosedError(PalimpsestError):
    """An adapter was used after its ``close()``; the message says how to open it again."""


def missing(package: str, extra: str, what: str) -> MissingExtraError:
    """The error for ``what`` when ``package`` cannot be imported."""
    return MissingExtraError(f"{what} needs the {package!r} package, which is not installed; install it with "
                             f"`pip install 'palimpsest[{extra}]'` (or `pip install {package}`)")

