"""Offline graph-memory extraction (graph-rules-v2): a table of English and Chinese turns and what they state."""

from __future__ import annotations

import dataclasses
from datetime import datetime, timedelta, timezone

import pytest

from projections.rules.english_lemma import ing_lemma, past_lemma, present_lemma
from projections.rules.graph_extract import EXTRACTOR_ID, CandidateGraphMemory, extract_graph_memories
from projections.rules.text import has_cjk
from projections.rules.tool_calls import CreateMemory, validate_tool_call

CST = timezone(timedelta(hours=8))
REF = datetime(2023, 5, 10, 14, 0, tzinfo=CST)  # Wednesday: yesterday is 2023-05-09, last Friday 2023-05-05


def read(text: str, speaker: str | None) -> list[tuple]:
    return [(m.subject, m.memory_type, m.topic, m.object, dict(m.attributes))
            for m in extract_graph_memories(text, speaker=speaker, occurred_at=REF)]


# (turn, speaker, every memory it states as (subject, type, topic, object, attributes)), in turn order.
TURNS = [
    ("I went to a support group yesterday.", "Caroline",
     [("Caroline", "event", "go", "support group", {"time": "2023-05-09"})]),
    ("My sister adopted a puppy.", "Caroline",
     [("Caroline's sister", "event", "adopt", "puppy", {}),
      ("Caroline", "relation", "sister", "Caroline's sister", {})]),
    ("My sister Anna adopted a puppy last Friday.", "Caroline",
     [("Anna", "event", "adopt", "puppy", {"time": "2023-05-05"}), ("Caroline", "relation", "sister", "Anna", {})]),
    ("I think the new library is great.", "Caroline",
     [("Caroline", "opinion", "think", "new library", {"judgement": "great"})]),
    ("I just signed up for a pottery class yesterday.", "Melanie",
     [("Melanie", "event", "sign up", "pottery class", {"time": "2023-05-09"})]),
    ("Last Friday, I went to an LGBTQ+ counseling workshop and it was really eye-opening.", "Caroline",
     [("Caroline", "event", "go", "LGBTQ+ counseling workshop", {"time": "2023-05-05"})]),
    ("Yesterday I took the kids to the museum - it was so cool!", "Melanie",
     [("Melanie", "event", "take", "kids", {"place": "museum", "time": "2023-05-09"})]),
    ("I went hiking last week and got into a bad spot with some people.", "Caroline",
     [("Caroline", "event", "go", "hiking", {"time": "2023-05-01/2023-05-07"}),
      ("Caroline", "event", "get", "bad spot", {"with": "people", "time": "2023-05-01/2023-05-07"})]),
    ("Anthony and I went to this charity thing.", "John",
     [("John", "event", "go", "charity thing", {"with": "Anthony"})]),
    ("My husband and I went camping with the kids last weekend.", "Melanie",
     [("Melanie", "event", "go", "camping", {"with": "Melanie's husband, kids", "time": "2023-05-06/2023-05-07"}),
      ("Melanie", "relation", "husband", "Melanie's husband", {})]),
    ("I'm going to a transgender conference this month.", "Caroline",
     [("Caroline", "event", "go", "transgender conference", {"time": "2023-05", "status": "planned"})]),
    ("Lost my job as a banker yesterday, so I'm gonna start my own business.", "Jon",
     [("Jon", "event", "lose", "Jon's job", {"time": "2023-05-09"}),
      ("Jon", "event", "start", "Jon's own business", {"status": "planned"})]),
    ("I'll bake a cake for my daughter tomorrow.", "Melanie",
     [("Melanie", "event", "bake", "cake", {"time": "2023-05-11", "status": "planned"})]),
    ("On May 7, 2023, I visited my grandma in Ohio.", "Caroline",
     [("Caroline", "event", "visit", "Caroline's grandma", {"place": "Ohio", "time": "2023-05-07"})]),
    ("I started playing acoustic guitar about five years ago.", "Caroline",
     [("Caroline", "event", "start", "playing acoustic guitar", {"time": "2018"})]),
    ("I've been taking a poetry class lately.", "Maria",
     [("Maria", "event", "take", "poetry class", {"status": "ongoing"})]),
    ("Oliver hid his bone in my slipper.", "Melanie",
     [("Oliver", "event", "hide", "his bone", {"place": "Melanie's slipper"})]),
    ("Jon is my best friend.", "Gina", [("Gina", "relation", "best friend", "Jon", {})]),
    ("I work at a small robotics startup.", "Tim", [("Tim", "fact", "work", "small robotics startup", {})]),
    ("I have two kids.", "Melanie", [("Melanie", "fact", "have", "two kids", {})]),
    ("I love painting.", "Melanie", [("Melanie", "fact", "love", "painting", {})]),
    ("I'm a nurse.", "Maria", [("Maria", "fact", "be", "nurse", {})]),
    ("I was born in Sweden.", "Caroline", [("Caroline", "fact", "be born", "Sweden", {})]),
    ('I loved "Becoming Nicole" by Amy Ellis Nutt.', "Caroline",
     [("Caroline", "opinion", "love", "Becoming Nicole", {})]),
    ("I went to the park.", None, [("user", "event", "go", "park", {})]),
    ("我昨天去了瑜伽课", "小红", [("小红", "event", "去", "瑜伽课", {"time": "2023-05-09"})]),
    ("我妹妹养了一只猫", "小红",
     [("小红的妹妹", "event", "养", "猫", {}), ("小红", "relation", "妹妹", "小红的妹妹", {})]),
    ("我妹妹丽丽上周五生了一个宝宝", "小红",
     [("丽丽", "event", "生", "宝宝", {"time": "2023-05-05"}), ("小红", "relation", "妹妹", "丽丽", {})]),
    ("小明是我的好朋友", "小红", [("小红", "relation", "好朋友", "小明", {})]),
    ("小明喜欢打篮球", "小红", [("小明", "fact", "喜欢", "打篮球", {})]),
    ("昨天晚上我和老公去看了一场电影，然后吃了火锅。", "小红",
     [("小红", "event", "去", "看电影", {"with": "老公", "time": "2023-05-09T18:00+08:00/2023-05-10T00:00+08:00"}),
      ("小红", "event", "吃", "火锅", {"time": "2023-05-09T18:00+08:00/2023-05-10T00:00+08:00"})]),
    ("我觉得这本书很好看", "小红", [("小红", "opinion", "觉得", "这本书", {"judgement": "很好看"})]),
    ("我在谷歌工作", "小红", [("小红", "fact", "工作", "谷歌", {})]),
    ("我有两个孩子", "小红", [("小红", "fact", "有", "两个孩子", {})]),
    ("我明天要去北京", "小红", [("小红", "event", "去", "北京", {"time": "2023-05-11", "status": "planned"})]),
    ("我上周五和我妹妹参加了一个聚会", "小红",
     [("小红", "event", "参加", "聚会", {"with": "小红的妹妹", "time": "2023-05-05"}),
      ("小红", "relation", "妹妹", "小红的妹妹", {})]),
    ("我刚刚搬到上海", "小红", [("小红", "event", "搬到", "上海", {})]),
    ("我三天前报名了陶艺课", "小红", [("小红", "event", "报名", "陶艺课", {"time": "2023-05-07"})]),
    ("我每天跑步", "小红", [("小红", "fact", "跑步", None, {})]),
    ("我领养了一只狗", None, [("user", "event", "领养", "狗", {})]),
    ("我将要参加航空服务创新与乘务管理交流会。", "小红",
     [("小红", "event", "参加", "航空服务创新与乘务管理交流会", {"status": "planned"})]),
    ("去年我去了日本", "小红", [("小红", "event", "去", "日本", {"time": "2022"})]),
    ("我觉得他的性格是最好的", "小红", [("小红", "opinion", "觉得", "他的性格", {"judgement": "是最好"})]),
    # graph-rules-v2: conversational English.
    ("Here's a pic of my family camping at the beach. [image: a photo of a family sitting around a campfire on the beach]",
     "Melanie", [("Melanie", "event", "share", "campfire", {})]),
    ("Take a look at this. [image: a photo of a painting of a sunset over a lake]", "Melanie",
     [("Melanie", "event", "share", "painting", {"of": "sunset"})]),
    ("[image: a photo of a bowl of ice cream with a spoon in it]", "Nate", [("Nate", "event", "share", "ice cream", {})]),
    ("[image: a photo of a person holding a necklace with a cross]", "Caroline",
     [("Caroline", "event", "share", "necklace", {})]),
    ("[image: a photo of a man and a woman smiling]", "Caroline", []),
    ("I'm off to go swimming with the kids.", "Melanie",
     [("Melanie", "event", "go", "swimming", {"with": "kids", "status": "planned"})]),
    ("I'm off to the gym!", "John", [("John", "event", "go", "gym", {"status": "planned"})]),
    ("The kids and I went to the zoo.", "Melanie", [("Melanie", "event", "go", "zoo", {"with": "kids"})]),
    ("Me and Jon went to the beach.", "Gina", [("Gina", "event", "go", "beach", {"with": "Jon"})]),
    ("This book I read last year reminds me to always pursue my dreams.", "Melanie",
     [("Melanie", "event", "read", "book", {"time": "2022"})]),
    ("These figurines I bought yesterday remind me of family love.", "Melanie",
     [("Melanie", "event", "buy", "figurines", {"time": "2023-05-09"})]),
    ("Here's a pic of a cake I made recently!", "Joanna", [("Joanna", "event", "make", "cake", {})]),
    ("Yeah! Besides writing, I also enjoy reading, watching movies, and exploring nature.", "Joanna",
     [("Joanna", "fact", "enjoy", "reading", {}), ("Joanna", "fact", "enjoy", "watching movies", {}),
      ("Joanna", "fact", "enjoy", "exploring nature", {})]),
    ("So I'm carving out some me-time each day - running, reading, or playing my violin", "Melanie",
     [("Melanie", "event", "carve out", "me-time", {"status": "ongoing"}), ("Melanie", "fact", "do", "running", {}),
      ("Melanie", "fact", "do", "reading", {}), ("Melanie", "fact", "do", "playing violin", {})]),
    ("Actually, I just took my fam camping in the mountains last week", "Melanie",
     [("Melanie", "event", "take", "Melanie's fam",
       {"place": "mountains", "activity": "camping", "time": "2023-05-01/2023-05-07"})]),
    ("I'm passionate about improving education in our community.", "John",
     [("John", "fact", "be passionate about", "improving education", {"place": "John's community"})]),
    ("I'm allergic to most reptiles.", "Joanna", [("Joanna", "fact", "be allergic to", "most reptiles", {})]),
    ("I'm really into yoga.", "Maria", [("Maria", "fact", "be into", "yoga", {})]),
    ("Been reading a book you recommended.", "Melanie",
     [("Melanie", "event", "read", "book", {"status": "ongoing"})]),
    ("When I was younger, my family and I went on a road trip to Oregon.", "Maria",
     [("Maria", "event", "go", "road trip", {"with": "Maria's family", "place": "Oregon"}),
      ("Maria", "relation", "family", "Maria's family", {})]),
    ("I've been busy lately- I took a creative writing class.", "Maria",
     [("Maria", "event", "take", "creative writing class", {})]),
]

