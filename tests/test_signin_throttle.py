"""dashboard/signin_throttle.py: failures per client address, lockouts, the operator's unlock."""

from __future__ import annotations

import pytest

from dashboard import signin_sessions
from dashboard.signin_throttle import (
    FAILURE_WINDOW_S,
    FAILURES_BEFORE_LOCK,
    LOCK_S,
    MAX_LOCK_S,
    SigninThrottle,
    client_key,
)


class Clock:
    def __init__(self) -> None:
        self.now = 1_000_000.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def clock():
    return Clock()


def _fail(throttle, address, times):
    return [throttle.failed(address) for _ in range(times)][-1]


def test_addresses_are_counted_in_sensible_buckets():
    assert client_key("203.0.113.7") == "203.0.113.7"
    assert client_key("::ffff:203.0.113.7") == "203.0.113.7"
    assert client_key("2001:db8:1:2:aaaa::1") == client_key("2001:db8:1:2:bbbb::9")
    assert client_key("2001:db8:1:2::1") != client_key("2001:db8:1:3::1")
    assert client_key(None) == client_key("") == client_key("not an address") == "unknown"


def test_the_tenth_failure_locks_and_lockouts_double(tmp_path, clock):
    throttle = SigninThrottle(tmp_path, clock)
    assert _fail(throttle, "203.0.113.7", FAILURES_BEFORE_LOCK - 1).allowed
    locked = throttle.failed("203.0.113.7")
    assert not locked.allowed and locked.retry_after_s == LOCK_S
    assert "locked" in locked.message()
    assert not throttle.check("203.0.113.7").allowed
    assert throttle.check("198.51.100.9").allowed
    clock.now += LOCK_S + 1
    assert throttle.check("203.0.113.7").allowed
    assert _fail(throttle, "203.0.113.7", FAILURES_BEFORE_LOCK).retry_after_s == 2 * LOCK_S
    for _ in range(8):
        clock.now += MAX_LOCK_S + 1
        last = _fail(throttle, "203.0.113.7", FAILURES_BEFORE_LOCK)
    assert last.retry_after_s == MAX_LOCK_S


def test_old_failures_are_forgotten_and_a_success_clears_them(tmp_path, clock):
    throttle = SigninThrottle(tmp_path, clock)
    _fail(throttle, "203.0.113.7", FAILURES_BEFORE_LOCK - 1)
    clock.now += FAILURE_WINDOW_S + 1
    assert throttle.failed("203.0.113.7").failures == 1
    throttle.succeeded("203.0.113.7")
    assert throttle.check("203.0.113.7").failures == 0


def test_the_file_is_shared_with_the_operators_command(tmp_path, clock):
    """The dashboard and `shared_dashboard.py unlock` are two processes: the lockout lives in
    the file, so a second instance sees it and lifts it."""
    dashboard = SigninThrottle(tmp_path, clock)
    _fail(dashboard, "203.0.113.7", FAILURES_BEFORE_LOCK)
    operator = SigninThrottle(tmp_path, clock)
    assert set(operator.lockouts()) == {"203.0.113.7"}
    assert operator.unlock("203.0.113.7") == ["203.0.113.7"]
    assert dashboard.check("203.0.113.7").allowed
    assert operator.unlock() == []


def test_a_damaged_file_starts_clean(tmp_path, clock):
    throttle = SigninThrottle(tmp_path, clock)
    assert throttle.path is not None
    throttle.path.write_text("{not json")
    assert throttle.check("203.0.113.7").allowed
    throttle.path.write_text('["a list"]')
    assert throttle.failed("203.0.113.7").failures == 1


def test_sessions_expire_and_are_revoked(clock):
    store = signin_sessions.SessionStore(clock)
    token = store.issue("editor", "203.0.113.7")
    key = signin_sessions.key_of(token)
    assert token not in key and store.by_key(key).role == "editor"
    assert store.by_token(token) is store.by_key(key)
    assert store.revoke(key) and store.by_key(key) is None
    token = store.issue("viewer", "203.0.113.7")
    clock.now += signin_sessions.SESSION_TTL_S + 1
    assert store.by_token(token) is None
    assert store.by_key(None) is None and store.by_key("") is None
