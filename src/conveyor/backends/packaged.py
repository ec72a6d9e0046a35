"""Text files shipped beside a store's modules (schema scripts, named-query files).

Read by path, which is all a normal install needs; :mod:`importlib.resources` (which
costs ~10 ms to import: pathlib, tempfile, shutil...) only when the package is not on
the file system, e.g. imported from a zip.

Example::

    packaged_text(__file__, __package__, "queries", "claim.sql")   # in a store's module
"""

from __future__ import annotations

import os


def packaged_text(module_file: str, package: str | None, *parts: str) -> str:
    """The text of the file ``parts`` beside ``module_file`` (of ``package``).

    >>> "-- name: job_rescue_candidates" in packaged_text(
    ...     __file__, __package__, "mariadb", "queries", "rescue.sql")
    True
    """
    try:
        with open(os.path.join(os.path.dirname(module_file), *parts), encoding="utf-8") as f:
            return f.read()
    except (FileNotFoundError, NotADirectoryError):
        from importlib import resources

        assert package is not None, module_file  # a module of a package, not a script
        return resources.files(package).joinpath(*parts).read_text("utf-8")