# Questions, hypotheticals, negations, wishes and small talk state nothing.
NOTHING = [
    "Since the launch crunch I switched to coffee in the morning.",  # a setting, not a thing I switched
    "After the move we switched to tea.",
    "What are you up to this weekend?",
    "If I win, I'll buy a house.",
    "Maybe I'll go hiking next week.",
    "I didn't go to the party.",
    "I was going to call you.",
    "I want to adopt a dog someday.",
    "I can swim.",
    "Thanks, Caroline! That sounds great.",
    "It was so much fun!",
    "We had a blast.",
    "你昨天去哪儿了？",
    "你喜欢猫吗",
    "如果明天下雨我就不去了",
    "我没去上班",
    "我想去日本",
    "哈哈好的",
    "",
    # graph-rules-v2's patterns do not fire on questions, hypotheticals, negations or empty heads.
    "Are you off to the gym?",
    "If I'm off to the beach tomorrow, I'll call you.",
    "Did you read the book I recommended?",
    "Maybe the cake we made will win.",
    "That's the way I felt.",
    "I remember the first time we met.",
    "When did you go camping?",
    "Is the book you read any good? [image: a photo of a man and a woman]",
    "I'm not into yoga.",
    "I'm super keen to spread that intensity.",
    "Nothing much, just chilling.",
    # No verb of the speaker's: a word that opens a noun phrase with its own 是 (the event's place), a verb inside a
    # relative clause (路过的公园, 拍出来的风景), a table verb that only opens a longer word (上司, 有时候), 就是 as a lead.
    "烹饪技艺提升盛宴的地点是山东青岛。",
    "我刚才路过的那个公园是中心公园。",
    "我上司的工作地儿在山东青岛。",
    "有时候我们也叫她高级工程师",
    "拍出来的风景美得没话说",
    "就是有时候得手动清理冷冻层的霜",
]


