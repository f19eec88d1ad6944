"""The shared deployment (scripts/shared_dashboard.py: nginx + dashboard/gateway.py) against the
attacks of issue 39, each replayed from outside: raw HTTP, a raw Streamlit protocol client
(tests/streamlit_client.py) and Chromium. The deployment runs as users start it, from its
launcher, on a loopback port; sign-ins come from several loopback addresses (127.0.0.x) so the
per-address limits can be seen at work. Under strace when it is installed, which records every
connection the deployment's processes attempt (the last test reads that record).
"""

from __future__ import annotations

import contextlib
import http.client
import os
import re
import shutil
import signal
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlencode

import psutil
import pytest
from streamlit_client import Client, Refused
from test_dashboard_browser import BUNDLE, CHROMIUM, CHROMIUM_ARGS
from test_markdown_escape import ATTACKS

from acceptance.dashboard_health import free_port

pytestmark = [pytest.mark.slow]

ROOT = Path(__file__).resolve().parents[1]
NGINX = os.environ.get("COMPILELAB_NGINX") or shutil.which("nginx") or "/usr/sbin/nginx"
STRACE = shutil.which("strace")
EDITOR_PW = "correct horse battery staple"
VIEWER_PW = "just looking around ✓"
HOSTILE_TAGS = [a for a in ATTACKS if len(a) <= 100][:8]
HOSTILE_NOTE = " ".join(ATTACKS)


@dataclass
class Deployment:
    port: int
    state: Path
    log: Path
    trace: Path | None
    ids: list[int]
    hostile: int  # a run whose tags and note hold Streamlit's colon forms

    @property
    def base(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def pid(self, service: str) -> int:
        found = re.search(rf"started {service} \(pid (\d+)\)", self.log.read_text())
        assert found, self.log.read_text()[-2000:]
        return int(found.group(1))

    def request(self, method: str, path: str, *, body: bytes | str | None = None,
                headers: dict[str, str] | None = None, source: str = "127.0.0.1"
                ) -> tuple[int, dict[str, str], bytes]:
        conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=30,
                                          source_address=(source, 0))
        try:
            conn.request(method, path, body=body, headers=headers or {})
            response = conn.getresponse()
            return response.status, {k.lower(): v for k, v in response.getheaders()}, \
                response.read()
        finally:
            conn.close()

    def sign_in(self, password: str, source: str, target: str = "/") -> tuple[int, str, str]:
        """(status, cookie for later requests, page text)."""
        status, headers, body = self.request(
            "POST", f"/_compilelab/signin?next={target}", body=urlencode({"password": password}),
            headers={"Content-Type": "application/x-www-form-urlencoded"}, source=source)
        cookie = headers.get("set-cookie", "").split(";")[0]
        return status, cookie, body.decode(errors="replace")


def _seed(url: str) -> tuple[list[int], int]:
    from storage import import_bundle, results
    from storage.db import open_database

    db = open_database(url)
    ids = import_bundle(db, BUNDLE.read_text())
    hostile = ids[0]
    results.set_tags(db, hostile, HOSTILE_TAGS)
    results.set_note(db, hostile, HOSTILE_NOTE)
    db.dispose()
    return ids, hostile


@pytest.fixture(scope="module")
def deployment(tmp_path_factory):
    if not Path(NGINX).exists():
        pytest.skip("nginx is not installed (Debian: apt-get install nginx)")
    tmp = tmp_path_factory.mktemp("shared")
    url = f"sqlite:///{tmp / 'lab.db'}"
    ids, hostile = _seed(url)
    port, state, log = free_port(), tmp / "state", tmp / "launcher.log"
    trace = tmp / "connections.trace" if STRACE else None
    cmd = [sys.executable, str(ROOT / "scripts" / "shared_dashboard.py"), "--state-dir",
           str(state), "serve", "--listen", f"127.0.0.1:{port}", "--db", url, "--no-worker",
           "--server-name", "127.0.0.1", "--server-name", "localhost"]
    if trace:
        cmd = [STRACE, "-f", "-qq", "-e", "trace=connect,sendto,sendmsg", "-o", str(trace), *cmd]
    env = {k: v for k, v in os.environ.items() if not k.startswith("COMPILELAB_DASHBOARD_")}
    env.update(COMPILELAB_DASHBOARD_PASSWORD=EDITOR_PW,
               COMPILELAB_DASHBOARD_READONLY_PASSWORD=VIEWER_PW, PYTHONPATH=str(ROOT))
    with open(log, "wb") as out:
        proc = subprocess.Popen(cmd, cwd=tmp, env=env, stdout=out, stderr=subprocess.STDOUT,
                                start_new_session=True)
    try:
        deadline = time.monotonic() + 180
        while "shared_dashboard: ready" not in log.read_text():
            if proc.poll() is not None or time.monotonic() > deadline:
                pytest.fail(f"the shared deployment did not start:\n{log.read_text()[-4000:]}")
            time.sleep(0.5)
        yield Deployment(port, state, log, trace, ids, hostile)
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGINT)
        try:
            proc.wait(timeout=60)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(timeout=10)


