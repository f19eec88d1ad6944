"""Issue 40, items 6-7 leftovers: a speedup below 1 reads as slower at a glance (and still sorts
as a number), the Runs table's deciding columns fit the page at 1440 px, and grid variant names
(``default@dyn=none,cdt=1``) are explained in the glossary from engine/grid.py's own table."""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from dashboard import glossary, people, tables
from engine import grid
from storage import import_bundle, load_runs

ROOT = Path(__file__).resolve().parents[1]
BUNDLE = ROOT / "data" / "h200_bundle.json"


def test_a_speedup_says_which_side_of_eager_it_lies_on():
    assert people.speedup_text(0.29) == "0.29× slower"
    assert people.speedup_text(1.32) == "1.32× faster"
    assert people.speedup_text(0.999) == "1.00× even"  # never "1.00× slower"
    frame = pd.DataFrame({"best_speedup": [0.29, 13.6, None]})
    styler = people.styled(frame, {"best_speedup": people.speedup_text})
    html = styler.to_html()
    assert "0.29× slower" in html and "13.60× faster" in html and tables.DASH in html
    # the cells keep their numbers: Streamlit sorts the column by them, not by the text
    assert styler.data["best_speedup"].dtype.kind == "f"


def test_the_variants_table_says_slower_in_words(db):
    ids = import_bundle(db, BUNDLE.read_text())
    d = load_runs(db, ids)
    styler, _ = people.variants_headline(tables.variants_table(d["variants"], d["runs"]))
    html = styler.to_html()
    assert "× slower" in html and "× faster" in html
    assert styler.data["speedup_x"].dtype.kind == "f"
    # eager against itself is the baseline: one per run, none reads "1.00× even"
    assert html.count(">baseline<") == len(ids)


def test_the_deciding_run_columns_fit_the_page_at_1440_px(db):
    """The shipped runs' table ran to 1.3 times the page: Shape was cut at its right edge."""
    ids = import_bundle(db, BUNDLE.read_text())
    d = load_runs(db, ids)
    table = tables.runs_table(d["runs"], {int(i): ["noisy", "busy host", "processes disagree",
                                                   "eager per variant"] for i in ids})
    widths = {c: v["width"] for c, v in people.runs_columns(table).items()
              if isinstance(v.get("width"), int)}
    order = list(table.columns)
    deciding = order[: order.index("dims_label") + 1]
    assert {"run_id", "model", "status", "best_speedup", "cautions", "dims_label"} <= set(deciding)
    assert sum(widths[c] for c in deciding) <= people.FIT_PX
    # the short columns are not squeezed: every value and label is whole
    for col in set(deciding) - set(people.GIVE_WAY):
        values = table[col].map(lambda v, c=col: people.speedup_text(v)
                                if c == "best_speedup" else v)
        need = max(people.text_px(str(v)) for v in [*values, people.RUN_LABELS[col]])
        assert widths[col] >= need + people.PAD_PX, col
    assert all(widths[c] >= people.LEAST_PX for c in people.GIVE_WAY)


def test_a_narrow_table_keeps_its_natural_widths():
    widths = {"run_id": 60, "model": 100, "cautions": 200, "dims_label": 180}
    assert people.fit_page(widths, list(widths)) == widths


def test_the_glossary_spells_out_every_grid_key():
    text = glossary.TERMS["grid variant names"]
    for option, (key, _) in grid.OPTIONS.items():
        assert f"{key} = {option}" in text
    assert grid.OPT_SUFFIX in text
    for page in ("sweep", "review"):
        source = (ROOT / "dashboard" / "views" / f"{page}.py").read_text()
        assert '"grid variant names"' in source, page
