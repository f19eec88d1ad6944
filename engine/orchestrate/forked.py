"""Measuring children forked from a preloaded process server instead of started cold.

Every measuring child used to be a fresh ``python -m engine.measure.child``: seconds of each
process went to importing torch before anything was measured, once per process, eleven times in
a BERT run (docs/measurements/2026-12-03-time-to-answer.md).  ``multiprocessing``'s fork server
imports ``engine.measure.child`` (and so torch) once; each
child is then a fork of that process.  What the fork gets is what a user's script holds just
before its first compiled call, and nothing of the compiler: torch and the model libraries,
with **CUDA not initialised** (the server never touches the device, so each child creates its
own context) and **no compiler module** (``preloaded_ok`` checks both).  The reported processes
import dynamo and inductor themselves (``torch.compile(model)``, then the first compiled call,
the cold compile the product reports), as a user's fresh process does.  (An opt-in preload of
what ``torch.compile(model)`` imports was tried and removed: the server every process forks
from became ready seconds later, the runs took as long, and a preloaded process may hold torch
but not the compiler: docs/measurements/2026-12-04-time-to-answer.md.)

``engine.orchestrate.preload_libs`` also imports model libraries that are installed and that do not import
the compiler (transformers: seconds of every BERT process's setup; ``import transformers``
leaves ``torch._dynamo`` unloaded, which ``forked.preloaded_ok`` checks), but
only for a run whose model may need one (``wants_libraries``): for the seed MLP that import
would only delay the server, and so the run's first child.

A forked child behaves like the old one: its own session and process group (``os.setsid``),
killed with its parent (``PR_SET_PDEATHSIG``; its parent is the server, which exits when the
runner dies: ``_release_server``), its own environment (the runner's, with the cache directory
set), stdout and stderr in files, one JSON result file.  ``COMPILELAB_FORKSERVER=0`` turns it off (the child is
then started with ``python -m engine.measure.child``, as before).
"""

from __future__ import annotations

import contextlib
import ctypes
import multiprocessing
import os
import signal
import sys
import time
from typing import Any

from engine.orchestrate.preloads import enabled, preloads, wants_libraries

PR_SET_PDEATHSIG = 1  # linux/prctl.h
PR_SET_NAME = 15
NAME_PREFIX = "cl:"
"""A forked child's process name is ``cl:<variant>`` (15 bytes at most): its command line is
the server's, so this is how ``ps``, ``top`` and the tests tell the measuring children apart."""
_CONTEXT: Any = None
USED = False
"""Whether a measuring child was forked from a server of this process."""
STARTED_EARLY = False
"""Whether ``start_early`` started the server in this process (the CLI's ``run``): then the
spec's device check runs in a fork of it (engine/orchestrate/device_check.py), not in the caller."""


def context(libraries: bool = True) -> Any:
    """The fork-server context, its server preloading ``engine.measure.child`` (started on first use;
    ``libraries`` counts only on that first call)."""
    global _CONTEXT
    if _CONTEXT is None:
        ctx = multiprocessing.get_context("forkserver")
        ctx.set_forkserver_preload(preloads(libraries))
        _CONTEXT = ctx
    return _CONTEXT


def start_early(libraries: bool = True) -> None:
    """Start the preloaded server now, without waiting for it: it imports torch while the
    caller validates the spec and opens the database, so a run's first child forks at once
    instead of waiting seconds for the server (the two imports one after the other:
    docs/measurements/2026-12-03-time-to-answer.md).  The spec's device check then runs in a fork of
    this server (engine/orchestrate/device_check.py), so the caller never imports torch itself.
    Nothing is measured yet, so the two imports may share the cores; the server is the same one
    ``usable`` would start later (same preloads, started from the same process), so the children are
    too.  Any problem here is left to ``usable``, which reports it.
    ``libraries``: preload the model libraries (``wants_libraries`` of the run's model)."""
    global STARTED_EARLY
    if not enabled():
        return
    with contextlib.suppress(Exception):
        from multiprocessing import forkserver

        context(libraries)
        forkserver.ensure_running()
        STARTED_EARLY = True
    from engine.orchestrate import compiler_server, schedule

    if schedule.auto_concurrency()[0] > 1:  # processes side by side: the further ones fork
        compiler_server.start(libraries)  # from the compiler server, ready by then


