"""Episode titles and summaries written by a language model, recorded as ``episode_titled`` events.

One call per episode (``purpose="episode_title"``). The model answers
``{"title", "summary"}`` in the conversation's language; the answer is
tidied, never rewritten: the title is cut to :data:`MAX_TITLE_WORDS` words
(:data:`MAX_TITLE_CHARS` characters for text written without spaces, such as
Chinese) and the summary to its first :data:`MAX_SUMMARY_SENTENCES` sentences.

No event when the call failed, the title is empty, or it is not in the
conversation's language (an English title for a Chinese conversation): the
extractive summary of :mod:`projections.queries.summaries` stays, and the call
record says what happened.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from actors.decision import new_event_id
from actors.llm.client import LlmResult, StructuredLlm
from actors.llm.steps import dialogue, llm_decider
from events.errors import InvalidInputError
from events.model import EpisodeTitled, LlmCallRecorded, MessageRecorded
from projections.queries.summaries import language_of, split_sentences
from projections.rules.text import has_cjk

PURPOSE = "episode_title"
MAX_TITLE_WORDS = 12
MAX_TITLE_CHARS = 30  # a title without spaces (Chinese): about 12 words
MAX_SUMMARY_SENTENCES = 2
_TITLE_TRIM = " \t\"'“”‘’「」《》.。!！"

SCHEMA: dict[str, Any] = {
    "title": "EpisodeTitle",
    "type": "object",
    "properties": {"title": {"type": "string"}, "summary": {"type": "string"}},
    "required": ["title", "summary"],
}

INSTRUCTIONS = f"""\
You title one episode of a conversation between a user and an assistant, so it can be found later.
- title: at most {MAX_TITLE_WORDS} words naming what the episode is about.
- summary: at most {MAX_SUMMARY_SENTENCES} sentences saying what was said or decided.
Write both in the language of the conversation (a Chinese conversation gets a Chinese title and summary). \
Reply with {{"title": ..., "summary": ...}} and nothing else."""


def llm_episode_title(
    client: StructuredLlm,
    episode_id: str,
    members: Sequence[tuple[str, MessageRecorded]],
    *,
    new_id: Callable[[], str] = new_event_id,
) -> tuple[tuple[str, LlmCallRecorded], EpisodeTitled | None]:
    """(call record, title event or None) for the episode whose messages are ``members`` (event id, message).

    Raises ``InvalidInputError`` when ``members`` is empty (an episode has messages).
    """
    messages = title_prompt(members)
    call_id = new_id()
    result = client.complete_json(PURPOSE, messages, SCHEMA)
    return (call_id, result.event), title_from_answer(episode_id, members, result, call_id)


def title_prompt(members: Sequence[tuple[str, MessageRecorded]]) -> list[dict[str, str]]:
    """The messages asking for the title of the episode whose messages are ``members`` (event id, message).

    Raises ``InvalidInputError`` when ``members`` is empty (an episode has messages).
    """
    if not members:
        raise InvalidInputError([("members", "empty; pass the episode's (event id, message) pairs")],
                                what="episode to title")
    prompt = f"Episode messages, oldest first:\n{dialogue(members, numbered=False)}"
    return [{"role": "system", "content": INSTRUCTIONS}, {"role": "user", "content": prompt}]


def title_from_answer(
    episode_id: str, members: Sequence[tuple[str, MessageRecorded]], result: LlmResult, call_id: str
) -> EpisodeTitled | None:
    """The title event the answer ``result`` (recorded as ``call_id``) makes, or None; pure: a replayed answer
    gives the same event."""
    if result.parsed is None:
        return None
    language = language_of([message.text for _, message in members])
    title = _title(result.parsed["title"])
    if not title or not _in_language(title, language):
        return None
    return EpisodeTitled(
        episode_id=episode_id, member_ids=tuple(member_id for member_id, _ in members), title=title,
        summary=_summary(result.parsed["summary"], language), titler=llm_decider(result.event), llm_call_id=call_id,
    )


def _title(raw: str) -> str:
    title = " ".join(raw.split()).strip(_TITLE_TRIM)
    title = " ".join(title.split(" ")[:MAX_TITLE_WORDS])
    return title[:MAX_TITLE_CHARS].rstrip() if has_cjk(title) else title


def _summary(raw: str, language: str) -> str:
    sentences = split_sentences(raw)[:MAX_SUMMARY_SENTENCES]
    return ("" if language == "zh" else " ").join(sentences)


def _in_language(title: str, language: str) -> bool:
    """A Chinese conversation's title has Chinese in it; an English one's is mostly Latin script."""
    return has_cjk(title) if language == "zh" else language_of([title]) == "en"
