"""The New run page offers what the connected workers can build (issue 41): a worker registers
its catalogue (built-ins its host can build, its own plugins, its registries) with its
capabilities; the page offers the union of those, validates a model this host lacks by form (the
worker validates it again when it claims the run), and never offers a name a hostile row put
there."""

from __future__ import annotations

import pytest
from test_dashboard_app import app, button, no_exceptions, texts

from dashboard import hardware
from dashboard.catalogue import load_catalogue
from engine.orchestrate.hardware import catalogue_offer
from storage import queries
from storage.workers import Capabilities, live_workers, register_worker

REMOTE = {"name": "plugin:remote_only", "description": "A model only the GPU host has.",
          "source": "plugin", "dtypes": ["float32", "bfloat16"],
          "dims": [{"name": "batch", "default": 4, "min": 1, "max": 64, "help": "",
                    "input_only": True},
                   {"name": "width", "default": 16, "min": 8, "max": 128, "help": "",
                    "input_only": False}]}


def gpu_worker(models, registries=None) -> Capabilities:
    return Capabilities(devices=("cpu", "cuda"), gpu_name="NVIDIA H200", gpu_count=1,
                        torch_version="2.11.0", info={"catalogue": {
                            "models": models, "registries": registries or {}}})


@pytest.fixture
def db(app_db):
    return app_db


def test_a_worker_offers_its_builtins_plugins_and_registries(tmp_path, monkeypatch):
    plugins = tmp_path / "plugins"
    plugins.mkdir()
    (plugins / "tiny.py").write_text('DIMS = {"batch": (4, 1, 64, True)}\n'
                                     "def factory(batch):\n    raise NotImplementedError\n")
    monkeypatch.setenv("COMPILELAB_PLUGIN_DIR", str(plugins))
    offer = catalogue_offer()
    names = [m["name"] for m in offer["models"]]
    assert "mlp" in names and names[-1] == "plugin:tiny"
    tiny = offer["models"][-1]
    assert tiny["dims"] == [{"name": "batch", "default": 4, "min": 1, "max": 64, "help": "",
                             "input_only": True}]
    assert set(offer["registries"]) == {"timm", "torchvision", "hf"}
    assert all(isinstance(v, bool) for v in offer["registries"].values())


def test_the_page_offers_the_union_of_what_workers_registered(db):
    register_worker(db, "gpu7:1", gpu_worker([REMOTE, {"name": "mlp", "dtypes": ["float32"],
                                                       "dims": []}], {"timm": True}))
    register_worker(db, "old:2", Capabilities())  # a worker from before catalogues: no offer
    offer = hardware.offered_models(live_workers(db), load_catalogue())
    assert offer.from_workers and [m.name for m in offer.models] == ["plugin:remote_only", "mlp"]
    assert offer.host_lacks == {"plugin:remote_only"}
    assert offer.registries == ("timm",)
    assert offer.offers_registry("timm:resnet18") and not offer.offers_registry("hf:gpt2")
    assert offer.registry_choice("timm:resnet18").name == "timm:resnet18"
    assert offer.registry_choice("hf:gpt2") is None
    remote = offer.models[0]
    assert [d.name for d in remote.dims] == ["batch", "width"] and remote.source == "plugin"
    assert "2" in offer.note(live_workers(db))
    # no worker registered a catalogue: the host's, and the page says why
    host = hardware.offered_models([{"info": {}}], load_catalogue())
    assert not host.from_workers and "did not say" in host.note([{"info": {}}])


@pytest.mark.parametrize("entry", [
    {"name": "/etc/passwd.py:factory", "dtypes": ["float32"]},
    {"name": "pkg.mod:factory", "dtypes": ["float32"]},
    {"name": "<img src=x onerror=alert(1)>", "dtypes": ["float32"]},
    {"name": "ok", "dtypes": []},  # nothing to run it in
    {"name": 7, "dtypes": ["float32"]},
    "mlp", None])
def test_a_hostile_row_offers_nothing(entry):
    workers = [{"info": {"catalogue": {"models": [entry], "registries": {"evil": True,
                                                                         "hf": "yes"}}}}]
    offer = hardware.offered_models(workers, load_catalogue())
    assert offer.models == [] and offer.registries == ()


def test_new_run_offers_the_workers_models_and_queues_one_this_host_lacks(db):
    register_worker(db, "gpu7:1", gpu_worker([REMOTE, {"name": "mlp", "dtypes": ["float32"],
                                                       "dims": [{"name": "batch",
                                                                 "default": 32, "min": 1,
                                                                 "max": 4096}]}]))
    at = app("new_run")
    no_exceptions(at)
    picker = at.selectbox(key="model")
    assert picker.options == ["plugin:remote_only — A model only the GPU host has. (operator "
                              "plugin)", "mlp — "]
    assert "Models the connected workers can build (2" in texts(at.caption)
    picker.set_value("plugin:remote_only").run()
    assert {n.label for n in at.number_input} >= {"batch", "width"}
    at.number_input(key="dim-plugin:remote_only-batch").set_value(8).run()
    button(at, "Queue run").click().run()
    no_exceptions(at)
    assert not at.error, texts(at.error)
    run = queries.list_runs(db).iloc[0]
    assert run["spec"]["model"] == "plugin:remote_only" and run["spec"]["dims"]["batch"] == 8
    assert run["status"] == "queued"
