"""Model registries by name: ``timm:NAME``, ``torchvision:NAME`` and ``hf:ARCH``.

The models people ship, built from their library's own constructor with random weights (no hub
download, so a worker with no network runs them): ``timm.create_model(NAME, pretrained=False)``,
``torchvision.models.get_model(NAME, weights=None)`` and, for Hugging Face transformers, the
architecture's default config (``AutoConfig.for_model(ARCH)``, ``ARCH`` being the config's
``model_type``: ``bert``, ``gpt2``, ``llama``, ``mistral``, ``t5`` ...) with the dims ``layers``,
``hidden`` and ``heads`` overridable, so a 7B shape and a tiny test shape are one command apart.

This module is the catalogue's side: it describes a registry model (its dims, what to install)
without importing the library or torch, so the dashboard and the validator stay light. It
imports a library only for ``search`` (the catalogue page's and the CLI's name search); the
builders, and the CLI's check that a name exists (``registry.check``, through
``engine.spec.normalise(check_factory=True)``), are in ``engine/models/registry.py``.

Dims whose default is 0 mean "the model's own": the architecture's default config for ``hf:``
(``layers``, ``hidden``, ``heads``), the model's default input size for ``timm:`` (``image``).
The child reports what was built (``arch`` figure: the effective dims and parameter count).
"""

from __future__ import annotations

import importlib.util
import re
from dataclasses import dataclass

from engine.models.info import CatalogueError, Dim, ModelInfo

_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.\-]{0,127}$")
BUILDERS = "engine.models.registry"


@dataclass(frozen=True)
class Registry:
    """One library of models addressed as ``PREFIX:NAME``."""

    prefix: str
    package: str  # import name
    pip: str  # what to install
    what: str  # a sentence for the catalogue
    example: str
    dims: tuple[Dim, ...]

    def available(self) -> bool:
        return importlib.util.find_spec(self.package) is not None

    def missing_message(self, name: str) -> str:
        return (f"model {name!r} needs the package {self.pip!r}, which is not installed on this "
                f"machine: pip install {self.pip}")


_BATCH_IMAGES = Dim("batch", 8, 1, 4096, "images per call", True)
REGISTRIES: dict[str, Registry] = {
    "timm": Registry(
        "timm", "timm", "timm",
        "any architecture timm.list_models() knows, random weights (timm.create_model, "
        "pretrained=False)", "timm:vit_base_patch16_224",
        (_BATCH_IMAGES,
         Dim("image", 0, 0, 2048, "height = width in pixels; 0: the model's default input size")),
    ),
    "torchvision": Registry(
        "torchvision", "torchvision", "torchvision",
        "any classification model torchvision.models.list_models() knows, random weights "
        "(weights=None)", "torchvision:resnet50",
        (_BATCH_IMAGES, Dim("image", 224, 16, 2048, "height = width in pixels", True)),
    ),
    "hf": Registry(
        "hf", "transformers", "transformers",
        "a Hugging Face transformers architecture by its model_type (bert, gpt2, llama, mistral, "
        "t5, ...), built from its default config with random weights; decoder-only and "
        "encoder-decoder models with their LM head (logits), encoders without",
        "hf:gpt2",
        (
            Dim("batch", 8, 1, 4096, "sequences per call", True),
            Dim("seq", 128, 1, 131072, "tokens per sequence", True),
            Dim("layers", 0, 0, 512, "transformer layers; 0: the config's own"),
            Dim("hidden", 0, 0, 65536, "hidden size; 0: the config's own (intermediate size "
                "scales with it)"),
            Dim("heads", 0, 0, 1024, "attention heads; 0: the config's own (key/value heads "
                "keep their ratio)"),
            Dim("new_tokens", 0, 0, 32768, "decoder-only models: also time generate() with its "
                "static cache, this many tokens after a prompt of seq tokens; 0: no generation"),
        ),
    ),
}


def split(name: str) -> tuple[Registry, str] | None:
    """``"timm:resnet18"`` -> (the timm registry, ``"resnet18"``); None for other names."""
    prefix, sep, arch = name.partition(":")
    if not sep or prefix not in REGISTRIES:
        return None
    return REGISTRIES[prefix], arch


def is_registry_name(name: str) -> bool:
    return split(name) is not None


def model_info(name: str) -> ModelInfo:
    """The catalogue entry of a registry model. Checks the name's form and that the library is
    installed; whether the library knows the name is ``check_exists``'s job (it imports it)."""
    found = split(name)
    if found is None:
        raise CatalogueError(f"{name!r} is not a registry model name")
    reg, arch = found
    if not _NAME.match(arch):
        raise CatalogueError(f"{reg.prefix}: model names are letters, digits, '_', '-' and '.' "
                             f"(up to 128), e.g. {reg.example}; got {arch[:60]!r}")
    if not reg.available():
        raise CatalogueError(reg.missing_message(name))
    return ModelInfo(name, f"{reg.prefix} {arch}: {reg.what}", name, reg.dims,
                     requires=(reg.package,), source="registry")


def describe() -> list[dict[str, object]]:
    """The registries, for listings: prefix, whether installed here, what to install."""
    return [{"prefix": r.prefix, "arg": "ARCH" if r.prefix == "hf" else "NAME",
             "available": r.available(), "package": r.pip,
             "what": r.what, "example": r.example,
             "dims": r.dims} for r in REGISTRIES.values()]


def search(query: str, limit: int = 50) -> list[str]:
    """Registry model names matching ``query`` (``timm:vit*``, ``hf:llama``, or a bare word
    looked up in every installed registry), as full ``prefix:name`` names. Imports the
    libraries, so callers cache it."""
    from engine.models import registry

    query = query.strip()
    prefix, sep, pattern = query.partition(":")
    regs = [REGISTRIES[prefix]] if sep and prefix in REGISTRIES else list(REGISTRIES.values())
    if not (sep and prefix in REGISTRIES):
        pattern = query
    out: list[str] = []
    for reg in regs:
        if reg.available() and len(out) < limit:
            out += [f"{reg.prefix}:{n}" for n in registry.names(reg.prefix, pattern,
                                                                 limit - len(out))]
    return out
