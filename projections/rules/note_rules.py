"""The rule tables of ``rules-v1``, English and Chinese: note extraction and contradiction detection.

Data only; :mod:`projections.rules.extraction` and :mod:`projections.rules.contradiction`
apply them. Editing a table changes what those return, so it also means a new
extractor or detector id.

Extraction rules.

A rule's pattern names the object ``o`` (what is preferred, decided, required
or stated) and optionally the verb ``v`` and the thing ``t`` ("my favourite
*colour* is"). Its template renders the standalone note from ``{s}`` (the
subject: "The user", "用户" or the speaker's name), ``{o}``, ``{v}`` (third
person in English), ``{b}`` (the base verb) and ``{t}``.
"""

from __future__ import annotations

import re
from typing import Literal, NamedTuple

Category = Literal["preference", "decision", "constraint", "fact"]
Polarity = Literal["positive", "negative"]


class Rule(NamedTuple):
    category: Category
    language: Literal["en", "zh"]
    template: str
    polarity: Polarity | None  # None: read from the object ("decided not to use X" is negative)
    confidence: float
    slot: str | None  # a one-line fact's slot, e.g. "residence" or "favourite:{t}"
    pattern: re.Pattern[str]


def _rx(*patterns: str) -> tuple[re.Pattern[str], ...]:
    return tuple(re.compile(p, re.IGNORECASE) for p in patterns)


def _rules(language: Literal["en", "zh"], *specs: tuple) -> tuple[Rule, ...]:
    return tuple(Rule(c, language, tpl, pol, conf, slot, re.compile(rx, re.IGNORECASE))
                 for c, tpl, pol, conf, slot, rx in specs)


_NOT = r"(?:do\s+not|don't|dont|no\s+longer)"
_NOT_MY = r"(?!point|question|guess|idea|concern|worry|thought|feeling|bet|fault|pleasure|bad|problem|issue|plan)"
_DECIDE_VERB = r"(?:go\s+with|use|stick\s+with|switch\s+to|adopt|pick|choose|migrate\s+to|move\s+to)"
# "You must be so proud", "it must add so much cheer", "you must really love it": a guess at what someone feels or
# how something is, not a rule.
# "That's a must for the trip", "must-haves are …", "I must say": a recommendation or a way of speaking.
_GUESSED = (r"(?:be|have|haves|feel|love|enjoy|like|miss|mean|know|look|sound|seem|add|make|think|really|so|get"
            r"|bring|take|keep|involve|say|admit|confess|for)")
# "Don't ever give up", "don't ever forget that we're here for you": encouragement, not a prohibition.
_CHEER = r"(?:forget|quit|give\s+up|stop|doubt|lose|let\s+(?:anyone|anybody|them|others)|change)\b"
_ZH_NOT_IDENTITY = r"(?!说|不是|觉得|这么|那么|在|想|真的|来|因为|为了|故意|开玩笑)"

# Verbs that make "never …" / "always …" at the start of a sentence an instruction.
IMPERATIVES = (r"(?:use|store|keep|run|deploy|commit|push|share|send|call|check|ask|write|test|log|delete|remove"
               r"|merge|put|save|back\s+up|make\s+sure|include|mention|book|schedule|eat|drink)\b")

# Health, diet, allergy and safety statements in the first person: constraints (what an agent must respect whatever
# it is asked), tried before every other rule. Non-exclusive slots: a second allergy adds, "no longer vegetarian"
# (the same value negated) supersedes.
SAFETY_SLOTS = ("allergy", "diet", "health", "safety")  # the slots of these constraints
# What such a note is about besides its words, so that "do I have any food allergies?" or "我的饮食有什么讲究？"
# finds it: added to its key terms (the notes' BM25 index reads them).
# A question about where one lives ("which city do I live in?", "我住在哪个城市？") finds "I moved to Denver" or
# "我已经在西安安顿下来了" by the words of the residence slot, read into the turn's fact key only (not the note's key
# terms: two notes sharing "city" are not about the same thing).
SLOT_WORDS = {"en": {"allergy": "allergy allergic food", "diet": "diet food", "health": "health condition medical",
                     "safety": "safety", "residence": "live city"},
              "zh": {"allergy": "过敏 食物", "diet": "饮食 吃", "health": "健康 身体", "safety": "安全",
                     "residence": "住 城市"}}
