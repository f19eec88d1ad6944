"""The run's time-left estimate (engine/orchestrate/eta.py): on a fake clock and simulated jobs, and replayed
against two real runs on the H200 host (the stored phases of every process, 16 alive at once),
where the old per-process estimate was several times off once the first process ended."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from engine.orchestrate.eta import Eta, describe, stage_seconds, state_changes
from engine.orchestrate.schedule import Job

TIMELINES = json.loads((Path(__file__).parent / "fixtures" / "h200_timelines.json").read_text())


class Clock:
    def __init__(self) -> None:
        self.t = 0.0

    def __call__(self) -> float:
        return self.t


def step(eta: Eta, clock: Clock, plan: list[Job], t: float, **states: str) -> None:
    clock.t = t
    for key, state in states.items():
        variant, index = key.rsplit("_", 1)
        next(j for j in plan if j.variant == variant and j.index == int(index)).state = state
    eta.sync(plan)


def test_one_at_a_time_sums_prepare_compile_and_time_per_process():
    c = Clock()
    plan = [Job("eager", 0), Job("default", 0), Job("default", 1)]
    eta = Eta(concurrency=1, compile_slots=1, min_time_s=0.5, clock=c)
    step(eta, c, plan, 0.0, eager_0="preparing")
    assert eta.seconds_left(plan) is None  # nothing observed yet, no history: no guess
    step(eta, c, plan, 3.0, eager_0="time_wait")
    step(eta, c, plan, 3.0, eager_0="timing")
    step(eta, c, plan, 5.0, eager_0="done", default_0="preparing")
    # left: default 0 (prepare 3 s like eager's, cold compile guessed at one preparation, time
    # like eager's) and default 1 (prepare 3, warm compile a third of the cold guess, time
    # like eager's)
    assert eta.seconds_left(plan) == pytest.approx(3 + 3 + 3 + 1 + 2 + 2)
    step(eta, c, plan, 8.0, default_0="compile_wait")
    step(eta, c, plan, 8.0, default_0="compiling")
    step(eta, c, plan, 17.0, default_0="time_wait")  # the cold compile took 9 s
    step(eta, c, plan, 17.0, default_0="timing")
    step(eta, c, plan, 18.0)  # 1 s into a timing guessed at 2 s; default 1: 3 + 9 / 3 + 2
    assert eta.seconds_left(plan) == pytest.approx(1 + 3 + 3 + 2)
    assert eta.fraction(plan) == pytest.approx(18 / (18 + 9))
    step(eta, c, plan, 40.0)  # overrunning: what is left of it grows with its time so far
    assert eta.seconds_left(plan) == pytest.approx(0.25 * 23 + 3 + 3 + 2)


def _cold_process_done() -> tuple[list[Job], Eta]:
    """default's cold process seen through: prepared in 2 s, compiled in 4 s, timed in 2 s."""
    c = Clock()
    plan = [Job("default", 0)]
    eta = Eta(concurrency=1, compile_slots=1, clock=c)
    for t, state in ((0, "preparing"), (2, "compile_wait"), (2, "compiling"), (6, "time_wait"),
                     (6, "timing"), (8, "done")):
        step(eta, c, plan, float(t), default_0=state)
    return plan, eta


def test_adaptive_processes_add_to_what_is_left():
    plan, eta = _cold_process_done()
    assert eta.seconds_left(plan) == 0.0
    plan.append(Job("default", 1))
    assert eta.seconds_left(plan) == pytest.approx(2 + 4 / 3 + 2)  # the cold one's timing


def _default_compiling() -> tuple[Clock, list[Job], Eta]:
    """eager and default prepared together, eager timed (1 s), default's compile just begun
    (at 2 s): the clock, the plan and the estimate."""
    c = Clock()
    plan = [Job("eager", 0), Job("default", 0)]
    eta = Eta(concurrency=2, compile_slots=1, clock=c)
    step(eta, c, plan, 0.0, eager_0="preparing", default_0="preparing")
    step(eta, c, plan, 1.0, eager_0="time_wait", default_0="compile_wait")
    step(eta, c, plan, 1.0, eager_0="timing")
    step(eta, c, plan, 2.0, eager_0="done", default_0="compiling")
    return c, plan, eta


def test_the_bar_never_goes_back_when_the_estimate_grows():
    """A compile that runs far past its estimate makes the estimate grow; the fraction holds
    until time catches up instead of going back (the CLI's bar went back 4-7 times a run)."""
    c, plan, eta = _default_compiling()
    shown, lefts = [], []
    for t in range(2, 60):
        step(eta, c, plan, float(t))
        lefts.append(eta.seconds_left(plan))
        shown.append(eta.fraction(plan))
    assert lefts[-1] > lefts[5]  # the overrunning compile: more left, not "about 0 s"
    assert all(b >= a for a, b in zip(shown, shown[1:], strict=False))


def test_earlier_runs_give_an_estimate_from_the_start_by_variant():
    """With the stage times of earlier runs of the model (per variant: a max-autotune cold
    compile is not a default one) there is an estimate before anything was observed."""
    c = Clock()
    priors = {("prepare", "eager", "eager"): [1.0], ("time", "eager", "eager"): [0.5],
              ("prepare", "cold", "default"): [2.0], ("prepare", "cold", "max-autotune"): [2.0],
              ("compile", "cold", "default"): [3.0], ("compile", "cold", "max-autotune"): [20.0],
              ("time", "cold", "default"): [1.0], ("time", "cold", "max-autotune"): [1.0]}
    plan = [Job("eager", 0), Job("default", 0), Job("max-autotune", 0)]
    eta = Eta(concurrency=3, compile_slots=1, clock=c, priors=priors)
    step(eta, c, plan, 0.0, eager_0="preparing", default_0="preparing",
         **{"max-autotune_0": "preparing"})
    assert eta.seconds_left(plan) == pytest.approx(2.0 + 20.0 + 3.0 + 0.5 + 1.0 + 1.0)
    # this run's own observation of a stage wins over the earlier runs'
    step(eta, c, plan, 1.0, eager_0="time_wait")
    step(eta, c, plan, 1.0, eager_0="timing")
    step(eta, c, plan, 3.0, eager_0="done")
    assert eta.time_s("eager", "eager") == pytest.approx(2.0)


