"""Hostile-input corpus, dashboard side: every case gets one clear message and no exception.

Four groups, each parametrised:
- query params of every page (ids that overflow, are not ASCII digits, are negative, 5000 digits,
  dates that do not parse or are reversed), through AppTest;
- bundles, through ``storage.bundle`` (what the Runs page calls) and through the page's upload
  (deep nesting, 5000-digit ints, lone surrogates, NaN/Infinity, negative latencies, a 20 001-
  character note, unknown keys, too many runs or samples, a file over the size limit, invalid
  UTF-8, importing the same bundle twice);
- user text shown in pages (model name, note, tags, run error, variant error, stderr tail,
  graph-break reason): ``![x](http://evil/)``, ``<script>alert(1)</script>`` and
  ``=cmd|' /C calc'!A0`` appear only escaped in Markdown, as text in tables, neutralised in CSV;
- the CSV and HTML report built from such runs.
"""

from __future__ import annotations

import copy
import json

import pandas as pd
import pytest
from test_dashboard_app import app, button, no_exceptions, seed_done, texts
from test_dashboard_data import failed_result, mlp_results, spec, sweep_results

from contract.text import MAX_NOTE_CHARS
from dashboard import report, safe, tables, widgets
from dashboard.verdict import verdict_for_run
from storage import bundle as bundle_mod
from storage import bundle_validation, queries, queue, results
from storage.db import open_database
from storage.models import Run

IMAGE = "![x](http://evil/)"
SCRIPT = "<script>alert(1)</script>"
FORMULA = "=cmd|' /C calc'!A0"
# Streamlit's own colon forms: an icon, an emoji, the logo, styled and help directives
DIRECTIVES = ":material/verified: :skull: :streamlit: :red[ok] :rainbow[x] :small[y] a:help[z]"
HOSTILE = [IMAGE, SCRIPT, FORMULA, DIRECTIVES]


@pytest.fixture
def db(app_db):
    return app_db  # tests/conftest.py


def _seed(db, text: str = "plain") -> int:
    """A finished run whose user text (note, tags, errors, stderr, graph-break reason, judged
    tensor) is
    ``text``; the model name too (written into the database by hand: bundles refuse model
    names that are not names, but anyone who can write the database can store one)."""
    results_ = mlp_results()
    results_[1]["graph_breaks"] = [{"reason": text, "file": text, "line": 3, "count": 1}]
    results_[1]["accuracy_tensor"] = text  # a parameter's name: the user's model chooses it
    results_[2] = failed_result(results_[2]["variant"], error=text)
    results_[2]["stderr_tail"] = text
    run_id = queue.enqueue_run(db, spec("mlp"), tags=[text, "ok"], note=text)
    queue.claim_run(db, run_id, "w")
    for r in results_:
        results.save_variant_result(db, run_id, r)
    queue.finish_run(db, run_id, "failed", error=text, environment={"gpu": text, "torch": "2"})
    with db.session(write=True) as session:
        run = session.get(Run, run_id)
        run.model, run.spec = text, {**run.spec, "model": text}
    return run_id


def _markdown_texts(at) -> str:
    """Everything the page rendered as Markdown (where a link or image would come alive)."""
    parts = [texts(at.markdown), texts(at.caption), texts(at.error), texts(at.warning),
             texts(at.info), texts(at.success)]
    parts += [e.label for e in at.expander]
    return "\n".join(parts)


# --------------------------------------------------------------------------- query params

BAD_IDS = ["99999999999999999999", "9" * 5000, "²", "-1", "1,abc", "0", "1e3", "１", "%00",
           "\x00", "<script>", "0x10", " , ,", "#"]


@pytest.mark.parametrize("page", ["compare", "sweep"])
@pytest.mark.parametrize("raw", BAD_IDS, ids=[r[:12].encode("unicode_escape").decode()
                                              for r in BAD_IDS])
