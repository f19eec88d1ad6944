"""One memory figure for a run's configs (issue 41): the Pareto view, ``show``'s table and
``recommend --memory-mib`` all read the peak *reserved* bytes (what the process holds; allocated
only where reserved was not measured), and a config over the budget is left out with a line
that says so."""

from __future__ import annotations

import json

from engine.analysis import pareto, show
from engine.analysis.recommend import recommend
from tests.conftest import run_cli

MiB = 2**20


def rows() -> list[dict]:
    """The H200 bundle's BERT grid in small: eager holds 520 MiB (277 allocated); a
    reduce-overhead config 636 MiB (334 allocated), faster."""
    def r(variant, per_ms, first, alloc, reserved, **more):
        return {"variant": variant, "status": "ok", "median_ms": per_ms,
                "first_call_cold_s": first, "peak_allocated_bytes": alloc * MiB,
                "peak_reserved_bytes": None if reserved is None else reserved * MiB,
                "correct": True, "speedup": 4.13 / per_ms, "speedup_ci_low": 4.0 / per_ms,
                "speedup_ci_high": 4.3 / per_ms, "eager_first_call_ms": 10.0, **more}
    return [r("eager", 4.13, 0.01, 277, 520),
            r("default", 2.92, 11.8, 334, 580),
            r("reduce-overhead", 1.31, 12.9, 334, 636)]


def test_the_pareto_view_show_and_recommend_read_the_same_figure():
    rs = rows()
    xs = {p["row"]["variant"]: p["x"] for p in pareto.mark(rs, "peak_memory")}
    assert xs == {"eager": 520.0, "default": 580.0, "reduce-overhead": 636.0}
    for r in rs:
        assert show._cell(r, None, None, "peak reserved MiB") == f"{xs[r['variant']]:.1f}"
    rec = recommend(rs, 1_000_000)
    assert {c.name: c.peak_bytes / MiB for c in rec.candidates} == xs
    # allocated only where reserved is missing, and said
    only_alloc = dict(rs[1], peak_reserved_bytes=None)
    assert pareto.peak_bytes(only_alloc) == 334 * MiB
    assert show._cell(only_alloc, None, None, "peak reserved MiB") == "334.0 (alloc)"


def test_a_config_over_the_budget_is_left_out_and_the_output_says_so():
    rec = recommend(rows(), 1_000_000, memory_mib=600)
    assert rec.choice == "default"  # reduce-overhead would win, but holds 636 MiB
    text = rec.as_text()
    assert ("Left out: reduce-overhead (peak reserved memory 636.0 MiB exceeds the 600 MiB "
            "budget).") in text
    assert "600 MiB of memory" in text.splitlines()[1]
    # by allocated bytes it would have fitted: the budget is on what the process holds
    assert recommend(rows(), 1_000_000).choice == "reduce-overhead"


def test_recommend_command_with_a_memory_budget(tmp_path):
    """Through the CLI on a stored run: the over-budget config is left out, in text and JSON."""
    from engine.spec import normalise
    from storage import claim_run, enqueue_run, finish_run, open_database, save_variant_result

    url = f"sqlite:///{tmp_path / 'm.db'}"
    db = open_database(url)
    spec = normalise({"model": "mlp", "dims": {"batch": 8}, "device": "cpu",
                      "variants": ["eager", "default", "reduce-overhead"]})
    run_id = enqueue_run(db, spec)
    claim_run(db, run_id, "w")
    for r in rows():
        stats = {k: r[k] for k in ("speedup", "speedup_ci_low", "speedup_ci_high",
                                   "median_ms", "eager_first_call_ms")}
        save_variant_result(db, run_id, {
            "variant": r["variant"], "status": "ok", "correct": True, "samples_ms": [1.0],
            "first_call_cold_s": r["first_call_cold_s"],
            "peak_allocated_bytes": r["peak_allocated_bytes"],
            "peak_reserved_bytes": r["peak_reserved_bytes"], "stats": stats})
    finish_run(db, run_id, "done", environment={})
    db.dispose()
    p = run_cli("recommend", str(run_id), "--calls", "1e6", "--memory-mib", "600", "--db", url)
    assert p.returncode == 0, p.stderr
    assert p.stdout.splitlines()[0] == "Recommend: default"
    assert "Left out: reduce-overhead (peak reserved memory 636.0 MiB exceeds the 600 MiB " \
        "budget)." in p.stdout
    doc = json.loads(run_cli("recommend", str(run_id), "--calls", "1e6", "--memory-mib", "600",
                             "--json", "--db", url).stdout)
    assert doc["memory_mib"] == 600 and doc["recommend"] == "default"
    assert any(name == "reduce-overhead" for name, _ in doc["excluded"])
