"""Which measuring process may do what next: the runner's scheduling policy, pure logic.

A run is a plan of measuring processes ("jobs": eager, each compiled variant's cold process,
then its warm-cache processes, in the order their timing should interleave).  Each job goes
through ``pending -> preparing -> compile_wait -> compiling -> time_wait -> timing -> done``
(eager skips the two compile states); the runner moves it along from what the child reports at
its gates (``engine.gates``) and asks ``decide`` what to allow next.  The rules keep the
measurements as clean as one-at-a-time and the waits short:

1. **Timing is alone.**  While a job times, nothing else starts, prepares or compiles (the
   others sit at a gate, using no CPU), so no timing window overlaps another process's work.
2. **Timing waits for quiet.**  A job may start timing only when no other job is preparing or
   compiling; jobs time in plan order, so eager, A, B, eager, A, B, ... interleave as before.
3. **Preparing overlaps.**  Up to ``concurrency`` jobs are alive at once: they start together
   and prepare side by side.  New jobs start only when no job is waiting to time (the plan is
   worked through in batches), so a batch's timing is not held up by the next batch's start-up.
4. **Compiles overlap up to ``compile_slots``** (their first-call times are checked against
   compiles run alone, issue "time to answer"), with two exceptions.  A warm-cache compile
   waits until its variant's cold compile has filled the cache.  A max-autotune compile times
   kernels on the GPU, so it runs only when no other job is preparing or compiling, and nothing
   starts or compiles beside it.

With ``concurrency=1`` this is exactly the old serial run: one process at a time.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import Any

STATES = ("pending", "preparing", "compile_wait", "compiling", "time_wait", "timing", "done")
BUSY = ("preparing", "compiling")  # heavy CPU or GPU work, not timing
ALIVE = ("preparing", "compile_wait", "compiling", "time_wait", "timing")


@dataclass
class Job:
    variant: str
    index: int  # 0: cold process (or eager's only one); 1, 2, ...: warm-cache processes
    state: str = "pending"
    handle: Any = field(default=None, repr=False)  # the runner's process handle

    @property
    def kind(self) -> str:
        return "eager" if self.variant == "eager" else "cold" if self.index == 0 else "warm"

    @property
    def compiles(self) -> bool:
        return self.variant != "eager"

    @property
    def autotunes(self) -> bool:
        return "max-autotune" in self.variant


def host_cpus() -> int:
    if hasattr(os, "sched_getaffinity"):
        return len(os.sched_getaffinity(0))
    return os.cpu_count() or 1


def auto_concurrency(cpus: int | None = None) -> tuple[int, int]:
    """(processes alive at once, compiles at once) for a host with ``cpus`` cores.  On a small
    host everything runs one at a time: a second process preparing would take the cores that
    the compile beside it needs (its first-call time must match a compile run alone).  From 8
    cores on, one job per 4 cores (at most 4) and half as many compiles (each compile starts
    its own pool of compile workers)."""
    cpus = cpus or host_cpus()
    if cpus < 8:
        return 1, 1
    alive = min(4, cpus // 4)
    return alive, max(1, alive // 2)


def resolve(spec_concurrency: int, cpus: int | None = None, spec_compile_slots: int = 0
            ) -> tuple[int, int]:
    """The spec's ``concurrency`` and ``compile_slots`` as (alive, compile slots): concurrency
    0 = chosen from the host's cores (``auto_concurrency``), N = N processes alive and, unless
    ``compile_slots`` says otherwise, N compiles at once; compile slots never exceed alive."""
    if spec_concurrency and int(spec_concurrency) > 0:
        alive, slots = int(spec_concurrency), int(spec_concurrency)
    else:
        alive, slots = auto_concurrency(cpus)
    if spec_compile_slots and int(spec_compile_slots) > 0:
        slots = min(int(spec_compile_slots), alive)
    return alive, slots


def decide(jobs: list[Job], *, concurrency: int, compile_slots: int
           ) -> list[tuple[str, Job]]:
    """What to allow now: a list of ``("start" | "compile" | "time", job)``, in plan order.
    ``jobs`` is the plan (pending jobs included) in its order."""
    alive = [j for j in jobs if j.state in ALIVE]
    if any(j.state == "timing" for j in alive):
        return []  # rule 1
    if any(j.state == "compiling" and j.autotunes for j in alive):
        return []  # rule 4: nothing beside a max-autotune compile
    actions: list[tuple[str, Job]] = []
    busy = sum(j.state in BUSY for j in alive)
    compiling = sum(j.state == "compiling" for j in alive)

    cold_compiled = {j.variant for j in jobs
                     if j.index == 0 and j.state in ("time_wait", "timing", "done")}
    for j in alive:  # rule 4
        if j.state != "compile_wait":
            continue
        if j.index > 0 and j.variant not in cold_compiled:
            continue
        if j.autotunes:
            if busy == 0 and not actions:
                return [("compile", j)]
            continue
        if compiling < compile_slots:
            actions.append(("compile", j))
            compiling += 1
            busy += 1
    if actions:
        return actions

    if busy == 0:  # rule 2
        waiting = [j for j in alive if j.state == "time_wait"]
        if waiting:
            return [("time", waiting[0])]

    if not any(j.state == "time_wait" for j in alive):  # rule 3
        room = concurrency - len(alive)
        for j in jobs:
            if room <= 0:
                break
            if j.state == "pending":
                actions.append(("start", j))
                room -= 1
    return actions