def _process(spawn: float, waits: list[tuple[float, float]], end: float) -> dict:
    phases = [{"name": "waiting", "start": a, "end": b} for a, b in waits]
    return {"spawned_at": spawn, "ended_at": end, "phases": phases}


def test_stage_seconds_from_stored_processes_and_hostile_rows():
    good = [("eager", 0, _process(100.0, [(101.0, 103.0)], 104.0)),
            ("default", 0, _process(100.0, [(102.0, 103.0), (108.0, 110.0)], 111.5))]
    bad = [("default", 1, {"spawned_at": "x", "ended_at": 5, "phases": [{"name": "waiting"}]}),
           ("default", 2, _process(float("nan"), [(1.0, 2.0), (3.0, 4.0)], 5.0)),
           ("default", 3, {"phases": "not a list"}),
           ("default", 4, _process(10.0, [(11.0, 12.0), (13.0, 1e12)], 2e12))]
    got = stage_seconds(good + bad)
    assert got == {("prepare", "eager", "eager"): [1.0], ("time", "eager", "eager"): [1.0],
                   ("prepare", "cold", "default"): [2.0], ("compile", "cold", "default"): [5.0],
                   ("time", "cold", "default"): [1.5],
                   ("prepare", "extra", "default"): [1.0], ("compile", "extra", "default"): [1.0]}


def replay(name: str) -> list[tuple[float, float]]:
    """(actual seconds left, estimate) every half second of a stored H200 run, its processes'
    states rebuilt from their phases by ``state_changes``, as for the priors and
    acceptance/eta_replay.py."""
    run = TIMELINES[name]
    plan, events = [], []
    for p in run["processes"]:
        job = Job(p["variant"], p["index"])
        plan.append(job)
        stored = {"spawned_at": p["phases"][0][1], "ended_at": p["ended"],
                  "phases": [{"name": n, "start": a, "end": b} for n, a, b in p["phases"]]}
        events += [(t, job, state) for t, state in state_changes(p["variant"], stored)]
    events.sort(key=lambda e: e[0])
    c = Clock()
    eta = Eta(concurrency=run["concurrency"], compile_slots=run["compile_slots"], clock=c)
    out, k, t = [], 0, 0.0
    while t < run["finished"]:
        while k < len(events) and events[k][0] <= t:
            events[k][1].state = events[k][2]
            k += 1
        c.t = t
        eta.sync(plan)
        est = eta.seconds_left(plan)
        if est is not None:
            out.append((run["finished"] - t, est))
        t += 0.5
    return out


@pytest.mark.parametrize("name", sorted(TIMELINES))
def test_replayed_h200_runs_the_estimate_follows_the_time_left(name):
    """The estimate appears once the first processes have prepared (before 40 % of the run),
    is never off by more than a factor of 2.5 while more than 10 s are left, and once a
    compiled process has been timed (the timing of the rest is then known, not guessed) it is
    within 50 % of the real time left (or 10 s when little is left)."""
    points = replay(name)
    run = TIMELINES[name]
    total = run["finished"]
    first_timed = min(p["ended"] for p in run["processes"] if p["variant"] != "eager")
    assert points and total - points[0][0] < 0.4 * total
    for actual, est in points:
        if actual > 10:
            assert actual / 2.5 <= est <= actual * 2.5, (actual, est)
        if total - actual > first_timed:
            assert abs(est - actual) <= max(0.5 * actual, 10.0), (actual, est)


@pytest.mark.parametrize(("seconds", "text"), [(None, ""), (0.2, "about 1 s left"),
                                               (42, "about 42 s left"), (400, "about 7 min left")])
def test_describe(seconds, text):
    assert describe(seconds) == text


def test_a_stage_past_its_estimate_makes_the_time_left_a_floor():
    """The bar said "about 16 s left" at 50 % while a compile ran on for 30 s more and the run
    ended 56 s later: past its estimate, the time left is said as "at least", with the stage."""
    c, plan, eta = _default_compiling()
    step(eta, c, plan, 2.5)  # half a second into a compile guessed at one preparation (1 s)
    seconds = eta.seconds_left(plan)
    assert eta.overrun is None and describe(seconds, eta.overrun).startswith("about ")
    step(eta, c, plan, 12.0)  # ten seconds into it
    seconds = eta.seconds_left(plan)
    assert eta.overrun == "compile"
    assert describe(seconds, eta.overrun) == (
        f"at least {round(seconds)} s left: compile running long")
    step(eta, c, plan, 13.0, default_0="time_wait")
    step(eta, c, plan, 13.0, default_0="timing")
    eta.seconds_left(plan)
    assert eta.overrun is None  # within its estimate again: "about"


def test_every_progress_label_fits_its_column():
    """The runner stores "<phase> · <time left>" in a 64-character column: the longest phase
    with the longest overrun wording fits."""
    from engine.orchestrate.eta import STAGE_WORDS

    phases = ["warm-cache compile", "waiting to compile", "profiling", "measuring", "building"]
    for phase in phases:
        for stage in STAGE_WORDS:
            for seconds in (5, 89, 59 * 60):
                assert len(f"{phase} · {describe(seconds, stage)}") <= 64
