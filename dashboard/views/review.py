"""Review (``?tag=nightly`` or ``?suite=ci-small``, ``&since=…&until=…``): for the weekly
meeting, did anything get slower, where and why. Logic in engine/analysis/review.py, tables in
dashboard/review_tables.py, figures in dashboard/charts_review.py, the HTML export in
dashboard/report_review.py."""

from __future__ import annotations

from urllib.parse import urlencode

import streamlit as st

from dashboard import (
    auth,
    charts_review,
    data_review,
    glossary,
    people,
    report_review,
    review_tables,
    safe,
    widgets,
)
from dashboard.review_params import ReviewQuery, parse_review_params
from dashboard.tables import DASH

MAX_TRENDS = 30  # configs drawn at once (a tag over a big suite: the rest in the table)

st.title("Review")
st.caption("A tag's or a suite's runs over a time window: the headline figures, each config's "
           "trend with regressions (▼) and improvements (▲) marked at the run where they "
           "appeared, and the changes biggest first. Each run is judged against the previous "
           "run of its config by the CI gate (`python -m engine gate`).")

query, problems = parse_review_params(st.query_params.to_dict())
for problem in problems:
    st.error(f"Ignored a link parameter: {safe.md(problem, 400)}", icon=":material/link_off:")

try:
    tags = data_review.tags()
except Exception as exc:  # noqa: BLE001
    widgets.storage_unavailable(exc)
    st.stop()
if not tags:
    st.info("No tagged runs yet. Tag runs (New run, or `python -m engine run … --tag nightly`), "
            "or run a suite (`python -m engine suite run FILE`: its runs are tagged "
            "`suite:NAME`), then review them here.", icon=":material/label:")
    st.stop()

options = list(dict.fromkeys([*([query.tag] if query.tag else []), *tags]))
c1, c2, c3 = st.columns([2, 1, 1])
tag = c1.selectbox("Tag or suite", options, index=0 if query.tag else None, key="review-tag",
                   placeholder="Pick a tag (suites are tags suite:NAME)")
since = c2.date_input("From (UTC day)", value=query.since, key="review-since", format="YYYY-MM-DD")
until = c3.date_input("To (UTC day, included)", value=query.until, key="review-until",
                      format="YYYY-MM-DD")
if since and until and since > until:
    st.error("*From* is after *To*: showing all time.")
    since = until = None
query = ReviewQuery(tag, since or None, until or None)
for key in ("tag", "suite", "since", "until"):
    widgets.set_param(key, query.params().get(key))
if not tag:
    st.info("Pick a tag or a suite above.")
    st.stop()

try:
    review = data_review.review(tag, *query.window)
except Exception as exc:  # noqa: BLE001 - said on the page, never a traceback
    st.error(f"Could not read the runs tagged {safe.md(tag, 120)}: {safe.md(exc, 500)}")
    st.stop()
if review.run_count == 0:
    st.info(f"No finished run is tagged {safe.md(tag, 120)} in this window.")
    st.stop()


# Built now, in the script run: the export's data callable runs later, outside it.
COMPARE_URL = widgets.permalink("compare")
REVIEW_URL = widgets.permalink("review", **query.params())


def _link(old: int, new: int) -> str:
    """The compare page of two runs (the URL format of widgets.permalink)."""
    return f"{COMPARE_URL}?{urlencode({'runs': f'{old},{new}'})}"


st.caption(f"{review.run_count} finished run(s) of {len(review.trends)} config(s)"
           + (" — the newest only, older runs left out" if review.truncated else "") + ".")

st.header("Headline figures per mode", anchor="headline")
st.caption("Each config's first run in the window → its latest: pass rate (ok and correct ÷ "
           "asked for), geomean speedup (below 1.00× compiled is slower), mean cold compile "
           "time, memory, eager ÷ compiled (below 1.00× compiling uses more memory). "
           + glossary.terms_line(["pass rate", "geomean speedup", "memory, eager ÷ compiled",
                                  "within noise", "regressed / improved",
                                  "grid variant names"]))
st.dataframe(safe.frame(review_tables.headline_table(review)), hide_index=True, placeholder=DASH,
             key="review-headline")

st.header("Changes, biggest first", anchor="changes")
changes = review_tables.changes_table(review, _link)
if changes.empty:
    st.success("No change beyond a threshold between consecutive runs of any config.")
else:
    st.caption("Real changes (regressed, improved) first, then those within noise: beyond a "
               "threshold, but the test does not establish them; each against the previous run "
               "of its config.")
    st.dataframe(safe.frame(changes), hide_index=True, placeholder=DASH, key="review-changes",
                 column_config={"compare": st.column_config.LinkColumn(
                     "compare", display_text="open", width="small"),
                     "change %": st.column_config.NumberColumn("change", format="%+.1f%%"),
                     "at one host speed %": st.column_config.NumberColumn(
                         "at one host speed", format="%+.1f%%",
                         help="the speedup's change with the host's move between the runs "
                              "taken out: what the gate judged (docs/REGRESSIONS.md)"),
                     "config": st.column_config.TextColumn(
                         "config", width=people.fit_width(changes["config"], "config"))})



@auth.fragment()
def trends() -> None:
    """The trend charts; picking configs reruns only this part (the judging is cached)."""
    labels = {t.key: t.label for t in review.trends}
    keys = list(labels)
    shown = keys
    if len(keys) > 1:
        shown = st.multiselect("Configs to draw", keys, default=keys[:MAX_TRENDS],
                               format_func=labels.get, key="review-configs",
                               max_selections=MAX_TRENDS)
    by_key = {t.key: t for t in review.trends}
    for key in shown:
        widgets.show_figure(charts_review.trend_figure(by_key[key]), f"review-trend-{key}")


st.header("Trend of each config", anchor="trends")
if len(review.trends) > MAX_TRENDS:
    st.caption(f"{len(review.trends)} configs: the first {MAX_TRENDS} are drawn; pick others "
               f"below (the HTML export holds the first {MAX_TRENDS}).")
trends()

st.download_button(
    "Export the review as an HTML report", key="review-html", on_click="ignore",
    icon=":material/description:", mime="text/html",
    file_name="compilelab-review.html",
    data=lambda: report_review.build_review_report(
        review, [charts_review.trend_figure(t) for t in review.trends[:MAX_TRENDS]], _link,
        permalink=REVIEW_URL),
    help="One self-contained file (plotly.js embedded): opens offline, fit to attach.")
