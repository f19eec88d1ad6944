"""Runs measured before one eager per run keep, on each compiled row, the eager timed in that
variant's own processes (the shipped bundle's BERT run: 4.70 ms alone, 6.60 and 6.22 ms beside
default and reduce-overhead).  Every surface says so instead of claiming one eager: the
verdict's caution (show, Run/compare, report), show's method line, the Runs page's flag."""

from __future__ import annotations

from pathlib import Path

from test_dashboard_app import app, no_exceptions, seed_done, texts
from test_dashboard_data import mlp_results, spec

from engine.analysis.show import format_run
from engine.analysis.verdict import decide, distrust, eager_per_row
from storage import import_bundle
from storage.records import load_run

BUNDLE = Path(__file__).resolve().parents[1] / "data" / "h200_bundle.json"


def _bert(db) -> int:
    ids = import_bundle(db, BUNDLE.read_text())
    return next(i for i in ids if load_run(db, i)["model"] == "bert_base"
                and len(load_run(db, i)["variants"]) == 3)


def test_an_old_run_says_its_rows_compare_with_different_eagers(db):
    run_id = _bert(db)
    rows = load_run(db, run_id)["variants"]
    figures = eager_per_row(rows)
    assert figures is not None and set(figures) == {"eager", "default", "reduce-overhead"}
    caution = next(w for w in decide(rows).warnings if w.startswith("Eager differs"))
    for ms in figures.values():  # each row's eager, named
        assert f"{ms:.3g}" in caution or f"{ms:.2f}" in caution, (ms, caution)
    assert "eager per variant" in distrust(rows)
    shown = format_run(db, run_id)
    assert "it differs between rows" in shown and "one figure for the run" not in shown
    for r in rows:  # each row still divides: speedup = its eager / its median
        if r["variant"] != "eager":
            assert abs(r["eager_median_ms"] / r["median_ms"] - r["speedup"]) < 1e-3 * r["speedup"]


def test_a_run_with_one_eager_says_nothing_of_the_kind(db):
    run_id = seed_done(db, spec("mlp"), mlp_results())
    rows = load_run(db, run_id)["variants"]
    assert eager_per_row(rows) is None
    assert not any(w.startswith("Eager differs") for w in decide(rows).warnings)
    assert "eager per variant" not in distrust(rows)
    assert "one figure for the run" in format_run(db, run_id)


def test_run_compare_shows_the_caution_on_an_old_run(app_db):
    run_id = _bert(app_db)  # the database the dashboard under test opens (tests/conftest.py)
    at = app("compare", runs=str(run_id))
    no_exceptions(at)
    shown = "\n".join(texts(getattr(at, kind)) for kind in ("warning", "markdown", "caption"))
    assert "Eager differs between rows" in shown
