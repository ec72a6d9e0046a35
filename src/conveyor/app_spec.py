"""The ``module:attribute`` form that names an app (``--app``, ``APP``, ``app = ...`` in
a config file), checked without importing anything: below the app and the config files.

Example:
    >>> parse_app_spec("pkg.tasks:app")
    ('pkg.tasks', 'app')
"""

from __future__ import annotations

from conveyor.errors import ConfigurationError


def parse_app_spec(spec: str) -> tuple[str, str]:
    """``"pkg.tasks:app"`` -> ``("pkg.tasks", "app")``; ConfigurationError otherwise."""
    module_name, sep, attr = spec.partition(":")
    if not sep or not all(
        part.isidentifier() for part in [*module_name.split("."), *attr.split(".")]
    ):
        raise ConfigurationError(
            f"APP must look like module:attribute (e.g. tasks:app), got {spec!r}"
        )
    return module_name, attr
