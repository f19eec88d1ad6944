"""The compare page's forensics extras: a kept TORCH_TRACE log offered as a download under a
name storage built (never the stored one), and a known torch error of a start-up strategy shown
with its explanation (engine/known_errors.py), as plain text."""

from __future__ import annotations

import gzip

from test_dashboard_app import app, db, no_exceptions, seed_done  # noqa: F401  (db: fixture)
from test_dashboard_data import mlp_results, spec
from test_known_errors import STORED

from storage import artifacts


def test_compare_offers_the_trace_and_explains_regional_cudagraphs(db):  # noqa: F811
    rows = mlp_results()
    compiled = next(r for r in rows if r["variant"] != "eager")
    compiled["startup"] = {"cold": {"time_to_first_call_s": 3.0},
                           "warm_local": {"time_to_first_call_s": 1.0},
                           "regional": {"error": STORED}}
    run_id = seed_done(db, spec("mlp"), rows)
    artifacts.save_artifact(db, run_id, compiled["variant"], "torch_trace",
                            "../../<b>evil</b>.gz", gzip.compress(b"x\n"))
    at = app("compare", runs=str(run_id))
    no_exceptions(at)
    warnings = " ".join(w.value for w in at.warning)
    assert "regional compilation with CUDA graphs" in warnings and "torch said" in warnings
    downloads = at.get("download_button")
    # the file itself is built on click (deferred); its label names it as storage does
    labels = [d.proto.label.replace("\\", "") for d in downloads]
    name = f"run{run_id}-{compiled['variant']}-torch_trace.log.gz"
    assert any(name in label for label in labels), labels
    assert not any("evil" in label for label in labels)


def test_hostile_artifact_rows_neither_crash_the_page_nor_offer_a_refused_file(
        db, monkeypatch):  # noqa: F811
    """Two stored variants whose file names sanitise alike gave two buttons one key (the page
    died with a duplicate-key error); a row over storage's read limit was offered, and the
    click could only fail."""
    rows = mlp_results()
    compiled = next(r for r in rows if r["variant"] != "eager")
    run_id = seed_done(db, spec("mlp"), rows)
    for variant in ("a/b", "a_b", compiled["variant"]):
        artifacts.save_artifact(db, run_id, variant, "torch_trace", "t", gzip.compress(b"x\n"))
    monkeypatch.setattr(artifacts, "MAX_BYTES", 25)  # the last row "lies": bigger than allowed
    artifacts.save_artifact(db, run_id, "big", "torch_trace", "t", b"y" * 24)
    with db.session(write=True) as session:
        from storage.models import Artifact

        big = session.query(Artifact).filter_by(run_id=run_id, variant="big").one()
        big.content = b"y" * 4096
    at = app("compare", runs=str(run_id))
    no_exceptions(at)
    labels = [d.proto.label.replace("\\", "") for d in at.get("download_button")]
    assert sum(f"run{run_id}-a_b-torch_trace" in label for label in labels) == 2, labels
    assert not any("big" in label for label in labels)
    assert any("big" in c.value.replace("\\", "") and "not offered" in c.value
               for c in at.caption)
