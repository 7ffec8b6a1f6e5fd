"""actors.tenant_turns: queries waiting for a shard go in tenant turns, a tenant with nothing waiting first."""

from __future__ import annotations

import threading
import time

from actors.tenant_turns import TenantTurns


def _order(arrivals: list[str]) -> list[str]:
    """The tenants in the order their queries got the turn, each arriving (in ``arrivals`` order) while a first
    query of tenant "flood" holds it."""
    turns, order, release = TenantTurns(), [], threading.Event()
    held = threading.Event()

    def first() -> None:
        with turns.turn("flood"):
            held.set()
            release.wait(5)

    def query(tenant: str) -> None:
        with turns.turn(tenant):
            order.append(tenant)

    threads = [threading.Thread(target=first)]
    threads[0].start()
    assert held.wait(5)
    for i, tenant in enumerate(arrivals):
        threads.append(threading.Thread(target=query, args=(tenant,)))
        threads[-1].start()
        deadline = time.monotonic() + 5
        while turns.waiting() < i + 1 and time.monotonic() < deadline:  # queued before the next arrives
            time.sleep(0.002)
    release.set()
    for t in threads:
        t.join(5)
    return order


def test_a_modest_tenants_query_goes_before_a_floods_queries_that_arrived_earlier():
    assert _order(["flood", "flood", "flood", "modest"]) == ["modest", "flood", "flood", "flood"]


def test_tenants_with_queries_waiting_take_turns_round_robin():
    assert _order(["a", "a", "a", "b", "b"]) == ["b", "a", "b", "a", "a"]


def test_one_tenant_alone_is_served_first_come_first_served_and_the_turn_is_free_after():
    turns = TenantTurns()
    order = _order(["flood"] * 3)
    assert order == ["flood"] * 3
    with turns.turn("x"):
        assert turns._busy
    assert not turns._busy and turns.waiting() == 0


def test_a_query_that_raises_passes_the_turn_on():
    turns = TenantTurns()
    try:
        with turns.turn("a"):
            raise ValueError("query failed")
    except ValueError:
        pass
    done = threading.Event()
    t = threading.Thread(target=lambda: (turns.turn("b").__enter__(), done.set()))
    t.start()
    assert done.wait(2)
