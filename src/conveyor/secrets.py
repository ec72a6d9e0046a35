"""Secret arguments: encrypted at rest, decrypted only inside the worker.

Mark arguments with ``@app.task(secret=["card", "token"])`` or the annotation
``conveyor.Secret[str]``. At enqueue each marked argument's JSON is sealed with AES-GCM
(the ``cryptography`` package: ``pip install 'conveyor[secrets]'``) and stored as

    {"$secret": "<key id>:<base64 of 12-byte nonce + ciphertext + tag>"}

so the store, listings, exports and logs never hold the plaintext, and can show it as
``•••`` without any key (:func:`mask_payload`). The task name and the parameter name are
the associated data: a sealed value moved to another task or argument does not open.

Keys come from ``$CONVEYOR_SECRET_KEYS``: comma-separated entries ``[id:]KEY`` where KEY
is 32 random bytes in base64 (``python -c "import os,base64;
print(base64.b64encode(os.urandom(32)).decode())"``), newest first. The first key seals;
every key listed opens (rotation: prepend the new key, keep the old ones until no job
sealed with them is left). Without ``id:``, the id is the first 8 hex digits of the
key's SHA-256. A producer without keys gets :class:`SecretKeyError` at enqueue; a worker
that cannot open a value sends the job to ``dead`` with the reason, it never runs it.

Example:
    >>> import base64, os
    >>> ring = KeyRing.parse("k1:" + base64.b64encode(bytes(32)).decode())
    >>> sealed = ring.seal('"4111 1111"', b"shop.charge:card")
    >>> sealed["$secret"].startswith("k1:")
    True
    >>> ring.open(sealed["$secret"], b"shop.charge:card")
    '"4111 1111"'
    >>> mask_payload('{"args":[],"kwargs":{"card":' + json.dumps(sealed) + '}}')
    '{"args":[],"kwargs":{"card":"•••"}}'
"""

from __future__ import annotations

import inspect
import json
import os
import re
import typing
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Annotated, Any, TypeVar

from conveyor.errors import ConfigurationError, ConveyorError

T = TypeVar("T")

ENV = "CONVEYOR_SECRET_KEYS"
MARK = "$secret"
MASK = "•••"


class _SecretMark:
    """The marker ``Secret[X]`` puts in ``Annotated``."""

    def __repr__(self) -> str:
        return "conveyor.Secret"


SECRET = _SecretMark()

#: ``Secret[str]``: an argument of type ``str`` encrypted at rest (``Annotated[str, ...]``,
#: so type checkers and the decoder see ``str``).
Secret = Annotated[T, SECRET]


class SecretKeyError(ConveyorError, ValueError):
    """No key, a malformed key, or a sealed value that no key opens."""


_SEALED = re.compile(r'\{\s*"\$secret"\s*:\s*"[^"\\]*"\s*\}')


def mask_payload(text: str | None) -> str | None:
    """``text`` with every sealed value shown as ``"•••"`` (a JSON string, so the
    result is still JSON). No key needed; plain payloads are returned as they are."""
    if not isinstance(text, str) or MARK not in text:
        return text
    return _SEALED.sub(json.dumps(MASK, ensure_ascii=False), text)


def is_sealed(value: object) -> bool:
    """True for a stored sealed value ``{"$secret": "..."}``."""
    return type(value) is dict and len(value) == 1 and isinstance(value.get(MARK), str)


def sealed_arguments(payload: str) -> list[str]:
    """Where a stored payload holds sealed values at the top level (``args[0]``,
    ``kwargs.card``); empty for a plain payload. A worker whose task declares no secret
    parameter uses it to refuse a job it would otherwise call with ciphertext."""
    if not isinstance(payload, str) or MARK not in payload:  # odd rows: the decoder says
        return []
    try:
        data = json.loads(payload)
        args, kwargs = data.get("args") or [], data.get("kwargs") or {}
        found = [f"args[{i}]" for i, v in enumerate(args) if is_sealed(v)]
        return found + [f"kwargs.{k}" for k, v in kwargs.items() if is_sealed(v)]
    except (ValueError, AttributeError, TypeError, RecursionError):
        return []  # the decoder reports a malformed payload