# What a dislike is about besides its words: "which food do I hate?" finds "I can't stand olives" and "我很反感榴莲"
# (a negative preference's fact key, read at query time like SLOT_WORDS).
AVERSION_WORDS = {"en": "hate dislike", "zh": "讨厌 不喜欢"}
_EN_DIET = (r"vegetarian|vegan|pescatarian|pescetarian|lactose[-\s]intolerant|gluten[-\s]intolerant|gluten[-\s]free"
            r"|celiac|coeliac|kosher|halal|teetotal|diabetic|pregnant|epileptic|asthmatic|hypoglycemic|anemic")
_EN_CONDITION = (r"(?:type\s+[12]\s+)?diabetes|asthma|epilepsy|c[o]?eliac\s+disease|high\s+blood\s+pressure|hypertension"
                 r"|a\s+heart\s+condition|heart\s+disease|a\s+pacemaker|migraines|gout|kidney\s+disease|crohn's(?:\s+disease)?"
                 r"|a\s+(?:herniated|slipped|bulging)\s+disc|(?:a\s+)?(?:bad|weak|broken|injured|dodgy)\s+"
                 r"(?:knee|knees|back|hip|shoulder|ankle|heart)|(?:back|knee|heart)\s+problems"
                 r"|(?:an?\s+)?(?:[\w-]+\s+){0,2}?(?:allerg(?:y|ies)|intolerance|intolerances)")
_EN_RISKY = r"(?:drive|swim|lift|climb|fly|drink\s+alcohol|eat|drink|take|be\s+(?:in|near|around))"
EN_SAFETY_RULES = (
    ("constraint", "{s} is allergic to {o}", "positive", 0.85, "allergy",
     r"\bi(?:'m|\s+am)\s+(?:(?:also|very|severely|highly|extremely|deathly|seriously|really)\s+)*allergic\s+to\s+(?P<o>.+)"),
    ("constraint", "{s} is no longer {o}", "negative", 0.85, "diet",
     r"\bi(?:'m|\s+am)\s+(?:not|no\s+longer)\s+(?:a\s+|an\s+)?(?P<o>(?:" + _EN_DIET + r")\b)"),
    ("constraint", "{s} is {o}", "positive", 0.85, "diet",
     r"\bi(?:'m|\s+am)\s+(?:(?:a|an|strictly|strict|fully|now|also|still)\s+)*(?P<o>(?:" + _EN_DIET + r")\b.*)"),
    ("constraint", "{s} has {o}", "positive", 0.85, "health",
     (r"\bi\s+(?:have|'ve\s+got|suffer\s+from|(?:was|have\s+been|'ve\s+been)\s+diagnosed\s+with)\s+"
      r"(?P<o>(?:a\s+)?(?:severe\s+|mild\s+|bad\s+)?(?:" + _EN_CONDITION + r")\b.*)")),
    ("constraint", "{s} {v} {o}", "negative", 0.8, "safety",
     (r"\bi\s+(?P<v>can't|cannot|can\s+not|mustn't|must\s+not|must\s+never|should\s+never|shouldn't|should\s+not"
      r"|(?:am|'m)\s+not\s+allowed\s+to)\s+(?P<o>" + _EN_RISKY + r"\b.*)")),
    ("constraint", "{s} must avoid {o}", "negative", 0.8, "safety",
     r"\bi\s+(?:must|have\s+to|need\s+to|should|always)\s+avoid\s+(?P<o>.+)"),
    # "Reminder for Atlas: never store users' phone numbers": a rule after a heading, not only at the start.
    ("constraint", "Constraint: {o}", "negative", 0.75, None, r"[:：]\s*(?P<o>never\s+(?=" + IMPERATIVES + r").+)"),
)
ZH_SAFETY_RULES = (
    ("constraint", "{s}对{o}过敏", "positive", 0.85, "allergy",
     r"我(?:也|还|有点|非常|特别|严重)?(?:对)?(?P<o>[^，。！？,.!?对我]{1,12}?)(?:严重|有点|非常)?过敏"),
    ("constraint", "{s}{o}", "positive", 0.85, "diet",
     r"我(?:一直|现在|从小|只|也)?(?P<o>吃素|吃全素|吃清真|只吃清真|不吃(?:肉|荤|猪肉|牛肉|羊肉|辣|海鲜))"),
    ("constraint", "{s}是{o}", "positive", 0.85, "diet",
     r"我是(?P<o>(?:严格的?)?(?:素食者|素食主义者|纯素食者|纯素主义者|吃素的|穆斯林|孕妇))"),
    ("constraint", "{s}有{o}", "positive", 0.85, "health",
     (r"我(?:有|患有|得了|确诊了?|查出了?)(?P<o>(?:[一二12]型)?(?:糖尿病|高血压|哮喘|心脏病|癫痫|乳糖不耐受?|痛风|胃病|低血糖"
      r"|贫血|过敏性鼻炎|肾病|心脏起搏器|腰椎间盘突出|颈椎病|腰椎病|关节炎|膝盖伤|胃溃疡))")),
    ("constraint", "{s}{o}", "positive", 0.85, "health", r"我(?:已经)?(?P<o>乳糖不耐受?|怀孕了|怀孕|有身孕)"),
    ("constraint", "{s}{v}{o}", "negative", 0.8, "safety", r"我(?P<v>吃不了|碰不了|喝不了)(?P<o>[^，。！？]+)"),
    ("constraint", "{s}{v}{o}", "negative", 0.8, "safety",
     (r"我(?P<v>(?:绝对|千万|一定)?(?:不能|不可以|不宜|不适合|要避免|必须避免|得避免|不会))"
      r"(?P<o>(?:游泳|开车|骑车|爬高|剧烈运动|喝酒|饮酒|吃|喝|服用|碰)[^，。！？]*)")),
)

