"""Retention policy: every parameter of the forgetting curve, as one frozen, documented object.

The retention fold (:mod:`projections.folds.retention`) and its queries read nothing
else, so the counterfactual "what would the agent remember under policy B" is
``fold(RetentionState(), log, B)``. Policies load from JSON or TOML files
(:meth:`RetentionPolicy.load`); fields a file leaves out keep their defaults,
and ``stability_days`` entries it leaves out keep the seed-000 values.

Where the defaults come from:

- ``stability_days``: seed 000 Feature 1 (decision 90, config 120, code 60,
  error 30, question 7, chitchat 3, unknown 14). ``fact`` = 100 d is seed 001
  §5.3's decay rate for facts (λ = 0.01/day, S = 1/λ). ``preference`` = 90 d,
  like a decision: both are choices that hold until superseded, and a change
  of mind is handled by supersession, not by forgetting.
- ``reinforcement_factor`` 1.3: seed 000 (``stability = stability * 1.3``).
- ``reinforcing_reasons``: the issue — a memory put into a context or used by
  a reply counts; a plain search hit is recorded but does not (seed 002: a
  retrieved memory the reply did not use was not used).
- ``access_bonus_weight`` 1.0: seed 001 §5.3, bonus = 1 + log(1 + access_count).
- ``archive_floor`` 0.05 ≈ e^(−3): an untouched item is archived after about
  three stability lifetimes (chitchat ≈ 9 d, unknown ≈ 42 d, decision ≈ 270 d).
- ``categories``: seed 002's decay table as data (:data:`CATEGORY_DECAY_POLICY`, the preset
  ``category-decay``, once named ``seed-002``).
"""

from __future__ import annotations

import hashlib
import json
import tomllib
from collections.abc import Mapping
from functools import cached_property
from pathlib import Path
from typing import Any, get_args

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    ValidationError,
    field_serializer,
    field_validator,
)

from events.errors import InvalidInputError
from events.model import MEMORY_TYPES, MemoryType, Role, TouchReason


class FrozenMap(dict):
    """A read-only dict: unlike ``MappingProxyType`` it pickles (policies cross Ray actor boundaries)."""

    def _read_only(self, *args: Any, **kwargs: Any) -> None:
        raise TypeError("a retention policy is frozen; derive another with RetentionPolicy.replace(...)")

    __setitem__ = __delitem__ = clear = pop = popitem = setdefault = update = __ior__ = _read_only  # type: ignore[assignment]

    def __reduce__(self) -> tuple:
        return (FrozenMap, (dict(self),))

    def __copy__(self) -> FrozenMap:
        return self

    def __deepcopy__(self, memo: dict) -> FrozenMap:
        return self


SEED_000_STABILITY_DAYS: Mapping[str, float] = FrozenMap(
    decision=90.0, config=120.0, code=60.0, error=30.0, question=7.0, chitchat=3.0,  # seed 000
    preference=90.0, fact=100.0,  # see the module docstring
    unknown=14.0,
)


# The parameters the fold reads; every other one is read only by the queries.
FOLD_FIELDS = ("stability_days", "reinforcement_factor", "reinforcing_reasons", "role_categories")


class PolicyError(InvalidInputError):
    """A retention policy (file or arguments) is invalid; ``problems`` names each bad field."""

    def __init__(self, problems: list[tuple[str, str]], *, what: str = "retention policy") -> None:
        self.problems = tuple(problems)
        self.what = what  # the API's error handler names it
        lines = [f"  - {loc}: {msg}" for loc, msg in self.problems]
        Exception.__init__(self, f"rejected {what}: {len(self.problems)} problem(s)\n" + "\n".join(lines))


