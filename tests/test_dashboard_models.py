"""The Models page (dashboard/views/models.py): catalogue and registries, searchable; a registry
model opens New run with it chosen. Helpers in dashboard/catalogue.py tested without Streamlit."""

from __future__ import annotations

import importlib.util

import pandas as pd
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
    tables = at.table  # static tables: descriptions and dims wrap instead of being cut
    assert len(tables) == 2  # catalogue, registries
    assert "llama\\_decode" in tables[0].value.index.tolist()  # escaped: st.table is Markdown
    assert "hf\\:ARCH" in tables[1].value.index.tolist()


def test_the_glossary_defines_every_term_a_page_links():
    """Every page's "Terms on this page" line links terms of the glossary, and the Models page
    shows each term under its anchor (issue 40, item 6)."""
    import re
    from pathlib import Path

    from dashboard import glossary

    at = app("models")
    anchors = {h.proto.anchor for h in at.subheader}
    assert {glossary.slug(t) for t in glossary.TERMS} <= anchors
    views = Path(__file__).resolve().parents[1] / "dashboard" / "views"
    linked = set()
    for page in views.glob("*.py"):
        for call in re.findall(r"terms_line\(\s*(\[[^\]]*\])", page.read_text()):
            linked |= set(eval(call))  # noqa: S307 - a literal list in our own source
    assert linked and linked <= set(glossary.TERMS), linked - set(glossary.TERMS)
    # every page but Models, which holds the glossary
    assert {p.stem for p in views.glob("*.py") if "terms_line" in p.read_text()} == {
        "new_run", "runs", "compare", "sweep", "review"}
    with pytest.raises(KeyError):
        glossary.terms_line(["not a term"])


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


# --------------------------------------------------------------------------- token generation

def _decode_results() -> list[dict]:
    from test_dashboard_data import variant_result

    base = {"batch": 1, "prompt": 128, "new_tokens": 128, "repeats": 3, "warmup_generations": 3}
    eager = variant_result("eager", 11.0, 11.0, first_cold_s=0.01, first_warm_s=None)
    eager["decode"] = {**base, "ttft_ms": 20.0, "per_token_ms": 11.0, "tokens_per_s": 100.0,
                       "recompiles_per_step": False}
    ro = variant_result("reduce-overhead", 11.0, 2.2, first_cold_s=60.0, first_warm_s=9.0,
                        seed=2)
    ro["decode"] = {**base, "ttft_ms": 9.0, "per_token_ms": 2.2, "tokens_per_s": 430.0,
                    "eager": {"tokens_per_s": 88.0}, "tokens_per_s_speedup": 4.9,
                    "ttft_speedup": 2.2, "compile_s": 75.0, "break_even_tokens": 2300.0,
                    "recompiles_per_step": True, "cudagraph_records": 62,
                    "later_cudagraph_records": 2}
    return [eager, ro]


def test_generation_table_from_stored_runs(db):
    from test_dashboard_app import seed_done
    from test_dashboard_data import spec

    from dashboard import decode_view
    from storage import queries

    run_id = seed_done(db, spec("llama_decode", dims={"batch": 1, "prompt": 128},
                                variants=["eager", "reduce-overhead"]), _decode_results())
    variants = queries.load_runs(db, [run_id])["variants"]
    table = decode_view.generation_table(variants)
    assert list(table.columns) == list(decode_view.HEADERS)  # every column has a plain header
    assert list(table["variant"]) == ["eager", "reduce-overhead"]
    ro = table.iloc[1]
    assert ro["tokens_per_s"] == 430.0 and ro["tokens_per_s_vs_eager_same_process_x"] == 4.9
    # against the run's one eager: eager's own 100 tokens/s and the paired 88, geometric mean
    assert abs(ro["tokens_per_s_vs_run_eager_x"] - 430.0 / (100.0 * 88.0) ** 0.5) < 1e-9
    # one eager per table: on every row, eager's too, the shown speedup is the row's tokens/s
    # over the shown run's eager (eager's own process reads 100 of the run's 93.8)
    assert ((table["run_eager_tokens_per_s"] - (100.0 * 88.0) ** 0.5).abs() < 1e-9).all()
    for _, row in table.iterrows():
        assert abs(row["tokens_per_s_vs_run_eager_x"]
                   - row["tokens_per_s"] / row["run_eager_tokens_per_s"]) < 1e-9
    assert table.iloc[0]["tokens_per_s_vs_run_eager_x"] > 1.06
    assert ro["break_even_tokens"] == "2,300" and pd.isna(table.iloc[0]["break_even_tokens"])
    # CUDA-graph recordings counted apart from compiles; a stored non-count shows blank
    assert ro["graphs_recorded_warming_up"] == 62 and ro["graphs_recorded_once_warm"] == 2
    assert pd.isna(table.iloc[0]["graphs_recorded_warming_up"])
    assert decode_view.generation_table(variants.drop(columns=["decode"])).empty

    at = app("compare", runs=str(run_id))
    no_exceptions(at)
    assert any(h.value == "Token generation" for h in at.header)
    assert "decoding recompiled per step" in texts(at.warning)
    assert "CUDA graphs were recorded during the timed generations" in texts(at.warning)


# --------------------------------------------------------------------------- issue 39, item 8


@pytest.mark.parametrize("ref", ["{here}:main", "/no/such/file.py:main", "os:system",
                                 "{here}", "../../etc/passwd.py:x"])
def test_model_param_never_reaches_the_file_system(db, monkeypatch, ref):
    """``/new?model=/any/path.py:factory`` made the engine resolve that path and answered
    whether it existed. Now every reference gets the same refusal and nothing looks it up."""
    import engine.models.catalogue

    def probed(*_args, **_kwargs):
        raise AssertionError("the dashboard looked a user model reference up")

    monkeypatch.setattr(engine.models.catalogue, "_user_model", probed)
    at = app("new_run", model=ref.format(here=__file__))
    no_exceptions(at)
    warning = texts(at.warning)
    assert "file and module references are for the command line" in warning
    assert "does not exist" not in warning and "cannot be imported" not in warning
    assert at.selectbox(key="model").value != ref


def test_read_only_search_loads_no_registry_library(db, monkeypatch):
    """A viewer's search made the dashboard import transformers (+360 MB, 6.6 s); the registry
    search is for editors, who can queue what it finds."""
    from dashboard import auth, data

    searched: list[str] = []
    monkeypatch.setattr(data, "search_registries", lambda text: searched.append(text) or [])
    data.registry_search.clear()
    monkeypatch.setenv(auth.ROLE_ENV, "readonly")
    at = app("models", q="vit")
    no_exceptions(at)
    assert not searched
    assert "Searching the registries is for editors" in texts(at.caption)
    monkeypatch.delenv(auth.ROLE_ENV)
    no_exceptions(app("models", q="vit"))
    assert searched == ["vit"]
