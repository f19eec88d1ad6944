"""How busy the rest of the host was while we timed, and quieting what we started ourselves.

Small models are launch-bound: their per-call time is mostly host (CPU) work, so anything else
running on the CPU shows up directly in the figures. On the H200 host, inductor's compile-worker
pool (started by the first compile: ``compile_threads`` processes, one per core, each importing
torch) was still starting while the first steady-state rounds ran, and eager and compiled calls
both read 1.8x slower until it had. So the child shuts that pool down before timing (a serving
process reaches the same quiet state once its pool is up and idle) and records how many cores
*other* processes kept busy during each timed stretch, so a busy host is visible in the results
instead of silently inflating them.
"""

from __future__ import annotations

import os
import time
from typing import Any

# Cores that other processes kept busy while a variant was timed, from which `show` and the
# dashboard's verdict flag its figures (small models are launch-bound: a CPU neighbour slows them).
BUSY_HOST_CORES = 0.5

try:
    _TICK = float(os.sysconf("SC_CLK_TCK"))
except (AttributeError, ValueError, OSError):
    _TICK = 100.0


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
    return (total - idle) / _TICK


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


def await_compile_workers(timeout_s: float = 120.0) -> dict[str, Any]:
    """Wait until inductor's compile-worker pool, if this process started one, has finished
    starting, and leave it idle.  Its start-up (a helper process importing torch, then one
    worker per core) is heavy CPU work that must not run beside another process's timing or
    compile; an idle pool uses none (its processes block on a pipe), as in a serving process
    whose pool is up.  The child calls this right after its compile, while the runner still
    counts it as busy ("settling"), so nothing is timed beside a starting pool and nothing has
    to be shut down later inside a timing slot (0.9 s of each such process on the H200 host).
    The pool dies with the process group when the child ends.  Guarded: private module."""
    t0 = time.perf_counter()
    try:
        from torch._inductor import async_compile as ac

        if ac.AsyncCompile._ready_future is None and not ac._pool_set:
            return {"pool": False, "wait_s": 0.0}
        ac.AsyncCompile.wait_pool_ready(timeout=timeout_s)
    except Exception as e:  # moved, failed or timed out: fall back to shutting it down
        out = settle_compile_workers()
        out["wait_error"] = f"{type(e).__name__}: {e}"[:200]
        return out
    return {"pool": True, "wait_s": round(time.perf_counter() - t0, 3)}


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
