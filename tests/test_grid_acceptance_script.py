"""acceptance/grid_acceptance.py on CPU with tiny shapes and a two-config aot_eager grid: the same
path the H200 command takes (one grid run, recommendations for 1 000 and 1 000 000 calls, the
non-dominated configs, a bundle)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import ROOT


@pytest.mark.slow
def test_grid_acceptance_script_tiny_cpu(tmp_path: Path) -> None:
    bundle = tmp_path / "grid.json"
    p = subprocess.run(
        [sys.executable, "acceptance/grid_acceptance.py", "--db", f"sqlite:///{tmp_path}/g.db",
         "--device", "cpu", "--tiny", "--backend", "aot_eager", "--variants", "default",
         "--option", "dynamic=none,true", "--only", "varying_seq", "--bundle", str(bundle)],
        cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert p.returncode == 0, p.stderr[-3000:]
    out = p.stdout
    assert "grid: 3 variants (2 compiled)" in out
    for calls in ("1000", "1000000"):
        assert f"python -m engine recommend 1 --calls {calls}\n  Recommend: " in out
    assert "non-dominated, per-call ms vs cold compile s:" in out
    assert "Shape mix: expected per-request time over 1,000,000 requests" in out
    assert "default@dyn=1 (dynamic True)" in out
    runs = json.loads(bundle.read_text())["runs"]
    assert [v["variant"] for v in runs[0]["variants"]] == ["eager", "default@dyn=none",
                                                           "default@dyn=1"]