def _put(d: Deployment, size: int, cookie: str | None = None,
         session: str = "0123456789abcdef") -> int | None:
    """PUT ``size`` bytes to Streamlit's upload endpoint; the status, or None when the server
    closed the connection before taking the body (what nginx does to a refused upload)."""
    conn = http.client.HTTPConnection("127.0.0.1", d.port, timeout=60)
    headers = {"Content-Length": str(size), "Content-Type": "application/octet-stream",
               **({"Cookie": cookie} if cookie else {})}
    try:
        conn.putrequest("PUT", f"/_stcore/upload_file/{session}/fedcba9876543210")
        for k, v in headers.items():
            conn.putheader(k, v)
        conn.endheaders()
        chunk = b"x" * 2**20
        for _ in range(size // len(chunk)):
            conn.send(chunk)
        conn.send(b"x" * (size % len(chunk)))
        return conn.getresponse().status
    except (BrokenPipeError, ConnectionResetError, http.client.RemoteDisconnected):
        return None
    finally:
        conn.close()


# --------------------------------------------------------------------------- 1


def test_1_uploads_need_an_editor_and_fit_the_bundle_limit(deployment):
    """Four 500 MiB uploads from sessions that never signed in took the server from 253 to
    2 257 MiB. Now nothing reaches Streamlit before sign-in, viewers cannot upload, and an
    editor's body is capped at the bundle limit by nginx."""
    from storage.bundle_validation import MAX_BUNDLE_BYTES

    d = deployment
    dashboard = psutil.Process(d.pid("dashboard"))
    before = dashboard.memory_info().rss
    big = MAX_BUNDLE_BYTES + 4 * 2**20
    for _ in range(4):  # refused from the headers: too big (413), or no sign-in (401)
        assert _put(d, big) in (401, 413, None)
        assert _put(d, 8 * 2**20) in (401, None)
    _, viewer, _ = d.sign_in(VIEWER_PW, "127.0.0.11")
    _, editor, _ = d.sign_in(EDITOR_PW, "127.0.0.11")
    assert _put(d, 2**20, viewer) in (403, None)
    assert _put(d, big, editor) in (413, None)
    grown = dashboard.memory_info().rss - before
    assert grown < 8 * 2**20, f"the dashboard grew by {grown / 2**20:.0f} MiB"
    access = (d.state / "nginx-access.log").read_text()
    assert '"PUT /_stcore/upload_file/(session)" 401' in access
    assert '"PUT /_stcore/upload_file/(session)" 403' in access
    assert '"PUT /_stcore/upload_file/(session)" 413' in access


# --------------------------------------------------------------------------- 2


def _signin_status(d: Deployment, source: str, password: str) -> tuple[int, bool]:
    """(status, whether the gateway answered: nginx's own 429 is a bare page)."""
    status, _cookie, text = d.sign_in(password, source)
    return status, "Compile Lab" in text


def test_2_guessing_from_one_address_is_slowed_then_locked_not_the_others(deployment):
    """200 wrong guesses on fresh connections took 67.6 s and the right password then worked.
    Now nginx lets a few posts a minute from one address reach the password check (200 guesses
    would take over half an hour), the tenth wrong one locks the address (logged, the right
    password refused from there), another address signs in at once, and the operator's unlock
    lets the first in again."""
    d, attacker, colleague = deployment, "127.0.0.2", "127.0.0.3"
    started = time.monotonic()
    answers = [_signin_status(d, attacker, f"guess {i}") for i in range(200)]
    checked = sum(by_gateway for _status, by_gateway in answers)
    elapsed = time.monotonic() - started
    assert checked <= 6 + elapsed / 10, (checked, elapsed)  # burst 5, then 6 a minute
    assert sum(status == 429 for status, _ in answers) >= 190
    assert (200 - 6) * 10 >= 600  # at that pace, 200 guesses take over 10 minutes
    assert _signin_status(d, colleague, EDITOR_PW)[0] == 303  # meanwhile, a colleague

    deadline = time.monotonic() + 180
    while True:  # go on guessing at the allowed pace until the lockout
        time.sleep(10.5)
        status, by_gateway = _signin_status(d, attacker, "one more guess")
        if by_gateway and status == 429:
            break
        assert time.monotonic() < deadline, "no lockout after 3 minutes of guessing"
    log = (d.state / "signin.log").read_text()
    assert "sign-in failed from 127.0.0.2" in log and "sign-in locked for 127.0.0.2" in log
    time.sleep(10.5)
    status, by_gateway = _signin_status(d, attacker, EDITOR_PW)
    assert (status, by_gateway) == (429, True), "the right password got in while locked"
    assert _signin_status(d, colleague, EDITOR_PW)[0] == 303

    lockouts = subprocess.run([sys.executable, str(ROOT / "scripts" / "shared_dashboard.py"),
                               "--state-dir", str(d.state), "lockouts"],
                              capture_output=True, text=True, check=True).stdout
    assert "127.0.0.2" in lockouts
    subprocess.run([sys.executable, str(ROOT / "scripts" / "shared_dashboard.py"),
                    "--state-dir", str(d.state), "unlock", "127.0.0.2"], check=True,
                   capture_output=True)
    time.sleep(10.5)
    assert _signin_status(d, attacker, EDITOR_PW)[0] == 303


# --------------------------------------------------------------------------- 3


def _raw(d: Deployment, request: bytes) -> bytes:
    import socket

    with socket.create_connection(("127.0.0.1", d.port), timeout=10) as s:
        s.sendall(request)
        data = b""
        with contextlib.suppress(ConnectionResetError):
            while chunk := s.recv(65536):
                data += chunk
        return data


def test_3_foreign_host_or_origin_gets_nothing(deployment):
    """A websocket with Host attacker.example (DNS rebinding) was accepted and could queue a
    run; a foreign Origin made Streamlit fetch an outside address. nginx now closes a foreign
    Host's connection unanswered and refuses another origin before Streamlit sees either."""
    d = deployment
    upgrade = (b"GET /_stcore/stream HTTP/1.1\r\nHost: attacker.example\r\n"
               b"Origin: http://attacker.example\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
               b"Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n"
               b"Sec-WebSocket-Protocol: streamlit\r\n\r\n")
    assert _raw(d, upgrade) == b""
    assert _raw(d, b"GET / HTTP/1.1\r\nHost: attacker.example:80\r\n\r\n") == b""
    _, cookie, _ = d.sign_in(EDITOR_PW, "127.0.0.12")
    status, _, _ = d.request("GET", "/", headers={"Cookie": cookie,
                                                  "Origin": "http://attacker.example"})
    assert status == 403
    with pytest.raises(Refused):
        Client(d.base, cookie=cookie, origin="http://attacker.example").close()
    ok = Client(d.base, cookie=cookie, origin=d.base)  # the same origin works
    assert "Runs" in Client.text(ok.rerun(page="runs"))
    ok.close()
    assert "Rejecting WebSocket" not in d.log.read_text()  # Streamlit never saw them


# --------------------------------------------------------------------------- 4


def test_4_an_editors_session_id_is_useless_to_anyone_else(deployment):
    """A second client presenting an editor's session id got that editor session; the id is in
    every upload URL. A resumed session must now carry the same sign-in (nginx's header,
    mapped into st.user), and upload URLs are not logged."""
    d = deployment
    _, editor, _ = d.sign_in(EDITOR_PW, "127.0.0.13")
    _, viewer, _ = d.sign_in(VIEWER_PW, "127.0.0.13")
    owner = Client(d.base, cookie=editor, origin=d.base)
    assert "Queue run" in Client.text(owner.rerun(page="new"))
    stolen = owner.session_id
    thief = Client(d.base, cookie=viewer, origin=d.base, session_id=stolen)
    seen = Client.text(thief.rerun(page="new"))
    assert thief.session_id != stolen
    assert "Queue run" not in seen and "needs the editor password" in seen
    thief.close()
    with pytest.raises(Refused):  # and without any sign-in, no connection at all
        Client(d.base, origin=d.base, session_id=stolen).close()
    assert "Queue run" in Client.text(owner.rerun(page="new"))  # the owner is undisturbed
    owner.close()
    assert _put(d, 1024, editor, session=stolen) is not None
    assert stolen not in (d.state / "nginx-access.log").read_text()
    assert f"upload_file/{stolen}" not in d.log.read_text()  # nor uvicorn's request lines


# --------------------------------------------------------------------------- 6


def test_6_signing_out_stops_every_refreshing_section(deployment):
    """After sign-out a client kept receiving a run's progress and the queue status from
    sections loaded while signed in. A refresh of such a section now finds the sign-in gone
    and redraws the page as signed out."""
    d = deployment
    _, cookie, _ = d.sign_in(EDITOR_PW, "127.0.0.14")
    client = Client(d.base, cookie=cookie, origin=d.base)
    page = client.rerun(page="runs")
    refreshing = Client.fragments(page)
    assert refreshing, "the queue status refreshes itself"
    assert "queue empty" in Client.text(page)
    client.rerun(page="runs", triggers=[Client.button(page, "Sign out")])
    for fragment_id, _interval in refreshing:  # what the browser's timer would send
        after = Client.text(client.rerun(page="runs", fragment_id=fragment_id))
        assert "queue empty" not in after and "worker" not in after
        assert "signed out" in after
    client.close()
    status, _, _ = d.request("GET", "/runs", headers={"Cookie": cookie})
    assert status == 303  # the cookie is dead for every tab


# --------------------------------------------------------------------------- 7


def test_7_nothing_is_served_or_done_before_sign_in(deployment):
    """Without a password: clear_cache emptied every user's caches, /_stcore/metrics was
    open, the first message told app.py's absolute path, media downloads needed no session.
    Now only the sign-in page answers; signed in, metrics stay closed and clear_cache is
    dropped."""
    d = deployment
    status, _, body = d.request("GET", "/_compilelab/signin")
    assert status == 200 and b"<script" not in body
    assert str(ROOT).encode() not in body and b"app.py" not in body
    for path in ("/", "/runs", "/_stcore/health", "/_stcore/host-config", "/static/",
                 "/media/0123456789abcdef.csv", "/app/static/x"):
        status, headers, _ = d.request("GET", path)
        assert status == 303 and headers["location"].endswith(
            "/_compilelab/signin?next=" + path), path
    assert d.request("GET", "/_stcore/metrics")[0] == 404
    assert d.request("GET", "/_compilelab/auth")[0] == 404  # nginx's internal question
    with pytest.raises(Refused):
        Client(d.base, origin=d.base).close()

    _, viewer, _ = d.sign_in(VIEWER_PW, "127.0.0.15")
    assert d.request("GET", "/_stcore/metrics", headers={"Cookie": viewer})[0] == 404
    client = Client(d.base, cookie=viewer, origin=d.base)
    client.rerun(page="runs")
    client.send("clear_cache")
    client.rerun(page="runs")
    client.close()
    assert "dropped a 'clear_cache' message" in d.log.read_text()


# --------------------------------------------------------------------------- 5


def test_5_colon_forms_in_user_text_render_as_text(deployment):
    """Tags and notes such as ':material/verified:', ':skull:' or ':red[...]' rendered an
    icon, an emoji or styled text: fake status marks. In Chromium they now read as typed."""
    if not CHROMIUM or not Path(CHROMIUM).exists():
        pytest.skip("no Chromium (set COMPILELAB_CHROMIUM or install chromium)")
    from playwright.sync_api import sync_playwright

    d = deployment
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        page = browser.new_page(viewport={"width": 1400, "height": 2400})
        page.goto(f"{d.base}/compare?runs={d.hostile}")
        page.fill("#password", VIEWER_PW)
        page.click("button[type=submit]")
        page.locator(".js-plotly-plot").first.wait_for(timeout=60_000)
        page.wait_for_timeout(1500)
        main = page.locator('[data-testid="stMain"]')
        text = main.inner_text().replace("\u2060", "")
        found = {marker: main.locator(marker).count() for marker in (
            '[aria-label="verified icon"]', 'img[alt="Streamlit logo"]',
            ".stMarkdownColoredText", ".stMarkdownColoredBackground", ".stMarkdownBadge",
            "streamlit-help-icon")}
        browser.close()
    assert ":material/verified:" in text and ":skull:" in text and ":red[fake]" in text
    assert "\U0001f480" not in text  # the skull emoji
    assert not any(found.values()), found


# --------------------------------------------------------------------------- loopback


def test_no_connection_leaves_loopback(deployment):
    """Run last: every connection the deployment's processes attempted while the tests above
    ran (sign-ins, uploads, a foreign Origin, browsing) went to a Unix socket or loopback."""
    d = deployment
    if d.trace is None:
        pytest.skip("strace is not installed (Debian: apt-get install strace)")
    time.sleep(1)
    calls = [line for line in d.trace.read_text().splitlines()
             if re.search(r"\b(connect|sendto|sendmsg)\(", line)]
    assert calls, "strace recorded nothing"
    outside = [line for line in calls if any(not _loopback(a) for a in _addresses(line))]
    assert not outside, "\n".join(outside[:20])


def _addresses(line: str) -> list[str]:
    """The IP addresses an strace line of connect/sendto/sendmsg names (Unix and netlink
    sockets name none)."""
    found = []
    for family, rest in re.findall(r"sa_family=(AF_\w+)([^}]*)", line):
        pattern = {"AF_INET": r'inet_addr\("([^"]+)"\)',
                   "AF_INET6": r'inet_pton\(AF_INET6, "([^"]+)"'}.get(family)
        if pattern:
            found += re.findall(pattern, rest) or [f"{family}?"]
    return found


def _loopback(address: str) -> bool:
    return address.startswith("127.") or address in ("::1", "::ffff:127.0.0.1")