def test_bad_run_ids_in_the_url(db, page, raw):
    _seed(db)
    seed_done(db, spec("varying_seq", dims={"batch": 8, "seq": 32, "hidden": 256, "heads": 4},
                       sweep={"dim": "seq", "values": [32, 64, 128]},
                       variants=["eager", "default"]), sweep_results())
    at = app(page, runs=raw)
    no_exceptions(at)
    shown = texts(at.warning) + texts(at.info)
    if raw.strip(" ,#"):
        assert "not run numbers" in shown or "Not in this database" in shown, shown


@pytest.mark.parametrize("raw", ["99999999999999999999", "9" * 5000, "²", "-1", "abc"])
def test_bad_watch_id_on_new_run(db, raw):
    at = app("new_run", watch=raw)
    no_exceptions(at)


@pytest.mark.parametrize("params", [
    {"selected": "99999999999999999999,²,-1"},
    {"since": "not-a-date", "until": "2026-13-45"},
    {"since": "9999-12-31", "until": "0001-01-01"},
    {"model": SCRIPT, "tag": IMAGE, "status": "\x00", "hw": "9" * 5000},
], ids=["selected", "garbage-dates", "reversed-dates", "unknown-filters"])
def test_bad_runs_page_params(db, params):
    _seed(db)
    at = app("runs", **params)
    no_exceptions(at)
    assert at.dataframe or at.info


def test_parse_run_id_rules():
    assert widgets.parse_run_id("#12") == 12
    for bad in ["²", "-1", "0", "9" * 20, "9" * 5000, "1.0", "", None, "１"]:
        assert widgets.parse_run_id(bad) is None, bad
    ids, bad = widgets.parse_run_ids(",".join(map(str, range(1, 1000))))
    assert len(ids) == widgets.MAX_LINKED_RUNS and not bad


# --------------------------------------------------------------------------- bundles


@pytest.fixture(scope="module")
def good_bundle(tmp_path_factory) -> dict:
    source = open_database(f"sqlite:///{tmp_path_factory.mktemp('src') / 'src.db'}")
    run_id = queue.enqueue_run(source, spec("mlp"), tags=["a"], note="n")
    queue.claim_run(source, run_id, "w")
    for r in mlp_results():
        results.save_variant_result(source, run_id, r)
    queue.finish_run(source, run_id, "done", environment={"gpu": "H200", "torch": "2"})
    exported = bundle_mod.export_bundle(source, [run_id])
    source.dispose()
    return json.loads(json.dumps(exported))


def _text(b: dict) -> bytes:
    return json.dumps(b).encode()


def _set(path: str, value):
    """A mutation: set ``runs[0]....`` (dotted, list indices as numbers) to ``value``."""
    def mutate(b: dict) -> bytes:
        b = copy.deepcopy(b)
        *parents, last = path.split(".")
        node = b
        for p in parents:
            node = node[int(p)] if p.isdigit() else node[p]
        node[int(last) if last.isdigit() else last] = value
        return _text(b)
    return mutate


def _raw(text: bytes):
    return lambda _b: text


