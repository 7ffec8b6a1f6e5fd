"""What a shard is asked to do: commands (they append events), queries (they read) and admin commands.

- A query reads the projections and appends nothing. What it returns may
  carry touches (the hits a search found), which the shard appends later in
  a group commit; a ``flushes_first`` query (it reads the log or digests)
  has the shard write the touches pending from earlier queries before it reads.
- An admin command (:class:`Backup`, :class:`Replay`) writes, but no event:
  files, rebuilt projections, a backfilled column of stored rows.

Every command, query and admin command is a frozen pydantic model; the shard
has one entry point for each kind (:meth:`actors.core.ShardCore.handle`,
:meth:`actors.core.ShardCore.query`, :meth:`actors.core.ShardCore.admin`). A command carries a ``command_id``
(drawn once, by the caller): the shard records each applied command's
outcome in the same transaction as its events, so a command sent again
(a retry after a crash, a client that resends) returns the recorded outcome
and appends nothing. Callers validate user input at the boundary
(:func:`events.commands.validate_messages`, the public API); the models here
carry already-validated values, vectors included.
"""

from __future__ import annotations

import uuid
from datetime import UTC, datetime
from typing import Annotated, ClassVar, Literal

import numpy as np
from pydantic import AwareDatetime, BaseModel, ConfigDict, Field, field_validator
from pydantic_core import core_schema

from events.commands import RecordMessage, canonical_id
from events.graph_events import EdgeType, GraphMemoryStaged
from events.log import ScanFilter
from events.model import Event
from projections.folds.policy import RetentionPolicy
from projections.rules.graph_extract import CandidateGraphMemory
from projections.queries.retrieval import DEFAULT_FUSION, FusionConfig


class _AsIs:
    """Field metadata: the value is carried as given, neither validated nor described. Unlike ``SkipValidation``,
    no schema is built for the type: for the dataclasses carried here that was about half this module's import,
    paid again by every shard process."""

    def __get_pydantic_core_schema__(self, source, handler):
        return core_schema.any_schema()


AS_IS = _AsIs()
Vector = Annotated[np.ndarray, AS_IS]
Fusion = Annotated[FusionConfig, AS_IS]


def new_command_id() -> str:
    return uuid.uuid4().hex


