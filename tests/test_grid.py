"""Grid runs (engine/grid.py, engine/analysis/grid_plan.py): variant names that encode a config, the
expansion of --option values, torch.compile's arguments, the grid-size limit, the estimate."""

from __future__ import annotations

import json

import pytest

from engine import grid
from engine.analysis.grid_plan import plan
from engine.spec import ALL_VARIANTS, SpecError, normalise, split_variant
from tests.conftest import FAST, run_cli


def test_expand_crosses_modes_with_option_values() -> None:
    opts = grid.parse_options(["dynamic=none,true", "fullgraph=false,true"])
    assert opts == {"dynamic": [None, True], "fullgraph": [False, True]}
    names = grid.expand(["eager", "default", "reduce-overhead"], opts)
    assert names[0] == "eager" and len(names) == 1 + 2 * 4
    assert "default@dyn=none,fg=0" in names and "reduce-overhead@dyn=1,fg=1" in names
    # every name reads back as its config
    for n in names[1:]:
        base, config = grid.parse_variant(n, ALL_VARIANTS)
        assert grid.variant_name(base, config) == n
    assert grid.expand(["eager", "default"], {}) == ["eager", "default"]


def test_longest_name_fits_the_variant_column() -> None:
    opts = {k: [False] for k in grid.OPTIONS}
    opts["dynamic"] = [False]
    longest = max((n for v in ALL_VARIANTS for n in grid.expand([v], opts)), key=len)
    assert len(longest) <= grid.MAX_NAME, longest


@pytest.mark.parametrize(("items", "message"), [
    (["colour=1"], "NAME=v1,v2"),
    (["dynamic"], "NAME=v1,v2"),
    (["dynamic=maybe"], "not one of"),
    (["fullgraph=true", "fullgraph=false"], "given twice"),
    (["freezing="], "not one of"),
])
def test_bad_options_are_refused(items: list[str], message: str) -> None:
    with pytest.raises(grid.GridError, match=message):
        grid.parse_options(items)


@pytest.mark.parametrize(("name", "message"), [
    ("default@dyn=true", "should be written 'default@dyn=1'"),
    ("default@fg=1,dyn=1", "should be written"),
    ("default@dyn=1,dyn=0", "given twice"),
    ("default@zz=1", "not key=value"),
    ("default@fg=2", "not one of"),
    ("eager@fg=1", "takes no compile options"),
    ("fast@fg=1", "unknown variant"),
])
def test_bad_variant_names_are_refused(name: str, message: str) -> None:
    with pytest.raises(grid.GridError, match=message):
        grid.parse_variant(name, ALL_VARIANTS)
    with pytest.raises(SpecError):
        normalise({"model": "mlp", "variants": [name]})


def test_compile_kwargs_follow_the_name() -> None:
    run = {"backend": "inductor", "dynamic": None, "fullgraph": False}
    assert grid.compile_kwargs(run, "default") == {"backend": "inductor", "dynamic": None,
                                                   "fullgraph": False}
    assert grid.compile_kwargs(run, "reduce-overhead@dyn=0,fg=1") == {
        "backend": "inductor", "dynamic": False, "fullgraph": True, "mode": "reduce-overhead"}
    # inductor options: the mode travels as its options (torch.compile takes one of the two)
    kw = grid.compile_kwargs(run, "max-autotune@cdt=0,frz=1")
    assert "mode" not in kw
    assert kw["options"]["max_autotune"] is True and kw["options"]["triton.cudagraphs"] is True
    assert kw["options"]["coordinate_descent_tuning"] is False
    assert kw["options"]["freezing"] is True
    assert grid.compile_kwargs(run, "default@cdt=1")["options"] == {
        "coordinate_descent_tuning": True}
    # the run's own dynamic/fullgraph hold where the name says nothing
    assert grid.compile_kwargs({**run, "fullgraph": True}, "default@dyn=1")["fullgraph"] is True
    assert split_variant("reduce-overhead+opt@dyn=1") == ("reduce-overhead", True)
    assert grid.mode_of("max-autotune@fg=1") == "max-autotune"


def test_normalise_keeps_grid_order_within_a_mode_and_applies_rules() -> None:
    spec = normalise({"model": "mlp", "variants": ["reduce-overhead@fg=1", "default@fg=1",
                                                   "default@fg=0"]})
    assert spec["variants"] == ["eager", "default@fg=1", "default@fg=0", "reduce-overhead@fg=1"]
    with pytest.raises(SpecError, match="inference only"):
        normalise({"model": "mlp", "step": "train", "variants": ["default@frz=1"]})
    with pytest.raises(SpecError, match="need backend 'inductor'"):
        normalise({"model": "mlp", "backend": "aot_eager", "variants": ["default@cdt=1"]})
    train = normalise({"model": "mlp", "step": "train", "variants": ["default+opt@dyn=0"]})
    assert train["variants"] == ["eager", "default+opt@dyn=0"]


def test_grid_limit_refuses_big_grids_until_raised() -> None:
    names = grid.expand(["default", "reduce-overhead"], grid.parse_options(
        ["dynamic=none,true,false", "fullgraph=false,true", "coordinate_descent_tuning=0,1"]))
    assert grid.compiled_count(names) == 24
    with pytest.raises(SpecError, match="24 compiled variants, more than the limit of 16"):
        normalise({"model": "mlp", "variants": names})
    assert len(normalise({"model": "mlp", "variants": names, "grid_limit": 24})["variants"]) == 25
    with pytest.raises(SpecError, match="grid_limit"):
        normalise({"model": "mlp", "variants": names, "grid_limit": 64})