BUNDLE_CASES = {
    "deep-nesting": (_raw(b"[" * 100_000 + b"]" * 100_000), "nested too deeply"),
    "deep-nesting-in-environment": (_set("runs.0.environment",
                                         json.loads('{"a":' * 60 + "1" + "}" * 60)),
                                    "nested deeper"),
    "5000-digit-int": (_raw(b'{"format": "compilelab-bundle", "version": ' + b"9" * 5000
                            + b', "runs": []}'), "not valid JSON"),
    "4000-digit-int": (_raw(b'{"format": "compilelab-bundle", "version": 2, "runs": [], '
                            b'"exported_at": null, "x": ' + b"9" * 4000 + b"}"), "unknown keys"),
    "huge-int-in-series": (_set("runs.0.variants.0.samples_ms", [10**30]), "out of range"),
    "lone-surrogate-note": (_set("runs.0.note", "\ud800"), "lone surrogate"),
    "lone-surrogate-tag": (_set("runs.0.tags", ["\udfff"]), "lone surrogate"),
    "nan-literal": (_raw(b'{"format": "compilelab-bundle", "version": 2, "runs": [NaN]}'),
                    "not valid JSON"),
    "infinity-literal": (_raw(b'{"format": "compilelab-bundle", "version": 2, '
                              b'"runs": [Infinity]}'), "not valid JSON"),
    "overflowing-float": (lambda b: _text(b).replace(b'"setup_s": 1.2', b'"setup_s": 1e400', 1),
                          "not a finite number"),
    "negative-sample": (_set("runs.0.variants.1.samples_ms", [0.1, -0.2]), "negative"),
    "negative-setup": (_set("runs.0.variants.0.setup_s", -1.0), "negative"),
    "negative-median": (_set("runs.0.variants.0.stats.median_ms", -0.5), "negative"),
    "note-20001": (_set("runs.0.note", "n" * 20_001), "limit is 20000"),
    "unknown-top-key": (_set("surprise", 1), "unknown keys"),
    "unknown-run-key": (_set("runs.0.surprise", 1), "unknown keys"),
    "unknown-variant-key": (_set("runs.0.variants.0.surprise", 1), "unknown keys"),
    "markdown-variant-name": (_set("runs.0.variants.0.variant", IMAGE), "not a variant name"),
    "nul-in-model": (_set("runs.0.model", "m\x00"), "NUL"),
    "running-status": (_set("runs.0.status", "running"), "only finished runs"),
    "naive-timestamp": (_set("runs.0.created_at", "2026-01-01T00:00:00"), "time zone"),
    "tags-not-list": (_set("runs.0.tags", "a,b"), "expected a list"),
    "list-not-object": (_raw(b"[1, 2, 3]"), "expected an object"),
    "wrong-format": (_set("format", "zip"), "expected 'compilelab-bundle'"),
    "future-version": (_set("version", 99), "not supported"),
    "invalid-utf8": (_raw(b'{"format": "\xff\xfe"}'), "not valid JSON"),
    "empty-file": (_raw(b""), "not valid JSON"),
}


@pytest.mark.parametrize("case", list(BUNDLE_CASES))
def test_bad_bundle_is_refused_with_its_reason(db, good_bundle, case):
    mutate, message = BUNDLE_CASES[case]
    with pytest.raises(bundle_mod.BundleError, match=message):
        bundle_mod.import_bundle(db, mutate(good_bundle))
    assert queries.list_runs(db).empty


@pytest.mark.parametrize("limit,value,message", [
    ("MAX_RUNS", 0, "runs; the limit is 0"),
    ("MAX_SERIES_LENGTH", 5, "the limit is 5"),
    ("MAX_TOTAL_NUMBERS", 50, "more than 50 samples"),
    ("MAX_BUNDLE_BYTES", 100, "the limit is 100"),
])
def test_bundle_over_a_limit_is_refused(db, good_bundle, monkeypatch, limit, value, message):
    monkeypatch.setattr(bundle_validation, limit, value)  # read where it is checked
    with pytest.raises(bundle_mod.BundleError, match=message):
        bundle_mod.import_bundle(db, _text(good_bundle))
    assert queries.list_runs(db).empty


def _upload(at, content: bytes, name: str = "b.json"):
    at.file_uploader(key="runs-import-file").set_value((name, content, "application/json"))
    at.run()
    button(at, "Import bundle").click().run()
    no_exceptions(at)
    return at


@pytest.mark.parametrize("case", ["deep-nesting", "5000-digit-int", "lone-surrogate-note",
                                  "negative-sample", "note-20001", "unknown-run-key",
                                  "invalid-utf8", "markdown-variant-name"])
def test_bad_bundle_upload_on_the_runs_page(db, good_bundle, case):
    mutate, _message = BUNDLE_CASES[case]
    at = _upload(app("runs"), mutate(good_bundle))
    errors = texts(at.error)
    assert "Nothing was imported" in errors and len(at.error) == 1, errors
    assert queries.list_runs(db).empty


