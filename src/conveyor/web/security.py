"""Who may use the dashboard, and how actions are protected from other sites.

The model, in the order a request meets it:

1. **Host**: without a token the dashboard serves only loopback ``Host`` names, so a
   hostile page cannot reach it through DNS rebinding (a name of theirs resolving to
   127.0.0.1 would still carry their name in ``Host``).
2. **Token** (when set): ``Authorization: Bearer T``, or a cookie set by visiting any page
   once with ``?token=T`` (the dashboard then redirects to drop it from the address bar).
   Anything else gets 401. Binding beyond loopback without a token is refused at start
   (:func:`check_bind`).
3. **Actions** are POST only, and need both a same-origin ``Origin`` (or, when a browser
   sends none, ``Referer``) and a CSRF token: a random per-browser nonce in a
   ``SameSite=Strict`` cookie, and in the form its HMAC under a per-app secret (the
   "signed double-submit cookie"). Failing either gets 403.

Example:
    >>> check_bind("127.0.0.1", None)
    >>> check_bind("0.0.0.0", None)
    Traceback (most recent call last):
    conveyor.errors.ConfigurationError: refusing to bind the dashboard to 0.0.0.0 without a token: ...
"""

from __future__ import annotations

import hashlib
import hmac
import ipaddress
import secrets
from urllib.parse import parse_qsl, urlsplit

from starlette.middleware.base import BaseHTTPMiddleware, RequestResponseEndpoint
from starlette.requests import Request
from starlette.responses import PlainTextResponse, RedirectResponse, Response
from starlette.types import ASGIApp

from conveyor.errors import ConfigurationError

TOKEN_COOKIE = "conveyor_token"
CSRF_COOKIE = "conveyor_csrf"
CSRF_FIELD = "csrf"
SAFE_METHODS = frozenset({"GET", "HEAD", "OPTIONS"})
LOOPBACK_NAMES = frozenset({"localhost", "127.0.0.1", "::1"})

# A strict CSP is cheap here: every script and style is served by the dashboard itself.
SECURITY_HEADERS = {
    "Content-Security-Policy": "default-src 'self'; img-src 'self' data:; frame-ancestors 'none'",
    "X-Frame-Options": "DENY",
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "same-origin",
}


def is_loopback(host: str) -> bool:
    """True for ``localhost`` and loopback addresses (``127.0.0.0/8``, ``::1``)."""
    host = host.strip("[]").lower()
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def check_bind(host: str, token: str | None) -> None:
    """Refuse to serve beyond loopback without a token (raises ConfigurationError)."""
    if not is_loopback(host) and not token:
        raise ConfigurationError(
            f"refusing to bind the dashboard to {host} without a token: anyone who can "
            "reach that address could retry, cancel and delete jobs. Pass --token "
            "(or $CONVEYOR_DASHBOARD_TOKEN), or bind to 127.0.0.1 and use an SSH tunnel."
        )


class Guard:
    """The per-app secrets and checks; one per ``create_app`` call, never shared."""

    def __init__(self, token: str | None) -> None:
        self.token = token
        self._secret = secrets.token_bytes(32)

    def csrf_for(self, nonce: str) -> str:
        """The form value that proves a page was rendered for the browser holding ``nonce``."""
        return hmac.new(self._secret, nonce.encode(), hashlib.sha256).hexdigest()

    def token_ok(self, given: str | None) -> bool:
        return (
            self.token is not None
            and given is not None
            and hmac.compare_digest(given.encode(), self.token.encode())
        )

    def authorized(self, request: Request) -> bool:
        if self.token is None:
            return True
        auth = request.headers.get("authorization", "")
        if auth.lower().startswith("bearer ") and self.token_ok(auth[7:].strip()):
            return True
        return self.token_ok(request.cookies.get(TOKEN_COOKIE))

    def csrf_ok(self, request: Request, submitted: str | None) -> bool:
        nonce = request.cookies.get(CSRF_COOKIE)
        if not nonce or not submitted:
            return False
        return hmac.compare_digest(self.csrf_for(nonce), submitted)


