"""Sweep figures: latency, speedup over eager and first call at each value of the swept dim.

They read the ``sweep_points`` DataFrame (one row per run, variant and swept value); a recompile
at a value is marked ✕, and doubling sweeps get a log x axis labelled with the values.
"""

from __future__ import annotations

import pandas as pd
import plotly.graph_objects as go

from dashboard.charts_base import (
    EAGER,
    FASTER,
    SLOWER,
    _col,
    _dash_for_runs,
    _eager_line,
    _labels,
    _layout,
    _log_axis,
    _multi_run,
    _variant_sort_key,
    empty_figure,
    variant_colour,
)


def _sweep_frame(sweep_points: pd.DataFrame, y: str) -> pd.DataFrame:
    df = sweep_points.copy()
    for c in ("value", y, "p10_ms", "p90_ms"):
        df[c] = _col(df, c)
    df = df.dropna(subset=["value", y])
    return df.sort_values(["run_id", "variant", "value"], key=_variant_sort_key)


def sweep_latency(sweep_points: pd.DataFrame, dim: str = "swept dim") -> go.Figure:
    """Steady-state median (p10–p90 bars) vs the swept dim, one line per variant; ✕ = recompiled."""
    title = f"Sweep: steady-state latency vs {dim} (ms)"
    x_title, y_title = f"{dim} (value)", "median latency per call (ms, bars p10–p90)"
    df, fig = _sweep_chart(sweep_points, "median_ms", title, x_title, y_title, error_bars=True)
    paired = _paired_sweep(df)
    if paired.empty:
        return fig
    multi = _multi_run(df)
    for (run_id, variant), g in paired.groupby(["run_id", "variant"], sort=False):
        # Eager timed in the same rounds as this variant, in its process: the fair baseline at
        # each value when the host's speed drifts between processes.
        label = f"{'#' + str(run_id) + ' ' if multi else ''}eager, paired in {variant}'s process"
        fig.add_trace(go.Scatter(
            name=label, x=g["value"], y=g["eager_median_ms"], mode="lines+markers",
            line={"color": EAGER, "dash": "dot"}, marker={"symbol": "circle-open"},
            hovertemplate="%{x}<br>%{y:.4g} ms<extra>" + label + "</extra>",
        ))
    return fig


def _paired_sweep(df: pd.DataFrame) -> pd.DataFrame:
    """Compiled sweep points that carry the paired eager median (runs measured before storage
    kept it have none)."""
    if "eager_median_ms" not in df.columns:
        return df[:0]
    out = df[df["variant"] != "eager"].copy()
    out["eager_median_ms"] = _col(out, "eager_median_ms")
    return out.dropna(subset=["eager_median_ms", "median_ms"])


def sweep_speedup(sweep_points: pd.DataFrame, dim: str = "swept dim") -> go.Figure:
    """Speedup at each swept value: paired eager median ÷ compiled median, both from the same
    rounds in the compiled variant's process. Green above 1.0× (faster), red below."""
    title = f"Sweep: speedup over eager at each {dim} value (×)"
    x_title, y_title = f"{dim} (value)", "speedup over eager (×, paired rounds)"
    if sweep_points is None or sweep_points.empty:
        return empty_figure(title, "This run has no sweep points.", x_title, y_title)
    df = _paired_sweep(_sweep_frame(sweep_points, "median_ms"))
    if df.empty:
        return empty_figure(title, "No paired eager figures at the swept values (runs measured "
                            "before Compile Lab stored them).", x_title, y_title)
    df = df.assign(s=df["eager_median_ms"] / df["median_ms"])
    multi = _multi_run(df)
    dashes = _dash_for_runs(df)
    fig = go.Figure()
    for (run_id, variant), g in df.groupby(["run_id", "variant"], sort=False):
        label = f"#{run_id} {variant}" if multi else str(variant)
        fig.add_trace(go.Scatter(
            name=label, x=g["value"], y=g["s"], mode="lines+markers",
            line={"color": variant_colour(variant), "dash": dashes.get(run_id, "solid")},
            marker={"size": 11, "color": [FASTER if v >= 1 else SLOWER for v in g["s"]],
                    "line": {"width": 1, "color": variant_colour(variant)}},
            hovertemplate="%{x}<br>%{y:.2f}× eager<extra>" + label + "</extra>",
        ))
    _eager_line(fig)
    _sweep_x_axis(fig, df["value"])
    return _layout(fig, title, x_title, y_title,
                   "eager median ÷ compiled median at each value, same rounds · green: faster, "
                   "red: slower than eager")


