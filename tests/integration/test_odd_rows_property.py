"""Property tests: any row written straight into a store (raw SQL on a real SQLite
file, raw HSET on the test redis-server), with any column values, ends in a final state
or a clear refusal while a worker keeps serving well-formed jobs; and every CLI listing
and dashboard page renders it.

What "any" means here: every column gets any value its store can hold (SQLite: NULL,
integers, floats with NaN and infinities, text, BLOBs, bytes that are not UTF-8 in a
TEXT column, JSON nested 5,000 deep; Redis: any bytes, or the field absent; PostgreSQL:
any value of the column's type, NaN and infinities in the times, any text without NUL
in the text columns; MariaDB: the same but finite times), except
that the id stays a distinct text (it names the row for the assertions) and NOT NULL
columns hold a value (the store refuses NULL there itself). On Redis the state, task
and queue fields stay text so the test knows which ready set holds the job.
"""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("hypothesis")
pytest.importorskip("starlette")
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import conveyor
from conveyor.states import FINISHED_STATES, JobState
from tests.integration.test_odd_rows import every_listing, write
from tests.support.backends import BACKEND_URLS
from tests.support.odd_rows import new_id

SETTINGS = settings(
    max_examples=20,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
NOT_NULL = frozenset(
    [
        "task",
        "queue",
        "state",
        "priority",
        "payload",
        "attempt",
        "max_attempts",
        "rescues",
        "token",
        "run_at",
        "created_at",
        "lease",
        "cancel_requested",
    ]
)
COLUMNS = (
    "task", "queue", "state", "priority", "payload", "attempt", "max_attempts", "rescues",
    "token", "run_at", "created_at", "timeout", "lease", "worker_id", "lease_until",
    "cancel_requested", "result", "error", "reason", "started_at", "finished_at",
)  # fmt: skip
#: A burst over a few rows takes well under a second; longer is a jam.
BURST_DEADLINE = 15.0
#: The errors a store refuses a row with (nothing written). PyMySQL is the mariadb extra.
REFUSALS: tuple[type[Exception], ...] = (sqlite3.IntegrityError,)
try:
    import pymysql
except ImportError:
    pass
else:
    REFUSALS += (pymysql.err.DataError,)
GOOD_PAYLOAD = '{"args": [1], "kwargs": {}}'


def any_value_strings() -> list[str]:
    """The odd texts every store gets tried with."""
    return [
        "sql:CAST(x'7b22ff' AS TEXT)",  # bytes that are not UTF-8, in a TEXT column
        "[" * 5000 + "]" * 5000,
        '{"type": "E", "message": "\\ud800", "traceback": "\\udfff"}',
        GOOD_PAYLOAD,
        '{"args": "no", "kwargs": []}',
        "x" * 3000,
    ]


any_value = st.one_of(
    st.integers(min_value=-(2**63), max_value=2**63 - 1),
    st.floats(),
    st.text(max_size=30),
    st.binary(max_size=30),
    st.sampled_from(any_value_strings()),
)
states = st.one_of(st.sampled_from([s.value for s in JobState]), st.text(max_size=12))
#: The worker property leaves out running/waiting rows: those wait for a rescue or a
#: parent by design, so a burst worker would rightly not finish them.
worker_states = st.sampled_from(["queued", "queued", "scheduled", "dead", "bogus", "QUEUED"])


def sqlite_columns(state: st.SearchStrategy[str]) -> st.SearchStrategy[dict[str, Any]]:
    value = {c: any_value if c in NOT_NULL else st.one_of(st.none(), any_value) for c in COLUMNS}
    return st.fixed_dictionaries(
        {"state": state, "task": st.sampled_from(["odd.task", "odd.task", "nope"])},
        optional={c: v for c, v in value.items() if c not in ("state", "task")},
    )


def redis_columns(state: st.SearchStrategy[str]) -> st.SearchStrategy[dict[str, Any]]:
    raw = st.one_of(st.binary(max_size=30), st.text(max_size=30).map(str.encode), any_value)
    fields = {c: raw.map(_redis_value) for c in COLUMNS if c not in ("state", "task", "queue")}
    return st.fixed_dictionaries(
        {
            "state": state,
            "task": st.sampled_from(["odd.task", "nope"]),
            "queue": st.just("default"),
        },
        optional=fields,
    )


#: PostgreSQL's column types (backends/postgres/schema.sql); the rest are text.
_PG_INTEGER = frozenset({"priority", "attempt", "max_attempts", "rescues", "cancel_requested"})
_PG_DOUBLE = frozenset(
    {"run_at", "created_at", "timeout", "lease", "lease_until", "started_at", "finished_at"}
)
_pg_text = st.one_of(
    st.text(alphabet=st.characters(blacklist_characters="\x00"), max_size=30),
    st.sampled_from([v for v in any_value_strings() if not v.startswith("sql:")]),
)


def _pg_value(column: str, finite: bool = False) -> st.SearchStrategy[Any]:
    if column in _PG_INTEGER:
        value: st.SearchStrategy[Any] = st.integers(min_value=-(2**31), max_value=2**31 - 1)
    elif column == "token":
        value = st.integers(min_value=-(2**63), max_value=2**63 - 1)
    elif column in _PG_DOUBLE:
        floats = st.floats(allow_nan=not finite, allow_infinity=not finite)
        value = st.one_of(floats, st.integers(min_value=-(2**53), max_value=2**53))
    else:
        value = _pg_text
    return value if column in NOT_NULL else st.one_of(st.none(), value)


def postgres_columns(
    state: st.SearchStrategy[str], finite: bool = False
) -> st.SearchStrategy[dict[str, Any]]:
    """PostgreSQL's column types; ``finite``: MariaDB's, the same but whose DOUBLE holds
    no NaN nor infinity (its VARCHAR(255) columns refuse longer text at the write)."""
    # PostgreSQL's text refuses NUL (the writer would raise, not write an odd row): a
    # drawn state with one is a state with it taken out, as _pg_text does for the rest.
    state = state.map(lambda s: s.replace("\x00", ""))
    return st.fixed_dictionaries(
        {"state": state, "task": st.sampled_from(["odd.task", "odd.task", "nope"])},
        optional={c: _pg_value(c, finite) for c in COLUMNS if c not in ("state", "task")},
    )


def _redis_value(value: Any) -> Any:
    if isinstance(value, str) and value.startswith("sql:"):
        return b'{"\xff'
    if isinstance(value, float):
        return repr(value)
    return value


@pytest.fixture(params=sorted(BACKEND_URLS))
def store(request: pytest.FixtureRequest, tmp_path: Path) -> tuple[str, conveyor.App]:
    url = BACKEND_URLS[request.param](request, tmp_path)
    app = conveyor.App(url, max_payload_bytes=2000)

    @app.task(name="odd.task", max_attempts=2)
    def odd_task(x: int = 0) -> int:
        return x

    assert app.backend.features  # the schema exists before raw rows arrive
    request.addfinalizer(app.close)
    return url, app


def _rows(url: str, state: st.SearchStrategy[str]) -> st.SearchStrategy[list[dict[str, Any]]]:
    if url.startswith(("postgres", "mariadb")):
        columns = postgres_columns(state, finite=url.startswith("mariadb"))
    else:
        columns = sqlite_columns(state) if url.startswith("sqlite") else redis_columns(state)
    return st.lists(columns, min_size=1, max_size=3)


def _write_all(url: str, rows: list[dict[str, Any]]) -> list[tuple[str, dict[str, Any]]]:
    written = []
    for columns in rows:
        job_id = new_id("prop")
        try:
            write(url, job_id=job_id, **columns)
        except REFUSALS:
            continue  # the store's own refusal (a CHECK, NOT NULL, a too long VARCHAR)
        written.append((job_id, columns))
    return written


def test_random_rows_end_final_while_good_jobs_succeed(
    store: tuple[str, conveyor.App], data: st.DataObject | None = None
) -> None:
    url, app = store

    @SETTINGS
    @given(data=st.data())
    def check(data: st.DataObject) -> None:
        written = _write_all(url, data.draw(_rows(url, worker_states)))
        task = app.tasks["odd.task"]
        good = [task.enqueue(n).id for n in range(3)]
        worker = conveyor.Worker(app, burst=True, concurrency=2).start()
        if not worker.join(BURST_DEADLINE):  # a jam: show what the store holds
            worker.stop(5)
            stuck = app.backend.job_get_many([i for i, _ in written])
            pytest.fail(f"burst worker still busy after {BURST_DEADLINE} s: {stuck}")
        found = {j.id: j for j in app.backend.job_get_many([*good, *(i for i, _ in written)])}
        assert all(found[g].state is JobState.SUCCEEDED for g in good), [found[g] for g in good]
        for job_id, columns in written:
            job = found.get(job_id)
            if job is None:  # a finished row dated long ago: the pruner's retention took it
                assert columns["state"] in {s.value for s in FINISHED_STATES}, columns
                continue
            if columns["state"] == "queued" and columns.get("queue", "default") == "default":
                # claimed: it ran (succeeded), was refused (dead with a reason), or failed
                # and waits for its retry with the error kept
                assert job.state in FINISHED_STATES or (
                    job.state is JobState.SCHEDULED and job.error
                ), job
                if job.state is JobState.DEAD and job.attempt:
                    assert job.reason, job

    check()


def test_every_listing_renders_any_row(store: tuple[str, conveyor.App]) -> None:
    url, _ = store

    @SETTINGS
    @given(data=st.data())
    def check(data: st.DataObject) -> None:
        ids = [job_id for job_id, _ in _write_all(url, data.draw(_rows(url, states)))]
        shown = every_listing(url, *ids)
        exported = [json.loads(x) for x in shown[("export",)].splitlines() if x.startswith("{")]
        assert set(ids) <= {j["id"] for j in exported}
        assert json.loads(shown[("jobs", "--json")])["jobs"]
        # bounded: 50 rows of at most a 200-character preview each, and the page's frame
        assert len(shown[("/jobs",)]) < 200_000 and len(shown[("jobs",)]) < 50_000

    check()
