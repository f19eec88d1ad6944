"""The one rule for text a user attaches to runs (tags, notes), and for text shown back to users.

The CLI, storage (``set_tags``, ``set_note``, ``enqueue_run``), bundle import and the dashboard
all call these functions, so a tag accepted in one place is never refused in another. The rule
refuses only what cannot be stored or shown faithfully: control characters in tags (a tag is one
line), NUL anywhere (PostgreSQL text cannot hold it), lone surrogates (not encodable as UTF-8:
PostgreSQL refuses them and printing them raises), and text over the length limits. Characters
such as ``<``, ``=``, ``*`` or ``[`` are allowed: whoever shows the text escapes it (the dashboard
renders user text as text, CSV exports neutralise formulas).
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterable

MAX_TAG_LENGTH = 100
MAX_TAGS = 50
MAX_NOTE_CHARS = 20_000

_SURROGATE = re.compile("[\ud800-\udfff]")
_UNPRINTABLE = re.compile("[\x00-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")


def _escape_char(match: re.Match[str]) -> str:
    code = ord(match.group())
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


class TextError(ValueError):
    """User text that breaks the rule; the message names the problem and is meant for the user."""


def _preview(text: str, n: int = 20) -> str:
    """A short, printable, one-line excerpt of ``text`` for error messages."""
    head = text[:n].encode("utf-8", "backslashreplace").decode("utf-8")
    return repr(head) + ("…" if len(text) > n else "")


def _check_common(text: str, what: str) -> None:
    if "\x00" in text:
        raise TextError(f"{what} {_preview(text)} contains a NUL character")
    if _SURROGATE.search(text):
        raise TextError(f"{what} {_preview(text)} contains a lone surrogate (not valid Unicode)")


def check_tag(tag: object) -> str:
    """One tag, stripped; TextError (or TypeError for a non-string) if it breaks the rule.

    A tag is 1..100 characters on one line: no control or format characters (newline, tab,
    escape, bidi overrides), so that it reads the same in a table cell, a filter and a CSV."""
    if not isinstance(tag, str):
        raise TypeError(f"tag must be a string, got {type(tag).__name__}")
    tag = tag.strip()
    _check_common(tag, "tag")
    if len(tag) > MAX_TAG_LENGTH:
        raise TextError(
            f"tag {_preview(tag)} is longer than {MAX_TAG_LENGTH} characters ({len(tag)})"
        )
    bad = next((c for c in tag if unicodedata.category(c) in ("Cc", "Cf")), None)
    if bad is not None:
        raise TextError(
            f"tag {_preview(tag)} contains the control character U+{ord(bad):04X}; "
            "a tag is one line of visible text"
        )
    return tag


def normalize_tags(tags: Iterable[str]) -> list[str]:
    """Tags stripped, without empties and duplicates, in the given order; TextError if invalid."""
    if isinstance(tags, str):
        raise TypeError("tags must be a list of strings, not one string")
    result: list[str] = []
    for raw in tags:
        tag = check_tag(raw)
        if tag and tag not in result:
            result.append(tag)
    if len(result) > MAX_TAGS:
        raise TextError(f"{len(result)} tags; a run takes at most {MAX_TAGS}")
    return result


def check_note(note: object) -> str:
    """A note as given (newlines and tabs allowed); TextError if over the limit or unstorable."""
    if not isinstance(note, str):
        raise TypeError(f"note must be a string, got {type(note).__name__}")
    if len(note) > MAX_NOTE_CHARS:
        raise TextError(f"note is {len(note)} characters long; the limit is {MAX_NOTE_CHARS}")
    _check_common(note, "note")
    return note


def one_line(text: object, limit: int = 1000) -> str:
    """``text`` as one printable line of at most ``limit`` characters, for messages that end up
    on a terminal, in a log or in ``runs.error`` (lone surrogates and NUL escaped, newlines
    folded), whatever a hostile spec or an exception put in it."""
    s = str(text).encode("utf-8", "backslashreplace").decode("utf-8").replace("\x00", "\\x00")
    # Control characters left after folding whitespace (ESC, BEL, DEL, C1) and bidi overrides
    # are written as escapes: raw, ``\x1b]...`` retitles or rewrites a terminal and U+202E
    # reverses what follows; stored text (variant names, notes) reaches stderr through here.
    s = _UNPRINTABLE.sub(_escape_char, " ".join(s.split()))
    return s if len(s) <= limit else s[: limit - 1] + "…"


# Streamlit's Markdown (and GitHub's) turns ":skull:" into an emoji, ":material/verified:" into an
# icon and ":streamlit:" into a logo by matching the text *after* Markdown escapes are resolved,
# so a backslash cannot stop them. A WORD JOINER (U+2060: invisible, no line break) after the
# colon that opens such a pattern does; plain colons ("max-autotune: oom", "timm:vit_b16") stay.
WORD_JOINER = "\u2060"
_SHORTCODE = re.compile(r":(?=[\w+/-]+:)")


def defuse_shortcodes(text: str) -> str:
    """``text`` with every ``:name:`` / ``:material/name:`` pattern broken by a WORD JOINER."""
    return _SHORTCODE.sub(":" + WORD_JOINER, text)


def terminal_text(text: object) -> str:
    """``text`` (many lines) safe to print on a terminal: control characters other than line
    ends and tabs, and bidi overrides, written as escapes as in ``one_line``. Stored text
    (a bundle's ``environment.gpu``, an error, a note) may hold ``ESC ] 52`` (set the
    clipboard) or ``ESC [ 2J``; ``engine show`` prints it through here."""
    return _UNPRINTABLE.sub(lambda m: m.group() if m.group() in "\n\t" else _escape_char(m),
                            str(text))
