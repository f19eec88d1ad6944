"""Every page through streamlit.testing.v1.AppTest against a temporary SQLite database that is
seeded through the storage API (enqueue, claim, save_variant_result, finish_run)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import streamlit as st
from streamlit.testing.v1 import AppTest
from test_dashboard_data import ENVIRONMENT, bert_results, mlp_results, spec, sweep_results

from storage import bundle, queries, queue, results
from storage.workers import Capabilities, register_worker

H200 = Capabilities(devices=("cpu", "cuda"), gpu_name="NVIDIA H200", gpu_count=1,
                    gpu_memory_bytes=150_000_000_000, torch_version="2.11.0+cu128")
LAPTOP = Capabilities(devices=("cpu",), torch_version="2.13.0")

APP = str(Path(__file__).resolve().parents[1] / "dashboard" / "app.py")
TIMEOUT = 30


@pytest.fixture
def db(app_db):
    return app_db  # tests/conftest.py


def seed_done(db, run_spec: dict, variant_results: list[dict], tags=("nightly",)) -> int:
    run_id = queue.enqueue_run(db, run_spec, tags=tags)
    assert queue.claim_run(db, run_id, "test-worker") is not None
    for r in variant_results:
        results.save_variant_result(db, run_id, r)
    queue.finish_run(db, run_id, "done", environment=ENVIRONMENT)
    return run_id


def app(page: str | None = None, **params) -> AppTest:
    at = AppTest.from_file(APP, default_timeout=TIMEOUT)
    if page:
        at.run()  # st.navigation registers the pages (custom url_paths) on the first run
        at.switch_page(f"views/{page}.py")
    for k, v in params.items():
        at.query_params[k] = v
    return at.run()


def no_exceptions(at: AppTest) -> None:
    assert not at.exception, [e.value for e in at.exception]


def texts(elements) -> str:
    return "\n".join(str(e.value) for e in elements)


def button(at: AppTest, label: str):
    return next(b for b in at.button if b.label == label)


def plotly_count(at: AppTest) -> int:
    return len(at.get("plotly_chart"))


# --------------------------------------------------------------------------- runs page


def test_runs_page_empty_state_says_how_to_start(db):
    at = app()
    no_exceptions(at)
    info = texts(at.info)
    assert "No runs yet" in info and "make worker" in info


def test_runs_page_table_filters_and_selection(db):
    a = seed_done(db, spec("bert_base", dims={"batch": 8, "seq": 128}), bert_results())
    b = seed_done(db, spec("mlp"), mlp_results(), tags=("seed",))
    at = app("runs")
    no_exceptions(at)
    assert [s.label for s in at.selectbox] == ["Model", "GPU / device", "Status", "Tag"]
    assert len(at.date_input) == 1
    table = at.dataframe[0].value
    assert list(table["run_id"]) == [b, a]
    assert {"model", "dims_label", "dtype", "device", "gpu", "torch_version", "status",
            "best_speedup", "created_at", "tags"} <= set(table.columns)
    assert table.set_index("run_id").loc[a, "best_speedup"] == pytest.approx(5.24, abs=0.01)

    at.selectbox(key="filter-model").set_value("mlp").run()
    no_exceptions(at)
    assert list(at.dataframe[0].value["run_id"]) == [b]
    assert at.query_params["model"] == "mlp"
    at.selectbox(key="filter-model").set_value("(any)").run()
    at.selectbox(key="filter-tag").set_value("nightly").run()
    assert list(at.dataframe[0].value["run_id"]) == [a]

    # selecting rows offers the comparison; the button switches page with ?runs=
    at.selectbox(key="filter-tag").set_value("(any)").run()
    at.session_state["runs-table"] = {"selection": {"rows": [0, 1], "columns": []}}
    at.run()
    no_exceptions(at)
    assert at.query_params["selected"] == f"{b},{a}"
    compare = button(at, "Compare 2 run(s)")
    compare.click().run()
    no_exceptions(at)
    assert at.query_params["runs"] == f"{b},{a}"
    assert plotly_count(at) == 11  # with the compile-phases chart (issue 14) and two Pareto charts (17)


# --------------------------------------------------------------------------- new run page


def test_new_run_page_widgets(db):
    at = app("new_run")
    no_exceptions(at)
    assert at.selectbox(key="model").value == "mlp"
    assert "Launch-bound" in at.selectbox(key="model").format_func("mlp")
    assert {n.label for n in at.number_input} >= {"batch", "hidden", "Warm-up calls",
                                                  "Minimum samples", "Minimum time (s)",
                                                  "Maximum time (s)", "Timeout per variant (s)"}
    assert at.multiselect(key="variants").value == ["default"]
    # No worker connected: both devices offered, cpu preselected, and how to start one.
    assert at.selectbox(key="device").options == ["cpu", "cuda"]
    assert at.selectbox(key="device").value == "cpu"
    assert at.selectbox(key="backend").options == ["inductor", "aot_eager", "eager"]
    assert len(at.selectbox(key="dynamic").options) == 3
    assert at.checkbox(key="fullgraph").value is False
    assert "No worker running" in texts(at.warning) and "make worker" in texts(at.warning)
    assert button(at, "Queue run")
    assert at.query_params["model"] == "mlp"


def test_new_run_validation_error_beside_field_and_nothing_queued(db):
    at = app("new_run")
    at.selectbox(key="sweep-dim-mlp").set_value("batch").run()
    at.text_input(key="sweep-values-mlp").set_value("8, 999999").run()
    at.number_input(key="max_time_s").set_value(0.2)
    at.number_input(key="min_time_s").set_value(5.0).run()
    button(at, "Queue run").click().run()
    no_exceptions(at)
    errors = texts(at.error)
    # the validator's own words (engine/spec.py), the sweep's and the time budget's at once
    assert "sweep: dim batch=999999 is out of range \\[1, 65536\\]" in errors
    assert "max\\_time\\_s \\(0.2 s\\) must be at least min\\_time\\_s \\(5 s\\)" in errors
    assert at.session_state["section-budget"] is True  # its expander opened by itself
    assert "nothing was queued" in errors
    assert queries.list_runs(db).empty


def test_new_run_submit_queues_and_shows_progress_with_cancel(db):
    at = app("new_run")
    at.selectbox(key="device").set_value("cpu")
    at.multiselect(key="variants").set_value(["default", "max-autotune"])
    at.selectbox(key="backend").set_value("inductor")
    at.text_input(key="tags").set_value("ci, smoke")
    at.run()
    button(at, "Queue run").click().run()
    no_exceptions(at)
    runs = queries.list_runs(db)
    assert len(runs) == 1
    run = runs.iloc[0]
    assert run["status"] == "queued" and run["tags"] == ["ci", "smoke"]
    assert run["spec"]["variants"] == ["eager", "default", "max-autotune"]
    assert run["spec"]["device"] == "cpu" and run["spec"]["dims"] == {"batch": 32,
                                                                       "hidden": 1024}
    assert at.query_params["watch"] == str(run["run_id"])
    assert any("variants final 0/3" in str(p.proto.text) for p in at.get("progress"))
    button(at, "Cancel run").click().run()
    no_exceptions(at)
    assert queries.list_runs(db).iloc[0]["status"] == "cancelled"


def test_new_run_widgets_take_defaults_and_limits_from_the_spec(db):
    """Every numeric option on the form starts at RunSpec's default with the validator's own
    range (contract/schema.py BOUNDS) as its limits; each dim's limits are the catalogue's."""
    from contract.schema import BOUNDS, RunSpec

    at = app("new_run")
    at.radio(key="step").set_value("train").run()  # the training options too
    shown = {n.key: n for n in at.number_input}
    keys = {"warmup_calls", "min_samples", "min_time_s", "max_time_s", "pipeline_k",
            "timeout_s", "seed", "lr", "accuracy_steps"}
    assert keys <= set(shown)
    for key in keys:
        p = shown[key].proto
        assert (p.min, p.max, shown[key].value) == (BOUNDS[key].lo, BOUNDS[key].hi,
                                                    RunSpec.defaults()[key]), key
    grid = shown["grid-limit"].proto
    assert (grid.min, grid.max) == (BOUNDS["grid_limit"].lo, BOUNDS["grid_limit"].hi)
    batch = shown["dim-mlp-batch"].proto
    assert (batch.min, batch.max, shown["dim-mlp-batch"].value) == (1, 65536, 32)


def test_worker_not_running_banner(db):
    queue.enqueue_run(db, spec("mlp", device="cpu"))
    at = app("runs")
    no_exceptions(at)
    warning = texts(at.warning)
    assert "No worker running" in warning and "1 run(s) queued" in warning
    assert "make worker" in warning


def test_imported_gpu_runs_do_not_pretend_to_be_a_connected_worker(db):
    seed_done(db, spec("mlp"), mlp_results())  # measured on an NVIDIA H200, no worker now
    at = app("new_run")
    assert at.selectbox(key="device").value == "cpu"
    assert "NVIDIA H200" not in texts(at.caption) + texts(at.markdown)
    assert "No worker running" in texts(at.warning)


def test_connected_gpu_worker_drives_devices_and_requirements(db):
    register_worker(db, "gpu7:42", H200, host="gpu7", pid=42)
    register_worker(db, "laptop:9", LAPTOP, host="laptop", pid=9)
    at = app("new_run")
    no_exceptions(at)
    assert at.selectbox(key="device").options == ["cpu", "cuda"]
    assert at.selectbox(key="device").value == "cuda"
    connected = texts(at.caption).replace("\\", "")  # shown through safe.md
    assert "gpu7 · NVIDIA H200 ×1, 140 GiB · torch 2.11.0+cu128" in connected
    assert "laptop · CPU only · torch 2.13.0" in connected
    assert "No worker running" not in texts(at.warning)
    at.selectbox(key="require-gpu").set_value("NVIDIA H200").run()
    at.selectbox(key="require-torch").set_value("2.13.0").run()
    assert "No connected worker can run this" in texts(at.warning)  # no H200 has 2.13
    at.selectbox(key="require-torch").set_value("2.11.0+cu128").run()
    assert "No connected worker can run this" not in texts(at.warning)
    at.number_input(key="dim-mlp-batch").set_value(8).run()
    button(at, "Queue run").click().run()
    no_exceptions(at)
    queued = queries.list_runs(db).iloc[0]["spec"]
    assert (queued["device"], queued["require_gpu"], queued["require_torch"]) == (
        "cuda", "NVIDIA H200", "2.11.0+cu128")
    assert queued["dims"]["batch"] == 8 and isinstance(queued["dims"]["batch"], int)


def test_cpu_only_worker_offers_cpu_only(db):
    register_worker(db, "laptop:9", LAPTOP, host="laptop", pid=9)
    at = app("new_run")
    assert at.selectbox(key="device").options == ["cpu"]


def test_fractional_batch_is_refused_not_truncated(db):
    at = app("new_run")
    at.number_input(key="dim-mlp-batch").set_value(2.5).run()
    button(at, "Queue run").click().run()
    no_exceptions(at)
    assert "batch must be a whole number" in texts(at.error)
    assert queries.list_runs(db).empty


# --------------------------------------------------------------------------- compare page


def test_compare_renders_figures_verdicts_tables(db):
    a = seed_done(db, spec("bert_base", dims={"batch": 8, "seq": 128}), bert_results())
    b = seed_done(db, spec("mlp"), mlp_results())
    at = app("compare", runs=f"{a},{b}")
    no_exceptions(at)
    # the 8 compare figures + the forensics' compile phases (these results record phases; their
    # start-up strategies and lost time were not measured: titles with the reason instead)
    # + the grid section's two Pareto figures
    assert plotly_count(at) == 11
    rec = texts(at.text)
    assert "Runner-up:" in rec and "Answer changes:" in rec
    assert {m.value.split("**")[1] for m in at.markdown if "Recommend:" in m.value} == {
        f"#{a} Recommend: eager", f"#{b} Recommend: eager"}  # 1000 calls: never pays
    assert "start-up strategies not measured" in " ".join(c.value for c in at.caption)
    md = texts(at.markdown)
    assert "Ship reduce-overhead" in md
    assert "compiled is slower than eager" in md
    assert "default is slower than eager per call" in md
    assert any("max-autotune: oom" in e.label for e in at.expander)
    assert "CUDA out of memory" in texts(at.code)
    assert len(at.get("download_button")) >= 3  # CSV, JSON bundle, HTML report
    frames = [df.value for df in at.dataframe]
    breaks = next(f for f in frames if "location" in f.columns)
    assert "/models/bert.py:88" in set(breaks["location"])
    recompiles = next(f for f in frames if "call_index" in f.columns)
    assert "size mismatch" in recompiles["reason"].iloc[0]
    assert any({"model", "variant", "median_ms", "speedup_x"} <= set(f.columns) for f in frames)
    assert f"compare?runs={a}%2C{b}" in texts(at.code) or f"compare?runs={a},{b}" in texts(
        at.code)


def test_compare_edits_note_and_tags(db):
    a = seed_done(db, spec("mlp"), mlp_results())
    at = app("compare", runs=str(a))
    at.text_area(key=f"note-{a}").set_value("<b>slower</b> at batch 32")
    at.text_input(key=f"tags-{a}").set_value("seed, reviewed")
    next(b for b in at.button if b.label == "Save note and tags").click().run()
    no_exceptions(at)
    run = queries.list_runs(db).iloc[0]
    assert run["note"] == "<b>slower</b> at batch 32"
    assert sorted(run["tags"]) == ["reviewed", "seed"]


def test_compare_without_runs_and_with_bad_ids(db):
    seed_done(db, spec("mlp"), mlp_results())
    at = app("compare")
    no_exceptions(at)
    assert "Pick runs above" in texts(at.info)
    at = app("compare", runs="abc,999")
    no_exceptions(at)
    warnings = texts(at.warning)
    assert "'abc'" in warnings and "#999" in warnings


def test_compare_shows_running_run_progress(db):
    run_id = queue.enqueue_run(db, spec("mlp", device="cpu"))
    queue.claim_run(db, run_id, "w")
    queue.heartbeat(db, run_id, "w", variant="default", phase="compiling", fraction=0.25)
    results.save_variant_result(db, run_id, mlp_results(device="cpu")[0])
    at = app("compare", runs=str(run_id))
    no_exceptions(at)
    bars = [str(p.proto.text) for p in at.get("progress")]
    assert bars == ["default · compiling · 25% of the run · variants final 1/4"]
    button(at, "Cancel run").click().run()
    no_exceptions(at)
    assert "Cancel requested" in texts(at.caption)
    assert queue.heartbeat(db, run_id, "w") is False  # the worker is told to stop


def test_compare_says_when_a_running_run_stopped_heartbeating(db):
    """A run whose process died without ending it (a machine that vanished) stays `running`
    until a worker recovers it; its progress bar stands still, so the page says why."""
    from datetime import timedelta

    from sqlalchemy import update

    from storage.models import Run, utcnow

    run_id = queue.enqueue_run(db, spec("mlp", device="cpu"))
    queue.claim_run(db, run_id, "w")
    queue.heartbeat(db, run_id, "w", variant="default", phase="compiling", fraction=0.25)
    at = app("compare", runs=str(run_id))
    assert "no heartbeat" not in texts(at.warning).lower()  # a live run says nothing
    with db.session(write=True) as session:
        session.execute(update(Run).where(Run.id == run_id)
                        .values(heartbeat_at=utcnow() - timedelta(minutes=14)))
    at = app("compare", runs=str(run_id))
    no_exceptions(at)
    warning = texts(at.warning)
    assert "No heartbeat for 14 min" in warning and "python -m engine worker --once" in warning
    bars = [str(p.proto.text) for p in at.get("progress")]
    assert bars == ["last reported: default · compiling · 25% of the run · variants final 0/4"]
    from dashboard import data

    data.clear_caches()  # the list is cached a few seconds; the first page load read it live
    runs = app("runs")
    no_exceptions(runs)
    assert list(runs.dataframe[0].value["status"]) == ["running · no heartbeat"]


# --------------------------------------------------------------------------- sweep page


def test_sweep_page(db):
    s = spec("varying_seq", dims={"batch": 8, "seq": 32, "hidden": 256, "heads": 4},
             sweep={"dim": "seq", "values": [32, 64, 128]}, variants=["eager", "default"])
    run_id = seed_done(db, s, sweep_results())
    at = app("sweep")
    no_exceptions(at)
    assert at.multiselect(key="sweep-runs").value == [run_id]
    assert plotly_count(at) == 3  # latency, speedup at each value, first call
    assert at.query_params["runs"] == str(run_id)


def test_sweep_page_opens_on_the_newest_sweep_that_has_points(db):
    """A newer sweep that was cancelled before any variant finished (or is still queued) used
    to open the page on "No sweep points yet"."""
    s = spec("varying_seq", dims={"batch": 8, "seq": 32, "hidden": 256, "heads": 4},
             sweep={"dim": "seq", "values": [32, 64, 128]}, variants=["eager", "default"])
    measured = seed_done(db, s, sweep_results())
    cancelled = queue.enqueue_run(db, s)
    queue.finish_run(db, cancelled, "cancelled")
    queue.enqueue_run(db, s)  # queued, newest of all
    at = app("sweep")
    no_exceptions(at)
    assert at.multiselect(key="sweep-runs").value == [measured]
    assert plotly_count(at) == 3 and "No sweep points yet" not in texts(at.info)


def test_sweep_permalink_reaches_a_sweep_older_than_the_listed_runs(db, monkeypatch):
    s = spec("varying_seq", dims={"batch": 8, "seq": 32, "hidden": 256, "heads": 4},
             sweep={"dim": "seq", "values": [32, 64, 128]}, variants=["eager", "default"])
    old = seed_done(db, s, sweep_results())
    newer = seed_done(db, s, sweep_results())
    plain = seed_done(db, spec("mlp"), mlp_results())
    real_list_runs = queries.list_runs
    # the page lists only recent runs: make "recent" exclude the old sweep
    monkeypatch.setattr(queries, "list_runs", lambda database, **kw: real_list_runs(
        database, **{**kw, "limit": 2} if kw.get("limit") else kw))
    at = app("sweep", runs=f"{old},{plain}")
    no_exceptions(at)
    assert at.multiselect(key="sweep-runs").value == [old, plain]
    assert f"#{newer} varying_seq · sweep seq · done" in at.multiselect(key="sweep-runs").options
    assert plotly_count(at) == 3
    assert f"Not a sweep (no swept dim): #{plain}" in texts(at.warning)


def test_runs_page_lists_the_newest_runs_only(db, monkeypatch):
    from dashboard import data

    ids = [seed_done(db, spec("mlp"), mlp_results()) for _ in range(3)]
    monkeypatch.setattr(data, "RUNS_PAGE_LIMIT", 2)
    at = app("runs")
    no_exceptions(at)
    assert list(at.dataframe[0].value["run_id"]) == ids[:0:-1]
    assert "of the newest 2 runs" in texts(at.caption)
    at.selectbox(key="filter-model").set_value("mlp").run()
    no_exceptions(at)
    assert list(at.dataframe[0].value["run_id"]) == ids[:0:-1]
    assert "2+ of the newest 2 runs" in texts(at.caption)


def test_sweep_page_empty_state(db):
    at = app("sweep")
    no_exceptions(at)
    assert "No sweep runs yet" in texts(at.info)


# --------------------------------------------------------------------------- bundles


def _import(at: AppTest, name: str, content: bytes) -> AppTest:
    at.file_uploader(key="runs-import-file").set_value((name, content, "application/json"))
    at.run()
    button(at, "Import bundle").click().run()
    no_exceptions(at)
    return at


def test_import_malformed_bundle_shows_error_and_writes_nothing(db):
    seed_done(db, spec("mlp"), mlp_results())
    at = _import(app("runs"), "broken.json", b"{not json")
    assert "not valid JSON" in texts(at.error)
    at = _import(app("runs"), "wrong.json", json.dumps({"format": "nope", "runs": 3}).encode())
    errors = texts(at.error)
    assert "Bundle rejected" in errors and "Nothing was imported" in errors
    assert len(queries.list_runs(db)) == 1


def test_import_exported_bundle_round_trip(db):
    a = seed_done(db, spec("mlp"), mlp_results())
    payload = json.dumps(bundle.export_bundle(db, [a]), default=str).encode()
    at = _import(app("runs"), "runs.json", payload)
    # the same database: the run is already here, and the page says so instead of duplicating
    assert "already in this database" in texts(at.info)
    assert len(queries.list_runs(db)) == 1
    results.delete_runs(db, [a])
    st.cache_data.clear()  # deleted behind the dashboard's back
    at = app("runs")
    assert "No runs yet" in texts(at.info)
    at = _import(at, "runs.json", payload)
    assert "Imported 1 run(s)" in texts(at.success)
    assert len(queries.list_runs(db)) == 1
    # The page left its empty state: the imported run is listed at once, no reload needed.
    assert "No runs yet" not in texts(at.info)
    assert len(at.dataframe) == 1


def test_new_run_lists_operator_plugin_models(db, tmp_path, monkeypatch):
    plugins = tmp_path / "plugins"
    plugins.mkdir()
    (plugins / "tiny.py").write_text(
        'DESCRIPTION = "A tiny operator model."\n'
        'DIMS = {"batch": (4, 1, 64, True), "width": (16, 8, 128)}\n'
        "def factory(batch, width):\n    raise NotImplementedError\n")
    monkeypatch.setenv("COMPILELAB_PLUGIN_DIR", str(plugins))
    at = app("new_run", model="plugin:tiny")
    no_exceptions(at)
    picker = at.selectbox(key="model")
    assert picker.value == "plugin:tiny"
    assert picker.format_func("plugin:tiny") == "plugin:tiny — A tiny operator model. " \
                                                "(operator plugin)"
    assert {n.label for n in at.number_input} >= {"batch", "width"}
    assert at.selectbox(key="sweep-dim-plugin:tiny").options == ["(no sweep)", "batch"]


def test_new_run_queues_a_training_step_with_the_compiled_optimizer(db):
    at = app("new_run")
    at.radio(key="step").set_value("train").run()  # the training options appear
    for key, value in {"device": "cpu", "optimizer": "sgd", "autocast": "bfloat16"}.items():
        at.selectbox(key=key).set_value(value)
    at.multiselect(key="variants-train").set_value(["default", "default+opt"]).run()
    button(at, "Queue run").click().run()
    no_exceptions(at)
    spec = queries.list_runs(db).iloc[0]["spec"]
    assert spec["step"] == "train" and spec["variants"] == ["eager", "default", "default+opt"]
    assert (spec["optimizer"], spec["autocast"]) == ("sgd", "bfloat16")


def test_tags_the_cli_accepted_never_block_saving_a_note(db):
    """Tags such as ``<script>`` or ``=cmd`` (accepted by the CLI and by storage) used to make
    the editor refuse to save; a tag holding a comma would split into two on save."""
    tags = ["<script>alert(1)</script>", "=cmd|' /C calc'!A0", "a, b"]
    a = seed_done(db, spec("mlp"), mlp_results(), tags=tags)
    at = app("compare", runs=str(a))
    at.text_area(key=f"note-{a}").set_value("checked")
    next(b for b in at.button if b.label == "Save note and tags").click().run()
    no_exceptions(at)
    assert not at.error, texts(at.error)
    run = queries.list_runs(db).iloc[0]
    assert run["note"] == "checked" and sorted(run["tags"]) == sorted(tags)


def test_comparison_across_machines_carries_a_notice(db):
    gpu = seed_done(db, spec("mlp"), mlp_results())
    cpu = queue.enqueue_run(db, spec("mlp", device="cpu"))
    queue.claim_run(db, cpu, "laptop")
    for r in mlp_results(device="cpu"):
        results.save_variant_result(db, cpu, r)
    queue.finish_run(db, cpu, "done", environment={"host": "laptop", "torch": "2.13.0"})
    at = app("compare", runs=f"{gpu},{cpu}")
    no_exceptions(at)
    warning = texts(at.warning).replace("\\", "")
    assert "different machines or software" in warning
    assert f"device: cuda (#{gpu}) vs cpu (#{cpu})" in warning
    assert f"host: gpu-box-1 (#{gpu}) vs laptop (#{cpu})" in warning
    assert f"torch: 2.11.0 (#{gpu}) vs 2.13.0 (#{cpu})" in warning
    single = app("compare", runs=str(gpu))
    assert "different machines" not in texts(single.warning)


def test_cancelled_run_does_not_claim_no_graph_breaks(db):
    run_id = queue.enqueue_run(db, spec("mlp"))
    queue.claim_run(db, run_id, "w")
    results.save_variant_result(db, run_id, mlp_results()[0])  # eager only, then cancelled
    queue.finish_run(db, run_id, "cancelled")
    at = app("compare", runs=str(run_id))
    no_exceptions(at)
    captions = texts(at.caption)
    assert "No graph breaks" not in captions and "No recompiles" not in captions
    assert "no compiled variant finished" in captions
