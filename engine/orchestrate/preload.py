"""Imported last by the fork server (engine/orchestrate/forked.py), after ``engine.measure.child`` (and
``engine.orchestrate.preload_libs`` where the run may need a model library): it makes the server end
without the interpreter's teardown."""

from __future__ import annotations

import atexit
import os
import sys


def _exit_now() -> None:
    """The server's exit skips the interpreter's teardown (torch's atexit hooks and module
    finalisers, about a second: docs/measurements/2026-12-03-time-to-answer.md), which a
    caller that reads the engine's output to its end waited for: the server holds the runner's
    stdout and stderr.  Registered last, so it runs first; forks of the server never run it
    (they end with ``os._exit``)."""
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(0)


def _in_fork_server() -> bool:
    """Imported by ``multiprocessing.forkserver.main`` (the server's preload), not by anyone
    else: a test or tool importing this module must keep its own exit code."""
    frame = sys._getframe(1)
    while frame is not None:
        code = frame.f_code
        if code.co_name == "main" and code.co_filename.endswith(
                os.path.join("multiprocessing", "forkserver.py")):
            return True
        frame = frame.f_back
    return False


EXIT_HOOK = _in_fork_server()
"""Whether this process is the server and so ends without teardown (checked by the tests)."""
if EXIT_HOOK:
    atexit.register(_exit_now)
