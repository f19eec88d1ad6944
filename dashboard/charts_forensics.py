"""Compile-forensics figures, each a pure function of storage's ``variants`` DataFrame (the
contract's json figures ``compile_phases_s``, ``startup``, ``lost_time``, ``compile_cache``):

* compile phases: the cold first call split into torch's compile phases, stacked per variant;
* start-up strategies: time to the first call, cold / warm local cache / portable cache
  artifacts / regional compilation, side by side per variant;
* why not faster: the ranked lost time per call of each compiled variant.

Labels and colours follow ``dashboard.charts_base`` (variant colours, ``#run variant`` labels when
several runs are drawn). Text that came from torch or the user's code (break reasons, file
names) is passed through ``safe.plotly_text``.
"""

from __future__ import annotations

import math
import textwrap
from typing import Any

import pandas as pd
import plotly.graph_objects as go

from dashboard import safe
from dashboard.charts_base import _labels, _layout, _ok, empty_figure
from engine import known_errors
from engine.analysis.forensics_report import SHOWN, STRATEGIES, phase_segments

PHASE_COLOURS = {"dynamo (trace, guards)": "#4c78a8", "AOTAutograd": "#72b7b2",
                 "inductor (lowering)": "#f58518", "codegen + Triton": "#e45756",
                 "rest of first call": "#bab0ac"}
STRATEGY_COLOURS = {"cold": "#d62728", "warm_local": "#1f77b4", "portable": "#2ca02c",
                    "regional": "#9467bd"}
LOST_COLOURS = {"graph_break": "#d62728", "guards": "#ff7f0e", "python": "#8c564b",
                "launch_bound": "#9467bd", "uncaptured_cudagraph": "#e377c2",
                "in_graphs": "#c7c7c7"}


def _compiled(variants: pd.DataFrame) -> pd.DataFrame:
    df = _ok(variants)
    return df[df["variant"] != "eager"].reset_index(drop=True) if not df.empty else df


def _num(v: Any) -> float | None:
    try:
        f = float(v)
    except (TypeError, ValueError):
        return None
    return None if math.isnan(f) else f


COMPILE_PHASES_TITLE = "Compile phases of the cold first call (s)"


def compile_phases(variants: pd.DataFrame) -> go.Figure:
    """Stacked bars: the cold first call of each compiled variant split into torch's compile
    phases (exclusive seconds from ``get_compilation_metrics``), and the warm-cache first call
    beside it as a marker."""
    df = _compiled(variants)
    rows = [(label, phase_segments(r.get("compile_phases_s"), _num(r.get("first_call_cold_s"))),
             _num(r.get("first_call_warm_s")))
            for label, (_, r) in zip(_labels(df), df.iterrows(), strict=True)] if not df.empty else []
    rows = [r for r in rows if any(r[1].values())]
    if not rows:
        return empty_figure(COMPILE_PHASES_TITLE, "no compile phases recorded", "", "seconds")
    fig = go.Figure()
    labels = [r[0] for r in rows]
    for phase, colour in PHASE_COLOURS.items():
        fig.add_bar(name=phase, x=labels, y=[r[1].get(phase, 0.0) for r in rows],
                    marker_color=colour, hovertemplate="%{x}<br>" + phase + ": %{y:.3f} s"
                    "<extra></extra>")
    warm = [r[2] for r in rows]
    if any(w is not None for w in warm):
        fig.add_scatter(name="warm-cache first call", x=labels, y=warm, mode="markers",
                        marker={"symbol": "diamond", "size": 12, "color": "#111"},
                        hovertemplate="%{x}<br>warm-cache first call: %{y:.3f} s<extra></extra>")
    return _layout(fig, COMPILE_PHASES_TITLE, "variant", "seconds",
                   "torch's nested phase totals made exclusive · ◆ the same call on a warm cache",
                   barmode="stack")


STARTUP_TITLE = "Start-up strategies: time to first call (s)"


def _wrapped(text: str | None, width: int = 90, limit: int = 900) -> str:
    """Hover text for a strategy's error: escaped, then broken into lines (a Plotly hover
    does not wrap by itself)."""
    if not text:
        return ""
    lines = textwrap.wrap(text[:limit], width)
    return "<br>" + "<br>".join(safe.plotly_text(line) for line in lines)


