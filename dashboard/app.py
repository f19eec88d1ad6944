"""Compile Lab dashboard entry point: ``streamlit run dashboard/app.py``.

Navigation only; each page lives in dashboard/views/. Every page keeps its selections in the URL
(``st.query_params``), so any view can be shared as a link, e.g. ``/compare?runs=3,7``.

Why views/ and not pages/: Streamlit treats a ``pages/`` folder next to the main script as a
legacy (v1) multipage app until some request has run ``st.navigation``. On a freshly started
server, the first request for a permalink such as ``/compare?runs=3`` would then execute the page
file alone (no app.py: no navigation, no sys.path set-up) and fail. ``views/`` avoids that.
"""

from __future__ import annotations

import sys
from pathlib import Path

# `streamlit run dashboard/app.py` puts dashboard/ on sys.path, not the repository root.
ROOT = str(Path(__file__).resolve().parents[1])
if ROOT not in sys.path:
    sys.path.insert(0, ROOT)

import streamlit as st  # noqa: E402

from dashboard import auth, data, safe, widgets  # noqa: E402

# An emoji, not ":material/bolt:": Streamlit's page turns a material icon into a favicon fetched
# from fonts.gstatic.com, the one request that left this machine on every page load. An emoji
# becomes an inline data: SVG.
st.set_page_config(page_title="Compile Lab", page_icon="⚡", layout="wide")
# The tables' own CSV download wrote cells as stored (tag text included), whatever the page
# escaped; every table that matters has an escaped export of its own (safe.csv) instead.
st.set_option("client.disableDataExport", True)
# Narrow windows (a laptop at 1024 px, a projector): charts that sit two to a row stack instead,
# and the main column gives up some of its wide padding; side by side at 1024 px their titles
# and legends were cut off. Our own fixed CSS, no user text.
st.html("""<style>
@media (max-width: 1279px) {
  [data-testid="stHorizontalBlock"]:has(.js-plotly-plot) { flex-direction: column; }
  [data-testid="stHorizontalBlock"]:has(.js-plotly-plot) > [data-testid="stColumn"] {
    width: 100% !important; flex: 1 1 100% !important; }
  [data-testid="stMainBlockContainer"] { padding-left: 2rem; padding-right: 2rem; }
}
</style>""")



def _home() -> None:
    """``/`` opens the run history. A page marked default is served at ``/`` only, so its own
    ``url_path`` would 404; a hidden redirecting home page keeps ``/runs?…`` a valid permalink."""
    st.switch_page(widgets.PAGE_RUNS, query_params=st.query_params.to_dict())


pages = [
    st.Page(_home, title="Compile Lab", url_path="home", default=True, visibility="hidden"),
    st.Page(widgets.PAGE_NEW, title="New run", icon=":material/play_arrow:", url_path="new"),
    st.Page(widgets.PAGE_RUNS, title="Runs", icon=":material/table_rows:", url_path="runs"),
    st.Page(widgets.PAGE_COMPARE, title="Run / compare", icon=":material/monitoring:",
            url_path="compare"),
    st.Page(widgets.PAGE_SWEEP, title="Sweep", icon=":material/show_chart:", url_path="sweep"),
    st.Page(widgets.PAGE_MODELS, title="Models", icon=":material/search:", url_path="models"),
    st.Page(widgets.PAGE_REVIEW, title="Review", icon=":material/rate_review:",
            url_path="review"),
]
# Navigation first, even before signing in (hidden then): the page and query params of a
# permalink survive the password page, so signing in lands on the page the link named.
page = st.navigation(pages, position="sidebar" if auth.current_role() else "hidden")
auth.gate()  # shared mode: the password page until this session signs in (dashboard/auth.py)

with st.sidebar:
    st.markdown("**Compile Lab** — torch.compile vs eager, measured on your hardware.")
    widgets.sidebar_queue_status()
    st.caption(f"Database: {safe.md(data.describe_database(), 300)}")
    auth.sidebar_status()

page.run()
