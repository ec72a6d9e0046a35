"""Restoring a SQLite backup (``conveyor backup FILE``): check it, make a working copy
with the claims of its dead workers released, and swap it in for a store file safely.

Three steps, each usable alone (``conveyor restore`` runs them in order):

* :func:`check_backup` reads the backup read-only: ``PRAGMA integrity_check``, a conveyor
  schema version this release knows (1..``SCHEMA_VERSION``: an older one is migrated
  on the copy, a newer one refused), and how many jobs and running jobs it holds.
* :func:`prepare_copy` copies it into a new file and opens that with the store's own
  code (:class:`SQLiteBackend`, which migrates an older schema). Jobs that were running
  when the backup was taken go back to ``queued`` by the store's graceful release
  (``job_release_many``): their attempt is given back and recorded as ``released``,
  and no rescue is counted. Why not a rescue: a rescue counts toward the poison-pill
  cap (``max_rescues``) because the job's own worker died under it, a hint that the job
  kills workers; here the workers are gone because the whole store was rolled back, which
  says nothing about the job. The copied worker rows are removed (``worker_deregister``):
  those workers run against another file, or not at all. The copy is left in rollback
  journal mode, so no ``-wal``/``-shm`` file belongs to it when it is moved.
* :func:`replace_store` puts the copy in place of a store file by ``os.replace`` (one
  rename in the same directory: the path names the old store or the new one, never a
  half-written file), after taking the old store out of WAL mode. That switch needs every
  other connection closed, so it doubles as the check that no process (a worker, a
  dashboard) has the old store open: an open one would keep writing the old store's
  ``-wal`` next to the new file, which SQLite would then replay into the wrong database.

Example::

    info = check_backup("/backups/jobs.db")          # raises BackupRefused when unusable
    copy = prepare_copy("/backups/jobs.db", "/srv/.jobs.db.restore")
    replace_store(copy.path, "/srv/jobs.db")
"""

from __future__ import annotations

import contextlib
import os
import sqlite3
from collections import defaultdict
from urllib.parse import quote

from conveyor.backends.base import JobCountParams, JobFilter, JobListParams, JobReleaseParams
from conveyor.backends.sqlite.connection import SCHEMA_VERSION
from conveyor.errors import ConveyorError
from conveyor.records import record
from conveyor.states import JobState


class BackupRefused(ConveyorError):
    """The file is not a backup this release can restore (one line saying why)."""


class StoreInUse(ConveyorError):
    """Another process has the store open: it cannot be replaced under it."""


@record
class BackupInfo:
    """What :func:`check_backup` found in a backup file."""

    path: str
    schema_version: int
    jobs: int
    running: int


@record
class PreparedCopy:
    """A working copy made by :func:`prepare_copy`, ready to be moved or read."""

    path: str
    jobs: int
    #: ids of the jobs that were running in the backup and are queued again
    released: tuple[str, ...]


def _read_only(path: str) -> sqlite3.Connection:
    """A connection that never writes ``path``. A backup is a WAL-mode file (a page copy
    of a WAL store), and even a ``mode=ro`` connection makes ``-wal``/``-shm`` files
    beside such a file: ``immutable=1`` reads it without them. Only when a ``-wal`` is
    there already (someone opened the copy as a store) is ``mode=ro`` used, so the
    commits in that ``-wal`` are read too."""
    flag = "mode=ro" if os.path.exists(f"{path}-wal") else "immutable=1"
    return sqlite3.connect(f"file:{quote(os.path.abspath(path))}?{flag}", uri=True)


def check_backup(path: str) -> BackupInfo:
    """The backup's schema version and job counts; :class:`BackupRefused` when it is
    missing, not a SQLite database, damaged, not a conveyor store, or of a newer schema.

    >>> import tempfile
    >>> bad = tempfile.NamedTemporaryFile(suffix=".db", delete=False)
    >>> _ = bad.write(b"not a database at all" * 100); bad.close()
    >>> try:
    ...     check_backup(bad.name)
    ... except BackupRefused as exc:
    ...     print(str(exc).endswith("is not a SQLite database conveyor can read (file is not a database)"))
    True
    >>> os.unlink(bad.name)
    """
    if not os.path.isfile(path):
        raise BackupRefused(f"no backup file at {path}")
    try:
        with contextlib.closing(_read_only(path)) as conn:
            # integrity_check reads every page: a torn or truncated copy shows here, not
            # half way through a restore.
            found = [str(r[0]) for r in conn.execute("PRAGMA integrity_check(5)").fetchall()]
            if found != ["ok"]:
                raise BackupRefused(
                    f"{path} is damaged (PRAGMA integrity_check: {'; '.join(found)})"
                )
            version = int(conn.execute("PRAGMA user_version").fetchone()[0])
            tables = {
                str(r[0])
                for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")
            }
            # A conveyor store is what connection.py migrates: user_version > 0 and the
            # core tables of schema.sql.
            if version == 0 or not {"jobs", "attempts", "workers"} <= tables:
                raise BackupRefused(f"{path} is a SQLite database but not a conveyor store")
            if version > SCHEMA_VERSION:
                raise BackupRefused(
                    f"{path} has schema version {version}, newer than this conveyor's "
                    f"{SCHEMA_VERSION}; restore it with the conveyor release that wrote it"
                )
            jobs = int(conn.execute("SELECT count(*) FROM jobs").fetchone()[0])
            running = int(
                conn.execute("SELECT count(*) FROM jobs WHERE state = 'running'").fetchone()[0]
            )
    except sqlite3.DatabaseError as exc:
        # "file is not a database", "database disk image is malformed": one line.
        if "malformed" in str(exc):
            raise BackupRefused(f"{path} is damaged ({exc})") from None
        raise BackupRefused(f"{path} is not a SQLite database conveyor can read ({exc})") from None
    return BackupInfo(path, version, jobs, running)


