"""At worker start: jobs waiting in another store this worker could have been meant for.

A worker that serves one store while its producers write another waits forever, and so
do their jobs (issue 21: the worker read ``url`` from a config file, the producer did
not). The stores a producer in this directory could be writing: the one ``App()`` picks
here (``$CONVEYOR_URL``, ./conveyor.toml, ./pyproject.toml), the ``url`` of every config
file that applies, and the default ``sqlite:///conveyor.db``. Those that are SQLite files
(and exist) are read, read-only, for queued and scheduled jobs, unless a live worker
(a heartbeat within ``heartbeat_ttl``) serves that store; a Redis or PostgreSQL URL is
not connected to (a worker's start must not wait on a server it does not serve).

Example::

    WARNING jobs wait in another store: 3 in sqlite:///conveyor.db (the default store);
    this worker serves sqlite:///jobs.db (from conveyor.toml). Give the producers ...
"""

from __future__ import annotations

import contextlib
import logging
import os
from collections.abc import Sequence

from conveyor.app import DEFAULT_URL, App
from conveyor.config import Layer
from conveyor.redaction import redacted
from conveyor.url_rule import implicit_url, sqlite_path

log = logging.getLogger("conveyor.worker")


def waiting_jobs(path: str, heartbeat_ttl: float) -> int:
    """Queued and scheduled jobs in the conveyor store at ``path`` that no live worker
    serves (0: none, a worker heartbeating within ``heartbeat_ttl`` seconds serves it, or
    not a store it can read). Opened read-only: nothing is created, migrated or locked."""
    if not os.path.isfile(path):
        return 0
    import sqlite3  # only when there is a file to look in (a Redis worker never does)
    import time
    from urllib.parse import quote

    try:
        uri = f"file:{quote(path)}?mode=ro"
        with contextlib.closing(sqlite3.connect(uri, uri=True, timeout=1.0)) as conn:
            live = conn.execute(
                "SELECT count(*) FROM workers WHERE typeof(heartbeat_at) IN ('integer', "
                "'real') AND heartbeat_at > ?",
                (time.time() - heartbeat_ttl,),
            ).fetchone()
            if live and live[0]:
                return 0  # served: another worker's store, not a forgotten one
            row = conn.execute(
                "SELECT count(*) FROM jobs WHERE state IN ('queued', 'scheduled')"
            ).fetchone()
    except sqlite3.Error:
        return 0
    return int(row[0]) if row else 0


def candidates(app: App, files: Sequence[Layer]) -> dict[str, str]:
    """URL -> where it comes from, for every store a producer here could be writing."""
    found: dict[str, str] = {}
    with contextlib.suppress(Exception):  # a file App() cannot read: the worker said so
        url, source = implicit_url(DEFAULT_URL)
        found[url] = "the store App() picks here" if source == "default" else f"from {source}"
    env = os.environ.get("CONVEYOR_URL")
    if env:
        found.setdefault(env, "from $CONVEYOR_URL")
    for layer in files:
        if layer.url:
            found.setdefault(layer.url, f"from {layer.source}")
    found.setdefault(DEFAULT_URL, "the default store")
    return found


def warn_other_stores(app: App, files: Sequence[Layer]) -> None:
    """Log one warning line when another store a producer here could write to has
    waiting jobs (``files``: the config files that apply); nothing otherwise. Never
    raises: a hint must not stop a worker."""
    try:
        served = sqlite_path(app.url)
        waiting = []
        for url, why in candidates(app, files).items():
            path = sqlite_path(url)
            if path is None or (served is not None and _same(path, served)):
                continue
            count = waiting_jobs(path, app.settings.heartbeat_ttl)
            if count:
                waiting.append(f"{count} in {redacted(url)} ({why})")
    except Exception:  # see the docstring
        return
    if waiting:
        log.warning(
            "jobs wait in another store: %s; this worker serves %s (from %s). Give the "
            "producers and the worker the same URL (docs/configuration.md)",
            ", ".join(waiting),
            redacted(app.url),
            app.url_source,
        )


def _same(a: str, b: str) -> bool:
    return os.path.realpath(a) == os.path.realpath(b)
