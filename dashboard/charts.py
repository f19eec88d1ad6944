"""Every Plotly figure of the dashboard, each a pure function of storage's DataFrames.

No Streamlit here: these functions take the DataFrames documented in docs/CONTRACTS.md
(``variants``, ``warmup``, ``samples``, ``recompiles``, ``sweep_points``) and return a
``plotly.graph_objects.Figure``. Every figure has a title and axis titles that carry units,
so a screenshot pasted into a review still says what it measures.

When several runs are drawn together a variant is labelled ``#<run_id> <variant>``; with a single
run it is just the variant name. Colours follow the variant (eager is always grey) so the same
mode has the same colour in every chart; runs are told apart by line dash or by label.
"""

from __future__ import annotations

import functools
import math

import numpy as np
import pandas as pd
import plotly.graph_objects as go
import plotly.io as pio

from dashboard import downsample, safe
from engine import fmt

FASTER = "#2ca02c"  # green: compiled variant faster than eager
SLOWER = "#d62728"  # red: compiled variant slower than eager
EAGER = "#7f7f7f"
VARIANT_COLOURS = {
    "eager": EAGER,
    "default": "#1f77b4",
    "reduce-overhead": "#ff7f0e",
    "max-autotune": "#9467bd",
    "max-autotune-no-cudagraphs": "#8c564b",
}
_EXTRA_COLOURS = ["#17becf", "#bcbd22", "#e377c2", "#393b79", "#637939"]
_DASHES = ["solid", "dash", "dot", "dashdot", "longdash", "longdashdot"]
MiB = 2**20


# --------------------------------------------------------------------------- helpers


def variant_colour(variant: str) -> str:
    """Stable colour for a variant name (unknown names hash into a spare palette)."""
    if variant in VARIANT_COLOURS:
        return VARIANT_COLOURS[variant]
    return _EXTRA_COLOURS[sum(map(ord, str(variant))) % len(_EXTRA_COLOURS)]


def _multi_run(df: pd.DataFrame) -> bool:
    return "run_id" in df.columns and df["run_id"].nunique() > 1


def _labels(df: pd.DataFrame, multi: bool | None = None) -> list[str]:
    multi = _multi_run(df) if multi is None else multi
    if multi:
        return [f"#{r} {v}" for r, v in zip(df["run_id"], df["variant"], strict=True)]
    return [str(v) for v in df["variant"]]


def _dash_for_runs(df: pd.DataFrame) -> dict:
    runs = sorted(df["run_id"].unique()) if "run_id" in df.columns else []
    return {r: _DASHES[i % len(_DASHES)] for i, r in enumerate(runs)}


def _col(df: pd.DataFrame, name: str) -> pd.Series:
    """Numeric column (NaN where missing) — storage may hand back None/object dtype."""
    if name not in df.columns:
        return pd.Series(np.nan, index=df.index, dtype=float)
    return pd.to_numeric(df[name], errors="coerce")


def _ok(variants: pd.DataFrame) -> pd.DataFrame:
    if variants is None or variants.empty:
        return pd.DataFrame(columns=["run_id", "variant", "status"])
    if "status" in variants.columns:
        variants = variants[variants["status"] == "ok"]
    return variants.sort_values(["run_id", "variant"], key=_variant_sort_key).reset_index(drop=True)


def _variant_sort_key(col: pd.Series) -> pd.Series:
    if col.name != "variant":
        return col
    order = {v: i for i, v in enumerate(VARIANT_COLOURS)}
    return col.map(lambda v: order.get(v, len(order)))


# What these 2-D bar/box/scatter charts use of plotly_white's layout (no polar, geo, 3-D scene,
# colour scales).
_TEMPLATE_LAYOUT_KEYS = ("annotationdefaults", "autotypenumbers", "colorway", "font",
                         "hoverlabel", "hovermode", "paper_bgcolor", "plot_bgcolor",
                         "shapedefaults", "xaxis", "yaxis")