def prepare_copy(backup: str, path: str) -> PreparedCopy:
    """Copy ``backup`` into ``path`` (which must not exist; created 0600), migrate it to
    this release's schema, release its running jobs and drop its worker rows. On any
    failure ``path`` is removed: no half-made copy is left behind."""
    fd = os.open(path, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o600)
    os.close(fd)
    try:
        with (
            contextlib.closing(_read_only(backup)) as source,
            contextlib.closing(sqlite3.connect(path)) as target,
        ):
            source.backup(target)  # page by page, consistent even if the backup is in WAL
        released, jobs = _release_running(path)
        with contextlib.closing(sqlite3.connect(path, isolation_level=None)) as conn:
            # Out of WAL: the copy is one self-contained file, nothing beside it to move.
            mode = conn.execute("PRAGMA journal_mode = DELETE").fetchone()[0]
            if str(mode).lower() != "delete":
                raise ConveyorError(f"could not take the copy {path} out of WAL mode ({mode})")
        with open(path, "rb") as f:
            os.fsync(f.fileno())  # durable before it is renamed over a store
    except BaseException:
        for leftover in (path, f"{path}-wal", f"{path}-shm", f"{path}-journal"):
            with contextlib.suppress(FileNotFoundError):
                os.unlink(leftover)
        raise
    return PreparedCopy(path, jobs, released)


def _release_running(path: str) -> tuple[tuple[str, ...], int]:
    """Open the copy with the store's own code and give the claims of the backup's
    workers back (``job_release_many``: queued, attempt given back, a ``released``
    attempt record); deregister those workers. Returns (released ids, job count)."""
    from conveyor.backends.sqlite.backend import SQLiteBackend

    backend = SQLiteBackend(f"sqlite:///{os.path.abspath(path)}")
    try:
        claims: dict[str, list[tuple[str, int]]] = defaultdict(list)
        after: str | None = None
        while True:
            page = backend.job_list(
                JobListParams(state=JobState.RUNNING, after_id=after, limit=1000)
            )
            if not page:
                break
            after = page[-1].id
            for j in page:
                # A claim without a worker id (a row written around the API) is released
                # under the name "restore": the attempt record says who gave it back.
                claims[j.worker_id or "restore"].append((j.id, j.token))
        released: list[str] = []
        for worker_id, jobs in claims.items():
            refused = set(backend.job_release_many(JobReleaseParams(worker_id, jobs)))
            released += [job_id for job_id, _ in jobs if job_id not in refused]
        for w in backend.worker_list():
            backend.worker_deregister(w.id)
        jobs_total = backend.job_count(JobCountParams(JobFilter()))
    finally:
        backend.close()
    return tuple(sorted(released)), jobs_total


def store_jobs(path: str) -> int | None:
    """How many jobs the store file at ``path`` holds; None when there is no conveyor
    store there (no file, an empty file, or no jobs table)."""
    if not os.path.exists(path) or os.path.getsize(path) == 0:
        return None
    try:
        # mode=ro, not immutable: the store may be live, its -wal holding recent commits.
        uri = f"file:{quote(os.path.abspath(path))}?mode=ro"
        with contextlib.closing(sqlite3.connect(uri, uri=True)) as conn:
            return int(conn.execute("SELECT count(*) FROM jobs").fetchone()[0])
    except sqlite3.Error:
        return None


def replace_store(copy: str, target: str) -> None:
    """Move the prepared ``copy`` over the store file ``target`` (same directory).

    The old store is first checkpointed and taken out of WAL mode, which SQLite allows
    only when this is its one connection; :class:`StoreInUse` otherwise. Its write lock
    is held across the rename, so nobody commits to the old file in between."""
    if os.path.exists(target):
        try:
            conn = sqlite3.connect(target, isolation_level=None, timeout=0.5)
        except sqlite3.Error as exc:
            raise StoreInUse(f"cannot open {target} to replace it: {exc}") from None
        try:
            try:
                conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
                mode = conn.execute("PRAGMA journal_mode = DELETE").fetchone()[0]
            except sqlite3.OperationalError as exc:  # "database is locked"
                raise StoreInUse(
                    f"{target} is open in another process (a worker, the dashboard?): "
                    f"stop it first ({exc})"
                ) from None
            if str(mode).lower() != "delete":
                raise StoreInUse(
                    f"{target} is open in another process (a worker, the dashboard?): stop it first"
                )
            # The old -wal/-shm are gone now (checkpointed and deleted by the switch);
            # the exclusive lock keeps any newcomer from making new ones until the rename.
            conn.execute("BEGIN EXCLUSIVE")
            for side in (f"{target}-wal", f"{target}-shm"):
                with contextlib.suppress(FileNotFoundError):
                    os.unlink(side)
            os.replace(copy, target)
            conn.execute("ROLLBACK")
        finally:
            conn.close()
    else:
        os.replace(copy, target)
    _fsync_directory(os.path.dirname(os.path.abspath(target)))


def _fsync_directory(directory: str) -> None:
    # The rename is durable only once the directory entry is on disk.
    fd = os.open(directory, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
