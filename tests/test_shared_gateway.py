"""The shared deployment's parts without starting it: the gateway's routes (dashboard/gateway.py,
through Starlette's test client), its websocket filter, and the launcher's checks and the nginx
configuration it writes (scripts/shared_dashboard.py; ``nginx -t`` when nginx is installed).
The whole deployment is exercised in tests/test_shared_deployment.py (slow tier)."""

from __future__ import annotations

import asyncio
import re
import shutil
import subprocess
from pathlib import Path

import pytest
from starlette.applications import Starlette
from starlette.testclient import TestClient
from streamlit.proto.BackMsg_pb2 import BackMsg

from dashboard import auth, gateway, signin_sessions
from dashboard.signin_throttle import FAILURES_BEFORE_LOCK
from scripts import shared_dashboard as launcher

EDITOR_PW, VIEWER_PW = "correct horse battery staple", "just looking around"


@pytest.fixture
def client(monkeypatch, tmp_path):
    monkeypatch.setenv("COMPILELAB_STATE_DIR", str(tmp_path))
    monkeypatch.setenv(auth.PASSWORD_ENV, EDITOR_PW)
    monkeypatch.setenv(auth.READONLY_PASSWORD_ENV, VIEWER_PW)
    monkeypatch.delenv(auth.ROLE_ENV, raising=False)
    monkeypatch.setattr(gateway, "FAILED_DELAY_S", 0)
    monkeypatch.setattr(signin_sessions, "STORE", signin_sessions.SessionStore())
    return TestClient(Starlette(routes=gateway.ROUTES), follow_redirects=False)


def _sign_in(client, password, address="203.0.113.7", target="/"):
    return client.post(f"{gateway.SIGNIN}?next={target}", data={"password": password},
                       headers={"X-Real-IP": address})


@pytest.mark.parametrize(("query", "target"), [
    ("next=/compare?runs=3,7&x=1", "/compare?runs=3,7&x=1"), ("next=/", "/"), ("", "/"),
    ("next=//evil.example/x", "/"), ("next=http://evil.example", "/"), ("next=/\\evil", "/"),
    ("next=/a b", "/"), ("next=/_compilelab/signout", "/"), ("x=1&next=/runs", "/"),
])
def test_only_local_paths_are_followed_after_sign_in(query, target):
    assert gateway.safe_target(query) == target


def test_sign_in_sets_a_strict_cookie_and_nginx_learns_the_role(client):
    page = client.get(gateway.SIGNIN)
    assert page.status_code == 200 and "<script" not in page.text
    assert "default-src 'none'" in page.headers["content-security-policy"]
    assert _sign_in(client, "wrong").status_code == 403
    response = _sign_in(client, VIEWER_PW, target="/compare?runs=1")
    assert response.status_code == 303 and response.headers["location"] == "/compare?runs=1"
    cookie = response.headers["set-cookie"].lower()
    assert "httponly" in cookie and "samesite=strict" in cookie and "path=/" in cookie
    answer = client.get(gateway.AUTH)
    assert answer.status_code == 204
    key = answer.headers[signin_sessions.KEY_HEADER]
    assert signin_sessions.STORE.by_key(key).role == auth.VIEWER
    assert key not in cookie  # the key is a hash of the cookie's token, not the token
    assert client.get(gateway.AUTH_EDITOR).status_code == 403  # viewers upload nothing
    assert client.get(gateway.SIGNOUT).status_code == 303
    assert signin_sessions.STORE.by_key(key) is None
    client.cookies.clear()
    assert client.get(gateway.AUTH).status_code == 401


def test_an_editor_may_upload_unless_the_role_is_forced_read_only(client, monkeypatch):
    _sign_in(client, EDITOR_PW)
    assert client.get(gateway.AUTH_EDITOR).status_code == 204
    monkeypatch.setenv(auth.ROLE_ENV, "readonly")
    assert client.get(gateway.AUTH_EDITOR).status_code == 403


def test_a_locked_address_is_refused_before_its_password_is_read(client, monkeypatch):
    for i in range(FAILURES_BEFORE_LOCK - 1):
        assert _sign_in(client, f"guess {i}").status_code == 403
    assert _sign_in(client, "guess 10").status_code == 429
    with monkeypatch.context() as m:
        m.setattr(auth, "role_for", lambda p: pytest.fail("the password was read"))
        locked = _sign_in(client, EDITOR_PW)
    assert locked.status_code == 429 and "locked" in locked.text
    assert _sign_in(client, EDITOR_PW, address="198.51.100.9").status_code == 303


