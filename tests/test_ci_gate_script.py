"""scripts/ci_gate.py end to end on the CPU: a tiny suite (aot_eager) measured twice, exported,
imported into a fresh database and gated there."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest
from conftest import FIXTURES, ROOT


@pytest.mark.slow
def test_ci_gate_script_measures_exports_imports_and_gates(tmp_path):
    out = tmp_path / "out"
    p = subprocess.run([sys.executable, "scripts/ci_gate.py", "--db",
                        f"sqlite:///{tmp_path / 'ci.db'}", "--out", str(out), "--suite",
                        str(FIXTURES / "suite_tiny.toml"), "--set", "backend=aot_eager"],
                       cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert p.returncode in (0, 1), p.stderr[-3000:]
    log = p.stderr
    for step in ("suite run", "export 1 2", "import", "gate --baseline ci-baseline"):
        assert step in log, step
    assert "imported into a fresh database: runs 1 2" in log
    doc = json.loads((out / "gate.json").read_text())
    assert doc["exit_code"] == p.returncode
    assert [c["figure"] for c in doc["changes"]][:1] == ["speedup"]
    assert (out / "gate.md").read_text() == p.stdout and "### Gate:" in p.stdout
    assert (out / "fresh.db").exists() and (out / "bundle.json").exists()
