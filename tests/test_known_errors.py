"""Known torch errors explained (engine/known_errors.py): regional compilation with CUDA graphs,
as it failed for BERT and the GPT stack on the H200, for runs stored with the raw error and for
new runs (engine/measure/startup.py)."""

from __future__ import annotations

import pytest

from engine import known_errors
from engine.analysis import forensics_report
from engine.measure import startup

# What a run stored on the H200 (torch 2.11) for BERT's regional strategy, before the mapping.
STORED = ("RuntimeError while compiling: Error: accessing tensor output of CUDAGraphs that has "
          "been overwritten by a subsequent run. Stack trace: File \".../transformers/models/"
          "bert/modeling_bert.py\", line 408, in forward. To prevent overwriting, clone the "
          "tensor outside of torch.compile() or call torch.compiler.cudagraph_mark_step_begin() "
          "before each model invocation.")


def test_regional_cudagraph_overwrite_is_explained_and_torchs_message_kept():
    text = known_errors.describe(STORED, strategy="regional", blocks=12)
    assert text.startswith("regional compilation with CUDA graphs: each of the 12 blocks "
                           "reuses one compiled graph")
    assert "mode 'default'" in text
    assert text.endswith("torch said: " + STORED)  # nothing hidden


def test_block_count_unknown_and_other_strategies():
    text = known_errors.explain(STORED, strategy="regional")
    assert "each of the model's repeated blocks" in text
    other = known_errors.explain(STORED.lower(), strategy="portable")
    assert other and "regional" not in other and "cudagraph_mark_step_begin" in other


def test_unknown_errors_pass_through_unchanged():
    assert known_errors.explain("RuntimeError: CUDA out of memory") is None
    assert known_errors.describe("RuntimeError: boom", strategy="regional") == "RuntimeError: boom"
    assert known_errors.startup_error("regional", {"time_to_first_call_s": 1.0}) is None
    assert known_errors.startup_error("regional", None) is None


def test_a_stored_explanation_is_used_as_is():
    entry = {"error": STORED, "explanation": "already said", "blocks": 6}
    assert known_errors.startup_error("regional", entry) == f"already said. torch said: {STORED}"


def test_show_explains_a_run_stored_with_the_raw_error():
    row = {"variant": "reduce-overhead", "startup": {
        "cold": {"time_to_first_call_s": 16.0}, "warm_local": {"time_to_first_call_s": 4.1},
        "portable": {"time_to_first_call_s": 5.0}, "regional": {"error": STORED}}}
    text = forensics_report.startup_line(row)
    first, second = text.splitlines()
    assert "regional compilation failed, below" in first and "cold 16.00 s" in first
    assert second.startswith("  start-up [reduce-overhead] regional compilation: regional "
                             "compilation with CUDA graphs")
    assert "modeling_bert.py" in second


class _Timer:
    """Calls 1 and 2 work; the third raises what torch raises (the replay overwrote the first
    block's output), as on the H200."""

    def __init__(self, error: Exception) -> None:
        self.calls, self.error = 0, error

    def wall_ms(self, fn):
        self.calls += 1
        if self.calls >= 3:
            raise self.error
        fn()
        return 1.0

    per_call_ms = wall_ms


def _regional(error: Exception):
    import torch

    model = torch.nn.Sequential(torch.nn.Linear(4, 4), torch.nn.Linear(4, 4))
    return startup.measure_strategy("startup_regional", model, (torch.randn(2, 4),), {},
                                    "reduce-overhead", _Timer(error), {"backend": "eager"})


def test_new_runs_keep_the_first_call_and_store_the_explanation_with_the_error():
    out = _regional(RuntimeError("Error: accessing tensor output of CUDAGraphs that has been "
                                 "overwritten by a subsequent run. Stack trace: x"))
    assert out["blocks"] == 2 and out["time_to_first_call_s"] > 0
    assert out["error"].startswith("RuntimeError: Error: accessing tensor output")
    assert out["explanation"].startswith("regional compilation with CUDA graphs: each of the "
                                         "2 blocks")
    assert "median_ms" not in out


def test_new_runs_raise_errors_that_are_not_known():
    with pytest.raises(RuntimeError, match="something else"):
        _regional(RuntimeError("something else"))
