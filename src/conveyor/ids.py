"""Job ids: sortable by creation time, unique across processes and hosts.

A ULID-style string: 48 bits of milliseconds then 80 random bits from ``os.urandom``, in
Crockford base32 (26 characters). Lexical order is creation order at millisecond grain,
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

_ALPHABET = "0123456789ABCDEFGHJKMNPQRSTVWXYZ"
_lock = threading.Lock()
_last_ms = -1
_last_rand = 0
_RAND_BITS = 80


def new_id() -> str:
    """A new sortable id."""
    global _last_ms, _last_rand
    ms = time.time_ns() // 1_000_000
    with _lock:
        if ms <= _last_ms:
            # Same (or a clock step back): keep order by incrementing the random part.
            ms = _last_ms
            rand = (_last_rand + 1) & ((1 << _RAND_BITS) - 1)
        else:
            rand = int.from_bytes(os.urandom(10), "big")
        _last_ms, _last_rand = ms, rand
    value = (ms << _RAND_BITS) | rand
    chars = []
    for _ in range(26):
        chars.append(_ALPHABET[value & 31])
        value >>= 5
    return "".join(reversed(chars))


def id_time(job_id: str) -> float:
    """The creation time (epoch seconds) encoded in an id."""
    value = 0
    for ch in job_id[:10]:
        value = value * 32 + _ALPHABET.index(ch)
    # 26 chars carry 130 bits for 128: the first 10 chars are 2 zero bits + 48 bits of ms.
    return value / 1000.0
