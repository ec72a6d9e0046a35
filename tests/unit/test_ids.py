"""Batch ids: the same format and order as ``new_id``, strictly increasing."""

from __future__ import annotations

import time

from conveyor import ids
from conveyor.ids import id_time, new_id, new_ids


def _reference(ms: int, rand: int) -> str:
    value = ((ms << 80) | rand) << 2
    return "".join(ids._PAIRS[(value >> s) & 1023] for s in ids._SHIFTS)


def test_new_ids_are_new_id_strings_in_order() -> None:
    before = new_id()
    batch = new_ids(500)
    after = new_id()
    assert before < batch[0] and batch == sorted(batch) and batch[-1] < after
    assert len(set(batch)) == 500 and all(len(i) == 26 for i in batch)
    ms, last = ids._last_ms, ids._last_rand
    assert new_ids(3) == [
        _reference(ids._last_ms, r) for r in range(ids._last_rand - 2, ids._last_rand + 1)
    ]
    assert ms <= ids._last_ms and last != ids._last_rand
    assert abs(id_time(batch[0]) - time.time()) < 5
    assert new_ids(0) == []
