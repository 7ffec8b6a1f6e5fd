"""``palimpsest search`` and ``palimpsest context`` as text a person reads.

A hit is one line (rank, date, speaker, the text cut to the terminal's width) and a short "why" in words: the
two strongest terms of its score (``Hit.terms``, computed by the shard with the fusion that ranked it, as the
HTTP route answers them and the inspector draws them), each said as what it means for this hit ("matched
'green tea'", "same episode as #1", "close in meaning"). ``--verbose`` adds the ids, the events and the whole
breakdown. Standard library only: a search through ``--server`` imports nothing heavy.
"""

from __future__ import annotations

import argparse
import re
import unicodedata

from palimpsest.cli_style import line_width, more, paint, truncate

# Words too common to be what a hit "matched" (the query's other words are quoted).
STOPWORDS = frozenset("""
a about above after again all also am an and any are as at be because been before being between both but by can
did do does doing done during each few for from further had has have having he her here hers him his how i if in
into is it its itself just me more most my myself no nor not now of off on once only or other our ours out over own
same she should so some such than that the their theirs them then there these they this those through to too under
until up very was we were what when where which while who whom why will with would you your yours yourself
tell told know remember said say says ever still
""".split())
_WORD = re.compile(r"\w+", re.UNICODE)


def _is_cjk(ch: str) -> bool:
    return unicodedata.east_asian_width(ch) in "WF" and ch.isalnum()


def _stem(word: str) -> str:
    for suffix in ("ing", "ed", "es", "s"):
        if len(word) > len(suffix) + 2 and word.endswith(suffix):
            return word[: -len(suffix)]
    return word


def matched_phrases(query: str, text: str, most: int = 2) -> list[str]:
    """The query's words found in ``text``, runs of neighbouring ones kept together ("green tea"), at most ``most``
    phrases, longest first; for Chinese or Japanese, the longest shared runs of two characters or more."""
    found: list[str] = []
    folded_text = text.casefold()
    stems = {_stem(w) for w in _WORD.findall(folded_text)}
    run: list[str] = []
    for word in _WORD.findall(query) + [""]:
        folded = word.casefold()
        if folded and all(_is_cjk(ch) for ch in folded):
            found += _shared_runs(folded, folded_text)
            folded = ""
        if folded and folded not in STOPWORDS and not folded.isdigit() and _stem(folded) in stems:
            run.append(word)
            continue
        if run:
            found.append(" ".join(run))
            run = []
    unique = list(dict.fromkeys(found))
    return sorted(unique, key=lambda p: -len(p))[:most]


def _shared_runs(query: str, text: str) -> list[str]:
    """The longest runs (2+ characters) of ``query`` that ``text`` holds, left to right, not overlapping."""
    runs, i = [], 0
    while i < len(query) - 1:
        best = 0
        for j in range(len(query), i + 1, -1):
            if query[i:j] in text:
                best = j - i
                break
        if best:
            runs.append(query[i:i + best])
            i += best
        else:
            i += 1
    return runs


def _quoted(phrases: list[str]) -> str:
    return " and ".join(f"'{p}'" for p in phrases)


def _ranked_terms(hit) -> list[str]:
    """The hit's score terms, strongest first (from ``terms``; from the breakdown's ranks when a server sent none)."""
    terms = hit.terms
    if terms is None:  # the terms' names from the breakdown: a smaller rank is a stronger term
        names = {"dense_rank": "dense", "lexical_rank": "bm25", "facts_rank": "facts", "context_rank": "context",
                 "subwords_rank": "subwords", "episode_rank": "episode", "note_rank": "note", "graph_rank": "graph",
                 "clause_rank": "clause", "session_rank": "session", "conversation_rank": "conversation"}
        terms = {name: 1.0 / (5 + hit.breakdown[key]) for key, name in names.items() if key in hit.breakdown}
        if "neighbour_term" in hit.breakdown:
            terms["neighbour"] = hit.breakdown["neighbour_term"]
    return [name for name, value in sorted(terms.items(), key=lambda kv: -kv[1]) if value > 0]


def _other(hit, hits, same, *, before: bool = False) -> int | None:
    """The rank of the best other hit (ranked above ``hit``, with ``before``) for which ``same(other)`` holds."""
    for other in hits:
        if before and other.rank >= hit.rank:
            break
        if other is not hit and same(other):
            return other.rank
    return None


