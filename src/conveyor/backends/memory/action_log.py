"""The operator actions log of the memory store: a bounded deque in the store.

A mixin of :class:`~conveyor.backends.memory.backend.MemoryBackend` (feature
``action_log``). Like Redis it keeps the newest
:data:`~conveyor.backends.protocols.ACTION_LOG_CAP` entries; ids are a counter, so
they order entries as the SQL stores' do. Gone with the process, like its jobs.

Example:
    >>> from conveyor.backends.memory.backend import MemoryBackend
    >>> from conveyor.backends.base import ActionLogListParams, action_log_entry
    >>> b = MemoryBackend("memory://")
    >>> b.action_log_insert(action_log_entry("ada", "dashboard", "queue_pause", detail="mail"))
    '1'
    >>> [(r.actor, r.action, r.detail) for r in b.action_log_list(ActionLogListParams())]
    [('ada', 'queue_pause', 'mail')]
"""

from __future__ import annotations

from conveyor.backends.base import ActionLogInsertParams, ActionLogListParams, ActionLogRecord
from conveyor.backends.memory.store import MemoryStore


class MemoryActionLog:
    """``action_log_insert`` and ``action_log_list`` under the store's lock."""

    store: MemoryStore

    def action_log_insert(self, params: ActionLogInsertParams) -> str:
        # Under the lock only: nothing waits for an operator action, so no wake-up.
        with self.store.lock:
            self.store.action_seq += 1
            entry = ActionLogRecord(
                id=str(self.store.action_seq),
                at=params.at,
                actor=params.actor,
                source=params.source,
                action=params.action,
                count=params.count,
                job_ids=tuple(params.job_ids),
                detail=params.detail,
                host=params.host,
            )
            self.store.actions.append(entry)
            return entry.id

    def action_log_list(self, params: ActionLogListParams) -> list[ActionLogRecord]:
        before = params.before_id
        if before is not None and not before.isdigit():
            return []
        bound = int(before) if before is not None else None
        out: list[ActionLogRecord] = []
        with self.store.lock:
            for entry in reversed(self.store.actions):
                if len(out) >= params.limit:
                    break
                if bound is None or int(entry.id) < bound:
                    out.append(entry)
        return out
