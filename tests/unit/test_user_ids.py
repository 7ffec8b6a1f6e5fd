"""Tenant and user ids are Unicode-normalised (NFC) at the boundary (issue 41): "josé" typed with a precomposed
é or with e + a combining accent is one user, in messages, reads, commands and routing; Chinese and Korean ids
too. A forget keeps the form it is given (an older store may hold the other one)."""

from __future__ import annotations

import unicodedata
from datetime import UTC, datetime

import pytest

from actors import commands as c
from actors.core import ShardCore
from actors.spec import ShardSpec
from events.commands import canonical_id, check_stream, validate_messages
from events.errors import InvalidInputError
from projections.adapters.embedding import HashEmbedder
from tests.builders import command
from tests.shard_helpers import record, search

NFC, NFD = unicodedata.normalize("NFC", "josé"), unicodedata.normalize("NFD", "josé")
HANGUL_NFD = unicodedata.normalize("NFD", "한국")  # jamo, as some keyboards and file systems give it
ACME_NFD = unicodedata.normalize("NFD", "acmé")


def test_the_two_forms_differ_as_text_and_are_one_id():
    assert NFC != NFD and len(NFD) == len(NFC) + 1
    assert canonical_id(NFD) == canonical_id(NFC) == NFC
    assert canonical_id(HANGUL_NFD) == "한국" and canonical_id("张伟") == "张伟"
    assert canonical_id(None) is None and canonical_id(3) == 3  # left to the id check, which names them


def test_messages_reads_and_commands_carry_the_canonical_form():
    [m] = validate_messages([command("hola", tenant=ACME_NFD, user_id=NFD)])
    assert (m.tenant, m.user_id) == ("acmé", NFC)
    assert check_stream(ACME_NFD, HANGUL_NFD, what="search") == ("acmé", "한국")
    q = c.Search(tenant=ACME_NFD, user_id=NFD, query="x", query_vector=HashEmbedder().encode(["x"])[0])
    assert (q.tenant, q.user_id) == ("acmé", NFC)
    assert c.SweepArchive(now=datetime.now(UTC), tenant=ACME_NFD).tenant == "acmé"
    forget = c.ForgetUser(tenant="acme", user_id=NFD, now=datetime.now(UTC))
    assert forget.user_id == NFD  # exactly as given: Memory.forget names each stored form


def test_an_id_that_is_invalid_in_either_form_is_refused_naming_the_field():
    with pytest.raises(InvalidInputError) as err:
        check_stream("acme", "bad\u200bid", what="search")  # a zero-width space: a format character
    assert err.value.problems[0][0] == "user_id" and "format" in err.value.problems[0][1]
    with pytest.raises(InvalidInputError) as err:
        validate_messages([command("hi", user_id=" " + NFD)])
    assert err.value.problems[0][0] == "messages[0].user_id" and "leading or trailing spaces" in str(err.value)


def test_a_shard_keeps_one_user_for_both_forms(tmp_path):
    spec = ShardSpec(index=0, log_path=tmp_path / "log.duckdb", lance_dir=tmp_path / "vectors",
                     model_id=HashEmbedder.model_id, dim=384)
    core = ShardCore(spec)
    try:
        record(core, [command("I keep bees on the roof", 0, user_id=NFD, client_message_id="m1")])
        record(core, [command("我在屋顶上养蜜蜂", 1, user_id=NFC, client_message_id="m2")])
        assert sorted(core.log.streams()) == [("acme", NFC)]
        assert {h.text for h in search(core, "bees roof 蜜蜂", user_id=NFD, k=5)} == {
            "I keep bees on the roof", "我在屋顶上养蜜蜂"}
    finally:
        core.close()