@pytest.mark.parametrize(("text", "speaker", "expected"), TURNS, ids=[t[0][:30] for t in TURNS])
def test_a_turn_states_these_memories(text, speaker, expected):
    assert read(text, speaker) == expected


@pytest.mark.parametrize("text", NOTHING)
def test_questions_hypotheticals_negations_and_small_talk_state_nothing(text):
    assert extract_graph_memories(text, speaker="Caroline", occurred_at=REF) == ()


def test_the_table_covers_both_languages_and_every_memory_type():
    for language in (True, False):
        rows = [m for text, _, memories in TURNS if has_cjk(text) == language for m in memories]
        assert {m[1] for m in rows} == {"event", "fact", "relation", "opinion"}
    assert sum(has_cjk(t[0]) for t in TURNS) >= 12 and sum(not has_cjk(t[0]) for t in TURNS) >= 20


def test_only_the_statements_of_a_mixed_turn_are_kept():
    turn = "Hey Mel! I went to a pride parade last Friday. Have you ever been to one? It was amazing!"
    assert read(turn, "Caroline") == [("Caroline", "event", "go", "pride parade", {"time": "2023-05-05"})]


def test_candidates_carry_evidence_language_time_and_extractor():
    (memory,) = extract_graph_memories("Hey! I went to a support group yesterday 8pm, it was great.",
                                       speaker="Caroline", occurred_at=REF)
    assert memory.evidence == "I went to a support group yesterday 8pm"
    assert (memory.language, memory.extractor) == ("en", EXTRACTOR_ID) == ("en", "graph-rules-v2")
    assert memory.when is not None and memory.when.start == datetime(2023, 5, 9, 20, tzinfo=CST)
    assert memory.attributes["time"] == "2023-05-09T20:00+08:00"
    (zh, _) = extract_graph_memories("我妹妹养了一只猫", speaker="小红", occurred_at=REF)
    assert (zh.language, zh.evidence, zh.when) == ("zh", "我妹妹养了一只猫", None)


