"""The model of a spec that was stored elsewhere (a bundle from another database, a row).

``engine.spec.normalise(..., stored=True)`` validates such a spec with every rule a new run
meets, except one: whether *this* machine can build the model.  A bundle from the GPU host may
name ``hf:llama`` where transformers is not installed, a plugin of its operator's folder, or the
file reference its CLI user typed; importing it runs nothing, so those are accepted here by
their form alone, and never looked up on disk or imported.  Their dims are then checked as any
user model's (whole numbers, ``0 .. MAX_DIM``) and their dtype against every dtype, so a stored
spec still cannot carry a negative or absurd dim, an unknown dtype, or a model name with shell or
control characters.  A run rerun from it later is validated again, for this machine.
"""

from __future__ import annotations

import re
from typing import Any

from engine.models import registries
from engine.models.catalogue import BUILTIN, CatalogueError, Dim, ModelInfo, get_model

MAX_DIM = 1 << 20  # the catalogue's own widest default range (Dim.max)
# Names as the catalogue, plugins and registries spell them: no spaces, quotes, ``;``, ``$``...
_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.\-]{0,127}")
_DIM_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]{0,63}")
_FACTORY = r":[A-Za-z_][A-Za-z0-9_]{0,127}"
_FILE_REF = re.compile(r"[A-Za-z0-9_./~+\-]{1,400}\.py" + _FACTORY)
_MODULE_REF = re.compile(r"[A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z_][A-Za-z0-9_]*)*" + _FACTORY)


def _stand_in(name: str, dims: dict[str, Any]) -> ModelInfo:
    """A model this machine does not know: the dims it was given, each ``0 .. MAX_DIM``."""
    for key in dims:
        if not isinstance(key, str) or not _DIM_NAME.fullmatch(key):
            raise CatalogueError(f"dim name {str(key)[:40]!r} is not a name (letters, digits, "
                                 "'_')")
    return ModelInfo(name, f"{name} (not available on this machine)", name,
                     tuple(Dim(key, 1, 0, MAX_DIM, input_only=True) for key in dims),
                     source="stored")


def stored_model_info(name: str, dims: Any) -> ModelInfo:
    """The catalogue entry for ``name`` when this machine has it, else a stand-in checked by
    form only (see the module docstring); ``CatalogueError`` for a name no model can have."""
    given = dims if isinstance(dims, dict) else {}
    if is_reference(name):  # never resolved: resolving reads the file or imports the package
        if _FILE_REF.fullmatch(name) or _MODULE_REF.fullmatch(name):
            return _stand_in(name, given)
        raise CatalogueError(f"model {name[:80]!r} is neither a catalogue name nor a "
                             "path/file.py:factory or package.module:factory reference")
    try:
        return get_model(name)
    except CatalogueError:
        pass  # not on this machine: a library not installed, another host's plugin
    builtin = next((m for m in BUILTIN if m.name == name), None)
    if builtin is not None:  # its optional library is missing here; its dims are known
        return builtin
    found = registries.split(name)
    if found is not None:
        reg, arch = found
        if _NAME.fullmatch(arch):
            return ModelInfo(name, f"{reg.prefix} {arch}", name, reg.dims,
                             requires=(reg.package,), source="registry")
    else:
        bare = name.removeprefix("plugin:")
        if _NAME.fullmatch(bare):  # a plugin, or a catalogue model of another Compile Lab
            return _stand_in(name, given)
    raise CatalogueError(f"model {name[:80]!r} is not a model name (letters, digits and "
                         "_ . - only)")


def is_reference(model: str) -> bool:
    """``path/file.py:factory`` or ``pkg.mod:factory``: code named by the spec itself, as opposed
    to a catalogue name, ``plugin:NAME`` (code the operator put in the plugin folder) or a
    registry model (``timm:NAME``, ``torchvision:NAME``, ``hf:ARCH``: a library's own model)."""
    from engine.models.registries import is_registry_name

    return ":" in model and not model.startswith("plugin:") and not is_registry_name(model)
