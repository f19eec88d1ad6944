"""Signed-in browsers of the shared deployment (pure, no Streamlit; one store per process).

The sign-in route (dashboard/gateway.py) issues a random token in an HttpOnly, SameSite=Strict
cookie; nginx asks the gateway about that cookie before it forwards *any* request, and hands
Streamlit the session's **key** (a hash of the token, never the token) in a header that
Streamlit maps into ``st.user`` (``server.trustedUserHeaders``). The dashboard looks its role up
here by that key on every run, so signing out or an expired sign-in takes effect at once, in
every tab and in every auto-refreshing section. Streamlit binds a reconnecting session to the
``st.user`` it started with, so a Streamlit session id from an access log or an upload URL is
useless without the same sign-in (issue 39, item 4).

Sessions live in this process's memory: a restart signs everyone out, which is the safe side.
"""

from __future__ import annotations

import hashlib
import secrets
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass

SESSION_TTL_S = 12 * 60 * 60  # a working day; then the password again
MAX_SESSIONS = 10_000  # beyond this the oldest go: a flood of sign-ins cannot grow memory
COOKIE = "compilelab_session"
KEY_HEADER = "X-CompileLab-Session"  # nginx -> Streamlit; set only from the gateway's answer
USER_KEY = "compilelab_session"  # where Streamlit puts that header in st.user


def key_of(token: str) -> str:
    """The key a token is known by outside the cookie (headers, st.user, logs never see it)."""
    return hashlib.sha256(token.encode("utf-8", "surrogatepass")).hexdigest()[:32]


@dataclass(frozen=True)
class Session:
    role: str
    address: str
    created: float


class SessionStore:
    def __init__(self, clock: Callable[[], float] = time.time):
        self._clock = clock
        self._by_key: dict[str, Session] = {}
        self._lock = threading.Lock()

    def issue(self, role: str, address: str) -> str:
        """A new session for ``role``; returns the token for the cookie."""
        token = secrets.token_urlsafe(32)
        with self._lock:
            self._expire()
            while len(self._by_key) >= MAX_SESSIONS:
                del self._by_key[next(iter(self._by_key))]  # insertion order: the oldest
            self._by_key[key_of(token)] = Session(role, address, self._clock())
        return token

    def by_key(self, key: str | None) -> Session | None:
        if not key or not isinstance(key, str):
            return None
        with self._lock:
            session = self._by_key.get(key)
            if session is None:
                return None
            if self._clock() - session.created > SESSION_TTL_S:
                del self._by_key[key]
                return None
            return session

    def by_token(self, token: str | None) -> Session | None:
        return self.by_key(key_of(token)) if token else None

    def revoke(self, key: str | None) -> bool:
        with self._lock:
            return self._by_key.pop(key or "", None) is not None

    def _expire(self) -> None:
        now = self._clock()
        for key in [k for k, s in self._by_key.items() if now - s.created > SESSION_TTL_S]:
            del self._by_key[key]


STORE = SessionStore()
_gateway = threading.Event()


def enable_gateway() -> None:
    """Called by dashboard/gateway.py when it serves the dashboard: from then on the role comes
    from this store only (the in-page password form is never drawn)."""
    _gateway.set()


def gateway_active() -> bool:
    return _gateway.is_set()
