"""Who may use the dashboard, and how actions are protected from other sites.

The model, in the order a request meets it:

1. **Host**: without a token the dashboard serves only loopback ``Host`` names, so a
   hostile page cannot reach it through DNS rebinding (a name of theirs resolving to
   127.0.0.1 would still carry their name in ``Host``).
2. **Token** (when set; several, each with a name and a role: :mod:`conveyor.web.tokens`):
   ``Authorization: Bearer T``, or a cookie set by visiting any page
   once with ``?token=T`` (the dashboard then redirects to the same page, on this host, to
   drop it from the address bar). Anything else gets 401. Binding beyond loopback
   without a token is refused at start (:func:`check_bind`). The cookie is named after
   the port (``conveyor_token_8000``), because browsers send a host's cookies to every
   port of it; and it holds an HMAC of the token, never the token, so another service on
   the same host that receives it learns nothing it could use elsewhere.
3. **Actions** are POST only, and need both a same-origin ``Origin`` (or, when a browser
   sends none, ``Referer``) and a CSRF token: a random per-browser nonce in a
   ``SameSite=Strict`` cookie, and in the form its HMAC under a per-app secret (the
   "signed double-submit cookie"). Failing either gets 403; so does any POST of a
   ``viewer`` token, first, with its one-line reason.
4. **Headers** on every answer: a CSP allowing only the dashboard's own scripts, styles
   and form targets (``form-action 'self'``, ``base-uri 'none'``), no framing, no sniffing.

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
from collections.abc import Sequence
from urllib.parse import parse_qsl, quote, urlsplit

from starlette.middleware.base import BaseHTTPMiddleware, RequestResponseEndpoint
from starlette.requests import Request
from starlette.responses import PlainTextResponse, RedirectResponse, Response
from starlette.types import ASGIApp

from conveyor.errors import ConfigurationError
from conveyor.web.tokens import OPERATOR, DashboardToken, check_tokens

TOKEN_COOKIE = "conveyor_token"  # the prefix: the name ends with the port (token_cookie)
CSRF_COOKIE = "conveyor_csrf"
CSRF_FIELD = "csrf"
SAFE_METHODS = frozenset({"GET", "HEAD", "OPTIONS"})
LOOPBACK_NAMES = frozenset({"localhost", "127.0.0.1", "::1"})
#: Who acts on a dashboard without tokens (it answers loopback names only).
LOCAL = DashboardToken("local", OPERATOR, "")
#: The CSRF value of a page rendered for a viewer: no form is drawn with it
#: (:func:`conveyor.web.html.post_button`), and none would be accepted.
NO_ACTIONS = ""

# A strict CSP is cheap here: every script and style is served by the dashboard itself.
SECURITY_HEADERS = {
    "Content-Security-Policy": (
        "default-src 'self'; img-src 'self' data:; frame-ancestors 'none'; "
        "form-action 'self'; base-uri 'none'"
    ),
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


def check_bind(host: str, token: str | Sequence[DashboardToken] | None) -> None:
    """Refuse to serve beyond loopback without a token (raises ConfigurationError)."""
    if not is_loopback(host) and not token:
        raise ConfigurationError(
            f"refusing to bind the dashboard to {host} without a token: anyone who can "
            "reach that address could retry, cancel and delete jobs. Set "
            "$CONVEYOR_DASHBOARD_TOKEN (or pass --token-file FILE), or bind to 127.0.0.1 "
            "and use an SSH tunnel."
        )


class Guard:
    """The per-app secrets and checks; one per ``create_app`` call, never shared.

    ``tokens``: who may use the dashboard (none: anyone on loopback, as an operator
    named :data:`LOCAL`)."""

    def __init__(self, tokens: Sequence[DashboardToken] = ()) -> None:
        check_tokens(tokens)
        self.tokens = tuple(tokens)
        self._secret = secrets.token_bytes(32)

    @property
    def token(self) -> str | None:
        """Whether a token is required (the first one's secret; None: no token)."""
        return self.tokens[0].secret if self.tokens else None

    def csrf_for(self, nonce: str) -> str:
        """The form value that proves a page was rendered for the browser holding ``nonce``."""
        return hmac.new(self._secret, _bytes(nonce), hashlib.sha256).hexdigest()

    def session_value(self, token: DashboardToken) -> str:
        """What the login cookie holds: derived from the token, so it survives a restart
        of the dashboard but does not reveal the token (which also works as a Bearer)."""
        return hmac.new(_bytes(token.secret), b"conveyor-dashboard-cookie", "sha256").hexdigest()

    def token_for(self, given: str | None) -> DashboardToken | None:
        """The token whose secret is ``given`` (every one compared, in constant time)."""
        found = None
        for token in self.tokens:
            if given is not None and _same(given, token.secret):
                found = token
        return found

    def token_ok(self, given: str | None) -> bool:
        return self.token_for(given) is not None

    def who(self, request: Request) -> DashboardToken | None:
        """The token this request carries (Bearer, else the login cookie); :data:`LOCAL`
        when the dashboard has no token; None when it carries none of them."""
        if not self.tokens:
            return LOCAL
        auth = request.headers.get("authorization", "")
        if auth.lower().startswith("bearer "):
            bearer = self.token_for(auth[7:].strip())
            if bearer is not None:
                return bearer
        cookie = request.cookies.get(token_cookie(request))
        found = None
        for token in self.tokens:
            if cookie is not None and _same(cookie, self.session_value(token)):
                found = token
        return found

    def authorized(self, request: Request) -> bool:
        return self.who(request) is not None

    def csrf_ok(self, request: Request, submitted: str | None) -> bool:
        nonce = request.cookies.get(csrf_cookie(request))
        if not nonce or not submitted:
            return False
        return _same(self.csrf_for(nonce), submitted)


def _bytes(text: str) -> bytes:
    # Any text a client sends (non-ASCII, lone surrogates) must compare, never raise.
    return text.encode("utf-8", "surrogatepass")


def _same(given: str, expected: str) -> bool:
    """Constant-time comparison of two texts of any characters."""
    return hmac.compare_digest(_bytes(given), _bytes(expected))


def _port(request: Request) -> int:
    """The port this dashboard was reached on (the socket's, else the Host header's)."""
    server = request.scope.get("server")
    if server and server[1] is not None:
        return int(server[1])
    return request.url.port or (443 if request.url.scheme == "https" else 80)


def token_cookie(request: Request) -> str:
    """``conveyor_token_<port>``: a dashboard on another port of the same host keeps its own."""
    return f"{TOKEN_COOKIE}_{_port(request)}"


def csrf_cookie(request: Request) -> str:
    """``conveyor_csrf_<port>``, for the same reason as :func:`token_cookie`."""
    return f"{CSRF_COOKIE}_{_port(request)}"


def local_path(request: Request) -> str:
    """The request's path and query (without ``token``), as a target that stays on this
    host: leading slashes and backslashes collapse to one, so ``//evil.example/`` can
    never become a protocol-relative redirect to another site.

    Example: ``GET //evil.example/?token=T&a=1`` redirects to ``/evil.example/?a=1``.
    """
    target = request.url.remove_query_params("token")
    path = "/" + quote(target.path.lstrip("/\\"), safe="/:@!$&'()*+,;=-._~")
    return path + (f"?{target.query}" if target.query else "")


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
        login = self.guard.token_for(request.query_params.get("token"))
        if login is not None:
            # Logged in by ?token=: keep it in a cookie, drop it from the address bar.
            response: Response = RedirectResponse(local_path(request), status_code=303)
            response.set_cookie(
                token_cookie(request),
                self.guard.session_value(login),
                httponly=True,
                samesite="strict",
                secure=request.url.scheme == "https",
            )
            return _with_headers(response)
        nonce = request.cookies.get(csrf_cookie(request)) or secrets.token_urlsafe(24)
        user = self.guard.who(request)
        request.state.user = user
        # A viewer's pages are drawn without forms (post_button draws none for it).
        request.state.csrf = self.guard.csrf_for(nonce) if user and user.may_act else NO_ACTIONS
        response = await call_next(request)
        if request.cookies.get(csrf_cookie(request)) != nonce:
            response.set_cookie(
                csrf_cookie(request),
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
        user = guard.who(request)
        if user is not None and not user.may_act:
            return PlainTextResponse(
                f"403: {user.name} has a viewer token, which only reads; actions need an "
                "operator token",
                status_code=403,
            )
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
