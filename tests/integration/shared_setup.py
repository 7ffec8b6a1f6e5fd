"""A set-up shared by the modules of one unit of ``tests/xdist_schedule.py`` (a served store, say), ended after the
unit's last test instead of at the end of the session.

A session-scoped fixture would outlive its unit: a served store left running would hold the Ray Serve application
the next module of the same worker deploys its own in place of. Here the first module of the unit to ask enters the
set-up, the others get the same one, and ``tests/integration/conftest.py`` ends it once the next test to run belongs
to another unit (or none is left), after that module's own fixtures are torn down.
"""

from __future__ import annotations

from collections.abc import Callable
from contextlib import ExitStack
from typing import TypeVar

from tests.xdist_schedule import SHARED_SETUP

T = TypeVar("T")
_entered: dict[str, tuple[ExitStack, object]] = {}


def unit_of(nodeid: str) -> str:
    """The unit a test belongs to: its module's shared set-up (tests/xdist_schedule.py), or its module."""
    module = nodeid.split("::", 1)[0]
    return SHARED_SETUP.get(module, module)


def shared(request, unit: str, enter: Callable[[ExitStack], T]) -> T:
    """The unit's set-up: ``enter(stack)``'s value, entered once while the unit's tests run (what it registers on
    ``stack`` is undone when the unit ends). ``request``: the asking fixture's; the set-up also ends with the session,
    before the session fixtures set up ahead of it (the shared Ray)."""
    if unit not in _entered:
        stack = ExitStack()
        with stack:  # a set-up that fails undoes what it did so far
            value = enter(stack)
            _entered[unit] = (stack.pop_all(), value)
        request.session.addfinalizer(lambda: _end(unit))
    return _entered[unit][1]  # type: ignore[return-value]


def _end(unit: str) -> None:
    if unit in _entered:
        stack, _ = _entered.pop(unit)
        stack.close()


def end_unless_needed_by(nextitem) -> None:
    """End every entered set-up but the one of ``nextitem``'s unit (all of them when ``nextitem`` is None)."""
    keep = unit_of(nextitem.nodeid) if nextitem is not None else None
    for unit in [u for u in _entered if u != keep]:
        _end(unit)
