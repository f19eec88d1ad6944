"""The runner's scheduling rules (engine/orchestrate/schedule.py), on simulated processes: timing is alone,
it waits for quiet, batches do not hold each other up, warm-cache compiles wait for the cold
one, max-autotune compiles alone, and with one process at a time the old serial order holds."""

from __future__ import annotations

import random

import pytest

from engine.orchestrate.schedule import (
    ALIVE,
    BUSY,
    Job,
    auto_concurrency,
    decide,
    explains_ahead,
    resolve,
)


def plan(variants: list[str], k: int) -> list[Job]:
    compiled = [v for v in variants if v != "eager"]
    return [Job("eager", 0)] + [Job(v, i) for i in range(k) for v in compiled]


def simulate(jobs: list[Job], *, concurrency: int, compile_slots: int, seed: int = 0,
             max_steps: int = 10_000) -> list[tuple[str, Job, list[tuple[str, str, int]]]]:
    """Run the plan to the end: after each decision, one random alive job that is doing work
    (preparing, compiling, settling or timing) moves on by one step, as a real child would when it
    reaches its next gate or exits.  Returns every action with a snapshot of all states."""
    rng = random.Random(seed)
    log = []
    for _ in range(max_steps):
        for action, j in decide(jobs, concurrency=concurrency, compile_slots=compile_slots):
            j.state = {"start": "preparing", "compile": "compiling", "time": "timing"}[action]
            log.append((action, j, [(x.variant, x.state, x.index) for x in jobs]))
        working = [j for j in jobs if j.state in ("preparing", "compiling", "settling",
                                                  "timing")]
        if not working:
            assert all(j.state == "done" for j in jobs), [(j.variant, j.index, j.state)
                                                          for j in jobs]
            return log
        j = rng.choice(working)
        if j.state == "preparing":
            j.state = "compile_wait" if j.compiles else "time_wait"
        elif j.state == "compiling":
            j.state = "settling"
        elif j.state == "settling":
            j.state = "time_wait"
        else:
            j.state = "done"
    raise AssertionError("the plan never finished: deadlock")


@pytest.mark.parametrize("seed", range(20))
@pytest.mark.parametrize("concurrency,slots", [(1, 1), (2, 1), (3, 2), (4, 2), (8, 8)])
def test_timing_is_alone_and_in_plan_order(seed: int, concurrency: int, slots: int) -> None:
    jobs = plan(["eager", "default", "reduce-overhead", "max-autotune"], 3)
    log = simulate(jobs, concurrency=concurrency, compile_slots=slots, seed=seed)
    timed = [j for action, j, _ in log if action == "time"]
    assert timed == jobs  # every job timed once, in plan order: eager, A, B, C, A, B, C, ...
    for action, j, states in log:
        others = [s for v, s, i in states if (v, i) != (j.variant, j.index)]
        alive = [s for s in others if s in ALIVE]
        assert len(alive) + 1 <= concurrency
        if action == "time":  # rule 1 and 2: nothing else works while it times
            assert not [s for s in others if s in BUSY or s == "timing"]
        if action == "compile":
            assert "timing" not in others
            compiling = [i for v, s, i in states if s == "compiling" and (v, i) != (j.variant,
                                                                                   j.index)]
            if j.index <= 1:  # a reported compile: within the slots, never beside unreported
                reported = [i for i in compiling if i <= 1]
                assert len(reported) + 1 <= slots  # the first warm-cache ones too
                if j.index == 1:  # ... once no cold compile waits
                    assert not [v for v, s, i in states if i == 0 and s == "compile_wait"
                                and v != "eager"]
                assert not [i for i in compiling if i >= 2]
                assert "preparing" not in others  # nor beside a process preparing
            else:  # rule 5: unreported compiles never beside a reported one
                assert not [i for i in compiling if i <= 1]
        if action == "start":
            assert "timing" not in others and "time_wait" not in others  # rule 3
            assert not [i for v, s, i in states if s == "compiling" and i <= 1 and v != "eager"]


def test_reported_compiles_one_at_a_time_cold_ones_first() -> None:
    """One reported compile at a time: the cold ones (max-autotune's alone), then the first
    warm-cache ones, which read 12-37 % slow side by side on the H200; the further processes
    after those, together."""
    jobs = plan(["eager", "default", "reduce-overhead", "max-autotune"], 4)
    log = simulate(jobs, concurrency=16, compile_slots=1, seed=3)
    steps: list[list[tuple[str, int]]] = []
    for action, j, states in log:
        if action != "compile":
            continue
        others = {(v, i) for v, s, i in states if s == "compiling" and (v, i) != (j.variant,
                                                                                 j.index)}
        if steps and others and set(steps[-1]) >= others:
            steps[-1].append((j.variant, j.index))
        else:
            steps.append([(j.variant, j.index)])
    assert steps[:6] == [[(v, i)] for i in (0, 1)
                         for v in ("default", "reduce-overhead", "max-autotune")]
    assert sorted(x for step in steps[6:] for x in step) == sorted(
        (v, i) for v in ("default", "reduce-overhead", "max-autotune") for i in (2, 3))