def same_origin(request: Request) -> bool:
    """The action comes from a page of this dashboard (Origin, else Referer)."""
    own = f"{request.url.scheme}://{request.headers.get('host', '')}".lower()
    origin = request.headers.get("origin")
    if origin is not None:
        return origin.lower() == own  # "null" (sandboxed or privacy-stripped) is refused
    referer = request.headers.get("referer")
    if not referer:
        return False
    parts = urlsplit(referer)
    return f"{parts.scheme}://{parts.netloc}".lower() == own


class SecurityMiddleware(BaseHTTPMiddleware):
    """Applies the module's model to every request; pages read ``request.state.csrf``."""

    def __init__(self, app: ASGIApp, guard: Guard) -> None:
        super().__init__(app)
        self.guard = guard

    async def dispatch(self, request: Request, call_next: RequestResponseEndpoint) -> Response:
        refusal = await self._refusal(request)
        if refusal is not None:
            return _with_headers(refusal)
        login = request.query_params.get("token")
        if login is not None:
            # Logged in by ?token=: keep it in a cookie, drop it from the address bar.
            target = request.url.remove_query_params("token")
            response: Response = RedirectResponse(
                str(target.path) + (f"?{target.query}" if target.query else ""), status_code=303
            )
            response.set_cookie(
                TOKEN_COOKIE,
                login,
                httponly=True,
                samesite="strict",
                secure=request.url.scheme == "https",
            )
            return _with_headers(response)
        nonce = request.cookies.get(CSRF_COOKIE) or secrets.token_urlsafe(24)
        request.state.csrf = self.guard.csrf_for(nonce)
        response = await call_next(request)
        if request.cookies.get(CSRF_COOKIE) != nonce:
            response.set_cookie(
                CSRF_COOKIE,
                nonce,
                httponly=True,
                samesite="strict",
                secure=request.url.scheme == "https",
            )
        return _with_headers(response)

    async def _refusal(self, request: Request) -> Response | None:
        guard = self.guard
        if guard.token is None:
            host = urlsplit(f"//{request.headers.get('host', '')}").hostname or ""
            if not is_loopback(host):
                return PlainTextResponse(
                    "403: this dashboard has no token, so it answers only to loopback "
                    "host names (localhost, 127.0.0.1)",
                    status_code=403,
                )
        login = request.query_params.get("token")
        if not guard.authorized(request) and not (login is not None and guard.token_ok(login)):
            return PlainTextResponse(
                "401: this dashboard needs its token: open it once with ?token=..., or send "
                "'Authorization: Bearer ...'",
                status_code=401,
                headers={"WWW-Authenticate": "Bearer"},
            )
        if request.method in SAFE_METHODS:
            return None
        if not same_origin(request):
            return PlainTextResponse("403: cross-origin request refused", status_code=403)
        submitted = (await form_fields(request)).get(CSRF_FIELD)
        if not guard.csrf_ok(request, submitted):
            return PlainTextResponse(
                "403: missing or invalid CSRF token (reload the page and try again)",
                status_code=403,
            )
        return None


async def form_fields(request: Request) -> dict[str, str]:
    """The fields of a urlencoded form post (the only kind the dashboard's pages send).

    Parsed here rather than with ``request.form()``, which needs python-multipart for
    every content type; other content types give no fields, so their CSRF check fails.
    """
    content_type = request.headers.get("content-type", "").split(";")[0].strip().lower()
    if content_type != "application/x-www-form-urlencoded":
        return {}
    body = await request.body()
    return dict(parse_qsl(body.decode("utf-8", "replace"), keep_blank_values=True))


def _with_headers(response: Response) -> Response:
    for name, value in SECURITY_HEADERS.items():
        response.headers.setdefault(name, value)
    return response