class KeyRing:
    """The keys of ``$CONVEYOR_SECRET_KEYS``, newest first."""

    def __init__(self, keys: Sequence[tuple[str, bytes]]) -> None:
        if not keys:
            raise SecretKeyError(f"no secret keys: set ${ENV} (see docs/secrets.md)")
        self.keys = list(keys)
        self._by_id = dict(reversed(self.keys))  # an id listed twice: the newest wins

    @classmethod
    def parse(cls, text: str) -> KeyRing:
        """Parse ``[id:]BASE64,[id:]BASE64,...``; SecretKeyError naming a bad entry."""
        import base64  # here, with hashlib: ~6 ms that `import conveyor` need not pay
        import binascii
        import hashlib

        keys: list[tuple[str, bytes]] = []
        for position, entry in enumerate((e.strip() for e in text.split(",")), start=1):
            if not entry:
                continue
            key_id, sep, encoded = entry.rpartition(":")
            try:
                key = base64.b64decode(encoded, validate=True)
            except (binascii.Error, ValueError):
                raise SecretKeyError(
                    f"${ENV} entry {position} is not base64 (format: [id:]BASE64,...)"
                ) from None
            if len(key) != 32:
                raise SecretKeyError(
                    f"${ENV} entry {position} is {len(key)} bytes; AES-256 keys are 32 bytes"
                )
            if not sep:
                key_id = hashlib.sha256(key).hexdigest()[:8]
            if not re.fullmatch(r"[A-Za-z0-9_.-]{1,64}", key_id):
                raise SecretKeyError(
                    f"${ENV} entry {position}: key id {key_id!r} must be 1-64 of A-Z a-z 0-9 _ . -"
                )
            keys.append((key_id, key))
        return cls(keys)

    @classmethod
    def from_env(cls) -> KeyRing:
        return cls.parse(os.environ.get(ENV, ""))

    def seal(self, plaintext: str, aad: bytes) -> dict[str, str]:
        """``{"$secret": "id:base64"}`` of ``plaintext`` (JSON text) under the newest key."""
        import base64

        key_id, key = self.keys[0]
        nonce = os.urandom(12)
        sealed = _aesgcm(key).encrypt(nonce, plaintext.encode("utf-8"), aad)
        return {MARK: f"{key_id}:{base64.b64encode(nonce + sealed).decode('ascii')}"}

    def open(self, token: str, aad: bytes) -> str:
        """The JSON text sealed in ``token``; SecretKeyError when no key opens it."""
        import base64
        import binascii

        key_id, _, encoded = token.partition(":")
        key = self._by_id.get(key_id)
        if key is None:
            raise SecretKeyError(
                f"sealed with key {key_id!r}, which is not in ${ENV} "
                f"(it has {', '.join(repr(i) for i, _ in self.keys)})"
            )
        try:
            blob = base64.b64decode(encoded, validate=True)
            from cryptography.exceptions import InvalidTag

            try:
                opened: bytes = _aesgcm(key).decrypt(blob[:12], blob[12:], aad)
                return opened.decode("utf-8")
            except InvalidTag:
                raise SecretKeyError(
                    f"key {key_id!r} does not open this value (a different key under the "
                    "same id, or the value was altered)"
                ) from None
        except (binascii.Error, ValueError) as exc:
            if isinstance(exc, SecretKeyError):
                raise
            raise SecretKeyError(f"malformed sealed value: {exc}") from None


def _aesgcm(key: bytes) -> Any:
    try:
        from cryptography.hazmat.primitives.ciphers.aead import AESGCM
    except ImportError:
        raise ConfigurationError(
            "secret arguments need the secrets extra: pip install 'conveyor[secrets]'"
        ) from None
    return AESGCM(key)


# -- which arguments are secret --------------------------------------------------------


def secret_parameters(fn: Callable[..., Any], named: Iterable[str]) -> tuple[str, ...]:
    """Names of ``fn``'s secret parameters: those in ``named`` (``secret=[...]``) plus
    those annotated ``Secret[...]``. ConfigurationError for a name ``fn`` does not take."""
    if isinstance(named, str):
        raise ConfigurationError(f"secret must be a list of parameter names, got {named!r}")
    parameters = inspect.signature(fn).parameters
    names = list(named)
    for name in names:
        param = parameters.get(name)
        if param is None or param.kind in (param.VAR_POSITIONAL, param.VAR_KEYWORD):
            raise ConfigurationError(
                f"secret names {name!r}, which is not a named parameter of "
                f"{getattr(fn, '__name__', 'the task')}()"
            )
    try:
        hints = typing.get_type_hints(fn, include_extras=True)
    except Exception:  # unresolvable forward references: only the names given count
        hints = {}
    for name, hint in hints.items():
        if name in parameters and name not in names and SECRET in getattr(hint, "__metadata__", ()):
            names.append(name)
    return tuple(names)


