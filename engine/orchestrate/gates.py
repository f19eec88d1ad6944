"""Gates: how the runner lets measuring processes prepare side by side while each one times alone.

A measuring child's life has three parts: *preparing* (process start, imports, model build,
device initialisation), *compiling* (its first compiled call) and *timing* (warm-up curve,
steady-state rounds, memory, profiler and graph-break passes).  Preparing and compiling measure
nothing that another process can spoil much (the compile time is checked against compiles run
alone: issue "time to answer"), so several processes may do them at once; timing must have the
machine to itself.  So the child stops at two gates and waits, using no CPU, until the runner
(``engine.orchestrate.schedule``) opens them:

* ``compile``: before the first compiled call (eager has no such gate);
* ``time``: before anything timed.

Between them the child also *marks* ``compiled`` (``mark``: a file, no wait) when its first
compiled call has returned: from then on it only waits for its compile-worker pool to finish
starting (``engine.measure.hostload.await_compile_workers``), which the runner counts as busy work but
not as a compile, so the compile slot is free for the next one.

Mechanism (Linux): for each gate the runner makes a FIFO ``<name>.go`` in the child's gate
folder before starting it and tells the child the folder in ``COMPILELAB_GATES``.  The child
opens the FIFO read-write (which never blocks, and makes it a reader), writes ``<name>.ready``
and blocks in ``read``; the runner opens the gate by writing one byte.  A child started without
``COMPILELAB_GATES`` (``python -m engine.measure.child`` by hand, or a platform without FIFOs) passes
every gate at once.
"""

from __future__ import annotations

import errno
import os
import time
from pathlib import Path

ENV = "COMPILELAB_GATES"
NAMES = ("compile", "time")


def enabled() -> bool:
    """Whether this process was started behind gates."""
    return bool(os.environ.get(ENV))


def wait(name: str) -> float:
    """Child side: say that this process has reached gate ``name`` and block until the runner
    opens it.  Returns the seconds waited (0 when not started behind gates)."""
    folder = os.environ.get(ENV)
    if not folder:
        return 0.0
    t0 = time.perf_counter()
    # O_RDWR on a FIFO never blocks (Linux) and makes this process a reader, so the runner's
    # non-blocking open for writing succeeds once we have announced ourselves.
    fd = os.open(os.path.join(folder, f"{name}.go"), os.O_RDWR)
    try:
        ready = os.path.join(folder, f"{name}.ready")
        with open(ready + ".tmp", "w") as f:
            f.write(str(os.getpid()))
        os.replace(ready + ".tmp", ready)
        while not os.read(fd, 1):  # blocks; EINTR is retried by Python (PEP 475)
            pass
    finally:
        os.close(fd)
    return time.perf_counter() - t0


def mark(name: str) -> None:
    """Child side: say that this process has reached milestone ``name``, without waiting."""
    folder = os.environ.get(ENV)
    if not folder:
        return
    ready = os.path.join(folder, f"{name}.ready")
    with open(ready + ".tmp", "w") as f:
        f.write(str(os.getpid()))
    os.replace(ready + ".tmp", ready)


class Gates:
    """Runner side: the gate folder of one child process."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        folder.mkdir(parents=True, exist_ok=True)
        for name in NAMES:
            os.mkfifo(folder / f"{name}.go")
        self.opened: set[str] = set()

    def env(self) -> dict[str, str]:
        return {ENV: str(self.folder)}

    def arrived(self, name: str) -> bool:
        """Has the child reached gate ``name`` (and is it waiting there, unless opened)?"""
        return (self.folder / f"{name}.ready").exists()

    def waiting(self, name: str) -> bool:
        return self.arrived(name) and name not in self.opened

    def open(self, name: str) -> bool:
        """Let the child through gate ``name``; False when it is not waiting there yet."""
        if name in self.opened:
            return True
        if not self.arrived(name):
            return False
        try:
            fd = os.open(self.folder / f"{name}.go", os.O_WRONLY | os.O_NONBLOCK)
        except OSError as e:
            if e.errno == errno.ENXIO:  # announced but not reading yet: next tick
                return False
            raise
        try:
            os.write(fd, b"1")
        finally:
            os.close(fd)
        self.opened.add(name)
        return True


def supported() -> bool:
    return hasattr(os, "mkfifo") and os.name == "posix"
