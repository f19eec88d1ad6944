"""Waiting for the host's usual speed before timing (engine/measure/host_settle.py), its record in
the typed contract, and the line ``show`` prints about it."""

from __future__ import annotations

import json

import pytest

from contract.results import ProcessResult
from engine.analysis.show import settle_line
from engine.measure import host_settle


class FakeHost:
    """Module-call readings in turn (the last repeats), on a clock that sleeping moves."""

    def __init__(self, readings: list[float]) -> None:
        self.readings, self.now, self.slept = list(readings), 0.0, []

    def probe(self) -> dict[str, float]:
        self.now += 0.01  # a probe takes about 10 ms
        value = self.readings.pop(0) if len(self.readings) > 1 else self.readings[0]
        return {"launch_us": 7.0, "module_call_us": value}

    def sleep(self, s: float) -> None:
        self.slept.append(s)
        self.now += s

    def settle(self, path):
        return host_settle.settle(self.probe, sleep=self.sleep, clock=lambda: self.now, path=path)


def test_the_first_process_sets_the_reference_and_does_not_wait(tmp_path):
    path = tmp_path / "host_settle.json"
    host = FakeHost([1.9])
    probe, rec = host.settle(path)
    assert probe["module_call_us"] == 1.9 and host.slept == []
    assert rec["reference_us"] is None and rec["slow"] is False and rec["probes"] == 1
    assert json.loads(path.read_text())["fastest_us"] == 1.9


def test_a_slow_process_waits_until_the_host_reads_fast_again(tmp_path):
    path = tmp_path / "host_settle.json"
    host_settle.write_shared(path, 0.8, 0.0)
    host = FakeHost([1.6, 1.7, 1.5, 0.85])
    probe, rec = host.settle(path)
    assert probe["module_call_us"] == 0.85  # the probe recorded is the one timing follows
    assert rec == {"reference_us": 0.8, "waited_s": pytest.approx(0.78, abs=0.005),
                   "probes": 4, "slow": False}
    assert len(host.slept) == 3
    fastest, waited = host_settle.read_shared(path)
    assert fastest == 0.8 and waited == pytest.approx(0.78, abs=0.005)


def test_a_run_that_began_slow_still_waits_where_the_core_choice_read_fast(tmp_path):
    """The H100 run of 2026-12-07 whose first processes all read ~1.9-2.0 µs: the reference was
    their own slow reading and no later slow process waited. A reading of the core choice
    (``seen_us``) lowers the reference; junk there changes nothing."""
    path = tmp_path / "host_settle.json"
    host_settle.write_shared(path, 1.97, 0.0)
    host = FakeHost([2.03, 1.9, 0.95])
    probe, rec = host_settle.settle(host.probe, sleep=host.sleep, clock=lambda: host.now,
                                    path=path, seen_us=0.93)
    assert rec["reference_us"] == 0.93 and probe["module_call_us"] == 0.95 and len(host.slept) == 2
    assert host_settle.read_shared(path)[0] == 0.93  # later processes wait against it too
    for junk in (None, -1.0, float("nan"), "0.5", True, 10**400):
        host_settle.write_shared(path, 1.97, 0.0)
        h = FakeHost([2.03])
        _, rec = host_settle.settle(h.probe, sleep=h.sleep, clock=lambda h=h: h.now, path=path,
                                    seen_us=junk)
        assert rec["reference_us"] == 1.97 and h.slept == []


def test_a_fast_reading_lowers_the_reference_for_later_processes(tmp_path):
    path = tmp_path / "host_settle.json"
    host_settle.write_shared(path, 1.0, 0.0)
    FakeHost([0.7]).settle(path)
    assert host_settle.read_shared(path)[0] == 0.7
    _, rec = FakeHost([1.0]).settle(path)  # 1.0 > 1.25 * 0.7: slow now, against the new one
    assert rec["reference_us"] == 0.7 and rec["slow"] is True


def test_a_host_that_stays_slow_costs_at_most_the_process_wait(tmp_path):
    path = tmp_path / "host_settle.json"
    host_settle.write_shared(path, 0.8, 0.0)
    host = FakeHost([2.0])
    _, rec = host.settle(path)
    assert rec["slow"] is True
    assert rec["waited_s"] <= host_settle.PROCESS_WAIT_S
    assert rec["waited_s"] > host_settle.PROCESS_WAIT_S - 2 * host_settle.STEP_S


def test_the_run_stops_waiting_once_its_processes_waited_enough(tmp_path):
    path = tmp_path / "host_settle.json"
    host_settle.write_shared(path, 0.8, host_settle.RUN_WAIT_S - 0.1)
    host = FakeHost([2.0])
    _, rec = host.settle(path)
    assert host.slept == [] and rec["slow"] is True and rec["probes"] == 1


@pytest.mark.parametrize("content", ["not json", "[1, 2]", '{"fastest_us": -1, "waited_s": "x"}',
                                     '{"fastest_us": "0.8", "waited_s": NaN}', "{}"])