def test_bundle_upload_over_the_size_limit(db, good_bundle, monkeypatch):
    monkeypatch.setattr(bundle_validation, "MAX_BUNDLE_BYTES", 1000)  # the page and storage
    at = _upload(app("runs"), _text(good_bundle))
    assert "a bundle may be at most 1,000 bytes" in texts(at.error)
    assert queries.list_runs(db).empty


def test_same_bundle_uploaded_twice_is_imported_once(db, good_bundle):
    at = _upload(app("runs"), _text(good_bundle))
    assert "Imported 1 run(s)" in texts(at.success)
    at = _upload(app("runs"), _text(good_bundle))
    assert "already in this database" in texts(at.info)
    assert len(queries.list_runs(db)) == 1


# --------------------------------------------------------------------------- user text shown


@pytest.mark.parametrize("text", HOSTILE, ids=["image", "script", "formula", "directives"])
@pytest.mark.parametrize("page", ["compare", "runs", "sweep"])
def test_user_text_is_shown_as_text(db, text, page):
    rid = _seed(db, text)
    at = app(page, runs=str(rid)) if page != "runs" else app("runs")
    no_exceptions(at)
    rendered = _markdown_texts(at)
    # the raw string never reaches a Markdown element: only its escaped form does
    assert text not in rendered
    if page == "compare":
        assert safe.md(text) in rendered
        assert text in texts(at.text) + texts(at.code)  # note and stderr: plain text
    for frame in at.dataframe:
        cells = [str(c) for c in frame.value.to_numpy().ravel()]
        assert not any(c.startswith(("=", "+", "@")) for c in cells), page


def test_notes_editor_keeps_hostile_text_as_typed(db):
    rid = _seed(db, IMAGE)
    at = app("compare", runs=str(rid))
    at.text_area(key=f"note-{rid}").set_value(SCRIPT + FORMULA)
    at.text_input(key=f"tags-{rid}").set_value("reviewed")
    button(at, "Save note and tags").click().run()
    no_exceptions(at)
    assert queries.list_runs(db)["note"].iloc[0] == SCRIPT + FORMULA
    # whichever tag rule applies (dashboard/spec.py), a hostile tag gets a message, no crash
    at.text_input(key=f"tags-{rid}").set_value(IMAGE)
    button(at, "Save note and tags").click().run()
    no_exceptions(at)
    assert at.error or at.success


def test_notes_editor_refuses_a_note_over_the_limit_with_a_message(db):
    rid = _seed(db)
    at = app("compare", runs=str(rid))
    assert at.text_area(key=f"note-{rid}").max_chars == MAX_NOTE_CHARS


# --------------------------------------------------------------------------- exports


@pytest.mark.parametrize("cell", ["=1+1", "+1", "-1", "@SUM(A1)", "\tx", "\rx", FORMULA])
def test_csv_export_neutralises_formula_cells(cell):
    df = pd.DataFrame({"model": [cell], "n": [-1], "ok": ["plain"]})
    out = pd.read_csv(pd.io.common.StringIO(safe.csv(df)), keep_default_na=False)
    assert out["model"].iloc[0] == "'" + cell
    assert out["n"].iloc[0] == -1  # numbers stay numbers
    assert out["ok"].iloc[0] == "plain"


def test_variants_csv_of_a_hostile_run(db):
    rid = _seed(db, FORMULA)
    d = queries.load_runs(db, [rid])
    table = tables.variants_table(d["variants"], d["runs"])
    assert FORMULA in set(table["accuracy_judged_tensor"])  # the seeded name reached the table
    text = safe.csv(table)
    assert "\n=" not in text and ",=" not in text and "'=cmd" in text


