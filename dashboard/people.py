"""Tables for people: human column names with units, "–" with a tooltip instead of ``None``,
times to the second in the viewer's time zone, sensible widths (Streamlit column configs).

The frames themselves keep their machine names (``run_id``, ``median_ms``: what the CSV export
and the tests read); only how the page shows them lives here. Missing numbers go through a
pandas ``Styler`` whose ``na_rep`` is the dash: Streamlit keeps the number for sorting and shows
the formatted text.
"""

from __future__ import annotations

from typing import Any

import pandas as pd
import streamlit as st

from dashboard import safe
from dashboard.tables import DASH

WHY_EMPTY = f"{DASH} means not measured or not applicable here"


def viewer_timezone() -> str | None:
    """The browser's time zone (``st.context.timezone``), None outside a browser session."""
    try:
        return st.context.timezone or None
    except Exception:  # noqa: BLE001 - AppTest and bare mode have no browser
        return None


def when(label: str = "Created") -> Any:
    tz = viewer_timezone()
    return st.column_config.DatetimeColumn(
        label, format="YYYY-MM-DD HH:mm:ss", timezone=tz, width="medium",
        help=f"In your time zone ({tz})" if tz else "UTC")


def _text(label: str, help_: str | None = None, width: str | int | None = None) -> Any:
    return st.column_config.TextColumn(label, help=help_, width=width)


# Pixels per character of the data grid's 14 px Source Sans, by class, rounded up from the
# font's advance widths (digits and most lower case ~6.5-7, i l t f r and punctuation ~3-4.5,
# m w and capitals wider), and the cell's padding plus the sort arrow. Seven pixels for every
# character made the Runs table a fifth wider than its text: at 1440 px its Shape column ran
# past the page.
CHAR_PX, PAD_PX, MAX_PX = 7, 24, 460
_NARROW = frozenset(" ,.:;'|!()[]·-/ijlftr")
_WIDE = frozenset("mwMW@%#")


def text_px(text: str) -> float:
    """About how many pixels ``text`` takes in a grid cell (never less than it does)."""
    return sum(4.5 if c in _NARROW else 11 if c in _WIDE else 9 if c.isupper() else CHAR_PX
               for c in text)


def fit_width(values: Any, label: str, least: int = 56, most: int = MAX_PX) -> int:
    """A column width in pixels that shows ``label`` and every value whole (up to ``most``; a
    longer text is cut there, with the whole of it in the CSV and on the run's page)."""
    # 30: the sort arrow and the column menu's icon, both beside the label once sorted
    longest = max([text_px(label) + 30, *(text_px(str(v)) for v in values)])
    return int(min(max(least, longest + PAD_PX), most))


def speedup_text(value: float) -> str:
    """``0.29× slower`` / ``1.32× faster``: which side of eager a speedup lies on, in words, so
    a figure below 1 never reads as a speedup (the cell keeps the number: it sorts as one)."""
    if not isinstance(value, int | float) or value != value:
        return str(value)
    shown = f"{value:.2f}×"
    if round(value, 2) == 1:
        return shown + " even"
    return shown + (" slower" if value < 1 else " faster")


RUN_LABELS = {"run_id": "Run", "model": "Model", "dims_label": "Shape", "dtype": "dtype",
              "device": "Device", "gpu": "GPU", "torch_version": "torch", "status": "Status",
              "variants": "Variants", "best_speedup": "Best speedup",
              "cautions": "Cautions", "created_at": "Created", "tags": "Tags", "note": "Note"}


# The Runs grid's width at 1440 px (wide layout, sidebar open: 980 px) less its row-selection
# column: the columns that decide a run (up to Shape) share it; the long texts give way first,
# cut with "…" (whole on the run's page and in the CSV) rather than the table running past the
# page with Shape cut at its edge.
FIT_PX, FIT_UPTO, GIVE_WAY, LEAST_PX = 936, "dims_label", ("cautions", "dims_label"), 150


def fit_page(widths: dict[str, int], order: list[str]) -> dict[str, int]:
    """``widths`` with the ``GIVE_WAY`` columns narrowed, in proportion to what they have above
    LEAST_PX, until the columns of ``order`` up to FIT_UPTO add up to at most FIT_PX."""
    deciding = order[: order.index(FIT_UPTO) + 1] if FIT_UPTO in order else order
    over = sum(widths.get(c, 0) for c in deciding) - FIT_PX
    spare = {c: widths[c] - LEAST_PX for c in GIVE_WAY if widths.get(c, 0) > LEAST_PX}
    if over <= 0 or not spare:
        return widths
    cut = min(1.0, over / sum(spare.values()))
    return {**widths, **{c: int(widths[c] - s * cut) for c, s in spare.items()}}


