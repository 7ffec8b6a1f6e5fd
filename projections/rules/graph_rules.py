"""The rule tables of ``graph-rules-v2``: how one dialogue turn is read as graph memories.

Data only; :mod:`projections.rules.graph_extract` applies them. Editing a table
changes what the extractor returns, so it also means a new extractor id.
"""

from __future__ import annotations

import re

from projections.rules.english_lemma import IRREGULAR


def words(text: str) -> frozenset[str]:
    return frozenset(text.split())


def _alternation(items) -> str:
    return "(?:" + "|".join(sorted((re.escape(i).replace(r"\ ", r"\s+") for i in items), key=len, reverse=True)) + ")"


# People a speaker relates to. A subject "my sister" (我妹妹) also yields a relation memory.
KIN_EN = words("""mom mother mum mommy dad father daddy parents sister sisters brother brothers siblings sibling wife
    husband partner boyfriend girlfriend fiance fiancee fiancé fiancée son sons daughter daughters kids kid children
    child baby friend friends buddy bff cousin cousins aunt uncle grandma grandpa grandmother grandfather grandparents
    niece nephew boss coworker coworkers colleague colleagues mentor neighbor neighbour neighbors roommate family fam
    stepmom stepdad teammate teammates classmate classmates""")
KIN_MODIFIERS_EN = words("little younger older big twin baby best old close new good oldest youngest")
KIN_ZH = ("妈妈", "母亲", "老妈", "爸爸", "父亲", "老爸", "父母", "爸妈", "姐姐", "妹妹", "哥哥", "弟弟", "老婆", "妻子",
          "太太", "老公", "丈夫", "男朋友", "女朋友", "男友", "女友", "对象", "儿子", "女儿", "孩子们", "孩子", "宝宝",
          "好朋友", "朋友", "闺蜜", "同学", "同事", "老板", "室友", "爷爷", "奶奶", "外公", "外婆", "姥姥", "姥爷",
          "表哥", "表姐", "表妹", "表弟", "堂哥", "堂姐", "叔叔", "阿姨", "舅舅", "邻居", "家人", "老师", "导师")
KIN_EN_RX = r"(?i:(?:(?:" + "|".join(sorted(KIN_MODIFIERS_EN)) + r")\s+)?" + _alternation(KIN_EN) + r")\b"
KIN_ZH_RX = _alternation(KIN_ZH)
NAME_RX = r"[A-Z][a-z]+(?:\s+[A-Z][a-z]+)?"
PARTNER_EN_RX = r"(?:(?:[Mm]y|[Oo]ur|[Tt]he)\s+" + KIN_EN_RX + "|" + NAME_RX + ")"  # "my husband and I", "me and Jon"
# Capitalised words that open a clause without being anybody's name.
NOT_NAMES = words("""I The A An It Its This That These Those We You He She They My Our Your His Her Their There Here
    What When Where Why How Who Which Yesterday Today Tomorrow Tonight Last Next Yes Yeah Yep No Nope Oh Wow Hey Hi
    Hello Thanks Thank Sorry Congrats Congratulations So And But Or Also Well Just Really Sounds Looks Seems Glad
    Great Awesome Nice Cool Good Definitely Totally Absolutely Maybe Perhaps Anyway Btw Lol Haha Ok Okay Sure Of Let
    Please Take Keep Have Do Can Could Would Should Will Guess Speaking Since After Before While Although Though If
    Because As At In On For With From By About Every Everyone Everybody Everything Someone Somebody Something Nobody
    Nothing People Life Family Kids Art Music Time Things Stuff Being Having Getting Going Doing Seeing Both All Some
    Lots Plus Then Once Right Exactly Honestly Actually Luckily Thankfully Unfortunately Sadly Fingers Love Hope""")

# Words between the subject and the verb that do not change what happened.
ADVERBS_EN = words("""just finally recently also actually even already really totally then once still always often
    usually sometimes now officially originally first eventually lately kinda sort kind of truly absolutely definitely
    literally basically happily proudly all both each""")
NEGATIONS_EN = words("not never no nor hardly barely")
MODALS_EN = words("can could would should might may must ought wanna")
BE_FORMS = words("am is are was were")
# Verbs that say nothing worth remembering on their own (hedges, wishes, small talk).
SKIP_VERBS_EN = words("""want need hope wish wonder mean guess know forget say tell ask thank appreciate agree
    understand bet suppose feel hear imagine promise wait recall realize realise notice remember miss admit reckon
    suggest recommend encourage doubt seem sound look congratulate apologize apologise stay keep remain become
    think be excite thrill interest scare bore worry amaze surprise determine stoke tire exhaust overwhelm bless
    relieve shock delight frustrate disappoint embarrass confuse""")
