"""How busy the rest of the host was while we timed, and quieting what we started ourselves.

Small models are launch-bound: their per-call time is mostly host (CPU) work, so anything else
running on the CPU shows up directly in the figures. Inductor's compile-worker pool (started by
the first compile: ``compile_threads`` processes, one per core, each importing torch) can still
be starting while the first steady-state rounds run, and then eager and compiled calls both read
slow until it has (docs/measurements/2026-12-02-h200-acceptance.md). So the child shuts that pool
down before timing (a serving process reaches the same quiet state once its pool is up and idle) and
records how many cores *other* processes kept busy during each timed stretch, so a busy host is
visible in the results instead of silently inflating them.
"""

from __future__ import annotations

import contextlib
import os
import time
from typing import Any

# Cores that other processes kept busy while a variant was timed, from which `show` and the
# dashboard's verdict flag its figures (small models are launch-bound: a CPU neighbour slows them).
BUSY_HOST_CORES = 0.5

try:
    CLOCK_TICKS = float(os.sysconf("SC_CLK_TCK"))
except (AttributeError, ValueError, OSError):
    CLOCK_TICKS = 100.0


def _busy_seconds() -> float | None:
    """CPU-seconds all cores have spent not idle since boot, from /proc/stat (Linux only)."""
    try:
        with open("/proc/stat") as f:
            fields = [float(x) for x in f.readline().split()[1:]]
    except (OSError, ValueError):
        return None
    # user nice system idle iowait irq softirq steal [guest guest_nice]: guest time is already
    # counted in user, so only the first eight fields are summed.
    total = sum(fields[:8])
    idle = fields[3] + (fields[4] if len(fields) > 4 else 0.0)
    return (total - idle) / CLOCK_TICKS


def _own_seconds() -> float:
    t = os.times()
    return t.user + t.system


class HostLoad:
    """Context manager: on exit, ``other_busy_cores`` is the average number of cores that other
    processes kept busy while the block ran (None where /proc/stat is not available)."""

    def __init__(self) -> None:
        self.other_busy_cores: float | None = None

    def __enter__(self) -> HostLoad:
        self._wall, self._busy, self._own = time.perf_counter(), _busy_seconds(), _own_seconds()
        return self

    def __exit__(self, *exc: object) -> None:
        busy = _busy_seconds()
        wall = time.perf_counter() - self._wall
        if busy is None or self._busy is None or wall <= 0:
            return
        other = (busy - self._busy) - (_own_seconds() - self._own)
        # /proc/stat ticks at 100 Hz: over short blocks the estimate is coarse, never negative
        self.other_busy_cores = round(max(other, 0.0) / wall, 2)


def stat_fields(pid: int | str) -> list[str]:
    """``/proc/PID/stat`` after the command name: state, ppid, ... (the name may hold spaces,
    so split after its ')').  Raises OSError or IndexError where there is no such process."""
    with open(f"/proc/{pid}/stat") as f:
        return f.read().rsplit(")", 1)[1].split()


def _children(pid: int) -> list[int]:
    """Processes whose parent is ``pid`` (Linux /proc; empty elsewhere)."""
    out = []
    try:
        entries = os.listdir("/proc")
    except OSError:
        return out
    for entry in entries:
        if not entry.isdigit():
            continue
        try:
            if int(stat_fields(entry)[1]) == pid:
                out.append(int(entry))
        except (OSError, ValueError, IndexError):
            continue
    return out


GONE_WAIT_S = 5.0


def _gone(pid: int) -> bool:
    """Exited: no such process, or a zombie (its memory and files are released)."""
    try:
        return stat_fields(pid)[0] in ("Z", "X")
    except (OSError, IndexError):
        return True


def _wait_gone(pids: list[int], limit_s: float = GONE_WAIT_S) -> None:
    """Until every killed worker has exited (or ``limit_s``).  A SIGKILLed worker still tears
    its address space down (a torch import's worth of memory) after the signal, and the runner
    starts the next reported compile as soon as this process says it compiled: that compile
    should find the host quiet.  (Suspected, not shown, that a compile right after another
    variant's reads high because of it: docs/measurements/2026-12-04-time-to-answer.md.)"""
    deadline = time.monotonic() + limit_s
    while time.monotonic() < deadline and not all(_gone(p) for p in pids):
        time.sleep(0.005)


def stop_compile_workers() -> dict[str, Any]:
    """End inductor's compile-worker pool at once, if this process started one, and compile
    in-process from here on.

    The pool is a helper process (a fresh interpreter importing torch) with one worker per core;
    it starts in the background of the first compile, as in a user's process.  Its start-up is
    heavy CPU work (slower still when several processes compile at once) that spills over into
    other processes' compiles and timing, and a graceful ``shutdown`` (the helper's own
    interpreter teardown) costs most of a second inside each timing slot
    (docs/measurements/2026-12-04-time-to-answer.md).  So the child
    ends it right after its first call: SIGKILL for the workers and the helper (nothing of
    theirs is needed: the compiled code is loaded in this process, and the cache is on disk),
    the pool marked closed first so that its reader thread ends quietly, and
    ``compile_threads = 1`` so that a later recompile compiles here instead of starting a new
    pool beside the timing.  Falls back to ``shutdown`` where the private pieces moved."""
    t0 = time.perf_counter()
    try:
        import signal as _signal

        from torch._inductor import async_compile as ac
        from torch._inductor import config as inductor_config

        pools = list(ac._pool_set)
        killed = 0
        for pool in pools:
            proc = getattr(pool, "process", None)
            lock = getattr(pool, "write_lock", None)
            if proc is None or lock is None or not hasattr(pool, "running"):
                pool.shutdown()  # a ProcessPoolExecutor or a changed SubprocPool: gracefully
                continue
            with lock:
                pool.running = False  # the reader thread then ends without a warning
            victims = [*_children(proc.pid), proc.pid]
            for pid in victims:
                with contextlib.suppress(ProcessLookupError, PermissionError):
                    os.kill(pid, _signal.SIGKILL)
                    killed += 1
            proc.wait(timeout=10)
            _wait_gone(victims)
        ac._pool_set.clear()
        ac.AsyncCompile._ready_future = None
        ac.AsyncCompile.process_pool.cache_clear()
        inductor_config.compile_threads = 1
    except Exception as e:  # moved or failed: the graceful way, and say so
        out = settle_compile_workers()
        out["stop_error"] = f"{type(e).__name__}: {e}"[:200]
        return out
    return {"pools": len(pools), "killed": killed,
            "stop_s": round(time.perf_counter() - t0, 3)}


def settle_compile_workers() -> dict[str, Any]:
    """Shut down inductor's compile-worker pool, if this process started one, and say how long
    that took (the pool can only stop once its workers have finished starting). A later
    recompile starts a new pool by itself. Guarded: the function lives in a private module."""
    t0 = time.perf_counter()
    try:
        from torch._inductor.async_compile import shutdown_compile_workers

        shutdown_compile_workers()
    except Exception as e:  # moved or failed: measure anyway, and say so
        return {"settled": False, "error": f"{type(e).__name__}: {e}"[:200]}
    return {"settled": True, "settle_s": round(time.perf_counter() - t0, 3)}
