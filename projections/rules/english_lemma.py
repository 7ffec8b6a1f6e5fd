"""English verb lemmas without a dictionary: "went" → "go", "adopted" → "adopt", "hiking" → "hike".

An irregular-verb table plus the suffix rules of Porter's step 1b (undouble
"planned" → "plan", restore the e of "hiked" → "hike"), with a short table of
stems those rules get wrong ("created" → "create", not "creat"). Good enough
for the verbs of casual conversation; pure and deterministic.
"""

from __future__ import annotations

# Past tense and past participle forms → lemma.
IRREGULAR: dict[str, str] = {}
for _lemma, _forms in {
    "be": "was were been", "become": "became", "begin": "began begun", "bite": "bit bitten", "blow": "blew blown",
    "break": "broke broken", "bring": "brought", "build": "built", "buy": "bought", "catch": "caught",
    "choose": "chose chosen", "come": "came", "cut": "cut", "dig": "dug", "do": "did done", "draw": "drew drawn",
    "drink": "drank drunk", "drive": "drove driven", "eat": "ate eaten", "fall": "fell fallen", "feed": "fed",
    "feel": "felt", "fight": "fought", "find": "found", "fly": "flew flown", "forget": "forgot forgotten",
    "get": "got gotten", "give": "gave given", "go": "went gone", "grow": "grew grown", "have": "had",
    "hang": "hung", "hear": "heard", "hide": "hid hidden", "hit": "hit", "hold": "held", "hurt": "hurt",
    "keep": "kept", "know": "knew known", "lead": "led", "learn": "learnt", "leave": "left", "lend": "lent",
    "let": "let", "light": "lit", "lose": "lost", "make": "made", "mean": "meant", "meet": "met", "pay": "paid",
    "put": "put", "quit": "quit", "read": "read", "ride": "rode ridden", "ring": "rang rung", "rise": "rose risen",
    "run": "ran", "say": "said", "see": "saw seen", "sell": "sold", "send": "sent", "set": "set", "shoot": "shot",
    "show": "shown", "shut": "shut", "sing": "sang sung", "sink": "sank sunk", "sit": "sat", "sleep": "slept",
    "speak": "spoke spoken", "spend": "spent", "spread": "spread", "stand": "stood", "steal": "stole stolen",
    "stick": "stuck", "strike": "struck", "swear": "swore sworn", "swim": "swam swum", "take": "took taken",
    "teach": "taught", "tear": "tore torn", "tell": "told", "think": "thought", "throw": "threw thrown",
    "understand": "understood", "wake": "woke woken", "wear": "wore worn", "win": "won", "write": "wrote written",
    "die": "died", "lie": "lied", "tie": "tied", "ski": "skied", "travel": "travelled traveling travelling",
    "cancel": "cancelled cancelling", "label": "labelled", "model": "modelled",
}.items():
    for _form in _forms.split():
        IRREGULAR[_form] = _lemma

# Present-tense forms that read the same in the past: past only when the clause says when.
SAME_IN_PAST = frozenset({"cut", "hit", "hurt", "let", "put", "quit", "read", "set", "shut", "spread"})

# Stems (suffix removed) whose lemma the rules below would get wrong.
STEM_EXCEPTIONS: dict[str, str] = {
    "creat": "create", "complet": "complete", "compet": "compete", "delet": "delete", "invit": "invite",
    "excit": "excite", "unit": "unite", "decid": "decide", "provid": "provide", "divid": "divide",
    "guid": "guide", "includ": "include", "conclud": "conclude", "exclud": "exclude", "describ": "describe",
    "subscrib": "subscribe", "escap": "escape", "explor": "explore", "ignor": "ignore", "restor": "restore",
    "ador": "adore", "scor": "score", "purchas": "purchase", "amus": "amuse", "confus": "confuse",
    "refus": "refuse", "accus": "accuse", "excus": "excuse", "us": "use", "caus": "cause", "paus": "pause",
    "belong": "belong", "volunteer": "volunteer", "hug": "hug", "bor": "bore", "ow": "owe", "agre": "agree",
    "fre": "free", "se": "see", "upgrad": "upgrade", "trad": "trade", "persuad": "persuade", "invad": "invade",
    "evad": "evade", "degrad": "degrade", "be": "be", "go": "go", "do": "do", "ly": "lie", "dy": "die", "ty": "tie",
}
_VOWELS = frozenset("aeiou")


