"""Opening many runs at once (issue 40, item 2): "Open the imported runs" compared all 36 runs
of the shipped bundle on one page about 43,000 px tall, 36 verdict cards and 10 warning boxes
before the first chart.  With more than a few runs the page says what it holds, starts with the
speedup chart and folds each verdict into one line; with a few it reads as before."""

from __future__ import annotations

import pytest
from test_dashboard_app import app, no_exceptions, plotly_count, seed_done, texts
from test_dashboard_data import ENVIRONMENT, bert_results, mlp_results, spec

from storage import queue, results


@pytest.fixture
def db(app_db):
    return app_db


def _seed_on_other_torch(db, run_spec: dict, variant_results: list[dict]) -> int:
    run_id = queue.enqueue_run(db, run_spec)
    assert queue.claim_run(db, run_id, "test-worker") is not None
    for r in variant_results:
        results.save_variant_result(db, run_id, r)
    queue.finish_run(db, run_id, "done", environment={**ENVIRONMENT, "torch": "2.12.0"})
    return run_id


def test_many_runs_start_with_a_chart_and_say_how_many(db):
    ids = [seed_done(db, spec("mlp"), mlp_results()) for _ in range(4)]
    ids.append(_seed_on_other_torch(db, spec("bert_base", dims={"batch": 8, "seq": 128}),
                                    bert_results()))
    at = app("compare", runs=",".join(map(str, ids)))
    no_exceptions(at)
    assert "5 runs: mlp ×4, bert\\_base" in texts(at.caption)  # Markdown-escaped
    headers = [h.value for h in at.header]
    assert headers[:2] == ["Speedup and break-even", "Verdict"]
    labels = [e.label for e in at.expander]
    assert sum("Ship eager" in lab for lab in labels) == 4  # one line per run's verdict
    assert sum("Ship reduce-overhead" in lab for lab in labels) == 1
    fold = next(e for e in at.expander if "may not compare" in e.label)  # notices folded too
    assert "torch" in texts(fold.warning)
    assert plotly_count(at) == 11


def test_many_alike_runs_have_no_empty_fold(db):
    """Four runs of one config on one host that repeat: nothing to warn of, so no fold that
    opens on nothing (there was one)."""
    ids = [seed_done(db, spec("mlp"), mlp_results()) for _ in range(4)]
    at = app("compare", runs=",".join(map(str, ids)))
    no_exceptions(at)
    assert "4 runs: mlp ×4" in texts(at.caption)
    assert not any("may not compare" in e.label for e in at.expander)
    assert not at.warning


def test_a_few_runs_read_as_before(db):
    a = seed_done(db, spec("mlp"), mlp_results())
    b = seed_done(db, spec("bert_base", dims={"batch": 8, "seq": 128}), bert_results())
    at = app("compare", runs=f"{a},{b}")
    no_exceptions(at)
    assert "2 runs: mlp, bert\\_base" in texts(at.caption)
    assert [h.value for h in at.header][:2] == ["Verdict", "Speedup and break-even"]
    assert "Latency:" in texts(at.markdown)  # the verdicts in full