# First match wins, in this order: safety, preference, decision, constraint, fact.
EN_RULES = _rules(
    "en",
    *EN_SAFETY_RULES,
    ("preference", "{s} does not {b} {o}", "negative", 0.8, None,
     r"\bi\s+(?:really\s+|just\s+|still\s+)?" + _NOT + r"\s+(?:really\s+)?(?P<v>like|love|enjoy|prefer)\s+(?P<o>.+)"),
    ("preference", "{s} {v} {o}", "negative", 0.8, None,
     (r"\bi\s+(?:really\s+|absolutely\s+|just\s+|truly\s+)?"
      r"(?P<v>hate|dislike|detest|can't\s+stand|cannot\s+stand)\s+(?P<o>.+)")),
    ("preference", "{s}'s favourite {t} is {o}", "positive", 0.85, "favourite:{t}",
     r"\bmy\s+(?:all[-\s]time\s+)?(?:favou?rite|fave)\s+(?P<t>[a-z][a-z\s-]{0,30}?)\s+(?:is|are)\s+(?P<o>.+)"),
    ("preference", "{s} {v} {o}", "positive", 0.8, None,
     (r"\bi\s+(?:really\s+|much\s+|still\s+|also\s+|do\s+|definitely\s+|totally\s+|absolutely\s+|just\s+)?"
      r"(?P<v>prefer|like|love|enjoy|adore)\s+(?P<o>.+)")),
    # A change of habit stated in the first person: "I switched to coffee", "I've changed over to Neovim".
    ("preference", "{s} switched to {o}", "positive", 0.75, None,
     r"\bi(?:'ve|\s+have)?\s+(?:recently\s+|just\s+|finally\s+)?(?:switched|changed)\s+(?:over\s+)?to\s+(?P<o>.+)"),
    ("preference", "{s} is a big fan of {o}", "positive", 0.75, None,
     r"\bi(?:'m|\s+am)\s+(?:a\s+)?(?:big|huge|great)\s+fan\s+of\s+(?P<o>.+)"),
    ("decision", "Decision: {o}", None, 0.85, None, r"^(?:decision|verdict)\s*[:：]\s*(?P<o>.+)"),
    ("decision", "The project uses {o}", None, 0.7, None,
     r"\b(?:the|our|this)\s+project\s+(?:uses|is\s+using|runs\s+on|is\s+built\s+(?:on|with))\s+(?P<o>.+)"),
    ("decision", "Decision: {o}", None, 0.85, None,
     (r"\b(?:we|i|the\s+team|our\s+team)\s+(?:(?:have|'ve|had|just|finally|already|all|eventually)\s+)*"
      r"(?:decided|agreed)\s+(?:to\s+|on\s+|that\s+)?(?P<o>.+)")),
    ("decision", "Decision: {o}", None, 0.85, None,
     (r"\b(?:let's|lets|let\s+us|we(?:'ll|\s+will|'re\s+going\s+to|\s+are\s+going\s+to|\s+shall))\s+"
      r"(?P<o>" + _DECIDE_VERB + r"\s+.+)")),
    ("decision", "Decision: {o}", None, 0.8, None,
     (r"\bwe(?:'ve|\s+have)?\s+(?P<o>(?:chose|picked|selected|settled\s+on|went\s+with|opted\s+for|switched\s+to"
      r"|migrated\s+to|moved\s+to)\s+.+)")),
    ("decision", "Decision: {o}", None, 0.8, None,
     r"\bwe(?:'re|\s+are)\s+(?P<o>(?:switching|migrating|moving)\s+(?:\S+\s+){0,5}?to\s+.+)"),
    ("decision", "Decision: use {o}", None, 0.65, None,
     r"\b(?:we|our\s+team)\s+(?:use|are\s+using|'re\s+using)\s+(?P<o>.+)"),
    ("constraint", "Constraint: {o}", "negative", 0.8, None,
     (r"^(?!i\b)(?P<o>.*?\b(?:must\s+not|mustn't|must\s+never|(?:are|is|aren't|isn't)\s+not\s+allowed\s+to"
      r"|(?:are|is)\s+(?:forbidden|prohibited)|(?:don't|do\s+not)\s+ever(?!\s+" + _CHEER + r"))\b.+)")),
    # A rule, not a description or an exclamation: "we should never …", "never store …" (not "never saw this coming").
    ("constraint", "Constraint: {o}", "negative", 0.75, None,
     r"^(?P<o>(?:(?:we|you)\s+(?:should|must)\s+never|never\s+(?=" + IMPERATIVES + r"))\s*.+)"),
    ("constraint", "Constraint: {o}", "positive", 0.75, None,
     r"^(?!i\b)(?P<o>.*?\bmust\s+(?!not\b|never\b|'ve\b|" + _GUESSED + r"\b).+)"),  # "must be tough" guesses
    ("constraint", "Constraint: {o}", "positive", 0.7, None,
     r"^(?P<o>(?:(?:we|you)\s+(?:should|must|need\s+to)\s+always|always\s+(?=" + IMPERATIVES + r"))\s*.+)"),
    ("fact", "{s}'s birthday is {o}", "positive", 0.8, "birthday",
     r"\bmy\s+(?:date\s+of\s+)?birth(?:day|date)\s+is\s+(?:on\s+)?(?P<o>.+)"),
    ("fact", "{s}'s name is {o}", "positive", 0.8, "name", r"\bmy\s+name\s+is\s+(?P<o>.+)"),
    ("fact", "{s} no longer lives in {o}", "negative", 0.75, "residence",
     r"\bi\s+" + _NOT + r"\s+live\s+in\s+(?P<o>.+?)(?:\s+any\s?more)?$"),
    ("fact", "{s} lives in {o}", "positive", 0.75, "residence",
     (r"\bi(?:(?:'m|\s+am|'ve\s+been|\s+have\s+been)?(?:\s+(?:currently|now|still|also))?\s+(?:live|living|based)"
      r"|(?:'ve|\s+have)\s+(?:always\s+|now\s+)?lived|(?:'m|\s+am|'ve|\s+have)\s+(?:\w+\s+){0,2}?settled)"
      r"\s+(?:in|into)\s+(?P<o>.+?)(?:\s+(?:for|since)\s+.*)?$")),
    ("fact", "{s} moved to {o}", "positive", 0.75, "residence",
     r"\bi(?:\s+just|'ve|\s+have)?\s+(?:moved|relocated)\s+(?:from\s+(?:\S+\s+){1,3}?)?to\s+(?P<o>.+?)(?:\s+i(?:'ve|'m|\s).*)?$"),
    ("fact", "{s} no longer works at {o}", "negative", 0.75, "employer",
     r"\bi\s+" + _NOT + r"\s+work\s+(?:at|for)\s+(?P<o>.+?)(?:\s+any\s?more)?$"),
    ("fact", "{s} works at {o}", "positive", 0.75, "employer",
     r"\bi(?:'m|\s+am)?(?:\s+(?:currently|now|still))?\s+(?:work|working)\s+(?:at|for)\s+(?P<o>.+)"),
    ("fact", "{s} works as {o}", "positive", 0.75, "occupation", r"\bi\s+work\s+as\s+(?P<o>.+)"),
    ("fact", "{s} is {o} years old", "positive", 0.8, "age", r"\bi(?:'m|\s+am)\s+(?P<o>\d+)\s+years?\s+old"),
    ("fact", "{s} is from {o}", "positive", 0.7, "origin",
     r"\bi(?:'m\s+from|\s+am\s+from|\s+come\s+from|\s+was\s+born\s+in)\s+(?P<o>.+)"),
    ("fact", "{s} is {o}", "positive", 0.7, "identity", r"\bi(?:'m|\s+am)\s+(?P<o>an?\s+(?!bit\b|little\b|lot\b)\S.*)"),
    ("fact", "{s} has {o}", "positive", 0.65, None,
     r"\bi\s+have\s+(?P<o>(?:a|an|one|two|three|four|five|\d+)\s+.+)"),
    ("fact", "{s}'s {t} is {o}", "positive", 0.6, "my:{t}",
     r"\bmy\s+(?P<t>" + _NOT_MY + r"[a-z]+(?:\s+[a-z]+)?)\s+(?:is|are)\s+(?P<o>.+)"),
)
# Every English rule needs one of these words (its subject, its verb or its marker): a clause without any is not read
# by them (same notes; 5,047 of the 17,267 clauses of LoCoMo and REALTALK dev have one). Keep it in step with the rules.
EN_TRIGGER = re.compile(r"\b(?:i|my|we|decision|verdict|project|decided|agreed|let|lets|team|must|mustn|allowed|forbidden"
                        r"|prohibited|ever|never|always)\b", re.IGNORECASE)