def _classes(stem: str) -> str:
    """"c"/"v" per letter; y is a vowel after a consonant, as in Porter."""
    out = []
    for i, ch in enumerate(stem):
        vowel = ch in _VOWELS or (ch == "y" and i > 0 and out[-1] == "c")
        out.append("v" if vowel else "c")
    return "".join(out)


def _restore(stem: str) -> str:
    """The lemma of a stem left by removing -ed or -ing."""
    if stem in STEM_EXCEPTIONS:
        return STEM_EXCEPTIONS[stem]
    if len(stem) >= 3 and stem[-1] == stem[-2] and stem[-1] not in "lsz" and stem[-1] not in _VOWELS:
        return stem[:-1]  # planned → plan, stopped → stop
    classes = _classes(stem)
    adds_e = (
        stem.endswith(("v", "c", "z", "u", "iz", "yz", "dg", "rg", "lg", "is"))
        or stem.endswith(("bl", "pl", "dl", "gl", "tl", "kl", "fl", "cl"))
        or (stem.endswith("at") and len(stem) >= 3 and stem[-3] not in "aeo")  # celebrate, not treat
        or (stem.endswith(("ang", "eng")) and len(stem) > 4)  # change, challenge
        or (stem.endswith(("ar", "ir", "ur")) and classes.endswith("cvc"))  # share, inspire, cure; not enter
        or (stem.endswith(("rs", "ps", "ns", "ls")))  # nurse, collapse, sense, pulse
        or (stem.endswith("s") and classes.endswith("vvc"))  # please, raise
        or (classes.count("vc") == 1 and classes.endswith("cvc") and stem[-1] not in "wxy" and len(stem) <= 4)
    )
    return stem + "e" if adds_e else stem


def past_lemma(word: str) -> str | None:
    """The lemma of a past-tense or past-participle form, or None when ``word`` is not one."""
    w = word.lower()
    if w in IRREGULAR:
        return IRREGULAR[w]
    if w[:2] == "re" and w[2:] in IRREGULAR:
        return "re" + IRREGULAR[w[2:]]  # retook → retake
    if len(w) >= 5 and w.endswith("ied"):
        return w[:-3] + "y"  # tried → try
    if len(w) >= 4 and w.endswith("eed"):
        return w[:-1] if w[:-1] in ("agree", "free", "guarantee", "referee") else None  # not need, feed, speed
    if len(w) >= 4 and w.endswith("ed"):
        return _restore(w[:-2])
    return None


def ing_lemma(word: str) -> str | None:
    """The lemma of an -ing form ("hiking" → "hike"), or None."""
    w = word.lower()
    if w in IRREGULAR and w.endswith("ing"):
        return IRREGULAR[w]
    if len(w) >= 5 and w.endswith("ying") and w[:-4] in ("l", "d", "t"):
        return w[:-4] + "ie"  # lying → lie
    if len(w) >= 4 and w.endswith("ing"):
        return _restore(w[:-3])
    return None


def present_lemma(word: str) -> str:
    """The lemma of a third-person present form: "goes" → "go", "studies" → "study", "has" → "have"."""
    w = word.lower()
    if w in ("has", "does", "is"):
        return {"has": "have", "does": "do", "is": "be"}[w]
    if len(w) > 4 and w.endswith("ies"):
        return w[:-3] + "y"
    if w.endswith(("ches", "shes", "sses", "xes", "zzes", "oes")):
        return w[:-2]
    return w[:-1] if w.endswith("s") and not w.endswith("ss") else w
