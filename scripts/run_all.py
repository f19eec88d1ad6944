#!/usr/bin/env python3
"""Start the Compile Lab worker and dashboard together; stop both on Ctrl-C or SIGTERM.

    python scripts/run_all.py [--port 8501] [--address 127.0.0.1] [--db URL] [--no-worker]

The dashboard listens on 127.0.0.1 unless ``--address`` (or ``COMPILELAB_ADDRESS``) names another
address: it has no login of its own (see "Sharing the dashboard" in README.md for the password
page), so a wider address is a choice the user makes, and the launcher prints a warning for it.
Every Streamlit setting that matters for that is passed on the command line, not left to a
``.streamlit/config.toml`` that is only read when the working directory happens to be the
repository root: no usage statistics, no Deploy button, error details as type and message only.

Each service runs as its own process group (``start_new_session``), so the launcher alone
decides how they stop: on SIGINT/SIGTERM it forwards SIGINT to both groups (the worker's
measuring children included), waits up to ``--grace`` seconds, then escalates to SIGTERM and
finally SIGKILL.  If either service exits on its own, the other is stopped the same way and the
launcher exits with the first one's status, so a crash is never hidden behind a live dashboard.

Both share one database URL: ``--db``, else ``COMPILELAB_DB``, else ``sqlite:///compilelab.db``
(a file in the repository root, which is the working directory of both services).
"""

from __future__ import annotations

import argparse
import contextlib
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DEFAULT_DB = "sqlite:///compilelab.db"
DEFAULT_ADDRESS = "127.0.0.1"
LOOPBACK = {"127.0.0.1", "localhost", "::1"}
# Streamlit settings for every way the dashboard starts (mirrored in .streamlit/config.toml).
STREAMLIT_FLAGS = [
    "--server.headless", "true",
    "--browser.gatherUsageStats", "false",  # no telemetry requests to data.streamlit.io
    "--client.toolbarMode", "minimal",  # no "Deploy" button, no developer menu
    "--client.disableDataExport", "true",  # the pages' escaped CSV exports instead
    "--client.showErrorDetails", "type",  # an unexpected error shows its type, never a traceback
    "--server.maxUploadSize", "16",  # MiB: the bundle limit (storage/bundle_validation.py)
]


class _Stop(Exception):
    """Raised from the signal handler to leave the wait loop."""

    def __init__(self, signum: int):
        super().__init__(signum)
        self.signum = signum


def _commands(args: argparse.Namespace) -> dict[str, list[str]]:
    py = sys.executable
    cmds: dict[str, list[str]] = {}
    if not args.no_worker:
        cmds["worker"] = [py, "-m", "engine", "worker"]
    cmds["dashboard"] = dashboard_command(args.address, args.port, py)
    return cmds


def allowed_hosts(address: str) -> list[str]:
    """Host names Streamlit's websocket accepts. On loopback, the loopback names only: a web page
    whose own name resolves to 127.0.0.1 (DNS rebinding) could otherwise drive the dashboard
    from the user's browser, queue runs included (issue 39). On another address the names
    users type are unknown here: any (the shared deployment names them)."""
    return sorted(LOOPBACK) if address.strip().lower() in LOOPBACK else ["*"]


def dashboard_command(address: str, port: int, python: str = sys.executable) -> list[str]:
    """``streamlit run dashboard/app.py`` bound to ``address`` with the settings above."""
    hosts = [flag for host in allowed_hosts(address) for flag in ("--server.allowedHosts", host)]
    return [python, "-m", "streamlit", "run", "dashboard/app.py", *STREAMLIT_FLAGS, *hosts,
            "--server.port", str(port), "--server.address", address]


def exposure_warning(address: str) -> str | None:
    """What to tell a user who binds the dashboard beyond this machine (None on loopback)."""
    if address.strip().lower() in LOOPBACK:
        return None
    login = ("a password page is on (COMPILELAB_DASHBOARD_PASSWORD), fit for a trusted network "
             "only" if os.environ.get("COMPILELAB_DASHBOARD_PASSWORD") else
             "it has NO login: anyone who can reach this address can queue runs, edit notes "
             "and delete runs (COMPILELAB_DASHBOARD_PASSWORD adds a password page)")
    return (f"run_all: WARNING: the dashboard listens on {address}, reachable from other "
            f"machines; {login}. For a team, start the shared deployment instead: "
            "make shared (README: Sharing the dashboard)")


def _check_layout(cmds: dict[str, list[str]]) -> str | None:
    if "worker" in cmds and not (ROOT / "engine" / "__main__.py").exists():
        return "engine/__main__.py is missing: `python -m engine worker` cannot start"
    if not (ROOT / "dashboard" / "app.py").exists():
        return "dashboard/app.py is missing: the dashboard cannot start"
    return None


def _signal_group(pgid: int, sig: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, sig)


