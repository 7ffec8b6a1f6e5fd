"""The benchmark's fairness and leave-conversations-out reporting (no store, no model)."""

from __future__ import annotations

from benchmarks.baselines import bm25_tokens
from benchmarks.dataset import category_names
from benchmarks.leaveout import choose, leave_out, make_folds, per_sample
from benchmarks.metrics import Scored, metric_keys
from benchmarks.result_file import markdown

KEYS = metric_keys((5, 10), (500, 1000, 2000))


def row(sample: str, value: float, category: str = "1") -> Scored:
    return Scored(category, {k: value for k in KEYS}, sample)


def test_bm25_baseline_segments_chinese_with_jieba_and_keeps_english_words():
    tokens = bm25_tokens("用户: 我将要参加的农业升级合作大会 Hello World")
    assert "农业" in tokens and "大会" in tokens  # a \w+ split keeps the whole sentence as one token
    assert not any(len(t) > 6 and t[0] == "我" for t in tokens)
    assert tokens[-2:] == ["hello", "world"]


def test_folds_cover_every_sample_once_and_need_two_samples():
    folds = make_folds(["a", "a", "b", "c", "d", "e", "f", "g"], k=5)
    assert len(folds) == 5 and sorted(s for f in folds for s in f) == list("abcdefg")
    assert make_folds(["a", "b", "c"]) == [["a"], ["b"], ["c"]]
    assert make_folds(["only"]) == []


def test_each_fold_chooses_on_the_other_samples_and_reports_the_held_out_rows():
    # "good" wins on a, b, c; "tuned" wins only on d, which it was made for: held out on d, "good" is chosen.
    rows = {
        "good": [row("a", 0.8), row("b", 0.8), row("c", 0.8), row("d", 0.5)],
        "tuned": [row("a", 0.6), row("b", 0.6), row("c", 0.6), row("d", 0.8)],
    }
    result = leave_out(rows, ["good", "tuned"], KEYS)
    assert [f["chosen"] for f in result["folds"]] == ["good", "good", "good", "good"]
    assert abs(result["selected"]["recall@10"] - (0.8 * 3 + 0.5) / 4) < 1e-9
    assert choose(rows, ["good", "tuned"], {"d"})[0] == "tuned"


def test_the_choice_changes_with_the_training_samples():
    rows = {
        "x": [row("a", 1.0), row("b", 1.0), row("c", 0.0)],
        "y": [row("a", 0.0), row("b", 0.9), row("c", 1.0)],
    }
    result = leave_out(rows, ["x", "y"], KEYS)
    # held out a: y (b+c: 1.9 vs 1.0); held out b: x vs y on a, c tie at 1.0 -> first listed; held out c: x.
    assert [f["chosen"] for f in result["folds"]] == ["y", "x", "x"]
    assert abs(result["selected"]["recall@10"] - (0.0 + 1.0 + 0.0) / 3) < 1e-9


def test_per_sample_means_and_category_names():
    assert per_sample([row("a", 1.0), row("a", 0.0), row("b", 0.5)]) == {"a": 0.5, "b": 0.5}
    assert category_names("locomo10_dev.json", [])["3"] == "open-domain"
    assert category_names("realtalk_dev.json", [])["3"] == "commonsense"
    assert category_names("x.json", [{"qa": [{"category": 7, "question_type": "odd"}]}])["7"] == "odd"


def test_markdown_names_the_categories_and_shows_the_leave_out_table():
    from benchmarks.metrics import aggregate
    rows = {"palimpsest": [row("a", 1.0, "1"), row("b", 0.5, "3")], "bm25": [row("a", 0.2, "1"), row("b", 0.1, "3")]}
    systems = {name: aggregate(r, KEYS) for name, r in rows.items()}
    result = {"dataset": "locomo10_dev.json", "questions": 2, "systems": systems,
              "category_names": category_names("locomo10_dev.json", []),
              "leave_out": leave_out(rows, ["palimpsest"], KEYS),
              "speed": {k: 0.0 for k in ("ingest_messages_per_s", "encode_only_messages_per_s", "search_ms_p50",
                                          "search_ms_p95", "context_ms_p50", "context_ms_p95",
                                          "replay_events_per_s", "peak_rss_mb")}}
    md = markdown(result, KEYS)
    assert "cat 1 multi-hop" in md and "cat 3 open-domain" in md
    assert "Configuration chosen per fold (2 folds" in md and "palimpsest (chosen per fold)" in md
    assert "in-sample" in md and "refitted per fold" not in md
    result["leave_out_refit"] = {"also_trained_on": ["realtalk_dev.json"], "folds": [{}, {}],
                                 "selected": systems["bm25"], "shipped_in_process": systems["palimpsest"]}
    md = markdown(result, KEYS)
    assert "learned rankers refitted per fold (2 folds, also trained on realtalk_dev.json" in md
    assert "| palimpsest, rankers refitted per fold (leave-out) | 15.0 |" in md