def start_for_argv(argv: list[str]) -> None:
    """``python -m engine run ...`` (not ``--queue``): ``start_early`` before the CLI imports
    anything heavy (storage, through the spec module: sqlalchemy and alembic, which then overlap
    the server's torch import).  The arguments are only
    glanced at here (the CLI parses them properly later): a misread one at worst starts a server
    that is not used, or preloads the model libraries, which is the default anyway."""
    if not argv or argv[0] != "run" or any(a.startswith("--q") for a in argv):
        return
    model = next((b for a, b in zip(argv, argv[1:], strict=False) if a == "--model"), None)
    model = model or next((a.split("=", 1)[1] for a in argv if a.startswith("--model=")), None)
    start_early(libraries=model is None or wants_libraries(model))


def stop_unused_servers() -> None:
    """End this process's process servers now if no measuring child was forked from them (the
    CLI calls it as it exits).  A server still importing when the command ends (a refused
    argument) would otherwise hold the command's stdout and stderr open until its imports are
    done (seconds), keeping a caller that reads them to the end waiting.  A
    server that measuring children came from is left to end by itself, as it does once the
    command's pipes close (killed, it left multiprocessing's resource tracker warning about
    leaked semaphores of the children's)."""
    if USED:
        return
    from multiprocessing import forkserver

    from engine.orchestrate import compiler_server

    servers = [getattr(forkserver._forkserver, "_forkserver_pid", None),
               getattr(compiler_server._SERVER, "_forkserver_pid", None)]
    for pid in filter(None, servers):
        with contextlib.suppress(OSError):
            os.kill(pid, signal.SIGKILL)


def preloaded_ok() -> bool:
    """In the server (and so in a fresh fork): no compiler, no CUDA context."""
    return _problem_code() == 0


def _problem_code() -> int:
    """0, or why a fork of this server would not start where a user's first compiled call does
    (``PROBLEMS``): the server holds no compiler module (the reported processes import it
    themselves), and CUDA is not initialised (a fork could not use the GPU)."""
    import torch

    if "torch._dynamo" in sys.modules:
        return 3
    if "torch._inductor" in sys.modules:
        return 4
    if torch.cuda.is_initialized() or getattr(torch.cuda, "_is_in_bad_fork", bool)():
        return 5
    return 0


def process_name(variant: str) -> str:
    return (NAME_PREFIX + variant)[:15]


PROBLEMS = {0: "", 3: "torch._dynamo is imported", 4: "torch._inductor is imported",
            5: "CUDA is initialised",
            None: "the probe did not finish in 120 s"}


def _probe() -> None:
    os._exit(_problem_code())


def fork_is_clean() -> bool:
    """Fork one child from the server and check ``preloaded_ok`` there (why not: ``PROBLEM``)."""
    global PROBLEM
    proc = context().Process(target=_probe)
    proc.start()
    proc.join(120)
    PROBLEM = PROBLEMS.get(proc.exitcode, f"the probe exited with {proc.exitcode}")
    return proc.exitcode == 0


PROBLEM = ""


_USABLE: bool | None = None


def usable() -> bool:
    """Enabled, and a fork from this server really starts as ``preloaded_ok`` says (checked
    once per process: a model library that imports dynamo would otherwise take the compiler's
    import out of every reported process).  Otherwise children start cold."""
    global _USABLE
    if _USABLE is None:
        global PROBLEM
        try:
            _USABLE = enabled() and fork_is_clean()
        except Exception as e:  # no fork server here: the old way
            PROBLEM = f"{type(e).__name__}: {e}"
            _USABLE = False
        if enabled() and not _USABLE:
            print(f"compilelab: the preloaded process server is not clean ({PROBLEM}); "
                  "starting each measuring child cold instead", file=sys.stderr)
    return _USABLE


def _reapply_env(env: dict[str, str]) -> None:
    """In a fork: settings inductor read from the environment at its import (in the server,
    without this process's variables) are set again from ``env``; the rest it reads at use."""
    threads = env.get("TORCHINDUCTOR_COMPILE_THREADS")
    if threads and "torch._inductor.config" in sys.modules:
        with contextlib.suppress(Exception):
            sys.modules["torch._inductor.config"].compile_threads = int(threads)