SKIP_PRESENT_EN = words("see get find")  # "I see", "I get it", "I find it…": talk, not facts
OPINION_EN = {"think": "think", "thought": "think", "believe": "believe", "believed": "believe"}
PREFERENCE_EN = words("like love enjoy hate dislike prefer adore")
# Lasting leanings stated with "be": "I'm passionate about X", "allergic to X" (adjective → its preposition).
LEANINGS_EN: dict[str, str] = {
    "keen": "on", "passionate": "about", "allergic": "to", "interested": "in", "obsessed": "with", "hooked": "on",
    "drawn": "to", "addicted": "to", "fond": "of", "crazy": "about", "fan": "of", "member": "of", "part": "of",
}
GET_STATES = words("married engaged divorced hurt injured promoted fired hired sick lost pregnant")
PASSIVE_EVENTS_EN = words("""promoted hired fired accepted invited selected elected chosen awarded nominated diagnosed
    injured hurt married engaged divorced adopted featured published admitted rejected""")
# Verb particles that belong to the predicate: "signed up for" → "sign up".
PHRASAL_EN: dict[str, frozenset[str]] = {
    "sign": words("up"), "pick": words("up"), "take": words("up off over"), "give": words("up back"),
    "put": words("together on up"), "show": words("off"), "hang": words("out"), "check": words("out"),
    "set": words("up"), "find": words("out"), "work": words("out"), "figure": words("out"), "start": words("up"),
    "catch": words("up"), "move": words("in out"), "come": words("back"), "go": words("back out"),
    "get": words("back together"), "fill": words("out"), "try": words("out"), "clean": words("up"),
    "wrap": words("up"), "team": words("up"), "break": words("up"), "grow": words("up"), "look": words("after"),
    "open": words("up"), "reach": words("out"), "carve": words("out"), "end": words("up"), "cheer": words("up"), "meet": words("up"),
}
# Base forms that "to" or "will" / "going to" may introduce ("went to see", "going to start").
BASE_VERBS_EN = frozenset(IRREGULAR.values()) | words("""help visit try start share celebrate relax play watch explore
    check join support raise open create paint cook bake work enjoy travel attend talk ask look use adopt apply
    pursue continue finish move plan organize organise host teach study practice improve prepare hike camp dance
    volunteer donate inspire express clear reset unwind connect stay stop sign register launch release record
    publish perform compete train exercise rest fix clean decorate design plant walk change love like hate learn
    meet celebrate hang catch return marry graduate retire propose sing shop drive surf climb kayak fish bike skate
    knit sew garden write read call text visit spend explore chill grab pick""")
# Prepositions: what may start the object ("went to X"), what marks a place, where a noun phrase ends.
LEAD_PREPS_EN = words("to at on for into in about from by through around over across towards toward onto")
PLACE_PREPS_EN = words("at in to near inside")
NP_STOP_EN = words("""to at in on with for from into onto during after before since until till near by through across
    around over towards toward without like than and but or so because as if when while where which who whom whose each
    that is was were are am be been it i we he she they you me him them us last next every ago then though although
    yesterday today tonight tomorrow not how what why""")
BREAK_EN = words("and but or so because as if when while where which who whom that though although since until")
DETERMINERS_EN = words("a an the some any this that these those another")
TRAILING_EN = words("""too again together here there now already yet anyway though today recently lately first also
    as well so really all alone much more ever before once twice about around back finally soon of just afterward
    afterwards lol haha""")
# Objects that carry no content ("I loved it", "had a blast"): the memory needs another anchor.
VAGUE_EN = words("""it that this them one something anything everything nothing some lot lots stuff things thing
    time times fun blast way more much well great good ok okay fine better best amazing awesome cool nice sure
    happy excited tired busy glad chance bit while day days week weeks year years moment idea sense point news
    plans plan ton tons bunch of hard late early fast""")
NOT_PLACES_EN = words("""mood person way time life general fact touch love charge advance mind common particular order
    total addition return case detail turn public private fun hope tears awe shape trouble""")

