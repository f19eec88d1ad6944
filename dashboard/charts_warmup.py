"""Figures of what compiling costs and when it pays off: warm-up cost, warm-up curve, break-even.

``warmup_cost`` and ``break_even`` read the ``variants`` DataFrame (first calls, medians, the
stored ``break_even_calls``), ``warmup_curve`` the ``warmup`` and ``recompiles`` frames
(docs/CONTRACTS.md). No Streamlit; colours, labels and layout come from ``charts_base``.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import plotly.graph_objects as go

from contract import fmt
from dashboard import downsample, safe
from dashboard.charts_base import (
    _DASHES,
    EAGER,
    _col,
    _dash_for_runs,
    _labels,
    _layout,
    _log_axis,
    _multi_run,
    _ok,
    _variant_sort_key,
    corner_note,
    empty_figure,
    note_marker,
    variant_colour,
)

# --------------------------------------------------------------------------- warm-up


WARMUP_COST_TITLE = "Warm-up cost: first call per variant (s)"
WARMUP_COST_SUB = "cold: empty inductor cache · warm: the further processes reusing that cache"


def warmup_cost(variants: pd.DataFrame) -> go.Figure:
    """First-call time per variant: cold cache (fresh inductor cache dir) vs warm cache.

    For ``eager`` this is eager's own first call; for a compile variant it is compile + one call.
    """
    x_title, y_title = "variant", "first call time (s)"
    df = _ok(variants)
    df = df[_col(df, "first_call_cold_s").notna() | _col(df, "first_call_warm_s").notna()]
    if df.empty:
        return empty_figure(WARMUP_COST_TITLE, "No first-call times recorded.", x_title, y_title)
    labels = _labels(df)
    fig = go.Figure()
    for column, name, colour in [
        ("first_call_cold_s", "cold cache", "#1f77b4"),
        ("first_call_warm_s", "warm cache", "#aec7e8"),
    ]:
        y = _col(df, column)
        if y.notna().any():
            fig.add_trace(go.Bar(
                name=name, x=labels, y=y, marker_color=colour,
                text=[fmt.seconds(v) for v in y], textposition="outside",
                hovertemplate="%{x}<br>%{y:.3f} s<extra>" + name + "</extra>",
            ))
    return _layout(fig, WARMUP_COST_TITLE, x_title, y_title, WARMUP_COST_SUB, barmode="group")


WARMUP_CURVE_TITLE = "Warm-up curve: calls 1..N per variant (ms, log scale)"
# More arrows with text than this pile up over a chart (a grid of eight configs did).
MAX_CROSSING_ARROWS = 3
WARMUP_CURVE_SUB = "call 1 compiles; reduce-overhead records CUDA graphs on call 2; ✕ = recompile"
WARMUP_CURVE_SUB_NO_GRAPHS = "call 1 compiles; ✕ = recompile"


def warmup_curve(warmup: pd.DataFrame, recompiles: pd.DataFrame | None = None,
                 cuda_runs: set[int] | None = None) -> go.Figure:
    """Latency of each warm-up call (call 1 = cold compile), one line per variant, log y.

    Marks call 2 of ``reduce-overhead`` (CUDA graph recording) on the runs in ``cuda_runs``
    (None: every run; a CPU run records no CUDA graph, and saying so there misleads) and the
    calls at which a recompile happened (from ``recompiles.call_index``).
    """
    x_title, y_title = "call number (1 = first call, includes compile)", "latency (ms, log scale)"
    if warmup is None or warmup.empty:
        return empty_figure(WARMUP_CURVE_TITLE, "No warm-up calls recorded.", x_title, y_title)
    df = warmup.copy()
    df["ms"] = _col(df, "ms")
    df["call_index"] = _col(df, "call_index")
    df = df.dropna(subset=["ms", "call_index"]).sort_values(["run_id", "variant", "call_index"])
    thin = downsample.stride(df, ["run_id", "variant"])  # a hostile bundle's million calls
    df = thin.frame.sort_values(["run_id", "variant", "call_index"], key=_variant_sort_key)
    multi = _multi_run(df)
    dashes = _dash_for_runs(df)
    fig = go.Figure()
    recorded: list[tuple[float, str, str]] = []  # (call 2's ms, colour, note)
    # one note per reduce-overhead line while they fit; a grid's many pile up over the lines,
    # and the subtitle already says it ("reduce-overhead records CUDA graphs on call 2")
    on_cuda = df["run_id"].isin(cuda_runs) if cuda_runs is not None else True
    ro_lines = df.loc[df["variant"].astype(str).str.contains("reduce-overhead") & on_cuda,
                      ["run_id", "variant"]].drop_duplicates()
    annotate_ro = len(ro_lines) <= MAX_CROSSING_ARROWS
    for (run_id, variant), g in df.groupby(["run_id", "variant"], sort=False):
        label = f"#{run_id} {variant}" if multi else str(variant)
        fig.add_trace(go.Scatter(
            name=label, x=g["call_index"], y=g["ms"], mode="lines+markers",
            line={"color": variant_colour(variant), "dash": dashes.get(run_id, "solid")},
            hovertemplate="call %{x}<br>%{y:.4g} ms<extra>" + label + "</extra>",
        ))
        if annotate_ro and "reduce-overhead" in str(variant) and (
                cuda_runs is None or run_id in cuda_runs):
            call2 = g[g["call_index"] == 2]
            if not call2.empty:
                recorded.append((float(call2["ms"].iloc[0]), variant_colour(variant),
                                 f"{label}: call 2 records CUDA graphs (○)"))
    for i, (_, colour, note) in enumerate(recorded):  # top right: call 1 is high on the left
        corner_note(fig, i, note, colour, right=True)
    if recorded:
        note_marker(fig, "call 2 records CUDA graphs", [2] * len(recorded),
                    [r[0] for r in recorded], [r[1] for r in recorded],
                    [r[2] for r in recorded])
    if recompiles is not None and not recompiles.empty and "call_index" in recompiles.columns:
        rc = recompiles.copy()
        rc["call_index"] = _col(rc, "call_index")
        rc = rc.dropna(subset=["call_index"])
        if "dim_value" in rc.columns:  # sweep recompiles count calls at another shape
            rc = rc[_col(rc, "dim_value").isna()]
        merged = rc.merge(df, on=["run_id", "variant", "call_index"], how="inner")
        if not merged.empty:
            reasons = merged["reason"].fillna("").astype(str).str.slice(0, 120).map(
                safe.plotly_text)  # dynamo's guard text, shown as text
            fig.add_trace(go.Scatter(
                name="recompile", x=merged["call_index"], y=merged["ms"], mode="markers",
                marker={"symbol": "x", "size": 13, "color": "#000000", "line": {"width": 2}},
                text=reasons,
                hovertemplate="recompile at call %{x}<br>%{text}<extra></extra>",
            ))
    _log_axis(fig, "y", df["ms"])
    fig.update_xaxes(dtick=1 if df["call_index"].max() <= 50 else None)
    sub = (f"{downsample.note(thin, 'calls')} · " if thin.thinned else "") + (
        WARMUP_CURVE_SUB if len(ro_lines) else WARMUP_CURVE_SUB_NO_GRAPHS)
    return _layout(fig, WARMUP_CURVE_TITLE, x_title, y_title, sub)



# --------------------------------------------------------------------------- break-even

BREAK_EVEN_TITLE = "Break-even: cumulative time vs number of calls (s)"
BREAK_EVEN_SUB = "first call (compile) + (n − 1) steady calls · where a line crosses eager, " \
    "compiling has paid off"


def _break_even_rows(variants: pd.DataFrame) -> list[dict]:
    """Per ok compile variant: its own and eager's first-call cost, per-call cost, break-even.

    Cumulative time of n calls = first call + (n - 1) × steady-state median, with the paired
    eager median and the eager first call that ``engine.analysis.stats.break_even_calls`` used, so the
    lines cross exactly at the stored ``break_even_calls`` (the one break-even, computed once;
    results from before ``eager_first_call_ms`` was stored fall back to eager's own first call).
    """
    rows = []
    df = _ok(variants)
    if df.empty:
        return rows
    for run_id, g in df.groupby("run_id", sort=False):
        eager = g[g["variant"] == "eager"]
        eager_first = fmt.num(eager["first_call_cold_s"].iloc[0]) if not eager.empty else None
        for _, r in g[g["variant"] != "eager"].iterrows():
            med, e_med = fmt.num(r.get("median_ms")), fmt.num(r.get("eager_median_ms"))
            first = fmt.num(r.get("first_call_cold_s"))
            if med is None or first is None or e_med is None:
                continue
            e_first_ms = fmt.num(r.get("eager_first_call_ms"))
            e_first = e_first_ms / 1000.0 if e_first_ms is not None else eager_first
            rows.append({"run_id": run_id, "variant": r["variant"], "first_s": first,
                         "median_ms": med, "eager_first_s": e_first or e_med / 1000.0,
                         "eager_median_ms": e_med,
                         "break_even_calls": fmt.num(r.get("break_even_calls"))})
    return rows


def break_even(variants: pd.DataFrame, max_calls: float | None = None) -> go.Figure:
    """Cumulative wall time of n calls for eager and each compiled variant, crossings annotated.

    A compiled variant pays its compile on call 1 and saves (eager − compiled) per later call;
    where its line crosses eager's, compiling has paid for itself. "never" when it is slower.
    """
    x_title = "number of calls (count, log scale)"
    y_title = "cumulative time incl. first call (s, log scale)"
    rows = _break_even_rows(variants)
    if not rows:
        return empty_figure(BREAK_EVEN_TITLE, "Needs eager and at least one compiled variant.",
                            x_title, y_title)
    finite = [r["break_even_calls"] for r in rows if r["break_even_calls"] is not None]
    if max_calls is None:
        max_calls = max([1e4] + [10 * (b + 1) for b in finite])
    max_calls = min(max(max_calls, 10.0), 1e12)
    n = np.unique(np.round(np.geomspace(1, max_calls, 240)))
    multi = len({r["run_id"] for r in rows}) > 1
    dashes = {rid: _DASHES[i % len(_DASHES)]
              for i, rid in enumerate(sorted({r["run_id"] for r in rows}))}
    fig = go.Figure()
    seen_eager = set()
    crossings = 0
    crossed: list[tuple[float, float, str, str]] = []
    all_y = []
    # Arrows with text for a few crossings; past that they pile up over the title (seen with
    # a grid of eight configs), so each crossing is a point and its legend entry names it.
    labelled = sum(r["break_even_calls"] is not None for r in rows) <= MAX_CROSSING_ARROWS
    points: list[tuple[float, float, str]] = []
    for r in rows:
        rid = r["run_id"]
        if rid not in seen_eager:
            seen_eager.add(rid)
            label = f"#{rid} eager" if multi else "eager"
            y = r["eager_first_s"] + (n - 1) * r["eager_median_ms"] / 1000
            all_y.append(y)
            fig.add_trace(go.Scatter(
                name=label, x=n, y=y,
                mode="lines", line={"color": EAGER, "dash": dashes[rid], "width": 3},
                hovertemplate="%{x:,.0f} calls<br>%{y:.4g} s<extra>" + label + "</extra>",
            ))
        label = f"#{rid} {r['variant']}" if multi else str(r["variant"])
        y = r["first_s"] + (n - 1) * r["median_ms"] / 1000
        all_y.append(y)
        be = r["break_even_calls"]
        # A variant that never pays off says so in its legend entry: arrows to the right-hand
        # ends of several such lines pile up on each other (four modes that never pay off).
        name = label if be is not None else f"{label} — never breaks even (slower per call)"
        if be is not None and not labelled:
            name = f"{label} — breaks even after {fmt.calls(be)}"
        fig.add_trace(go.Scatter(
            name=name, x=n, y=y, mode="lines",
            line={"color": variant_colour(r["variant"]), "dash": dashes[rid]},
            hovertemplate="%{x:,.0f} calls<br>%{y:.4g} s<extra>" + label + "</extra>",
        ))
        if be is not None:
            nx = max(be, 1.0)  # engine/analysis/stats.py: smallest n with compiled(n) <= eager(n)
            ny = r["first_s"] + (nx - 1) * r["median_ms"] / 1000
            text = f"{label} breaks even after {fmt.calls(be)} ({fmt.seconds(ny)})"
            if not labelled:
                points.append((nx, ny, text))
                continue
            # top left, above the compiled lines' flat start; the point gets a ring
            crossed.append((nx, ny, variant_colour(r["variant"]), text + " (○)"))
            corner_note(fig, crossings, text + " (○)", variant_colour(r["variant"]))
            crossings += 1
    if crossed:
        note_marker(fig, "break-even point", [c[0] for c in crossed], [c[1] for c in crossed],
                    [c[2] for c in crossed], [c[3] for c in crossed])
    if points:
        fig.add_trace(go.Scatter(
            name="break-even point", x=[p[0] for p in points], y=[p[1] for p in points],
            mode="markers", marker={"color": "black", "size": 8, "symbol": "x"},
            text=[p[2] for p in points], hovertemplate="%{text}<extra></extra>"))
    fig.update_xaxes(type="log")
    _log_axis(fig, "y", np.concatenate(all_y))
    return _layout(fig, BREAK_EVEN_TITLE, x_title, y_title, BREAK_EVEN_SUB)
