"""``python -m engine models [--search TEXT]``: the catalogue, the registries and a name search.

Without ``--search``: every catalogue model with its dims, ranges and dtypes, then the registries
(``timm:NAME``, ``torchvision:NAME``, ``hf:ARCH``) with whether their library is installed on
this machine and what to install when it is not. With ``--search``: catalogue models whose name
or description matches, and registry names that do (``--search vit``, ``--search timm:vit_b*``,
``--search hf:llama``); this imports the registries' libraries, so it takes a few seconds.
"""

from __future__ import annotations

import argparse

from engine.models import registries
from engine.models.catalogue import ModelInfo, list_models


def add_parser(sub: argparse._SubParsersAction) -> argparse.ArgumentParser:
    p = sub.add_parser("models", help="list the model catalogue and registries with dims, "
                                      "ranges and dtypes; --search TEXT finds names")
    p.add_argument("--search", default=None, metavar="TEXT",
                   help="a word or glob (vit, resnet*, timm:vit_b*, hf:llama)")
    p.add_argument("--limit", type=int, default=50, help="registry names shown (default 50)")
    return p


def _dims(dims: tuple) -> str:
    return ", ".join(f"{d.name}={d.default} [{d.min}..{d.max}]" for d in dims) or "(none)"


def _line(m: ModelInfo) -> str:
    return (f"{m.name:18s} {m.description}\n{'':18s} dims: {_dims(m.dims)}; "
            f"dtypes: {', '.join(m.dtypes)}")


def matches(m: ModelInfo, text: str) -> bool:
    t = text.lower()
    return t in m.name.lower() or t in m.description.lower()


def run(args: argparse.Namespace) -> int:
    text = (args.search or "").strip()
    # "timm:vit*" searches that registry only; a bare word, the catalogue and every registry
    shown = [m for m in list_models()
             if not text or (not registries.is_registry_name(text) and matches(m, text))]
    for m in shown:
        print(_line(m))
    if not text:
        print("\nregistries (any model of the library by name, random weights, no download):")
        for r in registries.describe():
            state = ("installed" if r["available"]
                     else f"NOT installed here: pip install {r['package']}")
            print(f"{r['prefix'] + ':' + r['arg']:18s} {r['what']} [{state}]\n{'':18s} e.g. "
                  f"{r['example']}; dims: {_dims(r['dims'])}")
        print("\nfind registry names: python -m engine models --search vit  (or timm:vit_b*, "
              "hf:llama)")
        return 0
    found = registries.search(text, max(args.limit, 1))
    for name in found:
        print(name)
    missing = [r["prefix"] for r in registries.describe() if not r["available"]]
    if missing:
        print(f"(not searched, library not installed: {', '.join(missing)})")
    if not shown and not found:
        print(f"no model matches {text!r}")
        return 1
    return 0
