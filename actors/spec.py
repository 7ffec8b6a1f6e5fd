"""A shard's fixed configuration (:class:`ShardSpec`) and what a replay reports (:class:`ReplayReport`)."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from actors.llm import LlmConfig
from projections.folds.episodes import DEFAULT_SEGMENTATION, SegmentationConfig
from projections.folds.policy import DEFAULT_POLICY, RetentionPolicy
from projections.folds.tiers import DEFAULT_TIERS, TierConfig
from projections.folds.working import DEFAULT_WORKING, WorkingConfig

# The longest a query's touches wait before they are group-committed. Each flush is a DuckDB transaction and a
# fold run: at 0.25 s the shards of the dev-store search run spent 23.1 s CPU, at 1.0 s 21.7-21.8 s (README).
TOUCH_FLUSH_S = 1.0
SNAPSHOT_EVERY = 2000  # events past a user's snapshot before a new one is written


@dataclass(frozen=True, slots=True)
class ShardSpec:
    """Where a shard keeps its files, the embedding shape it accepts, and the configs its folds use."""

    index: int
    log_path: Path
    lance_dir: Path
    model_id: str
    dim: int
    record_search_touches: bool = True
    retention_policy: RetentionPolicy = DEFAULT_POLICY
    segmentation: SegmentationConfig = DEFAULT_SEGMENTATION
    tier_config: TierConfig = DEFAULT_TIERS
    working_config: WorkingConfig = DEFAULT_WORKING
    llm: LlmConfig | None = None  # an OpenAI-compatible endpoint for note operations, review, usage, distillation
    touch_flush_s: float = TOUCH_FLUSH_S
    snapshot_dir: Path | None = None  # per-user snapshots (actors.snapshots); None: every start folds the log
    snapshot_every: int = SNAPSHOT_EVERY  # events past a user's snapshot before a new one is written
    max_resident_users: int | None = None  # None: every user stays in memory; N: least recently used leave
    # Test hook (fault injection): when this file exists after a command was committed, the actor removes it
    # and its process exits before replying: a crash between the commit and the acknowledgement.
    crash_marker: Path | None = None
    # An encrypted store: the shard's key store file and the store's master key (never printed: repr=False).
    # Without them the log is plaintext (a store created before encryption, or a test).
    key_store: Path | None = None
    master_key: bytes | None = field(default=None, repr=False, compare=False)

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
    erased: int = 0  # events of forgotten users met by the replay: their keys are gone, the folds skip them
    cpu_seconds: float = 0.0  # CPU time of the replay's thread over ``seconds`` (wall): what it cost, waits aside

    @property
    def equal(self) -> bool:
        return self.live == self.rebuilt
