"""Opening a conveyor SQLite file: URL parsing, owner-only file, PRAGMAs, schema.

``sqlite:///relative.db``, ``sqlite:////absolute/path.db`` and ``sqlite:///:memory:``
(one process only). Query options: ``synchronous=NORMAL|FULL`` (default NORMAL: survives a
process crash; a power cut can roll back the last commits; FULL survives that too, at a
cost measured in BENCHMARKS.md) and ``busy_timeout`` in milliseconds (default 30000).

Example:
    >>> parse_sqlite_url("sqlite:///jobs.db?synchronous=FULL").synchronous
    'FULL'
"""

from __future__ import annotations

import contextlib
import os
import re
import sqlite3
import time

from conveyor.backends.packaged import packaged_text
from conveyor.errors import ConfigurationError, StoreNotFound
from conveyor.private_files import make_store_private
from conveyor.records import record
from conveyor.redaction import redacted

#: 1: core tables. 2: ops (queues, job logs). 3: flow control (progress, unique,
#: workflows, limits, periodic). 4: job headers. 5: job expiry (expires_at). 6: the
#: operator actions log (action_log). 7: schedules' pause and "run now". 8: durable jobs
#: (job_steps, job_events). 9: flow control by key (sequences, fair_keys,
#: limit_overrides). 10: the search index, filled after the fact (job_search_pending;
#: the index itself, search_index.sql, is made by `conveyor search-index on`: off by
#: default). 11: jobs_waiting, for the capped counts (queries/counts.sql). 12: jobs_task, for
#: the dashboard's indexed sort by task (job_keys). Each step is
#: idempotent and applied in order; a step may be several files.
SCHEMA_VERSION = 12
_MIGRATIONS = {
    1: "schema.sql",
    2: "schema_002.sql",
    3: "schema_003.sql",
    4: "schema_004.sql",
    5: "schema_005.sql",
    6: "schema_006.sql",
    7: "schema_007.sql",
    8: "schema_008.sql",
    9: "schema_009.sql",
    10: "schema_010.sql",
    11: "schema_011.sql",
    12: "schema_012.sql",
}
#: Compiled on first use by ``re``'s own cache: only a migration needs it.
_ADD_COLUMN = r"ALTER TABLE (\w+) ADD COLUMN (\w+)"
_SYNC_MODES = ("OFF", "NORMAL", "FULL", "EXTRA")


@record
class SQLiteTarget:
    """Where and how to open the database."""

    path: str  # absolute path, or ":memory:"
    synchronous: str = "NORMAL"
    busy_timeout_ms: int = 30_000

    @property
    def is_memory(self) -> bool:
        return self.path == ":memory:"


def parse_sqlite_url(url: str) -> SQLiteTarget:
    """Turn a ``sqlite://`` URL into a :class:`SQLiteTarget`."""
    scheme, netloc, path, query_text = _split_url(url)
    if scheme != "sqlite":
        raise ConfigurationError(f"not a sqlite URL: {redacted(url)!r}")
    raw = path[1:] if path.startswith("/") else path
    if netloc:
        raise ConfigurationError(
            f"sqlite URL {redacted(url)!r} has a host; use sqlite:///relative.db or sqlite:////abs.db"
        )
    if not raw:
        raise ConfigurationError(f"sqlite URL {redacted(url)!r} names no file")
    query = _query_options(query_text)
    sync = query.pop("synchronous", "NORMAL").upper()
    if sync not in _SYNC_MODES:
        raise ConfigurationError(f"synchronous must be one of {_SYNC_MODES}, got {sync!r}")
    try:
        busy = int(query.pop("busy_timeout", "30000"))
    except ValueError as exc:
        raise ConfigurationError(f"busy_timeout must be milliseconds: {exc}") from None
    if query:
        raise ConfigurationError(f"unknown sqlite URL options: {sorted(query)}")
    path = raw if raw == ":memory:" else os.path.abspath(raw)
    return SQLiteTarget(path=path, synchronous=sync, busy_timeout_ms=busy)


#: Characters for which a URL is left to :mod:`urllib.parse` (escapes, fragments,
#: spaces, brackets; also anything not printable ASCII): the plain form store URLs take
#: is split here, so opening a store does not import ``urllib.parse`` (issue 16).
_NOT_PLAIN = frozenset("%+#;\\ []")


