"""The engine on a GPU host that has only requirements-engine.txt: no pandas, plotly, streamlit.

Every subprocess here (CLI, worker and the measuring children they start) runs with an import
hook that makes those three unimportable, as if they were not installed.
"""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest
from conftest import FAST, run_cli

BLOCKER = '''
# As if pandas, plotly and streamlit were not installed: the path finder does not see them, so
# importlib.util.find_spec returns None and an import raises ModuleNotFoundError.
import sys
from importlib.machinery import PathFinder
BLOCKED = {"pandas", "plotly", "streamlit"}
class _Hide(PathFinder):
    @classmethod
    def find_spec(cls, name, path=None, target=None):
        if name.split(".")[0] in BLOCKED:
            return None
        return PathFinder.find_spec(name, path, target)
sys.meta_path[:] = [_Hide if f is PathFinder else f for f in sys.meta_path]
'''


@pytest.fixture
def no_dashboard_env(tmp_path: Path) -> dict[str, str]:
    site = tmp_path / "site"
    site.mkdir()
    (site / "sitecustomize.py").write_text(BLOCKER)
    from conftest import ROOT

    return {"PYTHONPATH": f"{site}:{ROOT}"}


def test_blocker_really_blocks(no_dashboard_env):
    import subprocess
    import sys

    p = subprocess.run([sys.executable, "-c", "import pandas"], env=no_dashboard_env,
                       capture_output=True, text=True)
    assert p.returncode != 0 and "No module named 'pandas'" in p.stderr


@pytest.mark.slow  # a whole run, show, a worker killed and recovered: about 20 s of the fast tier
def test_run_show_and_worker_recovery_without_dashboard_libs(db_url, no_dashboard_env, tmp_path):
    env = no_dashboard_env
    # engine run: measures (children included) and stores, then prints the table and verdict.
    p = run_cli("run", "--model", "mlp", "--dim", "batch=2", "--dim", "hidden=8", "--backend",
                "eager", "--variants", "eager,default", "--no-warm-cache", *FAST, "--processes", "2",
                "--max-processes", "2", db_url=db_url, env=env)
    assert p.returncode == 0, p.stderr[-3000:]
    assert "Verdict" in p.stdout and "No module named" not in p.stdout + p.stderr
    # show and show --json: exactly one JSON document on stdout.
    shown = run_cli("show", "1", "--json", db_url=db_url, env=env)
    assert shown.returncode == 0, shown.stderr[-3000:]
    doc = json.loads(shown.stdout)
    default = next(v for v in doc["variants"] if v["variant"] == "default")
    assert default["speedup_ci_low"] <= default["speedup"] <= default["speedup_ci_high"]
    assert default["n_processes"] == 2
    # worker: a run left 'running' by a dead worker (stale heartbeat) is recovered and served.
    q = run_cli("run", "--model", "mlp", "--dim", "batch=2", "--dim", "hidden=8", "--backend",
                "eager", "--variants", "eager", "--processes", "1", "--no-warm-cache", *FAST,
                "--queue", "--json", db_url=db_url, env=env)
    assert q.returncode == 0, q.stderr[-3000:]
    run_id = int(q.stdout.strip())
    con = sqlite3.connect(db_url.removeprefix("sqlite:///"))
    con.execute("UPDATE runs SET status='running', worker_id='gone:1', "
                "heartbeat_at='2000-01-01 00:00:00', attempts=1 WHERE id=?", (run_id,))
    con.commit()
    con.close()
    w = run_cli("worker", "--once", "--stale-after", "2", "--poll", "0.2", db_url=db_url,
                env=env, timeout=300)
    assert w.returncode == 0, w.stderr[-3000:]
    final = json.loads(run_cli("show", str(run_id), "--json", db_url=db_url, env=env).stdout)
    assert final["status"] == "done", final
