"""acceptance/repeatability.py's table: pairs of runs of one config by tag, the shared pair test
(engine/analysis/repeat.py); nothing compared is said as such, not as a pass."""

from __future__ import annotations

import sys
from pathlib import Path

from gate_support import finished_run, spread

from storage import open_database

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "acceptance"))
import repeatability  # noqa: E402


def test_no_runs_with_the_tag_is_not_a_pass(tmp_path, capsys):
    url = f"sqlite:///{tmp_path / 'r.db'}"
    open_database(url)
    assert repeatability.table(url, {"bert": "nothing-here"}) == 2
    assert "nothing compared" in capsys.readouterr().out


def test_runs_of_one_config_are_compared_pair_by_pair(tmp_path, capsys):
    url = f"sqlite:///{tmp_path / 'r.db'}"
    db = open_database(url)
    for seed in range(3):
        finished_run(db, spread(2.0, 0.02, k=4, seed=seed), tags=("rep",))
    rc = repeatability.table(url, {"x": "rep"})
    out = capsys.readouterr().out
    assert out.count(" pair ") == 3 and rc in (0, 1)
    assert (rc == 0) == ("all 3 pairs pass" in out)
    finished_run(db, spread(3.0, 0.02, k=4, seed=9), tags=("rep",))  # far from the others
    assert repeatability.table(url, {"x": "rep"}) == 1
    assert "FAIL" in capsys.readouterr().out


def test_the_standing_rules_point_check_counts_every_ordered_pair():
    """Each run's interval against each other run's point: the H200's three BERT-base
    reduce-overhead runs (2026-12-07) hold 3 of 6; junk counts as a miss, never a hold."""
    rows = [{"run_id": 1, "speedup": 3.78, "speedup_ci_low": 3.76, "speedup_ci_high": 3.81},
            {"run_id": 2, "speedup": 3.96, "speedup_ci_low": 3.58, "speedup_ci_high": 4.39},
            {"run_id": 3, "speedup": 3.42, "speedup_ci_low": 2.86, "speedup_ci_high": 4.09}]
    got, misses = repeatability.points_held(rows)
    assert got == 3 and misses == ["3.96 (run 2) outside run 1's [3.76, 3.81]",
                                   "3.42 (run 3) outside run 1's [3.76, 3.81]",
                                   "3.42 (run 3) outside run 2's [3.58, 4.39]"]
    junk = [rows[0], {"run_id": 9, "speedup": "x", "speedup_ci_low": None,
                      "speedup_ci_high": float("nan")}]
    got, misses = repeatability.points_held(junk)
    assert got == 0 and len(misses) == 2 and all("(no usable point or interval)" in m for m in misses)
