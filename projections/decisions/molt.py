"""The Molt controller's rules (``molt-v1``, seed 003 §10): effectiveness from the folds, proposals, the verdict.

Pure. :func:`effectiveness` measures one user's memory from its projections:

- ``usage_rate``: of the turns put into contexts, the share a reply drew on (``used`` / ``context`` touches);
- ``restore_rate``: archived memories that had to be restored (premature decay);
- ``conflict_rate``: note versions closed by a later one (superseded or retracted);
- ``negative_rate``: negative signals among the judged reactions;
- ``episode_density``: mean turns per episode (dense related episodes call for abstraction).

:func:`proposals` turns the figures that crossed their thresholds into
candidate fusion changes (the recall side: ``usage_rate`` or ``negative_rate``);
the other figures are reported as findings with what to do (decay rates and
the conflict strategy are store settings; abstraction is ``palimpsest
consolidate``). :func:`verdict` keeps the best candidate only if the replayed
metric improves by at least ``min_gain`` over at least ``min_queries`` queries.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from events.learning_events import PolicyChanged, PolicyProposalRejected
from projections.folds.state import UserMemory

CONTROLLER_ID = "molt-v1"
METRIC = "replayed_used_recall@k"


@dataclass(frozen=True, slots=True)
class MoltConfig:
    usage_threshold: float = 0.5  # below: the retrieval brings too much the replies do not use
    negative_threshold: float = 0.3  # above: too many replies were rejected
    restore_threshold: float = 0.2
    conflict_threshold: float = 0.3
    density_threshold: float = 8.0
    min_queries: int = 3
    min_gain: float = 0.01
    k: int = 5
    # (FusionConfig field, multipliers tried): one field changed per candidate
    steps: tuple[tuple[str, tuple[float, ...]], ...] = (
        ("retention_weight", (0.0, 3.0, 10.0)),
        ("note_weight", (0.0, 2.0)),
        ("episode_weight", (0.0, 2.0)),
        ("lexical_weight", (0.7, 1.5)),
        ("neighbour_weight", (0.0, 2.0)),
        ("ranker_depth", (0.0, 0.5)),  # the learned ranker re-orders fewer rows (0: none)
    )


DEFAULT_MOLT = MoltConfig()


def effectiveness(memory: UserMemory) -> dict[str, float | int | None]:
    context = used = 0
    for memory_id, stats in memory.touches.stats.items():
        if memory_id not in memory.messages.by_id:  # a context touches turns; a note stands for its turns
            continue
        context += stats.by_reason.get("context", 0)
        used += stats.by_reason.get("used", 0)
    archived, restored = len(memory.archive.archived), sum(memory.archive.restored.values())
    notes = list(memory.notes.notes.values())
    closed = sum(1 for n in notes if n.status != "active")
    judged = [s for s in memory.feedback.signals if s.type != "neutral"]
    episodes = memory.episodes.episodes()
    return {
        "context_touches": context, "used_touches": used,
        "usage_rate": round(used / context, 4) if context else None,
        "restore_rate": round(restored / (archived + restored), 4) if archived + restored else None,
        "conflict_rate": round(closed / len(notes), 4) if notes else None,
        "negative_rate": round(sum(s.type == "negative" for s in judged) / len(judged), 4) if judged else None,
        "episode_density": round(sum(len(e.member_ids) for e in episodes) / len(episodes), 2) if episodes else None,
        "signals": len(memory.feedback.signals),
    }


def triggers(figures: dict, config: MoltConfig = DEFAULT_MOLT) -> list[str]:
    """The recall-side figures that crossed their thresholds (each calls for fusion proposals)."""
    out = []
    if figures["usage_rate"] is not None and figures["usage_rate"] < config.usage_threshold:
        out.append(f"usage_rate {figures['usage_rate']} < {config.usage_threshold}")
    if figures["negative_rate"] is not None and figures["negative_rate"] > config.negative_threshold:
        out.append(f"negative_rate {figures['negative_rate']} > {config.negative_threshold}")
    return out


def findings(figures: dict, config: MoltConfig = DEFAULT_MOLT) -> list[str]:
    """The other figures that crossed their thresholds, with what an operator can do (not changed by molt)."""
    out = []
    if figures["restore_rate"] is not None and figures["restore_rate"] > config.restore_threshold:
        out.append(f"restore_rate {figures['restore_rate']} > {config.restore_threshold}: memories decay too early; "
                   "try a slower retention policy with `palimpsest replay --policy FILE` (a store setting)")
    if figures["conflict_rate"] is not None and figures["conflict_rate"] > config.conflict_threshold:
        out.append(f"conflict_rate {figures['conflict_rate']} > {config.conflict_threshold}: many notes were "
                   "superseded; review them with `palimpsest notes review`")
    if figures["episode_density"] is not None and figures["episode_density"] > config.density_threshold:
        out.append(f"episode_density {figures['episode_density']} > {config.density_threshold}: dense related "
                   "episodes; run the abstraction with `palimpsest consolidate`")
    return out


def proposals(current: dict[str, float], config: MoltConfig = DEFAULT_MOLT) -> list[dict[str, float]]:
    """Candidate parameter sets, one field changed each, from the current values of those fields."""
    out = []
    for name, multipliers in config.steps:
        value = current[name]
        for m in multipliers:
            new = round(value * m, 6) if value else round(0.1 * m, 6)
            if isinstance(value, int):
                new = int(round(value * m))
            if new != value:
                out.append({name: new})
    return out


def verdict(
    before: float, evaluated: list[tuple[dict[str, float], float]], current: dict[str, float], queries: int,
    trigger: str, at: datetime, config: MoltConfig = DEFAULT_MOLT,
) -> PolicyChanged | PolicyProposalRejected | None:
    """Apply the best candidate if it improves the replayed metric enough, else record it as rejected."""
    if not evaluated:
        return None
    parameters, after = max(evaluated, key=lambda e: (e[1], -len(repr(e[0]))))
    previous = {k: current[k] for k in parameters}
    common = dict(parameters=parameters, previous=previous, metric=f"{METRIC}={config.k}", before=round(before, 6),
                  after=round(after, 6), queries=queries, trigger=trigger, at=at, controller=CONTROLLER_ID)
    if queries < config.min_queries:
        return PolicyProposalRejected(**common, reason=f"only {queries} judged queries (at least "
                                                       f"{config.min_queries} needed)")
    if after - before >= config.min_gain:
        return PolicyChanged(**common, reason=f"counterfactual replay of {queries} recorded queries: {before:.4f} → "
                                              f"{after:.4f} (≥ +{config.min_gain})")
    return PolicyProposalRejected(**common, reason=f"the best proposal replayed {before:.4f} → {after:.4f} over "
                                                   f"{queries} queries (needs ≥ +{config.min_gain}); kept the policy")
