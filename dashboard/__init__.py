"""Compile Lab dashboard: Streamlit pages over storage/, Plotly figures from pure functions.

Layout:
- ``charts*.py``  every Plotly figure, a pure function of storage's DataFrames (no Streamlit);
                  ``charts.py`` lists the chart modules, ``charts_base.py`` is their shared look.
- ``tables.py``   derived tables (variants CSV, graph breaks, recompiles, failures).
- ``verdict.py``  plain-language "what to ship" text from a run's variants.
- ``report.py``   self-contained HTML report of a comparison.
- ``spec.py``     the new-run form's validation: raw inputs -> RunSpec dict or field errors.
- ``catalogue.py`` adapter over ``engine.models.catalogue`` (the only place that knows its shape).
- ``data.py``     the only module that calls storage/ (cached for Streamlit).
- ``widgets.py`` Streamlit pieces shared by pages (progress view, empty states, sharing).
- ``run_actions.py`` controls that change or carry runs (notes, bundles, delete).
- ``safe.py``     user text made harmless: Markdown escaping, Plotly text, CSV formula cells.
- ``auth.py``     shared mode: password page, editor and read-only roles.
- ``downsample.py`` large runs thinned for drawing (quantiles per box, stride per line).
- ``app.py`` + ``views/``  Streamlit navigation and thin pages (why not pages/: see app.py).
"""
