"""tests/integration/shared_setup.py: a unit's set-up is entered once for its modules and ended as soon as the next
test is another unit's (or none is left), so a served store never outlives its unit into another module."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from tests.integration import shared_setup


class _Session:
    def __init__(self) -> None:
        self.finalizers = []

    def addfinalizer(self, fin) -> None:
        self.finalizers.append(fin)


def _item(nodeid: str) -> SimpleNamespace:
    return SimpleNamespace(nodeid=nodeid)


def _enter(log: list[str], name: str):
    def enter(stack):
        log.append(f"enter {name}")
        stack.callback(log.append, f"end {name}")
        return name

    return enter


def test_the_units_modules_get_one_set_up_ended_when_the_next_test_is_another_units():
    log, session = [], _Session()
    request = SimpleNamespace(session=session)
    assert shared_setup.shared(request, "served", _enter(log, "store")) == "store"
    assert shared_setup.shared(request, "served", _enter(log, "again")) == "store"  # the second module's ask
    shared_setup.end_unless_needed_by(_item("tests/integration/test_proxy_sessions.py::test_x"))  # same unit
    assert log == ["enter store"]
    shared_setup.end_unless_needed_by(_item("tests/integration/test_serve_start.py::test_y"))  # another unit
    assert log == ["enter store", "end store"]
    for fin in session.finalizers:  # the session's end finds nothing left to end
        fin()
    assert log == ["enter store", "end store"]


def test_the_last_test_of_the_session_ends_it_and_a_failed_set_up_undoes_itself():
    log, session = [], _Session()
    request = SimpleNamespace(session=session)
    shared_setup.shared(request, "served", _enter(log, "store"))
    shared_setup.end_unless_needed_by(None)
    assert log == ["enter store", "end store"]

    def failing(stack):
        stack.callback(log.append, "undone")
        raise RuntimeError("no port")

    with pytest.raises(RuntimeError, match="no port"):
        shared_setup.shared(request, "served", failing)
    assert log[-1] == "undone" and "served" not in shared_setup._entered


def test_a_module_outside_the_table_is_its_own_unit():
    assert shared_setup.unit_of("tests/integration/test_proxy.py::test_a[x]") == "served"
    assert shared_setup.unit_of("tests/unit/test_docs.py::test_b") == "docs-site"
    assert shared_setup.unit_of("tests/integration/test_demo.py::test_c") == "tests/integration/test_demo.py"
