"""What the preloaded process servers import before they fork measuring children.

``engine/orchestrate/forked.py`` runs the plain server (torch and the model libraries, no
compiler) and ``engine/orchestrate/compiler_server.py`` the one that also holds the compiler;
both read their preload lists, and whether fork servers are used at all, from here.
"""

from __future__ import annotations

import os
import sys


def enabled() -> bool:
    return (sys.platform.startswith("linux")
            and os.environ.get("COMPILELAB_FORKSERVER", "1").strip() not in ("0", "false", "no"))


def preloads(libraries: bool = True) -> list[str]:
    """The server's preloads: the child (and so torch), the model libraries if asked, and last
    the module that makes the server skip its teardown."""
    return ["engine.measure.child", *(["engine.orchestrate.preload_libs"] if libraries else []), "engine.orchestrate.preload"]


def wants_libraries(model: str) -> bool:
    """May a run of ``model`` import a preloadable model library?  No only for a built-in
    catalogue model that requires no optional package (the seed MLP); a registry, plugin or
    user model, or a name the catalogue does not know, may."""
    from engine.models.catalogue import BUILTIN

    return not any(m.name == model and not m.requires for m in BUILTIN)


def compiler_preloads(libraries: bool = True) -> list[str]:
    """The plain server's preloads with the compiler's before the last (exit-hook) module."""
    base = preloads(libraries)
    return [*base[:-1], "engine.orchestrate.preload_compiler", base[-1]]
