"""Wait for a freshly started dashboard: the one health-wait loop of the browser tests and the
screenshot script (it was written out three times).

Streamlit answers ``ok`` on ``/_stcore/health`` once its server is up (what Streamlit's own e2e
tests poll). The process is watched meanwhile, so a dashboard that dies while starting is
reported at once with its output, not after the whole timeout.
"""

from __future__ import annotations

import socket
import subprocess
import time
import urllib.request
from collections.abc import Callable


class NotHealthy(RuntimeError):
    """The dashboard exited or did not answer in time; the message holds its output's tail."""


def free_port() -> int:
    """A TCP port free on the loopback address now."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_healthy(base: str, proc: subprocess.Popen, *, timeout_s: float = 60.0,
                 output: Callable[[], str] = lambda: "") -> None:
    """Until ``base``/_stcore/health answers ``ok``; ``NotHealthy`` when ``proc`` exits first
    or ``timeout_s`` passes (``output()`` supplies the log tail for the message)."""
    deadline = time.monotonic() + timeout_s
    while True:
        try:
            with urllib.request.urlopen(f"{base}/_stcore/health", timeout=2) as r:
                if r.read() == b"ok":
                    return
        except OSError:
            pass
        if proc.poll() is not None or time.monotonic() > deadline:
            why = "exited" if proc.poll() is not None else f"did not answer in {timeout_s:g} s"
            raise NotHealthy(f"the dashboard {why}:\n{output()[-3000:]}")
        time.sleep(0.3)
