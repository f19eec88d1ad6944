"""Pure functions of the Review page and the baseline section: figures (charts_review), tables
(review_tables), query parameters (review_params) and the HTML export (report_review)."""

from __future__ import annotations

from datetime import UTC, date, datetime

import pytest

from dashboard import charts_review, report_review, review_tables
from dashboard.charts_base import empty_message
from dashboard.review_params import ReviewQuery, parse_review_params
from engine.analysis.gate import Change, GateReport, Thresholds
from engine.analysis.headline import Headline
from engine.analysis.review import ConfigTrend, Review, TrendPoint

EVIL = "<img src=x onerror=alert(1)>"


def point(run: int, day: int, speedup: float | None, marks: tuple[str, ...] = (),
          variant: str = "default", commit: str = "c0ffee", torch: str = "2.11.0") -> TrendPoint:
    return TrendPoint("k", variant, run, f"2026-11-{day:02d}T09:00:00+00:00", speedup,
                      None if speedup is None else speedup * 0.9,
                      None if speedup is None else speedup * 1.1,
                      "ok" if speedup is not None else "failed", commit, torch, marks,
                      run - 1 if run > 1 else None)


def trend(points: list[TrendPoint], label: str = "mlp batch=32 float32 cuda") -> ConfigTrend:
    return ConfigTrend("k", label, sorted({p.run_id for p in points}), points)


# --------------------------------------------------------------------------- trend figure


def test_trend_lines_intervals_and_marks():
    t = trend([point(1, 2, 1.5), point(2, 4, 1.52), point(3, 6, 0.9, ("speedup: regressed",),
                                                            commit="bbbb2222", torch="2.12.0"),
               point(1, 2, 2.0, variant="reduce-overhead"),
               point(2, 4, 3.0, ("speedup: improved",), variant="reduce-overhead")])
    fig = charts_review.trend_figure(t)
    assert empty_message(fig) is None
    names = [tr.name for tr in fig.data]
    assert names == ["default", "reduce-overhead", "speedup regression appeared here",
                     "speedup improvement appeared here"]
    line = fig.data[0]
    assert list(line.y) == [1.5, 1.52, 0.9]
    assert line.error_y.array[0] == pytest.approx(0.15) and line.error_y.arrayminus[0] == \
        pytest.approx(0.15)
    assert line.x[0] == datetime(2026, 11, 2, 9, 0)  # naive UTC on the time axis
    reg = fig.data[2]
    assert reg.marker.symbol == charts_review.REGRESSION_SYMBOL and list(reg.y) == [0.9]
    # which figure changed, labelled at the mark
    assert [a.text for a in fig.layout.annotations] == ["speedup regressed", "speedup improved"]
    assert "commit bbbb2222" in reg.hovertext[0] and "torch 2.12.0" in reg.hovertext[0]
    assert "against run #2" in reg.hovertext[0]
    assert fig.data[3].marker.symbol == charts_review.IMPROVEMENT_SYMBOL
    assert fig.layout.xaxis.title.text == charts_review.TIME_AXIS
    assert "×" in fig.layout.yaxis.title.text  # units on the axis
    assert "mlp batch=32" in fig.layout.title.text


def test_trend_escapes_run_text_and_marks_failures_at_the_bottom():
    t = trend([point(1, 2, 1.5, variant=EVIL, commit=EVIL),
               point(2, 4, None, ("passes: regressed",), variant=EVIL)], label=EVIL)
    fig = charts_review.trend_figure(t)
    assert "<img" not in fig.layout.title.text and "&lt;img" in fig.layout.title.text
    assert all("<img" not in (tr.name or "") for tr in fig.data)
    assert all("<img" not in h for tr in fig.data for h in tr.hovertext)
    reg = fig.data[-1]
    assert reg.name == "speedup regression appeared here" and reg.y[0] < 1.5 * 0.9
    assert [a.text for a in fig.layout.annotations] == ["passes regressed"]


