"""Reads for looking at one user's memory (a mixin of :class:`palimpsest.Memory`; the inspector at ``/ui`` uses
them): one memory with its forgetting curve, and the memory graph as the graph view's data; and the two calls that
get a store ready for timed work (loading the encoder and dictionaries, waiting for idle-time work)."""

from __future__ import annotations

import time
from datetime import datetime

from actors import commands as c
from events.errors import InvalidInputError
from projections.rules import dictionaries
from palimpsest.remote import Shards
from palimpsest.remote import aware as _aware
from palimpsest.remote import get as _get


class InspectApiMixin:
    shards: Shards  # set by Memory.__init__

    def memory_retention(self, tenant: str, user_id: str, memory_id: str, *, now: datetime | None = None,
                         until: datetime | None = None, points: int = 80) -> dict:
        """One memory: the recorded message, its retention at ``now`` with why, its forgetting curve from creation
        to ``until`` (default: past the projected archival date) with each counted access, its touches by reason,
        and its archival if it was archived. A ``now`` in the past shows the retention as it was then."""
        if isinstance(points, bool) or not isinstance(points, int) or not 2 <= points <= 2000:
            raise InvalidInputError([("points", f"{points!r}; give an integer from 2 to 2000")], what="memory")
        if until is not None and (not isinstance(until, datetime) or until.tzinfo is None):
            raise InvalidInputError([("until", f"{until!r} is not a timezone-aware datetime")], what="memory")
        now = _aware(now, "memory")
        return self.shards.ask(tenant, user_id, c.MemoryRetention(tenant=tenant, user_id=user_id, memory_id=memory_id,
                                                                  now=now, until=until, points=points))

    def graph_data(self, tenant: str, user_id: str) -> dict:
        """The user's memory graph as the graph view draws it (``data``: nodes, edges, colours) with counts."""
        return self.shards.ask(tenant, user_id, c.GraphExport(tenant=tenant, user_id=user_id, title="",
                                                              data_only=True))

    def warm_up(self, languages=dictionaries.LANGUAGES) -> dict[str, float]:
        """Load now what the first calls would load: the encoder (and its first run), and for Chinese (``"zh"`` in
        ``languages``) jieba's dictionary in every shard and, with its part-of-speech tagger, in this process.
        A service that will see Chinese calls it at start-up so the first message or search does not wait ~1 s for
        them; a benchmark of steady-state throughput keeps these one-off loads out of its timings. Returns the
        seconds of each."""
        try:
            languages = dictionaries.check_languages(languages)
        except ValueError as exc:
            raise InvalidInputError([("languages", str(exc))], what="warm_up") from None
        started = time.perf_counter()
        shards = self.shards.on_live("load_dictionaries", languages)  # they load while we do
        self.embedder.encode(["warm-up"])
        encoder = time.perf_counter() - started
        driver = dictionaries.load(languages, tagger=True)
        shard_s = _get(shards)
        return {"encoder_s": round(encoder, 3), "driver_dictionaries_s": round(driver, 3),
                "shard_dictionaries_s": [round(s, 3) for s in shard_s],
                "seconds": round(time.perf_counter() - started, 3)}

    def wait_idle(self, timeout: float = 120.0) -> float:
        """Embed the staged graph labels (:mod:`palimpsest.label_reactor`), then wait until every shard has done
        what it does when idle (snapshots, read-index warm-ups: users with changes since); the seconds waited. A shard starts that work after 5 s without a call, and not
        while an ingest of the store runs (:mod:`actors.warm`). Raises ``TimeoutError`` after ``timeout`` s."""
        if isinstance(timeout, bool) or not isinstance(timeout, (int, float)) or not timeout > 0:
            raise InvalidInputError([("timeout", f"{timeout!r}; give a positive number of seconds")], what="wait_idle")
        started = time.monotonic()
        self.embed_labels()  # the labels' reactor's pass, now rather than after its pause
        while True:
            pending = sum(_get(self.shards.on_live("idle_work")))
            waited = time.monotonic() - started
            if not pending:
                return waited
            if waited > timeout:
                raise TimeoutError(f"the shards still have idle-time work for {pending} user(s) after {timeout} s")
            time.sleep(0.5)