@pytest.mark.parametrize("text", HOSTILE, ids=["image", "script", "formula", "directives"])
def test_html_report_escapes_user_text(db, text):
    rid = _seed(db, text)
    d = queries.load_runs(db, [rid])
    page = report.build_report(d["runs"], d["variants"], [], [verdict_for_run(d["variants"], rid)],
                               graph_breaks=d["graph_breaks"], recompiles=d["recompiles"])
    assert "<script>alert(1)</script>" not in page
    if text == SCRIPT:
        assert "&lt;script&gt;alert(1)&lt;/script&gt;" in page
        assert "Judged on" in page  # the column the seeded tensor name is in
    assert "<img" not in page


def test_variant_name_written_straight_into_the_database(db):
    """Bundles refuse such names, but anyone who can write the database can save one."""
    name = "<a href='http://evil/'>x</a>" + IMAGE
    run_id = queue.enqueue_run(db, spec("mlp", variants=["eager", "default"]))
    queue.claim_run(db, run_id, "w")
    eager, default = mlp_results()[:2]
    results.save_variant_result(db, run_id, eager)
    results.save_variant_result(db, run_id, {**default, "variant": name})
    queue.finish_run(db, run_id, "done")
    at = app("compare", runs=str(run_id))
    no_exceptions(at)
    rendered = _markdown_texts(at)
    assert IMAGE not in rendered and "<a href" not in rendered
    for chart in at.get("plotly_chart"):
        assert "<a href" not in chart.proto.spec


def test_a_hostile_variant_name_in_runs_that_do_not_repeat(db):
    """The repeat notice (dashboard/mixing.repeat_notice) names a variant from the database in a
    sentence: a name with a link and an image in it stays text on the page and in the report."""
    from test_dashboard_data import variant_result

    name = "<a href='http://evil/'>x</a>" + IMAGE
    ids = []
    for ms in (2.0, 3.0):  # 2.5x and 1.67x: far apart
        run_id = queue.enqueue_run(db, spec("mlp", variants=["eager", "default"]))
        queue.claim_run(db, run_id, "w")
        results.save_variant_result(db, run_id, variant_result(
            "eager", 5.0, 5.0, first_cold_s=0.01, first_warm_s=None))
        results.save_variant_result(db, run_id, {**variant_result(
            "default", 5.0, ms, first_cold_s=5.0, first_warm_s=1.0), "variant": name})
        queue.finish_run(db, run_id, "done")
        ids.append(run_id)
    at = app("compare", runs=",".join(map(str, ids)))
    no_exceptions(at)
    rendered = _markdown_texts(at)
    assert "further apart than their intervals allow" in rendered
    assert IMAGE not in rendered and "<a href" not in rendered
    d = queries.load_runs(db, ids)
    page = report.build_report(d["runs"], d["variants"], [], [])
    assert "Runs that do not repeat." in page and "<a href" not in page and "<img" not in page


def test_figures_of_the_wrong_kind_written_into_the_database_by_hand(db):
    """Bundles check every figure by its kind, but anyone who can write the database can put
    text in a number column (SQLite keeps it) or anything in ``extra``: the pages show such a
    figure as missing; before, one such row made every page say the database cannot open."""
    from sqlalchemy import text

    from storage.records import load_run

    run_id = queue.enqueue_run(db, spec("mlp", variants=["eager", "default"]))
    queue.claim_run(db, run_id, "w")
    for r in mlp_results()[:2]:
        results.save_variant_result(db, run_id, r)
    queue.finish_run(db, run_id, "done")
    extra = {"eager_error": "abc", "accuracy_ok": "yes", "host_other_busy_cores": [1, 2],
             "compile_load": {"cold": "busy", "warm": {"other_busy_cores": "9"}},
             "lost_time": "x", "roofline": 5, "warm_cache_miss_reason": {"a": 1},
             "stats": {"speedup_spread": {"a": 1}, "break_even_calls_warm": "never",
                       "n_processes": "three", "process_speedups": "x"}}
    with db.session(write=True) as s:
        s.execute(text("UPDATE variant_results SET extra = :e, median_ms = 'abc', "
                       "speedup = 'fast', n = 'x' WHERE variant = 'default'"),
                  {"e": json.dumps(extra)})
    for at in (app("compare", runs=str(run_id)), app("runs")):
        no_exceptions(at)
        assert "Cannot open the database" not in texts(at.error), texts(at.error)
    d = queries.load_runs(db, [run_id])
    row = d["variants"].set_index("variant").loc["default"]
    assert pd.isna(row["median_ms"]) and pd.isna(row["speedup"]) and pd.isna(row["eager_error"])
    assert row["accuracy_ok"] is None and row["lost_time"] is None and row["roofline"] is None
    assert pd.isna(row["speedup_spread"]) and row["process_speedups"] is None
    verdict = verdict_for_run(d["variants"], run_id)
    assert not [w for w in verdict.warnings if "compile time and break-even" in w]
    report.build_report(d["runs"], d["variants"], [], [verdict])
    shown = {v["variant"]: v for v in load_run(db, run_id)["variants"]}["default"]
    assert shown["eager_error"] is None and shown["warm_cache_miss_reason"] is None
    assert shown["median_ms"] is None and shown["speedup"] is None  # engine show formats them