def _default_start_method() -> None:
    """In a fork: multiprocessing's default start method as a fresh interpreter has it (fork on
    Linux up to Python 3.13), not the fork server's, which a Process forked from it inherits.
    Under the server's, tqdm's lock (torch.fx makes one in every compile) was a named semaphore
    registered with the command's resource tracker, which warned of "leaked semaphore objects"
    at the end of every run; and a model's own pools would start otherwise than in a user's
    process."""
    multiprocessing.set_start_method(None, force=True)


def _release_server() -> None:
    """In a fork: close the write end of the server's liveness pipe, which ``multiprocessing``
    hands every process it forks.  The server exits only when no process holds that end, so
    with it a child waiting at a gate outlived a runner killed with SIGKILL, and kept the
    server (and the command's resource tracker) alive with it, forever.  Without it the server
    exits with the runner, and this child, whose parent the server is, gets its
    ``PR_SET_PDEATHSIG``."""
    from multiprocessing import forkserver

    server = getattr(forkserver, "_forkserver", None)
    fd = getattr(server, "_forkserver_alive_fd", None)
    if isinstance(fd, int):
        with contextlib.suppress(OSError):
            os.close(fd)
        server._forkserver_alive_fd = None  # type: ignore[union-attr]


def _child_main(argv: list[str], env: dict[str, str], stdout: str, stderr: str,
                name: str, compiler: bool = False) -> None:
    """Runs in the fork: become a process like the old child, then measure (never returns)."""
    t0 = time.perf_counter()
    server = os.getppid()
    os.setsid()  # own process group: the runner can end it with everything it started
    with contextlib.suppress(OSError, AttributeError):
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
        libc.prctl(PR_SET_NAME, ctypes.c_char_p(name.encode()[:15]), 0, 0, 0)
    _release_server()
    if os.getppid() != server:  # the server (and so the runner) ended before the signal was set
        os._exit(1)
    os.environ.clear()
    os.environ.update(env)
    for fd, path in ((1, stdout), (2, stderr)):
        f = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
        os.dup2(f, fd)
        os.close(f)
    _reapply_env(env)
    _default_start_method()
    from engine.measure import child

    # Setup time counts from this process's start; its imports were done by the server.
    child._T0 = child._T_IMPORTED = t0
    try:
        code = child.main(argv)
    except SystemExit as e:  # sys.exit in model code: the same exit code as a started child
        code = 0 if e.code is None else e.code if isinstance(e.code, int) else 1
    except BaseException:  # anything else: no result file, like before
        import traceback

        traceback.print_exc()
        code = 1
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code if isinstance(code, int) else 1)


class ForkedChild:
    """A forked measuring child with the part of ``subprocess.Popen``'s interface the runner
    uses: ``pid``, ``poll()``, ``wait(timeout)``, ``returncode`` (negative: killed by a signal)."""

    def __init__(self, argv: list[str], env: dict[str, str], stdout: str, stderr: str,
                 variant: str, compiler: bool = False) -> None:
        """``compiler``: fork it from the compiler-preloaded server (engine/orchestrate/compiler_server.py),
        only for a process whose first call nobody reports."""
        global USED
        USED = True
        kwargs = {"target": _child_main, "daemon": False,
                  "args": (argv, env, stdout, stderr, process_name(variant), compiler)}
        if compiler:
            from engine.orchestrate import compiler_server

            self._proc = compiler_server.process(**kwargs)
        else:
            self._proc = context().Process(**kwargs)
        self._proc.start()
        self.pid = self._proc.pid

    @property
    def returncode(self) -> int | None:
        return self._proc.exitcode

    def poll(self) -> int | None:
        return self._proc.exitcode

    def wait(self, timeout: float | None = None) -> int:
        import subprocess

        self._proc.join(timeout)
        if self._proc.exitcode is None:
            raise subprocess.TimeoutExpired("engine.measure.child (forked)", timeout or 0)
        return self._proc.exitcode
