"""Riding out a database outage: retry a storage call with capped exponential backoff.

A worker lives for days; the database (a team's PostgreSQL) restarts under it, a network blips,
a SQLite file sits on a share that goes away for a moment. None of that should kill the worker or
lose a result that took minutes to measure, so the worker's own database calls and the saving of
results go through ``retry``: connection-level errors (SQLAlchemy's ``OperationalError``,
``InterfaceError``, invalidated connections) are retried, waiting 0.5, 1, 2, ... up to
``cap_s`` seconds between attempts; any other error (a bug, a constraint) is raised at once.
Every wait is logged with the database URL masked (``Database.url``).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any, TypeVar

from contract.text import one_line

T = TypeVar("T")
Log = Callable[[str], None]


def is_outage(exc: BaseException) -> bool:
    """Is ``exc`` the database being unreachable (worth waiting for) rather than a bug?"""
    from sqlalchemy.exc import DBAPIError, InterfaceError, OperationalError

    if isinstance(exc, (OperationalError, InterfaceError)):
        return True
    return isinstance(exc, DBAPIError) and bool(exc.connection_invalidated)


def retry(fn: Callable[[], T], *, db: Any, what: str, log: Log,
          should_stop: Callable[[], bool] = lambda: False, base_s: float = 0.5,
          cap_s: float = 30.0, give_up_after_s: float | None = None,
          sleep: Callable[[float], None] = time.sleep) -> T:
    """``fn()``, retried while the database is unreachable.

    Gives up (re-raising the last error) when ``should_stop()`` turns true (the worker was asked
    to exit) or after ``give_up_after_s`` seconds (None: never, the default for saving results).
    """
    start = time.monotonic()
    delay = base_s
    attempt = 0
    while True:
        try:
            result = fn()
        except Exception as exc:
            if not is_outage(exc):
                raise
            attempt += 1
            waited = time.monotonic() - start
            if should_stop() or (give_up_after_s is not None and waited >= give_up_after_s):
                raise
            reason = one_line(getattr(exc, "orig", None) or exc, 200)
            log(f"database {getattr(db, 'url', '?')} unavailable while {what} "
                f"(attempt {attempt}, {waited:.0f} s so far): {reason}; retrying in {delay:g} s")
            sleep(delay)
            delay = min(delay * 2, cap_s)
            continue
        if attempt:
            log(f"database {getattr(db, 'url', '?')} is back: {what} done after {attempt} "
                f"retr{'y' if attempt == 1 else 'ies'}")
        return result
