"""A comparison across devices, GPUs, hosts or torch releases is named (dashboard/mixing.py)."""

from __future__ import annotations

import pandas as pd

from dashboard.mixing import differences, notice


def _runs(*rows: dict) -> pd.DataFrame:
    base = {"device": "cuda", "gpu": "NVIDIA H200", "torch_version": "2.11.0",
            "environment": {"host": "gpu7"}}
    return pd.DataFrame([{**base, "run_id": i + 1, **r} for i, r in enumerate(rows)])


def test_same_machine_says_nothing():
    assert differences(_runs({}, {})) == [] and notice(_runs({}, {})) is None
    assert differences(_runs({})) == []


def test_cpu_laptop_against_h200_names_every_difference():
    runs = _runs({}, {}, {"device": "cpu", "gpu": "cpu", "torch_version": "2.13.0",
                          "environment": {"host": "laptop"}})
    assert differences(runs) == [
        "device: cuda (#1, #2) vs cpu (#3)",
        "GPU: NVIDIA H200 (#1, #2) vs none (#3)",
        "host: gpu7 (#1, #2) vs laptop (#3)",
        "torch: 2.11.0 (#1, #2) vs 2.13.0 (#3)",
    ]
    assert notice(runs).startswith("These runs were measured on different machines")


def test_unrecorded_aspects_are_not_a_difference():
    runs = _runs({}, {"environment": None, "torch_version": None})
    assert differences(runs) == []
    assert differences(_runs({}, {"gpu": "NVIDIA H100"})) == [
        "GPU: NVIDIA H200 (#1) vs NVIDIA H100 (#2)"]
