"""engine/analysis/review.py: a run against its baseline, and a tag's runs over a window, judged by the
gate (runs fabricated from a shipped H200 run, imported through storage.bundle)."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest
from review_support import import_runs, make_run, week_of_runs

from engine.analysis.gate import Thresholds
from engine.analysis.review import against_baseline, load_window, review, verdict_label
from storage import open_database
from storage.selection import pin_run, pin_tag


@pytest.fixture
def db(tmp_path):
    database = open_database(f"sqlite:///{tmp_path / 'r.db'}")
    yield database
    database.dispose()


def test_regression_is_marked_at_the_run_where_it_appeared(db):
    ids = import_runs(db, week_of_runs())
    runs, truncated = load_window(db, "nightly", None, None)
    r = review(runs, "nightly")
    assert not truncated and r.run_count == 3 and len(r.trends) == 1
    points = {p.run_id: p for p in r.trends[0].points}
    assert points[ids[0]].marks == () and points[ids[1]].marks == ()  # 1 % is noise
    assert points[ids[2]].marks == ("speedup: regressed",)
    assert points[ids[2]].previous_run == ids[1]
    assert (points[ids[2]].commit, points[ids[2]].torch) == ("bbbb2222", "2.12.0+cu130")
    first = r.changes[0]
    assert (first.verdict, first.figure, first.variant) == ("regression", "speedup", "default")
    assert (first.baseline_run, first.candidate_run) == (ids[1], ids[2])
    assert first.ratio == pytest.approx(0.6 / 1.01, rel=1e-6)
    assert r.runs_info[ids[2]]["commit"] == "bbbb2222"


def test_changes_real_first_then_biggest(db):
    runs = week_of_runs() + [make_run("2026-11-08", ["nightly"], factor=0.6 * 1.5)]
    import_runs(db, runs)
    r = review(load_window(db, "nightly", None, None)[0], "nightly")
    real = [c for c in r.changes if c.verdict in ("regression", "improvement")]
    assert [c.verdict for c in real] == ["regression", "improvement"]  # -40 % before +50 %
    assert r.changes[: len(real)] == real
    mags = [c.magnitude() for c in real]
    assert mags == sorted(mags, reverse=True)


def test_window_and_headline_first_to_latest(db):
    import_runs(db, week_of_runs())
    since = datetime(2026, 11, 3, tzinfo=UTC)
    runs, _ = load_window(db, "nightly", since, None)
    r = review(runs, "nightly", since="2026-11-03")
    assert r.run_count == 2
    (mode, start, end), = r.modes
    assert mode == "default" and start.pass_rate == end.pass_rate == 1.0
    assert end.geomean_speedup == pytest.approx(start.geomean_speedup * 0.6 / 1.01, rel=1e-6)
    assert load_window(db, "other-tag", None, None) == ([], False)


def test_configs_are_trended_apart(db):
    import_runs(db, week_of_runs() + [make_run("2026-11-03", ["nightly"], model="mlp_b")])
    r = review(load_window(db, "nightly", None, None)[0], "nightly")
    assert sorted(len(t.runs) for t in r.trends) == [1, 3]


def test_run_against_pinned_run_and_tag(db):
    ids = import_runs(db, week_of_runs() + [make_run("2026-11-01", ["base"])])
    check = against_baseline(db, ids[2])
    assert check.baseline_id is None and check.report is None
    assert check.how == "no baseline pinned"
    pin_run(db, ids[1])
    check = against_baseline(db, ids[2])
    assert check.baseline_id == ids[1] and check.report is not None
    assert [c.figure for c in check.report.regressions] == ["speedup"]
    assert [d["key"] for d in check.report.environment] == ["torch", "commit"]
    mine = against_baseline(db, ids[1])
    assert mine.is_baseline and mine.report is None
    pin_tag(db, "base")  # a per-config pin wins over the every-config tag pin
    assert against_baseline(db, ids[0]).baseline_id == ids[1]


def test_run_against_tag_uses_tag_history(db):
    ids = import_runs(db, [make_run("2026-11-01", ["base"]), make_run("2026-11-02", ["base"]),
                           make_run("2026-11-09", ["cand"], factor=1.02)])
    pin_tag(db, "base", spec=None)
    check = against_baseline(db, ids[2], Thresholds())
    assert check.baseline_id == ids[1] and check.how == "latest run tagged 'base'"
    assert not check.report.regressions
    compile_change = next(c for c in check.report.changes if c.figure == "compile time s")
    assert compile_change.verdict == "unchanged"


def test_verdict_words():
    assert verdict_label("regression") == "regressed"
    assert verdict_label("not significant") == "within noise"
    assert verdict_label("unchanged") == "within threshold"


def test_html_report_carries_the_run_against_its_baseline(db):
    """The run page judged a run against its baseline; the downloadable report left it out."""
    from dashboard import report
    from dashboard.report_baseline import baseline_html

    ids = import_runs(db, week_of_runs())
    pin_run(db, ids[1])
    check = against_baseline(db, ids[2])
    html = baseline_html(check, report._e, report._rows_table)
    assert f"Baseline: run #{ids[1]}" in html and "Regressed: " in html and "speedup" in html
    assert "Environment differences" in html and "torch" in html and "commit" in html
    assert "<table>" in html
    assert "pinned baseline of its config" in baseline_html(
        against_baseline(db, ids[1]), report._e, report._rows_table)
    assert "No baseline run" in baseline_html(
        against_baseline(db, ids[2]).__class__(run_id=1, config_key="k", baseline_id=None,
                                               how="no baseline pinned"),
        report._e, report._rows_table)
    assert baseline_html(None, report._e, report._rows_table) == ""


def test_a_window_of_runs_loads_in_a_few_queries_in_order(db):
    """The Review page read its runs one by one (a round of queries per run)."""
    from sqlalchemy import event

    from storage.selection import RunNotFound, load_runs_plain

    ids = import_runs(db, week_of_runs())
    statements: list[str] = []

    def count(conn, cursor, statement, *args):  # noqa: ANN001 - SQLAlchemy's event signature
        statements.append(statement)

    event.listen(db.engine, "before_cursor_execute", count)
    try:
        runs = load_runs_plain(db, list(reversed(ids)))
    finally:
        event.remove(db.engine, "before_cursor_execute", count)
    assert [r["run_id"] for r in runs] == list(reversed(ids))
    assert all(r["variants"] and r["tags"] for r in runs)
    selects = [s for s in statements if s.lstrip().upper().startswith("SELECT")]
    assert len(selects) <= 8 < 3 * len(ids), selects  # runs, tags, variants + children
    with pytest.raises(RunNotFound, match="no run with id 999999"):
        load_runs_plain(db, [ids[0], 999999])
