"""The Python API: open a store, add messages, search, build context, replay, audit.

    from palimpsest import Memory
    with Memory.open("./my-store") as mem:
        mem.add_messages([{"text": "I prefer tea", "occurred_at": "2024-05-01T09:00:00+00:00"}],
                         tenant="acme", user_id="alice")
        for hit in mem.search("acme", "alice", "what does alice drink?"):
            print(hit.text, hit.provenance)
"""

from __future__ import annotations

import threading
from dataclasses import replace
import time
from datetime import UTC, datetime
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

import numpy as np
import structlog

from actors import commands as c
from actors.llm import LlmConfig
from actors.runtime import ShardCluster, ensure_ray
from actors.spec import ReplayReport, ShardSpec
from events.commands import MAX_BATCH_SIZE, RecordMessage, canonical_id, validate_messages
from events.envelope import Envelope
from events.errors import EncoderError, InvalidInputError, StoreError
from palimpsest import config as store_config
from palimpsest.memory_erasure import ErasureApiMixin
from palimpsest.memory_graph import GraphApiMixin
from palimpsest.memory_inspect import InspectApiMixin
from palimpsest.memory_items import ItemsApiMixin
from palimpsest.memory_learning import LearningApiMixin
from palimpsest.memory_operations import DeclaredReadsMixin
from palimpsest.memory_signals import SignalsApiMixin
from palimpsest.phases import timed
from palimpsest.remote import aware as _aware
from palimpsest.ingest import send_batches
from palimpsest.label_reactor import LabelReactor, idle_s_from_env
from palimpsest.language_hint import english_only_warning
from palimpsest.query_vectors import QueryVectors
from palimpsest.reports import IngestReport
from palimpsest.settings import StoreSettings, record_settings
from palimpsest.remote import Shards
from palimpsest.remote import get as _get
from palimpsest.remote import positive as _positive
from palimpsest.remote import scan_filter as _scan_filter
from projections.adapters.embedding import Embedder, encode_queries
from projections.adapters.encoder_kinds import DEFAULT as DEFAULT_EMBEDDER
from projections.adapters.encoder_kinds import make_embedder, model_id
from projections.folds.archive import SCOPES
from projections.folds.policy import RetentionPolicy
from projections.queries.context import Context
from projections.queries.encoder_fusion import fusion_for
from projections.queries.retrieval import DEFAULT_FUSION, FusionConfig, Hit

log = structlog.get_logger("palimpsest")
CONSOLIDATE_EVERY = 150  # staged graph memories between automatic consolidations (LoCoMo: ~1 per 3 turns)


def _encoder_defaults(settings: StoreSettings, model_id: str) -> StoreSettings:
    """``settings`` with the fusion default of the store's encoder (:mod:`projections.queries.encoder_fusion`) when
    the recorded fusion is the general default (none was chosen for this store)."""
    if settings.fusion == DEFAULT_FUSION:
        return replace(settings, fusion=fusion_for(model_id))
    return settings