def test_times_that_are_not_times_written_into_the_database_by_hand(db):
    """SQLite keeps any text in a time column; its driver's parser raised on such a row, and
    one row took the Runs page, the compare page and ``show`` down. Such a time reads as
    missing, and a running run with no readable heartbeat is never called silent."""
    from sqlalchemy import text

    from engine.analysis.show import format_run

    done = seed_done(db, spec("mlp", variants=["eager", "default"]), mlp_results()[:2])
    running = queue.enqueue_run(db, spec("mlp"))
    queue.claim_run(db, running, "w")
    with db.session(write=True) as s:
        s.execute(text("UPDATE runs SET created_at = 'yesterday', finished_at = 42, "
                       "started_at = '2026-13-45 99:00:00' WHERE id = :i"), {"i": done})
        s.execute(text("UPDATE runs SET heartbeat_at = 'not a time', executor = 7 "
                       "WHERE id = :i"), {"i": running})
    frame = queries.list_runs(db).set_index("run_id")
    assert pd.isna(frame.loc[done, "created_at"]) and pd.isna(frame.loc[done, "finished_at"])
    assert pd.isna(frame.loc[running, "heartbeat_at"])
    assert "| status done" in format_run(db, done, width=None)
    with pytest.raises(bundle_mod.BundleError, match=rf"runs \[{done}\] have no readable "
                                                     "creation time"):
        bundle_mod.export_bundle(db, [done])
    assert "no heartbeat" not in format_run(db, running, width=None)
    for at in (app("runs"), app("compare", runs=f"{done},{running}"),
               app("review", tag="nightly")):
        no_exceptions(at)
        assert "Cannot open the database" not in texts(at.error), texts(at.error)
        assert "heartbeat" not in texts(at.warning).lower()


