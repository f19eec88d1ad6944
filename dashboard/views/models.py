"""Models: the catalogue and the registries (timm, torchvision, Hugging Face), searchable; a
model found here opens New run with it chosen. Logic in dashboard/catalogue.py."""

from __future__ import annotations

import pandas as pd
import streamlit as st

from dashboard import auth, catalogue, data, glossary, safe, widgets


def wrapped_table(rows: list[dict], index: str) -> None:
    """A static table whose cells wrap (descriptions and dims were cut off in a data grid);
    st.table reads Markdown, so every cell is escaped."""
    frame = pd.DataFrame(rows).map(lambda v: safe.md(v, 2000))
    frame.columns = [safe.md(c, 100) for c in frame.columns]
    st.table(frame.set_index(safe.md(index, 100)))

st.title("Models")
st.caption("What this machine can measure: the built-in catalogue, the operator's plugins, and "
           "any model of an installed registry by name (random weights, no download).")

text = st.text_input("Search", value=st.query_params.get("q", ""), key="models-q",
                     max_chars=100, placeholder="e.g. vit, resnet, llama, timm:vit_b*, hf:gpt",
                     help="Names and descriptions of the catalogue; names of the registries. "
                          "A prefix (timm:, torchvision:, hf:) searches that registry only.")
text = text.strip()
widgets.set_param("q", text)

try:
    models = data.catalogue()
except Exception as exc:  # noqa: BLE001 - the engine's own message is the most useful
    st.error(f"Cannot load the model catalogue (engine.models.catalogue): {safe.md(exc, 500)}")
    st.stop()

st.subheader("Catalogue")
shown = catalogue.filter_models(models, text) if ":" not in text else []
if shown:
    wrapped_table(catalogue.catalogue_rows(shown), "model")
else:
    st.caption("No catalogue model matches.")

st.subheader("Registries")
wrapped_table(data.registries(), "registry")
if text and not auth.can_write():
    # A search imports timm, torchvision and transformers (hundreds of MB, seconds) and its only
    # use is a New run, which read-only sessions cannot queue: a viewer must not make the shared
    # server pay for that.
    st.caption("Searching the registries is for editors (it loads their libraries to queue a "
               "run); the catalogue above is searched.")
elif text:
    try:
        found = data.registry_search(text)
    except Exception as exc:  # noqa: BLE001 - a library that fails to import says why
        st.error(f"Registry search failed: {safe.md(exc, 500)}")
        found = []
    st.caption(f"{len(found)} registry model(s) match" + (" (first 100)" if len(found) >= 100
                                                          else "") + ".")
    if found:
        picked = st.selectbox("Registry model", found, key="models-pick")
        st.page_link(widgets.PAGE_NEW, label=f"New run with {picked}",
                     icon=":material/play_arrow:", query_params={"model": picked})


st.header("Glossary", anchor="glossary")
st.caption("The words the pages use. The method behind each figure: docs/METHOD.md.")
for term, meaning in glossary.TERMS.items():
    st.subheader(term, anchor=glossary.slug(term))
    st.text(meaning)