class Memory(GraphApiMixin, SignalsApiMixin, LearningApiMixin, InspectApiMixin, ErasureApiMixin, ItemsApiMixin,
             DeclaredReadsMixin):
    """A Palimpsest store: shard actors on Ray over a directory of DuckDB logs and a LanceDB directory."""

    def __init__(self, path: Path, cfg: store_config.StoreConfig, *, address: str | None = None) -> None:
        self.path = path
        self.config = cfg
        self.settings = settings = _encoder_defaults(StoreSettings.from_json(cfg.settings, str(path / "store.json")),
                                                     cfg.model_id)
        store_config.check_layout(path, cfg)
        master_key = store_config.master_key(path, cfg)  # None for a plaintext store; read before Ray starts
        ensure_ray(address)
        llm = LlmConfig.from_env()  # PALIMPSEST_LLM_BASE_URL / _MODEL / _API_KEY; None: the offline rules decide
        specs = [
            ShardSpec(
                index=i,
                log_path=store_config.log_path(path, i).resolve(),
                lance_dir=store_config.lance_dir(path).resolve(),
                model_id=cfg.model_id,
                dim=cfg.dim,
                llm=llm,
                retention_policy=settings.retention_policy,
                segmentation=settings.segmentation,
                tier_config=settings.tiers,
                working_config=settings.working,
                snapshot_dir=store_config.snapshot_dir(path).resolve(),
                snapshot_every=settings.snapshot_every,
                max_resident_users=settings.max_resident_users,
                key_store=store_config.key_store(path, i).resolve() if cfg.encrypted else None,
                master_key=master_key,
            )
            for i in range(cfg.num_shards)
        ]
        self.cluster = ShardCluster(store_config.store_id(path), specs, store_config.routing_table(path).resolve())
        self.shards = Shards(self.cluster)
        self.llm_config = llm  # the consolidation tasks ask it which linked memories are causal
        self._embedder: Embedder | None = None
        self._switch_checked = time.monotonic()  # store.json's encoder, followed when another process switches it
        try:
            self._config_mtime = (path / "store.json").stat().st_mtime_ns
        except OSError:
            self._config_mtime = 0
        self._labels: dict[str, np.ndarray] = {}  # graph node label → its embedding (labels repeat a lot)
        # staged labels embedded when a graph read or a consolidation needs them (or once an ingest pauses)
        self._label_reactor = LabelReactor(self._embed_labels_now, idle_s=idle_s_from_env())
        self._query_vectors = QueryVectors()  # search, then context, for one question: encoded once
        self._language_warned = False  # language_hint: said once per open store
        self.consolidate_every = CONSOLIDATE_EVERY  # staged graph memories between automatic rounds; 0: on demand
        self._since_consolidation = 0
        self._scheduler: threading.Timer | None = None

    @property
    def staged_since_consolidation(self) -> int:
        """Graph memories this process staged since its last consolidation round."""
        return self._since_consolidation

    # -- lifecycle --------------------------------------------------
    @classmethod
    def open(
        cls,
        path: str | Path,
        *,
        num_shards: int | None = None,
        embedder: str | None = None,
        address: str | None = None,
        create: bool = True,
        encrypted: bool = True,
        **settings: Any,
    ) -> Memory:
        """Open the store at ``path``, creating it (with ``num_shards``, ``embedder`` and ``encrypted``) if it is new.

        ``embedder`` chooses the text encoder of a new store: ``minilm`` (the default: English, the fastest search),
        ``multilingual-e5-small`` (about 100 languages, Chinese and questions across languages; better recall, slower
        search), ``sentence-transformers:<name-or-path>`` or ``openai:<model>`` (any
        OpenAI-compatible endpoint, set by ``PALIMPSEST_EMBEDDINGS_BASE_URL`` / ``_API_KEY``). An existing store
        keeps its own; given one that differs, ``open`` refuses and names :meth:`reembed`, which switches it.

        A new store is encrypted unless ``encrypted=False``: each user's events are sealed under its own data
        key, which :meth:`forget` destroys. The master key is ``PALIMPSEST_MASTER_KEY`` or, if that is not
        set, the store's ``master.key`` file (created with mode 0600). A store created before encryption opens
        as it is (plaintext; ``encryption: none`` in ``store.json``).

        ``settings`` are :class:`~palimpsest.settings.StoreSettings` fields:
        ``retention_policy``, ``segmentation``, ``tiers``, ``working``,
        ``fusion`` (the default of search and context), ``max_resident_users``
        (per shard; default: all) and ``snapshot_every``. Those given are
        recorded in ``store.json`` (replacing what was there); the others are
        read from it. Changing a fold config makes the shards' snapshots stale:
        each user is folded again from the log under the new config.
        """
        path = Path(path)
        if (path / "store.json").exists() or not create:
            cfg = store_config.StoreConfig.load(path)
            if embedder is not None and model_id(embedder) != cfg.model_id:
                raise InvalidInputError([("embedder", f"{embedder!r}, but the store at {path} encodes with "
                                          f"{cfg.embedder!r}; leave embedder out, or switch the store with "
                                          f"`palimpsest --store {path} reembed --embedder {embedder}`")],
                                        what="open")
        else:
            cfg = store_config.StoreConfig.create(path, num_shards, embedder or DEFAULT_EMBEDDER, encrypted=encrypted)
        cfg = record_settings(path, cfg, settings)
        return cls(path, cfg, address=address)

    def close(self) -> None:
        self.schedule_consolidation(None)
        self._label_reactor.close()
        self.shards.close()
        self.cluster.close()

    def __enter__(self) -> Memory:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    @property
    def embedder(self) -> Embedder:
        self._follow_switch()
        if self._embedder is None:
            embedder = make_embedder(self.config.embedder)
            if embedder.dim != self.config.dim or embedder.model_id != self.config.model_id:
                raise EncoderError(f"the encoder {self.config.embedder!r} gives vectors of {embedder.dim} numbers "
                                   f"as {embedder.model_id!r}, but the store at {self.path} holds {self.config.dim} "
                                   f"as {self.config.model_id!r}; point it back at the model the store was made "
                                   "with, or switch the store with `palimpsest reembed`")
            self._embedder = embedder
        return self._embedder

    def reembed(self, embedder: str, *, dry_run: bool = False, progress: bool = False) -> dict:
        """Move the store to another encoder: every stored message and graph label is encoded by ``embedder`` and
        recorded as events beside the old vectors, then each user is switched to the new ones
        (``embedder_switched``) and ``store.json`` names the new encoder. Searches keep working on the old vectors
        until the switch; run again after an interruption to finish; switching back encodes nothing. ``dry_run``
        reports how many texts would be encoded and an estimate of the time (:mod:`palimpsest.reembed`)."""
        from palimpsest.reembed import reembed

        return reembed(self, embedder, dry_run=dry_run, progress=progress)

    def _follow_switch(self) -> None:
        """Adopt the encoder another process (a second server replica, ``palimpsest reembed``) switched the store
        to: ``store.json`` is looked at once a second at most."""
        now = time.monotonic()
        if now - self._switch_checked < 1.0:
            return
        self._switch_checked = now
        try:
            mtime = (self.path / "store.json").stat().st_mtime_ns
        except OSError:
            return
        if mtime == self._config_mtime:
            return
        self._config_mtime = mtime
        try:
            saved = store_config.StoreConfig.load(self.path)
        except StoreError as exc:  # a broken hand edit: keep the encoder in use, say why
            log.warning("store_json_unreadable", error=str(exc))
            return
        if saved.model_id != self.config.model_id:
            cfg = replace(self.config, embedder=saved.embedder, model_id=saved.model_id, dim=saved.dim)
            self.adopt_encoder(cfg, make_embedder(saved.embedder))
            log.info("encoder_followed", embedder=saved.embedder, model_id=saved.model_id)

    def adopt_encoder(self, cfg: store_config.StoreConfig, embedder: Embedder) -> None:
        """Encode with ``embedder`` from now on (the store switched to it); cached query and label vectors go."""
        if self.settings.fusion == fusion_for(self.config.model_id):  # the encoder's default, not one chosen
            self.settings = replace(self.settings, fusion=fusion_for(cfg.model_id))
        self.config = cfg
        self._embedder = embedder
        try:
            self._config_mtime = (self.path / "store.json").stat().st_mtime_ns
        except OSError:
            pass
        self._query_vectors.clear()
        self._labels.clear()
        self._label_reactor.forget()

    # -- writing ----------------------------------------------------
    def add_messages(
        self,
        messages: Iterable[Mapping[str, Any] | RecordMessage],
        *,
        tenant: str | None = None,
        user_id: str | None = None,
        batch_size: int = 256,
        progress: bool = False,
        extract_graph: bool = True,
    ) -> IngestReport:
        """Validate every message, embed, and append; returns once everything is durable.

        ``tenant``/``user_id`` fill in messages that do not name their own. If
        any message is invalid, :class:`InvalidInputError` lists every problem
        and nothing is written. Re-adding a message with a known client id is a
        no-op that returns the existing memory id. With ``extract_graph`` (the
        default) the memory-graph facts stated in each user turn are staged with
        it (offline EN/ZH rules; their labels embedded later, all at once: :meth:`embed_labels`).
        """
        if isinstance(batch_size, bool) or not isinstance(batch_size, int) or not 1 <= batch_size <= MAX_BATCH_SIZE:
            raise InvalidInputError([("batch_size", f"{batch_size!r}; give an integer from 1 to {MAX_BATCH_SIZE}")],
                                    what="add_messages")
        defaults = {k: v for k, v in (("tenant", tenant), ("user_id", user_id)) if v is not None}
        items = [
            m if isinstance(m, RecordMessage) or not isinstance(m, Mapping) else {**defaults, **m} for m in messages
        ]
        commands = validate_messages(items)
        return self.add_batches([commands], extract_graph=extract_graph, batch_size=batch_size, progress=progress)[0]

    def add_batches(self, batches: list[list[RecordMessage]], *, extract_graph: bool = True, batch_size: int = 256,
                    progress: bool = False) -> list[IngestReport]:
        """Several batches of validated messages (e.g. concurrent requests) sent as one: embedded together, one
        command per shard and chunk of ``batch_size`` (one transaction each); a report per batch, in order. Raises
        as :meth:`add_messages` does; a chunk refused leaves the others written (each batch is wholly in one chunk
        of its shard when the batches together fit one)."""
        commands = [m for batch in batches for m in batch]
        graph_of = self._graph_memories if extract_graph else None
        embedder = self.embedder  # load the model before the clock and the progress bar start
        started = time.perf_counter()
        try:
            results, staging = send_batches(self.shards, embedder, commands, graph_of, batch_size, progress)
        finally:  # a failed chunk leaves the others written
            if graph_of is not None:
                self._labels_staged(commands)
        seconds = time.perf_counter() - started
        reports, first = [], 0
        for batch in batches:
            report = IngestReport(received=len(batch), seconds=seconds)
            for i in range(first, first + len(batch)):
                outcome = results[i]
                report.memory_ids.append(outcome["memory_id"])
                if outcome["created"]:
                    report.created += 1
                    self._since_consolidation += staging.get(i, 0)
                else:
                    report.duplicates += 1
            first += len(batch)
            reports.append(report)
        log.info("ingested", received=len(commands), created=sum(r.created for r in reports),
                 duplicates=sum(r.duplicates for r in reports), **({"batches": len(batches)} if len(batches) > 1 else {}))
        if not self._language_warned:
            warning = english_only_warning(self.config.embedder, (m.text for m in commands))
            if warning is not None:
                self._language_warned = True
                log.warning("encoder_reads_english_only", **warning)
        if self.consolidate_every and self._since_consolidation >= self.consolidate_every:
            self.consolidate()
        return reports

    # -- reading ----------------------------------------------------
    def _query_vector(self, query: str) -> np.ndarray:
        if not isinstance(query, str) or not query.strip():
            raise InvalidInputError([("query", "empty; give the text to search for")], what="query")
        with timed("encode", cpu=True):
            return self._query_vectors.get(query, lambda texts: encode_queries(self.embedder, texts))

    def search(
        self,
        tenant: str,
        user_id: str,
        query: str,
        k: int = 10,
        *,
        fusion: FusionConfig | None = None,
        now: datetime | None = None,
        scope: str = "active",
    ) -> list[Hit]:
        """The ``k`` best memories of one user for ``query``, each with score breakdown and provenance.

        ``now`` (default: the current time) is when the question is asked: the
        retention term of the score is computed then. ``scope`` is ``active``
        (default: archived memories left out), ``archive`` or ``all``. Every
        hit is recorded as a ``memory_touched`` event (reason ``search_hit``).
        """
        _positive(k, "k", "search", "give an integer, at least 1 (the number of results)")
        if scope not in SCOPES:
            raise InvalidInputError([("scope", f"{scope!r}; choose one of {', '.join(SCOPES)}")], what="search")
        now = _aware(now, "search")
        vec = self._query_vector(query)
        query = c.Search(tenant=tenant, user_id=user_id, query=query, query_vector=vec, k=k, now=now, scope=scope,
                         fusion=fusion or self.settings.fusion, query_model=self.embedder.model_id)
        return self.shards.ask(tenant, user_id, query)

    def build_context(
        self,
        tenant: str,
        user_id: str,
        query: str,
        token_budget: int = 1000,
        *,
        fusion: FusionConfig | None = None,
        now: datetime | None = None,
    ) -> Context:
        """Prompt-ready memory text for ``query``, at most ``token_budget`` tokens, provenance per line."""
        _positive(token_budget, "token_budget", "context", "give a positive integer number of tokens")
        now = _aware(now, "context")
        vec = self._query_vector(query)
        query = c.BuildContext(tenant=tenant, user_id=user_id, query=query, query_vector=vec, now=now,
                               token_budget=token_budget, fusion=fusion or self.settings.fusion,
                               query_model=self.embedder.model_id)
        return self.shards.ask(tenant, user_id, query)

    # -- notes, profile, tiers ---------------------------------------
    def notes(
        self, tenant: str, user_id: str, *, at: datetime | None = None, include_inactive: bool = False,
        now: datetime | None = None,
    ) -> list[dict]:
        """The user's active notes (or those valid at ``at``, or every version), with sources and importance."""
        now = _aware(now, "notes")
        if at is not None:
            at = _aware(at, "notes")
        return self.shards.ask(tenant, user_id, c.Notes(tenant=tenant, user_id=user_id, now=now, at=at,
                                                  include_inactive=include_inactive))

    def note_history(self, note_id: str, *, tenant: str | None = None, user_id: str | None = None) -> dict:
        """The whole version chain of a note (oldest first) with each version's sources, and whose it is.

        ``tenant`` is required: a note is found only among that tenant's users (and ``user_id``'s, if given)."""
        if not tenant:
            raise InvalidInputError([("tenant", "missing; give the tenant whose note it is")], what="note history")
        query = c.NoteHistory(note_id=note_id, now=datetime.now(UTC), tenant=tenant, user_id=user_id)
        for found in self.shards.ask_each(query, tenant, user_id):
            if found is not None:
                return found
        raise InvalidInputError([("note_id", f"{note_id!r} is no note in this store; list notes with "
                                  "`palimpsest notes list --tenant T --user U`")], what="note history")

    def review_notes(self, now: datetime | None = None, *, tenant: str | None = None, user_id: str | None = None) -> list[dict]:
        """Run the note reviewer: promotion at importance ≥ 2.5, retraction below 0.5; decisions are events."""
        command = c.ReviewNotes(now=_aware(now, "review"), tenant=tenant, user_id=user_id)
        return [r for part in self.shards.send_each(command, tenant, user_id) for r in part]

    def get_user_profile(
        self, tenant: str, user_id: str, *, include_knowledge: bool = True, include_assistant_knowledge: bool = False
    ) -> dict:
        """The long-term profile distilled from hot mid-term sessions: traits and knowledge (MemoryOS)."""
        return self.shards.ask(tenant, user_id, c.Profile(tenant=tenant, user_id=user_id, include_knowledge=include_knowledge,
                                                    include_assistant_knowledge=include_assistant_knowledge))

    def tiers(self, tenant: str, user_id: str, *, conversation_id: str | None = None, now: datetime | None = None) -> dict:
        """Short-term pages, mid-term sessions with heat, working memory and the sensory buffer at ``now``."""
        return self.shards.ask(tenant, user_id, c.Tiers(tenant=tenant, user_id=user_id, now=_aware(now, "tiers"),
                                                  conversation_id=conversation_id))

    # -- archive ----------------------------------------------------
    def sweep(
        self, now: datetime | None = None, *, tenant: str | None = None, user_id: str | None = None, dry_run: bool = False
    ) -> list[dict]:
        """Archive, on every shard, the memories whose retention at ``now`` fell below the policy's floor.

        Returns what was (or, with ``dry_run``, would be) archived, per user and reason.
        """
        command = c.SweepArchive(now=_aware(now, "sweep"), tenant=tenant, user_id=user_id, dry_run=dry_run)
        return [row for part in self.shards.send_each(command, tenant, user_id) for row in part]

    def archive(self, tenant: str, user_id: str, memory_ids: list[str], *, reason: str = "archived by hand") -> list[str]:
        """Move memories out of default retrieval by hand (an event; nothing is deleted)."""
        return self.shards.send(tenant, user_id, c.ArchiveMemories(tenant=tenant, user_id=user_id, memory_ids=tuple(memory_ids),
                                                             now=datetime.now(UTC), reason=reason))

    def restore(self, tenant: str, user_id: str, memory_ids: list[str], *, reason: str = "restored by hand") -> list[str]:
        """Bring archived memories back into default retrieval (restoring counts as an access)."""
        return self.shards.send(tenant, user_id, c.RestoreMemories(tenant=tenant, user_id=user_id, memory_ids=tuple(memory_ids),
                                                             now=datetime.now(UTC), reason=reason))

    def archived(self, tenant: str, user_id: str) -> list[dict]:
        """One user's archived memories with when, why and the retention they had."""
        return self.shards.ask(tenant, user_id, c.Archived(tenant=tenant, user_id=user_id))

    def counterfactual(
        self, policy: RetentionPolicy, now: datetime | None = None, *, queries: Iterable[tuple[str, str, str]] = (),
        k: int = 10, tenant: str | None = None,
    ) -> list[dict]:
        """What every user (of ``tenant``, if given) would keep and lose under ``policy`` at ``now``; read only.

        ``queries`` are ``(tenant, user_id, query)``: each is ranked under the
        live policy and under ``policy`` and its rank changes are reported.
        """
        now = _aware(now, "counterfactual")
        tenant = canonical_id(tenant)
        queries = [(canonical_id(t), canonical_id(u), q, self._query_vector(q)) for t, u, q in queries]
        if tenant is not None and any(t != tenant for t, *_ in queries):
            raise InvalidInputError([("queries", f"a query names another tenant than {tenant!r}")], what="counterfactual")
        routes = self.cluster.lookup([(t, u) for t, u, _, _ in queries]) if queries else []
        self.shards.all()  # a shard down raises its own error first
        parts = _get([
            self.shards.submit_queries(i, [c.Counterfactual(policy=policy, now=now, k=k, tenant=tenant,
                                                            queries=tuple(q for q, r in zip(queries, routes) if r == i))])
            for i in range(self.config.num_shards)
        ])
        parts = [part for [part] in parts]
        return sorted((u for part in parts for u in part), key=lambda u: (u["tenant"], u["user_id"]))

    def episodes(self, tenant: str, user_id: str, query: str | None = None, *, k: int = 5) -> list[dict]:
        """The user's episodes (topic/time/role segments) with turn ids, boundary reason and summary.

        With a ``query``: the ``k`` episodes that match it best (episodes as retrievable units), best first.
        """
        if query is None:
            return self.shards.ask(tenant, user_id, c.Episodes(tenant=tenant, user_id=user_id))
        _positive(k, "k", "episode search", "give an integer, at least 1 (the number of episodes)")
        return self.shards.ask(tenant, user_id, c.Episodes(tenant=tenant, user_id=user_id, query=query,
                                                     query_vector=self._query_vector(query), k=k))

    def retention(self, tenant: str, user_id: str, now: datetime | None = None) -> list[dict]:
        """Each memory's retention at ``now`` (default: the current time): R, stability, Δt, accesses, why.

        A ``now`` in the past shows the memory as it was then: later messages
        are absent and later accesses are not counted.
        """
        return self.shards.ask(tenant, user_id, c.Retention(tenant=tenant, user_id=user_id, now=_aware(now, "retention")))

    def events(
        self,
        tenant: str | None = None,
        user_id: str | None = None,
        *,
        kinds: Iterable[str] | None = None,
        from_seq: int | None = None,
        to_seq: int | None = None,
        since=None,
        until=None,
        limit: int | None = None,
    ) -> list[Envelope]:
        """Scan the log (all shards, or the user's shard) in (tenant, user, seq) order."""
        flt = _scan_filter(tenant, user_id, from_seq, to_seq, since, until, kinds, limit)
        out: list[Envelope] = []
        for part in self.shards.ask_each(c.ScanEvents(filter=flt, limit=limit), tenant, user_id):
            out.extend(part)
        out.sort(key=lambda e: (e.tenant, e.user_id, e.seq))
        return out[:limit] if limit is not None else out

    def replay(self) -> list[ReplayReport]:
        """Rebuild every projection of every shard from the log (in parallel) and compare digests."""
        return self.shards.admin_each(c.Replay())

    def backup(self, target: str | Path) -> dict:
        """Copy what cannot be derived (store.json, every shard log at a consistent point, routes, keys) into
        the new directory ``target``, also while the store is served; restore with ``palimpsest restore``."""
        from palimpsest.backup import backup

        return backup(self, target)

    def digest(self) -> list[dict]:
        return self.shards.ask_each(c.Digest())

    def stats(self) -> dict:
        shards = self.shards.ask_each(c.Stats())
        models: dict[str, dict[str, int]] = {}
        for shard in shards:
            for model, entry in shard.get("models", {}).items():
                total = models.setdefault(model, {"users": 0, "vectors": 0})
                total["users"] += entry["users"]
                total["vectors"] += entry["vectors"]
        return {
            "path": str(self.path),
            "num_shards": self.config.num_shards,
            "embedder": self.config.embedder,  # the active encoder's spec; its vectors' model id and size:
            "model_id": self.config.model_id,
            "dim": self.config.dim,
            # totals over the shards; touch_flush_failures: background touch flushes that failed (their log says why)
            **{key: sum(s[key] for s in shards) for key in ("users", "events", "messages", "touches",
                                                             "touch_flush_failures")},
            # per model: users searched by it and vectors held of it; an unfinished re-embedding's model has
            # fewer vectors than there are messages
            "models": models,
            "shards": shards,
        }