class ShardMessage(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid", arbitrary_types_allowed=True)
    # Tenant and user ids are carried in their canonical form (NFC), as they are routed; a message that must
    # name a stream exactly as an older store recorded it (an erasure) keeps the form it is given.
    exact_ids: ClassVar[bool] = False

    @field_validator("tenant", "user_id", mode="before", check_fields=False)
    @classmethod
    def _canonical_ids(cls, value):
        return value if cls.exact_ids else canonical_id(value)

    @property
    def kind(self) -> str:
        return type(self).__name__


class Command(ShardMessage):
    """Appends events; idempotent by ``command_id``. ``tenant``/``user_id`` empty: every user of the shard."""

    command_id: str = Field(default_factory=new_command_id, min_length=1, max_length=200)


class Query(ShardMessage):
    """Reads projections and appends nothing; its touches (if any) are group-committed shortly after it returns."""

    flushes_first: ClassVar[bool] = False  # read the log or every digest: pending touches are written first


class UserCommand(Command):
    tenant: str
    user_id: str


class UserQuery(Query):
    tenant: str
    user_id: str


# -- commands -------------------------------------------------------------
class RecordMessages(Command):
    """Append messages with their embeddings and, per message, the graph memories read from it."""

    messages: tuple[RecordMessage, ...]
    vectors: Vector
    model_id: str
    graph: tuple[tuple[Annotated[GraphMemoryStaged, AS_IS], ...], ...] | None = None
    # Per message, the offline graph rules' reading the ``graph`` memories were staged from: the note rules reuse it
    # for a message's event notes instead of reading the text a second time (derived data, never recorded).
    readings: tuple[tuple[Annotated[CandidateGraphMemory, AS_IS], ...], ...] | None = None


class StageGraphMemories(UserCommand):
    """``create_memory``: stage graph memories (consolidation comes later)."""

    memories: tuple[Annotated[GraphMemoryStaged, AS_IS], ...]


class LinkMemories(UserCommand):
    """``link_memories``: a typed edge between the memories best matching two descriptions (their vectors)."""

    source_vector: Vector
    target_vector: Vector
    relation_type: EdgeType
    relation: str
    importance: float
    now: AwareDatetime
    reason: str


class RecordLabelVectors(UserCommand):
    """The embeddings of graph labels staged without one (``labels[i]`` → ``vectors[i]``), by ``model_id``."""

    labels: tuple[str, ...]
    vectors: Vector
    model_id: str


class RecordEmbeddings(UserCommand):
    """A re-embedding's vectors of another model (``model_id``) for stored messages and graph labels, recorded ahead
    of the user's switch to it: ``vectors[i]`` embeds ``input_texts[i]``, the text of message ``message_ids[i]``."""

    model_id: str = Field(min_length=1)
    message_ids: tuple[str, ...] = ()
    input_texts: tuple[str, ...] = ()
    vectors: Vector | None = None
    labels: tuple[str, ...] = ()
    label_vectors: Vector | None = None


class SwitchEmbedder(Command):
    """Search every selected user of the shard by ``model_id``'s vectors: one ``embedder_switched`` event per user,
    all or none (none while any user has a message without such a vector: the outcome names how many)."""

    embedder: str = Field(min_length=1)
    model_id: str = Field(min_length=1)
    dim: int = Field(gt=0)
    tenant: str | None = None
    user_id: str | None = None


class ApplyConsolidation(UserCommand):
    """The events a consolidation task returned for one user (keyed ids: a rerun names them alike)."""

    events: tuple[tuple[str, Annotated[Event, AS_IS]], ...]


class Unmerge(UserCommand):
    merge_id: str
    reason: str


class SweepArchive(Command):
    """Archive the memories whose retention at ``now`` fell below the policy's floor (one user, or all)."""

    now: AwareDatetime
    tenant: str | None = None
    user_id: str | None = None
    dry_run: bool = False


class ArchiveMemories(UserCommand):
    memory_ids: tuple[str, ...]
    now: AwareDatetime
    reason: str


class RestoreMemories(UserCommand):
    memory_ids: tuple[str, ...]
    now: AwareDatetime
    reason: str


class RecordReply(UserCommand):
    """The agent's reply: the retrieved notes/turns it drew on are reinforced (a ``used`` touch)."""

    reply: str
    memory_ids: tuple[str, ...]
    query: str = ""


class RecordReplies(Command):
    """Several replies, of one user or many of the shard, each decided as its :class:`RecordReply` is and appended
    together, in one transaction; the outcome is each reply's, in order. One reply refused refuses them all
    (nothing is written): send each alone then, to find which."""

    replies: tuple[RecordReply, ...] = Field(min_length=1)


class RecordTurns(Command):
    """A batch of conversation turns on one shard: their ``messages`` and the usage of the ``replies`` among them
    (each a :class:`RecordReply`, naming memories recorded before this batch), decided against the same state and
    appended together, in one transaction. Refused (nothing is written) when the messages or any reply would be;
    the outcome is ``{"messages": RecordMessages' outcome, "replies": RecordReplies' outcome}``."""

    messages: RecordMessages
    replies: tuple[RecordReply, ...] = ()


class PutItem(UserCommand):
    """Put the item ``key`` of ``collection`` (``""``: outside any collection): a new version of its note, and,
    unless ``message`` is None (an unindexed item), the message search finds it by, with its embedding."""

    collection: str
    key: str
    value_json: str  # the value, as JSON text
    text: str  # what the item is found by (the message's text)
    message: RecordMessage | None
    vector: Vector | None
    model_id: str
    now: AwareDatetime


class DeleteItem(UserCommand):
    """Retract the item ``key`` of ``collection``: its note is retracted (nothing is removed from the log)."""

    collection: str
    key: str
    now: AwareDatetime


class ReviewNotes(Command):
    now: AwareDatetime
    tenant: str | None = None
    user_id: str | None = None


class JudgeFeedback(UserCommand):
    """The Feedback Judge on the user's turn that answers an agent reply (seed 003 §4): one ``feedback_detected``."""

    user_input: str = Field(min_length=1, max_length=20_000)
    agent_response: str = Field(min_length=1, max_length=100_000)
    context_window: tuple[str, ...] = Field(default=(), max_length=50)
    memory_ids: tuple[str, ...] = Field(default=(), max_length=1_000)  # what the judged reply's context held
    now: AwareDatetime = Field(default_factory=lambda: datetime.now(UTC))  # when the user reacted
    query: str | None = Field(default=None, max_length=20_000)  # the question the judged reply answered


class RevertAdjustment(UserCommand):
    """Undo a dispatcher adjustment (``adjustment_reverted``); one already reverted yields no event."""

    adjustment_id: str = Field(min_length=1, max_length=200)
    reason: str = Field(min_length=1, max_length=2_000)
    now: AwareDatetime


class Molt(UserCommand):
    """The Molt controller on one user (seed 003 §10): measure, propose, replay the recorded queries, decide.

    ``queries`` are the user's recorded queries the replay ranks (text, vector, time, the memories a reply
    used: :class:`MoltInputs`); ``dry_run`` writes nothing."""

    queries: tuple[tuple[str, Vector, AwareDatetime, tuple[str, ...]], ...] = ()  # text, vector, time, used ids
    now: AwareDatetime
    dry_run: bool = False
    force: bool = False  # propose even when no figure crossed its threshold
    fusion: Fusion = DEFAULT_FUSION


class RevertPolicy(UserCommand):
    """Undo a Molt policy change: a ``policy_changed`` that restores the values it replaced."""

    change_id: str = Field(min_length=1, max_length=200)
    reason: str = Field(min_length=1, max_length=2_000)
    now: AwareDatetime


class ForgetUser(UserCommand):
    """Erase a user: a ``user_forgotten`` event, its data keys destroyed, its projections, vectors and snapshot
    removed. Only an encrypted store can forget (its log holds the user's events sealed under those keys).
    Its ids are taken exactly as given: :meth:`palimpsest.Memory.forget` also erases a stream an older store
    recorded under another Unicode form of the same id."""

    exact_ids: ClassVar[bool] = True
    now: AwareDatetime


# -- queries ----------------------------------------------------------------
class Search(UserQuery):
    query: str
    query_vector: Vector
    query_model: str = ""  # the model of query_vector ("": the user's active one)
    k: int = 10
    fusion: Fusion = DEFAULT_FUSION
    now: AwareDatetime | None = None
    scope: Literal["active", "archive", "all"] = "active"
    touch_reason: str | None = "search_hit"


class BuildContext(UserQuery):
    query: str
    query_vector: Vector
    query_model: str = ""  # the model of query_vector ("": the user's active one)
    token_budget: int
    fusion: Fusion = DEFAULT_FUSION
    now: AwareDatetime | None = None


class SearchMemories(UserQuery):
    """``search_memories``: graph-expanded search (seed 001). ``pending_labels[i]`` → ``pending_vectors[i]``: the
    vectors of labels not embedded yet, encoded for this read and not recorded (the reader names the ones it
    lacks, :func:`actors.reads_graph.search_memories`)."""

    query: str
    query_vector: Vector
    pending_labels: tuple[str, ...] = ()
    pending_vectors: Vector | None = None
    now: AwareDatetime
    mode: str = "auto"
    expand_depth: int = 1
    memory_types: tuple[str, ...] | None = None
    time_range: tuple[datetime | None, datetime | None] | None = None
    max_results: int = 10
    relation_filter: tuple[str, ...] | None = None


class Episodes(UserQuery):
    query: str | None = None
    query_vector: Vector | None = None
    k: int = 5
    fusion: Fusion = DEFAULT_FUSION


class Retention(UserQuery):
    now: AwareDatetime


class Archived(UserQuery):
    pass


class MemoryRetention(UserQuery):
    """One memory (a recorded message) with its retention at ``now`` and its forgetting curve up to ``until``."""

    memory_id: str
    now: AwareDatetime
    until: AwareDatetime | None = None
    points: int = Field(default=80, ge=2, le=2000)


class Feedback(UserQuery):
    """The user's feedback signals, oldest first; with ``memory_id`` only those naming that memory or note."""

    memory_id: str | None = None


class Adjustments(UserQuery):
    """The dispatcher's adjustments of one user, oldest first (reverted ones too unless ``active_only``)."""

    active_only: bool = False
    target_id: str | None = None


class MoltInputs(UserQuery):
    """The recorded queries the Molt replay ranks: each query a reply answered, when, and the memories it used."""

    flushes_first: ClassVar[bool] = True


class PolicyHistory(UserQuery):
    pass


class Explain(UserQuery):
    """Why a memory or note is what it is at ``at`` (events, derivations, touches, feedback, retention, adjustments)."""

    flushes_first: ClassVar[bool] = True
    memory_id: str
    at: AwareDatetime
    query: str | None = None  # with its vector: the memory's score breakdown for that query
    query_vector: Vector | None = None
    fusion: Fusion = DEFAULT_FUSION


class Notes(UserQuery):
    now: AwareDatetime
    at: AwareDatetime | None = None
    include_inactive: bool = False


class NoteHistory(Query):
    note_id: str
    now: AwareDatetime
    tenant: str | None = None
    user_id: str | None = None


class Profile(UserQuery):
    include_knowledge: bool = True
    include_assistant_knowledge: bool = False


class Tiers(UserQuery):
    now: AwareDatetime
    conversation_id: str | None = None


class GraphMerges(UserQuery):
    pass


class GraphExport(UserQuery):
    title: str
    data_only: bool = False  # the graph view's data (the inspector draws it) instead of HTML and GraphML


class MissingEmbeddings(Query):
    """Per user, what a re-embedding to ``model_id`` still has to encode: ``(tenant, user_id, [(message id, the
    text it embeds)], [graph labels])``; and per user the model it is searched by (``active``)."""

    model_id: str = Field(min_length=1)
    tenant: str | None = None
    user_id: str | None = None


class UnembeddedLabels(Query):
    """Per user (optionally one tenant and/or user), the topic/object labels its graph has no vector for yet."""

    tenant: str | None = None
    user_id: str | None = None


class GraphJobs(Query):
    """The consolidation work of the shard's users (``idle``: users with any graph memory, not only staged)."""

    tenant: str | None = None
    user_id: str | None = None
    decay: bool = True
    at: AwareDatetime | None = None
    idle: bool = False


class Counterfactual(Query):
    """Re-project retention under ``policy`` (the log is only read); ``queries`` are (tenant, user, text, vector).

    ``tenant``: only that tenant's users (``None``: every user of the shard)."""

    flushes_first: ClassVar[bool] = True
    tenant: str | None = None
    policy: Annotated[RetentionPolicy, AS_IS]
    now: AwareDatetime
    queries: tuple[tuple[str, str, str, Vector], ...] = ()
    k: int = 10
    fusion: Fusion = DEFAULT_FUSION


class ScanEvents(Query):
    flushes_first: ClassVar[bool] = True
    filter: Annotated[ScanFilter, AS_IS]
    limit: int | None = None


class AuditRows(Query):
    """The shard's stored log rows (of one tenant, or all) as an Arrow table, for the served audit."""

    flushes_first: ClassVar[bool] = True
    tenant: str | None = None


class Streams(Query):
    """Every (tenant, user) whose events this shard's log holds (the directory is rebuilt from them)."""


class Digest(Query):
    flushes_first: ClassVar[bool] = True


class Stats(Query):
    flushes_first: ClassVar[bool] = True


# -- admin commands ------------------------------------------------------------
class AdminCommand(ShardMessage):
    """Maintenance that writes, but no event: files, the rebuilt projections, stored rows. Neither a query (it
    writes) nor a command (no id, no recorded outcome: sent again, it runs again). The shard runs it alone, holding
    the log and the projections (:meth:`actors.core.ShardCore.admin`), after writing the pending touches."""


class Backup(AdminCommand):
    """Copy this shard's log, checkpointed, into ``target`` (a directory), and in an encrypted store its key
    store into ``keys_target``, after the log: consistent, since the shard is the only writer of both and
    runs it alone (every key the copied log needs is in the copied key store; a user forgotten
    before the call has no key in it). Writes no event."""

    target: str
    keys_target: str | None = None


class Replay(AdminCommand):
    """Rebuild every projection from event 0 and compare digests with the live ones. Writes no event; the
    rebuilt projections replace the live ones, and touch rows stored before the log's ``touch`` column get it
    (:meth:`events.duckdb_log.DuckDBEventLog.backfill_touches`)."""
