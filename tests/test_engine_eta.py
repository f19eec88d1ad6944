"""The run's time-left estimate (engine/eta.py) on a fake clock."""

from __future__ import annotations

import pytest

from engine.eta import Eta, describe


class Clock:
    def __init__(self) -> None:
        self.t = 0.0

    def __call__(self) -> float:
        return self.t


def test_estimate_by_kind_and_time_based_fraction():
    c = Clock()
    eta = Eta(eager=1, cold=2, warm=4, clock=c)
    eta.start("eager")
    assert eta.seconds_left() is None  # nothing finished: no guess
    c.t = 10.0
    eta.finish()
    # cold guessed at 3 eager processes (30 s), warm at half a cold one (15 s)
    assert eta.seconds_left() == pytest.approx(2 * 30 + 4 * 15)
    eta.start("cold")
    c.t = 50.0
    eta.finish()  # the real cold process took 40 s: warm is now guessed at 20 s
    assert eta.seconds_left() == pytest.approx(40 + 4 * 20)
    eta.start("cold")
    c.t = 60.0  # 10 s into the second cold process
    assert eta.seconds_left() == pytest.approx(30 + 4 * 20)
    assert eta.fraction() == pytest.approx(60 / (60 + 110))
    c.t = 200.0  # a process that overruns its estimate never makes the estimate negative
    assert eta.seconds_left() >= 4 * 20


def test_adaptive_processes_change_what_is_left():
    c = Clock()
    eta = Eta(eager=0, cold=0, warm=2, clock=c)
    eta.start("warm")
    c.t = 5.0
    eta.finish()
    eta.set_left("warm", 3)
    assert eta.seconds_left() == pytest.approx(15.0)


@pytest.mark.parametrize(("seconds", "text"), [(None, ""), (0.2, "about 1 s left"),
                                               (42, "about 42 s left"), (400, "about 7 min left")])
def test_describe(seconds, text):
    assert describe(seconds) == text
