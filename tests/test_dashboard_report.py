"""HTML report: self-contained (plotly.js once), user text escaped."""

from __future__ import annotations

from test_dashboard_data import bert_results, frames, runs_frame, spec

from dashboard import charts, report
from dashboard.verdict import verdict_for_run

EVIL = "<script>alert('x')</script>"


def _report(**run_overrides) -> str:
    f = frames({1: bert_results()})
    runs = runs_frame({1: spec("bert")}, **run_overrides)
    figs = charts.compare_figures(f)
    return report.build_report(
        runs, f["variants"], figs, [verdict_for_run(f["variants"], 1)],
        graph_breaks=f["graph_breaks"], recompiles=f["recompiles"],
        title=f"Report {EVIL}", permalink="http://x/compare?runs=1&a=<b>",
    )


def test_report_escapes_user_text():
    html = _report(note=f"note {EVIL} & more", tags=[f"tag{EVIL}"], model=f"m{EVIL}",
                   dims_label=f"batch={EVIL}", error=f"boom {EVIL}")
    assert EVIL not in html
    assert "&lt;script&gt;alert(&#x27;x&#x27;)&lt;/script&gt;" in html
    assert "note &lt;script&gt;" in html and "&amp; more" in html
    # the failed variant's stderr tail contains markup: escaped too
    assert "<b>not html</b>" not in html and "&lt;b&gt;not html&lt;/b&gt;" in html
    assert "runs=1&amp;a=&lt;b&gt;" in html


def test_report_is_self_contained_with_plotlyjs_once():
    html = _report()
    assert html.startswith("<!DOCTYPE html>")
    # plotly.js bundle embedded exactly once, one div per figure
    assert html.count("plotly.js v") == 1 or html.count("* plotly.js") == 1
    assert html.count('class="plotly-graph-div"') == len(charts.ALL_COMPARE_FIGURES)
    assert "<script src=" not in html  # nothing fetched from a CDN
    assert "Ship reduce-overhead" in html
    assert "/models/bert.py:88" in html
    assert "NVIDIA H200" in html


def test_report_reads_top_down_and_stays_narrow():
    import re

    html = _report()
    verdict, charts_at, details = (html.index(h) for h in (
        "<h2>Verdict and headline figures</h2>", "<h2>Charts</h2>", "<h2>Details</h2>"))
    assert verdict < html.index("Ship reduce-overhead") < charts_at
    assert charts_at < html.index('class="plotly-graph-div"') < details
    assert html.index("/models/bert.py:88") > details
    # No 38-column table: the widest row holds a figure name and one column per variant.
    widest = max(len(re.findall(r"<t[hd]\b", row)) for row in re.findall(r"<tr>.*?</tr>", html))
    assert widest <= 1 + len(bert_results())
    assert "@page{size:A4" in html
    text = re.sub(r"<script.*?</script>", "", html, flags=re.S)  # what a reader sees
    assert "None" not in text and "nan" not in re.sub(r"<[^>]+>", "", text).split()


def test_value_axis_goes_log_when_values_span_decades():
    import plotly.graph_objects as go

    wide = go.Figure(go.Bar(x=["eager", "default"], y=[0.06, 15.6]))
    assert report.log_where_spanning(wide).layout.yaxis.type == "log"
    narrow = go.Figure(go.Bar(x=["eager", "default"], y=[1.0, 2.0]))
    assert report.log_where_spanning(narrow).layout.yaxis.type != "log"
    with_zero = go.Figure(go.Bar(x=["a", "b"], y=[0.0, 100.0]))
    assert report.log_where_spanning(with_zero).layout.yaxis.type != "log"


def test_report_says_which_side_of_eager_a_speedup_is():
    """The report's speedup row reads as the page's Variants table: '1.88× faster', and eager
    is the baseline (it showed bare 1.88 and 1)."""
    import re

    row = re.search(r"<tr><th>Speedup[^<]*</th>(.*?)</tr>", _report()).group(1)
    cells = re.findall(r"<td[^>]*>([^<]*)</td>", row)
    assert cells[0] == "baseline" and cells[1].endswith("× faster"), cells


def test_report_says_when_hosts_launch_at_other_speeds():
    """The compare page's host-probe notice (dashboard/mixing.py) travels with the report: the
    file a team passes round says what the page said."""
    from html import escape

    from dashboard import mixing

    f = frames({1: bert_results(), 2: bert_results()})
    v = f["variants"].copy()
    v["host_probe"] = [{"launch_us": 6.0, "module_call_us": 0.82} if rid == 1
                       else {"launch_us": 6.1, "module_call_us": 0.95} for rid in v["run_id"]]
    runs = runs_frame({1: spec("bert"), 2: spec("bert")})
    html = report.build_report(runs, v, charts.compare_figures({**f, "variants": v}),
                               [verdict_for_run(v, 1), verdict_for_run(v, 2)],
                               graph_breaks=f["graph_breaks"], recompiles=f["recompiles"],
                               title="two hosts")
    said = mixing.probe_notice(v)
    assert said and "module call cost 0.82 µs on #1's host and 0.95 µs on #2's" in said
    assert "Hosts of other speeds." in html and escape(said) in html  # as text, escaped
    v["host_probe"] = [{"launch_us": 6.0, "module_call_us": 0.82}] * len(v)
    same = report.build_report(runs, v, [], [verdict_for_run(v, 1), verdict_for_run(v, 2)],
                               graph_breaks=f["graph_breaks"], recompiles=f["recompiles"],
                               title="one host")
    assert "Hosts of other speeds." not in same