class Sealer:
    """Seals and opens one task's secret arguments (built once per task)."""

    def __init__(self, task_name: str, fn: Callable[..., Any], names: Sequence[str]) -> None:
        self.task_name = task_name
        self.names = frozenset(names)
        params = list(inspect.signature(fn).parameters.values())
        #: positional index -> parameter name, for the secret ones
        self.positions = {
            i: p.name
            for i, p in enumerate(params)
            if p.name in self.names and p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)
        }
        self._ring: KeyRing | None = None
        self._ring_text = ""

    def _aad(self, name: str) -> bytes:
        return f"{self.task_name}:{name}".encode()

    def ring(self) -> KeyRing:
        """The keys in ``$CONVEYOR_SECRET_KEYS`` (parsed again only when it changes)."""
        text = os.environ.get(ENV, "")
        if self._ring is None or text != self._ring_text:
            self._ring, self._ring_text = KeyRing.parse(text), text
        return self._ring

    def seal(
        self, args: Sequence[Any], kwargs: Mapping[str, Any]
    ) -> tuple[Sequence[Any], Mapping[str, Any]]:
        """The call with each secret argument replaced by its sealed form."""
        from conveyor.codec import encode

        ring = self.ring()
        if any(i < len(args) for i in self.positions):
            args = [
                ring.seal(encode(v, f"args[{i}]"), self._aad(self.positions[i]))
                if i in self.positions
                else v
                for i, v in enumerate(args)
            ]
        if self.names.intersection(kwargs):
            kwargs = {
                k: ring.seal(encode(v, f"kwargs.{k}"), self._aad(k)) if k in self.names else v
                for k, v in kwargs.items()
            }
        return args, kwargs

    def values(self, args: Sequence[Any], kwargs: Mapping[str, Any]) -> tuple[Any, ...]:
        """The plaintext values of the secret arguments of one opened call, for
        integrations that must keep them out of what they report (Sentry's frames).

        >>> def charge(card: str, amount: int, token: str = "") -> None: ...
        >>> Sealer("shop.charge", charge, ["card", "token"]).values(["4111", 30], {"token": "t"})
        ('4111', 't')
        """
        found = [args[i] for i in sorted(self.positions) if i < len(args)]
        found += [v for k, v in kwargs.items() if k in self.names]
        return tuple(found)

    def open_payload(self, payload: str) -> str:
        """The stored payload with the secret arguments opened (worker side only);
        SecretKeyError naming the argument when one cannot be opened."""
        if not isinstance(payload, str) or MARK not in payload:
            return payload  # plain, or an odd row the decoder reports
        try:
            data = json.loads(payload)
        except (ValueError, RecursionError):
            return payload  # malformed: the decoder reports it
        if not isinstance(data, dict):
            return payload
        args, kwargs = data.get("args"), data.get("kwargs")
        if isinstance(args, list):
            for i, name in self.positions.items():
                if i < len(args) and is_sealed(args[i]):
                    args[i] = self._open(name, args[i])
        if isinstance(kwargs, dict):
            for name in self.names:
                if is_sealed(kwargs.get(name)):
                    kwargs[name] = self._open(name, kwargs[name])
        return json.dumps(data, separators=(",", ":"))

    def _open(self, name: str, sealed: dict[str, str]) -> Any:
        try:
            return json.loads(self.ring().open(sealed[MARK], self._aad(name)))
        except SecretKeyError as exc:
            raise SecretKeyError(f"secret argument {name!r} cannot be opened: {exc}") from None


# -- queries ---------------------------------------------------------------------------

#: jobs looked at to tell whether a ``--where`` field holds sealed values
_WHERE_PROBE = 200


def secret_where_error(backend: Any, job_filter: Any) -> str | None:
    """The message of :func:`refuse_secret_where`, or None (for pages that show it)."""
    try:
        refuse_secret_where(backend, job_filter)
    except SecretKeyError as exc:
        return str(exc)
    return None


def refuse_secret_where(backend: Any, job_filter: Any) -> None:
    """SecretKeyError when a ``--where`` condition names a secret argument: its stored
    value is ciphertext, so the condition could never match, and a query on it would be
    a way to test guesses. Looks at up to 200 of the jobs the rest of the filter selects
    (no key needed); a field no stored job seals is a plain field."""
    conditions = [w for w in job_filter.where if w.root in ("args", "kwargs") and w.path]
    if not conditions:
        return
    from conveyor import records
    from conveyor.backends.base import JobListParams

    found = backend.job_list(
        JobListParams(limit=_WHERE_PROBE, filter=records.replace(job_filter, where=()))
    )
    for job in found:
        if MARK not in (job.payload or ""):
            continue
        try:
            data = json.loads(job.payload)
        except ValueError:
            continue
        for condition in conditions:
            top = data.get(condition.root) if isinstance(data, dict) else None
            key = condition.path[0]
            if isinstance(top, list) and isinstance(key, int) and key < len(top):
                value = top[key]
            elif isinstance(top, dict) and isinstance(key, str):
                value = top.get(key)
            else:
                continue
            if is_sealed(value):
                shown = ".".join(str(p) for p in (condition.root, *condition.path))
                raise SecretKeyError(
                    f"--where {shown}: {job.task} stores this argument encrypted "
                    "(a secret argument), so it cannot be queried"
                )
