"""The shared deployment's application: the dashboard as an ASGI app (``st.App``) on a Unix
socket that only nginx reaches, with the sign-in routes nginx asks before it serves anything.

Started by ``scripts/shared_dashboard.py`` (``uvicorn --uds … dashboard.gateway:app``), with
nginx in front (deploy/nginx.conf.in). What each piece holds (docs/SECURITY.md):

- ``/_compilelab/signin``: a plain HTML form (no script, nothing from elsewhere). A password is
  looked at only when the client's address is not locked out (dashboard/signin_throttle.py:
  every failure logged with the address, the 10th locks it, the operator lifts it); a right one
  sets a random session token in an HttpOnly, SameSite=Strict cookie.
- ``/_compilelab/auth`` (and ``/auth/editor`` for uploads): nginx's ``auth_request`` for every
  other request, the Streamlit page, its files, its websocket and its upload endpoint included.
  The answer carries the session's key, which nginx hands Streamlit as a header mapped into
  ``st.user``: the dashboard reads the role by that key (dashboard/auth.py), and Streamlit lets a
  session be resumed only by a connection with the same ``st.user``.
- ``/_compilelab/signout``: forgets the session (every tab of it) and the cookie.
- ``StreamlitGuard``: what Streamlit would still do for a signed-in client and this deployment
  does not: ``/_stcore/metrics``, and websocket messages that act on every user or on the
  server (``clear_cache`` empties every user's caches; run-on-save, git info, debug).
"""

from __future__ import annotations

import asyncio
import html
import logging
import os
import re
import sys
from pathlib import Path
from typing import Any

import streamlit as st
from starlette.concurrency import run_in_threadpool
from starlette.middleware import Middleware
from starlette.requests import Request
from starlette.responses import HTMLResponse, PlainTextResponse, RedirectResponse, Response
from starlette.routing import Route

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:  # uvicorn imports this module by name from the repository root
    sys.path.insert(0, str(ROOT))

from dashboard import auth, signin_sessions  # noqa: E402
from dashboard.signin_throttle import LOG, client_key, state_dir  # noqa: E402

PREFIX = "/_compilelab"
SIGNIN, SIGNOUT = f"{PREFIX}/signin", f"{PREFIX}/signout"
AUTH, AUTH_EDITOR = f"{PREFIX}/auth", f"{PREFIX}/auth/editor"
ROLE_HEADER = "X-CompileLab-Role"
FAILED_DELAY_S = 1.0  # per wrong password, on top of nginx's rate and the lockout
MAX_FORM_BYTES = 4096
BLOCKED_PATHS = ("/_stcore/metrics",)
DROPPED_MESSAGES = frozenset({"clear_cache", "set_run_on_save", "load_git_info",
                              "debug_disconnect_websocket", "debug_shutdown_runtime"})
_TARGET = re.compile(r"/(?![/\\])[\x21-\x7e]{0,2000}")  # a local path, printable, no scheme

PAGE = """<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>Compile Lab: sign in</title>
<meta name="viewport" content="width=device-width, initial-scale=1">
<style>
body {{ font-family: system-ui, sans-serif; max-width: 26rem; margin: 12vh auto; padding: 0 1rem;
       color: #262730; }}
h1 {{ font-size: 1.6rem; }} p {{ color: #555; }}
input {{ width: 100%; box-sizing: border-box; padding: .55rem; font-size: 1rem; margin: .3rem 0 1rem; }}
button {{ padding: .55rem 1.2rem; font-size: 1rem; background: #ff4b4b; color: white; border: 0;
         border-radius: .4rem; }}
.error {{ color: #9b1c1c; background: #fdecec; padding: .6rem .8rem; border-radius: .4rem; }}
</style></head>
<body><h1>Compile Lab</h1>
<p>This dashboard is shared: sign in with the password your team was given.</p>
{message}
<form method="post" action="{action}">
<label for="password">Password</label>
<input id="password" name="password" type="password" autocomplete="current-password" autofocus>
<button type="submit">Sign in</button>
</form></body></html>
"""
PAGE_HEADERS = {
    "Content-Security-Policy": "default-src 'none'; style-src 'unsafe-inline'; "
                               "form-action 'self'; frame-ancestors 'none'; base-uri 'none'",
    "Cache-Control": "no-store",
}