@pytest.mark.parametrize("seed", range(20))
def test_warm_compile_waits_for_its_cold_compile_and_autotune_compiles_alone(seed: int) -> None:
    jobs = plan(["eager", "default", "max-autotune"], 3)
    log = simulate(jobs, concurrency=4, compile_slots=4, seed=seed)
    for action, j, states in log:
        # a cold job has compiled once its first call returned (states: as the action was
        # taken): settling (its pool starting), then waiting to time
        compiled_cold = {v for v, s, i in states if i == 0 and s in ("settling", "time_wait",
                                                                      "timing", "done")}
        if action == "compile":
            if j.index > 0:
                assert j.variant in compiled_cold
            if j.autotunes:
                others = [s for v, s, i in states if (v, i) != (j.variant, j.index)]
                assert not [s for s in others if s in BUSY or s == "timing"]
        if any(v == "max-autotune" and s == "compiling" and i == 0 for v, s, i in states):
            busy = [(v, s) for v, s, _ in states if s in BUSY or s == "timing"]
            assert busy == [("max-autotune", "compiling")]


def test_one_at_a_time_is_the_old_serial_run() -> None:
    jobs = plan(["eager", "default", "reduce-overhead"], 2)
    log = simulate(jobs, concurrency=1, compile_slots=1)
    order = [(action, j.variant, j.index) for action, j, _ in log]
    expect = []
    for j in jobs:
        expect.append(("start", j.variant, j.index))
        if j.compiles:
            expect.append(("compile", j.variant, j.index))
        expect.append(("time", j.variant, j.index))
    assert order == expect


def test_batches_start_together_and_wait_for_the_batch_to_be_timed() -> None:
    jobs = plan(["eager", "default", "reduce-overhead"], 3)  # 7 jobs
    first = decide(jobs, concurrency=4, compile_slots=2)
    assert [(a, j.variant, j.index) for a, j in first] == [
        ("start", "eager", 0), ("start", "default", 0), ("start", "reduce-overhead", 0),
        ("start", "default", 1)]
    for _, j in first:
        j.state = "preparing"
    jobs[0].state = "time_wait"  # eager is ready; the others still prepare
    assert decide(jobs, concurrency=4, compile_slots=2) == []  # no timing beside preparing


def test_concurrency_from_the_host() -> None:
    assert auto_concurrency(1) == (1, 1)
    assert auto_concurrency(2) == (5, 1)  # side by side, one reported compile at a time
    assert auto_concurrency(8) == (8, 1)  # one reported compile at a time
    assert auto_concurrency(16) == (16, 1)
    assert auto_concurrency(128) == (16, 1)
    assert resolve(3, cpus=2) == (3, 3)
    assert resolve(0, cpus=16) == (16, 1)
    assert resolve(8, cpus=16, spec_compile_slots=2) == (8, 2)
    assert resolve(0, cpus=16, spec_compile_slots=3) == (16, 3)
    assert resolve(2, cpus=16, spec_compile_slots=5) == (2, 2)  # never more than alive
    assert resolve(0, cpus=2, spec_compile_slots=2) == (5, 2)
    assert resolve(0, cpus=1, spec_compile_slots=2) == (1, 1)


def test_a_server_still_importing_counts_as_preparing() -> None:
    """The compiler server's imports are heavy CPU work: while they last, no reported compile
    and no timing window; starting, and unreported compiles, go on as beside a preparing job."""
    jobs = plan(["eager", "default"], 4)
    eager, cold, warm, further, last = jobs
    eager.state, cold.state, warm.state = "time_wait", "compile_wait", "compile_wait"
    assert decide(jobs, concurrency=5, compile_slots=1, server_importing=True) == []
    assert decide(jobs, concurrency=5, compile_slots=1) == [("time", eager)]  # rule 7
    eager.state = "done"
    got = decide(jobs, concurrency=5, compile_slots=1, server_importing=True)
    assert got == [("start", further), ("start", last)]  # but no compile beside the imports
    assert decide(jobs, concurrency=5, compile_slots=1) == [("compile", cold)]
    cold.state = warm.state = "done"  # nothing waits to time: new jobs start beside imports
    assert decide(jobs, concurrency=5, compile_slots=1, server_importing=True) == [
        ("start", further), ("start", last)]
    # nothing but an unreported compile at the gate: it may go beside the imports
    for j in jobs:
        j.state = "done"
    further.state = "compile_wait"
    assert decide(jobs, concurrency=5, compile_slots=1, server_importing=True) == [
        ("compile", further)]
    # a max-autotune cold compile needs the host to itself
    jobs = plan(["eager", "max-autotune"], 2)
    for j in jobs:
        j.state = "done"
    jobs[1].state = "compile_wait"
    assert decide(jobs, concurrency=5, compile_slots=1, server_importing=True) == []
    assert decide(jobs, concurrency=5, compile_slots=1) == [("compile", jobs[1])]