def term_words(name: str, hit, hits, query: str) -> str | None:
    """One score term of ``hit`` said in words (None: nothing worth saying)."""
    b = hit.breakdown
    if name in ("bm25", "facts", "subwords"):
        phrases = matched_phrases(query, hit.text)
        if phrases:
            return f"matched {_quoted(phrases)}"
        if hit.speaker and matched_phrases(query, hit.speaker):  # the speaker's name is indexed with the text
            return f"matched '{hit.speaker}', the speaker"
        return "shares words with the question"
    if name == "dense":
        return "close in meaning"
    if name == "context":
        return "the turns around it match the question"
    if name == "episode":
        rank = _other(hit, hits, lambda o: b.get("episode_id") and o.breakdown.get("episode_id") == b["episode_id"],
                      before=True)
        return f"same episode as #{rank}" if rank else "part of an episode about this"
    if name == "note":
        return "a note drawn from it"
    if name == "graph":
        return "related in the memory graph"
    if name == "retention":
        return "fresh in memory"
    if name == "neighbour":
        rank = _other(hit, hits, lambda o: o.memory_id == b.get("neighbour_of"))
        return f"next to #{rank}" if rank else "next to a close match"
    if name == "conversation":
        rank = _other(hit, hits, lambda o: o.conversation_id == hit.conversation_id, before=True)
        return f"same conversation as #{rank}" if rank else "from the conversation that matches best"
    if name == "speaker":
        return "said by the person the question names"
    if name == "time":
        return "from the time the question names"
    if name == "clause":
        return "answers one part of the question"
    if name == "session":
        return "from a matching session"
    return None


def why(hit, hits, query: str, strongest: int = 2) -> str:
    """Why ``hit`` ranked where it did, in words: its ``strongest`` score terms (distinct phrasings)."""
    said: list[str] = []
    for name in _ranked_terms(hit):
        words = term_words(name, hit, hits, query)
        if words and words not in said:
            said.append(words)
        if len(said) == strongest:
            break
    return "; ".join(said) or "ranked by the learned ranker"


def markers(hit) -> list[str]:
    """What a person should know about the hit's state: archived, superseded, marked down by feedback."""
    b, out = hit.breakdown, []
    if b.get("archived"):
        out.append(f"archived: {b['archived']}")
    if b.get("superseded_by"):
        out.append("superseded")
    if b.get("feedback_factor") is not None and b["feedback_factor"] < 1:
        out.append("marked down after feedback")
    return out


def print_hits(hits, query: str, args: argparse.Namespace, hidden: int = 0) -> None:
    """Each hit as ``rank. date  speaker  text`` (one line, cut to the terminal) and ``why: …``; ``--verbose`` adds
    its turn, ids, events, score terms and breakdown; ``hidden``: memories ranked below the last shown."""
    width = line_width()
    for h in hits:
        head = f"{h.rank:>2}. {h.occurred_at.date().isoformat()}  {h.speaker or h.role}  "
        flags = "".join(f"[{m}] " for m in markers(h))
        text = truncate(flags + h.text, None if width is None else max(width - len(head), 10))
        print(f"{paint(f'{h.rank:>2}.', 'rank')} {paint(h.occurred_at.date().isoformat(), 'date')}  "
              f"{paint(h.speaker or h.role, 'speaker')}  "
              + (paint(text[:len(flags)], "warn") + text[len(flags):] if flags else text))
        reason = truncate(f"why: {why(h, hits, query)}", None if width is None else max(width - 4, 10))
        print(f"    {paint(reason, 'why')}")
        if args.verbose:
            where = f"{h.conversation_id}/{h.turn_id}" if h.turn_id else h.conversation_id
            print(paint(f"    turn {where} · memory {h.memory_id} · events "
                        f"{', '.join(h.provenance.get('event_ids', ()))}", "id"))
            if h.terms:
                print("    terms " + ", ".join(f"{k}={v:.4f}" for k, v in h.terms.items()))
            print("    score " + ", ".join(f"{k}={v}" for k, v in h.breakdown.items()))
    if (line := more(hidden, "-k")) is not None:
        print(line)


def print_search(hits, args: argparse.Namespace, mem=None) -> None:
    """``palimpsest search``: the hits (:func:`print_hits`) and how many rank below them, or that there are none."""
    if not hits:
        print(f"no memories for tenant {args.tenant!r}, user {args.user!r}")
        return
    print_hits(hits, args.query, args, 0 if mem is None else hidden_below(mem, args, len(hits)))


def hidden_below(mem, args: argparse.Namespace, shown: int) -> int:
    """How many of the user's memories in the search's scope rank below the ``shown`` hits (0 unless the list
    was cut at ``-k``)."""
    if shown < args.k:
        return 0
    counts = mem.user_stats(tenant=args.tenant, user_id=args.user, conversation_id=None)
    total = {"active": counts["messages"] - counts["archived"], "archive": counts["archived"],
             "all": counts["messages"]}[args.scope]
    return max(total - shown, 0)


def print_context(ctx, args: argparse.Namespace) -> None:
    """The context's text as the prompt gets it, then its size and where each line came from."""
    print(ctx.text)
    print(paint(f"\n-- {len(ctx.items)} items, {ctx.tokens}/{ctx.budget} tokens; provenance:", "dim"))
    for item in ctx.items:
        print(paint(f"   {item.turn_id or '-'} ← {item.conversation_id} · memory {item.memory_id}", "dim"))
