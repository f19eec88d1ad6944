"""The New run page's grid controls: several values per compile option (engine/grid.py), and
the grid-size limit.  Thin: expansion and validation are ``dashboard.spec.build_spec``'s."""

from __future__ import annotations

import streamlit as st

from dashboard.spec import number_widget

# option -> (label, values offered, help)
GRID_FIELDS = {
    "dynamic": ("dynamic", ["none", "true", "false"],
                "none: static first, dynamic after a shape change; true: dynamic from the "
                "start; false: recompile per shape"),
    "fullgraph": ("fullgraph", ["false", "true"], "true: a graph break is an error"),
    "coordinate_descent_tuning": ("coordinate descent tuning", ["false", "true"],
                                  "inductor: tune each kernel's launch config (longer compile)"),
    "freezing": ("freezing (inference)", ["false", "true"],
                 "inductor: fold weights into constants, inference only"),
}


def grid_form() -> tuple[dict[str, list[str]], int]:
    """({option: values picked}, grid limit); empty picks mean no grid over that option."""
    with st.expander("Grid: several values per option"):
        st.caption("Each combination of the values picked here, for each compile variant, is "
                   "measured as its own variant of this one run (its name says its settings, "
                   "e.g. default@dyn=1,fg=0). Options left empty use the setting above.")
        cols = st.columns(len(GRID_FIELDS))
        picked = {}
        for col, (name, (label, values, help_text)) in zip(cols, GRID_FIELDS.items(),
                                                           strict=True):
            picked[name] = col.multiselect(label, values, key=f"grid-{name}", help=help_text)
        limit = st.number_input(
            "Grid limit (compiled variants)", **number_widget("grid_limit"), step=1,
            key="grid-limit", help="A bigger grid is refused until you raise this: each "
            "variant costs at least two processes.")
    return {k: v for k, v in picked.items() if v}, int(limit)
