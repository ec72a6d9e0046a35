"""Files that hold jobs (the SQLite store, its -wal/-shm, backups, exports) are private.

Job arguments and results are often personal data, so every such file conveyor creates
is mode 0600 (owner read/write), whatever the umask; and an existing store found
readable by others is made 0600 when conveyor opens it, with one warning line.

Example:
    >>> import os, tempfile
    >>> path = os.path.join(tempfile.mkdtemp(), "copy.db")
    >>> os.close(create_private(path))
    >>> oct(os.stat(path).st_mode & 0o777)
    '0o600'
"""

from __future__ import annotations

import os
import stat

PRIVATE_MODE = 0o600
#: Beside a SQLite store, these hold its recent writes: as private as the store itself.
SQLITE_COMPANIONS = ("-wal", "-shm")

#: The logger of the warnings below, ``conveyor.store`` (logging is imported only to
#: warn: opening a store for a CLI read needs none of it).
LOGGER = "conveyor.store"


def create_private(path: str, *, exclusive: bool = True) -> int:
    """Open ``path`` for writing as a new 0600 file; returns the descriptor.

    ``exclusive``: fail with ``FileExistsError`` when it exists (a backup never
    overwrites); otherwise an existing file is truncated and made 0600 too.
    """
    flags = os.O_WRONLY | os.O_CREAT | (os.O_EXCL if exclusive else os.O_TRUNC)
    fd = os.open(path, flags, PRIVATE_MODE)
    try:
        info = os.fstat(fd)
        if stat.S_ISREG(info.st_mode) and info.st_mode & 0o077:
            os.fchmod(fd, PRIVATE_MODE)  # an existing file keeps its mode through O_TRUNC
    except BaseException:
        os.close(fd)
        raise
    return fd


def make_store_private(path: str) -> None:
    """Make the SQLite store ``path`` and its -wal/-shm 0600 when others may read them.

    One warning line names what changed (or why it could not be changed); silent when
    the files were private already. Called before SQLite opens the file, so the -wal
    and -shm it creates next copy the store's new mode.
    """
    changed: list[str] = []
    refused: list[str] = []
    old_mode = 0
    for name in (path, *(path + suffix for suffix in SQLITE_COMPANIONS)):
        try:
            info = os.stat(name)
        except FileNotFoundError:
            continue
        mode = stat.S_IMODE(info.st_mode)
        if not stat.S_ISREG(info.st_mode) or not mode & 0o077:
            continue
        old_mode = old_mode or mode
        try:
            os.chmod(name, PRIVATE_MODE)
        except OSError:
            refused.append(name)
        else:
            changed.append(name)
    if not changed and not refused:
        return
    import logging

    log = logging.getLogger(LOGGER)
    if changed:
        log.warning(
            "store %s was readable by other users (mode %s); made %s 0600",
            path,
            oct(old_mode)[2:].rjust(4, "0"),
            ", ".join(os.path.basename(n) for n in changed),
        )
    if refused:
        log.warning(
            "store files %s are readable by other users and could not be made 0600 "
            "(not their owner?)",
            ", ".join(refused),
        )
