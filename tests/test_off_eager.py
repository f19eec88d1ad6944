"""A process whose paired eager read far off the others' (issue 36): stored per process, named
by the verdict's disagreement caution and listed by show."""

from __future__ import annotations

import pytest

from engine.analysis import variant_stats
from engine.analysis.disagreement import off_eager_process
from engine.analysis.show import process_lines


def _process(eager_ms: float, compiled_ms: float) -> dict:
    return {"block": 10, "samples_ms": [compiled_ms] * 30, "eager_samples_ms": [eager_ms] * 30}


def test_each_process_eager_is_stored_beside_its_speedup():
    result = {"variant": "reduce-overhead", "status": "ok",
              "processes": [_process(4.0, 1.3), _process(4.2, 1.3), _process(7.6, 1.6),
                            _process(4.3, 1.3)]}
    stats: dict = {}
    variant_stats._compiled_stats(stats, result, 4.5, None, None, 0.95)
    assert stats["process_eager_ms"] == pytest.approx([4.0, 4.2, 7.6, 4.3])
    assert len(stats["process_speedups"]) == 4


def test_the_verdict_names_the_process_whose_host_slowed():
    row = {"variant": "reduce-overhead", "process_eager_ms": [4.37, 4.41, 7.57, 4.23],
           "process_speedups": [3.34, 3.38, 4.78, 3.27]}
    text = off_eager_process(row)
    assert text.startswith("process 3 of 4 read eager at 7.57 ms")
    assert "4.23 ms to 4.41 ms" in text and "4.78" in text


@pytest.mark.parametrize("eager,speeds", [
    ([4.0, 4.2, 5.0, 4.3], [3.0, 3.1, 3.4, 3.0]),  # 5.0 / 4.2 < 1.25: not off
    ([4.0, 8.0], [3.0, 5.0]),  # two processes: no "others" to hold it against
    ([4.0, 4.2, "8.0", 4.3], [3.0, 3.1, 5.0, 3.0]),  # a hand-edited row
    ([4.0, 4.2, float("inf"), 4.3], [3.0, 3.1, 5.0, 3.0]),
    ([4.0, 4.2, 8.0, -4.3], [3.0, 3.1, 5.0, 3.0]),
    ([4.0, 4.2, 8.0], [3.0, 3.1, 5.0, 3.0]),  # lengths differ
    ("4.0", [3.0]), (None, None)])
def test_nothing_is_named_without_a_clear_outlier_or_with_hostile_figures(eager, speeds):
    assert off_eager_process({"process_eager_ms": eager, "process_speedups": speeds}) is None


def test_show_lists_each_process_eager_and_skips_what_is_not_a_time():
    base = {"variant": "reduce-overhead", "process_speedups": [3.3, 4.8, 3.2],
            "stop_reason": "interval excludes 1.0"}
    lines = process_lines([{**base, "process_eager_ms": [4.37, 7.57, 4.23]}])
    assert "    eager in each: 4.3700, 7.5700, 4.2300 ms" in lines
    for bad in (["4.3", 7.5, 4.2], [4.3, float("nan"), 4.2], "x", None):
        assert not any("eager in each" in x for x in
                       process_lines([{**base, "process_eager_ms": bad}]))


def test_the_named_process_carries_its_probes_before_and_after_its_window():
    procs = [{"host_probe": {"module_call_us": 0.8}, "host_probe_after": {"module_call_us": 0.8}}
             for _ in range(4)]
    procs[2] = {"host_probe": {"module_call_us": 0.81}, "host_probe_after": {"module_call_us": 1.42}}
    row = {"process_eager_ms": [4.37, 4.41, 7.57, 4.23],
           "process_speedups": [3.34, 3.38, 4.78, 3.27], "processes": procs}
    assert "its host probe read a module call at 0.81 µs before the window and 1.42 µs after" \
        in off_eager_process(row)
    for broken in (procs[:3], [*procs[:2], "x", procs[3]],
                   [*procs[:2], {"host_probe": {"module_call_us": 0.8}}, procs[3]]):
        text = off_eager_process({**row, "processes": broken})
        assert text.startswith("process 3 of 4") and "host probe read" not in text


def test_a_measuring_process_probes_the_host_after_its_window_too():
    from engine.measure import child
    from engine.measure.rounds import timing_budget
    from engine.measure.timing import Timer

    budget = timing_budget({"min_samples": 4, "min_time_s": 0.0, "max_time_s": 0.2})
    proc = child._measure_process({}, Timer("cpu"), {"eager": lambda: None,
                                                     "variant": lambda: None},
                                  budget, child.PhaseClock(), lambda *a, **k: None, "cold")
    assert set(proc["host_probe_after"]) == {"launch_us", "module_call_us"}
    assert all(v > 0 for v in proc["host_probe_after"].values())


