"""Weighted queue order (conveyor.worker.queues): the law of the draw, and its cost on
many queues (a claim on 5,000 queues must not pay an O(n^2) draw: bench W7)."""

from __future__ import annotations

import random
import time

from conveyor.worker.queues import QueueSelection


def test_weights_decide_which_queue_is_asked_first() -> None:
    random.seed(26)
    sel = QueueSelection.parse(["high:3", "low:1"])
    firsts = [sel.allocate(1)[0] for _ in range(20_000)]
    high = sum(1 for name, share in firsts if name == "high" and share == 1) / len(firsts)
    assert 0.73 < high < 0.77, high  # 3 / (3 + 1)


def test_every_queue_is_in_the_order_once_and_the_slots_add_up() -> None:
    sel = QueueSelection.parse([f"t{k}" for k in range(50)] + ["big:5"])
    shares = sel.allocate(12)
    assert sorted(name for name, _ in shares) == sorted(sel.names)
    assert sum(share for _, share in shares) == 12


def test_an_order_over_5000_queues_is_linear_time_not_quadratic() -> None:
    sel = QueueSelection.parse([f"t{k}" for k in range(4_999)] + ["vip:2"])
    start = time.perf_counter()
    for _ in range(10):
        sel.allocate(10)
    # The draw-one-at-a-time order took ~1 s per call here; the sort takes ~5 ms.
    assert (time.perf_counter() - start) / 10 < 0.1


def test_many_equal_queues_are_one_ring_built_once_and_cheap_per_claim() -> None:
    import doctest

    from conveyor.backends import queue_ring
    from conveyor.worker import queues

    assert doctest.testmod(queue_ring).failed == 0
    assert doctest.testmod(queues).failed == 0
    sel = QueueSelection.parse([f"t{k}" for k in range(10_000)])
    ring = sel.allocate(20)
    assert isinstance(ring, queue_ring.QueueRing) and len(ring) == 10_000
    start = time.perf_counter()
    for _ in range(1000):
        assert sel.allocate(20) is ring
    # The shuffle of 10,000 names took ~10 ms a claim (bench W7): now O(1).
    assert (time.perf_counter() - start) / 1000 < 0.001
    # Fewer queues than slots, or weights that differ: the per-queue shares, as before.
    assert [s for _, s in QueueSelection.parse(["a", "b"]).allocate(8)] == [4, 4]
    assert not isinstance(QueueSelection.parse(["a:2", "b", "c"]).allocate(1), queue_ring.QueueRing)


def test_a_ring_chunk_is_the_same_names_as_json() -> None:
    import json

    from conveyor.backends.queue_ring import QueueRing, chunk_sizes

    ring = QueueRing(["a", 'b"q', "c", "dé", "e"])
    for start in range(5):
        ring.start = start
        order = [name for name, _ in ring]
        assert order == [*ring.names[start:], *ring.names[:start]]
        for at, size in [(0, 2), (1, 3), (3, 9), (4, 1)]:
            assert ring.chunk(at, size) == order[at : at + size]
            assert json.loads(ring.chunk_json(at, size)) == order[at : at + size]
    assert sum(size for _, size in chunk_sizes(20, 10_000)) == 10_000
    assert len(list(chunk_sizes(20, 10_000))) == 5
