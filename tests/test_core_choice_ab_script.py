"""acceptance/core_choice_ab.py's report: per run, where each process timed and what its probe
read; per arm the median half-width and the pairs that repeat; a file that is not a run
database is said, not a crash."""

from __future__ import annotations

import json
import sqlite3
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "acceptance"))

import core_choice_ab  # noqa: E402


def _db(path: Path, runs: list[tuple[float, float, float]]) -> None:
    path.parent.mkdir(parents=True)
    con = sqlite3.connect(path)
    con.execute("CREATE TABLE runs (id INTEGER, created_at TEXT)")
    con.execute("CREATE TABLE variant_results (run_id INTEGER, variant TEXT, extra TEXT, "
                "speedup REAL, speedup_ci_low REAL, speedup_ci_high REAL, eager_median_ms REAL)")
    proc = {"timing_cpus": [7], "host_probe": {"module_call_us": 0.93},
            "host_probe_after": {"module_call_us": 2.01}}
    for i, (s, lo, hi) in enumerate(runs, 1):
        con.execute("INSERT INTO runs VALUES (?, ?)", (i, f"2026-12-07 16:0{i}:00"))
        con.execute("INSERT INTO variant_results VALUES (?, 'eager', '{}', 1, NULL, NULL, 4.3)",
                    (i,))
        con.execute("INSERT INTO variant_results VALUES (?, 'reduce-overhead', ?, ?, ?, ?, 4.3)",
                    (i, json.dumps({"processes": [proc]}), s, lo, hi))
    con.commit()
    con.close()


def test_report_per_arm(tmp_path, capsys):
    _db(tmp_path / "a" / "tta.db", [(3.38, 3.31, 3.46), (3.84, 3.72, 3.96), (3.40, 3.30, 3.50)])
    (tmp_path / "b").mkdir()
    (tmp_path / "b" / "tta.db").write_text("not sqlite")
    assert core_choice_ab.report([tmp_path]) == 0
    out = capsys.readouterr().out
    assert "3.38× ±2.2 %" in out and "7:0.93/2.01" in out
    # 3.38 and 3.40 hold each other's point; 3.84 is held by neither and holds neither
    assert ("reduce-overhead: median half-width 2.9 %, pairs that repeat 1 of 3, intervals "
            "holding the other's point 2 of 6") in out
    assert "is not a run database" in out


def test_report_pools_folders(tmp_path, capsys):
    """Two device commands' folders: each arm's runs pooled, every pair across them tested."""
    _db(tmp_path / "one" / "a" / "tta.db", [(3.38, 3.31, 3.46)])
    _db(tmp_path / "two" / "a" / "tta.db", [(3.40, 3.30, 3.50), (3.84, 3.72, 3.96)])
    assert core_choice_ab.report([tmp_path / "one", tmp_path / "two"]) == 0
    out = capsys.readouterr().out
    assert "== arm a (defaults): 3 runs ==" in out
    assert "pairs that repeat 1 of 3, intervals holding the other's point 2 of 6" in out
