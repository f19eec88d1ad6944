"""Round-trip property: whatever storage holds, ``export_bundle`` writes a bundle that
``import_bundle`` accepts and that reads back the same, for runs drawn by a seeded random
generator (hypothesis is not a dependency; seeds make a failure reproducible: the test id names
the seed).

Runs go in through the public API (enqueue, claim, save_variant_result, finish_run, set_note,
set_tags) with what a hostile or unlucky user may put there: Markdown, HTML and spreadsheet
formulas in notes, tags and error texts, notes at the 20 000-character limit, control
characters, astral-plane Unicode, empty and long sample series, missing figures, graph breaks,
recompiles, sweep points and free-form extras.
"""

from __future__ import annotations

import json
import random
import unicodedata
from typing import Any

import pytest

from contract.text import MAX_NOTE_CHARS, MAX_TAGS
from storage import export_bundle, import_bundle_result, open_database
from storage.queries import load_runs
from storage.queue import claim_run, enqueue_run, finish_run
from storage.results import save_variant_result, set_note, set_tags
from tests.test_storage_support import run_spec

HOSTILE = ["![x](http://evil/)", "<script>alert(1)</script>", "=cmd|' /C calc'!A0", "+1", "-2",
           "@SUM(A1)", "\tx", "\rx", "**bold**", ":red[alert]", "a\nb", "😀 ünïcödé", "\x07bell",
           "'; DROP TABLE runs; --", "\u202eevil"]
VARIANTS = ["eager", "default", "reduce-overhead", "max-autotune", "max-autotune-no-cudagraphs"]


def _text(rng: random.Random, limit: int) -> str:
    parts = [rng.choice(HOSTILE) if rng.random() < 0.5 else
             "".join(chr(rng.choice([rng.randint(32, 126), rng.randint(160, 0xD7FF),
                                      rng.randint(0x10000, 0x1FFFF)])) for _ in range(8))
             for _ in range(rng.randint(1, 6))]
    return "".join(parts)[:limit]


def _tag(rng: random.Random) -> str:
    """A tag the one text rule accepts (contract.text: one visible line): hostile text minus
    control and format characters, which the rule refuses everywhere."""
    text = "".join(c for c in _text(rng, 100) if unicodedata.category(c) not in ("Cc", "Cf"))
    return text.strip() or "t"


def _series(rng: random.Random) -> list[float] | None:
    if rng.random() < 0.15:
        return None
    return [rng.choice([0.0, rng.uniform(0, 1e-3), rng.uniform(0, 50), rng.uniform(0, 1e6)])
            for _ in range(rng.choice([0, 1, 7, 300]))]


def _maybe(rng: random.Random, value: Any) -> Any:
    return None if rng.random() < 0.2 else value


