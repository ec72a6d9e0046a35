"""The store URL of an app that names none: the same rule for ``App()`` and every command.

``$CONVEYOR_URL``, else ``url`` of ``./conveyor.toml``, else ``url`` of ``[tool.conveyor]``
in ``./pyproject.toml``, else the default ``sqlite:///conveyor.db``. A producer built as
``App()`` and ``conveyor worker`` started in the same directory with the same environment
therefore meet on one store (issue 21: the worker read the file and the producer did not,
and the producer's jobs waited forever). An explicit ``App(url)`` or ``--url`` wins over
all of it; ``conveyor worker -C FILE`` puts FILE above the two found here.

Only the current directory is looked in, never its parents: a relative
``sqlite:///jobs.db`` is a file of the current directory, so a file found in a parent
would name another store than its author meant. Costs two ``stat`` calls when neither
file exists; ``conveyor.config`` (and ``tomllib``) are imported only when one does.

Example:
    >>> import os, tempfile
    >>> d = tempfile.mkdtemp()
    >>> with open(os.path.join(d, "conveyor.toml"), "w") as f:
    ...     _ = f.write('url = "sqlite:///jobs.db"\\n')
    >>> url, source = implicit_url("sqlite:///conveyor.db", d, env={})
    >>> url, source == os.path.join(d, "conveyor.toml")
    ('sqlite:///jobs.db', True)
    >>> implicit_url("sqlite:///conveyor.db", d, env={"CONVEYOR_URL": "redis://q:6379/0"})
    ('redis://q:6379/0', '$CONVEYOR_URL')
"""

from __future__ import annotations

import os
from collections.abc import Mapping

#: Where each URL came from, as ``App.url_source`` says it.
ENV_SOURCE = "$CONVEYOR_URL"
DEFAULT_SOURCE = "default"
#: The files looked for in the current directory, strongest first.
FILES = ("conveyor.toml", "pyproject.toml")


def implicit_url(
    default: str, directory: str | None = None, env: Mapping[str, str] | None = None
) -> tuple[str, str]:
    """(url, source) for an app that names no URL; see the module docstring. A file that
    is there but cannot be used raises :class:`conveyor.config.ConfigFileError` naming
    the file and the key: guessing past it could split producers from workers."""
    given = (os.environ if env is None else env).get("CONVEYOR_URL")
    if given:
        return given, ENV_SOURCE
    try:
        here = directory or os.getcwd()
    except OSError:  # the current directory was deleted: no file can be found in it
        return default, DEFAULT_SOURCE
    if not any(os.path.isfile(os.path.join(here, name)) for name in FILES):
        return default, DEFAULT_SOURCE
    from conveyor import config

    found = config.file_url(config.discovered(directory))
    if found is None:
        return default, DEFAULT_SOURCE
    return str(found.value), found.source


def sqlite_path(url: str) -> str | None:
    """The absolute file of a ``sqlite:///`` URL (None: another scheme, or in memory).

    >>> sqlite_path("sqlite:////srv/jobs.db?synchronous=FULL"), sqlite_path("redis://h/0")
    ('/srv/jobs.db', None)
    """
    if not url.lower().startswith("sqlite:///"):
        return None
    path = url[len("sqlite:///") :].split("?", 1)[0]
    return None if not path or path == ":memory:" else os.path.abspath(path)