def test_unreported_compiles_run_together_but_never_beside_a_reported_one() -> None:
    jobs = plan(["eager", "default", "reduce-overhead"], 4)  # index 2, 3: unreported
    for j in jobs:
        j.state = "time_wait" if j.index == 0 else "compile_wait"
    jobs[0].state = "done"  # eager timed already (rule 7)
    got = decide(jobs, concurrency=16, compile_slots=2)
    assert [(a, j.variant, j.index) for a, j in got] == [
        ("compile", "default", 1), ("compile", "reduce-overhead", 1)]
    for _, j in got:
        j.state = "time_wait"
    got = decide(jobs, concurrency=16, compile_slots=2)
    assert sorted((j.variant, j.index) for _, j in got) == [
        ("default", 2), ("default", 3), ("reduce-overhead", 2), ("reduce-overhead", 3)]
    # a reported compile waiting (here for an unreported one to end) holds back new
    # unreported ones, so it is not starved
    jobs = plan(["eager", "default", "reduce-overhead"], 4)
    by = {(j.variant, j.index): j for j in jobs}
    for j in jobs:
        j.state = "time_wait" if j.index == 0 else "compile_wait"
    jobs[0].state = "done"
    by[("default", 1)].state = "time_wait"
    by[("default", 2)].state = "compiling"
    assert decide(jobs, concurrency=16, compile_slots=2) == []
    by[("default", 2)].state = "time_wait"
    got = decide(jobs, concurrency=16, compile_slots=2)
    assert [(j.variant, j.index) for _, j in got] == [("reduce-overhead", 1)]


def test_eager_times_before_a_compile_waiting_beside_it() -> None:
    """Rule 7: with a compile and eager's timing both allowed, eager's baseline goes first, so
    a compile that hangs or crashes leaves the run its baseline."""
    jobs = plan(["eager", "default"], 2)
    eager, cold, warm = jobs
    eager.state, cold.state, warm.state = "time_wait", "compile_wait", "compile_wait"
    assert decide(jobs, concurrency=3, compile_slots=1) == [("time", eager)]
    warm.state = "preparing"  # not quiet: neither goes
    assert decide(jobs, concurrency=3, compile_slots=1) == []


def test_one_further_process_traces_the_breaks_ahead_on_a_large_host_only() -> None:
    plan = [Job("eager", 0)] + [Job(v, i) for i in range(3) for v in ("a", "b")]
    plan.append(Job("a", 3, speculative=True))
    picked = [j for j in plan if explains_ahead(j, plan, cpus=16)]
    assert [(j.variant, j.index) for j in picked] == [("a", 2)]  # first unreported, once
    assert not any(explains_ahead(j, plan, cpus=2) for j in plan)  # small host: the tail
    only_reported = [Job("eager", 0), Job("a", 0), Job("a", 1), Job("a", 2, speculative=True)]
    assert not any(explains_ahead(j, only_reported, cpus=16) for j in only_reported)


def test_a_speculative_job_prepares_and_compiles_but_times_only_once_confirmed() -> None:
    jobs = plan(["eager", "default"], 2) + [Job("default", 2, speculative=True)]
    for j in jobs:
        j.state = "done"
    spec = jobs[-1]
    spec.state = "time_wait"
    assert decide(jobs, concurrency=16, compile_slots=2) == []
    spec.speculative = False
    assert decide(jobs, concurrency=16, compile_slots=2) == [("time", spec)]


# ------------------------------------------------------------------ real processes

TIMED = ("warm-up", "measure", "profile", "roofline", "lost time", "explain")
OWN_TIME = ("waiting",)  # parked at a gate: no CPU, no GPU