ZH_RULES = _rules(
    "zh",
    *ZH_SAFETY_RULES,
    ("preference", "{s}{v}{o}", "negative", 0.8, None,
     r"我(?P<v>(?:也|还是|一直|真的|其实|并)?(?:不太|不是很|不怎么|一点也不|不再|不)(?:喜欢|爱))(?P<o>.+)"),
    ("preference", "{s}{v}{o}", "negative", 0.8, None, r"我(?P<v>(?:很|非常|特别|最|真的)?(?:讨厌|受不了|反感))(?P<o>.+)"),
    ("preference", "{s}{v}{o}", "negative", 0.75, None, r"我(?P<v>(?:从来|从|一直|也|平时)?不(?:吃|喝))(?P<o>[^，。！？]+)"),
    # the thing first, then a refusal that leaves no doubt: "香菜我一口都不碰", "肥肉一点都不吃" (not "他一口都不吃")
    ("preference", "{s}{v}{o}", "negative", 0.75, None,
     r"^(?P<o>(?!他|她|它|你|我|孩子|大家)[^，。！？：:]{1,8}?)我?(?P<v>(?:一口|一点|从来|根本|绝对)(?:都|也)?不(?:碰|吃|沾|喝))"),
    ("preference", "{s}最喜欢的{t}是{o}", "positive", 0.85, "favourite:{t}", r"我最(?:喜欢|爱)的(?P<t>.{1,8}?)是(?P<o>.+)"),
    ("preference", "{s}{v}{o}", "positive", 0.8, None,
     r"我(?P<v>(?:也|还是|一直|真的|其实)?(?:更|最|很|非常|特别|比较)?(?:喜欢|爱|偏好|倾向于))(?P<o>.+)"),
    ("decision", "{o}", None, 0.7, None, r"(?P<o>项目(?:使用|用|采用|基于).+)"),
    ("decision", "决定：{o}", None, 0.85, None, r"(?<![没未])决定了?(?P<o>(?!不了|了吗).+)"),
    ("decision", "决定：{o}", None, 0.8, None, r"就(?P<o>(?:用|选|使用|采用)\s*.+)"),
    ("decision", "决定：{o}", None, 0.8, None, r"(?P<o>.*?(?:选择了|选了|选用|采用|改用|换成|换用|切换到|迁移到|转用).+)"),
    ("decision", "决定：{o}", None, 0.65, None, r"(?:我们|咱们|团队|大家)(?:就|还是|统一|以后|现在|目前|一直)?(?P<o>(?:用|使用)\s*.+)"),
    ("constraint", "约束：{o}", "negative", 0.75, None,
     r"(?P<o>.*?(?:不能|不可以|不准|不许|(?<![舍巴恨怪由])不得(?!不)|禁止|严禁|切勿|千万不要|千万别|绝对不要|绝不能|永远不要|不要|别再).+)"),
    ("constraint", "约束：{o}", "positive", 0.75, None, r"(?P<o>.*?(?:必须|务必|一定要|始终要|总是要|永远要).+)"),
    ("fact", "{s}的生日是{o}", "positive", 0.8, "birthday", r"我的?生日(?:是|在)(?P<o>.+)"),
    ("fact", "{s}叫{o}", "positive", 0.8, "name", r"我(?:叫|的名字是|的名字叫)(?P<o>.+)"),
    ("fact", "{s}不再住在{o}", "negative", 0.75, "residence", r"我(?:已经)?(?:不再住在|不住在)(?P<o>.+)"),
    ("fact", "{s}住在{o}", "positive", 0.75, "residence",
     r"我(?:现在|目前|一直|还|已经)?(?:住在|搬到了?|搬去了?|定居在)(?P<o>.+)"),
    # "搬到成都以后，…": a move said without a subject is the speaker's
    ("fact", "{s}住在{o}", "positive", 0.75, "residence", r"^(?:自从|自)?搬到了?(?P<o>[^，。！？]{1,10}?)(?:以后|之后|后)"),
    # "我在成都生活好几年了", "我已经在西安安顿下来了": where one lives, said by what one does there
    ("fact", "{s}住在{o}", "positive", 0.75, "residence",
     r"我(?:现在|目前|一直|还|已经)?在(?P<o>(?!这|那|哪)[^，。！？在]{1,10}?)(?:生活|居住|定居|安家|安顿下来|落户)"),
    ("fact", "{s}不再在{o}工作", "negative", 0.75, "employer", r"我(?:已经)?不(?:再)?在(?P<o>.{1,20}?)(?:工作|上班)"),
    ("fact", "{s}在{o}工作", "positive", 0.75, "employer", r"我(?:现在|目前|一直|还)?在(?P<o>.{1,20}?)(?:工作|上班)"),
    ("fact", "{s}{o}岁", "positive", 0.8, "age", r"我(?:今年)?(?P<o>[\d一二三四五六七八九十]+)岁"),
    ("fact", "{s}来自{o}", "positive", 0.7, "origin", r"我(?:来自|出生在|出生于)(?P<o>.+)"),
    ("fact", "{s}的{t}是{o}", "positive", 0.6, "my:{t}", r"我的(?P<t>[^是]{1,8}?)是(?P<o>.+)"),
    ("fact", "{s}是{o}", "positive", 0.7, "identity", r"我是" + _ZH_NOT_IDENTITY + r"(?P<o>.+)"),
    ("fact", "{s}有{o}", "positive", 0.65, None, r"我有(?P<o>(?:[一两三四五六七八九十]|\d)+\s*(?:个|只|条|辆|套|位|家|本).+)"),
)

