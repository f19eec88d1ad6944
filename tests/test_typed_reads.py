"""Every stored result is read through the contract's typed results (contract/results.py):
``show`` (storage/records.py) and the dashboard's frames (storage/queries.py) read a variant
through the same ``VariantResult.from_json``, so they agree figure by figure (a hand-edited
row's wrong figures read as missing in both: tests/test_hostile_inputs_dashboard.py)."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

from contract.results import VariantResult as Typed
from storage import import_bundle
from storage.queries import VARIANT_COLUMNS, load_runs
from storage.records import load_run

BUNDLE = Path(__file__).resolve().parents[1] / "data" / "h200_bundle.json"


def _plain(value: Any) -> Any:
    """A frame cell as the records read it (NaN is the frame's None)."""
    if isinstance(value, float) and math.isnan(value):
        return None
    return value.item() if hasattr(value, "item") else value


def test_show_and_the_dashboard_read_every_figure_alike(db):
    ids = import_bundle(db, BUNDLE.read_text())
    frame = load_runs(db, ids)["variants"]
    compared = 0
    for run_id in ids:
        shown = {v["variant"]: v for v in load_run(db, run_id, series=True)["variants"]}
        for row in frame[frame["run_id"] == run_id].to_dict("records"):
            record = shown[row["variant"]]
            for column in VARIANT_COLUMNS[1:]:
                assert _plain(row[column]) == record[column], (run_id, row["variant"], column)
                compared += 1
    assert compared > 69 * 50  # every variant of the bundle, every figure


def test_a_typed_row_round_trips_through_its_json():
    raw = {"variant": "default", "status": "ok", "warmup_ms": [9.0, 2.1],
           "processes": [{"phase": "cold", "samples_ms": [2.0, 2.1]}],
           "stats": {"median_ms": 2.0, "speedup": 1.5}, "graph_breaks": [{"reason": "x"}]}
    typed = Typed.from_json(raw)
    row = typed.row()
    assert row["median_ms"] == 2.0 and row["speedup"] == 1.5 and "warmup_ms" not in row
    assert "samples_ms" not in row["processes"][0]  # no series unless asked
    assert typed.row(series=True)["processes"][0]["samples_ms"] == [2.0, 2.1]
    assert row["graph_breaks"] == [{"reason": "x"}]
    assert Typed.from_json(typed.to_json()).row(series=True) == typed.row(series=True)
