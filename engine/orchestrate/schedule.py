"""Which measuring process may do what next: the runner's scheduling policy, pure logic.

A run is a plan of measuring processes ("jobs": eager, each compiled variant's cold process,
then its warm-cache processes, in the order their timing should interleave).  Each job goes
through ``pending -> preparing -> compile_wait -> compiling -> settling -> time_wait -> timing
-> done`` (eager skips the three compile states; settling: the first call has returned and the
compile-worker pool it started is still starting, busy work that holds no compile slot); the runner moves it along from what the child reports at
its gates (``engine.orchestrate.gates``) and asks ``decide`` what to allow next.  The rules keep the
measurements as clean as one-at-a-time and the waits short:

1. **Timing is alone.**  While a job times, nothing else starts, prepares or compiles (the
   others sit at a gate, using no CPU), so no timing window overlaps another process's work.
2. **Timing waits for quiet.**  A job may start timing only when no other job is preparing,
   compiling or settling; jobs time in plan order, so eager, A, B, eager, A, B, ... interleave as before.
3. **Preparing overlaps.**  Up to ``concurrency`` jobs are alive at once: they start together
   and prepare side by side.  New jobs start only when no job is waiting to time (the plan is
   worked through in batches), so a batch's timing is not held up by the next batch's start-up.
4. **Reported compiles overlap up to ``compile_slots``** (their first-call times are the cold
   and warm compile times the product reports, checked against compiles run alone, issue
   "time to answer"), **never beside a preparing process**, and no process starts beside
   them (a cold compile beside processes importing the compiler reads half as long again as
   alone: docs/measurements/2026-12-04-time-to-answer.md).  The first warm-cache compiles
   (index 1) are reported too and take the same slots, once no cold compile waits.  They once
   ran together beyond the slots, but side by side they read well above the same compiles alone
   (``acceptance/warm_together_probe.py``; docs/measurements/2026-12-05-time-to-answer-h200.md).
   A warm-cache compile waits until its variant's cold compile has filled the
   cache.  A max-autotune cold compile times kernels on the GPU, so it runs only when no other
   job is preparing, compiling or settling, and nothing starts or compiles beside it (its
   warm-cache processes find the timings in the cache).
5. **Unreported compiles overlap freely, but never beside a reported one.**  Processes from
   index 2 on (``Job.reported`` is false) are further measuring processes: their first call is
   a warm-cache compile nobody reports, in a process without a compile-worker pool
   (engine/orchestrate/process.py), so any number of them may compile at once; a reported compile waits
   until they are done and they wait for it, so its time is what a compile alone takes.
6. **Speculative jobs time only once confirmed.**  A ``speculative`` job is a further process
   started early, before its variant's interval says whether it is needed (the runner confirms
   or drops it); it prepares and compiles with the rest, but it does not time until confirmed.

7. **Eager times as soon as it may**, before any compile waiting beside it: the run then
   has its baseline even when a compile hangs or crashes (with processes side by side, eager
   had waited for a hanging compile's timeout).  Both are alone, so the order costs nothing.

With ``concurrency=1`` this is exactly the old serial run: one process at a time.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import Any

STATES = ("pending", "preparing", "compile_wait", "compiling", "settling", "time_wait", "timing",
          "done")
# heavy CPU or GPU work, not timing; "settling": compiled, its compile-worker pool still starting
BUSY = ("preparing", "compiling", "settling")
ALIVE = ("preparing", "compile_wait", "compiling", "settling", "time_wait", "timing")


@dataclass
class Job:
    variant: str
    index: int  # 0: cold process (or eager's only one); 1, 2, ...: warm-cache processes
    state: str = "pending"
    handle: Any = field(default=None, repr=False)  # the runner's process handle
    speculative: bool = False  # started before its variant's interval asked for it (rule 6)

    @property
    def kind(self) -> str:
        return "eager" if self.variant == "eager" else "cold" if self.index == 0 else "warm"

    @property
    def compiles(self) -> bool:
        return self.variant != "eager"

    @property
    def reported(self) -> bool:
        """Is this process's first call a compile time the product reports (the cold one,
        index 0, or the first warm-cache one, index 1)?"""
        return self.compiles and self.index <= 1

    @property
    def autotunes(self) -> bool:
        """Does its compile time kernels on the GPU?  Only a max-autotune variant's cold
        compile: a warm-cache process finds the kernel choices (and the chosen kernels) in the
        cache its cold compile filled, and compiles like any other (its first call reads like
        default's: docs/measurements/2026-12-04-time-to-answer.md)."""
        return "max-autotune" in self.variant and self.index == 0


def host_cpus() -> int:
    if hasattr(os, "sched_getaffinity"):
        return len(os.sched_getaffinity(0))
    return os.cpu_count() or 1


MAX_ALIVE = 16
"""Most measuring processes alive at once on a large host (each holds its own model copy and
CUDA context while it waits at a gate)."""

SMALL_HOST_ALIVE = 5
"""Measuring processes alive at once on a host of 2-7 cores: a default run's eager process and
a compiled variant's four (cold, first warm-cache, two further ones) in one batch."""


def auto_concurrency(cpus: int | None = None) -> tuple[int, int]:
    """(processes alive at once, reported compiles at once) for a host with ``cpus`` cores.  On
    one core everything runs one at a time.  On 2-7 cores ``SMALL_HOST_ALIVE``: the processes
    prepare side by side (their compiler imports share the cores), but the rules keep a
    reported compile and a timing window alone, so sharing costs no figure and the run is
    shorter than one at a time.  From 8 cores on, one process per core (at most
    ``MAX_ALIVE``): a typical run starts all its processes in one batch, so their imports
    overlap once instead of once per batch.  One reported compile at a time everywhere: two at
    once (each starting its own pool of compile workers) read slow, and those first calls are
    what the product reports.  The figures: docs/measurements/2026-12-04-time-to-answer.md."""
    cpus = cpus or host_cpus()
    if cpus < 2:
        return 1, 1
    if cpus < 8:
        return SMALL_HOST_ALIVE, 1
    return min(MAX_ALIVE, cpus), 1


EXPLAIN_AHEAD_MIN_CPUS = 8
"""Hosts from this many cores on trace the graph breaks in a further process (``explains_ahead``)."""


def explains_ahead(job: Job, plan: list[Job], cpus: int | None = None) -> bool:
    """Does ``job`` trace the run's graph breaks before its own first call
    (engine/slot_tail.explain_ahead) instead of a cold process doing it in its timing slot?
    The plan's first further process (from index 2, not speculative: its first call is a
    compile nobody reports, and it is not dropped unasked), on a host of
    ``EXPLAIN_AHEAD_MIN_CPUS`` cores or more, where the trace runs on a core of its own beside
    the other further processes' compiles: it costs that phase less than it cost a timing
    slot.  The runner asks only where processes run side by side; a training step's trace stays
    in the tail (the child traces ahead for inference only: a trace runs the model, which would
    move a training run's state).  Not on smaller hosts: there a fresh fork first pays imports
    that the cold process has made by its slot, and the further compiles beside it end later.
    The figures: docs/measurements/2026-12-04-time-to-answer.md."""
    if (job.reported or not job.compiles or job.speculative
            or (cpus or host_cpus()) < EXPLAIN_AHEAD_MIN_CPUS):
        return False
    return next((j for j in plan if j.compiles and not j.reported and not j.speculative),
                None) is job


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


@dataclass
class _Load:
    """What the live processes are doing, counted for the compile rules (4 and 5)."""

    busy: int
    reported: int
    unreported: int
    preparing: bool
    cold_compiled: set[str]
    cold_waiting: bool


def _load(jobs: list[Job], alive: list[Job], server_importing: bool) -> _Load:
    return _Load(
        busy=sum(j.state in BUSY for j in alive) + server_importing,
        reported=sum(j.state == "compiling" and j.reported for j in alive),
        unreported=sum(j.state == "compiling" and not j.reported for j in alive),
        preparing=server_importing or any(j.state == "preparing" for j in alive),
        cold_compiled={j.variant for j in jobs if j.index == 0
                       and j.state in ("settling", "time_wait", "timing", "done")},
        cold_waiting=any(j.state == "compile_wait" and j.compiles and j.index == 0
                         for j in alive))


def _compiles(alive: list[Job], load: _Load, compile_slots: int) -> list[tuple[str, Job]]:
    """Rules 4 and 5: which waiting compiles may go now (``load`` counts them as they do)."""
    actions: list[tuple[str, Job]] = []
    held = False
    for j in alive:
        if j.state != "compile_wait" or (j.index > 0 and j.variant not in load.cold_compiled):
            continue
        if j.autotunes:
            if load.busy == 0 and not actions:
                return [("compile", j)]
            continue
        if j.reported:
            # within the slots; the first warm-cache ones after every cold one (rule 4)
            free = load.reported < compile_slots and not (j.index == 1 and load.cold_waiting)
            if free and not load.unreported and not load.preparing:
                actions.append(("compile", j))
                load.reported += 1
                load.busy += 1
            else:
                held = True  # no new unreported compile overtakes it
        elif not load.reported and not held:
            actions.append(("compile", j))
            load.unreported += 1
            load.busy += 1
    return actions


def _starts(jobs: list[Job], alive: list[Job], concurrency: int) -> list[tuple[str, Job]]:
    """Rule 3: pending processes start while there is room and nobody waits to time."""
    if any(j.state == "time_wait" for j in alive):
        return []
    room = concurrency - len(alive)
    pending = [j for j in jobs if j.state == "pending"]
    return [("start", j) for j in pending[:max(room, 0)]]


def decide(jobs: list[Job], *, concurrency: int, compile_slots: int,
           server_importing: bool = False) -> list[tuple[str, Job]]:
    """What to allow now: a list of ``("start" | "compile" | "time", job)``, in plan order.
    ``jobs`` is the plan (pending jobs included) in its order.  ``server_importing``: the
    compiler server (engine/orchestrate/compiler_server.py) is still importing torch and the
    compiler, heavy CPU work that counts as one more preparing process (rules 2 and 4)."""
    alive = [j for j in jobs if j.state in ALIVE]
    if any(j.state == "timing" for j in alive):
        return []  # rule 1
    if any(j.state == "compiling" and j.autotunes for j in alive):
        return []  # rule 4: nothing beside a max-autotune compile
    load = _load(jobs, alive, server_importing)
    if load.busy == 0:  # rule 7: eager's baseline first
        eager = next((j for j in alive if j.variant == "eager" and j.state == "time_wait"
                      and not j.speculative), None)
        if eager is not None:
            return [("time", eager)]
    actions = _compiles(alive, load, compile_slots)
    if actions:
        return actions
    if load.busy == 0:  # rules 2 and 6
        waiting = [j for j in alive if j.state == "time_wait" and not j.speculative]
        if waiting:
            return [("time", waiting[0])]
    if load.reported:
        return []  # rule 4: nothing starts beside a reported compile
    return _starts(jobs, alive, concurrency)
