"""How long a run has left, for the CLI's progress line and the dashboard's progress bar.

A run is a plan of measuring processes (``engine.schedule.Job``: eager, each compiled variant's
cold process, its warm-cache processes), each going through three stages that cost wall time
differently under the schedule's rules:

* **prepare** (process start, imports, model build): side by side, so a batch of processes
  costs about one preparation, not one each;
* **compile** (the first compiled call): cold compiles take turns in ``compile_slots`` at a
  time, a max-autotune cold compile runs alone, the first warm-cache compiles run together,
  then further processes' compiles together;
* **time** (warm-up, steady state, profiler): one process at a time, so these add up.

The estimate is the sum of what is left of each: the longest preparation still running (plus
one preparation per batch still to start), the compiles still to come (reported ones divided
over the slots, max-autotune's cold one alone, first warm-cache ones together, further ones
together), and the timing of every
process not done.  Each stage's duration comes from this run's processes that have been
through it, by kind (eager, cold, warm = the first warm-cache process, extra = the further
ones); before one has, from the others (a warm compile is guessed at a third of a cold one, a
cold compile at one preparation, timing from the spec's minimum timing time).  Before any
process has been through a stage there is no estimate.  With one process at a time this is the
sum over processes of prepare + compile + time, as before.  The runner calls ``sync`` with its
plan on every tick; the states' changes are the observations.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Iterable
from typing import Any

KINDS = ("eager", "cold", "warm", "extra")
STAGE_OF = {"preparing": "prepare", "compile_wait": None, "compiling": "compile",
            "settling": "compile", "time_wait": None, "timing": "time"}
ENDED = ("done", "dropped")


def kind_of(job: Any) -> str:
    if job.variant == "eager":
        return "eager"
    return "cold" if job.index == 0 else "warm" if job.index == 1 else "extra"


class Eta:
    def __init__(self, *, concurrency: int = 1, compile_slots: int = 1,
                 min_time_s: float = 0.5, clock: Callable[[], float] = time.monotonic) -> None:
        self.concurrency = max(int(concurrency), 1)
        self.compile_slots = max(int(compile_slots), 1)
        self.timing_prior_s = 2 * float(min_time_s) + 0.5
        self.clock = clock
        self.started = clock()
        self.took: dict[tuple[str, str], list[float]] = {}
        # per job (by identity): (current stage or None, when it entered it)
        self._seen: dict[int, tuple[str | None, float]] = {}

    # -- observations ---------------------------------------------------------------------
    def sync(self, plan: Iterable[Any]) -> None:
        """Record every job's stage changes since the last call (the runner's tick)."""
        now = self.clock()
        for j in plan:
            stage = STAGE_OF.get(j.state)
            key = id(j)
            before = self._seen.get(key)
            if before is None:
                if j.state != "pending":
                    self._seen[key] = (stage, now)
                continue
            if stage != before[0] or j.state in ENDED:
                if before[0] is not None and j.state != "dropped":
                    self.took.setdefault((before[0], kind_of(j)), []).append(now - before[1])
                if j.state in ENDED:
                    self._seen[key] = (None, now)
                elif stage is not None or before[0] is not None:
                    self._seen[key] = (stage, now)

    # -- what one stage of one kind takes -------------------------------------------------
    def _mean(self, stage: str, kind: str) -> float | None:
        took = self.took.get((stage, kind))
        return sum(took) / len(took) if took else None

    def _any(self, stage: str) -> float | None:
        took = [x for (s, _), xs in self.took.items() if s == stage for x in xs]
        return sum(took) / len(took) if took else None

    def prepare_s(self, kind: str) -> float | None:
        return self._mean("prepare", kind) or self._any("prepare")

    def compile_s(self, kind: str) -> float | None:
        own = self._mean("compile", kind)
        if own is not None:
            return own
        cold = self._mean("compile", "cold")
        if kind == "cold":
            return self._any("prepare")
        warm = self._mean("compile", "warm") or self._mean("compile", "extra")
        if warm is not None:
            return warm
        base = cold if cold is not None else self._any("prepare")
        return base / 3 if base is not None else None

    def time_s(self, kind: str) -> float:
        """A process's timing stage: its own kind's mean; else from another kind's (a cold
        process also profiles and checks accuracy: about twice a warm one; eager's is like a
        cold one's); else the spec's minimum timing time, doubled, plus half a second."""
        seen = {k: self._mean("time", k) for k in KINDS}
        light = seen["warm"] or seen["extra"]
        guesses = {
            "eager": [seen["eager"], seen["cold"], 2 * light if light else None],
            "cold": [seen["cold"], 2 * light if light else None, seen["eager"]],
            "warm": [seen["warm"], seen["extra"], (seen["cold"] or seen["eager"] or 0) / 2],
            "extra": [seen["extra"], seen["warm"], (seen["cold"] or seen["eager"] or 0) / 2],
        }[kind]
        return next((g for g in guesses if g), self.timing_prior_s * (2 if kind == "cold"
                                                                      else 1))

    # -- the estimate ---------------------------------------------------------------------
    def seconds_left(self, plan: Iterable[Any]) -> float | None:
        jobs = [j for j in plan if j.state not in ENDED]
        if not jobs:
            return 0.0
        now = self.clock()
        if not self.took:
            return None  # nothing to go on yet

        def elapsed(j: Any) -> float:
            seen = self._seen.get(id(j))
            return now - seen[1] if seen else 0.0

        def prepare(j: Any) -> float:  # none seen (a run without gates): inside "time"
            return self.prepare_s(kind_of(j)) or 0.0

        prep = max((max(prepare(j) - elapsed(j), 0.0)
                    for j in jobs if j.state == "preparing"), default=0.0)
        pending = [j for j in jobs if j.state == "pending"]
        if pending:
            prep += math.ceil(len(pending) / self.concurrency) * max(map(prepare, pending))

        alone = reported = warm = extra = 0.0
        for j in jobs:
            if not j.compiles or j.state not in ("pending", "preparing", "compile_wait",
                                                 "compiling", "settling"):
                continue
            c = self.compile_s(kind_of(j)) or 0.0
            if j.state in ("compiling", "settling"):
                c = max(c - elapsed(j), 0.05 * c)
            if j.autotunes:
                alone += c
            elif j.reported and j.index == 0:
                reported += c
            elif j.reported:
                warm = max(warm, c)
            else:
                extra = max(extra, c)
        compiles = alone + reported / self.compile_slots + warm + extra

        timing = 0.0
        for j in jobs:
            t = self.time_s(kind_of(j))
            timing += max(t - elapsed(j), 0.05 * t) if j.state == "timing" else t
        return prep + compiles + timing

    def fraction(self, plan: Iterable[Any]) -> float | None:
        """Share of the run done, by time (None without an estimate)."""
        left = self.seconds_left(plan)
        if left is None:
            return None
        spent = self.clock() - self.started
        return spent / (spent + left) if spent + left > 0 else 1.0


def describe(seconds: float | None) -> str:
    """``about 40 s left`` / ``about 3 min left``; empty without an estimate."""
    if seconds is None:
        return ""
    if seconds < 90:
        return f"about {max(round(seconds), 1)} s left"
    return f"about {round(seconds / 60)} min left"
