"""``engine show`` fits a 120-column terminal (issue 40, item 4): the table is split into blocks
that each repeat the variant column, long lines wrap under their indent, ``--wide`` prints the
one table, and the time breakdown adds up to the run's wall time."""

from __future__ import annotations

import json
import re
import unicodedata
from pathlib import Path

import pytest

from engine.analysis import show
from storage import import_bundle_result, open_database

BUNDLE = json.loads((Path(__file__).resolve().parents[1] / "data" / "h200_bundle.json")
                    .read_text())


def _columns(line: str) -> int:
    return sum(2 if unicodedata.east_asian_width(c) in "WF" else 1 for c in line)


@pytest.fixture(scope="module")
def shipped(tmp_path_factory):
    db = open_database(f"sqlite:///{tmp_path_factory.mktemp('show') / 'lab.db'}")
    ids = import_bundle_result(db, BUNDLE).new_ids
    yield db, ids
    db.dispose()


def test_every_shipped_run_fits_120_columns_and_keeps_its_figures(shipped):
    db, ids = shipped
    assert len(ids) == len(BUNDLE["runs"])
    for run_id in ids:
        text = show.format_run(db, run_id)
        widest = max(text.splitlines(), key=_columns)
        assert _columns(widest) <= 120, (run_id, widest)
        wide = show.format_run(db, run_id, width=None)
        # every column label of the one wide table is in some block of the narrow one
        labels = [label for label, _, _ in show.ROW]
        assert any(all(label in line for label in labels) for line in wide.splitlines())
        for label in labels:
            assert label in text, (run_id, label)
        # and no word of the wide text is lost by wrapping
        assert set(wide.split()) - set(text.split()) == set(), run_id


def test_each_block_repeats_the_variant_column(shipped):
    db, ids = shipped
    text = show.format_run(db, ids[0])
    heads = [line for line in text.splitlines() if line.strip().startswith("variant  ")]
    assert len(heads) >= 2 and "eager ms" in heads[0] and "median ms/call" in heads[0]
    rows = [line.split()[0] for line in text.splitlines()
            if re.match(r"\s+(eager|default|reduce-overhead|max-autotune)\s{2,}", line)]
    assert rows.count("eager") == len(heads)  # eager's row in every block


def test_the_cli_prints_narrow_by_default_and_wide_on_request(shipped, capsys):
    from engine.cli.main import main

    db, ids = shipped
    url = db.engine.url.render_as_string(hide_password=False)
    assert main(["show", str(ids[0]), "--db", url]) == 0
    narrow = capsys.readouterr().out
    assert main(["show", str(ids[0]), "--wide", "--db", url]) == 0
    wide = capsys.readouterr().out
    assert max(map(_columns, narrow.splitlines())) <= 120 < max(map(_columns, wide.splitlines()))


def test_where_the_time_went_adds_up():
    """Processes run side by side: their seconds add up to more than the wall time, so the
    line says the wall time is the time some process was alive plus the parent's alone."""
    run = {"started_at": "2026-12-03T15:00:00+00:00", "finished_at": "2026-12-03T15:01:40+00:00",
           "variants": [
               {"time_s": {"compile": 30.0, "measure": 20.0},
                "processes": [{"spawned_at": 1000.0, "ended_at": 1060.0},
                              {"spawned_at": 1010.0, "ended_at": 1080.0}]},
               {"time_s": {"compile": 40.0, "waiting": 25.0},
                "processes": [{"spawned_at": 1070.0, "ended_at": 1090.0}]}]}
    line = show.where_time_went(run)
    assert "(100.0 s wall) = measuring processes alive 90.0 s (up to 2 at once) + the parent " \
           "alone 10.0 s" in line
    assert "inside the 3 recorded processes, side by side, 115.0 process-seconds" in line
    # a cancelled run: processes it killed left no record, so the rest is not "the parent alone"
    stopped = show.where_time_went({**run, "status": "cancelled"})
    assert "+ the rest 10.0 s (the parent, and any process the run's end stopped before it " \
           "recorded its time: the run cancelled)" in stopped and "parent alone" not in stopped
    assert show.where_time_went({"variants": [{"time_s": {"compile": 1.0}}]}) == \
        "  where the time went: 1.0 process-seconds: compile 1.0 s"