# Words that carry a pattern, not a topic; never key terms.
GENERIC_WORDS = """use uses used using go going goes went with prefer prefers preferred like likes liked love loves
    loved enjoy enjoys adore hate hates dislike dislikes detest stand decide decided decision chose choose chosen pick
    picked select selected switch switched switching replace replaced replacing migrate migrated migrating move moved
    moving stick adopt adopted opt opted settle settled agree agreed always never must want need really instead now
    anymore longer let lets team project user thing things stuff lot much very also still just kind sort think actually
    basically probably definitely totally absolutely today yesterday tonight tomorrow currently recently lately ago day
    days week weeks month months year years moment right ever fan big huge great allowed forbidden prohibited over
    before after every 使用 用 采用 选用 选择 选了 决定 改用 换成 换用 换 切换 迁移 转用 替换 代替 喜欢 更 最 爱 偏好 倾向于
    讨厌 不再 不能 不要 禁止 必须 一定 务必 千万 永远 总是 始终 我们 咱们 大家 团队 项目 用户 现在 今天 昨天 最近 目前 以前 之前
    如今 当时 刚才 一直 还是 其实 真的 不用 非常 特别 比较 从 成 作为 觉得 认为 前 后 已经 不可以 不准 不许 严禁 一名 一个 一位
    一家 一只 吃 喝 做 写 看 玩 听 去 来 走"""
