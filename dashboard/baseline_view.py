"""The run page's "Against its baseline" section (the page calls ``render``).

The baseline of the run's config is the pinned run, or the latest run of the pinned tag
(``storage.selection.baseline_for``); the comparison is ``engine.analysis.gate.gate`` on that one pair
(engine/analysis/review.py), so the verdicts here are the CI gate's.  Order: environment differences
first (a changed GPU, driver, torch or commit is usually the cause), the verdict, the speedup
chart, then every figure per variant.  A button pins this run as its config's baseline
(through storage/, editors only).
"""

from __future__ import annotations

import streamlit as st

from dashboard import auth, charts_review, data_review, review_tables, safe, widgets
from dashboard.tables import DASH
from engine.analysis.gate import GateReport
from engine.analysis.review import BaselineCheck, verdict_label

HOW_TO_PIN = ("Pin one with the button below, or from a shell: `python -m engine baseline pin "
              "RUN` (this run's config), `python -m engine baseline pin --tag TAG` (the latest "
              "run with that tag, for every config).")


def _pin_button(run_id: int, status: str, label: str) -> None:
    finished = status in ("done", "failed")
    allowed = auth.can_write()
    why = (auth.READ_ONLY_HELP if not allowed else
           None if finished else "Only a finished run can be a baseline.")
    if st.button(label, key=f"pin-baseline-{run_id}", icon=":material/push_pin:",
                 disabled=not (allowed and finished), help=why):
        if not auth.can_write():  # a forged widget message still stops here
            st.error(auth.READ_ONLY_HELP)
            return
        try:
            data_review.pin_run(run_id)
        except (ValueError, LookupError) as exc:  # storage's message is for users
            st.error(f"Not pinned: {safe.md(exc, 500)}")
            return
        st.session_state["pinned-toast"] = f"Run #{run_id} is now its config's baseline."
        st.rerun()


def _notes(report: GateReport) -> None:
    """The gate's notes in full: in the table a long note runs off the screen's right edge."""
    notes = [f"{c.variant}, {review_tables.FIGURE_WORDS.get(c.figure, c.figure)}: {c.note}"
             for c in report.changes if c.note and c.figure != "pass rate"]
    if notes:
        with st.expander(f"The gate's notes ({len(notes)})"):
            for line in notes:
                st.text(line)  # plain text: notes quote config and variant names


def _verdict_line(check: BaselineCheck) -> str:
    assert check.report is not None
    regs, imps = check.report.regressions, check.report.improvements
    if regs:
        head = f"**Regressed** against run #{check.baseline_id}: " + "; ".join(
            f"{safe.md(c.variant)} {c.figure} {review_tables.change_pct(c)}" for c in regs[:6])
    else:
        head = f"**No regression** against run #{check.baseline_id}"
    if imps:
        head += " · improved: " + "; ".join(
            f"{safe.md(c.variant)} {c.figure} {review_tables.change_pct(c)}" for c in imps[:6])
    return head


def render(run_id: int, status: str) -> None:
    """The section for one run (the page shows it when a single run is open)."""
    st.header("Against its baseline", anchor="baseline")
    if toast := st.session_state.pop("pinned-toast", None):
        st.toast(toast)
    try:
        check = data_review.against_baseline(run_id)
    except LookupError as exc:
        st.warning(safe.md(exc, 300))
        return
    except Exception as exc:  # noqa: BLE001 - the rest of the run page still draws
        st.warning(f"Could not judge this run against its baseline: {safe.md(exc, 500)}")
        return
    how = safe.md(check.how, 300)
    if check.is_baseline:
        st.info(f"This run is the pinned baseline of its config (config key "
                f"`{check.config_key}`): later runs of the config are judged against it.",
                icon=":material/push_pin:")
        return
    if check.baseline_id is None:
        reason = ("No baseline is pinned for this run's config" if check.how ==
                  "no baseline pinned" else f"No baseline run found ({how})")
        st.info(f"{reason} (config key `{check.config_key}`). {HOW_TO_PIN}",
                icon=":material/info:")
        _pin_button(run_id, status, "Pin this run as its config's baseline")
        return
    st.caption(f"Baseline: run #{check.baseline_id} ({how}). Verdicts are the CI gate's "
               "(`python -m engine gate`): a regression is statistically real and beyond a "
               "threshold; see docs/REGRESSIONS.md.")
    st.page_link(widgets.PAGE_COMPARE, label=f"Compare with run #{check.baseline_id}",
                 icon=":material/compare_arrows:",
                 query_params={"runs": f"{check.baseline_id},{run_id}"})
    if check.report is None:
        st.caption(safe.md(check.not_judged, 300))
        return
    report = check.report
    if report.environment:
        st.warning("**Environment differences** (usually the cause of a change)",
                   icon=":material/warning:")
        st.dataframe(safe.frame(review_tables.environment_table(report)), hide_index=True,
                     placeholder=DASH,
                     key=f"baseline-env-{run_id}")
    else:
        st.caption("Environment: no differences (GPU, driver, CUDA, torch, triton, Python, "
                   "commit, host).")
    st.markdown(_verdict_line(check))
    verdicts = {c.variant: verdict_label(c.verdict) for c in report.changes
                if c.figure == "speedup"}
    widgets.show_figure(charts_review.baseline_figure(report, verdicts),
                        f"fig-baseline-{run_id}")
    st.dataframe(safe.frame(review_tables.baseline_table(report)), hide_index=True,
                 placeholder=DASH,
                 key=f"baseline-table-{run_id}", column_config={
                     "change %": st.column_config.NumberColumn("change", format="%+.1f%%"),
                     "at one host speed %": st.column_config.NumberColumn(
                         "at one host speed", format="%+.1f%%",
                         help="the speedup's change with the host's move between the runs "
                              "taken out: what the gate judged (docs/REGRESSIONS.md)")})
    _notes(report)
    _pin_button(run_id, status, "Pin this run as the new baseline")
