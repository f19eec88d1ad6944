"""An attacker's pass over the Review page and the baseline section: stored environment values
of any JSON type (an imported bundle's ``environment`` is free-form), HTML in them, in hovers,
tables and the HTML export."""

from __future__ import annotations

from review_support import import_runs, make_run
from test_review import db  # noqa: F401  (fixture)

from dashboard import charts_review, report_review, review_tables
from engine.analysis.review import load_window, review

EVIL = "<img src=x onerror=alert(1)>"


def test_non_text_commit_and_torch_neither_crash_nor_inject(db):  # noqa: F811
    ids = import_runs(db, [make_run("2026-11-02", ["n"], commit=12345, torch={"v": EVIL}),
                           make_run("2026-11-04", ["n"], factor=0.6, commit=[EVIL], torch=7)])
    runs, _ = load_window(db, "n", None, None)
    r = review(runs, "n")
    assert r.runs_info[ids[0]]["commit"] == "12345" and r.runs_info[ids[1]]["torch"] == "7"
    fig = charts_review.trend_figure(r.trends[0])  # was: TypeError on commit[:12]
    hovers = " ".join(h for tr in fig.data for h in (tr.hovertext or ()))
    assert "commit 12345" in hovers and "&lt;img" in hovers and EVIL not in hovers
    table = review_tables.changes_table(r, lambda old, new: f"http://x/?runs={old},{new}")
    assert not table.empty and set(table["commit"]) <= {"12345", str([EVIL])[:12]}
    html = report_review.build_review_report(r, [fig], lambda old, new: "http://x/")
    assert EVIL not in html and "&lt;img" in html


def test_the_review_cache_key_changes_whenever_the_window_does(db):  # noqa: F811
    """The Review page keeps a judged window for minutes (judging 400 runs takes seconds) under
    ``tagged_version``: it must change when a run joins or leaves the selection."""
    from storage import delete_runs
    from storage.results import set_tags
    from storage.selection import tagged_version

    assert tagged_version(db, "n") == (0, 0, 0)
    ids = import_runs(db, [make_run("2026-11-02", ["n"]), make_run("2026-11-04", ["n"])])
    seen = {tagged_version(db, "n")}
    assert tagged_version(db, "n")[0] == 2
    set_tags(db, ids[0], ["other"])  # untagged
    seen.add(tagged_version(db, "n"))
    set_tags(db, ids[0], ["n"])
    delete_runs(db, [ids[1]])
    seen.add(tagged_version(db, "n"))
    assert len(seen) == 3
    from datetime import UTC, datetime

    assert tagged_version(db, "n", since=datetime(2026, 11, 3, tzinfo=UTC)) == (0, 0, 0)
