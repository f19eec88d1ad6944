#!/usr/bin/env python3
"""The shared deployment: one dashboard for a team, behind nginx, nothing served before sign-in.

    COMPILELAB_DASHBOARD_PASSWORD=... [COMPILELAB_DASHBOARD_READONLY_PASSWORD=...] \\
        python scripts/shared_dashboard.py serve --listen 0.0.0.0:8443 --server-name HOST
    python scripts/shared_dashboard.py lockouts          # addresses locked out of signing in
    python scripts/shared_dashboard.py unlock ADDRESS    # lift one (or --all)

``serve`` starts three services as run_all.py does (own process groups, Ctrl-C or SIGTERM stops
all, one leaving stops the rest): the dashboard as an ASGI app on a Unix socket in the state
folder (dashboard/gateway.py, under uvicorn), nginx (Debian's package) from
deploy/nginx.conf.in on ``--listen``, and the engine worker (``--no-worker`` leaves it out). Only
nginx listens on the network; the socket's folder is closed to other users. docs/SECURITY.md
says what this deployment promises and what it needs (HTTPS: ``--tls-cert``/``--tls-key``, or a
TLS proxy in front that sets the Host).

State (``--state-dir``, default ``$COMPILELAB_STATE_DIR`` or ``.compilelab``, the folder the
password page's lockouts use too): the generated nginx.conf, the socket,
nginx's logs (upload URLs and query strings left out), ``signin.log`` (every sign-in, failure
and lockout with the client address) and the lockout file that ``unlock`` edits.
"""

from __future__ import annotations

import argparse
import os
import pwd
import re
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from dashboard.signin_throttle import SigninThrottle, state_dir  # noqa: E402
from scripts.run_all import DEFAULT_DB, run_services, without_passwords  # noqa: E402
from storage.bundle_validation import MAX_BUNDLE_BYTES  # noqa: E402

TEMPLATE = ROOT / "deploy" / "nginx.conf.in"
MIN_PASSWORD = 12
PASSWORD_ENVS = ("COMPILELAB_DASHBOARD_PASSWORD", "COMPILELAB_DASHBOARD_READONLY_PASSWORD")
# A multipart upload carries a few hundred bytes around the file: 64 KiB is ample.
BODY_LIMIT_KIB = MAX_BUNDLE_BYTES // 1024 + 64
PROXY_HEADERS = """proxy_set_header Host $http_host;
            proxy_set_header X-Real-IP $remote_addr;
            proxy_set_header X-Forwarded-For $remote_addr;
            proxy_set_header X-Forwarded-Proto $scheme;"""


class Refused(SystemExit):
    """A setting this deployment will not start with; the message says what to do."""

    def __init__(self, message: str):
        super().__init__(f"shared_dashboard: {message}")


def find_nginx() -> str:
    found = os.environ.get("COMPILELAB_NGINX") or shutil.which("nginx") or (
        "/usr/sbin/nginx" if Path("/usr/sbin/nginx").exists() else None)
    if not found:
        raise Refused("nginx is not installed (Debian: apt-get install nginx), or set "
                      "COMPILELAB_NGINX to its path")
    return found


def check_passwords(env: dict[str, str]) -> None:
    """The sign-in page is the only door: it needs a password, and long ones (the lockout
    counts per address; many addresses together are slowed only by the password's length)."""
    given = {name: env.get(name) for name in PASSWORD_ENVS if env.get(name)}
    if PASSWORD_ENVS[0] not in given:
        raise Refused(f"set {PASSWORD_ENVS[0]} (the editor password) before starting")
    short = [name for name, value in given.items() if len(value) < MIN_PASSWORD]
    if short:
        raise Refused(f"{', '.join(short)}: use at least {MIN_PASSWORD} characters")


def check_streamlit() -> None:
    """What this deployment relies on in Streamlit: st.App (an ASGI app on a Unix socket), the
    trusted user header, and sessions that resume only for the same st.user."""
    import streamlit as st
    from streamlit import config
    from streamlit.runtime.app_session import AppSession

    missing = [what for what, ok in (
        ("st.App", hasattr(st, "App")),
        ("server.trustedUserHeaders", "server.trustedUserHeaders" in config.get_config_options()),
        ("session resume bound to st.user", hasattr(AppSession, "matches_user_info")),
    ) if not ok]
    if missing:
        raise Refused(f"this Streamlit ({st.__version__}) lacks {', '.join(missing)}: upgrade "
                      "it (pip install -U streamlit)")


def parse_listen(text: str) -> tuple[str, int]:
    host, sep, port = text.rpartition(":")
    if not sep or not port.isdigit() or not 0 < int(port) < 65536:
        raise Refused(f"--listen {text!r}: expected ADDRESS:PORT, e.g. 0.0.0.0:8443")
    return host.strip("[]") or "0.0.0.0", int(port)  # noqa: S104 - the user names the address


