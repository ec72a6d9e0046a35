"""Dashboard tokens and their roles, and the token file that lists them.

Two roles, after Oban Web's access modes:

* ``viewer``: reads every page; no action is offered, and a POST of one answers 403
  with a one-line reason. Payloads are shown with secret arguments masked, the raw
  download included (an operator's download keeps the stored, sealed value).
* ``operator``: everything, every action recorded under the token's name (``/audit``).

A token file (``conveyor dashboard --token-file FILE``) has one token a line, ``NAME ROLE
TOKEN``; ``#`` starts a comment, blank lines are skipped. A line holding one field is
the format before roles (the file's token alone): an operator named ``token-file``.
A file that other users may write is refused (they could add an operator); one they may
read gets a warning (they could act as anyone in it): ``chmod 600 FILE``.

Example:
    >>> [(t.name, t.role) for t in parse_tokens("alice operator a1b2c3\\n# ci\\nci viewer v9\\n")]
    [('alice', 'operator'), ('ci', 'viewer')]
    >>> parse_tokens("bob admin x1")
    Traceback (most recent call last):
    conveyor.errors.ConfigurationError: line 1: role 'admin' is not viewer or operator
"""

from __future__ import annotations

import os
import re
import stat
from collections.abc import Sequence
from pathlib import Path

from conveyor.errors import ConfigurationError
from conveyor.records import record

VIEWER = "viewer"
OPERATOR = "operator"
ROLES = (VIEWER, OPERATOR)
#: The name of the one token of ``$CONVEYOR_DASHBOARD_TOKEN`` (an operator).
ENV_NAME = "env"
#: The name of the one token of a token file in the format before roles (an operator).
LEGACY_NAME = "token-file"
_NAME = re.compile(r"[A-Za-z0-9_.@+-]{1,64}")


@record
class DashboardToken:
    """One token: the name actions are recorded under, its role, and its secret text."""

    name: str
    role: str
    secret: str

    @property
    def may_act(self) -> bool:
        return self.role == OPERATOR

    def __repr__(self) -> str:  # never the secret, in a log or a traceback
        return f"DashboardToken(name={self.name!r}, role={self.role!r})"


def parse_tokens(text: str) -> list[DashboardToken]:
    """The tokens in a token file's text (ConfigurationError naming the line)."""
    found: list[DashboardToken] = []
    for number, raw in enumerate(text.splitlines(), start=1):
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        fields = line.split()
        if len(fields) == 1:
            found.append(DashboardToken(LEGACY_NAME, OPERATOR, fields[0]))
            continue
        if len(fields) != 3:
            raise ConfigurationError(
                f"line {number}: expected NAME ROLE TOKEN (or one token alone), "
                f"found {len(fields)} fields"
            )
        name, role, secret = fields
        if not _NAME.fullmatch(name):
            raise ConfigurationError(
                f"line {number}: name {name!r} must be 1-64 of A-Z a-z 0-9 _ . @ + -"
            )
        if role not in ROLES:
            raise ConfigurationError(f"line {number}: role {role!r} is not viewer or operator")
        found.append(DashboardToken(name, role, secret))
    check_tokens(found)
    return found


def check_tokens(tokens: Sequence[DashboardToken]) -> None:
    """Names and secrets are each unique (a shared secret would make the name a guess)."""
    names = [t.name for t in tokens]
    for name in names:
        if names.count(name) > 1:
            raise ConfigurationError(f"the token name {name!r} is given twice")
    secrets = [t.secret for t in tokens]
    for t in tokens:
        if secrets.count(t.secret) > 1:
            raise ConfigurationError(f"the tokens named {t.name!r} and another are the same")
        if not t.secret.strip():
            raise ConfigurationError(f"the token named {t.name!r} is empty")


def read_token_file(path: str | os.PathLike[str]) -> tuple[list[DashboardToken], str | None]:
    """The tokens of the file at ``path`` and a warning to print (None: none).

    ConfigurationError (one line, naming the file) when it cannot be read, holds no
    token, is malformed, or other users may write it."""
    try:
        mode = os.stat(path).st_mode
        text = Path(path).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigurationError(f"cannot read the token file {path}: {exc}") from None
    if mode & (stat.S_IWGRP | stat.S_IWOTH):
        raise ConfigurationError(
            f"the token file {path} is writable by other users, who could add a token: "
            f"chmod 600 {path}"
        )
    try:
        tokens = parse_tokens(text)
    except ConfigurationError as exc:
        raise ConfigurationError(f"the token file {path}: {exc}") from None
    if not tokens:
        raise ConfigurationError(f"the token file {path} is empty")
    warning = None
    if mode & stat.S_IROTH:
        warning = (
            f"warning: the token file {path} is readable by every local user: chmod 600 {path}"
        )
    return tokens, warning
