"""ShardService: everything one shard owns, as a plain Python class (the Ray actor wraps it).

Owns: the shard's DuckDB event log (only writer), the folded projections of
every user routed to the shard, and the shard's LanceDB table.
Recovery: folding the whole log rebuilds the projections; ``reconcile`` then
brings the LanceDB table in line with them. Idempotent: ``record`` (client
message ids), ``digest``, ``scan``, ``stats``.
"""

from __future__ import annotations

import time
from dataclasses import asdict, dataclass
from datetime import datetime
from pathlib import Path

import numpy as np
import structlog

from actors.deciders import RecordOutcome, decide_record, decide_touches
from actors.followups import decide_user_followups, latest_time
from actors.service_archive import ArchiveMixin
from actors.service_graph import GraphMixin
from actors.service_notes import NotesMixin
from actors.llm import LlmClient, LlmConfig
from events.commands import RecordMessage
from events.duckdb_log import DuckDBEventLog
from events.envelope import Envelope
from events.errors import InvalidInputError
from events.log import EventLog, ScanFilter
from events.graph_events import GraphMemoryStaged
from projections import counterfactual
from projections import state as shard_state
from projections.context import Context, NoteEntry, assemble
from projections.episode_search import search_episodes
from projections.embedding import embedder_name, make_embedder
from projections.episodes import DEFAULT_SEGMENTATION, SegmentationConfig
from projections.lance import LanceVectorTable
from projections.policy import DEFAULT_POLICY, RetentionPolicy
from projections.retention import retention_table
from projections.summaries import summarize
from projections.retrieval import DEFAULT_FUSION, FusionConfig, Hit, fuse
from projections.tokens import TokenCounter, default_counter

logger = structlog.get_logger("palimpsest.shard")


@dataclass(frozen=True, slots=True)
class ShardSpec:
    """Where a shard keeps its files, and the embedding shape it accepts."""

    index: int
    log_path: Path
    lance_dir: Path
    model_id: str
    dim: int
    record_search_touches: bool = True
    retention_policy: RetentionPolicy = DEFAULT_POLICY
    segmentation: SegmentationConfig = DEFAULT_SEGMENTATION
    llm: LlmConfig | None = None  # an OpenAI-compatible endpoint for note operations, review, usage, distillation

    @property
    def table(self) -> str:
        return f"shard_{self.index:03d}"


@dataclass(frozen=True, slots=True)
class ReplayReport:
    shard: int
    events: int
    seconds: float
    live: dict
    rebuilt: dict

    @property
    def equal(self) -> bool:
        return self.live == self.rebuilt


