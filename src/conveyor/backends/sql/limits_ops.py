"""Limits changed while running, on any SQL store: ``limit_list`` (every declared key,
its override and its running jobs) and ``limit_override`` (an operator's values in
``limit_overrides``, set or removed). The claim reads the overrides with the keys' rows
(:func:`conveyor.backends.sql.limits.apply_limits`), so a change is obeyed by every
worker's next claim. A mixin of :class:`~conveyor.backends.sql.ops.SqlOperations`.

Example::

    backend.limit_override(LimitOverrideParams("api", (3, 10, 1.0)))
    [r.in_force for r in backend.limit_list()]   # [(3, 10, 1.0)]
"""

from __future__ import annotations

from conveyor.backends.base import LimitOverrideParams, LimitRecord
from conveyor.backends.sql.store import SqlStore

_UPSERT_COLUMNS = ["concurrency", "rate_count", "rate_period"]


def _int(value: object) -> int | None:
    return None if value is None else int(str(value))


def _float(value: object) -> float | None:
    return None if value is None else float(str(value))


class SqlLimitOps(SqlStore):
    """``limit_list`` and ``limit_override``, written once for the SQL stores."""

    def limit_list(self) -> list[LimitRecord]:
        d = self._dialect
        code = self._ops_rows(
            d.sql('SELECT "key", concurrency, rate_count, rate_period FROM limits ORDER BY "key"')
        )
        overrides = {
            str(r[0]): (_int(r[1]), _int(r[2]), _float(r[3]))
            for r in self._ops_rows(
                d.sql('SELECT "key", concurrency, rate_count, rate_period FROM limit_overrides')
            )
        }
        running = {
            str(r[0]): int(r[1])
            for r in self._ops_rows(
                d.sql(
                    "SELECT limit_key, count(*) FROM jobs WHERE state = 'running' "
                    "AND limit_key IS NOT NULL GROUP BY limit_key"
                )
            )
        }
        return [
            LimitRecord(
                str(k), _int(c), _int(n), _float(p), overrides.get(str(k)), running.get(str(k), 0)
            )
            for k, c, n, p in code
        ]

    def limit_override(self, params: LimitOverrideParams) -> None:
        d = self._dialect
        with self._ops_tx() as ex:
            if params.values is None:
                ex.execute(d.sql('DELETE FROM limit_overrides WHERE "key" = ?'), (params.key,))
                return
            ex.execute(
                d.sql(
                    'INSERT INTO limit_overrides ("key", concurrency, rate_count, rate_period) '
                    "VALUES (?, ?, ?, ?)" + d.upsert('"key"', _UPSERT_COLUMNS)
                ),
                (params.key, *params.values),
            )
