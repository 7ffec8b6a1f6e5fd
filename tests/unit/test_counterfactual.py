"""Re-projecting retention under another policy: what each would archive, computed from the same log."""

from __future__ import annotations

from projections.folds.policy import DEFAULT_POLICY
from projections.queries.counterfactual import compare
from tests.retention_builders import classified, day, remembered, timeline


def _log():
    return timeline(
        (0, "q1", remembered("What stack are you thinking about?", "c1")),
        (0, "k1", classified("q1", "question")),
        (0, "d1", remembered("We decided to use PostgreSQL", "c2")),
        (0, "k2", classified("d1", "decision")),
    )


def test_a_patient_policy_keeps_what_the_default_archives():
    patient = DEFAULT_POLICY.replace(name="patient", stability_days={"question": 10_000.0})

    [user] = compare(_log(), DEFAULT_POLICY, patient, now=day(30))

    # question: e^(-30/7) = 0.014 < 0.05 floor under the default; decision: e^(-30/90) = 0.72 kept by both.
    assert (user["archived_current"], user["archived_other"]) == (1, 0)
    assert user["kept_only_under_other"] == ["q1"] and user["archived_only_under_other"] == []
    top = user["largest_changes"][0]
    assert top["memory_id"] == "q1" and top["current"] < 0.05 < top["other"]


def test_the_same_policy_changes_nothing():
    [user] = compare(_log(), DEFAULT_POLICY, DEFAULT_POLICY, now=day(30))
    assert user["kept_only_under_other"] == user["archived_only_under_other"] == []
    assert all(c["current"] == c["other"] for c in user["largest_changes"])
