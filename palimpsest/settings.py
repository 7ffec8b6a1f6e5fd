"""The tunable configs of a store (retention policy, segmentation, tiers, working memory, fusion, residency,
the cost limits of an audit query),
as recorded in ``store.json`` and given to :meth:`palimpsest.Memory.open`.

Each config is stored whole as JSON, so a later change of a default does not
silently change a store. A config given at open replaces the recorded one and
is written back; one not given is read from ``store.json``.
"""

from __future__ import annotations

import dataclasses
import typing
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import structlog

from actors.spec import SNAPSHOT_EVERY
from events.audit_limits import DEFAULT_AUDIT_LIMITS, AuditLimits
from events.errors import InvalidInputError, StoreError
from projections.folds.episodes import DEFAULT_SEGMENTATION, SegmentationConfig
from projections.folds.policy import DEFAULT_POLICY, PolicyError, RetentionPolicy
from projections.folds.tiers import DEFAULT_TIERS, TierConfig
from projections.folds.working import DEFAULT_WORKING, WorkingConfig
from projections.queries.retrieval import DEFAULT_FUSION, FusionConfig

log = structlog.get_logger("palimpsest")


@dataclass(frozen=True)
class StoreSettings:
    retention_policy: RetentionPolicy = DEFAULT_POLICY
    segmentation: SegmentationConfig = DEFAULT_SEGMENTATION
    tiers: TierConfig = DEFAULT_TIERS
    working: WorkingConfig = DEFAULT_WORKING
    fusion: FusionConfig = DEFAULT_FUSION
    max_resident_users: int | None = None  # per shard; None keeps every user in memory
    snapshot_every: int = SNAPSHOT_EVERY  # events past a user's snapshot before a new one is written
    audit_limits: AuditLimits = DEFAULT_AUDIT_LIMITS  # what one audit SQL query may cost (time, rows, memory)

    def to_json(self) -> dict:
        return {
            "retention_policy": self.retention_policy.model_dump(mode="json"),
            "segmentation": dataclasses.asdict(self.segmentation),
            "tiers": dataclasses.asdict(self.tiers),
            "working": dataclasses.asdict(self.working),
            "fusion": dataclasses.asdict(self.fusion),
            "max_resident_users": self.max_resident_users,
            "snapshot_every": self.snapshot_every,
            "audit_limits": dataclasses.asdict(self.audit_limits),
        }

    @classmethod
    def from_json(cls, data: dict | None, where: str = "store.json") -> StoreSettings:
        data = data or {}
        try:
            policy = data.get("retention_policy")
            return cls(
                retention_policy=DEFAULT_POLICY.replace(**policy) if policy else DEFAULT_POLICY,
                segmentation=_dataclass(SegmentationConfig, data.get("segmentation")),
                tiers=_dataclass(TierConfig, data.get("tiers")),
                working=_dataclass(WorkingConfig, data.get("working")),
                fusion=_dataclass(FusionConfig, data.get("fusion")),
                max_resident_users=data.get("max_resident_users"),
                snapshot_every=data.get("snapshot_every", SNAPSHOT_EVERY),
                audit_limits=_dataclass(AuditLimits, data.get("audit_limits")),
            ).checked()
        except (TypeError, ValueError, PolicyError) as exc:
            raise StoreError(f"{where}: a recorded config cannot be read ({exc}); fix or remove that entry") from None

    def checked(self) -> StoreSettings:
        problems = []
        cap = self.max_resident_users
        if cap is not None and (not isinstance(cap, int) or isinstance(cap, bool) or cap < 1):
            problems.append(f"max_resident_users={cap!r}: give a whole number of users of at least 1, or None")
        every = self.snapshot_every
        if not isinstance(every, int) or isinstance(every, bool) or every < 1:
            problems.append(f"snapshot_every={every!r}: give a whole number of events of at least 1")
        for name, kind in (("retention_policy", RetentionPolicy), ("segmentation", SegmentationConfig),
                           ("tiers", TierConfig), ("working", WorkingConfig), ("fusion", FusionConfig),
                           ("audit_limits", AuditLimits)):
            if not isinstance(getattr(self, name), kind):
                problems.append(f"{name}: give a {kind.__name__}, got {type(getattr(self, name)).__name__}")
        if problems:
            raise ValueError("; ".join(problems))
        return self


def _dataclass(cls: type, data: Any) -> Any:
    """A (possibly nested) frozen dataclass from its ``asdict`` JSON; lists become tuples again."""
    if data is None:
        return cls()
    if not isinstance(data, dict):
        raise TypeError(f"{cls.__name__} must be an object, got {type(data).__name__}")
    hints = typing.get_type_hints(cls)
    known = {f.name for f in dataclasses.fields(cls)}
    unknown = set(data) - known
    if unknown:
        raise TypeError(f"{cls.__name__} has no field(s) {', '.join(sorted(unknown))}")
    values = {}
    for name, value in data.items():
        hint = hints.get(name)
        if not dataclasses.is_dataclass(hint):  # an optional dataclass (``RankerModel | None``): its dataclass
            hint = next((arg for arg in typing.get_args(hint) if dataclasses.is_dataclass(arg)), None)
        if hint is not None and isinstance(value, dict):
            value = _dataclass(hint, value)
        elif isinstance(value, list):
            value = tuple(value)
        values[name] = value
    return cls(**values)


def record_settings(path: Path, cfg, settings: dict[str, Any]):
    """``cfg`` (a StoreConfig) with ``settings`` recorded over its own, written to ``store.json`` if they changed."""
    names = StoreSettings.__dataclass_fields__
    unknown = sorted(set(settings) - set(names))
    if unknown:
        raise InvalidInputError([(n, f"no such setting; use one of {', '.join(names)}") for n in unknown],
                                what="Memory.open")
    if not settings:
        return cfg
    recorded = StoreSettings.from_json(cfg.settings, str(path / "store.json"))
    try:
        wanted = replace(recorded, **settings).checked()
    except ValueError as exc:
        raise InvalidInputError([("settings", str(exc))], what="Memory.open") from None
    if wanted == recorded:
        return cfg
    cfg = cfg.with_settings(wanted.to_json())
    cfg.save(path)
    log.info("store_settings_changed", store=str(path), changed=[n for n in settings if getattr(wanted, n) != getattr(recorded, n)])
    return cfg
