"""User text in Streamlit Markdown: Streamlit's colon forms (directives, icons, emoji, logo).

Streamlit's frontend (StreamlitMarkdown, 1.67) turns ``:red[x]``-style directives into styled
spans while parsing the source, then matches ``:material_NAME:`` (after rewriting the source's
``:material/`` to ``:material_``), ``:streamlit:`` and remark-emoji's ``:NAME:`` in the text
*after* Markdown escapes are resolved. ``rendered_text`` below does what the parser does to
escapes, and the patterns are the frontend's own regular expressions: a test fails if any of
them would still fire on what ``safe.md`` / ``engine.analysis.verdict.md_escape`` produce. The browser
test of the shared deployment checks the same strings in a real page.
"""

from __future__ import annotations

import re

import pytest

from contract.text import WORD_JOINER, defuse_shortcodes
from dashboard import safe
from engine.analysis.verdict import md_escape

ATTACKS = [
    ":material/verified:", "done :material/check_circle: all good", ":material_verified:",
    ":skull:", ":+1:", ":-1:", ":streamlit:", ":red[fake]", ":rainbow[x]",
    ":blue-background[x]", ":small[x]", ":help[x]", "x:red", "a:green-badge[ok]",
    "::skull::", ":a:b:c:",
]
# The frontend's patterns (StreamlitMarkdown.*.js and remark-emoji.*.js), on resolved text.
_ICON = re.compile(r":material_(\w+):", re.ASCII)
_LOGO = re.compile(r":streamlit:")
_EMOJI = re.compile(r":\+1:|:-1:|:[\w-]+:", re.ASCII)
_DIRECTIVE_SOURCE = re.compile(r"(?<!\\):[A-Za-z]")  # a text directive opens in the source
_ESCAPE = re.compile(r"\\([!-/:-@\[-`{-~])")  # CommonMark: backslash + ASCII punctuation


def rendered_text(source: str) -> str:
    """The text Streamlit's text-level plugins see: ``:material/`` rewritten, escapes resolved."""
    return _ESCAPE.sub(r"\1", source.replace(":material/", ":material_"))


@pytest.mark.parametrize("escape", [safe.md, md_escape], ids=["safe.md", "verdict.md_escape"])
@pytest.mark.parametrize("attack", ATTACKS)
def test_no_colon_form_survives(escape, attack):
    source = escape(attack)
    assert not _DIRECTIVE_SOURCE.search(source), source
    text = rendered_text(source)
    for pattern in (_ICON, _LOGO, _EMOJI):
        assert not pattern.search(text), (pattern.pattern, source)
    # ... and the reader still sees what was written (the joiner is invisible)
    assert text.replace(WORD_JOINER, "") == attack


@pytest.mark.parametrize("plain", ["max-autotune: oom", "timm:vit_base_patch16_224",
                                   "10:30", "hf:gpt2", "see http://example.org/x"])
def test_plain_colons_read_the_same(plain):
    assert WORD_JOINER not in defuse_shortcodes(plain)
    assert rendered_text(safe.md(plain)) == plain