@pytest.mark.slow
def test_real_run_side_by_side_no_timing_window_overlaps_other_work() -> None:
    """Three processes alive at once (aot_eager, CPU): every timing window of every process lies
    outside every other process's working phases (imports, setup parts, compile), as stored in
    the result (``processes[*].phases``); each process still times, and waits at its gates."""
    from engine.orchestrate.runner import run_variants
    from engine.spec import normalise

    spec = normalise({"model": "mlp", "dims": {"batch": 4, "hidden": 32},
                      "variants": ["eager", "default"], "backend": "aot_eager",
                      "processes": 3, "max_processes": 3, "min_samples": 10, "min_time_s": 0.05,
                      "warmup_calls": 3, "concurrency": 3, "profile": False})
    results = run_variants(spec)
    assert [r["status"] for r in results] == ["ok", "ok"], results
    windows = []  # (process key, phase name, start, end)
    for r in results:
        for i, proc in enumerate(r["processes"]):
            for ph in proc["phases"]:
                windows.append(((r["variant"], i), ph["name"], ph["start"], ph["end"]))
    keys = {w[0] for w in windows}
    assert len(keys) == 4  # eager + three processes of default
    assert any(name == "waiting" for _, name, _, _ in windows)
    starts = sorted(min(s for k, _, s, _ in windows if k == key) for key in keys)
    assert starts[2] - starts[0] < 5.0, "the first three processes started side by side"
    for key, name, start, end in windows:
        if name not in TIMED:
            continue
        for other, oname, ostart, oend in windows:
            if other == key or oname in OWN_TIME:
                continue
            assert end <= ostart or oend <= start, (
                f"{key} {name} [{start:.3f}, {end:.3f}] overlaps {other} {oname} "
                f"[{ostart:.3f}, {oend:.3f}]")


def test_a_settling_job_frees_its_compile_slot_but_holds_timing_and_autotuning() -> None:
    jobs = plan(["eager", "default", "reduce-overhead", "max-autotune"], 2)
    for j in jobs:
        j.state = "compile_wait" if j.compiles and j.index == 0 else "pending"
    jobs[0].state = "time_wait"  # eager is ready to time
    by = {(j.variant, j.index): j for j in jobs}
    by[("default", 0)].state = "settling"
    by[("reduce-overhead", 0)].state = "compiling"
    got = decide(jobs, concurrency=16, compile_slots=2)
    assert got == []  # max-autotune's cold compile waits for quiet; nothing is timed
    by[("reduce-overhead", 0)].state = "settling"
    assert decide(jobs, concurrency=16, compile_slots=2) == []  # pools still starting
    by[("default", 0)].state = by[("reduce-overhead", 0)].state = "time_wait"
    got = decide(jobs, concurrency=16, compile_slots=2)
    assert got == [("time", jobs[0])]  # quiet: eager's baseline first (rule 7)
    jobs[0].state = "done"
    got = decide(jobs, concurrency=16, compile_slots=2)
    assert got == [("compile", by[("max-autotune", 0)])]
    # a warm-cache max-autotune process compiles like any other (its kernels are cached)
    by[("max-autotune", 0)].state = "settling"
    for v in ("default", "reduce-overhead", "max-autotune"):
        by[(v, 1)].state = "compile_wait"
    got = decide(jobs, concurrency=16, compile_slots=2)
    assert [(a, j.variant, j.index) for a, j in got] == [  # the first warm-cache ones, in the
        ("compile", "default", 1), ("compile", "reduce-overhead", 1)]  # two slots


@pytest.mark.slow
@pytest.mark.parametrize(("target", "processes", "reason"), [
    # started with the batch, the speculative third process is measured even where two already
    # gave a tight enough interval (it costs only its timing slot; a few processes can agree
    # by chance), and the interval is judged again with it
    (10.0, 3, ("interval tight enough",)),
    # no half-width target: the run stops at its process limit, or on the decision rule where
    # the three processes' interval already excludes 1.0 (either way all three are measured)
    (0.0, 3, ("process limit", "interval excludes 1.0")),
])
def test_real_run_a_speculative_process_is_ended_or_confirmed(target, processes, reason,
                                                              monkeypatch):
    """Where the whole run fits in one batch, the first adaptive process starts with it and
    times after the others (aot_eager, CPU, 8 alive)."""
    from engine.analysis import stats
    from engine.orchestrate.runner import run_variants
    from engine.spec import normalise

    if target:  # two processes of a 20-us model on a loaded 2-core host can disagree so much
        # that even a 1000 % target is missed (t with one degree of freedom): the decision is
        # fixed here, the test is about what the runner does with it
        monkeypatch.setattr(stats, "stop_reason", lambda *a, **k: "interval tight enough")

    spec = normalise({"model": "mlp", "dims": {"batch": 4, "hidden": 32},
                      "variants": ["eager", "default"], "backend": "aot_eager",
                      "processes": 2, "max_processes": 3, "target_halfwidth": target,
                      "min_samples": 10, "min_time_s": 0.05, "warmup_calls": 3,
                      "concurrency": 8, "profile": False})
    results = run_variants(spec)
    assert [r["status"] for r in results] == ["ok", "ok"], results
    default = results[1]
    assert len(default["processes"]) == processes, default["processes"]
    assert default["stats"]["stop_reason"] in reason
    starts = sorted(min(ph["start"] for ph in p["phases"]) for r in results
                    for p in r["processes"])
    assert starts[-1] - starts[0] < 5.0, "every process, the speculative one too, in one batch"
