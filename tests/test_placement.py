"""Where a measuring process times (engine/measure/placement.py) and the host probe (engine/host_probe)."""

from __future__ import annotations

import os

import pytest

from engine.measure import host_probe, placement


def test_timing_core_only_on_gpu_hosts_with_enough_cpus(monkeypatch):
    monkeypatch.delenv(placement.ENV, raising=False)
    assert placement.timing_core("cuda", {0, 1, 2, 3}) == 3
    assert placement.timing_core("cuda:1", set(range(16))) == 15
    assert placement.timing_core("cpu", set(range(16))) is None  # the model runs on the cores
    assert placement.timing_core("cuda", {0, 1}) is None  # too few to keep one apart
    monkeypatch.setenv(placement.ENV, "0")
    assert placement.timing_core("cuda", set(range(16))) is None


@pytest.mark.skipif(not hasattr(os, "sched_setaffinity"), reason="Linux only")
def test_keep_off_and_pin_in_a_child_process():
    import multiprocessing as mp

    cpus = sorted(os.sched_getaffinity(0))
    if len(cpus) < 2:
        pytest.skip("one CPU")

    def child(q):
        core = max(os.sched_getaffinity(0))
        placement.keep_off(core)
        off = sorted(os.sched_getaffinity(0))
        q.put((core, off, placement.pin(core)))

    q = mp.get_context("fork").Queue()
    p = mp.get_context("fork").Process(target=child, args=(q,))
    p.start()
    core, off, pinned = q.get(timeout=30)
    p.join(30)
    assert core not in off and set(off) == set(cpus) - {core}
    assert pinned == [core]
    assert placement.pin(None) == sorted(os.sched_getaffinity(0))  # None leaves it alone


def test_host_probe_measures_positive_microseconds_on_the_cpu():
    got = host_probe.measure("cpu")
    assert set(got) == {"launch_us", "module_call_us"}
    assert all(0 < v < 10_000 for v in got.values())


def test_a_pinned_process_compiles_with_the_thread_count_it_times_with(monkeypatch):
    """Dynamo guards the intra-op thread count: set at the time gate (after the compile) it
    recompiled every graph in the timing slot; set before the compile gate, nothing recompiles."""
    import torch
    from torch._dynamo.testing import CompileCounter

    from engine.measure import child

    monkeypatch.setattr(placement, "pin", lambda core: [core])  # keep this test's own CPUs
    before = torch.get_num_threads()
    x = torch.randn(8)
    clock, quiet = child.PhaseClock(), (lambda *a, **k: None)
    try:
        torch.set_num_threads(2)
        counter = CompileCounter()
        fn = torch.compile(lambda t: t.sin() + 1, backend=counter)
        child._gate(clock, "compile", quiet, 0.0, core=0)
        assert torch.get_num_threads() == 1
        fn(x)
        child._gate(clock, "time", quiet, 0.0, core=0)
        fn(x)
        assert counter.frame_count == 1  # no recompile in the timing slot

        torch._dynamo.reset()
        torch.set_num_threads(2)
        counter = CompileCounter()
        fn = torch.compile(lambda t: t.cos() + 1, backend=counter)
        fn(x)
        torch.set_num_threads(1)  # what the time gate used to do
        fn(x)
        assert counter.frame_count == 2  # why: torch recompiles on the changed thread count
    finally:
        torch.set_num_threads(before)
        torch._dynamo.reset()


def test_fastest_core_is_chosen_by_the_probe_only_where_asked(monkeypatch):
    """``COMPILELAB_TIMING_CORE=fastest``: each allowed CPU probed once, pinned there, the lowest
    reading wins; junk readings are skipped; otherwise the run's core stands."""
    pinned: list[set[int]] = []
    monkeypatch.setattr(placement, "_allowed", lambda: {3})  # pinned at the gate already
    monkeypatch.setattr(placement.os, "sched_setaffinity", lambda pid, cpus: pinned.append(cpus))
    speeds = {0: 0.93, 1: 0.82, 2: float("nan"), 3: 0.95}
    probe = lambda: speeds[next(iter(pinned[-1]))]  # noqa: E731
    monkeypatch.delenv(placement.CHOICE_ENV, raising=False)
    assert placement.fastest(3, probe, {0, 1, 2, 3}) == (3, {}) and pinned == []
    monkeypatch.setenv(placement.CHOICE_ENV, "fastest")
    core, read = placement.fastest(3, probe, {0, 1, 2, 3})
    assert core == 1 and read == {0: 0.93, 1: 0.82, 3: 0.95}  # NaN left out
    assert pinned == [{0}, {1}, {2}, {3}]
    assert placement.fastest(None, probe, {0, 1, 2, 3}) == (None, {})  # not pinned: no choice
    speeds.update({0: -1.0, 1: "x", 2: float("inf"), 3: 0.0})
    assert placement.fastest(3, probe, {0, 1, 2, 3}) == (3, {})  # nothing read: the run's core