def test_plan_counts_processes_and_uses_history() -> None:
    spec = normalise({"model": "mlp", "variants": ["default@fg=0", "default@fg=1"],
                      "processes": 3, "max_processes": 4, "device": "cpu"})
    guess = plan(spec)
    assert (guess.variants, guess.compiled) == (3, 2)
    assert (guess.processes_low, guess.processes_high) == (7, 9)
    assert not guess.from_history and "a guess" in guess.text()
    known = plan(spec, {"eager": [5.0], "compiled": [10.0, 30.0, 20.0]})
    assert known.seconds_low == pytest.approx(5 + 2 * 3 * 20) and known.from_history
    assert known.seconds_high == pytest.approx(5 + 2 * 4 * 20)
    assert "3 variants (2 compiled): 7–9 measuring processes" in known.text()


def test_plan_counts_the_fourth_process_of_a_variant_that_redraws() -> None:
    """On a GPU, default redraws its autotuned kernels (four processes at least, three draws:
    engine/measure/autotune_draw.min_processes); max-autotune replays (three)."""
    spec = normalise({"model": "mlp", "variants": ["eager", "default", "max-autotune"],
                      "processes": 3, "max_processes": 4, "device": "cuda"})
    guess = plan(spec)
    assert (guess.processes_low, guess.processes_high) == (1 + 4 + 3, 1 + 4 + 4)


def test_cli_refuses_a_grid_past_the_limit_before_storing_anything(db_url: str) -> None:
    p = run_cli("run", "--model", "mlp", "--backend", "aot_eager", "--variants", "eager,default",
                "--option", "dynamic=none,true,false", "--option", "fullgraph=false,true",
                "--grid-limit", "4", db_url=db_url)
    assert p.returncode == 2 and "6 compiled variants, more than the limit of 4" in p.stderr
    assert "Traceback" not in p.stderr
    bad = run_cli("run", "--model", "mlp", "--option", "colour=red", db_url=db_url)
    assert bad.returncode == 2 and "--option expects NAME=v1,v2" in bad.stderr


@pytest.mark.slow  # an end-to-end run (10-30 s here): the slow tier
def test_cli_grid_run_is_one_run_with_a_variant_per_config(db_url: str) -> None:
    p = run_cli("run", "--model", "mlp", "--dim", "batch=4", "--dim", "hidden=16", "--backend",
                "aot_eager", "--variants", "eager,default", "--option", "dynamic=none,true",
                "--no-warm-cache", *FAST, "--json", db_url=db_url)
    assert p.returncode == 0, p.stderr[-2000:]
    assert "grid: 3 variants (2 compiled)" in p.stderr  # said before it started
    run_id = p.stdout.strip().splitlines()[-1]
    shown = json.loads(run_cli("show", run_id, "--json", db_url=db_url).stdout)
    assert [v["variant"] for v in shown["variants"]] == ["eager", "default@dyn=none",
                                                         "default@dyn=1"]
    assert all(v["status"] == "ok" for v in shown["variants"])
    rec = run_cli("recommend", run_id, "--calls", "1000", "--db", db_url)
    assert rec.returncode == 0 and rec.stdout.startswith("Recommend: ")
    # a grid run survives export and import with its names (storage/bundle.py VARIANT_NAME)
    bundle = db_url.removeprefix("sqlite:///") + ".json"
    assert run_cli("export", run_id, "-o", bundle, "--db", db_url).returncode == 0
    other = db_url + ".imported.db"
    imported = run_cli("import", bundle, "--db", other)
    assert imported.returncode == 0, imported.stderr
    again = run_cli("recommend", imported.stdout.split()[0], "--calls", "1000", "--json",
                    "--db", other)
    assert json.loads(again.stdout)["recommend"] == json.loads(run_cli(
        "recommend", run_id, "--calls", "1000", "--json", "--db", db_url).stdout)["recommend"]


@pytest.mark.slow
def test_tiny_inductor_grid_with_inductor_options(db_url: str) -> None:
    """A real inductor compile per config: coordinate-descent tuning and freezing reach it."""
    p = run_cli("run", "--model", "mlp", "--dim", "batch=4", "--dim", "hidden=16",
                "--variants", "eager,default", "--option", "coordinate_descent_tuning=true",
                "--option", "freezing=false,true", "--no-warm-cache", *FAST, "--json",
                db_url=db_url, timeout=600)
    assert p.returncode == 0, p.stderr[-2000:]
    run_id = p.stdout.strip().splitlines()[-1]
    shown = json.loads(run_cli("show", run_id, "--json", db_url=db_url).stdout)
    rows = {v["variant"]: v for v in shown["variants"]}
    assert set(rows) == {"eager", "default@cdt=1,frz=0", "default@cdt=1,frz=1"}
    assert all(r["status"] == "ok" and r["correct"] is not False for r in rows.values())


def test_config_keys_of_runs_without_grid_options_are_unchanged() -> None:
    """Pinned baselines store config keys: options added since must not change them (the
    literals are the keys of the nine config fields the spec had when keys were introduced:
    model, dims, sweep, dtype, device, backend, dynamic, fullgraph, seed)."""
    from contract.config_key import config_key

    assert config_key({"model": "mlp", "dims": {"batch": 32, "hidden": 1024}}) == \
        "7aa4769926c2c772"
    sweep = {"model": "varying_seq", "sweep": {"dim": "seq", "values": [8, 16]}}
    assert config_key(sweep) == "90084e0c542b9758"
    same = {**sweep, "grid_limit": 40, "mix_requests": 50, "concurrency": 4, "startup": True,
            "require_gpu": "NVIDIA H200", "accuracy_multiplier": 5.0}
    assert config_key(same) == "90084e0c542b9758"
    assert config_key({**sweep, "shape_weights": [0.5, 0.5]}) != "90084e0c542b9758"
    assert config_key({**sweep, "step": "train"}) != "90084e0c542b9758"
