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
"""

from __future__ import annotations

import hmac
import os
import time

import streamlit as st

PASSWORD_ENV = "COMPILELAB_DASHBOARD_PASSWORD"
READONLY_PASSWORD_ENV = "COMPILELAB_DASHBOARD_READONLY_PASSWORD"
ROLE_ENV = "COMPILELAB_DASHBOARD_ROLE"
EDITOR, VIEWER = "editor", "viewer"
ROLE_KEY = "auth_role"
AUTHENTICATED_KEY = "authenticated"
FAILURES_KEY = "auth_failures"
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


def current_role() -> str | None:
    """This session's role, or None while it has not signed in."""
    if not login_required():
        return VIEWER if forced_readonly() else EDITOR
    if st.session_state.get(AUTHENTICATED_KEY) is not True:
        return None
    role = st.session_state.get(ROLE_KEY)
    return VIEWER if forced_readonly() and role == EDITOR else role


def can_write() -> bool:
    """May this session queue, cancel, edit, import or delete?"""
    return current_role() == EDITOR


def _sign_in() -> None:
    """Form callback: check the password once, before the rerun draws the page."""
    password = st.session_state.get("auth-password") or ""
    st.session_state["auth-password"] = ""  # never kept in the session
    role = role_for(password)
    if role is None:
        failures = st.session_state.get(FAILURES_KEY, 0) + 1
        st.session_state[FAILURES_KEY] = failures
        time.sleep(min(0.2 * failures, 2.0))  # slows guessing from one session
        return
    st.session_state[FAILURES_KEY] = 0
    st.session_state[AUTHENTICATED_KEY] = True
    st.session_state[ROLE_KEY] = role


def sign_out() -> None:
    for key in (AUTHENTICATED_KEY, ROLE_KEY):
        st.session_state.pop(key, None)


def gate() -> None:
    """Draw the password page and stop the script until this session has signed in."""
    if current_role() is not None:
        return
    st.title("Compile Lab")
    st.caption("This dashboard is shared: sign in with the password your team was given.")
    with st.form("auth-form"):
        st.text_input("Password", type="password", key="auth-password")
        st.form_submit_button("Sign in", on_click=_sign_in, type="primary")
    if st.session_state.get(FAILURES_KEY):
        st.error("Wrong password.")
    st.stop()


def sidebar_status() -> None:
    """Who this session is, and a way out (only in shared mode)."""
    role = current_role()
    if role == VIEWER:
        st.caption("Read-only: browse, compare and export; nothing can be changed here.")
    if login_required() and st.button("Sign out", key="auth-sign-out"):
        sign_out()
        st.rerun()
