r"""User text made harmless where it is shown or exported (pure, no Streamlit).

Model names, tags, notes, error messages, stderr tails and graph-break reasons come from whoever
can write the database or hand over a bundle. Three places would otherwise interpret them:

- Streamlit renders Markdown in ``st.markdown``, ``st.caption``, ``st.error``, expander labels
  and progress texts: ``![x](http://evil/)`` in a model name made every viewer's browser fetch
  that URL. ``md`` backslash-escapes the characters that make Markdown (links, images,
  emphasis, code, HTML, tables, LaTeX) and a leading list/heading marker; CommonMark allows that
  escape for any ASCII punctuation. Streamlit adds colon forms of its own: directives
  (``:red[…]``, ``:rainbow[…]``, ``:blue-background[…]``, ``:small[…]``, ``:help[…]``, and
  ``:red`` alone, which swallowed its own text) are parsed from the source, so a colon before a
  letter is escaped (``\:``); shortcodes (``:skull:``, ``:material/verified:``, ``:streamlit:``)
  are matched in the text after escapes are resolved, so ``contract.text.defuse_shortcodes``
  breaks them with an invisible WORD JOINER. Either way a fake status icon cannot appear.
- Spreadsheets run a cell that starts with ``= + - @`` (or tab / CR, which some of them strip
  first) as a formula: ``=cmd|' /C calc'!A0``. ``neutralise`` prefixes such a cell with ``'``
  (OWASP's advice); numbers are left alone, so a negative *number* stays a number.
- Plotly renders a small HTML subset (``<a href>``, ``<b>``, ``<br>``) in titles, labels and
  hover texts: ``plotly_text`` escapes ``< > &``.

Streamlit's dataframe grid shows cells as plain text, but its toolbar's CSV download writes them
raw, so every frame handed to ``st.dataframe`` goes through ``frame`` too.
"""

from __future__ import annotations

import csv as _csv
import html
import re
from typing import Any

import pandas as pd

from contract.text import defuse_shortcodes

FORMULA_PREFIXES = ("=", "+", "-", "@", "\t", "\r")
_MD_SPECIAL = "\\`*_{}[]()#+!|<>~$"
_MD_TABLE = str.maketrans({**{c: "\\" + c for c in _MD_SPECIAL}, "\n": " ", "\r": " "})
_MD_LEADING = re.compile(r"^(\s*(?:\d+)?)([-=.)])")  # "- x", "1. x", "=== " at the start
_MD_AUTOLINK = re.compile(r"(?i)(://|www\.)")  # GFM turns bare URLs into links
_MD_DIRECTIVE = re.compile(r":(?=[A-Za-z])")  # ":red[x]", ":small" (a directive name follows)


def md(value: Any, limit: int | None = None) -> str:
    """``value`` as literal text inside Markdown, on one line, cut to ``limit`` characters."""
    text = "" if value is None else str(value)
    if limit is not None and len(text) > limit:
        text = text[: limit - 1] + "…"
    text = _MD_AUTOLINK.sub(lambda m: m.group(1).replace("/", "\\/").replace(".", "\\."),
                            defuse_shortcodes(text).translate(_MD_TABLE))
    text = _MD_DIRECTIVE.sub(r"\\:", text)
    return _MD_LEADING.sub(lambda m: m.group(1) + "\\" + m.group(2), text, count=1)


def plotly_text(value: Any) -> str:
    """``value`` as literal text in a Plotly title, label or hover text."""
    return html.escape("" if value is None else str(value), quote=False)


def neutralise(value: Any) -> Any:
    """A spreadsheet cell that cannot run as a formula (non-text values unchanged)."""
    if isinstance(value, str) and value.startswith(FORMULA_PREFIXES):
        return "'" + value
    return value


def frame(df: pd.DataFrame) -> pd.DataFrame:
    """A copy of ``df`` with every text cell neutralised (column names too): what the page shows
    and what any CSV of it holds."""
    if df is None:
        return pd.DataFrame()
    out = df.copy()
    for column in out.columns:
        if out[column].dtype == object or pd.api.types.is_string_dtype(out[column]):
            out[column] = out[column].map(neutralise)
    out.columns = [neutralise(c) if isinstance(c, str) else c for c in out.columns]
    return out


def csv(df: pd.DataFrame) -> str:
    """CSV text of ``df`` with formula cells neutralised (every CSV download uses this).

    Text cells are quoted: pandas quotes only cells holding a comma, a quote or ``\n``, so a
    bare ``\r`` inside a cell ended the row for every spreadsheet that reads CR as a line end."""
    return frame(df).to_csv(index=False, quoting=_csv.QUOTE_NONNUMERIC)


def plotly_names(frames: dict[str, pd.DataFrame], column: str = "variant"
                 ) -> dict[str, pd.DataFrame]:
    """``frames`` with ``column`` escaped for Plotly (legend, axis labels), where any value
    needs it. Variant names are identifiers when the engine or a bundle wrote them, but anyone
    who can write the database can write any name; the frames are copied only when a name
    changes (the usual case costs one ``unique`` per frame). Markdown is escaped where it is
    written (``md``, the verdict's own ``md_escape``), not here: escaped twice, a training
    variant read "default\\+opt" in the verdict, the tables and the recommendation."""
    out = dict(frames)
    for key, df in frames.items():
        if not isinstance(df, pd.DataFrame) or column not in df.columns or df.empty:
            continue
        names = [v for v in pd.unique(df[column]) if isinstance(v, str)]
        changed = {v: plotly_text(v) for v in names if plotly_text(v) != v}
        if changed:
            out[key] = df.assign(**{column: df[column].replace(changed)})
    return out