def test_a_change_of_another_figure_is_not_drawn_as_a_speedup_change():
    """The review trend chart plots speedup; its green ▲ marked a compile-time improvement
    (issue 40): another figure's change is an open diamond named on its label."""
    t = trend([point(1, 2, 1.5), point(2, 4, 1.52, ("compile time s: improved",)),
               point(3, 6, 1.5, ("speedup: improved", "memory ratio: regressed"))])
    fig = charts_review.trend_figure(t)
    by_name = {tr.name: tr for tr in fig.data}
    other = by_name["improvement of another figure (named on its label)"]
    assert other.marker.symbol == "diamond-open" and len(other.x) == 1
    assert by_name["speedup improvement appeared here"].marker.symbol == \
        charts_review.IMPROVEMENT_SYMBOL and len(by_name["speedup improvement appeared here"].x) == 1
    assert by_name["regression of another figure (named on its label)"].marker.symbol == \
        "diamond-open"
    assert sorted(a.text for a in fig.layout.annotations) == [
        "compile time improved", "memory regressed", "speedup improved"]


def test_trend_without_speedups_is_an_empty_figure_with_a_reason():
    fig = charts_review.trend_figure(trend([point(1, 2, None)]))
    assert "No speedup" in empty_message(fig)


# --------------------------------------------------------------------------- baseline


def report(*changes: Change, env: list | None = None) -> GateReport:
    return GateReport(Thresholds(), changes=list(changes), environment=env or [])


def change(variant: str, figure: str, b, c, verdict: str, **kw) -> Change:
    kw.setdefault("ratio", c / b if isinstance(b, float) and isinstance(c, float) else None)
    return Change(config="mlp", variant=variant, figure=figure, baseline=b, candidate=c,
                  verdict=verdict, baseline_run=3, candidate_run=9, **kw)


REPORT = report(
    change("default", "speedup", 1.5, 0.9, "regression", p_value=0.001,
           baseline_interval=(1.4, 1.6), candidate_interval=(0.85, 0.95)),
    change("default", "compile time s", 3.0, 4.0, "not significant"),
    change("default", "memory ratio", 1.2, 1.2, "unchanged"),
    change("max-autotune", "passes", "passed", "failed (oom)", "regression"),
    change("(all)", "pass rate", 1.0, 0.5, "regression"),
    env=[{"key": "torch", "baseline": ["2.11.0"], "candidate": ["2.12.0"]}])


def test_baseline_figure_bars_with_intervals():
    fig = charts_review.baseline_figure(REPORT, {"default": "regressed"})
    assert [t.name for t in fig.data] == ["baseline #3", "this run #9"]
    assert list(fig.data[0].y) == [1.5] and list(fig.data[1].y) == [0.9]
    assert fig.data[1].error_y.array[0] == pytest.approx(0.05)
    assert "regressed" in fig.data[0].x[0] and "1.5× → 0.9×" in fig.data[0].x[0]
    assert "×" in fig.layout.yaxis.title.text
    assert empty_message(charts_review.baseline_figure(report())) is not None


def test_baseline_table_one_row_per_figure_with_verdicts():
    df = review_tables.baseline_table(REPORT)
    assert list(zip(df["variant"], df["figure"], strict=True)) == [
        ("default", "speedup (×)"), ("default", "cold compile (s)"),
        ("default", "memory, eager ÷ compiled (×)"), ("max-autotune", "passes")]
    d = df.iloc[0]
    assert d["baseline → this run"] == "1.5× [1.4, 1.6] → 0.9× [0.85, 0.95]"
    assert d["change %"] == -40.0 and d["verdict"] == "regressed" and d["p"] == "0.001"
    assert df.iloc[1]["verdict"] == "within noise"
    assert df.iloc[2]["verdict"] == "within threshold"
    assert df.iloc[3]["baseline → this run"] == "passed → failed (oom)"
    assert df.iloc[3]["verdict"] == "regressed"
    env = review_tables.environment_table(REPORT)
    assert env.to_dict("records") == [{"what": "torch", "baseline": "2.11.0",
                                       "this run": "2.12.0"}]


# --------------------------------------------------------------------------- review tables


def a_review(tag: str = "nightly") -> Review:
    h = Headline("default", 2, 2, 1.0, 1.5, 3.0, 1.2)
    h2 = Headline("default", 2, 1, 0.5, 1.1, 3.5, 1.2)
    c = change("default", "speedup", 1.5, 0.9, "regression", p_value=0.001)
    c.config = EVIL
    return Review(tag, "2026-11-01", None, 3, [trend([point(1, 2, 1.5)], label=EVIL)], [c],
                  [("default", h, h2)], runs_info={9: {"created_at": "2026-11-06T09:00:00",
                                                       "commit": EVIL, "torch": "2.12"}})


