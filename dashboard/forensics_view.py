"""The compare page's "Compile forensics" section: compile phases, start-up strategies, the
lost-time account, and the caches' counters per compile (a table, torch's counter names).
Thin: the figures are pure functions in ``dashboard.charts_forensics``."""

from __future__ import annotations

import pandas as pd
import plotly.graph_objects as go
import streamlit as st

from dashboard import charts_forensics, data, safe, widgets
from dashboard.tables import DASH
from engine import known_errors
from engine.analysis.forensics_report import STRATEGIES


def render(variants: pd.DataFrame) -> list[go.Figure]:
    """Draw the section; returns its figures for the HTML report."""
    figures = dict(charts_forensics.forensics_figures(variants))
    st.header("Compile forensics", anchor="forensics")
    c1, c2 = st.columns(2)
    widgets.show_figure(figures["compile_phases"], "fig-compile-phases", c1)
    widgets.show_figure(figures["startup_strategies"], "fig-startup", c2)
    startup_errors(variants)
    widgets.show_figure(figures["lost_time"], "fig-lost-time")
    caches = charts_forensics.cache_table(variants)
    if not caches.empty:
        st.markdown("**Compile caches** (torch's counters per compile: the cold one fills the "
                    "cache, a warm-cache one should only hit). FX graph and AOTAutograd caches; "
                    "Triton kernels bundled with a cached graph (`triton_bundler_save_kernel` "
                    "on a miss, `triton_bundler_read_and_emit_kernel` on a hit); max-autotune "
                    "selections benchmarked (`select_algorithm_autotune`: torch benchmarks them "
                    "again in a fresh process even after FX-graph cache hits, so a warm-cache "
                    "count above 0 is torch's, docs/METHOD.md); kernels per autotune "
                    "cache decision (`autotune_cache_state`). A CPU compile has no Triton "
                    "kernels: those stay 0. *Autotuned kernels*: the cold compile draws the "
                    "kernels' configs, the first warm-cache process replays that choice, later "
                    "ones draw anew (GPU, not max-autotune; docs/METHOD.md §2).")
        st.dataframe(safe.frame(caches), hide_index=True, placeholder=DASH, key="compile-caches")
    roof = charts_forensics.roofline_table(variants)
    if not roof.empty:
        st.markdown("**Hardware** (per call: FLOPs counted by `FlopCounterMode`; bytes from a "
                    "model of the traffic, from the floor (parameters, inputs and outputs once) "
                    "to eager op by op (each operator reads its inputs and writes its outputs); "
                    "achieved at each variant's median, against the GPU's measured bf16-matmul "
                    "and copy ceilings; docs/METHOD.md)")
        st.dataframe(safe.frame(roof), hide_index=True, placeholder=DASH, key="roofline")
    missed = variants[variants.get("warm_cache_missed", pd.Series(dtype=object)).map(
        lambda x: x is True)] if "warm_cache_missed" in variants.columns else variants.iloc[0:0]
    for _, r in missed.iterrows():
        st.warning(safe.md(f"#{r['run_id']} {r['variant']}: the warm-cache compile missed: "
                           f"{r.get('warm_cache_miss_reason')}", 2000))
    if "run_id" in variants.columns:
        trace_downloads(sorted(set(variants["run_id"].dropna().astype(int))))
    return list(figures.values())


def startup_errors(variants: pd.DataFrame) -> None:
    """Each start-up strategy that failed, with the explanation of a known torch error
    (engine/known_errors.py) before torch's own message, as plain text."""
    if "startup" not in variants.columns:
        return
    for _, r in variants.iterrows():
        entries = r.get("startup") if isinstance(r.get("startup"), dict) else {}
        for key, label in STRATEGIES:
            text = known_errors.startup_error(key, entries.get(key))
            if text:
                st.warning(safe.md(f"#{r.get('run_id')} {r['variant']}, {label}: {text}", 2000))


def trace_downloads(run_ids: list[int]) -> None:
    """A download button per kept TORCH_TRACE log (runs made with "Keep TORCH_TRACE log").
    The file name is storage's sanitised ``download_name``, never the stored name."""
    kept = [a for a in data.list_artifacts(run_ids) if a.get("kind") == "torch_trace"]
    if not kept:
        return
    st.markdown("**TORCH_TRACE logs** (gzipped; `gunzip`, then open with `tlparse`, or attach "
                "to an upstream report)")
    limit = data.max_artifact_bytes()
    for i, a in enumerate(kept):
        note = f" — {a['note']}" if a.get("note") else ""
        label = safe.md(f"#{a['run_id']} {a['variant']}: {a['name']} ({a['size'] / 1024:.1f} "
                        f"KiB){note}", 300)
        if a["size"] > limit:  # a row written by hand: storage would refuse it on the click
            st.caption(f"{label}: over the {limit // 2**20} MiB a kept file may have; not "
                       "offered")
            continue
        # keyed by position: two stored variants may share a sanitised file name ("a/b", "a_b")
        st.download_button(
            label, data.artifact_loader(a["run_id"], a["variant"], "torch_trace"),
            file_name=a["name"], mime="application/gzip", key=f"trace-{a['run_id']}-{i}")