def server_names(given: list[str] | None) -> list[str]:
    """Host names the deployment answers to (no DNS lookup: a lookup would leave the machine)."""
    names = given or [socket.gethostname(), "localhost", "127.0.0.1"]
    for name in names:
        if not name or any(c in name for c in " ;{}'\"\\$\n\t") or len(name) > 253:
            raise Refused(f"--server-name {name!r} is not a host name")
    return list(dict.fromkeys(names))


def _worker_user() -> str:
    """nginx's worker user when this runs as root (nginx drops to it); the socket's folder is
    opened to its group only."""
    for name in ("www-data", "nobody"):
        try:
            pwd.getpwnam(name)
            return name
        except KeyError:
            continue
    raise Refused("running as root, but neither www-data nor nobody exists for nginx's workers")


def nginx_conf(state: Path, run: Path, listen: str, names: list[str], rate_per_min: int,
               tls: tuple[str, str] | None, user: str | None) -> str:
    """deploy/nginx.conf.in with its fields filled."""
    tls_lines = (f"ssl_certificate {tls[0]};\n        ssl_certificate_key {tls[1]};\n"
                 "        ssl_protocols TLSv1.2 TLSv1.3;") if tls else ""
    fields = {
        "USER": f"user {user};" if user else "",
        "LOGS": str(state),
        "RUN": str(run),
        "SOCKET": str(run / "dashboard.sock"),
        "LISTEN": listen + (" ssl" if tls else ""),
        "TLS": tls_lines,
        "SERVER_NAMES": " ".join(names),
        "SIGNIN_RATE": f"{rate_per_min}r/m",
        "SIGNIN_BURST": "5",
        "BODY_LIMIT": f"{BODY_LIMIT_KIB}k",
        "PROXY_HEADERS": PROXY_HEADERS,
    }
    text = TEMPLATE.read_text()
    for name, value in fields.items():
        text = text.replace(f"@{name}@", value)
    leftover = re.findall(r"@[A-Z_]+@", text)
    if leftover:
        raise AssertionError(f"unfilled fields in {TEMPLATE}: {leftover}")
    return text


def run_folder(user: str | None) -> Path:
    """A fresh folder for the dashboard's socket and nginx's buffers, open to nobody but this
    user and, when nginx's workers run as another user, that user's group. A new temporary
    folder rather than one in the state folder: every folder above the socket must let the
    workers through, and the state folder may sit anywhere."""
    run = Path(tempfile.mkdtemp(prefix="compilelab-shared-"))
    (run / "tmp").mkdir()
    if user:
        entry = pwd.getpwnam(user)
        os.chown(run, os.geteuid(), entry.pw_gid)
        run.chmod(0o750)
        os.chown(run / "tmp", entry.pw_uid, entry.pw_gid)
    return run


def write_conf(state: Path, conf: str) -> Path:
    """The state folder (this user only) with the generated nginx.conf in it."""
    state.mkdir(parents=True, exist_ok=True)
    state.chmod(0o700)
    path = state / "nginx.conf"
    path.write_text(conf)
    path.chmod(0o600)
    return path


def _wait_ready(procs: dict[str, subprocess.Popen], sock: Path, host: str, port: int,
                name: str, tls: bool, timeout_s: float = 90.0) -> bool:
    """Until the sign-in page answers through nginx (False if a service died or time ran out)."""
    import http.client
    import ssl

    deadline = time.monotonic() + timeout_s
    target = "127.0.0.1" if host in ("0.0.0.0", "") else host  # noqa: S104
    while time.monotonic() < deadline:
        if any(p.poll() is not None for p in procs.values()):
            return False
        if sock.exists():
            try:
                # Our own listener on this machine: its certificate names the public host.
                conn = http.client.HTTPSConnection(
                    target, port, timeout=2, context=ssl._create_unverified_context()  # noqa: S323
                ) if tls else http.client.HTTPConnection(target, port, timeout=2)
                conn.request("GET", "/_compilelab/signin", headers={"Host": name})
                if conn.getresponse().status == 200:
                    return True
            except OSError:
                pass
        time.sleep(0.3)
    return False


def serve(args: argparse.Namespace) -> int:
    env = dict(os.environ)
    check_passwords(env)
    check_streamlit()
    nginx = find_nginx()
    if bool(args.tls_cert) != bool(args.tls_key):
        raise Refused("--tls-cert and --tls-key go together")
    host, port = parse_listen(args.listen)
    names = server_names(args.server_name)
    user = _worker_user() if os.geteuid() == 0 else None
    state = Path(args.state_dir).resolve()
    tls = (str(Path(args.tls_cert).resolve()), str(Path(args.tls_key).resolve())) \
        if args.tls_cert else None
    listen = f"[{host}]:{port}" if ":" in host else f"{host}:{port}"
    run = run_folder(user)
    try:
        conf = write_conf(state, nginx_conf(state, run, listen, names, args.signin_per_minute,
                                            tls, user))
        return _serve(args, env, nginx, conf, state, run, names, tls is not None)
    finally:
        shutil.rmtree(run, ignore_errors=True)


