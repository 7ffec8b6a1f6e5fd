"""The cross-lingual dev sets: a question overlay replaces a file's questions only where it was written for
them, and the bilingual file keeps every evidence id pointing at the right turn."""

from __future__ import annotations

import hashlib
import json

import pytest

from benchmarks import bilingual, question_overlay
from benchmarks import dataset as ds


def _digest(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()[:12]


def _chinese() -> dict:
    conv = {"speaker_a": "用户", "speaker_b": "助手", "session_1_date_time": "8:28 am on 1 April, 2024",
            "session_1": [{"speaker": "用户", "dia_id": "D1:1", "text": "我表姐在杭州当厨师。"},
                          {"speaker": "用户", "dia_id": "D1:2", "text": "我用的手机是小米12。"}],
            "session_2_date_time": "9:00 am on 2 April, 2024",
            "session_2": [{"speaker": "用户", "dia_id": "D2:1", "text": "舅舅的生日是八月八日。"}]}
    qa = [{"question": "我用的手机是什么？", "answer": "小米12", "evidence": ["D1:2"], "category": 6},
          {"question": "舅舅的生日是哪天？", "answer": "八月八日", "evidence": ["D2:1"], "category": 6}]
    return {"sample_id": "md-0", "conversation": conv, "qa": qa}


def _english() -> dict:
    conv = {"speaker_a": "Ann", "speaker_b": "Bo"}
    for n in range(1, 4):
        conv[f"session_{n}_date_time"] = f"1:00 pm on {n} May, 2023"
        conv[f"session_{n}"] = [{"speaker": "Ann", "dia_id": f"D{n}:1", "text": f"Session {n}: I painted a {n} boat."}]
    qa = [{"question": "What did Ann paint first?", "answer": "a 1 boat", "evidence": ["D1:1"], "category": 4},
          {"question": "What did Ann paint last?", "answer": "a 3 boat", "evidence": ["D3:1"], "category": 4}]
    return {"sample_id": "conv-0", "conversation": conv, "qa": qa}


@pytest.fixture
def files(tmp_path):
    zh, en = tmp_path / "zh.json", tmp_path / "en.json"
    zh.write_text(json.dumps([_chinese()], ensure_ascii=False), encoding="utf-8")
    en.write_text(json.dumps([_english()]), encoding="utf-8")
    overlay = tmp_path / "overlay.json"
    overlay.write_text(json.dumps({"questions": [
        {"sample_id": "md-0", "index": 1, "question": "When is my uncle's birthday?",
         "original_sha256": _digest("舅舅的生日是哪天？")}]}), encoding="utf-8")
    return zh, en, overlay


def test_overlay_scores_only_its_questions_with_their_new_text(files):
    zh, _, overlay = files
    data = question_overlay.apply(ds.load(zh), overlay)
    assert [(q.index, q.question, sorted(q.evidence)) for q in data.questions] == [
        (1, "When is my uncle's birthday?", ["D2:1"])]
    assert len(data.messages) == 3  # the dialogue is the file's


def test_overlay_written_for_another_text_is_refused(files, tmp_path):
    zh, _, _ = files
    stale = tmp_path / "stale.json"
    stale.write_text(json.dumps({"questions": [{"sample_id": "md-0", "index": 0, "question": "x",
                                                "original_sha256": _digest("something else")}]}))
    with pytest.raises(SystemExit, match="another text of md-0#0"):
        question_overlay.apply(ds.load(zh), stale)
    missing = tmp_path / "missing.json"
    missing.write_text(json.dumps({"questions": [{"sample_id": "md-9", "index": 0, "question": "x",
                                                  "original_sha256": "0"}]}))
    with pytest.raises(SystemExit, match="md-9#0"):
        question_overlay.apply(ds.load(zh), missing)
    incomplete = tmp_path / "incomplete.json"
    incomplete.write_text(json.dumps({"questions": [{"sample_id": "md-0", "index": 0}]}))
    with pytest.raises(SystemExit, match="lacks question, original_sha256"):
        question_overlay.apply(ds.load(zh), incomplete)


def test_bilingual_user_keeps_every_evidence_on_its_turn(files, tmp_path):
    zh, en, overlay = files
    out = tmp_path / "bi.json"
    to_chinese = tmp_path / "zh_questions.json"
    to_chinese.write_text(json.dumps({"questions": [
        {"sample_id": "conv-0", "index": 0, "question": "Ann最先画了什么？",
         "original_sha256": _digest("What did Ann paint first?")}]}, ensure_ascii=False), encoding="utf-8")
    bilingual.main(["--out", str(out), "--locomo", str(en), "--memdaily", str(zh), "--questions", str(overlay),
                    "--zh-questions", str(to_chinese)])
    data = ds.load(out)
    (sample,) = data.samples
    text = {m["turn_id"]: m["text"] for m in sample.messages}
    # the first third of the English sessions (one of three), then the Chinese sessions after it
    assert sorted(text) == ["D1:1", "D2:1", "D2:2", "D3:1"]
    kinds = {(data.category_names[q.category], q.question): [text[e] for e in sorted(q.evidence)]
             for q in data.questions}
    assert kinds == {
        ("en→en", "What did Ann paint first?"): ["Session 1: I painted a 1 boat."],
        ("zh→zh", "我用的手机是什么？"): ["我用的手机是小米12。"],
        ("zh→zh", "舅舅的生日是哪天？"): ["舅舅的生日是八月八日。"],
        ("en→zh", "When is my uncle's birthday?"): ["舅舅的生日是八月八日。"],
        ("zh→en", "Ann最先画了什么？"): ["Session 1: I painted a 1 boat."],
    }


def test_bilingual_file_refuses_a_translation_written_for_another_question(files, tmp_path):
    zh, en, overlay = files
    stale = tmp_path / "zh_questions.json"
    stale.write_text(json.dumps({"questions": [{"sample_id": "conv-0", "index": 1, "question": "Ann最后画了什么？",
                                                "original_sha256": _digest("What did Ann paint first?")}]},
                                ensure_ascii=False), encoding="utf-8")
    with pytest.raises(SystemExit, match="another text of conv-0#1"):
        bilingual.main(["--out", str(tmp_path / "bi.json"), "--locomo", str(en), "--memdaily", str(zh),
                        "--questions", str(overlay), "--zh-questions", str(stale)])
    assert not (tmp_path / "bi.json").exists()


@pytest.mark.parametrize("overlay, data", [("memdaily_dev_en_questions.json", "memdaily/memdaily_dev.json"),
                                           ("locomo_dev_zh_questions.json", "locomo/locomo10_dev.json")])
def test_the_shipped_translations_apply_to_the_dev_files_they_were_written_for(overlay, data):
    """Through the benchmark's --questions (a Dataset) as through the bilingual builder (raw samples)."""
    path, source = bilingual.HERE / "data" / overlay, bilingual.DATA / data
    if not source.is_file():
        pytest.skip(f"{source} is not here (../shared/data beside the checkout)")
    entries = question_overlay.read(path)
    assert len(question_overlay.apply(ds.load(source), path).questions) == len(entries)
    raw = json.loads(source.read_text(encoding="utf-8"))
    assert sum(map(len, question_overlay.by_sample(path, raw).values())) == len(entries)
