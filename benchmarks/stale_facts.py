"""The stale-facts scenario of :mod:`benchmarks.feedback_stale`: users whose facts change, in English and Chinese.

A seeded script, no data file. Each user states eight facts (where they
live, their job, pet, diet, partner, car, weekend sport, the language they
learn) among everyday chatter; four months later they state the new value
of each ("I live in Lyon" … "I moved to Porto last month"; "我住在杭州" …
"我上个月搬到成都了"). Every fact comes with four questions about its
current value in different words, and the simulated user's correction when
an answer carries the old value ("No, that's outdated, I moved to Porto.",
"不对，我早就搬家了，现在住在成都。"). Values are drawn per user from a pool
(old ≠ new) and no chatter line names any of them, so whether a retrieved
line carries the stale or the current value is read from its text.
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from datetime import datetime, timedelta

# slot: (pool, old statement, new statement, four questions, correction naming the new value)
EN_SLOTS: dict[str, tuple[tuple[str, ...], str, str, tuple[str, ...], str]] = {
    "city": (("Lyon", "Porto", "Oslo", "Dublin", "Kyoto", "Austin", "Seville", "Krakow", "Denver", "Munich"),
             "I live in {v} and I love my neighbourhood", "I moved to {v} last month, it's home now",
             ("Where do I live?", "Which city is my home these days?", "Where should you send a parcel for me?",
              "What city am I based in now?"),
             "No, that's outdated, I moved to {v}."),
    "job": (("nurse", "accountant", "chef", "architect", "teacher", "pilot", "lawyer", "baker", "dentist"),
            "I work as a {v}", "I quit my old job, now I work as a {v}",
            ("What do I do for a living?", "What is my job?", "What's my profession these days?",
             "How do I earn my money?"),
            "No, that changed, I'm a {v} now."),
    "pet": (("Biscuit", "Luna", "Rocky", "Mochi", "Pepper", "Ziggy", "Oscar", "Nala"),
            "We have a pet named {v} at home", "Our pet now is a cat named {v}",
            ("What is my pet called?", "What's the name of my pet?", "Which animal lives with me?",
             "Tell me my pet's name."),
            "No, that's old news, our pet is {v} now."),
    "diet": (("vegan", "keto", "paleo", "pescatarian", "Mediterranean", "gluten-free"),
             "I follow a {v} diet", "I switched to a {v} diet this year",
             ("What diet do I follow?", "What kind of food do I eat these days?", "Which eating plan am I on?",
              "What should you keep in mind when cooking for me?"),
             "No, I'm not on that diet any more, it's {v} now."),
    "partner": (("Marco", "Sofia", "Daniel", "Aisha", "Tomas", "Elena", "Lucas", "Mia"),
                "My partner is called {v}", "I'm now in a relationship with {v}",
                ("Who is my partner?", "What's my partner's name?", "Who am I in a relationship with?",
                 "Who is my significant other?"),
                "No, that's outdated, I'm with {v} now."),
    "car": (("Toyota", "Volvo", "Tesla", "Fiat", "Honda", "Subaru", "Mazda", "Peugeot"),
            "I drive a {v}", "I sold my car and bought a {v}",
            ("What car do I drive?", "What's my car?", "Which brand is my car?", "What vehicle do I own now?"),
            "No, I told you, I drive a {v} now."),
    "sport": (("tennis", "golf", "squash", "badminton", "volleyball", "chess", "basketball", "rugby"),
              "I play {v} every weekend", "These days I play {v} every weekend",
              ("What sport do I play?", "What do I play on weekends?", "Which game do I practise regularly?",
               "What's my weekend sport?"),
              "No, I don't play that any more, it's {v} now."),
    "language": (("Spanish", "Japanese", "German", "Italian", "Korean", "Russian", "Arabic", "Dutch"),
                 "I'm learning {v} in the evenings", "I switched to learning {v}",
                 ("Which language am I learning?", "What language do I study in the evenings?",
                  "What foreign language am I practising?", "Which language course am I taking?"),
                 "No, that changed, I'm learning {v} now."),
}
ZH_SLOTS: dict[str, tuple[tuple[str, ...], str, str, tuple[str, ...], str]] = {
    "city": (("杭州", "成都", "西安", "青岛", "厦门", "大连", "苏州", "昆明", "武汉", "南京"),
             "我住在{v}，很喜欢这里", "我上个月搬到{v}了",
             ("我住在哪里？", "我现在的家在哪个城市？", "给我寄快递应该寄到哪个城市？", "我目前在哪座城市生活？"),
             "不对，我早就搬家了，现在住在{v}。"),
    "job": (("护士", "会计", "厨师", "建筑师", "老师", "律师", "医生", "程序员"),
            "我的工作是{v}", "我换工作了，现在当{v}",
            ("我是做什么工作的？", "我的职业是什么？", "我现在靠什么谋生？", "我在哪一行上班？"),
            "不对，我早就换工作了，现在是{v}。"),
    "pet": (("豆豆", "旺财", "球球", "咪咪", "花花", "毛毛", "团子", "可乐"),
            "我养了一只宠物叫{v}", "我们现在养的是一只猫，叫{v}",
            ("我的宠物叫什么名字？", "我家的宠物叫什么？", "我养的小动物叫啥？", "告诉我我宠物的名字。"),
            "不对，那已经过时了，我们现在养的是{v}。"),
    "diet": (("素食", "生酮饮食", "低碳水饮食", "地中海饮食", "轻断食"),
             "我一直坚持{v}", "今年我改成{v}了",
             ("我现在的饮食习惯是什么？", "我平时怎么吃饭？", "给我做饭要注意什么？", "我在遵循哪种饮食方式？"),
             "不对，我早就改了，现在是{v}。"),
    "partner": (("小王", "小李", "阿杰", "小美", "婷婷", "大伟", "晓明", "丽丽"),
                "我的对象叫{v}", "我现在的对象是{v}",
                ("我的对象是谁？", "我在和谁谈恋爱？", "我男朋友或女朋友叫什么？", "我的另一半叫什么名字？"),
                "不对，我们早就分手了，我现在的对象是{v}。"),
    "car": (("丰田", "本田", "特斯拉", "比亚迪", "大众", "宝马", "奥迪", "吉利"),
            "我开的是{v}", "我把车卖了，现在开{v}",
            ("我开什么车？", "我的车是什么牌子？", "我现在的车是哪个品牌？", "我平时开哪辆车？"),
            "不对，那辆车早就卖了，我现在开{v}。"),
    "sport": (("网球", "羽毛球", "篮球", "乒乓球", "排球", "高尔夫"),
              "我每个周末都打{v}", "我现在每个周末都打{v}",
              ("我周末做什么运动？", "我平时打什么球？", "我常玩的运动是什么？", "我的周末运动是什么？"),
              "不对，我现在不打那个了，改打{v}了。"),
    "language": (("日语", "法语", "德语", "韩语", "西班牙语", "俄语", "意大利语"),
                 "我晚上在学{v}", "我改学{v}了",
                 ("我在学哪门外语？", "我晚上学什么语言？", "我正在练习哪种外语？", "我报了什么语言课？"),
                 "不对，我早就换了，现在学{v}。"),
}
CHATTER = {
    "en": ("The weather was lovely at the market today", "I watched a long documentary about volcanoes",
           "My neighbour's kids were noisy again", "I need to renew my passport soon",
           "We had friends over for dinner on Saturday", "I finished a thriller novel last night",
           "The train was late again this morning", "I'm thinking about repainting the kitchen",
           "My back hurts after the long hike", "I found a nice café near the station",
           "I forgot my umbrella at the office", "We're planning a small birthday party",
           "I bought new running shoes", "The internet was down all afternoon",
           "I started a herb garden on the balcony", "My brother called me about his wedding"),
    "zh": ("今天市场上的天气很好", "我昨晚看了一部关于火山的纪录片", "邻居家的孩子又很吵", "我的护照快要过期了",
           "周六我们请朋友来家里吃饭", "我昨晚看完了一本悬疑小说", "今天早上地铁又晚点了", "我在考虑把厨房重新刷一遍",
           "爬山之后我的腰很疼", "我在车站附近发现了一家不错的咖啡馆", "我把伞忘在办公室了", "我们准备办一个小型的生日聚会",
           "我买了一双新跑鞋", "下午家里一直断网", "我在阳台上种了一些香草", "我哥哥打电话跟我说他要结婚了"),
}
REACTIONS = {"en": ("Thanks, that's right!", "No, that's wrong."), "zh": ("对的，谢谢！", "不对，答错了。")}

START = datetime.fromisoformat("2024-01-08T10:00:00+00:00")
CHANGED_AFTER = timedelta(days=120)  # the second session: every fact's new value
FEEDBACK_AT = (timedelta(days=150), timedelta(days=157))  # two feedback rounds, questions 1 and 2
HELD_BACK_AT = timedelta(days=180)  # questions 3 and 4 (paraphrases) and question 1 again (a repetition)


@dataclass(frozen=True)
class Fact:
    user_id: str
    language: str
    slot: str
    old: str
    new: str
    questions: tuple[str, ...]  # four wordings of the question about the current value
    correction: str  # the user's reply when an answer carries the old value

    def carries(self, text: str) -> tuple[bool, bool]:
        """(the old value, the new value) in ``text``."""
        low = text.lower()
        return self.old.lower() in low, self.new.lower() in low


@dataclass(frozen=True)
class Script:
    user_id: str
    language: str
    messages: tuple[dict, ...]  # add_messages input, both sessions
    facts: tuple[Fact, ...]


def script(user_id: str, language: str, rng: random.Random, slots: int | tuple[str, ...] = 8) -> Script:
    """One user's two sessions: the old values among chatter, then (four months later) the new ones.

    ``slots``: the first N facts of the table, or the named ones ("city", "language", …)."""
    table = EN_SLOTS if language == "en" else ZH_SLOTS
    facts, sessions = [], ([], [])
    for slot in (list(table)[:slots] if isinstance(slots, int) else slots):
        pool, said, changed, questions, correction = table[slot]
        old, new = rng.sample(pool, 2)
        facts.append(Fact(user_id, language, slot, old, new, questions, correction.format(v=new)))
        sessions[0].append(said.format(v=old))
        sessions[1].append(changed.format(v=new))
    chatter = list(CHATTER[language])
    rng.shuffle(chatter)
    messages = []
    for n, (lines, extra) in enumerate(zip(sessions, (chatter[::2], chatter[1::2]))):
        turns = lines + extra[:len(lines)]
        rng.shuffle(turns)
        at = START + (CHANGED_AFTER if n else timedelta())
        messages += [{"text": t, "occurred_at": (at + timedelta(minutes=2 * i)).isoformat(), "speaker": user_id,
                      "conversation_id": f"{user_id}-s{n + 1}", "client_message_id": f"{user_id}-s{n + 1}:{i}"}
                     for i, t in enumerate(turns)]
    return Script(user_id, language, tuple(messages), tuple(facts))


def scripts(seed: int, users: int, slots: int | tuple[str, ...] = 8) -> list[Script]:
    """``users`` English and ``users`` Chinese users, seeded."""
    rng = random.Random(seed)
    return [script(f"{lang}-{i:02d}", lang, rng, slots) for lang in ("en", "zh") for i in range(users)]