def test_hand_edited_rows_through_the_typed_reader_and_the_eager_caution(db):
    """Rows anyone who can write the database may leave: a process whose series holds a
    negative time, processes that are not objects, a negative or textual eager.  Every reader
    (show's records, the dashboard's frame, the Runs page's trust flags) drops the same values
    through contract.results.VariantResult, and no page claims rows compare different eagers
    from figures that are not times."""
    from sqlalchemy import text

    from engine.analysis.verdict import decide, distrust, eager_per_row
    from storage.records import load_run
    from storage.trust import trust_rows

    run_id = queue.enqueue_run(db, spec("mlp", variants=["eager", "default"]))
    queue.claim_run(db, run_id, "w")
    for r in mlp_results()[:2]:
        results.save_variant_result(db, run_id, r)
    queue.finish_run(db, run_id, "done")
    processes = [{"phase": "cold", "samples_ms": [1.0, -3.0], "eager_samples_ms": [1.0, 1.1]},
                 "x", 5, [1]]
    with db.session(write=True) as s:
        s.execute(text("UPDATE variant_results SET eager_median_ms = -5 WHERE variant = "
                       "'default'"))
        s.execute(text("UPDATE variant_results SET pipelined_median_ms = 'abc' "
                       "WHERE variant = 'eager'"))
        extra = s.execute(text("SELECT extra FROM variant_results WHERE variant = 'default'")
                          ).scalar_one()
        extra = json.loads(extra) if isinstance(extra, str) else dict(extra or {})
        extra["processes"] = processes
        s.execute(text("UPDATE variant_results SET extra = :e WHERE variant = 'default'"),
                  {"e": json.dumps(extra)})
    for at in (app("compare", runs=str(run_id)), app("runs")):
        no_exceptions(at)
    shown = {v["variant"]: v for v in load_run(db, run_id, series=True)["variants"]}
    frame = queries.load_runs(db, [run_id])["variants"].set_index("variant")
    for procs in (shown["default"]["processes"], frame.loc["default", "processes"]):
        assert len(procs) == 1 and procs[0]["samples_ms"] == []  # the objects, series dropped
        assert procs[0]["eager_samples_ms"] == [1.0, 1.1]
    rows = list(shown.values())
    assert eager_per_row(rows) is None
    assert not [w for w in decide(rows).warnings if w.startswith("Eager differs")]
    assert distrust(trust_rows(db, [run_id])[run_id]) == distrust(rows)


HOSTILE_COMPILE_LOADS = {
    "strings": {"cold": {"other_busy_cores": SCRIPT, "steal_share": IMAGE}},
    "absurd-numbers": {"cold": {"other_busy_cores": 1e9, "steal_share": 7.0},
                       "warm": {"other_busy_cores": -3, "steal_share": -0.5}},
    "bools": {"cold": {"other_busy_cores": True, "steal_share": True}},
    "wrong-shapes": {"cold": [[[1]]], "warm": "x", "hot": {"other_busy_cores": 9}},
    "not-a-dict": [1, 2, 3],
}


@pytest.mark.parametrize("case", list(HOSTILE_COMPILE_LOADS))
def test_hostile_compile_load_in_a_bundle_says_nothing(db, good_bundle, case):
    """``compile_load`` (engine/measure/compile_load.py) comes back from bundles and rows: a figure that
    is not a plausible measurement flags no compile, and no page, report or ``show`` fails."""
    from engine.analysis.show import format_run

    b = copy.deepcopy(good_bundle)
    compiled = next(v for v in b["runs"][0]["variants"] if v["variant"] != "eager")
    compiled.setdefault("extra", {})["compile_load"] = HOSTILE_COMPILE_LOADS[case]  # where
    # bundles carry it, like every figure without a column (docs/CONTRACTS.md)
    (run_id,) = bundle_mod.import_bundle(db, _text(b))
    at = app("compare", runs=str(run_id))
    no_exceptions(at)
    shown = _markdown_texts(at)
    assert "compile other work" not in shown and "hypervisor" not in shown
    assert SCRIPT not in shown and "1000000000" not in shown
    text = format_run(db, run_id)
    assert "compile time and break-even" not in text and "compile host" not in text
    d = queries.load_runs(db, [run_id])
    assert not [w for w in verdict_for_run(d["variants"], run_id).warnings
                if "compile time and break-even" in w]


def test_a_compile_load_out_of_any_range_is_refused_at_the_bundle(db, good_bundle):
    b = copy.deepcopy(good_bundle)
    b["runs"][0]["variants"][1].setdefault("extra", {})["compile_load"] = {
        "cold": {"other_busy_cores": 1e300}}
    with pytest.raises(bundle_mod.BundleError, match="compile_load.cold.other_busy_cores: "
                                                     "number out of range"):
        bundle_mod.import_bundle(db, _text(b))
    assert queries.list_runs(db).empty


