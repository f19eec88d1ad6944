"""The dashboard works offline and never phones out: every request a real browser makes while
loading each page goes to the loopback address the dashboard listens on.

The server is started the way users start it, through ``scripts/run_all.py --no-worker`` (what
``make dashboard`` runs), so the test also covers the default address and the Streamlit flags it
passes. Before this test, each page load asked fonts.gstatic.com for the favicon (the
``:material/bolt:`` page icon).
"""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import subprocess
import sys
from pathlib import Path
from urllib.parse import urlsplit

import pytest
from test_dashboard_browser import BUNDLE, CHROMIUM, CHROMIUM_ARGS, _free_port, _settled

from acceptance.dashboard_health import NotHealthy, wait_healthy

pytestmark = [pytest.mark.browser, pytest.mark.slow]

ROOT = Path(__file__).resolve().parents[1]
LOCAL_HOSTS = {"127.0.0.1", "localhost", "[::1]", "::1"}
LOCAL_SCHEMES = {"data", "blob", "about"}


@contextlib.contextmanager
def _launch(tmp_path_factory, **extra_env: str):
    """(base URL, imported run ids, launcher output path) of a dashboard started by run_all."""
    if not CHROMIUM or not Path(CHROMIUM).exists():
        pytest.skip("no Chromium (set COMPILELAB_CHROMIUM or install chromium)")
    pytest.importorskip("playwright.sync_api")
    from storage import import_bundle
    from storage.db import open_database

    tmp = tmp_path_factory.mktemp("offline")
    url = f"sqlite:///{tmp / 'lab.db'}"
    db = open_database(url)
    ids = import_bundle(db, BUNDLE.read_text())
    db.dispose()
    port = _free_port()
    env = {k: v for k, v in os.environ.items()
           if not k.startswith("COMPILELAB_DASHBOARD_") and k != "COMPILELAB_ADDRESS"}
    env.update(COMPILELAB_DB=url, PYTHONPATH=str(ROOT), COMPILELAB_STATE_DIR=str(tmp / "state"),
               **extra_env)
    log = tmp / "launcher.log"
    with open(log, "wb") as out:
        proc = subprocess.Popen(
            [sys.executable, str(ROOT / "scripts" / "run_all.py"), "--no-worker", "--port",
             str(port)],
            cwd=tmp, env=env, stdout=out, stderr=subprocess.STDOUT, start_new_session=True)
    base = f"http://127.0.0.1:{port}"
    try:
        try:
            wait_healthy(base, proc, output=log.read_text)
        except NotHealthy as e:
            pytest.fail(str(e))
        yield base, ids, log
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGINT)  # the launcher stops the dashboard it started
            try:
                proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait(timeout=5)


@pytest.fixture(scope="module")
def dashboard(tmp_path_factory):
    with _launch(tmp_path_factory) as started:
        yield started


@pytest.fixture(scope="module")
def browser(dashboard):
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        yield b
        b.close()


def _outside(url: str) -> bool:
    parts = urlsplit(url)
    if parts.scheme in LOCAL_SCHEMES:
        return False
    return (parts.hostname or "") not in LOCAL_HOSTS


def test_launcher_binds_loopback_and_warns_for_nothing(dashboard):
    _base, _ids, log = dashboard
    text = log.read_text()
    assert "http://127.0.0.1:" in text
    assert "WARNING" not in text


@pytest.mark.parametrize("path", ["runs", "new", "compare?runs={ids}", "sweep?runs={sweep}",
                                  "compare?runs=99999999999999999999"])
def test_no_request_leaves_loopback(dashboard, browser, path):
    base, ids, _log = dashboard
    # the first runs of the bundle (comparing all 30 took over 30 s to draw on a busy 2-core host)
    url = f"{base}/" + path.format(ids=",".join(map(str, ids[:4])), sweep=ids[3])
    page = browser.new_page(viewport={"width": 1400, "height": 2000})
    seen: list[str] = []
    page.on("request", lambda request: seen.append(request.url))
    page.goto(url)
    _settled(page)
    if path.startswith("compare?runs={"):  # the charts are drawn (plotly's own assets too)
        page.locator(".js-plotly-plot").first.wait_for(timeout=30_000)
    page.wait_for_timeout(1500)  # favicon, fonts and late lazy chunks
    page.close()
    assert seen, "the page made no request at all"
    outside = sorted({u for u in seen if _outside(u)})
    assert not outside, f"{url} asked outside hosts: {outside}"


def test_a_rebound_host_name_cannot_open_the_websocket(dashboard):
    """DNS rebinding (issue 39, item 3): attacker.example resolving to 127.0.0.1 opened the
    dashboard's websocket from the user's browser and, with no password set, queued a run."""
    from streamlit_client import Client

    base, _ids, _log = dashboard
    port = base.rsplit(":", 1)[1]
    upgrade = (f"GET /_stcore/stream HTTP/1.1\r\nHost: attacker.example:{port}\r\n"
               "Upgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Version: 13\r\n"
               "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n"
               "Sec-WebSocket-Protocol: streamlit\r\n\r\n")
    with socket.create_connection(("127.0.0.1", int(port)), timeout=10) as s:
        s.sendall(upgrade.encode())
        assert s.recv(4096).startswith(b"HTTP/1.1 403")
    client = Client(base)  # the loopback name still works
    assert "Runs" in Client.text(client.rerun(page="runs"))
    client.close()


# --------------------------------------------------------------------------- shared mode

EDITOR_PW, VIEWER_PW = "editor pw", "viewer pw"


def _sign_in(page, password: str) -> None:
    page.get_by_label("Password", exact=True).fill(password)
    page.get_by_role("button", name="Sign in").click()
    _settled(page)


def test_password_page_in_a_real_browser(tmp_path_factory, browser):
    """Shared mode as a team member meets it: the permalink opens the password page (and
    nothing else, and nothing from outside), a wrong password is refused, the read-only
    password lands on the page the link named, without the write controls."""
    with _launch(tmp_path_factory, COMPILELAB_DASHBOARD_PASSWORD=EDITOR_PW,
                 COMPILELAB_DASHBOARD_READONLY_PASSWORD=VIEWER_PW) as (base, ids, log):
        assert "WARNING" not in log.read_text()
        page = browser.new_page(viewport={"width": 1400, "height": 1400})
        seen: list[str] = []
        page.on("request", lambda request: seen.append(request.url))
        page.goto(f"{base}/compare?runs={ids[0]}")
        page.get_by_label("Password", exact=True).wait_for(timeout=30_000)
        assert page.locator(".js-plotly-plot").count() == 0
        assert page.get_by_text("Run / compare").count() == 0  # no navigation either
        _sign_in(page, "not it")
        page.get_by_text("Wrong password.").wait_for(timeout=30_000)
        _sign_in(page, VIEWER_PW)
        page.locator(".js-plotly-plot").first.wait_for(timeout=30_000)
        assert f"runs={ids[0]}" in page.url and "/compare" in page.url
        page.get_by_text("Read-only: browse, compare and export").wait_for(timeout=30_000)
        assert page.get_by_role("button", name="Save note and tags").count() == 0
        page.close()
        assert not sorted({u for u in seen if _outside(u)})