@pytest.mark.parametrize("value,want", [(2, 2.0), (0.5, 0.5), (0, None), (-1.0, None),
                                        (float("nan"), None), (float("inf"), None),
                                        ("3.0", None), (True, None), (None, None)])
def test_positive_takes_finite_numbers_above_zero_only(value, want):
    from contract.fmt import positive

    assert positive(value) == want


def test_the_cause_is_read_about_the_process_whose_speedup_stands_apart():
    """A run on a noisy H100 (BERT-base default, 2026-12-07): process 1 timed on a slow host
    (eager 7.79 ms) but its speedup sat with the others'; process 2's compiled call read 11.8 ms
    while its eager held, and its 0.36x was the one apart. The cause names process 2."""
    from engine.analysis.disagreement import cause, off_compiled_process

    procs = [{"autotune_draw": d, "host_probe": {"module_call_us": b},
              "host_probe_after": {"module_call_us": a}}
             for d, b, a in [("drawn", 1.57, 1.72), ("replayed", 0.90, 0.80),
                             ("redrawn", 0.82, 0.80), ("redrawn", 0.90, 0.87)]]
    row = {"variant": "default", "process_eager_ms": [7.794, 4.274, 4.52, 4.40],
           "process_speedups": [1.571, 0.362, 1.485, 1.442], "processes": procs}
    assert off_eager_process(row) is None  # process 1's eager is off, its speedup is not
    text = cause(row)
    assert text.startswith("Cause: process 2 of 4 read the compiled call at 11.8 ms per call")
    assert "while its eager held (4.27 ms" in text and "speedup 0.36× there" in text
    assert "0.90 µs before the window and 0.80 µs after" in text
    assert "the cold compile's kernel choices, replayed" in text and "not the host" in text
    # eager off in the same process as the speedup: the host's cause, not the compiled one
    host = {**row, "process_eager_ms": [4.37, 4.41, 7.57, 4.23],
            "process_speedups": [3.34, 3.38, 4.78, 3.27]}
    assert off_compiled_process(host) is None
    assert cause(host).startswith("Cause: process 3 of 4 read eager at 7.57 ms")
    # nothing stands apart by 1.25x: no measured cause, the likely one from the profile
    assert cause({**row, "process_speedups": [1.5, 1.4, 1.45, 1.48],
                  "process_eager_ms": [4.3, 4.4, 4.5, 4.4]}).startswith("Likely cause: ")


@pytest.mark.parametrize("far_dev,words", [
    (9.10, "its kernels themselves took another time on the device (9.1 ms against"),
    (0.92, "its kernels took the same device time as the others' (0.92 ms against 0.88 ms "
           "to 0.95 ms a call with the host queued ahead), so the host work of its compiled "
           "call"),
])
def test_the_compiled_cause_says_whether_the_device_or_the_host_ran_slow(far_dev, words):
    """Each process's device time with the host queued ahead (engine/measure/device_time.py)
    tells slow kernels from slow host work for the compiled call; hostile or missing device
    figures fall back on the sentence without them."""
    from engine.analysis.disagreement import cause

    devs = [0.88, far_dev, 0.95, 0.90]
    procs = [{"device_ms": {"variant": d, "eager": 0.85}} for d in devs]
    row = {"variant": "default", "process_eager_ms": [4.30, 4.274, 4.52, 4.40],
           "process_speedups": [1.571, 0.362, 1.485, 1.442], "processes": procs}
    text = cause(row)
    assert text.startswith("Cause: process 2 of 4 read the compiled call at 11.8 ms")
    assert words in text and "not the host" not in text.split("kernels")[0]
    if far_dev < 1:
        assert "ran slower in that process than in the others while its eager's did not" in text
        # the same process reading its compiled call fast: said as faster, not slower
        fast = {**row, "process_speedups": [1.571, 3.9, 1.485, 1.442]}
        assert "ran faster in that process than in the others" in cause(fast)
    for bad in ({"variant": "9"}, {"variant": float("nan")}, {"variant": -1.0}, "x", None,
                {"eager": 0.9}):
        hostile = [dict(p) for p in procs]
        hostile[1]["device_ms"] = bad
        assert "the compiled code itself ran at another speed in that process, not the host" \
            in cause({**row, "processes": hostile})
    one_other = [dict(p) for p in procs]
    for p in one_other[2:]:
        p.pop("device_ms")
    assert "compiled code itself ran at another speed" in cause({**row, "processes": one_other})


