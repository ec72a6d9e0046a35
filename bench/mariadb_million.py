"""A MariaDB store of ``--jobs`` jobs in about a minute and a half (BENCHMARKS.md,
"MariaDB's capped counts"): the schema made by the backend, then the rows written
straight into ``jobs`` by ``INSERT ... SELECT`` from MariaDB's sequence engine
(``seq_1_to_N``), 100,000 a statement, where enqueueing builds ~450 jobs/s under load.
8 queues, 3 priorities, 5 tasks; half queued, 35% succeeded, 5% each dead and scheduled,
2.5% each running and cancelled. Not part of ``make test``.

``python -m bench.mariadb_million --url mariadb://user:pass@host:port/million [--jobs N]``
(the database is created if missing; it should be empty)
"""

from __future__ import annotations

import argparse
import time

import pymysql

from conveyor.backends.mariadb.backend import MariaDBBackend

_STATES = ["queued"] * 10 + ["succeeded"] * 7 + ["dead", "scheduled"]
_ROWS = """
INSERT INTO jobs (id, task, queue, state, priority, payload, max_attempts, run_at,
                  created_at, lease, worker_id, started_at, finished_at, attempt)
SELECT LPAD(seq, 26, '0'), CONCAT('shop.task', seq % 5), CONCAT('q', seq % 8),
       ELT(1 + seq % 20, {states}, IF(seq % 40 = 19, 'running', 'cancelled')),
       seq % 3, '{{"args": [], "kwargs": {{}}}}', 3,
       @t0 + seq * 0.0864 + IF(seq % 20 = 18, 90000, 0), @t0 + seq * 0.0864, 60,
       IF(seq % 40 = 19, 'w1', NULL),
       IF(seq % 20 >= 10 AND seq % 20 != 18, @t0 + seq * 0.0864, NULL),
       IF(seq % 20 >= 10 AND seq % 20 != 18 AND seq % 40 != 19, @t0 + seq * 0.0864 + 1, NULL),
       IF(seq % 20 >= 10 AND seq % 20 != 18, 1, 0)
FROM seq_{lo}_to_{hi}
"""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--url", required=True)
    parser.add_argument("--jobs", type=int, default=1_000_000)
    args = parser.parse_args()
    backend = MariaDBBackend(args.url)  # creates the schema
    t = backend.target
    backend.close()
    conn = pymysql.connect(
        host=t.host, port=t.port, user=t.user, password=t.password, database=t.database,
        autocommit=True,
    )  # fmt: skip
    cur = conn.cursor()
    cur.execute("SET @t0 = UNIX_TIMESTAMP() - 86400")
    states = ", ".join(f"'{s}'" for s in _STATES)
    start = time.monotonic()
    for lo in range(1, args.jobs + 1, 100_000):
        hi = min(lo + 99_999, args.jobs)
        cur.execute(_ROWS.format(states=states, lo=lo, hi=hi))
        print(f"{hi:,} rows, {time.monotonic() - start:.1f} s", flush=True)
    cur.execute("ANALYZE TABLE jobs")
    cur.execute("SELECT state, COUNT(*) FROM jobs GROUP BY state")
    print(dict(cur.fetchall()))


if __name__ == "__main__":
    main()
