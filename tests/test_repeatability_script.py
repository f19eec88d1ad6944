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