def _split_url(url: str) -> tuple[str, str, str, str]:
    """``(scheme, netloc, path, query)`` as :func:`urllib.parse.urlsplit` gives them.

    >>> _split_url("sqlite:///jobs.db?synchronous=FULL")
    ('sqlite', '', '/jobs.db', 'synchronous=FULL')
    >>> _split_url("SQLite://h/x%20y.db")
    ('sqlite', 'h', '/x%20y.db', '')
    """
    scheme, sep, rest = url.partition("://")
    plain = url.isascii() and url.isprintable() and _NOT_PLAIN.isdisjoint(url)
    if sep and plain and scheme.isalpha():
        authority_end = min(
            (i for i in (rest.find("/"), rest.find("?")) if i != -1), default=len(rest)
        )
        netloc, tail = rest[:authority_end], rest[authority_end:]
        path, _, query = tail.partition("?")
        return scheme.lower(), netloc, path, query
    from urllib.parse import urlsplit

    parts = urlsplit(url)
    return parts.scheme, parts.netloc, parts.path, parts.query


def _query_options(query: str) -> dict[str, str]:
    """``{name: last value}`` of a URL query, as ``parse_qs`` reads it (blank values
    dropped, escapes decoded).

    >>> _query_options("a=1&b=&a=2&c")
    {'a': '2'}
    """
    if "%" in query or "+" in query:
        from urllib.parse import parse_qs

        return {k: v[-1] for k, v in parse_qs(query).items()}
    options: dict[str, str] = {}
    for field in query.split("&"):
        name, eq, value = field.partition("=")
        if eq and value:
            options[name] = value
    return options


def open_connection(target: SQLiteTarget) -> sqlite3.Connection:
    """Open, configure and migrate. The file is created readable by its owner only."""
    if not target.is_memory:
        _create_private_file(target.path)
        make_store_private(target.path)  # an existing 0644 store (and its -wal/-shm)
    conn = sqlite3.connect(
        target.path,
        isolation_level=None,  # we issue BEGIN IMMEDIATE ourselves
        check_same_thread=False,  # guarded by the backend's lock
        cached_statements=256,
    )
    conn.execute(f"PRAGMA busy_timeout = {int(target.busy_timeout_ms)}")
    # synchronous first: switching a new file to WAL then writes it with the chosen
    # durability, not the default FULL (one fewer sync at a store's first open).
    conn.execute(f"PRAGMA synchronous = {target.synchronous}")
    if not target.is_memory:
        mode = _journal_mode_wal(conn, target.busy_timeout_ms / 1000.0)
        if str(mode).lower() != "wal":
            raise ConfigurationError(f"could not put {target.path} in WAL mode (got {mode})")
    conn.execute("PRAGMA temp_store = MEMORY")
    _migrate(conn)
    return conn


def _journal_mode_wal(conn: sqlite3.Connection, patience: float) -> object:
    """``PRAGMA journal_mode = WAL``, tried again while another process holds the file
    locked: that pragma can answer "database is locked" at once, without the busy
    handler, while another connection checkpoints or migrates (four processes opening
    one store together saw it), so it waits here as busy_timeout would.

    Example::

        _journal_mode_wal(sqlite3.connect("jobs.db"), 5.0)   # 'wal'
    """
    deadline = time.monotonic() + patience
    while True:
        try:
            return conn.execute("PRAGMA journal_mode = WAL").fetchone()[0]
        except sqlite3.OperationalError as exc:
            if "locked" not in str(exc) or time.monotonic() >= deadline:
                raise
            time.sleep(0.02)


def require_existing_store(url: str) -> None:
    """Raise StoreNotFound unless ``url`` names an existing conveyor database.

    For read-only tools, before :func:`open_connection` (which creates the file): looks
    with ``os.stat`` and a ``mode=ro`` connection only, so nothing is created or changed.
    """
    target = parse_sqlite_url(url)
    if target.is_memory:
        return
    hint = f"({url}); check --url or $CONVEYOR_URL"
    if not os.path.exists(target.path):
        raise StoreNotFound(
            f"no store at {target.path} {hint} (a worker or the first enqueue creates it)"
        )
    if os.path.isdir(target.path):
        raise StoreNotFound(f"{target.path} is a directory, not a store {hint}")
    try:
        uri = f"file:{uri_path(target.path)}?mode=ro"
        with contextlib.closing(sqlite3.connect(uri, uri=True)) as conn:
            version = conn.execute("PRAGMA user_version").fetchone()[0]
            tables = conn.execute("SELECT count(*) FROM sqlite_master").fetchone()[0]
    except sqlite3.Error:
        return  # unreadable here: the real open reports why (permissions, not a database)
    if version == 0 and tables == 0:
        raise StoreNotFound(f"{target.path} is an empty file, not a conveyor store {hint}")
    if version == 0:
        raise StoreNotFound(f"{target.path} is a SQLite file but not a conveyor store {hint}")


