"""What the catalogue and the registries say of a model: its dims, dtypes and factory.

The types both ``engine.models.catalogue`` (built-in and plugin models) and
``engine.models.registries`` (library models by name) describe models with, so neither imports
the other for them.  Pure Python, no torch.
"""

from __future__ import annotations

import importlib.util
from dataclasses import dataclass, field
from typing import Any

ALL_DTYPES = ("float32", "float16", "bfloat16")


class CatalogueError(ValueError):
    """A bad model name, dim or plugin: the message is meant for the user, as it is."""


@dataclass(frozen=True)
class Dim:
    """A named integer dimension of a model, e.g. ``batch`` or ``seq``.

    ``input_only`` dims change only the example inputs, not the module, so a sweep over them can
    feed one compiled module new shapes (as a serving process would) and show its recompiles.
    """

    name: str
    default: int
    min: int = 1
    max: int = 1 << 20
    help: str = ""
    input_only: bool = False


@dataclass(frozen=True)
class ModelInfo:
    """One catalogue entry. ``factory`` is ``module:function`` or ``/path/file.py:function``."""

    name: str
    description: str
    factory: str
    dims: tuple[Dim, ...] = ()
    dtypes: tuple[str, ...] = ALL_DTYPES
    requires: tuple[str, ...] = ()  # optional packages (transformers, torchvision)
    source: str = "builtin"  # builtin | plugin | user
    tags: tuple[str, ...] = field(default_factory=tuple)

    def dim(self, name: str) -> Dim:
        for d in self.dims:
            if d.name == name:
                return d
        known = ", ".join(d.name for d in self.dims) or "none"
        raise CatalogueError(f"model {self.name!r} has no dim {name!r} (its dims: {known})")

    def available(self) -> bool:
        return all(importlib.util.find_spec(p) is not None for p in self.requires)

    def resolve_dims(self, given: dict[str, int]) -> dict[str, int]:
        """Fill defaults and check every value against its declared range."""
        out = {d.name: d.default for d in self.dims}
        for name, value in given.items():
            # A user model that declares no DIMS takes whatever named dims its factory accepts.
            d = Dim(name, 1) if (self.source == "user" and not self.dims) else self.dim(name)
            check_dim_value(d, value)
            out[name] = int(value)
        return out


def check_dim_value(d: Dim, value: Any) -> None:
    if isinstance(value, bool) or not isinstance(value, int):
        raise CatalogueError(f"dim {d.name} must be a whole number, got {value!r}")
    if value <= 0 and not (value == 0 and d.min == 0):  # min 0: "0 = the model's own value"
        raise CatalogueError(f"dim {d.name} must be > 0, got {value}")
    if not d.min <= value <= d.max:
        raise CatalogueError(f"dim {d.name}={value} is out of range [{d.min}, {d.max}]")
