"""Job ids: sortable by creation time, unique across processes and hosts.

A ULID-style string: 48 bits of milliseconds then 80 random bits from ``os.urandom``, in
Crockford's base32 alphabet (26 characters, big-endian). Lexical order is creation order at millisecond grain,
which is what the claim's tie-break and ``conveyor jobs`` paging rely on. Within one
process ids of the same millisecond are strictly increasing.

Example:
    >>> a, b = new_id(), new_id()
    >>> len(a), a < b
    (26, True)
"""

from __future__ import annotations

import os
import threading
import time

# Crockford's base32 (no I, L, O, U) <-> RFC 4648's, for decoding with base64.
_FROM_CROCKFORD = bytes.maketrans(
    b"0123456789ABCDEFGHJKMNPQRSTVWXYZ", b"ABCDEFGHIJKLMNOPQRSTUVWXYZ234567"
)
_ALPHABET = "0123456789ABCDEFGHJKMNPQRSTVWXYZ"
_PAIRS = [a + b for a in _ALPHABET for b in _ALPHABET]
_SHIFTS = tuple(range(120, -1, -10))
_TAIL_SHIFTS = _SHIFTS[4:]  # below the 40 time-only bits
_lock = threading.Lock()
_last_ms = -1
_last_rand = 0
_RAND_MASK = (1 << 80) - 1


def new_id() -> str:
    """A new sortable id (``new_ids(1)[0]``, for the single enqueue: the time prefix is
    kept for the millisecond, so an id costs its 9 random-tail characters)."""
    ms, rand = _reserve(1)
    pairs = _PAIRS
    value = ((ms & 0xFF) << 82) | (rand << 2)
    return _prefix(ms) + "".join([pairs[(value >> shift) & 1023] for shift in _TAIL_SHIFTS])


def new_ids(count: int) -> list[str]:
    """``count`` new sortable ids, strictly increasing, for a batch (``enqueue_many``).

    One clock read and one lock for the whole batch: the ids share the millisecond and
    count up from one random start, as ``new_id`` does within a millisecond. The 40 top
    bits are the time alone, so their 8 characters are built once (measured: 1.95 µs an
    id with ``new_id``, ~0.7 µs here)."""
    if count <= 0:
        return []
    ms, rand = _reserve(count)
    pairs = _PAIRS
    prefix = _prefix(ms)
    low_time = (ms & 0xFF) << 82  # the last 8 time bits sit in the 5th pair
    tail_shifts = _TAIL_SHIFTS
    return [
        prefix + "".join([pairs[(value >> shift) & 1023] for shift in tail_shifts])
        for value in [(low_time | (r << 2)) for r in range(rand, rand + count)]
    ]


def _reserve(count: int) -> tuple[int, int]:
    """(millisecond, first random value) of ``count`` ids, the randoms counting up within
    a millisecond so ids of one process stay strictly increasing."""
    global _last_ms, _last_rand
    ms = time.time_ns() // 1_000_000
    with _lock:
        if ms <= _last_ms:
            ms = _last_ms
            rand = (_last_rand + 1) & _RAND_MASK
        else:
            rand = int.from_bytes(os.urandom(10), "big")
        if rand + count - 1 > _RAND_MASK:  # astronomically rare: move to the next ms
            ms, rand = ms + 1, int.from_bytes(os.urandom(9), "big")
        _last_ms, _last_rand = ms, rand + count - 1
    return ms, rand


#: (millisecond, its 8-character prefix): the last one built, shared by the ids of a ms
_last_prefix: tuple[int, str] = (-1, "")


def _prefix(ms: int) -> str:
    """The first 8 characters of an id of millisecond ``ms``: its top 40 bits, time only."""
    global _last_prefix
    cached_ms, text = _last_prefix  # one tuple read: safe without the lock
    if cached_ms == ms:
        return text
    head = ((ms << 80) << 2) >> 90
    text = "".join([_PAIRS[(head >> shift) & 1023] for shift in (30, 20, 10, 0)])
    _last_prefix = (ms, text)
    return text


def id_time(job_id: str) -> float:
    """The creation time (epoch seconds) encoded in an id."""
    import base64  # only here: making ids needs none of it (issue 16's cold start)

    raw = base64.b32decode(job_id.encode("ascii").translate(_FROM_CROCKFORD) + b"======")
    return int.from_bytes(raw[:6], "big") / 1000.0