def test_headline_and_changes_tables():
    r = a_review()
    head = review_tables.headline_table(r).iloc[0]
    assert head["pass rate"] == "100% → 50%" and head["geomean speedup"] == "1.5× → 1.1×"
    assert head["mean compile time"] == "3.00 s → 3.50 s"
    ch = review_tables.changes_table(r, lambda a, b: f"/compare?runs={a},{b}").iloc[0]
    assert ch["compare"] == "/compare?runs=3,9" and ch["change %"] == -40.0
    assert ch["runs"] == "#3 → #9" and ch["verdict"] == "regressed"
    assert ch["appeared at"] == "2026-11-06 09:00" and ch["torch"] == "2.12"


def test_a_change_judged_at_one_host_speed_shows_both_figures():
    """The gate judged at one host speed (engine/analysis/host_adjust.py): every table and text
    shows the shown speedups' change and, beside it, the one the verdict was judged on."""
    c = change("reduce-overhead", "speedup", 3.96, 3.42, "unchanged", p_value=0.4,
               host_adjusted_ratio=0.972)
    assert review_tables.change_pct(c) == "-13.6% (-2.8% at one host speed)"
    row = review_tables.baseline_table(report(c)).iloc[0]
    assert row["change %"] == -13.6 and row["at one host speed %"] == -2.8
    r = a_review()
    r.changes[0].host_adjusted_ratio = 0.9
    ch = review_tables.changes_table(r, lambda a, b: "/x").iloc[0]
    assert ch["change %"] == -40.0 and ch["at one host speed %"] == -10.0
    html = report_review.build_review_report(r, [], lambda a, b: "/x", permalink="/review")
    assert "(-40.0%; -10.0% at one host speed)" in html
    plain = change("default", "speedup", 1.5, 0.9, "regression", p_value=0.001)
    assert review_tables.change_pct(plain) == "-40.0%"
    assert review_tables.baseline_table(report(plain)).iloc[0]["at one host speed %"] is None
    for bad in (float("nan"), float("inf"), "0.9", True):
        plain.host_adjusted_ratio = bad
        assert review_tables.host_pct(plain) is None


def test_html_review_escapes_user_text_and_links_compare():
    r = a_review(tag=EVIL)
    html = report_review.build_review_report(
        r, [charts_review.trend_figure(r.trends[0])], lambda a, b: f"/compare?runs={a},{b}",
        permalink="/review?tag=x")
    assert "<img src=x" not in html
    assert "&lt;img src=x onerror=alert(1)&gt;" in html
    assert "href='/compare?runs=3,9'" in html
    assert "Headline figures per mode" in html and "Trend of each config" in html
    assert html.count("<script") >= 1  # plotly.js embedded: opens offline


# --------------------------------------------------------------------------- query params


def test_review_params_valid():
    q, errors = parse_review_params({"suite": "ci-small", "since": "2026-11-01",
                                     "until": "2026-11-07"})
    assert errors == [] and q == ReviewQuery("suite:ci-small", date(2026, 11, 1),
                                             date(2026, 11, 7))
    assert q.params() == {"suite": "ci-small", "since": "2026-11-01", "until": "2026-11-07"}
    since, until = q.window
    assert since == datetime(2026, 11, 1, tzinfo=UTC)
    assert until.date() == date(2026, 11, 7) and until.hour == 23


@pytest.mark.parametrize("params, fragment", [
    ({"since": "yesterday"}, "expected a day as YYYY-MM-DD"),
    ({"since": "2026-02-30"}, "not a calendar day"),
    ({"until": "9999-12-31"}, "expected a year from 1970"),
    ({"since": "0001-01-01"}, "expected a year from 1970"),
    ({"until": "２０２６-11-01"}, "expected a day"),
    ({"tag": "a\x1bb"}, "control character"),
    ({"tag": "x" * 5000}, "longer than"),
    ({"suite": "\u202e"}, "suite:"),
    ({"since": "2026-11-09", "until": "2026-11-01"}, "is after until"),
    ({"tag": "a", "suite": "b"}, "not both"),
])
def test_review_params_hostile(params, fragment):
    q, errors = parse_review_params(params)
    assert any(fragment in e for e in errors), errors
    assert q.since is None or q.until is None or q.since <= q.until
