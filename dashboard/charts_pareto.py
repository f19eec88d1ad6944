"""The Pareto view of a configuration grid (engine/grid.py): per-call time against cold compile
time and against peak memory, one point per variant, the non-dominated configs
(``engine.analysis.pareto``) ringed and joined by a step line, hover showing each config's settings
(``engine.grid.settings``: mode, dynamic, fullgraph, inductor options).  Pure functions of
storage's ``variants`` DataFrame.  Like the other charts, variant names arrive already escaped
(the page passes its frames through ``safe.plotly_names``): they are not escaped twice."""

from __future__ import annotations

import pandas as pd
import plotly.graph_objects as go

from contract import fmt
from dashboard.charts_base import _labels, _layout, _ok, empty_figure, variant_colour
from dashboard.verdict import records
from engine import grid
from engine.analysis import pareto

TITLES = {"first_call_cold_s": "Per-call time vs cold compile time",
          "peak_memory": "Per-call time vs peak memory"}


def _hover(label: str, row: dict, x: float, y: float, axis: str, correct: bool,
           on_front: bool) -> str:
    lines = [f"<b>{label}</b>"]
    for key, value in grid.settings(str(row.get("variant"))).items():
        lines.append(f"{key}: {'none' if value is None else value}")
    lines.append(f"per call: {fmt.ms(y)}")
    lines.append(f"{pareto.X_AXES[axis][0]}: {x:,.3g}")
    if not correct:
        lines.append("fails the accuracy check: not a candidate")
    elif on_front:
        lines.append("non-dominated: nothing is better on both axes")
    return "<br>".join(lines)


def pareto_figure(variants: pd.DataFrame, axis: str = "first_call_cold_s") -> go.Figure:
    """One point per finished variant (eager included: its first call is its compile cost);
    hollow grey points failed the accuracy check; ringed points form the front."""
    title = TITLES[axis]
    x_title, y_title = pareto.X_AXES[axis][0], "per-call median (ms)"
    df = _ok(variants)
    if df.empty:
        return empty_figure(title, "No finished variants.", x_title, y_title)
    labels = _labels(df)
    rows = records(df)
    by_id = {id(r): label for r, label in zip(rows, labels, strict=True)}
    pts = pareto.mark(rows, axis)
    if not pts:
        why = ("No peak memory measured (CPU runs have none)." if axis == "peak_memory"
               else "No variant has both a first-call time and a per-call median.")
        return empty_figure(title, why, x_title, y_title)
    fig = go.Figure()
    for p in pts:
        label, r = by_id[id(p["row"])], p["row"]
        colour = variant_colour(grid.mode_of(str(r.get("variant"))))
        fig.add_trace(go.Scatter(
            x=[p["x"]], y=[p["y"]], mode="markers", name=label,
            marker={"size": 14 if p["front"] else 9, "color": colour if p["correct"] else "#999",
                    "symbol": "circle" if p["correct"] else "x",
                    "line": {"width": 3 if p["front"] else 1,
                             "color": "black" if p["front"] else colour}},
            # hovertext, not hovertemplate: a "%{...}" in an imported name stays text
            hovertext=_hover(label, r, p["x"], p["y"], axis, p["correct"], p["front"]),
            hoverinfo="text"))
    line = sorted((p["x"], p["y"]) for p in pts if p["front"])
    if len(line) > 1:
        fig.add_trace(go.Scatter(x=[x for x, _ in line], y=[y for _, y in line],
                                 mode="lines", line={"shape": "hv", "dash": "dot",
                                                     "color": "black", "width": 1},
                                 name="non-dominated", hoverinfo="skip"))
    return _layout(fig, title, x_title, y_title,
                   subtitle="lower left is better · ringed: non-dominated (no config is better "
                            "on both axes) · ✕: fails the accuracy check")


def pareto_figures(variants: pd.DataFrame) -> list[tuple[str, go.Figure]]:
    """Both Pareto figures, keyed like ``charts.compare_figures``."""
    return [("pareto_compile", pareto_figure(variants, "first_call_cold_s")),
            ("pareto_memory", pareto_figure(variants, "peak_memory"))]
