"""Shared mode: a password page and a read-only role, for a team that runs one dashboard.

Streamlit has no login of its own, so by default the dashboard listens on 127.0.0.1 only
(scripts/run_all.py). A team that wants one dashboard for everyone sets, before starting it:

- ``COMPILELAB_DASHBOARD_PASSWORD``: the editor password. Whoever enters it may do everything:
  queue, cancel, edit notes and tags, import and delete runs.
- ``COMPILELAB_DASHBOARD_READONLY_PASSWORD`` (optional): the viewer password. Whoever enters it
  browses, compares and exports (CSV, bundles, HTML report) but changes nothing.
- ``COMPILELAB_DASHBOARD_ROLE=readonly`` (optional): every session is a viewer, whichever
  password it used; with no password set at all, the whole dashboard is an open read-only
  display (e.g. a wall screen).

With neither password set and no role, there is no login page and every session edits: the
single-user, localhost case. The password is a shared secret compared in constant time
(``hmac.compare_digest``); the role lives in ``st.session_state``: one browser tab's session,
on the server, so following links inside the dashboard keeps it, while a reload, a new tab or a
pasted link asks again (the link's page and parameters are kept through the password page).
Nothing is stored in the browser. A hosted team with an identity
provider should prefer Streamlit's ``st.login`` (OIDC) in front of the same roles; this page is
the fallback that needs no provider. Serve it over HTTPS (a reverse proxy) when it leaves the
machine: the password crosses the network like any form field.

Pages ask ``can_write()`` before every write, and the write callbacks ask again, so a disabled
button is not the only guard.

Two ways in (docs/SECURITY.md says what each promises):

- **The shared deployment** (``scripts/shared_dashboard.py``: nginx in front of
  dashboard/gateway.py). The sign-in happens before nginx serves anything; the role comes from
  the gateway's session store (dashboard/signin_sessions.py) on every run, so this module draws
  no password form there, only a link back to the sign-in page once the session is gone.
- **This password page**, for a trusted network: Streamlit serves its page, its static files
  and its upload endpoint to anyone who reaches the port. Failures are counted per client
  address across sessions (dashboard/signin_throttle.py: logged, a lockout the operator lifts),
  and a signed-in session is bound to the address it signed in from.

Auto-refreshing sections use ``fragment`` below, which checks the sign-in on every refresh: a
section loaded while signed in kept sending a run's progress after sign-out (issue 39, item 6).
"""

from __future__ import annotations

import functools
import hmac
import os
import time
from collections.abc import Callable
from typing import Any

import streamlit as st

from dashboard import signin_sessions
from dashboard.signin_throttle import SigninThrottle, client_key, state_dir

PASSWORD_ENV = "COMPILELAB_DASHBOARD_PASSWORD"
READONLY_PASSWORD_ENV = "COMPILELAB_DASHBOARD_READONLY_PASSWORD"
ROLE_ENV = "COMPILELAB_DASHBOARD_ROLE"
EDITOR, VIEWER = "editor", "viewer"
ROLE_KEY = "auth_role"
AUTHENTICATED_KEY = "authenticated"
FAILURES_KEY = "auth_failures"
ADDRESS_KEY = "auth_address"
MESSAGE_KEY = "auth_message"
SIGNIN_PATH = "/_compilelab/signin"
READ_ONLY_HELP = "Read-only access: sign in with the editor password to change runs."


def _env(name: str) -> str | None:
    return os.environ.get(name) or None


def forced_readonly() -> bool:
    return (os.environ.get(ROLE_ENV) or "").strip().lower() in ("readonly", "read-only", VIEWER)


def login_required() -> bool:
    """True when a password is configured: sessions must sign in first."""
    return bool(_env(PASSWORD_ENV) or _env(READONLY_PASSWORD_ENV))


def role_for(password: str) -> str | None:
    """The role a password grants (None: wrong). Both comparisons always run, in constant time,
    so the time taken does not tell which password was nearly right."""
    given = password.encode("utf-8", "surrogatepass")
    editor, viewer = _env(PASSWORD_ENV), _env(READONLY_PASSWORD_ENV)
    is_editor = bool(editor) and hmac.compare_digest(given, editor.encode("utf-8"))
    is_viewer = bool(viewer) and hmac.compare_digest(given, viewer.encode("utf-8"))
    if is_editor:
        return VIEWER if forced_readonly() else EDITOR
    if is_viewer:
        return VIEWER
    return None


def _gateway_key() -> str | None:
    """This browser's sign-in key at the shared deployment's gateway; it reaches ``st.user``
    only from nginx's header."""
    try:
        key = st.user.to_dict().get(signin_sessions.USER_KEY)
    except Exception:  # noqa: BLE001 - no script context: no sign-in
        return None
    return key if isinstance(key, str) else None


