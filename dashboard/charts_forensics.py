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
from plotly.subplots import make_subplots

from contract.results import process_draws
from dashboard import safe
from dashboard.charts_base import _labels, _layout, _ok, empty_figure
from engine import known_errors
from engine.analysis import forensics_report
from engine.analysis.forensics_report import (
    AUTOTUNE_STATES,
    SHOWN,
    STRATEGIES,
    autotune_states,
    phase_segments,
)

PHASE_COLOURS = {"dynamo (trace, guards)": "#4c78a8", "AOTAutograd": "#72b7b2",
                 "inductor (lowering)": "#f58518", "code generation": "#e45756",
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


LOST_TITLE = "Why not faster: where a call's time goes (each panel adds up to 100 %)"
# The panels of the lost-time figure: each is one account of a whole (engine/measure/losttime.py)
LOST_PANELS = (("host", "Host time of one call"),
               ("device", "The device during the same call (GPU; overlaps the host time)"),
               ("once", "Compile time, paid once (first compiles and recompiles)"))
LOST_COLOURS.update({"device_busy": "#54a24b", "first_compile": "#bab0ac",
                     "recompiles": "#f58518"})


def _lost_bar(label: str, item: dict[str, Any]) -> tuple[str, float, str, str]:
    """(y label, share, colour, hover) of one item of the account."""
    kind = item.get("kind")
    short = (f"break {item_where(item)}" if kind == "graph_break"
             else str(kind).replace("_", " "))
    ms = _num(item.get("ms_per_call"))
    hover = safe.plotly_text(f"{item.get('what') or kind}<br>"
                             f"{'' if ms is None else f'{ms:.4f} ms per call<br>'}"
                             f"{item.get('action') or ''}")
    return (safe.plotly_text(f"{label} · {short}"), float(_num(item.get("share")) or 0.0),
            LOST_COLOURS.get(kind, "#17becf"), hover)


def _once_items(lost: dict[str, Any]) -> list[dict[str, Any]]:
    """The compile-time panel's two bars of a variant that recompiled."""
    rec = lost.get("recompiles") if isinstance(lost.get("recompiles"), dict) else None
    share = _num((rec or {}).get("share_of_compile"))
    if rec is None or share is None:
        return []
    total = _num(rec.get("compile_total_s")) or 0.0
    words = forensics_report.recompile_text(rec)
    return [{"kind": "recompiles", "share": share, "what": words, "action": rec.get("action")},
            {"kind": "first_compile", "share": 1.0 - share,
             "what": f"first compiles: {total * (1.0 - share):.2f} s"}]


def lost_time(variants: pd.DataFrame, top: int = 8) -> go.Figure:
    """Horizontal bars in up to three panels, each one account adding up to 100 %: the host
    time of a call (graph breaks named by file:line, guards, Python, inside compiled graphs in
    grey), the device busy and idle within the same call (GPU runs), and the compile time paid
    once (first compiles against recompiles, where a variant recompiled). A launch-bound 49 %
    and 65 % inside graphs sit in different panels: they are shares of different wholes."""
    df = _compiled(variants)
    bars: dict[str, list[tuple[str, float, str, str]]] = {k: [] for k, _ in LOST_PANELS}
    for label, (_, r) in zip(_labels(df), df.iterrows(), strict=True) if not df.empty else []:
        lost = r.get("lost_time") if isinstance(r.get("lost_time"), dict) else {}
        parts = forensics_report.lost_parts(lost)
        for key in ("host", "device"):
            bars[key] += [_lost_bar(label, i) for i in parts[key][:top]]
        bars["once"] += [_lost_bar(label, i) for i in _once_items(lost)]
    panels = [(k, t) for k, t in LOST_PANELS if bars[k]]
    if not panels:
        return empty_figure(LOST_TITLE, "no lost-time account (compiled variants with the "
                            "profiler pass)", "share", "")
    heights = [max(len(bars[k]), 2) for k, _ in panels]
    height = max(480, 140 + 26 * sum(heights) + 90 * len(panels))
    # ~90 px between panels: the x ticks of one and the title of the next must not meet
    gap = min(0.3, 90 / max(height - 200, 1)) if len(panels) > 1 else 0.0
    fig = make_subplots(rows=len(panels), cols=1, subplot_titles=[t for _, t in panels],
                        row_heights=[h / sum(heights) for h in heights], vertical_spacing=gap)
    for row, (key, _) in enumerate(panels, start=1):
        ys, xs, colours, hover = zip(*bars[key], strict=True)
        fig.add_trace(go.Bar(x=list(xs), y=list(ys), orientation="h", marker_color=list(colours),
                             customdata=list(hover), text=[f"{x:.0%}" for x in xs],
                             textposition="outside", showlegend=False,
                             hovertemplate="%{customdata}<extra></extra>"), row=row, col=1)
        fig.update_yaxes(autorange="reversed", row=row, col=1)
        fig.update_xaxes(tickformat=".0%", range=[0, 1.15], row=row, col=1)
    _layout(fig, LOST_TITLE, "", "", "ranked per variant · red: graph breaks (file:line) · "
            "grey: inside compiled graphs · shares of different panels are of different wholes")
    fig.update_layout(height=height,
                      margin={"t": 120, "l": 60, "r": 20})  # the subtitle above panel 1's title
    return fig


def item_where(item: dict[str, Any]) -> str:
    """``file.py:line`` of a break item."""
    file = str(item.get("file") or "?").replace("\\", "/").rsplit("/", 1)[-1]
    return f"{file}:{item.get('line')}"


def cache_table(variants: pd.DataFrame) -> pd.DataFrame:
    """One row per compile (run, variant, phase) with torch's cache counters as integers, the
    Triton kernels' autotune cache decisions (``autotune_cache_state=hit`` ...: kernels per
    decision, torch's words), and the warm-cache verdict with torch's reason."""
    df = _compiled(variants)
    rows = []
    for _, r in df.iterrows() if not df.empty else []:
        compiles = [c for c in r.get("compile_cache") or [] if isinstance(c, dict)]
        # one entry per process in both lists, in the same order (engine/orchestrate/fold.py)
        draws = process_draws(r.get("processes"))
        if len(draws) != len(compiles):
            draws = [None] * len(compiles)
        for c, draw in zip(compiles, draws, strict=True):
            n = c.get("counters") or {}
            states = autotune_states(c)
            rows.append({"run_id": r["run_id"], "variant": r["variant"], "compile": c.get("phase"),
                         "autotuned kernels": draw,
                         **{k: int(n.get(k) or 0) for k in SHOWN},
                         **{f"autotune_cache_state={s}": int(states.get(s, 0))
                            for s in AUTOTUNE_STATES},
                         "reasons": "; ".join(c.get("reasons") or [])
                         if c.get("phase") != "cold" else ""})
    return pd.DataFrame(rows)


def roofline_table(variants: pd.DataFrame) -> pd.DataFrame:
    """One row per variant with a roofline figure (engine/measure/roofline.py): FLOPs and the
    two byte counts per call (the floor, and eager op by op), achieved TFLOP/s and GB/s at the
    variant's per-call median, and their shares of the GPU's measured ceilings (GPU only)."""
    df = _ok(variants)
    rows = []
    for label, (_, r) in zip(_labels(df), df.iterrows(), strict=True) if not df.empty else []:
        f = r.get("roofline") if isinstance(r.get("roofline"), dict) else {}
        if not f or f.get("error") or _num(f.get("flops_per_call")) is None:
            continue
        rows.append({"variant": label, "GFLOP/call": _num(f.get("flops_per_call")) / 1e9,
                     "MiB/call floor": _mib(f, "bytes_per_call_estimate"),
                     "MiB/call op by op": _mib(f, "bytes_per_call_ops"),
                     "TFLOP/s": _num(f.get("achieved_tflops")),
                     "GB/s floor": _num(f.get("achieved_gbps_estimate")),
                     "GB/s op by op": _num(f.get("achieved_gbps_ops")),
                     "% of peak TFLOP/s": _pct(f.get("share_of_peak_tflops")),
                     "% of copy GB/s floor": _pct(f.get("share_of_peak_gbps")),
                     "% of copy GB/s op by op": _pct(f.get("share_of_peak_gbps_ops"))})
    # a column nobody has (shares of the ceilings on a CPU, op by op in older results) is left
    # out rather than shown as a column of blanks
    return pd.DataFrame(rows).dropna(axis=1, how="all")


def _mib(f: dict[str, Any], key: str) -> float | None:
    v = _num(f.get(key))
    return None if v is None else v / 2**20


def _pct(v: Any) -> float | None:
    f = _num(v)
    return None if f is None else 100.0 * f


FORENSICS_FIGURES = ("compile_phases", "startup_strategies", "lost_time")


def forensics_figures(variants: pd.DataFrame) -> list[tuple[str, go.Figure]]:
    """The three forensics figures, in page order, as (key, figure)."""
    return [("compile_phases", compile_phases(variants)),
            ("startup_strategies", startup_strategies(variants)),
            ("lost_time", lost_time(variants))]