def _group_alive(proc: subprocess.Popen) -> bool:
    """True while any process of the child's group lives (its measuring children included)."""
    proc.poll()  # reap the leader if it has exited, so a zombie does not count
    try:
        os.killpg(proc.pid, 0)  # the child leads its own group: pgid == pid
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _stop_all(procs: dict[str, subprocess.Popen], grace: float) -> None:
    """SIGINT every live group, then SIGTERM, then SIGKILL, waiting `grace` s between steps.

    Whole groups are signalled, not just their leaders, so a measuring child of the worker
    cannot outlive the launcher.
    """
    for sig, wait_s in ((signal.SIGINT, grace), (signal.SIGTERM, grace), (signal.SIGKILL, 5.0)):
        live = [p for p in procs.values() if _group_alive(p)]
        if not live:
            return
        for p in live:
            _signal_group(p.pid, sig)
        deadline = time.monotonic() + wait_s
        while time.monotonic() < deadline and any(_group_alive(p) for p in live):
            time.sleep(0.1)


def run_services(services: dict[str, tuple[list[str], dict[str, str]]], grace: float,
                 ready: Callable[[dict[str, subprocess.Popen]], None] | None = None) -> int:
    """Start each ``name: (command, environment)`` in its own process group (working directory:
    the repository root), call ``ready`` once they are started, and wait: Ctrl-C or SIGTERM, or
    any service leaving on its own, stops them all (``_stop_all``). Returns the exit status."""
    procs: dict[str, subprocess.Popen] = {}

    def on_signal(signum, _frame):
        raise _Stop(signum)

    previous = {s: signal.signal(s, on_signal) for s in (signal.SIGINT, signal.SIGTERM)}
    status = 0
    try:
        for name, (cmd, env) in services.items():
            procs[name] = subprocess.Popen(cmd, cwd=ROOT, env=env, start_new_session=True)
            print(f"run_all: started {name} (pid {procs[name].pid})", flush=True)
        if ready is not None:
            ready(procs)
        while True:
            for name, p in procs.items():
                rc = p.poll()
                if rc is not None:
                    print(f"run_all: {name} exited with status {rc}; stopping the rest", flush=True)
                    status = rc if rc != 0 else 1  # a service leaving on its own is an error
                    raise _Stop(0)
            time.sleep(0.2)
    except _Stop as stop:
        if stop.signum:
            print(f"run_all: {signal.Signals(stop.signum).name}: stopping", flush=True)
            # Ctrl-C is the normal way to stop: exit 0.  SIGTERM: the conventional 128 + 15.
            status = 0 if stop.signum == signal.SIGINT else 128 + stop.signum
    finally:
        # Also reached on an unexpected error (e.g. a command that cannot start): never leave
        # a started service behind.  A second Ctrl-C while we wait must not interrupt the
        # shutdown either: ignore it, the escalation to SIGTERM/SIGKILL follows anyway.
        for s in previous:
            signal.signal(s, signal.SIG_IGN)
        _stop_all(procs, grace)
        for s, handler in previous.items():
            signal.signal(s, handler)
    print("run_all: all stopped", flush=True)
    return status


def without_passwords(env: dict[str, str]) -> dict[str, str]:
    """``env`` less the dashboard's passwords: the worker (and the code it measures) and nginx
    have no use for them."""
    return {k: v for k, v in env.items() if not k.startswith("COMPILELAB_DASHBOARD_")}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--port", type=int, default=int(os.environ.get("COMPILELAB_PORT", 8501)))
    parser.add_argument("--address", default=os.environ.get("COMPILELAB_ADDRESS") or DEFAULT_ADDRESS,
                        help="address the dashboard listens on (default 127.0.0.1: this machine "
                        "only); another one is reachable from the network")
    parser.add_argument("--db", default=os.environ.get("COMPILELAB_DB") or DEFAULT_DB)
    parser.add_argument("--no-worker", action="store_true", help="dashboard only")
    parser.add_argument("--grace", type=float, default=10.0, help="seconds to wait per stop step")
    args = parser.parse_args(argv)

    cmds = _commands(args)
    problem = _check_layout(cmds)
    if problem:
        print(f"run_all: {problem}", file=sys.stderr)
        return 2

    warning = exposure_warning(args.address)
    if warning:
        print(warning, file=sys.stderr, flush=True)
    env = dict(os.environ, COMPILELAB_DB=args.db, PYTHONUNBUFFERED="1")
    services = {name: (cmd, without_passwords(env) if name == "worker" else env)
                for name, cmd in cmds.items()}

    def banner(_procs: dict[str, subprocess.Popen]) -> None:
        print(f"run_all: database {args.db}; dashboard on http://{args.address}:{args.port}"
              " ; Ctrl-C stops everything", flush=True)

    return run_services(services, args.grace, banner)


if __name__ == "__main__":
    sys.exit(main())
