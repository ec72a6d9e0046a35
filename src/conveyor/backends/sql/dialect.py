"""How one SQL store spells what the shared algorithms need (see :mod:`conveyor.backends.sql`).

The engine's statements are written once with ``?`` placeholders; :meth:`Dialect.sql`
turns them into the driver's style. A list of values is a ``col IN (?, ?, ...)`` split
into chunks where the database caps its parameters (SQLite) or one array parameter
``col = ANY(?)`` where it has arrays (PostgreSQL). Statements run on an
:class:`Executor`: a ``sqlite3.Connection`` or a psycopg cursor, whose ``execute``
both return something to fetch from. The claim and the finish send statements before
reading earlier ones (PostgreSQL's pipeline), so theirs must hand back an independent
result per ``execute``: a ``sqlite3.Connection``, or ``postgres/dialect.Cursors``.

A new SQL store is a Dialect: its spelling (``param``, ``array``/``chunk``, ``lock``,
``skip_locked``, ``ignore``, ``clock``/``server_clock``), its capabilities
(``returning``, ``finish_batch``, ``promote_answers``) and its ``queries``, each role's
file parsed by :func:`named_queries` (the names each engine module reads are listed in
its docstring).

Example:
    >>> import time
    >>> d = Dialect("demo", param="%s", lock=" FOR UPDATE", array=True, chunk=None,
    ...             ignore=("INSERT", " ON CONFLICT DO NOTHING"),
    ...             clock=lambda ex: time.time(), queries={})
    >>> d.sql("SELECT 1 FROM jobs WHERE id = ?")
    'SELECT 1 FROM jobs WHERE id = %s'
    >>> [(d.sql(f"SELECT 1 FROM jobs WHERE {w}"), a) for w, a in d.in_list("id", ["a", "b"])]
    [('SELECT 1 FROM jobs WHERE id = ANY(%s)', [['a', 'b']])]
    >>> d.insert_ignore("periodic_slots (name, slot) VALUES (?, ?)")
    'INSERT INTO periodic_slots (name, slot) VALUES (?, ?) ON CONFLICT DO NOTHING'
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

from conveyor.backends import decoding
from conveyor.backends.records import ClaimedJob

if TYPE_CHECKING:
    from conveyor.backends.base import WhereCondition


class Result(Protocol):
    """What ``execute`` hands back: rows to fetch, how many rows it wrote."""

    @property
    def rowcount(self) -> int: ...

    def fetchone(self) -> Any: ...

    def fetchall(self) -> list[Any]: ...


class Executor(Protocol):
    """A ``sqlite3.Connection`` or a psycopg cursor, inside the caller's transaction."""

    def execute(self, query: Any, params: Any = ..., /) -> Result: ...

    def executemany(self, query: Any, params: Any, /) -> object: ...


def decode_claimed(row: Sequence[Any]) -> ClaimedJob:
    """A claim row (``decoding.CLAIM_NAMES``, then ``limit_key``) as a ClaimedJob, checked
    field by field: what ``Dialect.claimed`` does by default."""
    return decoding.claimed_job(row[: len(decoding.CLAIM_NAMES)])


def fetch_all(ex: Executor, sent: Result, *_: Any) -> list[Any]:
    """The rows of a statement sent earlier: what ``Dialect.claim_rows`` does by default."""
    return sent.fetchall()


def on_conflict_update(key: str, columns: Sequence[str]) -> str:
    """The standard upsert suffix (SQLite, PostgreSQL).

    >>> on_conflict_update("name", ["spec"])
    ' ON CONFLICT (name) DO UPDATE SET spec = excluded.spec'
    """
    sets = ", ".join(f"{c} = excluded.{c}" for c in columns)
    return f" ON CONFLICT ({key}) DO UPDATE SET {sets}"


