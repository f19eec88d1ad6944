"""Steady-state figures: the latency distribution per variant and the speedup over eager.

``latency_distribution`` draws the ``samples`` DataFrame (per-call and pipelined boxes, thinned
by ``downsample`` for huge runs); ``speedup`` the ``variants`` one (paired speedup with its
bootstrap interval and each process's own value). No Streamlit; see ``charts_base``.
"""

from __future__ import annotations

import pandas as pd
import plotly.graph_objects as go

from contract import fmt
from dashboard import downsample
from dashboard.charts_base import (
    FASTER,
    SLOWER,
    _col,
    _eager_line,
    _labels,
    _layout,
    _log_axis,
    _ok,
    _variant_sort_key,
    empty_figure,
)

LATENCY_TITLE = "Steady-state latency per variant (ms per call)"
LATENCY_SUB = ("per call: each call synchronised · pipelined: K back-to-back calls, one "
               "synchronise — both true, they differ most for small models")
SAMPLE_KINDS = {
    "per_call": ("per call", "#1f77b4"),
    "pipelined": ("pipelined", "#ff7f0e"),
}


def latency_distribution(samples: pd.DataFrame, log_y: bool = False) -> go.Figure:
    """Box plot of steady-state per-call times per variant, per-call and pipelined side by side.

    Both numbers are true: per-call includes launch overhead and one synchronise per call,
    pipelined amortises them over K calls. They differ most for small models.
    """
    x_title, y_title = "variant", "time per call (ms)" + (", log scale" if log_y else "")
    if samples is None or samples.empty:
        return empty_figure(LATENCY_TITLE, "No steady-state samples recorded.", x_title, y_title)
    # Millions of samples: each box draws evenly spaced quantiles of its samples (downsample.py).
    thin = downsample.quantiles(samples[samples["kind"].isin(list(SAMPLE_KINDS))],
                                ["run_id", "variant", "kind"], "ms")
    df = thin.frame.copy()
    df["ms"] = _col(df, "ms")
    df = df.dropna(subset=["ms"])
    if df.empty:
        return empty_figure(LATENCY_TITLE, "No steady-state samples recorded.", x_title, y_title)
    df = df.sort_values(["run_id", "variant"], key=_variant_sort_key)
    df["label"] = _labels(df)
    order = list(dict.fromkeys(df["label"]))
    fig = go.Figure()
    for kind, (name, colour) in SAMPLE_KINDS.items():
        g = df[df["kind"] == kind]
        if g.empty:
            continue
        fig.add_trace(go.Box(
            name=name, x=g["label"], y=g["ms"], marker_color=colour, boxpoints="outliers",
            hovertemplate="%{x}<br>%{y:.4g} ms<extra>" + name + "</extra>",
        ))
    fig.update_xaxes(categoryorder="array", categoryarray=order)
    if log_y:
        _log_axis(fig, "y", df["ms"])
    # the thinning note first: a long subtitle is cut at the figure's right edge
    sub = (f"{downsample.note(thin)} · " if thin.thinned else "") + LATENCY_SUB
    return _layout(fig, LATENCY_TITLE, x_title, y_title, sub, boxmode="group")


SPEEDUP_TITLE = "Speedup over eager per variant (×, 95% CI)"
SPEEDUP_SUB = "run's eager ÷ variant per call (paired rounds) · CI over processes or draws · ○ one process"


def speedup(variants: pd.DataFrame) -> go.Figure:
    """Speedup (eager median ÷ variant median, paired rounds) with its 95 % interval as error bars.

    Green bars are faster than eager, red bars slower; the dashed line is eager (1.0×).
    """
    x_title, y_title = "compile variant", "speedup over eager (×)"
    df = _ok(variants)
    df = df[(df["variant"] != "eager") & _col(df, "speedup").notna()] if not df.empty else df
    if df.empty:
        return empty_figure(SPEEDUP_TITLE, "No compiled variant finished.", x_title, y_title)
    df = df.assign(label=_labels(df), s=_col(df, "speedup"),
                   lo=_col(df, "speedup_ci_low"), hi=_col(df, "speedup_ci_high"))
    fig = go.Figure()
    for faster, name, colour in [(True, "faster than eager", FASTER),
                                 (False, "slower than eager", SLOWER)]:
        g = df[(df["s"] >= 1.0) == faster]
        if g.empty:
            continue
        plus = (g["hi"] - g["s"]).clip(lower=0).fillna(0)
        minus = (g["s"] - g["lo"]).clip(lower=0).fillna(0)
        ci_text = [
            f"95% CI {fmt.ratio(lo)}–{fmt.ratio(hi)}"
            + (" (includes 1.0: not distinguishable from eager)"
               if fmt.is_num(lo) and fmt.is_num(hi) and lo <= 1.0 <= hi else "")
            for lo, hi in zip(g["lo"], g["hi"], strict=True)
        ]
        fig.add_trace(go.Bar(
            name=name, x=g["label"], y=g["s"], marker_color=colour,
            error_y={"type": "data", "array": plus, "arrayminus": minus, "visible": True},
            text=[fmt.ratio(v) for v in g["s"]], textposition="inside",
            insidetextanchor="middle", customdata=ci_text,
            hovertemplate="%{x}<br>%{y:.2f}× eager<br>%{customdata}<extra>" + name + "</extra>",
        ))
    # Each measuring process's own speedup: the spread between processes, shown as it is.
    xs, ys = [], []
    procs = df["process_speedups"] if "process_speedups" in df.columns else [None] * len(df)
    for label, per in zip(df["label"], procs, strict=True):
        if isinstance(per, list) and len(per) > 1:
            xs += [label] * len(per)
            ys += [float(x) for x in per]
    if xs:
        fig.add_trace(go.Scatter(
            name="one measuring process", x=xs, y=ys, mode="markers",
            marker={"color": "#111111", "size": 7, "symbol": "circle-open"},
            hovertemplate="%{x}<br>one process: %{y:.2f}×<extra></extra>"))
    _eager_line(fig)
    fig.update_xaxes(categoryorder="array", categoryarray=list(df["label"]))
    return _layout(fig, SPEEDUP_TITLE, x_title, y_title, SPEEDUP_SUB)
