"""Imported by the fork server (engine/orchestrate/forked.py) between ``engine.measure.child`` and ``engine.orchestrate.preload``
when the run's model may need a model library (``forked.wants_libraries``): the libraries that
every BERT process would otherwise import again, each only when installed and only if importing
it leaves the compiler unloaded (a preloaded compiler would hide its import from the cold
compile time; ``forked.preloaded_ok`` would then fail loudly, so we check first and skip
instead).  A run of a built-in model that needs none of them (the seed MLP) leaves them out:
``import transformers`` is seconds of the server's start, on the path to the run's first
measuring process (docs/measurements/2026-12-03-time-to-answer.md)."""

from __future__ import annotations

import importlib
import importlib.util
import sys

CANDIDATES = ("transformers",)  # not torchvision: it imports torch._dynamo (torch 2.11)
LOADED: list[str] = []


def _compiler_loaded() -> bool:
    return "torch._dynamo" in sys.modules or "torch._inductor" in sys.modules


for _name in CANDIDATES:
    if _compiler_loaded():
        break
    if importlib.util.find_spec(_name) is None:
        continue
    try:
        importlib.import_module(_name)
    except Exception:  # a broken optional package: the child reports it when it needs it
        continue
    LOADED.append(_name)
