"""The flow control a job's task declares, as ``conveyor job`` shows it (with ``--app``,
or an app the configuration names): sequences, fair keys, limits, debounce, throttle.

Example:
    >>> import conveyor
    >>> app = conveyor.App("memory://")
    >>> @app.task(sequence_key=lambda a: a, on_failure="skip")
    ... def t(a: str) -> None: ...
    >>> flow_of(app, t.options.name)
    {'sequence_key': 'by arguments', 'on_failure': 'skip'}
"""

from __future__ import annotations

from conveyor.app import App

#: The task options shown, in this order (those left unset are not).
SHOWN = (
    "unique_key",
    "on_conflict",
    "debounce",
    "max_wait",
    "throttle",
    "sequence_key",
    "on_failure",
    "fair_key",
    "fair_weights",
    "concurrency",
    "rate",
    "limit_key",
)


def flow_of(app: App, task: str) -> dict[str, str]:
    """The flow options ``task`` declares in ``app`` (empty: unknown task, or none)."""
    found = app.tasks.get(task)
    if found is None:
        return {}
    shown: dict[str, str] = {}
    for name in SHOWN:
        value = getattr(found.options, name)
        if value is None or (name == "on_conflict" and value == "keep"):
            continue
        shown[name] = "by arguments" if callable(value) else str(value)
    if "sequence_key" in shown and "on_failure" not in shown:
        shown["on_failure"] = "block"
    return shown