@functools.cache
def _template() -> go.layout.Template:
    """plotly_white cut down to what the charts here use (bar, box and scatter traces on x/y
    axes): they look the same.

    Why: plotly validates and deep-copies the whole template into every figure, and the full
    one (defaults for two dozen trace types, polar/geo/3-D axes, colour scales) took 11 of the
    ~25 ms a figure cost: ~150 ms of a four-run compare page. This one takes under 3 ms.
    """
    white = pio.templates["plotly_white"]
    layout = white.layout.to_plotly_json()
    return go.layout.Template(
        layout={k: layout[k] for k in _TEMPLATE_LAYOUT_KEYS if k in layout},
        data={k: white.data[k] for k in ("bar", "box", "scatter")})


def _layout(fig: go.Figure, title: str, x_title: str, y_title: str, subtitle: str = "",
            **kw) -> go.Figure:
    """Title (units in it), optional one-line subtitle (how to read it), legend above the plot."""
    t = {"text": title, "x": 0, "xanchor": "left", "yref": "container", "y": 0.98,
         "yanchor": "top"}
    if subtitle:
        t["subtitle"] = {"text": subtitle, "font": {"size": 12}}
    # The legend at the bottom takes its room from the plot: with a grid's nine configs in a
    # half-width column (one entry per line) the plot itself was squeezed to ~100 px. Grow the
    # figure by a line per entry past four (capped), so the plot keeps its height.
    entries = sum(1 for tr in fig.data if tr.name and tr.showlegend is not False)
    height = min(480 + 20 * max(entries - 4, 0), 960)
    fig.update_layout(
        title=t,
        xaxis_title=x_title,
        yaxis_title=y_title,
        template=_template(),
        # Legend at the bottom of the figure: it grows downwards with many runs/variants and
        # never covers the title (plotly reserves the space for a container-anchored legend).
        legend={"orientation": "h", "yref": "container", "y": 0.0, "yanchor": "bottom",
                "x": 0, "xanchor": "left"},
        margin={"t": 80, "l": 60, "r": 20},
        height=height,
        # Plotly shrinks a bar's label to fit the bar; in a narrow column with many bars that
        # gave unreadable 4-px labels. Below 10 px hide them: the hover still has the value.
        uniformtext={"minsize": 10, "mode": "hide"},
        **kw,
    )
    return fig


def _log_axis(fig: go.Figure, axis: str, values) -> None:
    """Log axis with readable ticks: 1-2-5 labels over a few decades, decades only beyond."""
    v = pd.to_numeric(pd.Series(values), errors="coerce")
    v = v[v > 0]
    update = fig.update_yaxes if axis == "y" else fig.update_xaxes
    if v.empty:
        update(type="log")
        return
    lo, hi = math.floor(math.log10(v.min())), math.ceil(math.log10(v.max()))
    steps = (1, 2, 5) if hi - lo <= 3 else (1,)
    ticks = [m * 10.0**k for k in range(lo, hi + 1) for m in steps
             if v.min() / 2.5 <= m * 10.0**k <= v.max() * 2.5]
    update(type="log", tickvals=ticks, ticktext=[f"{t:g}" for t in ticks])


def empty_message(fig: go.Figure) -> str | None:
    """The message of a figure drawn by ``empty_figure`` (None when it has data)."""
    if len(fig.data) or not fig.layout.annotations:
        return None
    return fig.layout.annotations[0].text


def empty_figure(title: str, message: str, x_title: str = "", y_title: str = "") -> go.Figure:
    """A titled figure with one centred message instead of data (keeps page layout stable)."""
    fig = go.Figure()
    _layout(fig, title, x_title, y_title)
    fig.add_annotation(
        text=message, showarrow=False, xref="paper", yref="paper", x=0.5, y=0.5,
        font={"size": 14},
    )
    fig.update_xaxes(visible=False)
    fig.update_yaxes(visible=False)
    return fig


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