def runs_columns(table: pd.DataFrame | None = None) -> dict[str, Any]:
    """Column configs of ``tables.runs_table`` on the Runs page, each as wide as its content
    (``table``), the deciding ones fit into the page at 1440 px (``fit_page``)."""
    fitted: dict[str, int] = {}
    if table is not None:
        shown = {c: table[c].map(speedup_text) if c == "best_speedup" else table[c]
                 for c in table.columns if c in RUN_LABELS}
        fitted = fit_page({c: fit_width(v, RUN_LABELS[c]) for c, v in shown.items()},
                          list(table.columns))

    def px(col: str) -> int | None:
        return fitted.get(col)

    return {
        "run_id": st.column_config.NumberColumn("Run", format="#%d", width=px("run_id")),
        "model": _text("Model", width=px("model")),
        "dims_label": _text("Shape", "The model's dims (batch, seq, hidden, …)", px("dims_label")),
        "dtype": _text("dtype", width=px("dtype")),
        "device": _text("Device", width=px("device")),
        "gpu": _text("GPU", f"GPU model the run used; cpu for CPU runs; {DASH}: not "
                     "recorded yet (queued)", px("gpu")),
        "torch_version": _text("torch", f"torch release of the worker; {DASH}: not "
                               "recorded yet (queued)", px("torch_version")),
        "status": _text("Status", width=px("status")),
        "variants": _text("Variants", "eager and the compile modes the run measures",
                          px("variants")),
        "best_speedup": st.column_config.NumberColumn(
            "Best speedup", width=px("best_speedup"),
            help="Best compile variant: eager median ÷ variant median, × eager's speed "
                 "(0.50× slower: takes twice as long as eager; 2.00× faster: half as long); "
                 f"{DASH}: no compiled variant finished. Sorts by the number. Read it with the "
                 "Cautions beside it."),
        "cautions": _text(
            "Cautions", "What the run's own verdict says about its figures: noisy (IQR over "
            "10 % of the median), busy host (other processes kept CPU cores busy while it was "
            "timed), host speed moved (between its processes), processes disagree (beyond "
            "their own noise), provisional (still measuring). none: no such caution; "
            f"{DASH}: no results yet. The run's page says each in full.", px("cautions")),
        "created_at": when(),
        "tags": _text("Tags", width=px("tags")),
        "note": _text("Note", f"First line of the run's note; {DASH}: none", px("note")),
    }


def flag_distrusted(styler: Any, table: pd.DataFrame) -> Any:
    """The best speedup of a run whose verdict cautions about its figures, in amber: the
    figure is not shown bare (the Cautions column says why)."""
    distrusted = ~table["cautions"].isin(["none", DASH, ""])

    def colour(column: pd.Series) -> list[str]:
        return ["color: #b45309; font-weight: 600" if bad else "" for bad in distrusted]

    return styler.apply(colour, subset=["best_speedup"])