def uri_path(path: str) -> str:
    """``path`` for a ``file:`` URI: SQLite takes every character literally except ``%``
    (an escape), ``?`` (the query) and ``#`` (the fragment), so only those are escaped
    (urllib.parse's ``quote`` did the same and more, at a dozen modules' import).

    >>> uri_path("/tmp/a b?%#.db")
    '/tmp/a b%3F%25%23.db'
    """
    return path.replace("%", "%25").replace("?", "%3F").replace("#", "%23")


def memory_key() -> str:
    """A unique notifier key for an in-memory database (one per backend)."""
    return f":memory:{os.urandom(16).hex()}"


def _create_private_file(path: str) -> None:
    directory = os.path.dirname(path)
    if directory and not os.path.isdir(directory):
        os.makedirs(directory, exist_ok=True)
    # Only a file that does not exist yet is opened here (O_EXCL): closing any
    # descriptor of a file releases every POSIX lock this process holds on it, so
    # opening and closing an existing store would drop the locks of this process's
    # other connections to it (sqlite.org/howtocorrupt.html, 2.2): another process
    # then took itself for the last connection and deleted the -wal and -shm files
    # under them ("disk I/O error"). A second process creating the file at the same
    # moment gets FileExistsError, which is fine.
    try:
        fd = os.open(path, os.O_CREAT | os.O_EXCL | os.O_RDWR, 0o600)
    except FileExistsError:
        return
    os.close(fd)


def _migrate(conn: sqlite3.Connection) -> None:
    version = conn.execute("PRAGMA user_version").fetchone()[0]
    if version >= SCHEMA_VERSION:
        return
    conn.execute("BEGIN IMMEDIATE")
    try:
        apply_migrations(conn)
        conn.execute("COMMIT")
    except BaseException:
        # SQLite may have rolled back already (disk full, I/O error): the cause, not "no
        # transaction is active", is what the caller must see.
        if conn.in_transaction:
            conn.execute("ROLLBACK")
        raise


def apply_migrations(conn: sqlite3.Connection) -> None:
    """Bring the schema up to :data:`SCHEMA_VERSION` inside the transaction the caller
    holds (no BEGIN or COMMIT here): the backend's own ``BEGIN IMMEDIATE`` at open, or a
    caller's transaction for a transactional enqueue (``transactional.py``). The version
    is read here, under the write lock the caller holds or is about to take: another
    process may have migrated meanwhile."""
    version = conn.execute("PRAGMA user_version").fetchone()[0]
    for target in range(version + 1, SCHEMA_VERSION + 1):
        files = _MIGRATIONS[target]
        script = "\n".join(
            read_packaged(f) for f in ((files,) if isinstance(files, str) else files)
        )
        for statement in _split(script):
            if not _already_applied(conn, statement):
                conn.execute(statement)
        conn.execute(f"PRAGMA user_version = {target}")


def migration_script(target: int) -> str:
    """The statements of schema version ``target`` (one file, or several in order)."""
    files = _MIGRATIONS[target]
    names = (files,) if isinstance(files, str) else files
    return "\n".join(read_packaged(name).strip() + ";" for name in names)


def _already_applied(conn: sqlite3.Connection, statement: str) -> bool:
    """True for an ``ADD COLUMN`` whose column exists (SQLite has no IF NOT EXISTS there),
    so a half-applied or hand-applied migration can run again."""
    match = re.search(_ADD_COLUMN, statement, re.IGNORECASE)
    if match is None:
        return False
    table, column = match.groups()
    return any(row[1] == column for row in conn.execute(f"PRAGMA table_info({table})"))


def _split(script: str) -> list[str]:
    r"""The statements of a script; a trigger's body (``BEGIN ...; END``) stays whole.

    >>> _split("CREATE TABLE t (x);\nCREATE TRIGGER g AFTER INSERT ON t BEGIN\n"
    ...        "  DELETE FROM t; DELETE FROM t;\nEND;\nSELECT 1")
    ['CREATE TABLE t (x)', 'CREATE TRIGGER g AFTER INSERT ON t BEGIN\n  DELETE FROM t; DELETE FROM t;\nEND', 'SELECT 1']
    """
    lines = [ln for ln in script.splitlines() if not ln.strip().startswith("--")]
    statements: list[str] = []
    pending = ""
    for piece in "\n".join(lines).split(";"):
        pending = f"{pending};{piece}" if pending else piece
        # sqlite3.complete_statement knows where a CREATE TRIGGER ends (its END)
        if sqlite3.complete_statement(pending + ";") and pending.strip():
            statements.append(pending.strip())
            pending = ""
    if pending.strip():
        statements.append(pending.strip())
    return statements


def load_query(name: str) -> str:
    """The text of ``queries/<name>.sql`` beside this module."""
    return read_packaged("queries", f"{name}.sql")


def read_packaged(*parts: str) -> str:
    """A text file shipped beside this module."""
    return packaged_text(__file__, __package__, *parts)
