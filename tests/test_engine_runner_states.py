"""The runner's loop over fake measuring processes that linger in each state: it returns only
once every process has exited and been folded in (a process that was still *settling*, its
first call done and its compile-worker pool being ended, was once left behind: the run then
lost its last warm-cache process, or its temporary folder was removed under it)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from engine.orchestrate import runner


class FakeGates:
    def __init__(self, child: FakeChild) -> None:
        self.child = child
        self.opened: set[str] = set()

    def arrived(self, name: str) -> bool:
        return name in self.child.reached

    def waiting(self, name: str) -> bool:
        return self.arrived(name) and name not in self.opened

    def open(self, name: str) -> bool:
        if not self.arrived(name):
            return False
        self.opened.add(name)
        return True


class FakeChild:
    """Moves one step per poll: prepare, (compile gate, compile, 'compiled' mark, several
    polls settling), time gate, timing, exit."""

    made: list[FakeChild] = []

    def __init__(self, spec: dict[str, Any], variant: str, phase: str, cache: Path,
                 root: Path, *, index: int = 0, gated: bool = True,
                 explain_ahead: bool = False) -> None:
        self.variant, self.phase, self.index = variant, phase, index
        self.explain_ahead = explain_ahead
        self.gates = FakeGates(self)
        self.reached: set[str] = set()
        self.polls = 0
        self.exited = False
        self.ended = None
        FakeChild.made.append(self)

    def poll(self) -> bool:
        self.polls += 1
        compiles = self.variant != "eager"
        if compiles and "compile" not in self.reached:
            self.reached.add("compile")
        elif compiles and "compile" in self.gates.opened and "compiled" not in self.reached:
            self.reached.add("compiled")
            self.settle_until = self.polls + 6  # lingers settling for a few ticks
        elif (not compiles or "compiled" in self.reached) and "time" not in self.reached:
            if not compiles or self.polls >= self.settle_until:
                self.reached.add("time")
        elif "time" in self.gates.opened:
            self.exited = True
        return self.exited

    def timed_out(self) -> bool:
        return False

    def reap_group(self) -> None:
        pass

    def parked(self, now: bool) -> None:
        pass

    def wait(self, timeout: float) -> bool:
        return self.poll()

    def progress(self) -> tuple[str, float] | None:
        return None

    def kill(self, why: str) -> None:
        self.ended = why
        self.exited = True

    def result(self) -> dict[str, Any]:
        proc = {"phase": self.phase, "samples_ms": [1.0, 1.1], "pipelined_ms": [1.0],
                "eager_samples_ms": [2.0, 2.1], "eager_pipelined_ms": [2.0], "pipeline_k": 2}
        out = {"variant": self.variant, "status": "ok", "processes": [proc],
               "samples_ms": proc["samples_ms"], "pipelined_ms": proc["pipelined_ms"],
               "eager_samples_ms": proc["eager_samples_ms"],
               "eager_pipelined_ms": proc["eager_pipelined_ms"], "warmup_ms": [5.0, 1.0, 1.0]}
        if self.phase == "warm_cache":
            out["first_call_warm_s"] = 0.5
        else:
            out["first_call_cold_s"] = 0.9
        return out


@pytest.mark.parametrize("concurrency", [1, 4])
def test_the_runner_waits_for_every_process_even_one_still_settling(monkeypatch, concurrency):
    FakeChild.made = []
    monkeypatch.setattr(runner, "ChildProcess", FakeChild)
    monkeypatch.setattr(runner.gates, "supported", lambda: True)
    monkeypatch.setattr(runner, "TICK_S", 0.0)
    spec = {"variants": ["eager", "default"], "processes": 3, "max_processes": 3,
            "concurrency": concurrency, "device": "cpu", "profile": False}
    results = runner.run_variants(spec)
    assert all(c.exited for c in FakeChild.made)
    default = next(r for r in results if r["variant"] == "default")
    assert len(default["processes"]) == 3


class FailingFurtherChild(FakeChild):
    """Processes from index 2 on fail at once, before the cold process has ended (on the H200
    a fork that could not initialise CUDA did: the run then ended with KeyError 'default')."""

    def poll(self) -> bool:
        if self.index >= 2:
            self.exited = True
            return True
        return super().poll()

    def result(self) -> dict[str, Any]:
        if self.index >= 2:
            return {"variant": self.variant, "status": "failed", "failure_kind": "error",
                    "error": "RuntimeError while building: Cannot re-initialize CUDA"}
        return super().result()


@pytest.mark.parametrize("concurrency", [4, 8])
def test_a_further_process_failing_before_the_cold_one_ends_is_a_result(monkeypatch,
                                                                        concurrency):
    FakeChild.made = []
    monkeypatch.setattr(runner, "ChildProcess", FailingFurtherChild)
    monkeypatch.setattr(runner.gates, "supported", lambda: True)
    monkeypatch.setattr(runner, "TICK_S", 0.0)
    spec = {"variants": ["eager", "default"], "processes": 3, "max_processes": 4,
            "concurrency": concurrency, "device": "cpu", "profile": False}
    results = runner.run_variants(spec)
    assert all(c.exited for c in FakeChild.made)
    default = next(r for r in results if r["variant"] == "default")
    assert default["status"] == "ok"
    assert len(default["processes"]) == 2  # the cold and the first warm-cache one kept
    assert default["process_errors"][0]["index"] == 2
    assert "Cannot re-initialize CUDA" in default["process_errors"][0]["error"]
    assert default["stats"]["stop_reason"] == "a measuring process failed"