# Compare page: the headline figures of each variant, human names with units.
VARIANT_HEADLINE: dict[str, tuple[str, str, str | None]] = {
    # csv column: (label, number format, tooltip)
    "run_id": ("Run", "#{:.0f}", None),
    "variant": ("Variant", "{}", None),
    "status": ("Status", "{}", None),
    "median_ms": ("Median (ms/call)", "{:.4g}", "Steady-state per-call median, device idle "
                  "before each call"),
    # The eager the row's speedup divides, as show prints it: without it a row read "median
    # 4.28 ms, speedup 1.54×" beside eager's own 4.70 ms (a run whose variants each kept the
    # eager of their own paired rounds, e.g. the shipped bundle's).
    "eager_median_ms": ("Eager (ms/call)", "{:.4g}", "The eager time this row's speedup is "
                        "measured against: speedup = eager ÷ median"),
    "pipelined_median_ms": ("Pipelined (ms/call)", "{:.4g}", "K calls back to back, one "
                            "synchronise, ÷ K"),
    "speedup_x": ("Speedup (×)", "{:.2f}", "eager ÷ median; below 1.00 = slower than eager"),
    "speedup_ci_low_x": ("95 % CI low (×)", "{:.2f}", None),
    "speedup_ci_high_x": ("95 % CI high (×)", "{:.2f}", None),
    "first_call_cold_s": ("1st call, cold (s)", "{:.3g}", "Compile + one call, empty cache"),
    "first_call_warm_s": ("1st call, warm cache (s)", "{:.3g}", "The same in a fresh "
                          "process reusing the cache"),
    "break_even_calls": ("Break-even (calls)", "{:,.0f}", f"Calls until compiling pays off; "
                         f"{DASH}: never (compiled not faster) or not applicable"),
    "peak_allocated_mib": ("Peak memory (MiB)", "{:,.1f}", f"GPU only; {DASH} on CPU"),
    "kernels_per_call": ("Kernels per call", "{:.0f}", f"From the profiler pass; {DASH} on "
                         "CPU or without it"),
    "graph_breaks": ("Graph breaks", "{:.0f}", None),
    "recompiles": ("Recompiles", "{:.0f}", None),
    "accuracy_ok": ("Accurate (fp64)", "{}", "Error against a float64 run of the model within "
                    "the multiple of eager's own error (training: losses, gradients, "
                    "parameter updates); the older within-tolerance check is in the CSV as "
                    "'correct'"),
    "compiled_error_vs_reference": ("Error vs fp64", "{:.2e}", "RMSE against the float64 "
                                    "reference, the tensor (or group) that decided"),
    "eager_error_vs_reference": ("Eager error vs fp64", "{:.2e}", "Eager's own RMSE against "
                                 "the float64 reference, same tensor"),
    "accuracy_judged_tensor": ("Judged on", "{}", "The tensor both errors are of: a compiled "
                               "variant's nearest its allowance, eager's its largest error, "
                               "so training rows can name different ones"),
    "accuracy_multiplier": ("Allowed ×", "{:g}", "Compiled may be this many times eager's "
                            "error (plus a floor relative to the reference's size)"),
}


def variants_headline(vt: pd.DataFrame) -> tuple[Any, dict[str, Any]]:
    """(styled frame, column configs) of the headline variant figures: a dozen columns a
    meeting can read, instead of the 38 of the CSV."""
    cols = [c for c in VARIANT_HEADLINE if c in vt.columns]
    formats: dict[str, Any] = {c: VARIANT_HEADLINE[c][1] for c in cols}
    formats["speedup_x"] = speedup_text  # '0.29× slower': the side of eager in words
    style = styled(vt[cols], formats)
    if "speedup_x" in cols and "variant" in vt.columns:
        # eager against itself is the baseline, not "1.00× even"
        eager = [i for i, v in zip(vt.index, vt["variant"], strict=True) if v == "eager"]
        style = style.format(lambda _v: "baseline", subset=pd.IndexSlice[eager, ["speedup_x"]])
    return style, {
        c: st.column_config.Column(VARIANT_HEADLINE[c][0], help=VARIANT_HEADLINE[c][2])
        for c in cols}


def human(name: str) -> str:
    """``first_call_cold_s`` -> ``first call cold (s)``: a CSV name read aloud, unit kept."""
    for unit, shown in (("_ms", " (ms)"), ("_s", " (s)"), ("_mib", " (MiB)"), ("_x", " (×)")):
        if name.endswith(unit):
            return name[: -len(unit)].replace("_", " ") + shown
    return name.replace("_", " ")


def styled(df: pd.DataFrame, formats: dict[str, Any] | None = None) -> Any:
    """``df`` (text neutralised, ``safe.frame``) as a Styler: numbers formatted, every missing
    cell a dash. The values stay numbers, so sorting a column still sorts numerically."""
    frame = safe.frame(df)
    fmt = {c: f for c, f in (formats or {}).items() if c in frame.columns and f != "{}"}
    return frame.style.format(fmt, na_rep=DASH)


def local_time(value: Any) -> str | None:
    """A stored (UTC) timestamp as ``2026-12-02 14:03:27 CET`` in the viewer's time zone."""
    try:
        ts = pd.Timestamp(value)
    except (TypeError, ValueError):
        return None
    if ts is pd.NaT or pd.isna(ts):
        return None
    ts = ts.tz_localize("UTC") if ts.tzinfo is None else ts
    tz = viewer_timezone()
    try:
        ts = ts.tz_convert(tz) if tz else ts.tz_convert("UTC")
    except Exception:  # noqa: BLE001 - an unknown zone name from the browser
        ts = ts.tz_convert("UTC")
    return ts.strftime("%Y-%m-%d %H:%M:%S %Z")
