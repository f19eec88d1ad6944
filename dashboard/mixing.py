"""Runs measured on different machines or software, named before they are compared (pure).

pyperf's ``Benchmark.add_run`` refuses a run whose host, CPU or Python differs; a comparison page
cannot refuse (comparing a CPU laptop with an H200 is a fair question), but it must not put the
two side by side without a word. ``differences`` lists what differs among the runs shown: the
device, the GPU model, the host, the torch release; the page, the sweep view and the HTML report
print it above the figures.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pandas as pd


def _env(key: str) -> Callable[[pd.Series], Any]:
    return lambda r: (r.get("environment") or {}).get(key) if isinstance(
        r.get("environment"), dict) else None


def _gpu(r: pd.Series) -> Any:
    gpu = r.get("gpu")
    return None if gpu in (None, "", "cpu") or gpu != gpu else gpu


# (label, how to read it from a runs-frame row)
ASPECTS: list[tuple[str, Callable[[pd.Series], Any]]] = [
    ("device", lambda r: r.get("device")),
    ("GPU", _gpu),
    ("host", _env("host")),
    ("torch", lambda r: r.get("torch_version") or _env("torch")(r)),
]


def differences(runs: pd.DataFrame) -> list[str]:
    """``["GPU: NVIDIA H200 (#1, #2) vs none (#5)", "torch: 2.11.0 (#1, #2) vs 2.13.0 (#5)"]``:
    one entry per aspect on which the runs differ (runs that do not record it are left out of
    that aspect; a run without a GPU reads "none" once another run has one)."""
    if runs is None or len(runs) < 2:
        return []
    out: list[str] = []
    for label, read in ASPECTS:
        groups: dict[str, list[int]] = {}
        for _, r in runs.iterrows():
            value = read(r)
            if value is None or value != value or value == "":
                if label != "GPU":
                    continue
                value = "none"
            groups.setdefault(str(value), []).append(int(r["run_id"]))
        if len(groups) > 1:
            out.append(f"{label}: " + " vs ".join(
                f"{value} ({', '.join(f'#{i}' for i in ids[:6])}{'…' if len(ids) > 6 else ''})"
                for value, ids in groups.items()))
    return out


def notice(runs: pd.DataFrame) -> str | None:
    """One sentence for the top of a comparison, or None when the runs agree on all aspects."""
    diffs = differences(runs)
    if not diffs:
        return None
    return ("These runs were measured on different machines or software, so their figures are "
            "not directly comparable — " + "; ".join(diffs) + ".")