class ShardService(NotesMixin, GraphMixin, ArchiveMixin):
    def __init__(
        self, spec: ShardSpec, *, log: EventLog | None = None, counter: TokenCounter | None = None
    ) -> None:
        self.spec = spec
        self.log = log or DuckDBEventLog(spec.log_path)
        self.counter = counter or default_counter()
        self.llm = LlmClient(spec.llm) if spec.llm is not None else None
        self._titled: set = set()  # episodes whose model title was asked for in this process
        self._line_tokens: dict[str, int] = {}  # derived cache: a context line's token count never changes
        started = time.perf_counter()
        self.state = shard_state.fold(self._empty_state(), self.log.scan())
        self.vectors = LanceVectorTable(spec.lance_dir, spec.table, spec.dim)
        added, removed = self.vectors.reconcile(self._vector_rows(self.state))
        # Decisions a crash may have left unwritten (the pending state is in the folds): write them now.
        self._follow_up({s: t for s, m in self.state.users.items() if (t := latest_time(m)) is not None})
        logger.info(
            "shard_recovered",
            shard=spec.index,
            events=self.state.events_applied,
            users=len(self.state.users),
            lance_added=added,
            lance_removed=removed,
            seconds=round(time.perf_counter() - started, 3),
        )

    # -- commands ---------------------------------------------------
    def record(
        self, commands: list[RecordMessage], vectors: np.ndarray, model_id: str,
        graph: list[tuple[GraphMemoryStaged, ...]] | None = None,
    ) -> list[RecordOutcome]:
        """Append new messages with their embeddings (and the graph memories read from them); durable on return."""
        if model_id != self.spec.model_id:
            raise InvalidInputError(
                [("model_id", f"{model_id!r} differs from the store's {self.spec.model_id!r}; embed with the store's model")],
                what="record batch",
            )
        pending, outcomes = decide_record(self.state, commands, vectors, model_id, self.spec.dim, self.llm, graph,
                                          self._embed_labels)
        self._commit(pending)
        return outcomes

    def _embed_labels(self, labels: list[str]) -> dict[str, np.ndarray]:
        """Graph labels a language model wrote, embedded with the store's encoder (loaded here on first use).

        Only the LLM graph extraction needs it (the driver embeds the offline
        rules' labels); an unknown encoder leaves the labels without vectors.
        """
        name = embedder_name(self.spec.model_id)
        if name is None:
            logger.warning("graph_labels_not_embedded", shard=self.spec.index, model_id=self.spec.model_id)
            return {}
        return dict(zip(labels, make_embedder(name).encode(labels)))

    def _commit(self, pending, *, followups: bool = True) -> list[Envelope]:
        envelopes = self.log.append(pending)
        shard_state.fold(self.state, envelopes)
        rows = [
            (e.tenant, e.user_id, self.state.users[e.stream].vectors.rows[e.event.message_event_id])
            for e in envelopes
            if e.kind == "message_embedded"
        ]
        self.vectors.add(rows)
        if followups:
            latest: dict[tuple[str, str], datetime] = {}
            for e in envelopes:
                latest[e.stream] = max(latest.get(e.stream, e.occurred_at), e.occurred_at)
            self._follow_up(latest)
        return envelopes

    def _follow_up(self, streams: dict[tuple[str, str], datetime]) -> None:
        """Write the decisions the folds now call for (tier evictions, distillations); see actors.followups."""
        pending = []
        for (tenant, user_id), now in sorted(streams.items()):
            memory = self.state.users[(tenant, user_id)]
            pending += decide_user_followups(tenant, user_id, memory, now, self.state, self.llm, self._titled)
        if pending:
            self._commit(pending, followups=False)

    # -- queries ----------------------------------------------------
    def search(
        self,
        tenant: str,
        user_id: str,
        query: str,
        query_vector: np.ndarray,
        k: int = 10,
        fusion: FusionConfig = DEFAULT_FUSION,
        touch_reason: str | None = "search_hit",
        now: datetime | None = None,
        scope: str = "active",
    ) -> list[Hit]:
        """Fused top-``k``; ``now`` is the query time for the retention term, ``scope`` active/archive/all."""
        memory = self.state.user(tenant, user_id)
        if memory is None:
            return []
        wanted = max(k, fusion.candidates)
        if scope != "active":  # archived rows are a minority of the dense neighbours: look further
            wanted += len(memory.archive.archived)
        dense = self.vectors.search(tenant, user_id, query_vector, wanted)
        hits = fuse(memory, query, dense, k, fusion, query_vector, now=now, policy=self.state.policy, scope=scope)
        if touch_reason and self.spec.record_search_touches and hits:
            self._commit(decide_touches(tenant, user_id, query, hits, touch_reason))
        return hits

    def context(
        self,
        tenant: str,
        user_id: str,
        query: str,
        query_vector: np.ndarray,
        token_budget: int,
        fusion: FusionConfig = DEFAULT_FUSION,
        now: datetime | None = None,
    ) -> Context:
        hits = self.search(tenant, user_id, query, query_vector, fusion.candidates, fusion, touch_reason=None, now=now)
        memory = self.state.user(tenant, user_id)
        notes = self._note_entries(memory, hits, fusion) if memory is not None and fusion.note_tokens else []
        ctx = assemble(query, hits, token_budget, self._count_tokens, notes, fusion.note_tokens)
        if self.spec.record_search_touches and ctx.items:
            used = {i.memory_id for i in ctx.items}
            self._commit(decide_touches(tenant, user_id, query, [h for h in hits if h.memory_id in used], "context"))
        return ctx

    @staticmethod
    def _note_entries(memory, hits: list[Hit], fusion: FusionConfig) -> list[NoteEntry]:
        """Active notes for a context: the notes stated by the best hits (in hit order), then core notes.

        A note enters because the turn it was read from is among the top
        ``2 · note_candidates`` hits for the query (notes matching the query
        lift their turns there through the note term of the fusion), so the
        notes section is the compact, current form of the most relevant turns.
        """
        active = memory.notes.active()
        by_source: dict[str, list] = {}
        for note in active:
            for source in note.source_message_ids:
                by_source.setdefault(source, []).append(note)
        chosen: dict[str, float] = {}
        for hit in hits[: 2 * fusion.note_candidates]:
            for note in by_source.get(hit.memory_id, ()):
                chosen.setdefault(note.note_id, hit.score)
        for note in active:
            if note.lifecycle == "core":
                chosen.setdefault(note.note_id, 0.0)
        entries = []
        by_id = memory.messages.by_id
        for note_id, score in chosen.items():
            note = memory.notes.notes[note_id]
            sources = tuple(m for m in note.source_message_ids if m in by_id)
            entries.append(NoteEntry(
                note_id, note.category, note.text, note.version, note.valid_from, sources,
                tuple(t for t in (by_id[m].turn_id for m in sources) if t),
                by_id[sources[0]].conversation_id if sources else "", score,
            ))
        return entries

    def _count_tokens(self, lines: list[str]) -> list[int]:
        cache = self._line_tokens
        missing = [line for line in lines if line not in cache]
        if missing:
            if len(cache) > 500_000:
                cache.clear()
            cache.update(zip(missing, self.counter.count_many(missing)))
        return [cache[line] for line in lines]

    def retention(self, tenant: str, user_id: str, now: datetime) -> list[dict]:
        """Every memory of one user with its retention at ``now`` and why (log order)."""
        memory = self.state.user(tenant, user_id)
        if memory is None:
            return []
        rows = retention_table(memory.retention, now, self.state.policy)
        by_id = memory.messages.by_id
        archived = memory.archive.archived
        return [
            {**asdict(row), "text": by_id[row.memory_id].text, "turn_id": by_id[row.memory_id].turn_id,
             "archived": archived[row.memory_id].reason if row.memory_id in archived else None}
            for row in rows
        ]

    def episodes(
        self, tenant: str, user_id: str, query: str | None = None, query_vector: np.ndarray | None = None, k: int = 5,
        fusion: FusionConfig = DEFAULT_FUSION,
    ) -> list[dict]:
        """One user's episodes in order, each with its turns, boundary reason and summary.

        With a ``query`` (and its vector): the ``k`` best-matching episodes,
        best first, each with its rank, score and score breakdown.
        """
        memory = self.state.user(tenant, user_id)
        if memory is None:
            return []
        if query is None:
            return [self._episode_view(memory, episode) for episode in memory.episodes.episodes()]
        return [
            {**self._episode_view(memory, hit.episode), "rank": hit.rank, "score": hit.score, "breakdown": hit.breakdown}
            for hit in search_episodes(memory, query, query_vector, k, fusion)
        ]

    @staticmethod
    def _episode_view(memory, episode) -> dict:
        summary = summarize(episode, memory.messages.by_id, memory.lexical)
        titled = memory.titles.for_episode(episode.episode_id, episode.member_ids)
        start, end = episode.span
        return {
            "episode_id": episode.episode_id,
            "reason": episode.reason,
            "open": episode.is_open,
            "start": start.isoformat(),
            "end": end.isoformat(),
            "turn_ids": list(episode.turn_ids),
            "member_ids": list(episode.member_ids),
            "title": titled.title if titled else summary.title,
            "keywords": list(summary.keywords),
            "summary": titled.summary or summary.text if titled else summary.text,
            "titler": titled.titler if titled else "extractive",
        }

    def counterfactual(
        self, policy: RetentionPolicy, now: datetime, queries: list[tuple] = (), k: int = 10,
        fusion: FusionConfig = DEFAULT_FUSION,
    ) -> list[dict]:
        """Re-project retention under ``policy`` from the log (read only) and compare with the live policy.

        ``queries`` are ``(tenant, user_id, query, query_vector)``: each is
        ranked under both policies (retention term and archived set of each)
        and the rank changes are reported under the user's ``queries`` key.
        Nothing is appended (no touch events).
        """
        envelopes = list(self.log.scan())
        report = counterfactual.compare(envelopes, self.state.policy, policy, now)
        alt = counterfactual.fold_per_user(envelopes, policy) if queries else {}
        for user in report:
            stream = (user["tenant"], user["user_id"])
            memory = self.state.users[stream]
            by_id = memory.messages.by_id
            for key in ("archived_only_under_other", "kept_only_under_other"):
                user[key] = [{"memory_id": m, "turn_id": by_id[m].turn_id, "text": by_id[m].text} for m in user[key]]
            user["queries"] = []
            for tenant, user_id, query, vector in queries:
                if (tenant, user_id) != stream:
                    continue
                dense = self.vectors.search(tenant, user_id, vector, max(k, fusion.candidates))
                sides = []
                for pol, state in ((self.state.policy, memory.retention), (policy, alt[stream])):
                    view = counterfactual.as_policy_would_archive(memory, state, pol, now)
                    sides.append(fuse(view, query, dense, k, fusion, vector, now=now, policy=pol))
                user["queries"].append({"query": query, "ranks": counterfactual.rank_changes(*sides)})
        return report

    def scan(self, flt: ScanFilter, limit: int | None = None) -> list[Envelope]:
        out = []
        for env in self.log.scan(flt):
            out.append(env)
            if limit is not None and len(out) >= limit:
                break
        return out

    def digest(self) -> dict:
        out = shard_state.digest(self.state)
        out["lancedb"] = self.vectors.digest()
        return out

    def replay(self) -> ReplayReport:
        """Rebuild every projection (LanceDB included) from the log and compare digests with the live ones."""
        live = self.digest()
        started = time.perf_counter()
        rebuilt = shard_state.fold(self._empty_state(), self.log.scan())
        self.vectors.rebuild(self._vector_rows(rebuilt))
        seconds = time.perf_counter() - started
        self.state = rebuilt
        report = ReplayReport(self.spec.index, rebuilt.events_applied, seconds, live, self.digest())
        logger.info("shard_replayed", shard=self.spec.index, events=report.events, equal=report.equal)
        return report

    def stats(self) -> dict:
        users = self.state.users
        return {
            "shard": self.spec.index,
            "users": len(users),
            "events": self.log.count(),
            "messages": sum(len(u.messages.order) for u in users.values()),
            "touches": sum(u.touches.total for u in users.values()),
            "vectors_indexed": self.vectors.count(),
            "streams": [list(s) for s in sorted(users)],
        }

    def close(self) -> None:
        self.log.close()

    def _empty_state(self) -> shard_state.ShardState:
        return shard_state.ShardState(policy=self.spec.retention_policy, segmentation=self.spec.segmentation)

    @staticmethod
    def _vector_rows(state: shard_state.ShardState) -> list:
        return [(t, u, row) for (t, u), memory in state.users.items() for row in memory.vectors.rows.values()]