def warmup_curve(warmup: pd.DataFrame, recompiles: pd.DataFrame | None = None) -> go.Figure:
    """Latency of each warm-up call (call 1 = cold compile), one line per variant, log y.

    Marks call 2 of ``reduce-overhead`` (CUDA graph recording) and the calls at which a
    recompile happened (from ``recompiles.call_index``).
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
    notes = 0
    # one note per reduce-overhead line while they fit; a grid's many pile up over the lines,
    # and the subtitle already says it ("reduce-overhead records CUDA graphs on call 2")
    ro_lines = df.loc[df["variant"].astype(str).str.contains("reduce-overhead"),
                      ["run_id", "variant"]].drop_duplicates()
    annotate_ro = len(ro_lines) <= MAX_CROSSING_ARROWS
    for (run_id, variant), g in df.groupby(["run_id", "variant"], sort=False):
        label = f"#{run_id} {variant}" if multi else str(variant)
        fig.add_trace(go.Scatter(
            name=label, x=g["call_index"], y=g["ms"], mode="lines+markers",
            line={"color": variant_colour(variant), "dash": dashes.get(run_id, "solid")},
            hovertemplate="call %{x}<br>%{y:.4g} ms<extra>" + label + "</extra>",
        ))
        if annotate_ro and "reduce-overhead" in str(variant):
            call2 = g[g["call_index"] == 2]
            if not call2.empty:
                fig.add_annotation(
                    x=2, y=math.log10(max(float(call2["ms"].iloc[0]), 1e-9)),
                    text=f"{label}: call 2 records CUDA graphs", showarrow=True, arrowhead=2,
                    ax=40 + 10 * notes, ay=-30 - 24 * notes, font={"size": 11},
                    bgcolor="rgba(255,255,255,0.8)",
                )
                notes += 1  # several runs: one note above the other, not on top of it
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
    sub = (f"{downsample.note(thin, 'calls')} · " if thin.thinned else "") + WARMUP_CURVE_SUB
    return _layout(fig, WARMUP_CURVE_TITLE, x_title, y_title, sub)


# --------------------------------------------------------------------------- steady state

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
SPEEDUP_SUB = "paired eager ÷ variant per call · CI over processes · ○ one process"


def speedup(variants: pd.DataFrame) -> go.Figure:
    """Speedup (eager median ÷ variant median, paired rounds) with bootstrap-CI error bars.

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


# --------------------------------------------------------------------------- break-even

BREAK_EVEN_TITLE = "Break-even: cumulative time vs number of calls (s)"
BREAK_EVEN_SUB = "first call (compile) + (n − 1) steady calls · where a line crosses eager, " \
    "compiling has paid off"


