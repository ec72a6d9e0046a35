"""``conveyor check``'s audit query for any SQL store, from one text
(``integrity_check.sql``): the state lists come from :mod:`conveyor.states`, the rest
from the store's spellings (its dialect module's ``INTEGRITY``).

Example:
    >>> "'expired'" in integrity_sql(dict.fromkeys(SPELLINGS, "x"))
    True
"""

from __future__ import annotations

import os
from collections.abc import Mapping

from conveyor.rules import sql_states
from conveyor.states import ACTIVE_STATES, FINISHED_STATES, JobState

#: What each store spells its own way in the audit.
SPELLINGS = (
    "quote",  # a function: a value as an SQL literal, for the detail text
    "stale_before",  # the heartbeat time before which a worker is silent
    "queue_unusable",  # a queued job's queue no worker can consume
    "waiting_on_text",  # waiting_on in the detail text
    "run_at_text",  # run_at in the detail text
    "run_at_never",  # a run_at that never comes
    "lease_text",  # lease_until in the detail text
    "lease_never",  # a lease_until that never expires
)


def _states(states: frozenset[JobState] | tuple[JobState, ...]) -> str:
    return sql_states(tuple(sorted(states, key=lambda s: s.value)))


def _read(name: str) -> str:
    """A text file shipped beside this module (by path; :mod:`importlib.resources` only
    when the package is not on the file system, as the stores' ``read_packaged``)."""
    try:
        with open(os.path.join(os.path.dirname(__file__), name), encoding="utf-8") as f:
            return f.read()
    except (FileNotFoundError, NotADirectoryError):
        from importlib import resources

        return resources.files(__package__).joinpath(name).read_text("utf-8")


def integrity_sql(spellings: Mapping[str, str]) -> str:
    """The audit query with the state lists and ``spellings`` (one per :data:`SPELLINGS`)
    filled in."""
    text = _read("integrity_check.sql")
    fill = {
        "known_states": _states(tuple(JobState)),
        "finished_states": _states(FINISHED_STATES),
        "active_states": _states(ACTIVE_STATES),
        **{name: spellings[name] for name in SPELLINGS},
    }
    for name, value in fill.items():
        text = text.replace("{" + name + "}", value)
    return text
