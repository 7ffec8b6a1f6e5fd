"""The retention policy object (defaults, freezing, digest, files) and seed 002's category rules as a policy."""

from __future__ import annotations

import json
import math
import pickle

import pytest
from pydantic import ValidationError

from projections.folds.policy import (
    DEFAULT_POLICY,
    PRESETS,
    SEED_002_POLICY,
    CategoryRule,
    PolicyError,
    RetentionPolicy,
)
from projections.folds.retention import (
    RetentionState,
    archival_candidates,
    fold,
    retention,
    retention_table,
)
from tests.retention_builders import classified, day, remembered, timeline, touch

# -- the policy object ---------------------------------------------------------


def test_default_policy_holds_the_seed_parameters():
    p = DEFAULT_POLICY
    assert dict(p.stability_days) == {
        "chitchat": 3.0, "code": 60.0, "config": 120.0, "decision": 90.0, "error": 30.0,
        "fact": 100.0, "preference": 90.0, "question": 7.0, "unknown": 14.0,
    }
    assert (p.reinforcement_factor, p.reinforcing_reasons, p.base_retention) == (1.3, ("context", "used"), 1.0)
    assert (p.access_bonus_weight, p.archive_floor, p.exempt_types) == (1.0, 0.05, ())
    assert not p.counts("search_hit") and p.counts("used")
    assert set(PRESETS) == {"default", "category-decay"}


def test_policy_is_frozen_all_the_way_down():
    with pytest.raises(ValidationError):
        DEFAULT_POLICY.archive_floor = 0.5
    with pytest.raises(TypeError, match="frozen"):
        DEFAULT_POLICY.stability_days["chitchat"] = 300.0
    with pytest.raises(TypeError, match="frozen"):
        SEED_002_POLICY.categories.pop("core")
    assert DEFAULT_POLICY.stability_for("chitchat") == 3.0


def test_digest_is_stable_ignores_the_name_and_changes_with_any_parameter():
    same = RetentionPolicy(name="another name", description="x")
    assert same.digest() == DEFAULT_POLICY.digest() == RetentionPolicy().digest()
    assert len(DEFAULT_POLICY.digest()) == 64
    assert DEFAULT_POLICY.replace(reinforcement_factor=1.31).digest() != DEFAULT_POLICY.digest()
    assert DEFAULT_POLICY.replace(reinforcing_reasons=("used", "context")).digest() == DEFAULT_POLICY.digest()
    assert SEED_002_POLICY.digest() != DEFAULT_POLICY.digest()


def test_policy_pickles_for_actor_boundaries():
    clone = pickle.loads(pickle.dumps(SEED_002_POLICY))
    assert clone == SEED_002_POLICY and clone.digest() == SEED_002_POLICY.digest()


def test_replace_validates_and_partial_stability_keeps_the_other_defaults():
    p = DEFAULT_POLICY.replace(stability_days={"chitchat": 5})
    assert p.stability_days["chitchat"] == 5.0 and p.stability_days["decision"] == 90.0
    with pytest.raises(PolicyError, match="reinforcement_factor"):
        DEFAULT_POLICY.replace(reinforcement_factor=0.5)


def test_load_json_and_toml(tmp_path):
    (tmp_path / "short.json").write_text(json.dumps({"archive_floor": 0.1, "stability_days": {"chitchat": 1}}))
    (tmp_path / "hits.toml").write_text(
        'reinforcing_reasons = ["search_hit", "context", "used"]\n'
        "[categories.episode]\nmultiplier = 0.8\nafter_days = 7\narchive_after_days = 14\n"
    )
    short = RetentionPolicy.load(tmp_path / "short.json")
    hits = RetentionPolicy.load(str(tmp_path / "hits.toml"))
    assert (short.name, short.archive_floor, short.stability_for("chitchat")) == ("short", 0.1, 1.0)
    assert hits.counts("search_hit") and hits.categories["episode"].archive_after_days == 14.0
    assert "core" not in hits.categories  # a file's categories replace the default table


def test_seed_002_policy_file_gives_the_preset(tmp_path):
    path = tmp_path / "seed-002.json"
    path.write_text(SEED_002_POLICY.model_dump_json())
    assert RetentionPolicy.load(path).digest() == SEED_002_POLICY.digest()


@pytest.mark.parametrize(
    ("content", "suffix", "named"),
    [
        ('{"stability_days": {"decison": 3}}', ".json", "stability_days.decison: unknown memory type"),
        ('{"stability_days": {"code": 0}}', ".json", "stability_days"),
        ('{"reinforcing_reasons": ["seen"]}', ".json", "reinforcing_reasons.0: unknown touch reason"),
        ('{"archive_flor": 0.1}', ".json", "archive_flor: unknown field"),
        ('{"categories": {"fact": {"multiplier": 1.5}}}', ".json", "categories.fact.multiplier"),
        ("archive_floor = -1\n", ".toml", "archive_floor"),
        ("archive_floor = \n", ".toml", "not valid TOML"),
        ("{", ".json", "not valid JSON"),
        ("[1, 2]", ".json", "top level"),
        ("x: 1", ".yaml", "*.json or *.toml"),
    ],
)
def test_load_errors_name_the_field_and_say_how_to_fix_it(tmp_path, content, suffix, named):
    path = tmp_path / f"policy{suffix}"
    path.write_text(content)
    with pytest.raises(PolicyError, match="rejected retention policy file") as excinfo:
        RetentionPolicy.load(path)
    assert named in str(excinfo.value)


