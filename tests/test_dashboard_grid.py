"""The New run page's grid: several values per option become variants of one run, the count
and estimate are shown before queuing, and the grid-size limit refuses until raised."""

from __future__ import annotations

from test_dashboard_app import app, button, no_exceptions, texts

from dashboard.catalogue import load_catalogue
from dashboard.spec import RunRequest, build_spec
from storage import queries


def test_new_run_grid_counts_refuses_past_the_limit_then_queues(app_db):
    db = app_db  # tests/conftest.py: the database the app reads
    at = app("new_run")
    at.selectbox(key="device").set_value("cpu")
    at.multiselect(key="grid-dynamic").set_value(["none", "true"])
    at.multiselect(key="grid-fullgraph").set_value(["false", "true"])
    at.number_input(key="grid-limit").set_value(3)
    at.run()
    no_exceptions(at)
    assert "4 compiled variants, more than the limit of 3" in texts(at.error)
    button(at, "Queue run").click().run()
    assert queries.list_runs(db).empty
    at.number_input(key="grid-limit").set_value(4).run()
    no_exceptions(at)
    assert "5 variants \\(4 compiled\\)" in texts(at.info)  # said before queuing
    button(at, "Queue run").click().run()
    no_exceptions(at)
    assert not at.error, texts(at.error)
    spec = queries.list_runs(db).iloc[0]["spec"]
    assert spec["variants"] == ["eager", "default@dyn=none,fg=0", "default@dyn=none,fg=1",
                                "default@dyn=1,fg=0", "default@dyn=1,fg=1"]
    assert spec["grid_limit"] == 4


def test_build_spec_grid_rules_come_from_the_engine():
    mlp = next(m for m in load_catalogue() if m.name == "mlp")
    req = RunRequest(model="mlp", dims={}, dtype="float32", device="cpu",
                     variants=["default"], backend="aot_eager",
                     grid={"coordinate_descent_tuning": ["true"]})
    from dashboard.data import engine_normalise

    check = build_spec(req, mlp, ["cpu"], engine_check=engine_normalise)
    assert not check.ok and "need backend 'inductor'" in check.errors["variants"]
    bad = RunRequest(model="mlp", dims={}, dtype="float32", device="cpu",
                     variants=["default"], grid={"dynamic": ["maybe"]})
    assert "not one of" in build_spec(bad, mlp, ["cpu"]).errors["grid"]


def test_build_spec_passes_sweep_weights_to_the_engine():
    from dashboard.data import engine_normalise

    vs = next(m for m in load_catalogue() if m.name == "varying_seq")
    req = RunRequest(model="varying_seq", dims={}, dtype="float32", device="cpu",
                     variants=["default"], sweep_dim="seq", sweep_values="32, 64",
                     sweep_weights="3, 1")
    check = build_spec(req, vs, ["cpu"], engine_check=engine_normalise)
    assert check.ok and check.spec["shape_weights"] == [0.75, 0.25]
    bad = RunRequest(**{**req.__dict__, "sweep_weights": "3, 1, 1"})
    check = build_spec(bad, vs, ["cpu"], engine_check=engine_normalise)
    assert not check.ok and "list of 2 numbers" in check.errors["sweep"]
    assert "numbers like" in build_spec(RunRequest(**{**req.__dict__, "sweep_weights": "a"}),
                                        vs, ["cpu"]).errors["sweep"]