def _gateway_role() -> str | None:
    """The role of that sign-in (None: none, signed out or expired)."""
    session = signin_sessions.STORE.by_key(_gateway_key())
    return session.role if session is not None else None


def client_address() -> str | None:
    """The address this session's connection comes from (None on loopback, as Streamlit
    reports it)."""
    try:
        return st.context.ip_address
    except Exception:  # noqa: BLE001 - outside a script run (AppTest, bare mode)
        return None


def current_role() -> str | None:
    """This session's role, or None while it has not signed in."""
    if signin_sessions.gateway_active():
        role = _gateway_role()
    elif not login_required():
        role = EDITOR
    elif st.session_state.get(AUTHENTICATED_KEY) is not True:
        return None
    elif st.session_state.get(ADDRESS_KEY) != client_key(client_address()):
        sign_out()  # the session is now driven from another address: its id leaked
        return None
    else:
        role = st.session_state.get(ROLE_KEY)
    return VIEWER if forced_readonly() and role == EDITOR else role


def can_write() -> bool:
    """May this session queue, cancel, edit, import or delete?"""
    return current_role() == EDITOR


@functools.lru_cache(maxsize=8)
def _throttle_at(directory: str) -> SigninThrottle:
    return SigninThrottle(directory)


def throttle() -> SigninThrottle:
    """The per-address sign-in throttle (its file under ``$COMPILELAB_STATE_DIR``)."""
    return _throttle_at(str(state_dir()))


def _sign_in() -> None:
    """Form callback: check the password once, before the rerun draws the page."""
    password = st.session_state.get("auth-password") or ""
    st.session_state["auth-password"] = ""  # never kept in the session
    address = client_address()
    verdict = throttle().check(address)
    if not verdict.allowed:  # locked: the password is not even looked at
        st.session_state[MESSAGE_KEY] = verdict.message()
        return
    role = role_for(password)
    if role is None:
        failures = st.session_state.get(FAILURES_KEY, 0) + 1
        st.session_state[FAILURES_KEY] = failures
        st.session_state[MESSAGE_KEY] = throttle().failed(address).message() or "Wrong password."
        time.sleep(min(0.2 * failures, 2.0))  # slows guessing from one session
        return
    throttle().succeeded(address)
    st.session_state[FAILURES_KEY] = 0
    st.session_state.pop(MESSAGE_KEY, None)
    st.session_state[AUTHENTICATED_KEY] = True
    st.session_state[ROLE_KEY] = role
    st.session_state[ADDRESS_KEY] = client_key(address)


def sign_out() -> None:
    """Forget this session's sign-in (at the gateway: the browser's, in every tab)."""
    if signin_sessions.gateway_active():
        signin_sessions.STORE.revoke(_gateway_key())
    for key in (AUTHENTICATED_KEY, ROLE_KEY, ADDRESS_KEY):
        st.session_state.pop(key, None)


def gate() -> None:
    """Draw the password page and stop the script until this session has signed in."""
    if current_role() is not None:
        return
    st.title("Compile Lab")
    if signin_sessions.gateway_active():  # the sign-in page is the gateway's, outside Streamlit
        # Plain Markdown: a link button's code is fetched on first use, and nothing is served
        # to a browser whose sign-in is gone.
        st.info(f"You are signed out, or your sign-in has expired: reload this page, or "
                f"[sign in again]({SIGNIN_PATH}).")
        st.stop()
    st.caption("This dashboard is shared: sign in with the password your team was given.")
    with st.form("auth-form"):
        st.text_input("Password", type="password", key="auth-password")
        st.form_submit_button("Sign in", on_click=_sign_in, type="primary")
    if st.session_state.get(MESSAGE_KEY):
        st.error(st.session_state[MESSAGE_KEY])
    st.stop()


def sidebar_status() -> None:
    """Who this session is, and a way out (only in shared mode)."""
    role = current_role()
    if role == VIEWER:
        st.caption("Read-only: browse, compare and export; nothing can be changed here.")
    if login_required() and st.button("Sign out", key="auth-sign-out"):
        sign_out()
        st.rerun()


def fragment(run_every: float | None = None) -> Callable[[Callable[..., Any]], Any]:
    """``st.fragment`` whose body runs only while this session is signed in; a refresh after
    sign-out reruns the whole page instead, which shows the password page and no section."""
    def decorate(body: Callable[..., Any]) -> Any:
        @functools.wraps(body)
        def guarded(*args: Any, **kwargs: Any) -> Any:
            if current_role() is None:
                st.rerun()
            return body(*args, **kwargs)
        return st.fragment(guarded, run_every=run_every)
    return decorate
