"""How long a run has left, for the CLI's progress line and the dashboard's progress bar.

A run is a plan of measuring processes (``engine.orchestrate.schedule.Job``: eager, each compiled variant's
cold process, its warm-cache processes), each going through three stages that cost wall time
differently under the schedule's rules:

* **prepare** (process start, imports, model build): side by side, so a batch of processes
  costs about one preparation, not one each;
* **compile** (the first compiled call): the reported ones (cold, then the first warm-cache
  ones) take turns in ``compile_slots`` at a time, a max-autotune cold compile runs alone,
  then further processes' compiles together;
* **time** (warm-up, steady state, profiler): one process at a time, so these add up.

The estimate is the sum of what is left of each: the longest preparation still running (plus
one preparation per batch still to start), the compiles still to come (reported ones divided
over the slots, max-autotune's cold one alone, further ones together), and the timing of every
process not done.  Each stage's duration comes from this run's processes that have been
through it, by kind (eager, cold, warm = the first warm-cache process, extra = the further
ones); before one has, from the others (a warm compile is guessed at a third of a cold one, a
cold compile at one preparation, timing from the spec's minimum timing time).  Before any
process has been through a stage (and without earlier runs, below) there is no estimate.  With
one process at a time this is the sum over processes of prepare + compile + time, as before.
The runner calls ``sync`` with its plan on every tick; the states' changes are the
observations.

Before this run has seen a stage, earlier runs of the same model on this host say what it
takes (``priors``: the caller reads them from the database, ``stage_seconds`` turns their
stored phases into stage durations), by kind and variant: a max-autotune cold compile is not a
default one.  A stage that runs past its estimate is not "about to end": what is left of it is
at least a quarter of the larger of its estimate and its time so far.  The bar's fraction never
goes back (a longer estimate slows it down instead).  ``acceptance/eta_replay.py`` replays stored
runs through this estimate and prints how far off it was.
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


OVERRUN = 0.25
"""What is left of a stage that has run about as long as its estimate or longer, as a share of
the larger of the two (a stage that overran tends to go on: a growing remainder, not zero)."""


MAX_STAGE_S = 24 * 3600.0
"""A stored stage longer than this is not a duration to expect (a clock jump, a bad row)."""


def kind_of(job: Any) -> str:
    return kind_of_process(job.variant, job.index)


def kind_of_process(variant: str, index: int) -> str:
    if variant == "eager":
        return "eager"
    return "cold" if index == 0 else "warm" if index == 1 else "extra"


def state_changes(variant: str, proc: dict[str, Any]) -> list[tuple[float, str]] | None:
    """(unix time, state) of a stored measuring process, as the runner saw it: preparing from
    its spawn until its first gate, then (compiled) waiting to compile, compiling from that
    gate's opening (the compile workers' end counts as settling), waiting to time, and timing
    from that gate's opening until the process ended.  None for a process without the gates'
    waits (a run one process at a time) or without its times."""
    phases = sorted((p for p in proc.get("phases") or [] if isinstance(p, dict)),
                    key=lambda p: float(p["start"]))
    waits = [p for p in phases if p.get("name") == "waiting"]
    spawned = proc.get("spawned_at") or proc.get("started_at")
    ended = proc.get("ended_at")
    if not waits or not spawned or not ended:
        return None
    out = [(float(spawned), "preparing")]
    if variant == "eager":
        out += [(float(waits[0]["start"]), "time_wait"), (float(waits[0]["end"]), "timing")]
    elif len(waits) >= 2:
        out += [(float(waits[0]["start"]), "compile_wait"), (float(waits[0]["end"]), "compiling")]
        settle = next((p for p in phases if p.get("name") == "compile workers"
                       and waits[0]["end"] <= p["start"] <= waits[1]["start"]), None)
        if settle is not None:
            out.append((float(settle["start"]), "settling"))
        out += [(float(waits[1]["start"]), "time_wait"), (float(waits[1]["end"]), "timing")]
    else:
        return None
    return out + [(float(ended), "done")]


def stage_seconds(processes: Iterable[tuple[str, int, dict[str, Any]]]
                  ) -> dict[tuple[str, str, str], list[float]]:
    """{(stage, kind, variant): [seconds, ...]} from stored processes ``(variant, index,
    process)`` of earlier runs: the priors ``Eta`` starts from."""
    out: dict[tuple[str, str, str], list[float]] = {}
    for variant, index, proc in processes:
        try:  # stored rows are hostile: only finite times in order count
            changes = state_changes(str(variant), proc)
        except (KeyError, TypeError, ValueError, AttributeError):
            continue
        if changes is None or any(not math.isfinite(t) for t, _ in changes):
            continue
        kind = kind_of_process(variant, index)
        stage, since = None, 0.0
        for t, state in changes:  # consecutive states of one stage (compiling, settling) add up
            now = STAGE_OF.get(state)
            if now == stage:
                continue
            if stage is not None and 0 <= t - since <= MAX_STAGE_S:
                out.setdefault((stage, kind, str(variant)), []).append(t - since)
            stage, since = now, t
    return out


class Eta:
    def __init__(self, *, concurrency: int = 1, compile_slots: int = 1,
                 min_time_s: float = 0.5, clock: Callable[[], float] = time.monotonic,
                 priors: dict[tuple[str, str, str], list[float]] | None = None) -> None:
        self.concurrency = max(int(concurrency), 1)
        self.compile_slots = max(int(compile_slots), 1)
        self.timing_prior_s = 2 * float(min_time_s) + 0.5
        self.clock = clock
        self.started = clock()
        # (stage, kind, variant) -> seconds: this run's observations, and earlier runs'
        self.took: dict[tuple[str, str, str], list[float]] = {}
        self.priors = {k: [float(x) for x in v] for k, v in (priors or {}).items() if v}
        # per job (by identity): (current stage or None, when it entered it)
        self._seen: dict[int, tuple[str | None, float]] = {}
        self._shown = 0.0  # the largest fraction reported so far: the bar never goes back
        # The stage in progress that has run past its estimate (None: none has): the time left
        # is then a floor that grows with it, and ``describe`` says "at least".
        self.overrun: str | None = None
        self._memo: dict[tuple[str, tuple[str, ...], str | None], float | None] = {}

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
                    self.took.setdefault((before[0], kind_of(j), j.variant), []).append(
                        now - before[1])
                    self._memo.clear()
                if j.state in ENDED:
                    self._seen[key] = (None, now)
                elif stage is not None or before[0] is not None:
                    self._seen[key] = (stage, now)

    # -- what one stage of one kind takes -------------------------------------------------
    def _mean(self, stage: str, kinds: Iterable[str], variant: str | None = None
              ) -> float | None:
        """Mean seconds of ``stage`` for processes of ``kinds``: this run's of ``variant``,
        else earlier runs' of it, else this run's of any variant, else earlier runs'."""
        kinds = tuple(kinds)
        key = (stage, kinds, variant)
        if key not in self._memo:  # asked many times a tick (every 20 ms, beside timing)
            self._memo[key] = self._mean_of(stage, kinds, variant)
        return self._memo[key]

    def _mean_of(self, stage: str, kinds: tuple[str, ...], variant: str | None
                 ) -> float | None:
        for by_variant in ((True, False) if variant is not None else (False,)):
            for source in (self.took, self.priors):
                xs = [x for (s, k, v), vals in source.items()
                      if s == stage and k in kinds and (not by_variant or v == variant)
                      for x in vals]
                if xs:
                    return sum(xs) / len(xs)
        return None

    def prepare_s(self, kind: str, variant: str | None = None) -> float | None:
        """A process's preparation: its kind's; else a reported process's from the other
        reported kind (both import the compiler themselves), a further one's from eager's (both
        fork from the same server: the compiler server where there is one, engine/
        compiler_server.py, and then neither imports the compiler); else any kind's."""
        like = {"cold": ("warm", "extra"), "warm": ("cold", "extra"),
                "extra": ("eager", "warm", "cold"), "eager": ("extra",)}[kind]
        return (self._mean("prepare", [kind], variant)
                or next((m for k in like if (m := self._mean("prepare", [k]))), None)
                or self._mean("prepare", KINDS))

    def compile_s(self, kind: str, variant: str | None = None) -> float | None:
        """A first compiled call: its kind's; a cold one guessed at one compiled process's
        preparation (which imports the compiler); a warm-cache one at a further one's, else at
        a third of the cold one."""
        own = self._mean("compile", [kind], variant)
        if own is not None:
            return own
        if kind == "cold":
            return self.prepare_s("cold", variant)
        other = self._mean("compile", ["warm", "extra"], variant)
        if other is not None:
            return other
        base = self._mean("compile", ["cold"], variant) or self.prepare_s("cold", variant)
        return base / 3 if base is not None else None

    def time_s(self, kind: str, variant: str | None = None) -> float:
        """A process's timing slot: its kind's; else another kind's (every slot times for at
        least the spec's minimum; a cold one also profiles, and eager's profiles too); else the
        spec's minimum timing time, doubled, plus half a second (doubled for a cold one)."""
        order = {"eager": ("eager", "cold", "warm", "extra"),
                 "cold": ("cold", "eager", "warm", "extra"),
                 "warm": ("warm", "extra", "eager", "cold"),
                 "extra": ("extra", "warm", "eager", "cold")}[kind]
        for k in order:
            seen = self._mean("time", [k], variant)
            if seen:
                return seen
        return self.timing_prior_s * (2 if kind == "cold" else 1)

    # -- the estimate ---------------------------------------------------------------------
    def seconds_left(self, plan: Iterable[Any]) -> float | None:
        jobs = [j for j in plan if j.state not in ENDED]
        self.overrun = None
        if not jobs:
            return 0.0
        now = self.clock()
        if not self.took and not self.priors:
            return None  # nothing to go on yet

        def elapsed(j: Any) -> float:
            seen = self._seen.get(id(j))
            return now - seen[1] if seen else 0.0

        def left(estimate: float, j: Any) -> float:
            """What is left of a stage estimated at ``estimate`` that ``j`` is in."""
            e = elapsed(j)
            if e > estimate and self.overrun is None:
                self.overrun = STAGE_OF.get(j.state)
            return max(estimate - e, OVERRUN * max(estimate, e))

        def prepare(j: Any) -> float:  # none seen (a run without gates): inside "time"
            return self.prepare_s(kind_of(j), j.variant) or 0.0

        prep = max((left(prepare(j), j) for j in jobs if j.state == "preparing"), default=0.0)
        pending = [j for j in jobs if j.state == "pending"]
        if pending:
            prep += math.ceil(len(pending) / self.concurrency) * max(map(prepare, pending))

        alone = reported = extra = 0.0
        for j in jobs:
            if not j.compiles or j.state not in ("pending", "preparing", "compile_wait",
                                                 "compiling", "settling"):
                continue
            c = self.compile_s(kind_of(j), j.variant) or 0.0
            if j.state in ("compiling", "settling"):
                c = left(c, j)
            if j.autotunes:
                alone += c
            elif j.reported:
                reported += c
            else:
                extra = max(extra, c)
        compiles = alone + reported / self.compile_slots + extra

        timing = 0.0
        for j in jobs:
            t = self.time_s(kind_of(j), j.variant)
            timing += left(t, j) if j.state == "timing" else t
        return prep + compiles + timing

    def estimate(self, plan: Iterable[Any]) -> tuple[float | None, float | None]:
        """(seconds left, share of the run done by time), both None without an estimate; the
        runner's tick asks for both at once.  The share never goes back: a longer estimate
        holds the bar where it is until time catches up."""
        left = self.seconds_left(plan)
        if left is None:
            return None, None
        spent = self.clock() - self.started
        self._shown = max(self._shown, spent / (spent + left) if spent + left > 0 else 1.0)
        return left, self._shown

    def fraction(self, plan: Iterable[Any]) -> float | None:
        """Share of the run done, by time (``estimate``'s second half)."""
        return self.estimate(plan)[1]


STAGE_WORDS = {"prepare": "start-up", "compile": "compile", "time": "timing"}


def describe(seconds: float | None, overrun: str | None = None) -> str:
    """``about 40 s left`` / ``about 3 min left``; empty without an estimate.  With ``overrun``
    (``Eta.overrun``: a stage in progress has run past its estimate), ``at least 16 s left:
    compile running long``: the number is a floor that grows, not a promise (the bar said
    "about 16 s left" at 50 % and the run ended 56 s later).  Short: it rides in the run's
    progress phase, a 64-character label."""
    if seconds is None:
        return ""
    amount = (f"{max(round(seconds), 1)} s" if seconds < 90 else f"{round(seconds / 60)} min")
    if overrun:
        return f"at least {amount} left: {STAGE_WORDS.get(overrun, overrun)} running long"
    return f"about {amount} left"