def _variant(rng: random.Random, name: str) -> dict[str, Any]:
    failed = rng.random() < 0.2
    result: dict[str, Any] = {
        "variant": name, "status": "failed" if failed else "ok",
        "failure_kind": rng.choice(["crash", "oom", "timeout"]) if failed else None,
        "error": _text(rng, 10_000) if failed else None,
        "stderr_tail": _text(rng, 64_000) if failed or rng.random() < 0.3 else None,
        "setup_s": _maybe(rng, rng.uniform(0, 30)),
        "first_call_cold_s": _maybe(rng, rng.uniform(0, 100)),
        "first_call_warm_s": _maybe(rng, rng.uniform(0, 10)),
        "warmup_ms": _series(rng), "samples_ms": _series(rng), "eager_samples_ms": _series(rng),
        "pipelined_ms": _series(rng), "eager_pipelined_ms": _series(rng),
        "timer": rng.choice(["cuda_event", "perf_counter", None]),
        "peak_allocated_bytes": _maybe(rng, rng.randint(0, 2**40)),
        "graph_count": _maybe(rng, rng.randint(0, 9)),
        "graph_break_count": _maybe(rng, rng.randint(0, 9)),
        "graph_breaks": [{"reason": _text(rng, 500), "file": _text(rng, 200),
                          "line": rng.randint(0, 10_000), "count": rng.randint(1, 5)}
                         for _ in range(rng.randint(0, 3))],
        "recompiles": [{"reason": _text(rng, 500), "call_index": rng.randint(1, 50),
                        "dim_value": _maybe(rng, rng.randint(1, 4096))}
                       for _ in range(rng.randint(0, 2))],
        "cudagraph_skips": [{"reason": _text(rng, 100)}] if rng.random() < 0.3 else [],
        "compile_phases_s": {"dynamo": rng.uniform(0, 5), "inductor": rng.uniform(0, 50)},
        "kernels_per_call": _maybe(rng, rng.uniform(0, 100)),
        "max_abs_err": _maybe(rng, rng.uniform(0, 1)), "correct": rng.choice([True, False, None]),
        "sweep": [{"value": v, "first_call_ms": rng.uniform(0, 1e4), "median_ms": rng.uniform(0, 9),
                   "p10_ms": rng.uniform(0, 1), "p90_ms": rng.uniform(1, 9), "n": rng.randint(1, 99),
                   "recompiled": rng.random() < 0.5, "eager_median_ms": _maybe(rng, 0.5)}
                  for v in (rng.sample([16, 32, 64, 128], rng.randint(0, 3)))],
        "host_other_busy_cores": _maybe(rng, rng.uniform(0, 2)),  # kept in extra
        "stats": {"median_ms": _maybe(rng, rng.uniform(0, 9)), "n": _maybe(rng, rng.randint(0, 9)),
                  "noisy": rng.choice([True, False]), "speedup": _maybe(rng, rng.uniform(0, 5)),
                  "break_even_calls": _maybe(rng, rng.randint(0, 10**9))},
    }
    return result


def _seed_runs(db, rng: random.Random) -> list[int]:
    ids = []
    for _ in range(rng.randint(1, 3)):
        names = ["eager", *rng.sample(VARIANTS[1:], rng.randint(0, 3))]
        model = rng.choice(["mlp", "gpt_decoder", "plugin:tiny"])
        run_id = enqueue_run(db, run_spec(model=model, variants=names))
        assert claim_run(db, run_id, "w") is not None
        for name in names:
            save_variant_result(db, run_id, _variant(rng, name))
        env = {"gpu": _maybe(rng, _text(rng, 60)), "torch": "2.13.0", "note": _text(rng, 300),
               "nested": {"a": [1, 2.5, None, True, {"b": _text(rng, 20)}]}}
        finish_run(db, run_id, rng.choice(["done", "failed", "cancelled"]),
                   error=_maybe(rng, _text(rng, 2000)), environment=env)
        note_len = rng.choice([0, 10, MAX_NOTE_CHARS])
        set_note(db, run_id, (_text(rng, 200) * 200)[:note_len].ljust(note_len, "n"))
        set_tags(db, run_id, list(dict.fromkeys(
            _tag(rng) for _ in range(rng.randint(0, MAX_TAGS)))))
        ids.append(run_id)
    return ids


def _comparable(bundle: dict) -> list[dict]:
    """The bundle's runs without what an import changes (ids) or export adds (timestamps)."""
    runs = json.loads(json.dumps(bundle["runs"]))
    for run in runs:
        run.pop("source_id")
    return runs


@pytest.mark.parametrize("seed", range(12))
def test_export_import_export_is_the_identity(tmp_path, seed):
    rng = random.Random(seed)
    source = open_database(f"sqlite:///{tmp_path / 'source.db'}")
    target = open_database(f"sqlite:///{tmp_path / 'target.db'}")
    try:
        ids = _seed_runs(source, rng)
        bundle = export_bundle(source, ids)
        text = json.dumps(bundle)  # what the dashboard's download writes
        outcome = import_bundle_result(target, text)
        assert len(outcome.new_ids) == len(ids) and outcome.existing_ids == []
        assert _comparable(export_bundle(target, outcome.new_ids)) == _comparable(bundle)
        # the DataFrames the dashboard draws from agree too (ids aside)
        before, after = load_runs(source, ids), load_runs(target, outcome.new_ids)
        assert len(after["samples"]) == len(before["samples"])
        assert list(after["runs"]["note"]) == list(before["runs"]["note"])
        # importing it again adds nothing and names the runs already here
        again = import_bundle_result(target, text.encode())
        assert again.new_ids == [] and again.existing_ids == outcome.new_ids
    finally:
        source.dispose()
        target.dispose()