# Chinese. Verbs, longest first when matched; anything jieba tags as a verb also counts.
VERBS_ZH = ("去", "来", "回", "到", "买", "卖", "吃", "喝", "看", "玩", "养", "学", "学习", "上", "参加", "报名", "开始",
            "结束", "完成", "搬", "搬到", "搬家", "认识", "见", "见到", "遇到", "碰到", "收到", "送", "领养", "收养",
            "生", "结婚", "离婚", "毕业", "离职", "辞职", "入职", "加入", "旅行", "旅游", "逛", "跑", "跑步", "爬",
            "画", "写", "读", "听", "做", "参观", "拜访", "探望", "开", "换", "丢", "失去", "赢", "获得", "得到",
            "拿到", "找到", "发现", "喜欢", "爱", "热爱", "讨厌", "住", "住在", "工作", "上班", "有", "是", "叫",
            "觉得", "认为", "感觉", "相信", "打", "踢", "游泳", "唱", "弹", "练", "练习", "上课", "考", "考试",
            "通过", "申请", "庆祝", "举办", "组织", "主持", "做饭", "烤", "煮", "种", "骑", "开车", "坐", "飞",
            "出差", "约会", "分手", "生病", "受伤", "住院", "出院", "出生", "去世", "教", "帮", "帮助", "照顾",
            "拍", "修", "租", "搬进", "退休", "怀孕", "求婚", "订婚", "剪", "染", "捡", "会")
OPINION_ZH = frozenset({"觉得", "认为", "感觉", "相信"})
PREFERENCE_ZH = frozenset({"喜欢", "爱", "热爱", "讨厌"})
STATIVE_ZH = frozenset({"是", "有", "住", "住在", "工作", "上班", "叫", "会"})
VERB_ZH_RX = _alternation(VERBS_ZH)
ZH_LEAD = re.compile(r"^(?:其实|然后|对了|另外|还有|嗯+|哦+|啊+|所以|而且|但是|不过|后来|刚才|结果|总之|哈哈+|呵呵|诶|哎|就是(?=.))"
                     r"[，,\s]*")
ZH_ADVERB = re.compile(r"^(?:也|还|都|又|刚刚|刚|已经|终于|一起|一直|经常|常常|总是|每天|就|才|曾经|正在|刚好|特意|专门|"
                       r"亲自|第一次|首次|好不容易|去年|今天)")
ZH_NEGATION = re.compile(r"^(?:不|没有|没|别|从不|从没|从来没有?)")
ZH_WISH = re.compile(r"^(?:想要|想|希望|梦想)")
ZH_PLAN = re.compile(r"^(?:要|将要|将|准备|计划)")
ZH_PLACE = re.compile(r"^在(?P<place>.+?)(?=" + VERB_ZH_RX + ")")
ZH_WITH = re.compile(r"^(?:和|跟|与|同)(?P<with>.+?)(?:一起)?(?=" + VERB_ZH_RX + ")")
ZH_ASPECT = re.compile(r"^(?P<comp>[完好成])?(?P<asp>了|过|着)?")
ZH_QUANTITY = re.compile(r"^(?:一|1)\s*(?:个|只|条|本|辆|家|位|件|双|部|台|张|次|场|杯|碗|份|门|节|顿|套|所|座|首|篇|"
                         r"幅|盆|棵|群|堂|趟|把|款)")
ZH_TRAILER = re.compile(r"(?:一下|一趟|一次|一会儿|[了啊呢吧哦呀啦嘛哈的])+$")
ZH_JUDGEMENT = re.compile(r"^(?P<o>.+?)(?P<j>(?:是|很|非常|太|真|挺|特别|比较|有点|不太|不|超|好|蛮|相当|更|最).+)$")
ZH_PRONOUN_SUBJECTS = frozenset("这 那 他 她 它 你 您 谁".split())

# Importance: a base per memory type, raised for life events, lowered for routine.
BASE_IMPORTANCE: dict[str, float] = {"event": 0.5, "fact": 0.5, "relation": 0.7, "opinion": 0.4}
LIFE_EVENTS: dict[str, float] = {
    **dict.fromkeys(words("""adopt marry divorce graduate die retire propose quit launch diagnose move lose win
        injure bear be_born get_married get_engaged get_divorced get_hurt get_pregnant get_promoted get_fired
        be_promoted be_hired be_fired be_diagnosed be_married be_engaged be_accepted"""), 0.3),
    **dict.fromkeys(("领养", "收养", "结婚", "离婚", "毕业", "去世", "出生", "生", "搬", "搬到", "搬家", "辞职",
                     "离职", "入职", "退休", "住院", "分手", "怀孕", "求婚", "订婚", "受伤", "生病"), 0.3),
    **dict.fromkeys(("养", "买", "加入", "参加", "报名", "开始"), 0.1),
    **dict.fromkeys(words("join attend sign_up apply pass buy visit travel meet host organize start"), 0.1),
}
ROUTINE: dict[str, float] = {
    **dict.fromkeys(words("eat drink watch have do see"), -0.1),
    **dict.fromkeys(("吃", "喝", "看", "玩"), -0.1),
}