THIRD_PERSON = {"prefer": "prefers", "like": "likes", "love": "loves", "enjoy": "enjoys", "adore": "adores",
                "hate": "hates", "dislike": "dislikes", "detest": "detests"}

QUESTION = re.compile(
    r"[?？]|^\W*(?:what|why|how|when|where|who|which)\b"
    r"|^\W*(?:should|shall|do|does|did|can|could|would|will|is|are|am|was|were|have|has)\s+"
    r"(?:i|we|you|it|they|this|that|there)\b"
    r"|[吗呢][。.!！]*\s*$|什么|怎么|为什么|如何|哪(?:个|些|里|儿)|是否|要不要|能不能|可不可以|是不是|会不会|用不用|好不好|行不行|有没有",
    re.IGNORECASE,
)
HYPOTHETICAL = re.compile(
    r"\b(?:if|whether|suppose|supposing|imagine|unless|in\s+case|maybe|perhaps|wonder(?:ing)?|not\s+sure|wish"
    r"|considering|thinking\s+about)\b|如果|假如|假设|要是|万一|的话|也许|或许|可能|大概|考虑(?!一下)|打算|还没决定|没决定",
    re.IGNORECASE,
)
NEGATION = re.compile(
    r"\b(?:not|never|no\s+longer|don't|dont|doesn't|didn't|isn't|aren't|won't|can't|cannot|mustn't|shouldn't)\b"
    r"|不(?!错|过|同|但|仅|断|久|少|如|管)|没有?|别|禁止|严禁|无法|弃用|放弃",
    re.IGNORECASE,
)
# "let's go with that" / "就用这个": the object is whatever the previous message proposed.
ANAPHOR = re.compile(
    r"^(?:(?:go\s+with|use|stick\s+with|pick|choose|adopt|do|用|选|使用|采用)\s*)?"
    r"(?P<a>that|it|this|this\s+one|that\s+one|them|这个方案|那个方案|这个|那个|它)$",
    re.IGNORECASE,
)
PROPOSALS = tuple(re.compile(rx, re.IGNORECASE) for rx in (
    r"\b(?:should|shall|can|could)\s+we\s+(?:use|go\s+with|switch\s+to|try|adopt|pick)\s+(?P<x>[^?,.]+)",
    r"\b(?:how|what)\s+about\s+(?:using\s+)?(?P<x>[^?,.]+)",
    r"\b(?:i\s+(?:suggest|recommend|propose)|why\s+not)\s+(?:using\s+|we\s+use\s+|use\s+)?(?P<x>[^?,.]+)",
    r"(?:要不要|要不|不如|建议|推荐)(?:我们)?(?:用|使用|采用|改用|换成)?(?P<x>[^？?，,。]+?)(?:吧|吗|呢|怎么样)?[？?。]*$",
    r"(?:用|使用|采用|改用|换成)(?P<x>[^？?，,。]+?)怎么样",
))