HOSTILE_HOST_RECORDS = {
    "text": {"host_settle": {"waited_s": SCRIPT, "reference_us": IMAGE, "probes": SCRIPT,
                             "slow": IMAGE},
             "host_probe_after": {"module_call_us": SCRIPT, SCRIPT: 1.0}},
    "numbers": {"host_settle": {"waited_s": -1e308, "reference_us": float("inf"),
                                "probes": -4, "slow": 1},
                "host_probe_after": {"module_call_us": -0.5, "launch_us": float("nan")}},
    "shapes": {"host_settle": [SCRIPT], "host_probe_after": "x"},
}


@pytest.mark.parametrize("case", list(HOSTILE_HOST_RECORDS))
def test_hostile_host_records_and_per_process_eager_say_nothing(db, case):
    """A row's host-settle record, its probe after the window and its per-process eager
    (issue 36), written by anyone who can write the database: pages render, show prints no
    line about them, nothing of their text reaches a page or the verdict."""
    from engine.analysis.disagreement import off_eager_process
    from engine.analysis.show import format_run, moved_line, settle_line
    from engine.analysis.verdict import decide
    from storage.records import load_run

    res = copy.deepcopy(mlp_results()[:2])
    for p in res[1].setdefault("processes", [{"samples_ms": [1.0], "eager_samples_ms": [1.1]}]):
        p.update(HOSTILE_HOST_RECORDS[case], host_probe={"module_call_us": 0.8})
    res[1].setdefault("stats", {}).update(process_eager_ms=[SCRIPT, 7.5, -1],
                                          process_speedups=[1.0, 2.0, 1.0])
    run_id = seed_done(db, spec("mlp", variants=["eager", "default"]), res)
    for at in (app("compare", runs=str(run_id)), app("runs")):
        no_exceptions(at)
        shown_on_page = _markdown_texts(at)
        assert SCRIPT not in shown_on_page and IMAGE not in shown_on_page
    rows = load_run(db, run_id)["variants"]
    assert settle_line(rows) is None and moved_line(rows) is None
    assert all(off_eager_process(r) is None for r in rows)
    shown = format_run(db, run_id)
    assert SCRIPT not in shown and IMAGE not in shown and "eager in each" not in shown
    assert not [w for w in decide(rows).warnings if SCRIPT in w or "read eager at" in w]


def test_hostile_kernel_draws_in_a_bundle_are_no_draws(db, good_bundle):
    """A process's ``autotune_draw`` and its note (engine/measure/autotune_draw.py) come back
    from bundles and rows: only the three words count as a draw, a note reaches ``show`` as one
    escaped line and no page; the caches table's column holds only those words."""
    from dashboard import charts_forensics
    from engine.analysis.show import format_run

    b = copy.deepcopy(good_bundle)
    compiled = next(v for v in b["runs"][0]["variants"] if v["variant"] != "eager")
    hostile = [SCRIPT, IMAGE, True, ["redrawn"], {"redrawn": 1}]
    compiled.setdefault("extra", {})["processes"] = [
        {"samples_ms": [1.0], "eager_samples_ms": [1.1], "autotune_draw": d,
         "autotune_draw_note": SCRIPT + "\x1b]0;x\x07"} for d in [*hostile, "redrawn"]]
    compiled["extra"]["compile_cache"] = [{"phase": "warm_cache", "counters": {}}] * 6
    (run_id,) = bundle_mod.import_bundle(db, _text(b))
    at = app("compare", runs=str(run_id))
    no_exceptions(at)
    assert SCRIPT not in _markdown_texts(at) and "<img" not in _markdown_texts(at)
    variants = queries.load_runs(db, [run_id])["variants"]
    column = charts_forensics.cache_table(variants)["autotuned kernels"]
    assert {x for x in column if isinstance(x, str)} == {"redrawn"}
    line = next(x for x in format_run(db, run_id).splitlines() if x.strip().startswith("autotuned kernels"))
    assert "drawn anew by 1;" in line and "\x1b" not in line and "\x07" not in line
