"""The one spec validator, as the layers under the engine reach it, and its error.

``SpecError`` is what every entry point shows for bad input (``field`` names what to fix, so a
form can show the message beside it).  The validator itself (``engine/spec.py normalise``) needs
the model catalogue and so lives in the engine; ``storage`` must still check every spec it
imports from a bundle with it, without importing the engine.  So the engine installs its
validator here when ``engine.spec`` is imported, and ``stored_spec`` calls it.  Nothing
installed fails closed: a bundle is never imported unchecked.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any


class SpecError(ValueError):
    """Bad input; ``field`` names what to fix so a form can show the message beside it."""

    def __init__(self, message: str, field: str | None = None) -> None:
        super().__init__(message)
        self.field = field


_STORED: Callable[[Any], dict[str, Any]] | None = None


def install(stored: Callable[[Any], dict[str, Any]]) -> None:
    """The validator for specs stored elsewhere (``normalise(raw, stored=True)``)."""
    global _STORED
    _STORED = stored


def stored_spec(raw: Any) -> dict[str, Any]:
    """``raw`` (a spec from a bundle or a row) validated, or ``SpecError``."""
    if _STORED is None:
        raise SpecError("no spec validator is installed (import engine.spec first): a spec "
                        "from outside is never taken unchecked")
    return _STORED(raw)