def _ws_messages(*kinds: str) -> list[dict]:
    out = []
    for kind in kinds:
        msg = BackMsg()
        if kind == "rerun_script":
            msg.rerun_script.query_string = ""
        else:
            setattr(msg, kind, True)
        out.append({"type": "websocket.receive", "bytes": msg.SerializeToString()})
    return out + [{"type": "websocket.disconnect"}]


def test_the_guard_drops_messages_that_act_on_every_user():
    seen: list[str] = []

    async def app(scope, receive, send):
        while (message := await receive())["type"] != "websocket.disconnect":
            seen.append(BackMsg.FromString(message["bytes"]).WhichOneof("type"))

    incoming = _ws_messages("clear_cache", "rerun_script", "set_run_on_save", "load_git_info",
                            "app_heartbeat", "debug_shutdown_runtime")

    async def receive():
        return incoming.pop(0)

    guard = gateway.StreamlitGuard(app)
    asyncio.run(guard({"type": "websocket", "path": "/_stcore/stream"}, receive, None))
    assert seen == ["rerun_script", "app_heartbeat"]


def test_the_guard_hides_streamlit_metrics():
    async def app(scope, receive, send):
        raise AssertionError("reached Streamlit")

    client = TestClient(gateway.StreamlitGuard(app))
    assert client.get("/_stcore/metrics").status_code == 404


# --------------------------------------------------------------------------- the launcher


def test_passwords_are_required_and_long():
    with pytest.raises(SystemExit, match="COMPILELAB_DASHBOARD_PASSWORD"):
        launcher.check_passwords({})
    with pytest.raises(SystemExit, match="at least 12"):
        launcher.check_passwords({launcher.PASSWORD_ENVS[0]: "short"})
    with pytest.raises(SystemExit, match="READONLY"):
        launcher.check_passwords({launcher.PASSWORD_ENVS[0]: EDITOR_PW,
                                  launcher.PASSWORD_ENVS[1]: "view"})
    launcher.check_passwords({launcher.PASSWORD_ENVS[0]: EDITOR_PW})


@pytest.mark.parametrize("name", ["a;b", "x.example $host", "evil}", ""])
def test_host_names_cannot_inject_configuration(name):
    with pytest.raises(SystemExit):
        launcher.server_names([name])


def test_listen_addresses():
    assert launcher.parse_listen("0.0.0.0:8443") == ("0.0.0.0", 8443)
    assert launcher.parse_listen("[::1]:8443") == ("::1", 8443)
    for bad in ("8443", "host:", "host:99999"):
        with pytest.raises(SystemExit):
            launcher.parse_listen(bad)


@pytest.mark.parametrize("tls", [False, True])
def test_the_generated_nginx_configuration_is_accepted(tmp_path, tls):
    """Every field filled; nginx itself checks the result (``nginx -t``)."""
    pair = None
    if tls:
        if not shutil.which("openssl"):
            pytest.skip("no openssl to make a test certificate")
        pair = (str(tmp_path / "cert.pem"), str(tmp_path / "key.pem"))
        subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1",
                        "-subj", "/CN=localhost", "-keyout", pair[1], "-out", pair[0]],
                       check=True, capture_output=True)
    run = launcher.run_folder(None)
    try:
        text = launcher.nginx_conf(tmp_path, run, "127.0.0.1:18443", ["localhost", "127.0.0.1"],
                                   6, pair, None)
        assert not re.search(r"@[A-Z_]+@", text)
        assert f"client_max_body_size {launcher.BODY_LIMIT_KIB}k;" in text
        assert ("ssl_certificate" in text) is tls
        conf = launcher.write_conf(tmp_path / "state", text)
        assert oct(conf.stat().st_mode & 0o777) == "0o600"
        try:
            nginx = launcher.find_nginx()
        except SystemExit:
            pytest.skip("nginx is not installed")
        check = subprocess.run([nginx, "-t", "-p", str(run), "-c", str(conf)],
                               capture_output=True, text=True)
        assert check.returncode == 0, check.stderr
    finally:
        shutil.rmtree(run)


def test_upload_limit_is_the_bundle_limit_plus_the_multipart_envelope():
    from storage.bundle_validation import MAX_BUNDLE_BYTES

    assert 0 < launcher.BODY_LIMIT_KIB * 1024 - MAX_BUNDLE_BYTES <= 64 * 1024
    assert Path(launcher.TEMPLATE).exists()
