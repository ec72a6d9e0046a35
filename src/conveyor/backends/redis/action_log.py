"""The operator actions log on Redis: one capped stream, ``{prefix}:actions``.

A mixin of :class:`~conveyor.backends.redis.backend.RedisBackend` (feature
``action_log``), apart from the job scripts. ``XADD ... MAXLEN ~ ACTION_LOG_CAP``
keeps about the newest :data:`~conveyor.backends.protocols.ACTION_LOG_CAP` entries
(weaker than the SQL stores, which keep all: an older entry may be trimmed). An entry's
id is its stream id (``<ms>-<seq>``); paging reads ``XREVRANGE`` below the previous
page's last id, computed here rather than with ``(id`` so it works before Redis 6.2.

Example (needs a server; the test suite starts one)::

    backend.action_log_insert(action_log_entry("ada", "cli", "retry", count=1))
    # '1733568000000-0'
"""

from __future__ import annotations

import json
import re
from typing import Any

from conveyor.backends.base import (
    ACTION_LOG_CAP,
    ActionLogInsertParams,
    ActionLogListParams,
    ActionLogRecord,
)
from conveyor.backends.redis.connection import Unavailable
from conveyor.backends.redis.keys import Keys

_STREAM_ID = re.compile(r"(\d{1,20})-(\d{1,20})")
_MAX_SEQ = 2**64 - 1


def actions_key(keys: Keys) -> str:
    """The stream's name, under the store's prefix and hash tag.

    >>> actions_key(Keys("conveyor"))
    '{conveyor}:actions'
    """
    return keys.base + "actions"


def just_below(stream_id: str) -> str | None:
    """The greatest stream id below ``stream_id`` (None: nothing can be older).

    >>> just_below("5-3"), just_below("5-0"), just_below("0-0"), just_below("x")
    ('5-2', '4-18446744073709551615', None, None)
    """
    found = _STREAM_ID.fullmatch(stream_id)
    if found is None:
        return None
    ms, seq = int(found.group(1)), int(found.group(2))
    if seq > 0:
        return f"{ms}-{seq - 1}"
    return f"{ms - 1}-{_MAX_SEQ}" if ms > 0 else None


class RedisActionLog:
    """``action_log_insert`` and ``action_log_list`` on the backend's client."""

    keys: Keys
    _client: Any
    _guard: Unavailable

    def action_log_insert(self, params: ActionLogInsertParams) -> str:
        fields = {
            "at": repr(params.at),
            "actor": params.actor,
            "source": params.source,
            "action": params.action,
            "count": str(params.count),
            "job_ids": json.dumps(list(params.job_ids)),
            "detail": params.detail,
            "host": params.host,
        }
        with self._guard:
            found = self._client.xadd(
                actions_key(self.keys), fields, maxlen=ACTION_LOG_CAP, approximate=True
            )
        return str(found)

    def action_log_list(self, params: ActionLogListParams) -> list[ActionLogRecord]:
        top = "+" if params.before_id is None else just_below(params.before_id)
        if top is None or params.limit <= 0:
            return []
        with self._guard:
            entries = self._client.xrevrange(
                actions_key(self.keys), max=top, min="-", count=params.limit
            )
        return [_record(str(entry_id), fields) for entry_id, fields in entries]


def _record(entry_id: str, fields: dict[str, str]) -> ActionLogRecord:
    return ActionLogRecord(
        id=entry_id,
        at=float(fields.get("at", "0")),
        actor=fields.get("actor", ""),
        source=fields.get("source", ""),
        action=fields.get("action", ""),
        count=int(fields.get("count", "0")),
        job_ids=tuple(str(i) for i in json.loads(fields.get("job_ids", "[]"))),
        detail=fields.get("detail", ""),
        host=fields.get("host", ""),
    )
