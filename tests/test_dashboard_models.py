"""The Models page (dashboard/views/models.py): catalogue and registries, searchable; a registry
model opens New run with it chosen. Helpers in dashboard/catalogue.py tested without Streamlit."""

from __future__ import annotations

import importlib.util

import pytest
from test_dashboard_app import app, no_exceptions, texts

from dashboard import catalogue


@pytest.fixture
def db(app_db):
    return app_db  # tests/conftest.py


def test_filter_and_rows_are_plain_text():
    models = catalogue.load_catalogue()
    assert [m.name for m in catalogue.filter_models(models, "RESNET small")] == ["resnet_small"]
    assert "llama_decode" in [m.name for m in catalogue.filter_models(models, "kv cache")]
    assert catalogue.filter_models(models, "no such model anywhere") == []
    row = catalogue.catalogue_rows([m for m in models if m.name == "mlp"])[0]
    assert row["dims"] == "batch=32 [1…65536], hidden=1024 [8…16384]"
    regs = {r["registry"]: r for r in catalogue.load_registries()}
    assert set(regs) == {"timm:NAME", "torchvision:NAME", "hf:ARCH"}
    assert "layers=0 [0…512]" in regs["hf:ARCH"]["dims"]


def test_models_page_lists_catalogue_and_registries(db):
    at = app("models")
    no_exceptions(at)
    assert at.title[0].value == "Models"
    frames = at.dataframe
    assert len(frames) == 2  # catalogue, registries
    assert "llama_decode" in frames[0].value["model"].tolist()
    assert "hf:ARCH" in frames[1].value["registry"].tolist()


def test_models_page_search_finds_registry_names_and_links_new_run(db):
    if importlib.util.find_spec("transformers") is None:
        pytest.skip("transformers is not installed (pip install -r requirements-dev.txt)")
    at = app("models", q="hf:gpt")
    no_exceptions(at)
    assert "hf:gpt2" in at.selectbox(key="models-pick").options
    assert "No catalogue model matches." in texts(at.caption)  # a prefix: registries only
    new = app("new_run", model="hf:gpt2")
    no_exceptions(new)
    assert new.selectbox(key="model").value == "hf:gpt2"
    labels = {n.label for n in new.number_input}
    assert {"batch", "seq", "layers", "hidden", "heads"} <= labels, labels


def test_new_run_with_an_unknown_registry_model_says_why(db):
    at = app("new_run", model="hf:bad name")
    no_exceptions(at)
    assert "model names are letters" in texts(at.warning)
