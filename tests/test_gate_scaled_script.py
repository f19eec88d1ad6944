"""acceptance/gate_scaled.py: identical runs pass the gate, latencies x1.10 are called."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from gate_support import finished_run, spread

from storage import open_database

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "acceptance"))
import gate_scaled  # noqa: E402


def test_identical_runs_pass_and_scaled_ones_are_called(tmp_path, capsys):
    url = f"sqlite:///{tmp_path / 'g.db'}"
    db = open_database(url)
    for seed in range(3):
        finished_run(db, spread(2.0, 0.02, k=4, seed=seed), tags=("rep",))
    assert gate_scaled.main(["--db", url, "--tag", "rep"]) == 0
    out = capsys.readouterr().out
    assert "identical: judged right in 6 of 6" in out and "x1.1: judged right in 6 of 6" in out


def test_a_factor_inside_the_noise_is_reported_as_judged_wrongly(tmp_path, capsys):
    url = f"sqlite:///{tmp_path / 'g.db'}"
    db = open_database(url)
    for seed in range(2):
        finished_run(db, spread(2.0, 0.3, k=2, seed=seed), tags=("rep",))
    assert gate_scaled.main(["--db", url, "--tag", "rep", "--factor", "1.02"]) == 1
    assert "WRONG" in capsys.readouterr().out


def test_scaling_touches_compiled_variants_only():
    run = {"variants": [{"variant": "eager", "median_ms": 2.0, "speedup": 1.0},
                        {"variant": "default", "median_ms": 1.0, "speedup": 2.0,
                         "speedup_ci_low": 1.8, "speedup_ci_high": 2.2,
                         "process_speedups": [2.0, 2.2]}]}
    got = gate_scaled.scaled(run, 1.25)
    assert got["variants"][0] == run["variants"][0]
    d = got["variants"][1]
    assert d["median_ms"] == 1.25 and d["speedup"] == 1.6 and d["process_speedups"] == pytest.approx([1.6, 1.76])
    assert run["variants"][1]["speedup"] == 2.0  # the stored run is left alone
