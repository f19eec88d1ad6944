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


def _probe_variants(probes: dict[int, list[dict]]) -> pd.DataFrame:
    return pd.DataFrame([{"run_id": rid, "variant": f"v{i}", "host_probe": p}
                         for rid, ps in probes.items() for i, p in enumerate(ps)])


def test_probe_notice_names_hosts_that_launch_at_different_speeds():
    from dashboard.mixing import probe_notice

    same = _probe_variants({1: [{"launch_us": 7.0, "module_call_us": 0.8}],
                            2: [{"launch_us": 7.5, "module_call_us": 0.85}]})
    assert probe_notice(same) is None  # within 10 %
    apart = _probe_variants({1: [{"launch_us": 7.0, "module_call_us": 0.8},
                                 {"launch_us": 7.2, "module_call_us": 0.9}],
                             2: [{"launch_us": 10.0, "module_call_us": 1.7}], 3: [None]})
    text = probe_notice(apart)
    assert text and "#1" in text and "#2" in text and "#3" not in text
    assert "kernel launch" in text and "module call" in text
    # hostile rows: strings, negatives, not a dict
    odd = _probe_variants({1: [{"launch_us": "fast"}], 2: ["x"], 3: [{"launch_us": -1.0}]})
    assert probe_notice(odd) is None
