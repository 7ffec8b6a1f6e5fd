"""A request's phases (palimpsest.phases): timed into the record of the context, added up, none without one."""

from __future__ import annotations

import contextvars
import threading
import time

from palimpsest import phases


def test_a_phase_outside_any_record_times_nothing_and_a_record_adds_repeats_up():
    with phases.timed("encode"):  # the embedded library: no record open, nothing kept anywhere
        pass
    record = phases.Phases()
    token = phases.use(record)
    with phases.timed("encode"):
        time.sleep(0.002)
    with phases.timed("shard"):
        pass
    with phases.timed("encode"):
        time.sleep(0.002)
    phases.reset(token)
    assert list(record.ms) == ["encode", "shard"] and record.ms["encode"] >= 4.0
    kept = dict(record.ms)
    with phases.timed("encode"):  # closed: the record is no longer the context's
        time.sleep(0.002)
    assert record.ms == kept


def test_the_record_follows_work_into_a_thread_given_the_context():
    record = phases.Phases()
    token = phases.use(record)
    context = contextvars.copy_context()  # what the server's thread pool hands each route's thread
    phases.reset(token)

    def route() -> None:
        with phases.timed("shard"):
            pass

    worker = threading.Thread(target=context.run, args=(route,))
    worker.start()
    worker.join()
    assert "shard" in record.ms


def test_the_header_lists_each_phase_then_the_extras():
    record = phases.Phases()
    record.add("admit", 0.04)
    record.add("encode", 2.345)
    assert record.header(total=9.96) == "admit;dur=0.0, encode;dur=2.3, total;dur=10.0"
    token = phases.use(record)
    with phases.timed("shard"):
        pass
    phases.reset(token)
    with phases.timed("late"):
        pass
    assert list(record.ms) == ["admit", "encode", "shard"]


def test_a_phase_timed_with_its_cpu_tells_work_from_waiting():
    record = phases.Phases()
    token = phases.use(record)
    with phases.timed("waiting", cpu=True):
        time.sleep(0.02)
    with phases.timed("working", cpu=True):
        deadline = time.thread_time() + 0.02
        while time.thread_time() < deadline:
            pass
    with phases.timed("plain"):
        pass
    phases.reset(token)
    assert list(record.ms) == ["waiting", "waiting_cpu", "working", "working_cpu", "plain"]
    assert record.ms["waiting"] >= 20 and record.ms["waiting_cpu"] < 5  # the sleep spent no CPU
    assert 20 <= record.ms["working_cpu"] <= record.ms["working"] + 0.1
