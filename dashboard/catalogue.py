"""Adapter over ``engine.models.catalogue``: the one place that knows the catalogue's shape.

The engine exposes ``engine.models.catalogue.list_models() -> list[ModelInfo]`` where ``ModelInfo`` has
``name, description, dims: list[Dim(name, default, min, max, help)], dtypes: list[str]``.
``to_model_choice`` accepts objects (dataclasses, namedtuples) or plain dicts and tolerates
missing optional fields, so a change on the engine side is fixed here and nowhere else.
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass, field
from typing import Any

DEFAULT_DTYPES = ["float32", "bfloat16", "float16"]


@dataclass(frozen=True)
class DimChoice:
    name: str
    default: int | float
    min: int | float | None = None
    max: int | float | None = None
    help: str = ""
    input_only: bool = True  # changes only the inputs, not the module: can be swept

    @property
    def is_int(self) -> bool:
        return isinstance(self.default, int) and not isinstance(self.default, bool)

    def range_text(self) -> str:
        lo = "−∞" if self.min is None else f"{self.min:g}"
        hi = "∞" if self.max is None else f"{self.max:g}"
        return f"{lo}…{hi}"


@dataclass(frozen=True)
class ModelChoice:
    name: str
    description: str = ""
    dims: tuple[DimChoice, ...] = ()
    dtypes: tuple[str, ...] = tuple(DEFAULT_DTYPES)
    source: str = "catalogue"  # "catalogue" or "plugin" (operator's plugin folder)
    extra: dict = field(default_factory=dict, compare=False, hash=False)

    def dim(self, name: str) -> DimChoice | None:
        return next((d for d in self.dims if d.name == name), None)

    @property
    def sweepable(self) -> tuple[DimChoice, ...]:
        """Dims a sweep may vary: input-only ones (one compiled module fed new shapes)."""
        return tuple(d for d in self.dims if d.input_only)


def _get(obj: Any, name: str, default: Any = None) -> Any:
    if isinstance(obj, dict):
        return obj.get(name, default)
    return getattr(obj, name, default)


def _number(v: Any) -> int | float | None:
    if v is None or isinstance(v, bool):
        return None
    if isinstance(v, int):
        return v
    try:
        f = float(v)
    except (TypeError, ValueError):
        return None
    return int(f) if f.is_integer() and not isinstance(v, float) else f


def to_dim_choice(d: Any) -> DimChoice:
    default = _number(_get(d, "default"))
    return DimChoice(
        name=str(_get(d, "name")),
        default=default if default is not None else 1,
        min=_number(_get(d, "min", _get(d, "minimum"))),
        max=_number(_get(d, "max", _get(d, "maximum"))),
        help=str(_get(d, "help", "") or ""),
        # Engines without the flag allow any dim to be swept.
        input_only=bool(_get(d, "input_only", True)),
    )


def to_model_choice(info: Any) -> ModelChoice:
    name = str(_get(info, "name"))
    dims = _get(info, "dims", None) or []
    if isinstance(dims, dict):  # {"batch": Dim(...)} is accepted too
        dims = [d if _get(d, "name") else {**_as_dict(d), "name": k} for k, d in dims.items()]
    dtypes = list(_get(info, "dtypes", None) or DEFAULT_DTYPES)
    source = _get(info, "source", None) or ("plugin" if name.startswith("plugin:") else
                                            "catalogue")
    description = str(_get(info, "description", "") or "").strip()
    return ModelChoice(
        name=name,
        description=description.splitlines()[0] if description else "",
        dims=tuple(to_dim_choice(d) for d in dims),
        dtypes=tuple(str(t) for t in dtypes),
        source=str(source),
    )


def _as_dict(d: Any) -> dict:
    if isinstance(d, dict):
        return d
    keys = ("name", "default", "min", "max", "help", "input_only")
    return {k: getattr(d, k) for k in keys if hasattr(d, k)}


def load_catalogue() -> list[ModelChoice]:
    """Import ``engine.models.catalogue`` and adapt its models (raises if the engine is unavailable).

    ``engine.models.catalogue`` may import torch; callers cache the result (st.cache_resource).
    """
    module = importlib.import_module("engine.models.catalogue")
    models = module.list_models()
    return [to_model_choice(m) for m in models]


# --------------------------------------------------------------------------- catalogue page
# Pure helpers for dashboard/views/models.py (testable without Streamlit), and the engine calls
# behind its registry section.


def dims_text(dims: tuple[DimChoice, ...]) -> str:
    """``batch=8 [1…4096], layers=0 [0…512]``: one line for a table cell."""
    return ", ".join(f"{d.name}={d.default:g} [{d.range_text()}]" for d in dims) or "(none)"


def filter_models(models: list[ModelChoice], text: str) -> list[ModelChoice]:
    """Models whose name or description contains ``text`` (case-insensitive; every word must
    match, so "resnet small" finds resnet_small)."""
    words = text.lower().split()
    return [m for m in models
            if all(w in f"{m.name} {m.description}".lower() for w in words)]


def catalogue_rows(models: list[ModelChoice]) -> list[dict[str, str]]:
    return [{"model": m.name, "source": m.source, "description": m.description,
             "dims": dims_text(m.dims), "dtypes": ", ".join(m.dtypes)} for m in models]


def load_registries() -> list[dict[str, Any]]:
    """The registries (timm:NAME, torchvision:NAME, hf:ARCH) as table rows, with whether each
    library is installed here and what to install when not. Imports no library."""
    module = importlib.import_module("engine.models.registries")
    return [{"registry": f"{r['prefix']}:{r['arg']}",
             "installed": "yes" if r["available"] else f"no: pip install {r['package']}",
             "what": r["what"], "example": r["example"],
             "dims": dims_text(tuple(to_dim_choice(d) for d in r["dims"]))}
            for r in module.describe()]


def search_registries(text: str, limit: int = 100) -> list[str]:
    """Registry model names matching ``text`` (imports the registries' libraries and torch:
    callers cache it)."""
    return list(importlib.import_module("engine.models.registries").search(text, limit))


class NotFromTheBrowser(ValueError):
    """A model name the dashboard does not look up: file and module references."""


def load_model(name: str) -> ModelChoice:
    """One registry model by name (``engine.models.catalogue.get_model``; its ``CatalogueError`` says
    what is wrong, e.g. the package to install). The name comes from the URL (``?model=``):
    anything but a registry name is refused before the engine sees it, because the engine
    resolves ``/path/file.py:factory`` on disk (an editor could learn which files exist) and
    ``pkg.mod:factory`` by finding the module; those are for the CLI and the worker's operator."""
    if not importlib.import_module("engine.models.registries").is_registry_name(name):
        raise NotFromTheBrowser(
            "not a catalogue, plugin or registry model (timm:NAME, torchvision:NAME, hf:ARCH); "
            "file and module references are for the command line (python -m engine run)")
    return to_model_choice(importlib.import_module("engine.models.catalogue").get_model(name))