@dataclass(frozen=True)
class Dialect:
    """One SQL store's spelling of what the engine's algorithms need."""

    #: The store's name, for messages.
    name: str
    #: The driver's positional placeholder (``?`` for sqlite3, ``%s`` for psycopg).
    param: str
    #: Appended to a ``SELECT`` that must lock the rows it reads until commit; empty
    #: where the transaction already holds the whole database (SQLite's BEGIN IMMEDIATE).
    lock: str
    #: True: a list is one array parameter (``= ANY(?)``); False: ``IN (?, ?, ...)``.
    array: bool
    #: The most values of one ``IN`` list (None: no cap).
    chunk: int | None
    #: (prefix, suffix) of an insert that skips rows a unique index already holds.
    ignore: tuple[str, str]
    #: The clock the store's times are read against (epoch seconds).
    clock: Callable[[Executor], float]
    #: The store's own text of the statements that differ by more than spelling, by
    #: role name (the same names on every store: ``job_insert_flow``, ``job_claim``,
    #: ``job_promote_due``, ...; each engine module lists the names it reads).
    queries: Mapping[str, str]
    #: True: ``UPDATE ... RETURNING`` exists (SQLite, PostgreSQL): a claim is one
    #: statement (``job_claim``). False (MariaDB): the engine selects the rows locked,
    #: updates them, and reads them back (:mod:`conveyor.backends.sql.claim`,
    #: :func:`conveyor.backends.sql.ops_bulk.update_returning`).
    returning: bool = True
    #: Appended to a ``SELECT`` that picks rows to take (a claim's, a rescue's, a
    #: purge's, a sweep's), so that concurrent takers skip each other's rows instead of
    #: waiting: ``" FOR UPDATE SKIP LOCKED"``; empty where the transaction holds the
    #: whole database (SQLite).
    skip_locked: str = ""
    #: The ``WHERE`` of a filter with no conditions (``1``; PostgreSQL wants a boolean).
    always: str = "1"
    #: How to compare ids to get byte order, the order they were created in
    #: (PostgreSQL: ``id COLLATE "C"``, whatever the database's collation).
    id_order: str = "id"
    #: The column ``job_logs`` are read back in, the order they were written in.
    log_order: str = "rowid"
    #: One typed JSON comparison of a ``--where`` condition -> (SQL with ``?``
    #: placeholders, its arguments): the store's JSON functions
    #: (:mod:`conveyor.backends.sql.filters`). None: the store cannot filter by JSON.
    where_json: Callable[[WhereCondition], tuple[str, list[object]]] | None = None
    #: True: ``job_promote_due`` answers one row (how many were promoted, seconds until
    #: the next scheduled job is due or NULL); False: its row count is how many.
    promote_answers: bool = False
    #: A claim row (``decoding.CLAIM_NAMES`` then ``limit_key``) as a ClaimedJob; the
    #: store's own, because what its driver hands back differs (types, odd rows).
    claimed: Callable[[Any], ClaimedJob] = decode_claimed
    #: The rows of one sent ``job_claim`` (``fetch_all`` by default); SQLite's reads the
    #: claimed rows again when their text is not UTF-8 (see its ``rows.claim_rows``).
    claim_rows: Callable[..., list[Any]] = fetch_all
    #: How a batch of finishes is written (:mod:`conveyor.backends.sql.finish`):
    #: ``"arrays"``: one statement per finish kind whose rows travel as array
    #: parameters, writing the attempt rows too (``job_finish_many_<kind>``: PostgreSQL's
    #: writable CTEs); ``"json"``: per-row statements, but a batch of successes only is
    #: one JSON parameter (``job_finish_succeeded_many``, ``attempt_insert_succeeded_many``:
    #: SQLite's ``json_each``); ``"rows"``: one fenced statement per finish (any store).
    finish_batch: str = "rows"
    #: True: the store's times are its server's clock (:attr:`clock`), so a time the
    #: caller computed (a rescue's ``stale_before``) is re-anchored on it as an age.
    server_clock: bool = False
    #: A whole list as ONE parameter, for a named query that takes it so (a rescue's
    #: dead workers): an array (PostgreSQL), JSON text for ``json_each`` (SQLite).
    one_list: Callable[[list[Any]], Any] = list
    #: What is wrong with a running row's counts that cannot move on (attempt, token,
    #: rescues), for typed columns with a limit; None: the store has none.
    count_problem: Callable[[int, int, int], str | None] | None = None
    #: The suffix of an ``INSERT`` that, where the row's ``key`` exists, sets ``columns``
    #: to the inserted values instead (MariaDB: ``ON DUPLICATE KEY UPDATE``).
    upsert: Callable[[str, Sequence[str]], str] = on_conflict_update

    def sql(self, text: str) -> str:
        """``text``, written with ``?`` placeholders, in the driver's style."""
        return text if self.param == "?" else text.replace("?", self.param)

    def in_list(self, column: str, items: Sequence[Any]) -> Iterator[tuple[str, list[Any]]]:
        """(condition, its parameters) per chunk of ``items``, for ``WHERE``: nothing
        for no items (a statement over an empty list is not sent at all)."""
        if not items:
            return
        if self.array:
            yield f"{column} = ANY(?)", [list(items)]
            return
        size = self.chunk or len(items)
        for start in range(0, len(items), size):
            part = list(items[start : start + size])
            yield f"{column} IN ({', '.join('?' * len(part))})", part

    def insert_ignore(self, rest: str) -> str:
        """``INSERT INTO <rest>`` that writes nothing where a unique index holds the row."""
        prefix, suffix = self.ignore
        return f"{prefix} INTO {rest}{suffix}"


def named_queries(text: str) -> dict[str, str]:
    r"""The statements of one query file by name: each starts at a ``-- name: <name>``
    line and runs to the next (comments before the first name describe the file).

    >>> named_queries("-- the claim\n-- name: a\nSELECT 1;\n-- name: b\n-- why\nSELECT 2\n")
    {'a': 'SELECT 1', 'b': '-- why\nSELECT 2'}
    """
    found: dict[str, list[str]] = {}
    lines: list[str] | None = None
    for line in text.splitlines():
        if line.startswith("-- name:"):
            lines = found.setdefault(line.split(":", 1)[1].strip(), [])
        elif lines is not None:
            lines.append(line)
    return {name: "\n".join(body).strip().rstrip(";").strip() for name, body in found.items()}


def role_queries(
    read: Callable[[str], str], singles: Sequence[str] = (), roles: Sequence[str] = ()
) -> dict[str, str]:
    r"""A store's queries by name: each of ``singles`` is the one statement of its own
    file, each of ``roles`` a file of named queries (:func:`named_queries`); ``read``
    gives a file's text by its name.

    >>> files = {"pause": "UPDATE q SET p = 1", "claim": "-- name: a\nSELECT 1"}
    >>> role_queries(files.__getitem__, ["pause"], ["claim"])
    {'pause': 'UPDATE q SET p = 1', 'a': 'SELECT 1'}
    """
    found = {name: read(name) for name in singles}
    for role in roles:
        found.update(named_queries(read(role)))
    return found
