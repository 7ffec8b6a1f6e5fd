"""Three sessions of one user through the OpenAI-compatible memory proxy alone (the official ``openai`` client, the
scripted upstream), in English and in Chinese: a preference stated in session 1 is in the memory injected in
session 3; a correction in session 2 supersedes what session 1 said (the current value is injected, the old one
is not); and when the user tells the proxy's reply in session 3 it was wrong, the learning loop's adjustment shows
in ``explain`` for the memories the proxy had injected for that reply."""

from __future__ import annotations

import json
import re

import httpx
import pytest

pytest.importorskip("openai")

from openai import OpenAI  # noqa: E402

from palimpsest.server.proxy_record import GIVEN  # noqa: E402
from palimpsest.server.routes_proxy import CONTEXT_HEADER, CONVERSATION_HEADER, USER_HEADER  # noqa: E402
from projections.queries.context import NOTE_HEADER  # noqa: E402
from tests.fakes.openai_server import Reply  # noqa: E402
from tests.integration.proxy_server import TENANT, shared_bench  # noqa: E402

pytestmark = pytest.mark.integration

SESSIONS = {
    "en": {
        "s1": ["I prefer window seats on long flights.", "I like coffee in the morning."],
        "s2": ["I switched from coffee to green tea."],
        "s3": "What should I drink tomorrow morning, and which seat should I book?",
        "wrong": "Coffee, and a window seat.",
        "objection": "No, that's wrong, I said I don't drink coffee anymore.",
        # what the notes say: kept from session 1, superseded in session 2, its successor
        "kept": "window seats", "old": "likes coffee", "current": "green tea",
    },
    "zh": {
        "s1": ["坐长途飞机时我喜欢靠窗的座位。", "我喜欢喝咖啡。"],
        "s2": ["我把咖啡换成了绿茶。"],
        "s3": "明天早上我该喝什么？订机票选什么座位？",
        "wrong": "喝咖啡，选靠窗的座位。",
        "objection": "不对，你说错了，我已经不喝咖啡了。",
        "kept": "靠窗的座位", "old": "用户喜欢喝咖啡", "current": "绿茶",
    },
}


@pytest.fixture(scope="module")
def b(ray_cluster, tmp_path_factory, request):
    return shared_bench(request, tmp_path_factory)  # test_proxy.py's users are others


def session(b, user: str, name: str) -> OpenAI:
    return OpenAI(base_url=b.base_url, api_key=b.key, max_retries=0,
                  default_headers={USER_HEADER: user, CONVERSATION_HEADER: name})


def chat(client: OpenAI, turns: list[str], replies: list[str]) -> list[dict]:
    """Say ``turns`` one after another in one session, each call with the history so far, as a chat client does."""
    history: list[dict] = []
    for text in turns:
        history.append({"role": "user", "content": text})
        answer = client.chat.completions.create(model="gpt-test", messages=history)
        history.append({"role": "assistant", "content": answer.choices[0].message.content})
        replies.append(answer.choices[0].message.content)
    return history


DAY_HEADER = re.compile(r"^\[\d{4}-\d{2}-\d{2}\]$")


def note_lines(system: str) -> list[str]:
    """The notes of a context's text: the lines under a category's header, up to the first day's header."""
    lines, under = [], False
    for line in system.splitlines():
        if NOTE_HEADER.match(line) or DAY_HEADER.match(line):
            under = bool(NOTE_HEADER.match(line))
        elif under:
            lines.append(line)
    return lines


@pytest.mark.parametrize("language", sorted(SESSIONS))
def test_three_sessions_through_the_proxy_alone(b, language):
    plan, user, replies = SESSIONS[language], f"traveller-{language}", []
    chat(session(b, user, "s1"), plan["s1"], replies)
    chat(session(b, user, "s2"), plan["s2"], replies)
    b.conversation(user, "s2", 2)  # session 2 recorded before session 3 starts

    third = session(b, user, "s3")
    b.upstream.script(Reply.text(plan["wrong"]))
    history = chat(third, [plan["s3"]], replies)
    system = [m["content"] for m in b.sent() if m["role"] == "system"]
    assert len(system) == 1 and system[0].startswith(CONTEXT_HEADER)
    notes = note_lines(system[0])
    assert plan["kept"] in system[0]  # said in session 1, given in session 3 (its note, or the turn that says it all)
    assert any(plan["current"] in line for line in notes), system[0]  # the correction of session 2 ...
    assert not any(plan["old"] in line for line in notes), system[0]  # ... in place of what session 1 said
    stored = {n["text"]: n["status"] for n in b.memory.notes(TENANT, user, include_inactive=True)}
    assert [s for t, s in stored.items() if plan["old"] in t] == ["superseded"], stored

    # the user objects to the reply: the proxy has the Feedback Judge judge it against the memories it gave
    b.upstream.script(Reply.text("Sorry, I got that wrong."))
    third.chat.completions.create(model="gpt-test", messages=[*history, {"role": "user", "content": plan["objection"]}])
    rows = b.conversation(user, "s3", 4)
    given = json.loads(rows[1]["metadata"][GIVEN])
    assert given and rows[1]["text"] == plan["wrong"]
    [signal] = [s for s in b.memory.feedback(TENANT, user) if s["type"] == "negative"]
    assert signal["memory_ids"] == given and signal["query"] == plan["s3"]  # judged against what it was given
    with httpx.Client(base_url=b.running.url, headers={"authorization": f"Bearer {b.key}"}, timeout=60) as http:
        explained = {m: http.get(f"/v1/users/{user}/explain/{m}").json() for m in given}
    penalised = {m: [a for a in e["adjustments"] if a["action"] == "penalty"] for m, e in explained.items()}
    assert any(penalised.values()), explained  # the learning loop's adjustment, shown where it applies
    for m, adjustments in penalised.items():
        for a in adjustments:
            assert m in a["target_ids"]  # with the turns the given notes were drawn from
            assert "negative feedback" in a["reason"] and signal["event_id"] in a["signal_ids"]