def sweep_first_call(sweep_points: pd.DataFrame, dim: str = "swept dim") -> go.Figure:
    """First call at each swept value (ms): a recompile shows up as a spike."""
    title = f"Sweep: first call at each {dim} value (ms, log scale)"
    x_title, y_title = f"{dim} (value)", "first call at this value (ms, log scale)"
    df, fig = _sweep_chart(sweep_points, "first_call_ms", title, x_title, y_title,
                           error_bars=False)
    if not df.empty:
        _log_axis(fig, "y", df["first_call_ms"])
    return fig


def _sweep_chart(sweep_points: pd.DataFrame | None, y: str, title: str, x_title: str,
                 y_title: str, error_bars: bool) -> tuple[pd.DataFrame, go.Figure]:
    """The sweep points ready to draw (``_sweep_frame``) and their line chart of ``y``; with no
    sweep points at all, an empty frame and a figure that says so."""
    if sweep_points is None or sweep_points.empty:
        return pd.DataFrame(), empty_figure(title, "This run has no sweep points.", x_title,
                                            y_title)
    df = _sweep_frame(sweep_points, y)
    return df, _sweep_lines(df, y, title, x_title, y_title, error_bars)


def _sweep_lines(df, y, title, x_title, y_title, error_bars) -> go.Figure:
    if df.empty:
        return empty_figure(title, "No sweep values with data.", x_title, y_title)
    multi = _multi_run(df)
    dashes = _dash_for_runs(df)
    fig = go.Figure()
    for (run_id, variant), g in df.groupby(["run_id", "variant"], sort=False):
        label = f"#{run_id} {variant}" if multi else str(variant)
        err = None
        if error_bars and g["p10_ms"].notna().any():
            # clip at zero: a p10 below 0 ms is a measuring glitch, not a time
            low = (g[y] - g["p10_ms"]).clip(lower=0).fillna(0)
            err = {"type": "data", "array": (g["p90_ms"] - g[y]).clip(lower=0).fillna(0),
                   "arrayminus": low.where(low <= g[y], g[y]), "visible": True}
        fig.add_trace(go.Scatter(
            name=label, x=g["value"], y=g[y], mode="lines+markers", error_y=err,
            line={"color": variant_colour(variant), "dash": dashes.get(run_id, "solid")},
            hovertemplate="%{x}<br>%{y:.4g} ms<extra>" + label + "</extra>",
        ))
    rec = df[df["recompiled"].fillna(False).astype(bool)] if "recompiled" in df.columns else df[:0]
    if not rec.empty:
        fig.add_trace(go.Scatter(
            name="recompiled at this value", x=rec["value"], y=rec[y], mode="markers",
            marker={"symbol": "x", "size": 13, "color": "#000000", "line": {"width": 2}},
            text=_labels(rec, multi),
            hovertemplate="%{text}: recompiled at %{x}<extra></extra>",
        ))
    _sweep_x_axis(fig, df["value"])
    return _layout(fig, title, x_title, y_title, "✕ = the compiled model recompiled at this value")


def _sweep_x_axis(fig: go.Figure, values: pd.Series) -> None:
    """Doubling sweeps (16, 32, 64, …) read best on a log axis labelled with the values."""
    ticks = sorted(set(values))
    if len(ticks) >= 3 and ticks[0] > 0 and ticks[-1] / ticks[0] >= 4:
        fig.update_xaxes(type="log", tickvals=ticks, ticktext=[f"{v:g}" for v in ticks])