def _configure_log() -> None:
    """Sign-in events to stderr and to ``signin.log`` in the state folder (the operator's
    record of who tried from where)."""
    if LOG.handlers:
        return
    fmt = logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s")
    handlers: list[logging.Handler] = [logging.StreamHandler(sys.stderr)]
    folder = state_dir()
    folder.mkdir(parents=True, exist_ok=True, mode=0o700)
    path = folder / "signin.log"
    os.close(os.open(path, os.O_CREAT | os.O_APPEND | os.O_WRONLY, 0o600))  # owner only
    handlers.append(logging.FileHandler(path, encoding="utf-8"))
    for handler in handlers:
        handler.setFormatter(fmt)
        LOG.addHandler(handler)
    LOG.setLevel(logging.INFO)
    LOG.propagate = False


def safe_target(query: str) -> str:
    """Where to go after signing in: the ``next=`` of the query (nginx puts the original request
    URI there verbatim), if it is a path on this server; else the home page."""
    target = query[len("next="):] if query.startswith("next=") else ""
    if not _TARGET.fullmatch(target) or target.startswith(PREFIX + "/"):
        return "/"
    return target


def _page(target: str, message: str = "", status: int = 200) -> HTMLResponse:
    action = html.escape(f"{SIGNIN}?next={target}", quote=True)
    shown = f'<p class="error" role="alert">{html.escape(message)}</p>' if message else ""
    return HTMLResponse(PAGE.format(message=shown, action=action), status_code=status,
                        headers=PAGE_HEADERS)


def _address(request: Request) -> str:
    """The client's address as nginx saw it (``X-Real-IP``, which nginx always overwrites)."""
    return client_key(request.headers.get("x-real-ip"))


async def _password(request: Request) -> str:
    body = await request.body()
    if len(body) > MAX_FORM_BYTES:
        return ""
    form = await request.form(max_files=0, max_fields=8)
    value = form.get("password")
    return value if isinstance(value, str) else ""


async def signin(request: Request) -> Response:
    target = safe_target(request.url.query)
    if request.method != "POST":
        return _page(target)
    address, throttle = _address(request), auth.throttle()
    verdict = await run_in_threadpool(throttle.check, address)
    if not verdict.allowed:  # the password is not even read
        LOG.warning("sign-in refused from %s: locked for %d more s", address,
                    verdict.retry_after_s)
        return _page(target, verdict.message(), 429)
    role = auth.role_for(await _password(request))
    if role is None:
        verdict = await run_in_threadpool(throttle.failed, address)
        await asyncio.sleep(FAILED_DELAY_S)
        return _page(target, verdict.message() or "Wrong password.",
                     403 if verdict.allowed else 429)
    await run_in_threadpool(throttle.succeeded, address)
    token = signin_sessions.STORE.issue(role, address)
    LOG.info("signed in from %s as %s", address, role)
    response = RedirectResponse(target, status_code=303)
    response.set_cookie(signin_sessions.COOKIE, token, max_age=signin_sessions.SESSION_TTL_S,
                        path="/", httponly=True, samesite="strict",
                        secure=request.headers.get("x-forwarded-proto") == "https")
    return response


async def signout(request: Request) -> Response:
    token = request.cookies.get(signin_sessions.COOKIE)
    session = signin_sessions.STORE.by_token(token)
    if session is not None and token:
        signin_sessions.STORE.revoke(signin_sessions.key_of(token))
        LOG.info("signed out from %s (%s)", _address(request), session.role)
    response = RedirectResponse(SIGNIN, status_code=303)
    response.delete_cookie(signin_sessions.COOKIE, path="/")
    return response


