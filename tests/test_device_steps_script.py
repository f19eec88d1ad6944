"""acceptance/device_steps.py: steps in order within a budget, skipped or stopped, said so."""

from __future__ import annotations

import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "acceptance"))
import device_steps  # noqa: E402


def test_steps_run_in_order_and_one_that_does_not_fit_is_skipped(tmp_path, capsys):
    log = tmp_path / "steps.log"
    rc = device_steps.main(["--budget-s", "30", "--log", str(log),
                            f"1={sys.executable} -c print('first')",
                            f"1={sys.executable} -c raise SystemExit(1)",
                            f"100={sys.executable} -c print('never')"])
    out = capsys.readouterr().out
    assert rc == 0  # exit 1 is a script's "a check failed", which the log shows
    assert out.index("first") < out.index("exit 1 in")
    assert "never" not in out.replace("-c print('never')", "")
    assert "SKIPPED (estimate 100 s" in out and log.read_text().endswith(out[out.index("\n====="):])


def test_a_step_that_overruns_is_stopped_with_what_it_started(tmp_path, capsys):
    started = time.monotonic()
    rc = device_steps.main(["--budget-s", "1.5", "--log", str(tmp_path / "l"),
                            "0=sh -c 'sleep 30 & sleep 30'"])
    assert rc == 2 and time.monotonic() - started < 10
    assert "exit 124" in capsys.readouterr().out


def test_a_step_must_say_its_estimate():
    import argparse

    import pytest

    for bad in ("python x.py", "-3=python x.py", "5=", "x=python"):
        with pytest.raises(argparse.ArgumentTypeError):
            device_steps.parse_step(bad)
    assert device_steps.parse_step("90=python x.py --a b") == (90.0, "python x.py --a b")
