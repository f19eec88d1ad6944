"""A second preloaded process server, for the measuring processes whose first call nobody
reports: torch **and the whole compiler** imported, CUDA not initialised.

The plain server (engine/orchestrate/forked.py) holds torch and the model libraries, and no compiler,
because its forks' first calls are the cold and warm compiles the product reports.  Processes
from index 2 on of a compiled variant (``schedule.Job.reported`` is false) are further measuring
processes: their first call is a warm-cache compile that the product does not report, so their
process may also hold what that call imports (the rest of inductor's compile path, Triton,
CUDA-graph trees: ``engine.orchestrate.preload_compiler``).  On a large host a run forks many
further processes that would otherwise all import the compiler at once, each slowed by the
others' imports, and every reported compile would wait for them (a compile beside them reads
slow): docs/measurements/2026-12-04-time-to-answer.md.

The server is ``multiprocessing``'s fork server, a second instance (the first, plain one is
``engine.orchestrate.forked``'s): a ``Process`` subclass whose ``Popen`` connects to this instance
instead of the module's default one.  It is used only where processes run side by side
(``concurrency`` > 1) and the model needs no library (``start`` says why): one at a time, its
start-up (torch and the compiler) would cost more than the imports it saves.  It is used once ready
(``usable``, which never waits); until then, or if its imports left CUDA initialised (then it never
says ready), further processes fork from the plain server as before.  While it imports (``pending``)
the runner counts it as a preparing process: no reported compile and no timing window beside it
(engine/schedule.decide); one not ready within ``GRACE_S`` is ended.
"""

from __future__ import annotations

import atexit
import contextlib
import os
import signal
import tempfile
import time
from multiprocessing import forkserver, popen_forkserver
from multiprocessing.context import ForkServerProcess
from typing import Any

from engine.orchestrate.preloads import compiler_preloads, enabled

_SERVER: Any = None
_READY = ""
READY_ENV = "COMPILELAB_COMPILER_SERVER_READY"


def wanted() -> bool:
    """``COMPILELAB_COMPILER_SERVER=0`` leaves this server out: the further processes fork from
    the plain server and import the rest of the compiler in their own (unreported) first call."""
    return os.environ.get("COMPILELAB_COMPILER_SERVER", "1").strip().lower() not in (
        "0", "false", "no")


def start(libraries: bool = True) -> None:
    """Start the server now without waiting for its imports (a later fork waits for them).

    Not for a run whose model may need a library (``libraries``, ``preloads.wants_libraries``):
    the server would import it too and get ready too late to pay: for BERT-base it took more
    than twice the plain server's start, its forks still imported the model's modules and built
    it, and in a run it missed its grace, so the further processes forked late and every
    reported compile waited for them.  For the seed MLP it is ready before the first batch has
    imported the compiler, and its forks skip that import
    (docs/measurements/2026-12-04-time-to-answer.md)."""
    global _SERVER, _READY, _STARTED_AT
    if _SERVER is not None or libraries or not enabled() or not wanted():
        return
    fd, ready = tempfile.mkstemp(prefix="compilelab-compiler-server-", suffix=".ready")
    os.close(fd)
    os.unlink(ready)  # the server creates it once ready
    os.environ[READY_ENV] = ready  # the server inherits this process's environment
    try:
        server = forkserver.ForkServer()
        server.set_forkserver_preload(compiler_preloads(libraries))
        server.ensure_running()
        _SERVER, _READY = server, ready
        _STARTED_AT = time.monotonic()
        atexit.register(_remove_ready)
    except Exception:
        pass
    finally:
        os.environ.pop(READY_ENV, None)


def _remove_ready() -> None:
    for path in (_READY, _READY + ".failed"):
        with contextlib.suppress(OSError):
            os.unlink(path)


def started() -> bool:
    return _SERVER is not None


class _Popen(popen_forkserver.Popen):
    def _launch(self, process_obj: Any) -> None:
        # popen_forkserver looks the module function up at call time: point it at this server
        # for the one launch (the runner starts processes from one thread)
        saved = forkserver.connect_to_new_process
        forkserver.connect_to_new_process = _SERVER.connect_to_new_process
        try:
            super()._launch(process_obj)
        finally:
            forkserver.connect_to_new_process = saved


class _Process(ForkServerProcess):
    """Module level: the process object is pickled to the server, its class by name."""

    @staticmethod
    def _Popen(process_obj: Any) -> Any:
        return _Popen(process_obj)


def process(**kwargs: Any) -> Any:
    """A ``multiprocessing`` process forked from this server (``start`` first)."""
    return _Process(**kwargs)


GRACE_S = 15.0
"""How long after its start a further process may be held back for this server to get ready:
about twice what its imports (torch and the compiler) take alone beside the plain server's start
on a GPU host (docs/measurements/2026-12-04-time-to-answer.md)."""
_STARTED_AT = 0.0


def pending() -> bool:
    """Started, not ready yet, alive, not failed, and within ``GRACE_S`` of its start: worth
    holding a further process back for (the runner does, counting it as preparing)."""
    if _SERVER is None or usable() or os.path.exists(_READY + ".failed"):
        return False
    if time.monotonic() - _STARTED_AT > GRACE_S:
        _give_up()  # still importing beside what the runner now lets compile and time
        return False
    pid = getattr(_SERVER, "_forkserver_pid", None)
    if pid:
        try:
            if os.waitpid(pid, os.WNOHANG)[0]:  # it exited (a failed import)
                return False
        except ChildProcessError:
            return False
    return True


def _give_up() -> None:
    """End a server that did not get ready within ``GRACE_S``: the runner no longer waits for
    it, so its imports must not go on beside the compiles and timing it now allows.  Further
    processes fork from the plain server, as where this server is not started."""
    global _SERVER
    pid = getattr(_SERVER, "_forkserver_pid", None)
    if pid:
        with contextlib.suppress(OSError):
            os.kill(pid, signal.SIGKILL)
    _SERVER = None


def usable() -> bool:
    """Started and ready: its imports are done and left CUDA uninitialised (the server's
    ``engine.orchestrate.preload_compiler`` says so with a file).  Never waits: a fork from a server still
    importing would hold the runner until it is done, so until then further processes fork
    from the plain server."""
    return _SERVER is not None and bool(_READY) and os.path.exists(_READY)