def _serve(args: argparse.Namespace, env: dict[str, str], nginx: str, conf: Path, state: Path,
           run: Path, names: list[str], tls: bool) -> int:
    host, port = parse_listen(args.listen)
    check = subprocess.run([nginx, "-t", "-q", "-p", str(run), "-c", str(conf)],
                           capture_output=True, text=True)
    if check.returncode != 0:
        raise Refused(f"nginx refused the generated {conf}:\n{check.stderr.strip()}")
    base = dict(env, COMPILELAB_DB=args.db, PYTHONUNBUFFERED="1",
                COMPILELAB_STATE_DIR=str(state))
    services = {
        "dashboard": ([sys.executable, "-m", "uvicorn", "--uds", str(run / "dashboard.sock"),
                       "--no-access-log", "--timeout-graceful-shutdown", "5",
                       "dashboard.gateway:app"],
                      dict(base, COMPILELAB_GATEWAY="1", COMPILELAB_ALLOWED_HOSTS=" ".join(names))),
        "nginx": ([nginx, "-p", str(run), "-c", str(conf)], without_passwords(base)),
    }
    if not args.no_worker:
        services["worker"] = ([sys.executable, "-m", "engine", "worker"], without_passwords(base))
    scheme = "https" if tls else "http"

    def ready(procs: dict[str, subprocess.Popen]) -> None:
        ok = _wait_ready(procs, run / "dashboard.sock", host, port, names[0], tls)
        print(f"shared_dashboard: {'ready' if ok else 'NOT ready'}: {scheme}://{names[0]}:{port} "
              f"(answers to Host {', '.join(names)}); database {args.db}; sign-ins logged to "
              f"{state / 'signin.log'}; lift a lockout with: python scripts/shared_dashboard.py "
              f"--state-dir {state} unlock ADDRESS; Ctrl-C stops everything", flush=True)
        if scheme == "http" and host not in ("127.0.0.1", "localhost", "::1"):
            print("shared_dashboard: WARNING: plain HTTP on the network: passwords and session "
                  "cookies cross it readable; give --tls-cert/--tls-key or put a TLS proxy in "
                  "front", file=sys.stderr, flush=True)

    return run_services(services, args.grace, ready)


def lockouts(args: argparse.Namespace) -> int:
    locked = SigninThrottle(Path(args.state_dir).resolve()).lockouts()
    for address, seconds in sorted(locked.items()):
        print(f"{address}\tlocked for {seconds / 60:.0f} more min")
    if not locked:
        print("no address is locked out")
    return 0


def unlock(args: argparse.Namespace) -> int:
    if not args.all and not args.address:
        raise Refused("name an ADDRESS, or --all")
    lifted = SigninThrottle(Path(args.state_dir).resolve()).unlock(
        None if args.all else args.address)
    print("lifted: " + (", ".join(lifted) if lifted else "nothing was locked"))
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--state-dir", default=str(state_dir()),
                        help="generated config, socket, logs, lockouts (default %(default)s)")
    sub = parser.add_subparsers(dest="command", required=True)
    s = sub.add_parser("serve", help="start nginx, the dashboard and the worker")
    s.add_argument("--listen", default="127.0.0.1:8443",
                   help="ADDRESS:PORT nginx listens on (0.0.0.0:8443 for the network)")
    s.add_argument("--server-name", action="append",
                   help="a host name users reach it by (repeat; default: this machine's name, "
                   "localhost, 127.0.0.1); any other Host gets no answer")
    s.add_argument("--db", default=os.environ.get("COMPILELAB_DB") or DEFAULT_DB)
    s.add_argument("--tls-cert", help="certificate (PEM) for HTTPS")
    s.add_argument("--tls-key", help="its private key (PEM)")
    s.add_argument("--signin-per-minute", type=int, default=6,
                   help="sign-in posts per client address and minute, burst 5 (default 6)")
    s.add_argument("--no-worker", action="store_true", help="no engine worker here")
    s.add_argument("--grace", type=float, default=10.0, help="seconds to wait per stop step")
    sub.add_parser("lockouts", help="addresses locked out of signing in")
    u = sub.add_parser("unlock", help="lift a sign-in lockout")
    u.add_argument("address", nargs="?")
    u.add_argument("--all", action="store_true")
    args = parser.parse_args(argv)
    return {"serve": serve, "lockouts": lockouts, "unlock": unlock}[args.command](args)


if __name__ == "__main__":
    sys.exit(main())
