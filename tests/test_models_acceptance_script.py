"""acceptance/models_acceptance.py (issue 19's H200 acceptance): its tables from stored runs, and
(slow) the whole script on the CPU with tiny shapes."""

from __future__ import annotations

import importlib.util
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
spec = importlib.util.spec_from_file_location("models_acceptance",
                                              ROOT / "acceptance" / "models_acceptance.py")
script = importlib.util.module_from_spec(spec)
spec.loader.exec_module(script)


def _runs() -> list[dict]:
    decode = {"ttft_ms": 9.5, "per_token_ms": 2.25, "tokens_per_s": 420.0,
              "decode_tokens_per_s": 440.0, "decode_recompiles": 0, "recompiles_per_step": False}
    return [
        {"run_id": 1, "model": "llama_decode", "variants": [
            {"variant": "eager", "status": "ok", "decode": {**decode, "tokens_per_s": 90.0},
             "median_ms": 11.0, "arch": {"parameters": 951_000_000}, "accuracy_ok": True},
            {"variant": "reduce-overhead", "status": "ok", "median_ms": 2.2, "speedup": 5.0,
             "speedup_ci_low": 4.8, "speedup_ci_high": 5.2, "accuracy_ok": True,
             "decode": {**decode, "tokens_per_s_speedup": 4.67, "ttft_speedup": 1.9,
                        "compile_s": 61.0, "break_even_tokens": 1234.0}},
            {"variant": "max-autotune", "status": "failed", "failure_kind": "timeout",
             "error": "passed its timeout"}]},
        {"run_id": 2, "model": "hf:gpt2", "variants": [
            {"variant": "eager", "status": "ok", "median_ms": 4.0, "first_call_cold_s": 0.1},
            {"variant": "default", "status": "ok", "median_ms": 2.0, "speedup": 2.0,
             "speedup_ci_low": 1.9, "speedup_ci_high": 2.1, "peak_allocated_bytes": 2**30,
             "arch": {"parameters": 124_439_808}}]},
    ]


def test_decode_table_shows_generation_figures_and_failures():
    text = script.decode_table(_runs())
    row = next(line for line in text.splitlines() if "reduce-overhead" in line)
    for cell in ("9.50", "2.250", "420.0", "4.67", "1.90", "61.0", "1,234", "5.00x [4.80,5.20]"):
        assert cell in row, cell
    assert "951,000,000" in text and "FAILED timeout" in text
    assert "hf:gpt2" not in text


def test_inference_table_lists_registry_models_only():
    text = script.inference_table(_runs())
    assert "llama_decode" not in text
    row = next(line for line in text.splitlines() if " default " in line)
    assert "2.00x [1.90,2.10]" in row and "1024" in row and "124,439,808" in row


@pytest.mark.slow
def test_script_runs_tiny_on_cpu(tmp_path):
    db = f"sqlite:///{tmp_path / 'm.db'}"
    p = subprocess.run([sys.executable, "acceptance/models_acceptance.py", "--db", db, "--tiny",
                        "--only", "decode", "--only", "gpt2"], cwd=ROOT, capture_output=True,
                       text=True, timeout=600)
    assert p.returncode == 0, p.stderr[-3000:]
    assert "generation (batch 1, prompt 8, 6 new tokens" in p.stdout
    decode_row = next(line for line in p.stdout.splitlines()
                      if line.strip().startswith("1  default"))
    assert "True" in decode_row
    assert "hf:gpt2  default" in p.stdout