def _break_even_rows(variants: pd.DataFrame) -> list[dict]:
    """Per ok compile variant: its own and eager's first-call cost, per-call cost, break-even.

    Cumulative time of n calls = first call + (n - 1) × steady-state median, with the paired
    eager median and the eager first call that ``engine.stats.break_even_calls`` used, so the
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
        # ends of several such lines pile up on each other (seen with four H200 modes).
        name = label if be is not None else f"{label} — never breaks even (slower per call)"
        if be is not None and not labelled:
            name = f"{label} — breaks even after {fmt.calls(be)}"
        fig.add_trace(go.Scatter(
            name=name, x=n, y=y, mode="lines",
            line={"color": variant_colour(r["variant"]), "dash": dashes[rid]},
            hovertemplate="%{x:,.0f} calls<br>%{y:.4g} s<extra>" + label + "</extra>",
        ))
        if be is not None:
            nx = max(be, 1.0)  # engine/stats.py: smallest n with compiled(n) <= eager(n)
            ny = r["first_s"] + (nx - 1) * r["median_ms"] / 1000
            text = f"{label} breaks even after {fmt.calls(be)} ({fmt.seconds(ny)})"
            if not labelled:
                points.append((nx, ny, text))
                continue
            fig.add_annotation(
                x=math.log10(nx), y=math.log10(max(ny, 1e-12)),
                text=text, showarrow=True, arrowhead=2, ax=-70, ay=-35 - 28 * crossings,
                font={"size": 11}, bgcolor="rgba(255,255,255,0.8)",
            )
            crossings += 1
    if points:
        fig.add_trace(go.Scatter(
            name="break-even point", x=[p[0] for p in points], y=[p[1] for p in points],
            mode="markers", marker={"color": "black", "size": 8, "symbol": "x"},
            text=[p[2] for p in points], hovertemplate="%{text}<extra></extra>"))
    fig.update_xaxes(type="log")
    _log_axis(fig, "y", np.concatenate(all_y))
    return _layout(fig, BREAK_EVEN_TITLE, x_title, y_title, BREAK_EVEN_SUB)


# --------------------------------------------------------------------------- resources

MEMORY_TITLE = "Peak memory per variant (MiB)"


def _mib_label(value) -> str:
    """Bar label in MiB without the unit (the axis has it): short enough to stay legible."""
    if not fmt.is_num(value):
        return ""
    v = float(value) / MiB
    return f"{v:,.0f}" if v >= 10 else f"{v:.1f}"


def peak_memory(variants: pd.DataFrame) -> go.Figure:
    """Peak allocated and reserved device memory per variant (each measured in its own process)."""
    x_title, y_title = "variant", "peak memory (MiB)"
    df = _ok(variants)
    alloc, reserved = _col(df, "peak_allocated_bytes"), _col(df, "peak_reserved_bytes")
    if df.empty or (alloc.isna().all() and reserved.isna().all()):
        return empty_figure(MEMORY_TITLE, "Peak memory is measured on CUDA devices only.",
                            x_title, y_title)
    labels = _labels(df)
    fig = go.Figure()
    for y, name, colour in [(alloc, "allocated", "#1f77b4"),
                            (reserved, "reserved (caching allocator)", "#aec7e8")]:
        if y.notna().any():
            fig.add_trace(go.Bar(
                name=name, x=labels, y=y / MiB, marker_color=colour,
                text=[_mib_label(v) for v in y], textposition="outside",
                hovertemplate="%{x}<br>%{y:,.1f} MiB<extra>" + name + "</extra>",
            ))
    return _layout(fig, MEMORY_TITLE, x_title, y_title,
                   "peak allocated and reserved, each variant in its own process",
                   barmode="group")


KERNELS_TITLE = "Kernels per call (count)"


def kernels_per_call(variants: pd.DataFrame) -> go.Figure:
    """Device kernels per call per variant; fewer kernels usually means fusion worked."""
    x_title, y_title = "variant", "kernels per call (count)"
    df = _ok(variants)
    k = _col(df, "kernels_per_call")
    if df.empty or k.isna().all():
        return empty_figure(KERNELS_TITLE, "No kernel counts recorded (profiler pass off, or "
                            "no device kernels on this device).",
                            x_title, y_title)
    df = df.assign(k=k)[k.notna()]
    labels = _labels(df)
    fig = go.Figure(go.Bar(
        name="kernels per call", x=labels, y=df["k"],
        marker_color=[variant_colour(v) for v in df["variant"]],
        text=[f"{v:.4g}" for v in df["k"]], textposition="outside",
        hovertemplate="%{x}<br>%{y:.4g} kernels per call<extra></extra>",
    ))
    return _layout(fig, KERNELS_TITLE, x_title, y_title,
                   "device kernels launched per call, from a separate profiler pass",
                   showlegend=False)


DEVICE_BUSY_TITLE = "Device busy vs wall time per call (ms)"
DEVICE_BUSY_SUB = "busy: kernel time on the device, profiler pass · wall: steady-state median " \
    "per call"


def device_busy(variants: pd.DataFrame) -> go.Figure:
    """Time the device spent in kernels per call vs the wall time of a call.

    Busy time comes from the separate profiler pass (the profiler slows the host, not the
    kernels); wall time is the steady-state median per call, as the engine stores it. A big
    gap means the device sits idle waiting for the host (launch/Python overhead), which fusion
    (fewer kernels) and CUDA graphs (reduce-overhead) shrink. Empty without busy times (CPU
    runs, or the profiler pass switched off): wall alone would repeat the latency chart.
    """
    x_title, y_title = "variant", "time per call (ms)"
    df = _ok(variants)
    # wall: the same per-call median every other figure and the verdict use
    busy, wall = _col(df, "device_busy_ms_per_call"), _col(df, "median_ms")
    if df.empty or busy.isna().all():
        return empty_figure(DEVICE_BUSY_TITLE, "No device busy times: they come from the "
                            "profiler pass on CUDA devices (off, or a CPU run).",
                            x_title, y_title)
    labels = _labels(df)
    share = [f"{b / w:.0%} busy" if fmt.is_num(b) and fmt.is_num(w) and w > 0 else ""
             for b, w in zip(busy, wall, strict=True)]
    fig = go.Figure([
        go.Bar(name="device busy", x=labels, y=busy, marker_color="#2ca02c", text=share,
               textposition="outside",
               hovertemplate="%{x}<br>%{y:.4g} ms busy<extra></extra>"),
        go.Bar(name="wall", x=labels, y=wall, marker_color="#c7c7c7",
               hovertemplate="%{x}<br>%{y:.4g} ms wall<extra></extra>"),
    ])
    return _layout(fig, DEVICE_BUSY_TITLE, x_title, y_title, DEVICE_BUSY_SUB, barmode="group")


# --------------------------------------------------------------------------- sweeps


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
    if sweep_points is None or sweep_points.empty:
        return empty_figure(title, "This run has no sweep points.", x_title, y_title)
    df = _sweep_frame(sweep_points, "median_ms")
    fig = _sweep_lines(df, "median_ms", title, x_title, y_title, error_bars=True)
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
    if sweep_points is None or sweep_points.empty:
        return empty_figure(title, "This run has no sweep points.", x_title, y_title)
    df = _sweep_frame(sweep_points, "first_call_ms")
    fig = _sweep_lines(df, "first_call_ms", title, x_title, y_title, error_bars=False)
    if not df.empty:
        _log_axis(fig, "y", df["first_call_ms"])
    return fig


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


def _eager_line(fig: go.Figure) -> None:
    """The dashed 1.0× line that every speedup chart measures against."""
    fig.add_hline(y=1.0, line_dash="dash", line_color="#000000", line_width=1.5,
                  annotation_text="eager = 1.0×", annotation_position="top right",
                  annotation_bgcolor="rgba(255,255,255,0.8)")


ALL_COMPARE_FIGURES = (
    "warmup_cost", "warmup_curve", "latency_distribution", "speedup", "break_even",
    "peak_memory", "kernels_per_call", "device_busy",
)


def compare_figures(data: dict[str, pd.DataFrame]) -> list[tuple[str, go.Figure]]:
    """All comparison figures for a ``load_runs`` result, in page order, as (key, figure)."""
    variants = data.get("variants", pd.DataFrame())
    return [
        ("warmup_cost", warmup_cost(variants)),
        ("warmup_curve", warmup_curve(data.get("warmup"), data.get("recompiles"))),
        ("latency_distribution", latency_distribution(data.get("samples"))),
        ("speedup", speedup(variants)),
        ("break_even", break_even(variants)),
        ("peak_memory", peak_memory(variants)),
        ("kernels_per_call", kernels_per_call(variants)),
        ("device_busy", device_busy(variants)),
    ]
