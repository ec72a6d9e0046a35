"""The Redis claim over a worker's many queues (:mod:`conveyor.backends.queue_ring`).

``job_claim.lua`` in ring mode takes the first job of each non-empty, unpaused queue of
one chunk of the ring's names (ARGV, its ready keys derived under the hash-tagged
prefix), so a claim costs its chunk, not every queue's key in KEYS. The first chunk
rides with the claim's own call (and the finishes pipelined before it); :func:`walk`
sends the next chunks while the claim is not full, tops up from the queues that gave a
job with one plain call, and moves the ring on past the last queue served.

Example::

    keys, args = claim_args(base_keys, params, ring)   # the first chunk's call
    rows = walk(call, base_keys, keys_for, params, ring, json.loads(reply))
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from conveyor.backends.base import JobClaimParams
from conveyor.backends.queue_ring import QueueRing, chunk_sizes

#: ARGV[4] of a ring-mode job_claim call.
RING = "*ring"

Call = Callable[[list[str], list[str | int]], Any]


def claim_args(params: JobClaimParams, ring: QueueRing, promote: int) -> list[str | int]:
    """The ARGV of the ring's first chunk (:func:`walk` sends the rest)."""
    at, size = next(chunk_sizes(params.total, len(ring)))
    return [params.worker_id, params.total, promote, RING, *ring.chunk(at, size)]


def walk(
    call: Call,
    base_keys: list[str],
    ready_key: Callable[[str], str],
    params: JobClaimParams,
    ring: QueueRing,
    rows: list[Any],
) -> list[Any]:
    """The claim's rows after its first chunk's ``rows``: the next chunks while the claim
    is not full, then a top-up from the queues that gave a job (row[2] is the queue)."""
    total, worker = params.total, params.worker_id
    chunks = chunk_sizes(total, len(ring))
    next(chunks)  # sent with the claim's own call
    for at, size in chunks:
        if len(rows) >= total:
            break
        _, reply = call(base_keys, [worker, total - len(rows), 0, RING, *ring.chunk(at, size)])
        rows += json.loads(reply)
    served = sorted({str(r[2]) for r in rows}, key=ring.position)
    want = total - len(rows)
    if served and want > 0:
        keys = base_keys + [ready_key(q) for q in served]
        _, reply = call(keys, [worker, want, 0, *([want] * len(served))])
        rows += json.loads(reply)
    if served:
        ring.resume(served[-1])
    return rows