# Contradiction detection.

# Interchangeable things, "kind: nouns naming the kind | members". Switching to one member
# supersedes a note naming another member, or the kind itself ("数据库用 PostgreSQL").
KIND_TABLE = """
database: database db 数据库 | postgresql postgres mysql mariadb sqlite oracle mongodb mongo mssql dynamodb cassandra
    cockroachdb tidb clickhouse duckdb couchdb neo4j
cache: cache 缓存 | redis memcached valkey
frontend: frontend 前端 | react vue angular svelte nextjs nuxt ember jquery
language: 编程语言 | python golang rust java kotlin javascript typescript ruby php csharp swift scala elixir haskell
cloud: cloud 云 云服务 hosting hosted 托管 | aws gcp azure 阿里云 腾讯云 华为云 heroku vercel digitalocean hetzner
    linode netlify cloudflare
editor: editor ide 编辑器 | vim neovim emacs vscode sublime intellij pycharm
os: 操作系统 | linux windows macos ubuntu debian fedora
queue: queue broker 消息队列 | kafka rabbitmq nats sqs pulsar
drink: drink 饮料 | coffee tea 咖啡 茶 奶茶 juice
"""
# States and moods: true for a while, so a change is not a contradiction (seed 002).
STATE_WORDS = (
    "tense nervous anxious stressed relaxed calm happy sad tired exhausted busy sick ill angry upset excited bored "
    "lonely worried sleepy depressed frustrated 紧张 放松 轻松 焦虑 压力 开心 高兴 难过 伤心 累 疲惫 忙 生病 生气 兴奋 "
    "无聊 孤独 担心 困 郁闷 沮丧 烦"
)
(TIME,) = _rx(
    r"\b(?:\w+\s+(?:days?|weeks?|months?|years?)\s+ago|yesterday|today|tonight|now|currently|these\s+days|recently"
    r"|lately|last\s+(?:week|month|year|night)|this\s+(?:week|morning|month|year)|earlier|any\s?more|used\s+to)\b"
    r"|[\d一二两三四五六七八九十几]+(?:天|周|个月|年|小时)(?:前|以前|之前)"
    r"|昨天|今天|现在|目前|最近|这几天|上周|上个月|去年|刚才|之前|以前|当时|如今|此刻|这周"
)
# Each names what is left (f) and/or what is taken up (t); the first match of a clause counts.
EN_SWITCH = _rx(
    r"\b(?:switch|migrat|mov|chang|convert|transition|upgrad)\w*\b.*?\bfrom\s+(?P<f>.+?)\s+(?:over\s+)?to\s+(?P<t>.+)",
    r"\breplac\w*\s+(?P<f>.+?)\s+(?:with|by)\s+(?P<t>.+)",
    r"(?P<f>.+?)\s+(?:is|are|was|were)\s+(?:being\s+)?replaced\s+(?:with|by)\s+(?P<t>.+)",
    r"(?P<t>\S+(?:\s+\S+)?)\s+instead\s+of\s+(?P<f>.+)",
    r"\b(?:switch|migrat|chang|transition)\w*\s+(?:\S+\s+){0,3}?(?:over\s+)?to\s+(?P<t>.+)",
    r"\b(?:no\s+longer|stop(?:ped)?|quit|drop(?:ped)?|ditch(?:ed)?|abandon(?:ed)?|deprecat\w*|g[eo]t\s+rid\s+of"
    r"|mov\w*\s+away\s+from)\s+(?:using\s+|use\s+|like\s+|liking\s+)?(?P<f>.+)",
    r"\b(?:don't|do\s+not|won't|will\s+not|doesn't)\s+(?:use|like|want)\s+(?P<f>.+?)\s+any\s?more",
)
ZH_SWITCH = _rx(
    r"从(?P<f>.+?)(?:换|改|迁移|切换|转|迁)(?:到|成|为|用)(?P<t>.+)",
    r"把(?P<f>.+?)(?:换成|改成|替换成|替换为|改为|迁移到|切换到)(?P<t>.+)",
    r"(?:用|拿)(?P<t>.+?)(?:替换|代替|取代)掉?(?P<f>.+)",
    r"(?P<f>.+?)(?:换成|改成|替换成|替换为|改为)(?P<t>.+)",
    r"(?:改用|换用|转用|切换到|迁移到|转向|换到)(?P<t>.+)",
    r"(?:不再|弃用|放弃|停用|淘汰|抛弃)(?:使用|用|喜欢)?(?P<f>.+)",
)