def test_load_of_a_missing_file_says_so(tmp_path):
    with pytest.raises(PolicyError, match="cannot read the file"):
        RetentionPolicy.load(tmp_path / "nope.json")


# -- seed 002's decay table as a policy ----------------------------------------------


def project(*entries, policy=SEED_002_POLICY) -> RetentionState:
    return fold(RetentionState(), timeline(*entries), policy)


def item(category: str, memory_type: str = "unknown", mid: str = "m1", at: float = 0.0) -> list[tuple]:
    return [(at, mid, remembered(f"text {mid}", f"c-{mid}", at=at, category=category)),
            (at, f"k-{mid}", classified(mid, memory_type))]


def r(state, at, policy=SEED_002_POLICY, mid="m1"):
    return retention(state.items[mid], day(at), policy)


def archived(state, at, policy=SEED_002_POLICY):
    return [row.memory_id for row in archival_candidates(state, day(at), policy)]


def test_seed_002_system_messages_never_decay():
    state = project((0, "m1", remembered("You are a helpful assistant.", "c1", role="system")))
    assert state.items["m1"].category == "system"
    assert r(state, 3650) == 1.0 and archived(state, 3650) == []
    default = fold(RetentionState(), timeline((0, "m1", remembered("You are a helpful assistant.", "c1", role="system"))),
                   DEFAULT_POLICY)
    assert default.items["m1"].category is None  # the default policy gives roles no category
    assert retention(default.items["m1"], day(14), DEFAULT_POLICY) == pytest.approx(math.exp(-1))


def test_seed_002_core_never_decays():
    state = project(*item("core", "chitchat"))
    assert r(state, 3650) == 1.0 and archived(state, 3650) == []
    assert "category core never decays" in retention_table(state, day(3650), SEED_002_POLICY)[0].why


def test_seed_002_episode_is_multiplied_by_0_8_after_7_days():
    state = project(*item("episode"))
    assert r(state, 6.5) == pytest.approx(math.exp(-6.5 / 14))
    assert r(state, 7) == pytest.approx(0.8 * math.exp(-7 / 14))
    assert r(state, 10) == pytest.approx(0.8 * math.exp(-10 / 14))


def test_seed_002_episode_is_archived_14_days_after_creation_even_if_touched():
    state = project(*item("episode"), (12, "t1", touch("m1", reason="used")))
    assert r(state, 13.9) > SEED_002_POLICY.archive_floor and archived(state, 13.9) == []
    assert archived(state, 14) == ["m1"]
    assert "age 14 d ≥ 14 d" in retention_table(state, day(14), SEED_002_POLICY)[0].why


def test_seed_002_fact_is_multiplied_by_0_95_after_7_days():
    state = project(*item("fact", "fact"))
    assert r(state, 6) == pytest.approx(math.exp(-6 / 100))
    assert r(state, 8) == pytest.approx(0.95 * math.exp(-8 / 100))


def test_seed_002_fact_is_archived_below_0_3_where_the_default_floor_keeps_it():
    state = project(*item("fact", "fact"))
    assert r(state, 110) == pytest.approx(0.95 * math.exp(-1.1))  # 0.316: kept
    assert archived(state, 110) == []
    assert r(state, 120) == pytest.approx(0.95 * math.exp(-1.2))  # 0.286 < 0.3
    assert archived(state, 120) == ["m1"]
    assert "category fact floor 0.3" in retention_table(state, day(120), SEED_002_POLICY)[0].why
    default = fold(RetentionState(), timeline(*item("fact", "fact")), DEFAULT_POLICY)
    assert archival_candidates(default, day(120), DEFAULT_POLICY) == []


def test_a_category_multiplier_can_compound_every_period():
    weekly = SEED_002_POLICY.replace(categories={"episode": CategoryRule(multiplier=0.8, after_days=7, every_days=7)})
    state = project(*item("episode"))
    assert r(state, 21, weekly) == pytest.approx(0.8**3 * math.exp(-21 / 14))
    assert r(state, 20.9, weekly) == pytest.approx(0.8**2 * math.exp(-20.9 / 14))


def test_metadata_category_wins_over_the_role_category():
    state = project((0, "m1", remembered("Project uses Postgres", "c1", role="system", category="fact")))
    assert state.items["m1"].category == "fact"