def test_a_shared_file_that_is_not_ours_counts_as_none(tmp_path, content):
    path = tmp_path / "host_settle.json"
    path.write_text(content)
    host = FakeHost([2.0])
    _, rec = host.settle(path)
    assert rec["reference_us"] is None and host.slept == []
    assert host_settle.read_shared(path) == (2.0, 0.0)  # and it is written whole again


def test_without_a_run_folder_each_process_stands_alone(monkeypatch):
    monkeypatch.delenv("COMPILELAB_RUN_DIR", raising=False)
    probe, rec = host_settle.settle(lambda: {"module_call_us": 1.0})
    assert probe == {"module_call_us": 1.0} and rec["reference_us"] is None


def test_switch(monkeypatch):
    monkeypatch.delenv(host_settle.ENV, raising=False)
    assert host_settle.enabled()
    monkeypatch.setenv(host_settle.ENV, "0")
    assert not host_settle.enabled()


def test_the_contract_keeps_a_settle_record_and_drops_what_does_not_fit():
    good = ProcessResult.from_json({"host_settle": {"waited_s": 1.5, "reference_us": 0.8,
                                                    "probes": 7, "slow": False}})
    assert dict(good.host_settle) == {"waited_s": 1.5, "reference_us": 0.8, "probes": 7,
                                      "slow": False}
    assert good.to_json()["host_settle"]["waited_s"] == 1.5
    bad = ProcessResult.from_json({"host_settle": {"waited_s": -3, "reference_us": "0.8",
                                                   "probes": True, "slow": "yes",
                                                   "extra": "<b>x</b>"}})
    assert dict(bad.host_settle) == {"waited_s": None, "reference_us": None, "probes": None,
                                     "slow": None}
    assert ProcessResult.from_json({"host_settle": [1]}).host_settle is None


def _rows(*records):
    return [{"variant": "default", "processes": [{"host_settle": r} for r in records]}]


def test_show_says_what_waiting_did_and_nothing_when_nothing_happened():
    quiet = {"waited_s": 0.0, "reference_us": 0.8, "probes": 1, "slow": False}
    assert settle_line(_rows(quiet, quiet)) is None
    assert settle_line([{"variant": "eager", "processes": None}]) is None
    line = settle_line(_rows(quiet, {"waited_s": 1.2, "probes": 5, "slow": False},
                             {"waited_s": 5.0, "probes": 20, "slow": True}))
    assert "2 of 3 processes waited 6.2 s" in line
    assert "1 timed while it still read slow" in line and "1.25x" in line


def test_a_pinned_process_settles_before_its_rounds_and_records_it(tmp_path, monkeypatch):
    """The child's own path (engine/measure/child.py): a pinned process probes through
    host_settle, keeps the record beside its probe, and the wait is a phase of its own."""
    from engine.measure import child
    from engine.measure.rounds import timing_budget
    from engine.measure.timing import Timer

    monkeypatch.setenv("COMPILELAB_RUN_DIR", str(tmp_path))
    monkeypatch.delenv(host_settle.ENV, raising=False)
    host_settle.write_shared(tmp_path / "host_settle.json", 1e-6, 0.0)  # every probe reads slow
    monkeypatch.setattr(host_settle, "PROCESS_WAIT_S", 0.6)
    budget = timing_budget({"min_samples": 4, "min_time_s": 0.0, "max_time_s": 0.2})
    clock = child.PhaseClock()

    def run(pinned: bool) -> dict:
        return child._measure_process({}, Timer("cpu"), {"eager": lambda: None,
                                                         "variant": lambda: None},
                                      budget, clock, lambda *a, **k: None, "cold", pinned=pinned)

    proc = run(pinned=True)
    rec = proc["host_settle"]
    assert rec["slow"] is True and 0.2 < rec["waited_s"] <= 0.6 and rec["probes"] >= 2
    assert rec["reference_us"] == 1e-6 and proc["host_probe"]["module_call_us"] > 0
    assert [p["name"] for p in clock.phases][:2] == ["host settle", "measure"]
    assert run(pinned=False)["host_settle"] is None  # a CPU run's process is not pinned
    monkeypatch.setenv(host_settle.ENV, "0")
    assert run(pinned=True)["host_settle"] is None


def test_show_names_processes_whose_host_slowed_inside_the_window():
    from engine.analysis.show import moved_line

    def proc(before, after):
        return {"host_probe": {"module_call_us": before},
                "host_probe_after": {"module_call_us": after}}

    rows = [{"variant": "eager", "processes": [proc(0.8, 0.85)]},
            {"variant": "reduce-overhead", "processes": [proc(0.8, 0.82), proc(0.81, 1.42),
                                                         {"host_probe": "x"}, "junk"]}]
    line = moved_line(rows)
    assert "in 1 of 3 processes" in line and "reduce-overhead 0.81 -> 1.42 µs" in line
    assert moved_line([{"variant": "eager", "processes": [proc(0.8, 0.9)]}]) is None
    assert moved_line([{"variant": "eager", "processes": None}]) is None