def test_a_chosen_core_travels_in_the_process_record():
    from contract.results import ProcessResult

    proc = ProcessResult.from_json({"core_probe_us": {"0": 0.93, "15": 0.82, "3": "x", 4: 1.0,
                                                      "5": -2.0, "6": float("nan")}})
    assert dict(proc.core_probe_us) == {"0": 0.93, "15": 0.82}
    assert ProcessResult.from_json({"core_probe_us": [1, 2]}).core_probe_us is None
    assert proc.to_json()["core_probe_us"] == {"0": 0.93, "15": 0.82}


@pytest.mark.skipif(not hasattr(os, "sched_setaffinity"), reason="Linux only")
def test_the_choice_probes_every_cpu_the_process_was_given_after_it_pinned(monkeypatch):
    """The child's order: CPUs read at start, kept off the run's core, pinned at the gate, then
    the choice: every given CPU is probed, not only the one it is pinned to."""
    import multiprocessing as mp

    cpus = sorted(os.sched_getaffinity(0))
    if len(cpus) < 2:
        pytest.skip("one CPU")
    monkeypatch.setenv(placement.CHOICE_ENV, "fastest")

    def child(q):
        given, core = placement.allowed(), max(os.sched_getaffinity(0))
        placement.keep_off(core)
        placement.pin(core)
        probe = lambda: 1.0 + sorted(os.sched_getaffinity(0))[0]  # noqa: E731  CPU 0 fastest
        q.put(placement.fastest(core, probe, given))

    q = mp.get_context("fork").Queue()
    p = mp.get_context("fork").Process(target=child, args=(q,))
    p.start()
    chosen, read = q.get(timeout=30)
    p.join(30)
    assert sorted(read) == cpus and chosen == cpus[0]


@pytest.mark.parametrize("value,expected", [("fastest", "fastest"), (" FASTEST\n", "fastest"),
                                            ("", "last"), ("1", "last"), ("yes", "last"),
                                            ("fastest;rm -rf /", "last"), ("\x00", "last")])
def test_the_choice_reads_only_fastest_from_the_environment(monkeypatch, value, expected):
    monkeypatch.setenv(placement.CHOICE_ENV, value) if "\x00" not in value else \
        monkeypatch.setattr(placement.os, "environ", {placement.CHOICE_ENV: value})
    assert placement.choice() == expected


def test_the_choice_survives_junk_cpus_and_probes(monkeypatch):
    """CPUs that are not small ints are left out; a probe that raises anything or returns a bool
    or an int beyond a float is not chosen (the attacker's pass of 2026-12-07)."""
    pinned: list[set[int]] = []
    monkeypatch.setattr(placement.os, "sched_setaffinity", lambda pid, cpus: pinned.append(cpus))
    monkeypatch.setenv(placement.CHOICE_ENV, "fastest")
    answers = {0: True, 2: 10 ** 400, 3: 0.9, 4: KeyError("x"), 5: RuntimeError("cuda")}

    def probe():
        got = answers[next(iter(pinned[-1]))]
        if isinstance(got, Exception):
            raise got
        return got

    core, read = placement.fastest(5, probe, {0, 2, 3, 4, "4", None, True, -1, 1 << 70, 7.5})
    assert core == 3 and read == {3: 0.9}
    assert pinned == [{0}, {2}, {3}, {4}, {5}]  # True (CPU 1 by value) is not a CPU number


def test_a_process_record_with_an_int_beyond_a_float_keeps_the_rest():
    from contract.results import ProcessResult

    proc = ProcessResult.from_json({"core_probe_us": {"3": 10 ** 400, "4": 0.9},
                                    "host_probe": {"module_call_us": 10 ** 400},
                                    "started_at": 10 ** 400})
    assert dict(proc.core_probe_us) == {"4": 0.9} and dict(proc.host_probe) == {}
    assert proc.started_at is None