def startup_strategies(variants: pd.DataFrame) -> go.Figure:
    """Grouped bars per compiled variant: cold, warm local cache, portable cache artifacts
    (fresh process, empty cache, ``load_cache_artifacts``) and regional compilation."""
    df = _compiled(variants)
    if df.empty or "startup" not in df.columns or not df["startup"].map(bool).any():
        return empty_figure(STARTUP_TITLE, "start-up strategies not measured (run option "
                            "--startup-strategies)", "", "seconds")
    # only the variants whose run measured the strategies: a compared run without them would
    # otherwise add a group of four "n/a" bars
    df = df[df["startup"].map(bool)]
    fig = go.Figure()
    labels = _labels(df)
    for key, name in STRATEGIES:
        ys, notes = [], []
        for s in df["startup"]:
            entry = (s or {}).get(key) or {}
            ys.append(_num(entry.get("time_to_first_call_s")))
            notes.append(_wrapped(known_errors.startup_error(key, entry)))
        fig.add_bar(name=name, x=labels, y=ys, marker_color=STRATEGY_COLOURS[key],
                    customdata=notes, text=[f"{y:.2f}" if y is not None else "n/a" for y in ys],
                    textposition="outside",
                    hovertemplate="%{x}<br>" + name + ": %{y:.3f} s %{customdata}<extra></extra>")
    return _layout(fig, STARTUP_TITLE, "variant", "seconds to first call",
                   "compile + first call in a fresh process; portable: load_cache_artifacts on "
                   "an empty cache · regional: repeated blocks compiled, not the whole model",
                   barmode="group")


LOST_TITLE = "Why not faster: time lost per call (share of a call)"


def lost_time(variants: pd.DataFrame, top: int = 8) -> go.Figure:
    """Horizontal bars, one group per compiled variant: each lost-time item's share of a call
    (graph breaks named by file:line), the time inside compiled graphs in grey for scale."""
    df = _compiled(variants)
    ys, xs, colours, hover = [], [], [], []
    for label, (_, r) in zip(_labels(df), df.iterrows(), strict=True) if not df.empty else []:
        lost = r.get("lost_time") if isinstance(r.get("lost_time"), dict) else {}
        for item in (lost.get("items") or [])[:top]:
            name = item.get("what") or item.get("kind")
            short = (f"break {item_where(item)}" if item.get("kind") == "graph_break"
                     else str(item.get("kind")).replace("_", " "))
            ys.append(safe.plotly_text(f"{label} · {short}"))
            xs.append(float(item.get("share") or 0.0))
            colours.append(LOST_COLOURS.get(item.get("kind"), "#17becf"))
            ms = _num(item.get("ms_per_call"))
            hover.append(safe.plotly_text(
                f"{name}<br>{'' if ms is None else f'{ms:.4f} ms per call<br>'}"
                f"{item.get('action') or ''}"))
    if not ys:
        return empty_figure(LOST_TITLE, "no lost-time account (compiled variants with the "
                            "profiler pass)", "share of a call", "")
    fig = go.Figure(go.Bar(x=xs, y=ys, orientation="h", marker_color=colours, customdata=hover,
                           text=[f"{x:.0%}" for x in xs], textposition="outside",
                           hovertemplate="%{customdata}<extra></extra>"))
    fig.update_yaxes(autorange="reversed")
    fig.update_xaxes(tickformat=".0%")
    height = max(480, 80 + 26 * len(ys))
    _layout(fig, LOST_TITLE, "share of the profiled call", "",
            "ranked per variant · red: graph breaks (file:line) · grey: inside compiled graphs")
    fig.update_layout(height=height)  # one bar per item: grow with them
    return fig


def item_where(item: dict[str, Any]) -> str:
    """``file.py:line`` of a break item."""
    file = str(item.get("file") or "?").replace("\\", "/").rsplit("/", 1)[-1]
    return f"{file}:{item.get('line')}"


def cache_table(variants: pd.DataFrame) -> pd.DataFrame:
    """One row per compile (run, variant, phase) with torch's cache counters as integers, and
    the warm-cache verdict with torch's reason."""
    df = _compiled(variants)
    rows = []
    for _, r in df.iterrows() if not df.empty else []:
        for c in r.get("compile_cache") or []:
            n = c.get("counters") or {}
            rows.append({"run_id": r["run_id"], "variant": r["variant"], "compile": c.get("phase"),
                         **{k: int(n.get(k) or 0) for k in SHOWN},
                         "reasons": "; ".join(c.get("reasons") or [])
                         if c.get("phase") != "cold" else ""})
    return pd.DataFrame(rows)


FORENSICS_FIGURES = ("compile_phases", "startup_strategies", "lost_time")


def forensics_figures(variants: pd.DataFrame) -> list[tuple[str, go.Figure]]:
    """The three forensics figures, in page order, as (key, figure)."""
    return [("compile_phases", compile_phases(variants)),
            ("startup_strategies", startup_strategies(variants)),
            ("lost_time", lost_time(variants))]
