"""projections.adapters.cache.made_once: of several processes that lack the same cache file at once, one makes it
and the others read it (an encoder's graph is tens of seconds of CPU to make)."""

from __future__ import annotations

import multiprocessing
import os
import time
from pathlib import Path

from projections.adapters.cache import made_once


def _make(path: str, log: str, start) -> None:
    """What an encoder's loader does: under the lock, make the file only if it is still missing."""
    target = Path(path)
    start.wait()
    with made_once(target):
        if not target.exists():
            time.sleep(0.3)  # the long build
            target.parent.mkdir(parents=True, exist_ok=True)
            partial = target.with_name(f"{target.name}.{os.getpid()}.part")
            partial.write_text("graph")
            partial.replace(target)
            with open(log, "a") as f:
                f.write("made\n")
    assert target.read_text() == "graph"


def test_of_processes_lacking_the_same_file_at_once_one_makes_it_and_the_others_wait_for_it(tmp_path):
    target, log = tmp_path / "cache" / "graph.onnx", tmp_path / "builds.log"
    ctx = multiprocessing.get_context("spawn")
    start = ctx.Event()
    workers = [ctx.Process(target=_make, args=(str(target), str(log), start)) for _ in range(3)]
    for w in workers:
        w.start()
    start.set()
    for w in workers:
        w.join(60)
    assert [w.exitcode for w in workers] == [0, 0, 0]
    assert log.read_text() == "made\n"  # one build; the two others found its file once it was there
    assert target.read_text() == "graph"


def test_nothing_is_locked_when_the_file_exists_and_a_failed_build_lets_the_next_process_try(tmp_path):
    target = tmp_path / "graph.onnx"
    target.write_text("graph")
    with made_once(target):
        pass
    assert not (tmp_path / "graph.onnx.lock").exists()  # a file already made costs no lock

    missing = tmp_path / "deeper" / "other.onnx"
    try:
        with made_once(missing):
            raise RuntimeError("the build failed")
    except RuntimeError:
        pass
    ctx = multiprocessing.get_context("spawn")
    start = ctx.Event()
    start.set()
    again = ctx.Process(target=_make, args=(str(missing), str(tmp_path / "log"), start))
    again.start()
    again.join(60)
    assert again.exitcode == 0 and missing.read_text() == "graph"  # the lock went with the failed build


def test_a_cache_directory_that_cannot_be_written_takes_no_lock_and_raises_nothing(tmp_path):
    blocked = tmp_path / "a-file"
    blocked.write_text("not a directory")  # the cache directory's place is taken: nothing can be written there
    ran = []
    with made_once(blocked / "graph.onnx"):
        ran.append(True)  # the build runs (and fails there, logging it, as it did without the lock)
    assert ran == [True]