def _auth_answer(request: Request, editors_only: bool) -> Response:
    token = request.cookies.get(signin_sessions.COOKIE)
    session = signin_sessions.STORE.by_token(token)
    if session is None or not token:
        return PlainTextResponse("sign in first", status_code=401)
    role = auth.VIEWER if auth.forced_readonly() else session.role
    if editors_only and role != auth.EDITOR:
        return PlainTextResponse("editors only", status_code=403)
    return Response(status_code=204, headers={
        signin_sessions.KEY_HEADER: signin_sessions.key_of(token), ROLE_HEADER: role})


async def check(request: Request) -> Response:
    return _auth_answer(request, editors_only=False)


async def check_editor(request: Request) -> Response:
    return _auth_answer(request, editors_only=True)


def _message_kind(data: bytes) -> str | None:
    from google.protobuf.message import DecodeError
    from streamlit.proto.BackMsg_pb2 import BackMsg

    try:
        return BackMsg.FromString(data).WhichOneof("type")
    except DecodeError:
        return None  # Streamlit answers a garbled message itself


class StreamlitGuard:
    """ASGI middleware in front of Streamlit: 404 for ``BLOCKED_PATHS``, and the websocket's
    ``DROPPED_MESSAGES`` never reach the session (logged instead)."""

    def __init__(self, app: Any) -> None:
        self.app = app

    async def __call__(self, scope: dict, receive: Any, send: Any) -> None:
        path = scope.get("path", "")
        if scope["type"] == "http" and path.rstrip("/") in BLOCKED_PATHS:
            await PlainTextResponse("not here", status_code=404)(scope, receive, send)
            return
        if scope["type"] == "websocket":
            receive = self._filtered(receive)
        await self.app(scope, receive, send)

    @staticmethod
    def _filtered(receive: Any) -> Any:
        async def next_message() -> dict:
            while True:
                message = await receive()
                data = message.get("bytes") if message["type"] == "websocket.receive" else None
                kind = _message_kind(data) if data else None
                if kind not in DROPPED_MESSAGES:
                    return message
                LOG.warning("dropped a '%s' message from a dashboard client", kind)
        return next_message


ROUTES = [
    Route(SIGNIN, signin, methods=["GET", "POST"]),
    Route(SIGNOUT, signout, methods=["GET"]),
    Route(AUTH, check, methods=["GET"]),
    Route(AUTH_EDITOR, check_editor, methods=["GET"]),
]

def configure_streamlit(allowed_hosts: list[str]) -> None:
    """Streamlit's settings for the gateway. ``st.App`` served by uvicorn reads no command-line
    flags or environment variables, only config.toml files, so the settings this deployment
    relies on are set here whatever those files say."""
    from streamlit import config

    from storage.bundle_validation import MAX_BUNDLE_BYTES

    where = "dashboard/gateway.py"
    for key, value in {
        "server.trustedUserHeaders": {signin_sessions.KEY_HEADER: signin_sessions.USER_KEY},
        "server.allowedHosts": allowed_hosts,  # nginx checks the Host first; this is a second
        "server.enableXsrfProtection": True,
        "server.enableCORS": True,
        "server.maxUploadSize": MAX_BUNDLE_BYTES // 2**20,
        "browser.gatherUsageStats": False,
        "client.toolbarMode": "minimal",
        "client.showErrorDetails": "type",
        "client.disableDataExport": True,
    }.items():
        config.set_option(key, value, where)


if os.environ.get("COMPILELAB_GATEWAY") == "1":  # set by scripts/shared_dashboard.py only
    _configure_log()
    # nginx keeps the access log, without the upload URLs (they carry Streamlit session ids);
    # Streamlit re-enables uvicorn's own, which would print them.
    logging.getLogger("uvicorn.access").addFilter(lambda record: False)
    configure_streamlit(os.environ.get("COMPILELAB_ALLOWED_HOSTS", "").split())
    signin_sessions.enable_gateway()
    app = st.App(str(ROOT / "dashboard" / "app.py"), routes=ROUTES,
                 middleware=[Middleware(StreamlitGuard)])