def test_importance_follows_the_rules():
    def importance(text: str) -> list[float]:
        return [m.importance for m in extract_graph_memories(text, speaker="A", occurred_at=REF)]

    assert importance("My sister adopted a puppy.") == [0.8, 0.7]  # life event 0.5 + 0.3; relation 0.7
    assert importance("I went to a support group yesterday.") == [0.5]
    assert importance("I joined a gym last week.") == [0.6]  # notable: + 0.1
    assert importance("I ate a sandwich.") == [0.4]  # routine event: - 0.1
    assert importance("I think the new library is great.") == [0.4]
    assert importance("我领养了一只狗") == [0.8] and importance("我昨天吃了火锅") == [0.4]
    every = [m.importance for text, speaker, _ in TURNS
             for m in extract_graph_memories(text, speaker=speaker, occurred_at=REF)]
    assert all(0.0 <= i <= 1.0 for i in every)


def test_every_candidate_is_a_valid_create_memory_call():
    for text, speaker, _ in TURNS:
        for memory in extract_graph_memories(text, speaker=speaker, occurred_at=REF):
            call = validate_tool_call("create_memory", memory.as_tool_arguments(), reference=REF)
            assert isinstance(call, CreateMemory) and call.topic == memory.topic
            if memory.when is not None:
                assert call.occurred_at == memory.when.start


def test_extraction_is_deterministic_and_candidates_are_frozen():
    runs = [[extract_graph_memories(t, speaker=s, occurred_at=REF) for t, s, _ in TURNS] for _ in range(2)]
    assert runs[0] == runs[1]
    memory = runs[0][0][0]
    assert isinstance(memory, CandidateGraphMemory)
    with pytest.raises(dataclasses.FrozenInstanceError):
        memory.topic = "x"  # type: ignore[misc]
    assert len(extract_graph_memories("I went to the park. I went to the park!", speaker="A", occurred_at=REF)) == 1


@pytest.mark.parametrize(("form", "lemma"), [
    ("went", "go"), ("adopted", "adopt"), ("hiked", "hike"), ("tried", "try"), ("planned", "plan"),
    ("celebrated", "celebrate"), ("created", "create"), ("organized", "organize"), ("danced", "dance"),
    ("changed", "change"), ("entered", "enter"), ("shared", "share"), ("continued", "continue"),
    ("treated", "treat"), ("travelled", "travel"), ("agreed", "agree"), ("retook", "retake"),
])
def test_past_forms_have_their_lemma(form, lemma):
    assert past_lemma(form) == lemma


def test_other_verb_forms_have_their_lemma():
    assert [ing_lemma(w) for w in ("making", "running", "hiking", "writing", "lying", "painting")] == [
        "make", "run", "hike", "write", "lie", "paint"]
    assert [present_lemma(w) for w in ("goes", "studies", "watches", "loves", "has")] == [
        "go", "study", "watch", "love", "have"]
    assert past_lemma("need") is None and past_lemma("speed") is None and past_lemma("red") is None