class CategoryRule(BaseModel):
    """How one seed-002 category (system, core, episode, fact, ...) decays and is archived.

    The rule multiplies the exponential curve; it does not replace it.
    ``multiplier`` applies once Δt (days since last access, else creation)
    reaches ``after_days``, and once more per further ``every_days`` when that
    is set. ``archive_after_days`` archives by age since *creation*, whatever
    the touches (seed 002: "deleted after 14 days"). ``archive_below``
    replaces the policy's floor for this category.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    decays: bool = Field(True, description="False: never decays and is never archived (system, core).")
    multiplier: float = Field(1.0, gt=0.0, le=1.0)
    after_days: float = Field(0.0, ge=0.0)
    every_days: float | None = Field(None, gt=0.0)
    archive_after_days: float | None = Field(None, gt=0.0)
    archive_below: float | None = Field(None, ge=0.0)

    def step_multiplier(self, delta_days: float) -> float:
        """The category's factor at ``delta_days`` since last access (1.0 before ``after_days``)."""
        if self.multiplier == 1.0 or delta_days < self.after_days:
            return 1.0
        steps = 1 + (int((delta_days - self.after_days) // self.every_days) if self.every_days else 0)
        return self.multiplier**steps


NEVER_DECAYS = CategoryRule(decays=False)
# Where a memory's stability stops growing, in days. Past it R = e^(-Δt/S) is 1.0 for any Δt a calendar holds, so
# the ceiling changes no figure: it keeps S finite (a JSON number, no overflow) for a memory touched without end.
STABILITY_CEILING_DAYS = 1e300


def _frozen_mapping(value: Mapping) -> Mapping:
    return FrozenMap(sorted(value.items()))


class RetentionPolicy(BaseModel):
    """All parameters of retention: R = base · e^(−Δt/S) · access bonus · category factor.

    Frozen (its mappings are read-only :class:`FrozenMap` s) and picklable. Derive a variant with
    :meth:`replace`, which validates again; compare two policies by
    :meth:`digest`, which ignores ``name`` and ``description``.
    """

    model_config = ConfigDict(frozen=True, extra="forbid", validate_default=True)

    name: str = "default"
    description: str = ""
    stability_days: Mapping[MemoryType, float] = Field(
        default_factory=lambda: dict(SEED_000_STABILITY_DAYS),
        description="Initial stability S in days per memory type; types not given keep the default value.",
    )
    reinforcement_factor: float = Field(1.3, ge=1.0, description="S is multiplied by this on every counted touch.")
    reinforcing_reasons: tuple[TouchReason, ...] = Field(
        ("context", "used"), description="Touch reasons that count as an access (reset Δt, grow S, add to the bonus)."
    )
    base_retention: float = Field(1.0, gt=0.0, description="R of an item at Δt = 0 with no accesses.")
    access_bonus_weight: float = Field(
        1.0, ge=0.0, description="Access bonus = 1 + weight · ln(1 + access_count); 0 turns it off."
    )
    archive_floor: float = Field(0.05, ge=0.0, description="Items with R below this are archival candidates.")
    exempt_types: tuple[MemoryType, ...] = Field((), description="Memory types that never decay.")
    categories: Mapping[str, CategoryRule] = Field(
        default_factory=lambda: {"system": NEVER_DECAYS, "core": NEVER_DECAYS},
        description="Category rules by category name; items without a listed category follow the curve only.",
    )
    role_categories: Mapping[Role, str] = Field(
        default_factory=dict,
        description="Category given to messages of a role when their metadata names none (e.g. system -> system).",
    )

    @field_validator("stability_days", mode="before")
    @classmethod
    def _merge_stability(cls, value: Any) -> Any:
        if isinstance(value, Mapping):
            return {**SEED_000_STABILITY_DAYS, **value}
        return value

    @field_validator("stability_days")
    @classmethod
    def _positive_stability(cls, value: Mapping[str, float]) -> Mapping[str, float]:
        bad = sorted(t for t, s in value.items() if not s > 0)
        if bad:
            raise ValueError(f"stability must be > 0 days; fix the entries for {', '.join(bad)}")
        return _frozen_mapping(value)

    @field_validator("categories", "role_categories")
    @classmethod
    def _freeze(cls, value: Mapping) -> Mapping:
        return _frozen_mapping(value)

    @field_validator("reinforcing_reasons", "exempt_types")
    @classmethod
    def _canonical_set(cls, value: tuple[str, ...]) -> tuple[str, ...]:
        return tuple(sorted(set(value)))

    @field_serializer("stability_days", "categories", "role_categories")
    def _plain_dict(self, value: Mapping) -> dict:
        return dict(value)

    # -- reading -------------------------------------------------------------

    def stability_for(self, memory_type: str) -> float:
        """Initial stability in days for a memory type (unknown types use ``unknown``)."""
        return self.stability_days.get(memory_type, self.stability_days["unknown"])

    def reinforced_stability(self, memory_type: str, access_count: int) -> float:
        """S after ``access_count`` counted touches: ``stability_for(type) · reinforcement_factor ** count``, at most
        :data:`STABILITY_CEILING_DAYS` (the power overflows a float after a few thousand touches: 1.3 ** 2706).

        A closed form rather than repeated multiplication: the value does not depend on whether the
        classification arrived before or after the touches.
        """
        try:
            return min(self.stability_for(memory_type) * self.reinforcement_factor**access_count,
                       STABILITY_CEILING_DAYS)
        except OverflowError:
            return STABILITY_CEILING_DAYS

    def counts(self, reason: str) -> bool:
        """Whether a touch with this reason reinforces."""
        return reason in self.reinforcing_reasons

    def rule_for(self, category: str | None) -> CategoryRule | None:
        return self.categories.get(category) if category is not None else None

    def _hash(self, fields: set[str]) -> str:
        params = self.model_dump(mode="json", include=fields)
        return hashlib.sha256(json.dumps(params, sort_keys=True, separators=(",", ":")).encode()).hexdigest()

    @cached_property
    def _digests(self) -> tuple[str, str]:
        return self._hash(set(type(self).model_fields) - {"name", "description"}), self._hash(set(FOLD_FIELDS))

    def digest(self) -> str:
        """sha256 of the canonical JSON of every parameter (name and description excluded)."""
        return self._digests[0]

    def fold_digest(self) -> str:
        """sha256 of the parameters the retention *fold* reads (:data:`FOLD_FIELDS`).

        Two policies with the same fold digest give the same folded state and
        differ only at query time (floor, bonus, categories, ...), so one
        state answers both without re-folding.
        """
        return self._digests[1]

    # -- building ------------------------------------------------------------

    def replace(self, **changes: Any) -> RetentionPolicy:
        """A validated copy with some fields changed: ``DEFAULT_POLICY.replace(archive_floor=0.1)``."""
        return _validate({**self.model_dump(), **changes}, what="retention policy")

    @classmethod
    def load(cls, path: str | Path) -> RetentionPolicy:
        """Read a policy from a ``.json`` or ``.toml`` file; fields left out keep their defaults.

        Raises :class:`PolicyError` naming every invalid field.
        """
        path = Path(path)
        what = f"retention policy file {path}"
        try:
            raw = path.read_text(encoding="utf-8")
        except OSError as exc:
            raise PolicyError([(str(path), f"cannot read the file ({exc.strerror}); check the path")], what=what) from exc
        try:
            if path.suffix.lower() == ".toml":
                data = tomllib.loads(raw)
            elif path.suffix.lower() == ".json":
                data = json.loads(raw)
            else:
                raise PolicyError([(str(path), "unknown file type; name it *.json or *.toml")], what=what)
        except (json.JSONDecodeError, tomllib.TOMLDecodeError) as exc:
            raise PolicyError([(str(path), f"not valid {path.suffix[1:].upper()}: {exc}")], what=what) from exc
        if not isinstance(data, dict):
            raise PolicyError([(str(path), "the top level must be a table/object of policy fields")], what=what)
        data.setdefault("name", path.stem)
        return _validate(data, what=what)


def _validate(data: dict, *, what: str) -> RetentionPolicy:
    try:
        return RetentionPolicy.model_validate(data)
    except ValidationError as exc:
        problems = []
        for err in exc.errors():
            loc = ".".join(str(p) for p in err["loc"] if p != "[key]")
            msg = err["msg"]
            if err["type"] == "literal_error" and "stability_days" in err["loc"]:
                msg = f"unknown memory type; use one of {', '.join(MEMORY_TYPES)}"
            elif err["type"] == "literal_error" and "reinforcing_reasons" in err["loc"]:
                msg = f"unknown touch reason; use one of {', '.join(get_args(TouchReason))}"
            elif err["type"] == "extra_forbidden":
                msg = f"unknown field; known fields are {', '.join(RetentionPolicy.model_fields)}"
            problems.append((loc or "policy", msg))
        raise PolicyError(problems, what=what) from exc


DEFAULT_POLICY = RetentionPolicy(
    name="default",
    description="A stability per memory type, ×1.3 per counted access, an access bonus; system and core never decay.",
)

CATEGORY_DECAY_POLICY = DEFAULT_POLICY.replace(
    name="category-decay",
    description=(
        "A decay table per category on top of the default curve: system and core never decay; "
        "episode ×0.8 after 7 d and archived 14 d after creation; fact ×0.95 after 7 d and archived below 0.3. "
        "System-role messages are category system. (Its old name seed-002 is deprecated, still accepted.)"
    ),
    categories={
        "system": NEVER_DECAYS,
        "core": NEVER_DECAYS,
        "episode": CategoryRule(multiplier=0.8, after_days=7.0, archive_after_days=14.0),
        "fact": CategoryRule(multiplier=0.95, after_days=7.0, archive_below=0.3),
    },
    role_categories={"system": "system"},
)
SEED_002_POLICY = CATEGORY_DECAY_POLICY  # deprecated Python name of the same preset

PRESETS: Mapping[str, RetentionPolicy] = FrozenMap({p.name: p for p in (DEFAULT_POLICY, CATEGORY_DECAY_POLICY)})
# Old names of presets, still accepted by preset() (and so by `palimpsest replay --policy` and the counterfactual
# route); the listings show the new name.
PRESET_ALIASES: Mapping[str, str] = FrozenMap({"seed-002": CATEGORY_DECAY_POLICY.name})


def preset(name: str) -> RetentionPolicy:
    """The preset called ``name`` (or by an old name of :data:`PRESET_ALIASES`); :class:`PolicyError` naming the
    presets otherwise."""
    found = PRESETS.get(PRESET_ALIASES.get(name, name))
    if found is None:
        raise PolicyError([("preset", f"no preset named {name!r}; use one of {', '.join(PRESETS)} "
                                      "(or a policy file)")], what="retention policy")
    return found


def listing(live: RetentionPolicy) -> dict:
    """The live policy and the presets as ``GET /v1/policies`` and ``palimpsest policies --json`` answer them."""
    return {"live": live.model_dump(mode="json"), "presets": [p.model_dump(mode="json") for p in PRESETS.values()],
            "aliases": dict(PRESET_ALIASES)}