def test_device_time_keeps_only_samples_taken_with_the_host_ahead():
    from engine.measure import device_time

    assert device_time.summarise([1.0, 3.0, 2.0]) == 2.0
    assert device_time.summarise([1.0, 2.0]) is None  # two: no figure
    assert device_time.summarise([1.0, -1.0, 2.0]) is None
    assert not device_time.available("cpu")


def test_a_process_record_keeps_its_device_time_and_drops_what_is_not_a_time():
    from contract.results import ProcessResult

    got = ProcessResult.from_json({"device_ms": {"variant": 1.5, "eager": "x", "o": -2}})
    assert dict(got.device_ms) == {"variant": 1.5}
    assert got.to_json()["device_ms"] == {"variant": 1.5}
    assert ProcessResult.from_json({"device_ms": [1, 2]}).device_ms is None
    from engine.measure import child
    from engine.measure.rounds import timing_budget
    from engine.measure.timing import Timer

    budget = timing_budget({"min_samples": 4, "min_time_s": 0.0, "max_time_s": 0.2})
    proc = child._measure_process({}, Timer("cpu"), {"variant": lambda: None}, budget,
                                  child.PhaseClock(), lambda *a, **k: None, "cold")
    assert proc["device_ms"] is None  # off a GPU: no figure, never a guess


def test_show_lists_each_process_device_time_where_taken():
    row = {"variant": "default", "process_speedups": [1.5, 0.4], "stop_reason": "x",
           "processes": [{"device_ms": {"variant": 0.9}}, {"device_ms": {"variant": "9"}}]}
    lines = process_lines([row])
    assert "    device time in each (host queued ahead): 0.9000, - ms" in lines
    assert not any("device time" in ln for ln in process_lines([{**row, "processes": [{}, {}]}]))


class _FakeEvent:
    """A CUDA event whose ``query`` answers from a script: False = the device was still
    spinning when the host had queued the call (the host got ahead)."""

    def __init__(self, script: list[bool]) -> None:
        self.script = script

    def record(self, stream=None) -> None:
        pass

    def query(self) -> bool:
        return self.script.pop(0)

    def synchronize(self) -> None:
        pass

    def elapsed_time(self, other) -> float:
        return 1.25


@pytest.mark.parametrize("script,want,spins", [
    ([False] * 5, 1.25, 5),  # ahead every time: five samples
    ([True, False, False, False, False, False], 1.25, 6),  # one miss: a longer spin, then ahead
    ([True, True, True], None, 3),  # a call that waits inside: three spins, then no figure
])
def test_device_time_counts_only_calls_queued_ahead_and_gives_up_on_a_waiting_call(
        monkeypatch, script, want, spins):
    import torch

    from engine.measure import device_time

    sleeps: list[int] = []
    monkeypatch.setattr(device_time, "_cycles_per_ms", lambda stream: 1000.0)
    monkeypatch.setattr(torch.cuda, "current_stream", lambda: None)
    monkeypatch.setattr(torch.cuda, "synchronize", lambda: None)
    monkeypatch.setattr(torch.cuda, "_sleep", sleeps.append, raising=False)
    first_missed = script[0]
    events = iter([_FakeEvent(script), _FakeEvent([])])
    monkeypatch.setattr(torch.cuda, "Event", lambda enable_timing: next(events))
    assert device_time.queued_ms(lambda: None, host_ms=4.0) == want
    assert len(sleeps) == spins and sleeps[0] == 9000  # 2 x 4 ms + 1 ms, at 1000 cycles a ms
    if first_missed:
        assert sleeps[1] == 18000  # doubled after the miss


def test_a_device_time_that_raises_leaves_the_process_its_timing(monkeypatch):
    from engine.measure import child, device_time
    from engine.measure.rounds import timing_budget
    from engine.measure.timing import Timer

    def boom(fn, host_ms):
        raise RuntimeError("CUDA error: something")

    monkeypatch.setattr(device_time, "available", lambda device: True)
    monkeypatch.setattr(device_time, "queued_ms", boom)
    budget = timing_budget({"min_samples": 4, "min_time_s": 0.0, "max_time_s": 0.2})
    proc = child._measure_process({}, Timer("cpu"), {"variant": lambda: None}, budget,
                                  child.PhaseClock(), lambda *a, **k: None, "cold")
    assert proc["device_ms"] == {} and proc["samples_ms"]
