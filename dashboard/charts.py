"""The Run / compare page's set of figures, in page order (``compare_figures``).

Every figure is a pure function of storage's DataFrames (docs/CONTRACTS.md: ``variants``,
``warmup``, ``samples``, ``recompiles``, ``sweep_points``) returning a Plotly figure; no
Streamlit. They live by chart family:

- ``charts_base``       shared look: variant colours, labels, layout, empty figures.
- ``charts_warmup``     warm-up cost, warm-up curve, break-even (what compiling costs).
- ``charts_latency``    steady-state latency distribution and speedup over eager.
- ``charts_resources``  peak memory, kernels per call, device busy vs wall time.
- ``charts_sweep``      latency, speedup and first call across a swept dim.
- ``charts_forensics``, ``charts_pareto``, ``charts_review``: compile forensics, the grid's
  Pareto fronts, the Review page's trends and baselines.
"""

from __future__ import annotations

import pandas as pd
import plotly.graph_objects as go

from dashboard.charts_latency import latency_distribution, speedup
from dashboard.charts_resources import device_busy, kernels_per_call, peak_memory
from dashboard.charts_warmup import break_even, warmup_cost, warmup_curve

ALL_COMPARE_FIGURES = (
    "warmup_cost", "warmup_curve", "latency_distribution", "speedup", "break_even",
    "peak_memory", "kernels_per_call", "device_busy",
)


def _cuda_runs(runs: pd.DataFrame | None) -> set[int] | None:
    """The runs measured on a GPU (None when the runs' devices are unknown)."""
    if runs is None or runs.empty or "device" not in runs.columns:
        return None
    return {int(r) for r, d in zip(runs["run_id"], runs["device"], strict=True)
            if str(d).startswith("cuda")}


def compare_figures(data: dict[str, pd.DataFrame]) -> list[tuple[str, go.Figure]]:
    """All comparison figures for a ``load_runs`` result, in page order, as (key, figure)."""
    variants = data.get("variants", pd.DataFrame())
    return [
        ("warmup_cost", warmup_cost(variants)),
        ("warmup_curve", warmup_curve(data.get("warmup"), data.get("recompiles"),
                                      _cuda_runs(data.get("runs")))),
        ("latency_distribution", latency_distribution(data.get("samples"))),
        ("speedup", speedup(variants)),
        ("break_even", break_even(variants)),
        ("peak_memory", peak_memory(variants)),
        ("kernels_per_call", kernels_per_call(variants)),
        ("device_busy", device_busy(variants)),
    ]
