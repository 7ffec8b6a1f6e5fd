"""Sealing a large blob of one user (a snapshot of its projections) under that user's data key.

The same keys as the user's log payloads (:class:`events.keystore.KeyStore`), so forgetting the user
(destroying its keys) leaves its blobs unreadable too, wherever a copy of them went. AES-GCM takes at most
2**31 - 1 bytes per call and a snapshot may be larger, so the blob is sealed in chunks of :data:`CHUNK`
bytes, each ``nonce (12) | AES-GCM(chunk) with its 16-byte tag``; each chunk's associated data holds the
caller's ``context``, the chunk's index and whether it is the last, so chunks cannot be reordered, dropped,
cut short or moved to another blob, user or generation without failing to open.
"""

from __future__ import annotations

import os

from cryptography.exceptions import InvalidTag

from events.errors import StoreError
from events.keystore import NONCE_BYTES, KeyStore

CHUNK = 16 * 1024 * 1024
TAG_BYTES = 16
Stream = tuple[str, str]


def _aad(stream: Stream, gen: int, context: bytes, index: int, last: bool) -> bytes:
    return b"\x1f".join([b"blob", stream[0].encode(), stream[1].encode(), str(gen).encode(), context,
                         str(index).encode(), b"last" if last else b"more"])


def seal_blob(keys: KeyStore, stream: Stream, plain: bytes, context: bytes) -> tuple[int, bytes] | None:
    """``plain`` sealed under the user's current key: ``(generation, sealed bytes)``; ``None`` when the user has
    no live key (it was forgotten, or has nothing sealed): no key is created for a blob."""
    gen = keys.current(stream)
    if gen is None:
        return None
    aead = keys.key(stream, gen)
    view = memoryview(plain)
    starts = range(0, max(len(plain), 1), CHUNK)
    parts = []
    for i, start in enumerate(starts):
        nonce = os.urandom(NONCE_BYTES)
        parts += [nonce, aead.encrypt(nonce, view[start:start + CHUNK], _aad(stream, gen, context, i,
                                                                           i == len(starts) - 1))]
    return gen, b"".join(parts)


def open_blob(keys: KeyStore, stream: Stream, gen: int, sealed: bytes, context: bytes) -> bytes | None:
    """The plain blob; ``None`` when the key of ``gen`` was destroyed (the user was forgotten). A blob that was
    altered, cut or moved raises :class:`StoreError`."""
    aead = keys.key(stream, gen)
    if aead is None:
        return None
    step = NONCE_BYTES + CHUNK + TAG_BYTES
    view = memoryview(sealed)
    starts = range(0, max(len(sealed), 1), step)
    try:
        parts = [aead.decrypt(view[start:start + NONCE_BYTES], view[start + NONCE_BYTES:start + step],
                              _aad(stream, gen, context, i, i == len(starts) - 1)) for i, start in enumerate(starts)]
    except (InvalidTag, ValueError):
        raise StoreError(f"a sealed blob of {stream} does not open under its key: it was altered, cut short or "
                         "moved") from None
    return parts[0] if len(parts) == 1 else b"".join(parts)
