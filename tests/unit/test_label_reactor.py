"""The graph labels' reactor: staged labels are embedded once an ingest pauses, or at close; writes that need them
ask it to catch up first."""

from __future__ import annotations

import threading
import time

from palimpsest.label_reactor import LabelReactor


class Passes:
    """The embedding pass the reactor runs: records who asked, optionally failing the first calls."""

    def __init__(self, fail: int = 0) -> None:
        self.calls: list[tuple] = []
        self.fail = fail
        self.lock = threading.Lock()

    def __call__(self, tenant, user_id) -> int:
        with self.lock:
            self.calls.append((tenant, user_id))
            if self.fail:
                self.fail -= 1
                raise RuntimeError("encoder down")
        return 3


def wait_for(predicate, timeout: float = 3.0) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(0.01)
    return False


def test_labels_are_embedded_only_after_the_ingest_pauses():
    passes = Passes()
    reactor = LabelReactor(passes, idle_s=0.3)
    for _ in range(5):  # an ingest in chunks, 0.1 s apart: no pass while it runs
        reactor.staged([("acme", "alice")])
        time.sleep(0.1)
    assert passes.calls == []
    assert wait_for(lambda: passes.calls == [(None, None)])
    assert reactor.pending == 0
    assert reactor.caught_up("acme", "alice") == 0 and passes.calls == [(None, None)]  # caught up: no pass
    reactor.close()


def test_a_write_needing_the_labels_before_the_pause_embeds_its_user_at_once():
    passes = Passes()
    reactor = LabelReactor(passes, idle_s=60)
    reactor.staged([("acme", "alice"), ("acme", "bob")])
    assert reactor.caught_up("acme", "alice") == 3
    assert passes.calls == [("acme", "alice")] and reactor.pending == 1  # bob still due
    assert reactor.caught_up("acme", "alice") == 0 and len(passes.calls) == 1
    reactor.staged([("acme", "alice")])  # new staged memories: due again
    assert reactor.caught_up("acme", "alice") == 3 and len(passes.calls) == 2
    reactor.close()


def test_a_failed_background_pass_keeps_the_users_due_and_is_retried():
    passes = Passes(fail=1)
    reactor = LabelReactor(passes, idle_s=0.1)
    reactor.staged([("acme", "alice")])
    assert wait_for(lambda: len(passes.calls) >= 2)
    assert wait_for(lambda: reactor.pending == 0)
    reactor.close()


def test_forget_makes_every_user_due_for_the_next_read():
    passes = Passes()
    reactor = LabelReactor(passes, idle_s=60)
    reactor.caught_up("acme", "alice")
    reactor.forget()
    reactor.caught_up("acme", "alice")
    assert passes.calls == [("acme", "alice")] * 2
    reactor.close()


def test_without_a_pause_set_no_thread_runs_and_a_read_does_the_pass():
    passes = Passes()
    reactor = LabelReactor(passes)  # the default: no background pass
    reactor.staged([("acme", "alice")])
    time.sleep(0.3)
    assert passes.calls == [] and reactor._thread is None and reactor.pending == 1
    assert reactor.caught_up("acme", "alice") == 3 and passes.calls == [("acme", "alice")]
    reactor.close()


def test_labels_staged_while_a_pass_runs_stay_due_for_the_next_one():
    inside, release = threading.Event(), threading.Event()
    calls = []

    def slow_pass(tenant, user_id):
        calls.append((tenant, user_id))
        if len(calls) == 1:
            inside.set()
            release.wait(3)
        return 1

    reactor = LabelReactor(slow_pass, idle_s=60)
    reactor.staged([("acme", "alice")])
    worker = threading.Thread(target=reactor.caught_up, args=("acme", "alice"))
    worker.start()
    assert inside.wait(3)
    reactor.staged([("acme", "alice"), ("acme", "bob")])  # written after the pass looked: not in it
    release.set()
    worker.join(3)
    assert reactor.pending == 2  # alice was staged again meanwhile: still due
    assert reactor.caught_up("acme", "alice") == 1 and len(calls) == 2 and reactor.pending == 1
    assert reactor.caught_up("acme", "alice") == 0 and len(calls) == 2  # clean now: no pass
    reactor.close()


def test_closing_runs_the_pass_still_due_once_the_thread_has_stopped():
    passes = Passes()
    reactor = LabelReactor(passes, idle_s=60)  # the pause never comes: close runs the pass
    reactor.staged([("acme", "alice")])
    reactor.close()
    assert passes.calls == [(None, None)] and reactor.pending == 0 and not reactor._thread.is_alive()
    off = Passes()
    reactor = LabelReactor(off)  # no pause set: close leaves the labels to the writes that need them
    reactor.staged([("acme", "alice")])
    reactor.close()
    assert off.calls == [] and reactor.pending == 1


def test_a_failed_pass_at_close_is_logged_not_raised():
    passes = Passes(fail=1)
    reactor = LabelReactor(passes, idle_s=60)
    reactor.staged([("acme", "alice")])
    reactor.close()
    assert passes.calls == [(None, None)] and reactor.pending == 1


def test_the_pause_comes_from_the_environment_off_turns_it_off_and_a_bad_value_is_refused_by_name():
    import pytest

    from events.errors import InvalidInputError
    from palimpsest.label_reactor import DEFAULT_IDLE_S, IDLE_S_ENV, idle_s_from_env

    assert idle_s_from_env({IDLE_S_ENV: "1.5"}) == 1.5
    assert idle_s_from_env({}) == idle_s_from_env({IDLE_S_ENV: " "}) == DEFAULT_IDLE_S == 1.0
    for value in ("off", "OFF", "false", "0"):
        assert idle_s_from_env({IDLE_S_ENV: value}) is None, value
    for value in ("-2", "soon", "nan", "inf"):
        with pytest.raises(InvalidInputError) as err:
            idle_s_from_env({IDLE_S_ENV: value})
        assert err.value.problems[0][0] == IDLE_S_ENV and "off" in err.value.problems[0][1], value
