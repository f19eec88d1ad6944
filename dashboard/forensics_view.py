"""The compare page's "Compile forensics" section: compile phases, start-up strategies, the
lost-time account, and the caches' counters per compile (a table, torch's counter names).
Thin: the figures are pure functions in ``dashboard.charts_forensics``."""

from __future__ import annotations

import pandas as pd
import plotly.graph_objects as go
import streamlit as st

from dashboard import charts_forensics, safe, widgets


def render(variants: pd.DataFrame) -> list[go.Figure]:
    """Draw the section; returns its figures for the HTML report."""
    figures = dict(charts_forensics.forensics_figures(variants))
    st.header("Compile forensics", anchor="forensics")
    c1, c2 = st.columns(2)
    widgets.show_figure(figures["compile_phases"], "fig-compile-phases", c1)
    widgets.show_figure(figures["startup_strategies"], "fig-startup", c2)
    widgets.show_figure(figures["lost_time"], "fig-lost-time")
    caches = charts_forensics.cache_table(variants)
    if not caches.empty:
        st.markdown("**Compile caches** (torch's counters per compile: the cold one fills the "
                    "cache, a warm-cache one should only hit)")
        st.dataframe(safe.frame(caches), hide_index=True, key="compile-caches")
    missed = variants[variants.get("warm_cache_missed", pd.Series(dtype=object)).map(
        lambda x: x is True)] if "warm_cache_missed" in variants.columns else variants.iloc[0:0]
    for _, r in missed.iterrows():
        st.warning(safe.md(f"#{r['run_id']} {r['variant']}: the warm-cache compile missed: "
                           f"{r.get('warm_cache_miss_reason')}", 2000))
    return list(figures.values())
