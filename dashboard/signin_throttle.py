"""Sign-in attempts counted per client address, across sessions and restarts (pure, no Streamlit).

A password page that slows guesses only within one browser session is no brake: a fresh
connection starts again at zero (200 wrong guesses on fresh sessions took 67 s, issue 39). So
failures are counted per *client address*, whatever session or connection they came through,
in a small JSON file that the operator's command can edit while the dashboard runs:

- every failure is logged with the address (logger ``compilelab.signin``);
- ``FAILURES_BEFORE_LOCK`` failures within ``FAILURE_WINDOW_S`` lock that address for
  ``LOCK_S``; each further lockout of the same address doubles, up to ``MAX_LOCK_S``;
- while locked, an attempt is refused before its password is looked at, so a right guess does
  not even show; other addresses sign in as usual;
- ``python scripts/shared_dashboard.py unlock ADDRESS`` (or ``--all``) lifts a lockout.

IPv6 clients are counted per /64 (one host usually holds a whole /64, so counting single
addresses would let it rotate freely); IPv4-mapped IPv6 addresses count as their IPv4 address.
The file is read and written under an exclusive ``flock`` and replaced atomically, so the
dashboard and the operator's command never see half a file.
"""

from __future__ import annotations

import contextlib
import fcntl
import ipaddress
import json
import logging
import os
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

FAILURES_BEFORE_LOCK = 10
FAILURE_WINDOW_S = 15 * 60
LOCK_S = 60 * 60
MAX_LOCK_S = 24 * 60 * 60
STATE_FILE = "signin-lockouts.json"
UNLOCK_HINT = "python scripts/shared_dashboard.py --state-dir {folder} unlock {address}"
UNKNOWN = "unknown"  # a connection without an address (Streamlit on loopback says None)

LOG = logging.getLogger("compilelab.signin")


def client_key(address: str | None) -> str:
    """The bucket an address is counted in: the IPv4 address, an IPv6 /64, or ``unknown``."""
    if not address:
        return UNKNOWN
    try:
        ip = ipaddress.ip_address(address.strip())
    except ValueError:
        return UNKNOWN
    if isinstance(ip, ipaddress.IPv6Address):
        if ip.ipv4_mapped is not None:
            return str(ip.ipv4_mapped)
        return str(ipaddress.IPv6Network(f"{ip}/64", strict=False))
    return str(ip)


@dataclass(frozen=True)
class Verdict:
    """May this address try a password now? ``retry_after_s`` counts down a lockout."""

    allowed: bool
    retry_after_s: float = 0.0
    failures: int = 0

    def message(self) -> str:
        """What the sign-in page says about a lockout (nothing while allowed)."""
        if self.allowed:
            return ""
        minutes = max(1, round(self.retry_after_s / 60))
        return (f"Too many failed sign-ins from your address: signing in is locked for about "
                f"{minutes} min. Ask the dashboard's operator to lift it sooner.")


class SigninThrottle:
    """Failures and lockouts per client address, kept in ``directory/STATE_FILE`` (or in memory
    when ``directory`` is None)."""

    def __init__(self, directory: str | Path | None, clock: Callable[[], float] = time.time):
        self.path = Path(directory) / STATE_FILE if directory is not None else None
        self._clock = clock
        self._memory: dict[str, Any] = {}
        self._lock = threading.Lock()

    # ------------------------------------------------------------------ state
    @contextlib.contextmanager
    def _state(self) -> Iterator[dict[str, Any]]:
        """The state, locked for this block; written back when the block ends without error."""
        with self._lock:
            if self.path is None:
                yield self._memory
                return
            self.path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
            with open(self.path.with_suffix(".lock"), "a+") as lock:
                fcntl.flock(lock, fcntl.LOCK_EX)
                state = self._read()
                yield state
                self._write(state)

    def _read(self) -> dict[str, Any]:
        try:
            data = json.loads(self.path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return {}  # no file yet, or one nobody could read: start clean rather than crash
        return {k: v for k, v in data.items() if isinstance(v, dict)} if isinstance(
            data, dict) else {}

    def _write(self, state: dict[str, Any]) -> None:
        fd, tmp = tempfile.mkstemp(dir=self.path.parent, prefix=".signin-", suffix=".json")
        with os.fdopen(fd, "w", encoding="utf-8") as out:
            json.dump(state, out, indent=1, sort_keys=True)
        os.replace(tmp, self.path)

    def _entry(self, state: dict[str, Any], key: str, now: float) -> dict[str, Any]:
        entry = state.setdefault(key, {})
        entry["failures"] = [t for t in entry.get("failures", [])
                             if isinstance(t, (int, float)) and now - t < FAILURE_WINDOW_S]
        return entry

    # ------------------------------------------------------------------ API
    def check(self, address: str | None) -> Verdict:
        """Whether ``address`` may try a password now (nothing is recorded)."""
        key, now = client_key(address), self._clock()
        with self._state() as state:
            entry = self._entry(state, key, now)
            until = float(entry.get("locked_until") or 0)
            if until > now:
                return Verdict(False, until - now, len(entry["failures"]))
            return Verdict(True, 0.0, len(entry["failures"]))

    def failed(self, address: str | None) -> Verdict:
        """Record a wrong password from ``address`` (logged); locks it at the threshold."""
        key, now = client_key(address), self._clock()
        with self._state() as state:
            entry = self._entry(state, key, now)
            entry["failures"].append(now)
            count = len(entry["failures"])
            LOG.warning("sign-in failed from %s (%d of %d before a lockout)", key, count,
                        FAILURES_BEFORE_LOCK)
            if count < FAILURES_BEFORE_LOCK:
                return Verdict(True, 0.0, count)
            lockouts = int(entry.get("lockouts") or 0)
            seconds = min(LOCK_S * 2 ** lockouts, MAX_LOCK_S)
            entry.update(locked_until=now + seconds, lockouts=lockouts + 1, failures=[])
            LOG.error("sign-in locked for %s for %d min after %d failures; lift with: %s",
                      key, seconds // 60, count,
                      UNLOCK_HINT.format(folder=self.path.parent if self.path else ".",
                                         address=key))
            return Verdict(False, seconds, count)

    def succeeded(self, address: str | None) -> None:
        """A right password: this address's recent failures are forgotten (lockouts counted
        for the doubling are kept)."""
        key = client_key(address)
        with self._state() as state:
            if key in state:
                state[key]["failures"] = []
                if not state[key].get("lockouts"):
                    del state[key]

    def unlock(self, address: str | None = None) -> list[str]:
        """Lift the lockout of ``address`` (every address when None); the keys lifted."""
        now = self._clock()
        with self._state() as state:
            keys = list(state) if address is None else [client_key(address)]
            lifted = [k for k in keys if float(state.get(k, {}).get("locked_until") or 0) > now]
            for k in keys:
                state.pop(k, None)
        for k in lifted:
            LOG.warning("sign-in lockout of %s lifted by the operator", k)
        return lifted

    def lockouts(self) -> dict[str, float]:
        """Locked addresses and the seconds left of each."""
        now = self._clock()
        with self._state() as state:
            return {k: float(v["locked_until"]) - now for k, v in state.items()
                    if float(v.get("locked_until") or 0) > now}


def state_dir() -> Path:
    """Where the lockout file lives: ``$COMPILELAB_STATE_DIR``, else ``.compilelab`` in the
    repository (git-ignored)."""
    env = os.environ.get("COMPILELAB_STATE_DIR")
    return Path(env) if env else Path(__file__).resolve().parents[1] / ".compilelab"
