"""The shared look of every dashboard figure: variant colours, labels, layout, empty figures.

Every chart module (``charts_warmup``, ``charts_latency``, ``charts_resources``, ``charts_sweep``,
``charts_forensics``, ``charts_pareto``, ``charts_review``) builds on these helpers, so all
figures read alike: a title and axis titles that carry units (a screenshot pasted into a review
still says what it measures), a one-line subtitle on how to read it, the legend below the plot.

When several runs are drawn together a variant is labelled ``#<run_id> <variant>``; with a single
run it is just the variant name. Colours follow the variant (eager is always grey) so the same
mode has the same colour in every chart; runs are told apart by line dash or by label.

The underscored helpers (``_layout``, ``_ok``, ``_labels``, ``_col``, ...) are shared by the chart
modules only; pages use ``empty_figure`` / ``empty_message`` and the colour constants.
"""

from __future__ import annotations

import functools
import math

import numpy as np
import pandas as pd
import plotly.graph_objects as go
import plotly.io as pio

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


NOTE_STEP = 0.085  # one stacked note's height, as a share of the plot's


def corner_note(fig: go.Figure, i: int, text: str, colour: str, right: bool = False) -> None:
    """Note ``i`` stacked in the plot's top corner (left, or ``right``), on an opaque box in
    the colour of what it names.  Notes placed by arrows beside their points fell on each
    other (two points at different heights, the same offset) and lines ran through them; the
    point itself gets a marker instead (``note_marker``)."""
    fig.add_annotation(
        text=text, showarrow=False, xref="paper", yref="paper", x=0.99 if right else 0.01,
        y=0.99 - NOTE_STEP * i, xanchor="right" if right else "left", yanchor="top",
        font={"size": 11, "color": colour}, bgcolor="rgba(255,255,255,1)",
        bordercolor=colour, borderwidth=1, borderpad=3)


def note_marker(fig: go.Figure, name: str, xs: list[float], ys: list[float],
                colours: list[str], texts: list[str]) -> None:
    """The points that stacked notes describe: open circles in their line's colour."""
    fig.add_trace(go.Scatter(
        name=name, x=xs, y=ys, mode="markers", text=texts, hovertemplate="%{text}<extra></extra>",
        marker={"symbol": "circle-open", "size": 14, "color": colours, "line": {"width": 2.5}}))


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



EAGER_LINE = "eager = 1.0×"


def _eager_line(fig: go.Figure) -> None:
    """The dashed 1.0× line that every speedup chart measures against, named in the legend:
    a label on the line itself sat on the last bar or point (grey on a green bar at 1440 px)."""
    line = {"dash": "dash", "color": "#000000", "width": 1.5}
    fig.add_hline(y=1.0, line_dash=line["dash"], line_color=line["color"],
                  line_width=line["width"])
    fig.add_trace(go.Scatter(x=[None], y=[None], mode="lines", line=line, name=EAGER_LINE,
                             hoverinfo="skip"))
