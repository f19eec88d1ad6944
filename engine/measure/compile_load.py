"""How busy the rest of the host was during a reported compile.

A compile time is only as good as the host it ran on. The schedule (engine/orchestrate/schedule.py) runs a
reported compile (the cold one, the first warm-cache one) with nothing else of the run preparing,
compiling or timing, but it cannot keep other tenants off the host, and a run whose every compile
phase read far above the hand-written harness's, while other runs on the same host did not, once
said nothing about why (docs/measurements/2026-12-05-time-to-answer-h200.md).  ``CompileLoad``
says, per compile:

* ``other_busy_cores``: the cores kept busy by processes *outside this process's tree* while it
  compiled (from /proc/stat, less the CPU time of this process and all its descendants: a
  compile's own workers, the C++ compiler it runs and inductor's compile-worker pool are its
  work, not a neighbour's);
* ``steal_share``: the share of the host's CPU time a hypervisor gave to other machines (the
  ``steal`` column of /proc/stat) while it compiled.

Unlike ``engine.measure.hostload.HostLoad`` (timing windows, where only this process runs), the tree is
walked, because a compile's work happens in child processes that are still alive at its end.
Linux only; elsewhere, or when /proc cannot be read, the figures are None.
"""

from __future__ import annotations

import math
import os
import time
from typing import Any

from engine.measure.hostload import CLOCK_TICKS, stat_fields

# A reported compile beside more than this much other work is flagged (engine/analysis/verdict.py):
# a compile is mostly one thread plus a burst of workers, so a whole core of a neighbour is where it
# starts to show (docs/measurements/2026-12-05-time-to-answer-cpu.md).
COMPILE_BUSY_CORES = 1.0
# Steal time: a share of the host's CPU time given to other virtual machines.
STEAL_SHARE = 0.05

def host_cpu_seconds() -> tuple[float, float, int] | None:
    """(busy, steal, number of CPUs): CPU-seconds all cores spent not idle, and stolen, since
    boot, from /proc/stat; None where it cannot be read."""
    try:
        with open("/proc/stat") as f:
            lines = f.read().splitlines()
        fields = [float(x) for x in lines[0].split()[1:]]
    except (OSError, ValueError, IndexError):
        return None
    n_cpu = sum(1 for line in lines[1:] if line.startswith("cpu"))
    if len(fields) < 4 or n_cpu == 0:
        return None
    # user nice system idle iowait irq softirq steal [guest guest_nice]: guest time is already
    # in user. Steal is not busy time of this host's processes: counted apart.
    idle = fields[3] + (fields[4] if len(fields) > 4 else 0.0)
    steal = fields[7] if len(fields) > 7 else 0.0
    return (sum(fields[:7]) - idle) / CLOCK_TICKS, steal / CLOCK_TICKS, n_cpu


def tree_cpu_seconds(pid: int) -> float | None:
    """CPU-seconds of ``pid`` and every live descendant, each with the time of its reaped
    children (utime + stime + cutime + cstime), from one pass over /proc; None where /proc
    cannot be read.  A descendant that exits and is reaped inside the tree moves into its
    parent's cutime, so the sum over a block stays whole."""
    try:
        entries = [e for e in os.listdir("/proc") if e.isdigit()]
    except OSError:
        return None
    parent: dict[int, int] = {}
    cpu: dict[int, float] = {}
    for entry in entries:
        try:
            rest = stat_fields(entry)
            parent[int(entry)] = int(rest[1])
            cpu[int(entry)] = sum(float(x) for x in rest[11:15]) / CLOCK_TICKS
        except (OSError, ValueError, IndexError):
            continue  # gone between listing and reading
    if pid not in cpu:
        return None
    children: dict[int, list[int]] = {}
    for child, ppid in parent.items():
        children.setdefault(ppid, []).append(child)
    total, todo, seen = 0.0, [pid], set()
    while todo:
        p = todo.pop()
        if p in seen:
            continue
        seen.add(p)
        total += cpu.get(p, 0.0)
        todo += children.get(p, [])
    return total


class CompileLoad:
    """Context manager around one compile: on exit ``figures`` holds ``other_busy_cores`` and
    ``steal_share`` over the block (each rounded; None where /proc cannot be read)."""

    def __init__(self) -> None:
        self.figures: dict[str, Any] = {"other_busy_cores": None, "steal_share": None}

    def __enter__(self) -> CompileLoad:
        self._host, self._tree = host_cpu_seconds(), tree_cpu_seconds(os.getpid())
        self._wall = time.perf_counter()
        return self

    def __exit__(self, *exc: object) -> None:
        wall = time.perf_counter() - self._wall
        host, tree = host_cpu_seconds(), tree_cpu_seconds(os.getpid())
        if host is None or self._host is None or wall <= 0:
            return
        busy, steal = host[0] - self._host[0], host[1] - self._host[1]
        if tree is not None and self._tree is not None:
            # /proc ticks at 100 Hz: over short blocks coarse, so never below zero
            self.figures["other_busy_cores"] = round(max(busy - (tree - self._tree), 0.0) / wall, 2)
        self.figures["steal_share"] = round(max(steal, 0.0) / (wall * host[2]), 3)


def caution(figures: Any) -> str | None:
    """What a compile's host figures say, when they flag it: ``other work kept 2.1 CPU cores
    busy`` / ``a hypervisor took 8 % of the host's CPU time``; None when neither does, or the
    figures are missing or malformed (they come from stored rows: hostile)."""
    if not isinstance(figures, dict):
        return None
    busy, steal = as_figure(figures.get("other_busy_cores")), as_share(figures.get("steal_share"))
    parts = []
    if busy is not None and busy >= COMPILE_BUSY_CORES:
        parts.append(f"other work kept {busy:.1f} CPU cores busy")
    if steal is not None and steal >= STEAL_SHARE:
        parts.append(f"a hypervisor took {steal:.0%} of the host's CPU time")
    return " and ".join(parts) or None


# No host has more cores: a stored figure above it was not measured (a hand-written row).
MAX_CORES = 65536


def as_figure(value: Any) -> float | None:
    """A number in [0, MAX_CORES], else None (a bool is not a number here): the figures come
    from stored rows and bundles."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return float(value) if math.isfinite(value) and 0 <= value <= MAX_CORES else None


def as_share(value: Any) -> float | None:
    """A share in [0, 1] (``steal_share``), else None."""
    share = as_figure(value)
    return share if share is not None and share <= 1 else None
