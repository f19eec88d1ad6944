"""The model catalogue: what can be benchmarked, with which named dims and dtypes.

Each entry declares its dims (name, default, valid range) and supported dtypes, and names a
factory ``factory(**dims) -> (torch.nn.Module, tuple_of_inputs[, loss_fn])`` (``loss_fn(output) ->
scalar tensor``, for the training step: engine/measure/train_step.py). Factories are referenced by
``module:function`` strings and imported lazily, so listing the catalogue (the dashboard does it on
every page load) never imports torch.

User models come in two ways, both chosen by whoever runs the engine, never typed in a browser:
- from the CLI: ``path/to/file.py:factory`` or ``package.module:factory``;
- from the operator's plugin folder (env ``COMPILELAB_PLUGIN_DIR``): every ``*.py`` file there that
  defines ``factory`` becomes ``plugin:<file stem>``. A plugin file may also define ``DIMS`` (a dict
  ``name -> (default, min, max)``), ``DTYPES`` and ``DESCRIPTION``.
"""

from __future__ import annotations

import ast
import contextlib
import difflib
import importlib
import importlib.util
import os
import re
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from contract.files import NotARegularFile, read_regular
from engine.models.info import ALL_DTYPES, CatalogueError, Dim, ModelInfo

PLUGIN_ENV = "COMPILELAB_PLUGIN_DIR"


_M = "engine.models"
BUILTIN: tuple[ModelInfo, ...] = (
    ModelInfo(
        "mlp",
        "Two-layer MLP: Linear(h->h) -> ReLU -> Linear(h->h). Launch-bound at small batch "
        "(its time is mostly kernel launches).",
        f"{_M}.mlp:build",
        (Dim("batch", 32, 1, 65536, "rows per call", True), Dim("hidden", 1024, 8, 16384)),
    ),
    ModelInfo(
        "pointwise_chain",
        "A chain of LayerNorm + GELU blocks: many small memory-bound kernels that inductor fuses.",
        f"{_M}.pointwise:build",
        (
            Dim("batch", 64, 1, 65536, "rows per call", True),
            Dim("width", 4096, 8, 65536),
            Dim("depth", 8, 1, 64, "LayerNorm+GELU blocks"),
        ),
    ),
    ModelInfo(
        "gpt_decoder",
        "GPT-style decoder stack (torch.nn only): token embedding, causal attention, MLP, LM head.",
        f"{_M}.gpt:build",
        (
            Dim("batch", 8, 1, 1024, "sequences per call", True),
            Dim("seq", 128, 1, 8192, "tokens per sequence", True),
            Dim("layers", 4, 1, 96),
            Dim("hidden", 512, 16, 16384),
            Dim("heads", 8, 1, 128),
            Dim("vocab", 8192, 16, 262144),
        ),
    ),
    ModelInfo(
        "resnet_small",
        "Small ResNet-style CNN (torch.nn only): conv stem, residual basic blocks, pooled head.",
        f"{_M}.resnet:build",
        (
            Dim("batch", 32, 1, 4096, "images per call", True),
            Dim("image", 64, 8, 1024, "height = width in pixels", True),
            Dim("width", 32, 4, 1024, "channels of the first stage"),
            Dim("blocks", 2, 1, 16, "basic blocks per stage"),
        ),
    ),
    ModelInfo(
        "graph_breaks",
        "An MLP with deliberate graph breaks: print(), .item() and a data-dependent branch.",
        f"{_M}.breaks:build",
        (Dim("batch", 32, 1, 65536, "rows per call", True), Dim("hidden", 256, 8, 8192)),
    ),
    ModelInfo(
        "varying_seq",
        "Attention block fed a varying sequence length: sweep `seq` to see recompiles.",
        f"{_M}.varying:build",
        (
            Dim("batch", 8, 1, 1024, "sequences per call", True),
            Dim("seq", 64, 1, 8192, "tokens per sequence", True),
            Dim("hidden", 256, 16, 8192),
            Dim("heads", 4, 1, 64),
        ),
    ),
    ModelInfo(
        "llama_decode",
        "Llama-style decoder with a static KV cache (gpt-fast style): one call = one decode "
        "step; prefill, time to first token, per-token latency and tokens/s measured apart.",
        f"{_M}.llama:build",
        (
            Dim("batch", 1, 1, 256, "sequences generated at once"),
            Dim("prompt", 128, 1, 32768, "prompt tokens (prefill)"),
            Dim("new_tokens", 128, 2, 32768, "tokens generated after the prompt"),
            Dim("layers", 16, 1, 128),
            Dim("hidden", 2048, 16, 16384),
            Dim("heads", 32, 1, 256),
        ),
        tags=("decode",),
    ),
    ModelInfo(
        "bert_base",
        "BERT-base encoder built from its config (Hugging Face transformers, no weights download).",
        f"{_M}.real:bert_base",
        (
            Dim("batch", 8, 1, 1024, "sequences per call", True),
            Dim("seq", 128, 1, 512, "tokens per sequence", True),
        ),
        requires=("transformers",),
    ),
    ModelInfo(
        "resnet50",
        "torchvision ResNet-50, random weights (no download).",
        f"{_M}.real:resnet50",
        (
            Dim("batch", 32, 1, 1024, "images per call", True),
            Dim("image", 224, 32, 1024, "height = width in pixels", True),
        ),
        requires=("torchvision",),
    ),
)


# Plugin files skipped, with why (``run --model plugin:NAME`` says it instead of "no plugin").
PLUGIN_PROBLEMS: dict[str, str] = {}
MAX_PLUGIN_BYTES = 1 << 20
_PLUGIN_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.\-]{0,127}")


def _plugin_info(path: Path) -> ModelInfo | None:
    """Describe a plugin file without executing it: DIMS/DTYPES/DESCRIPTION are read as
    literals with ``ast`` so listing the catalogue cannot run operator code in the dashboard.
    None (and the reason in ``PLUGIN_PROBLEMS``) for a file that is no model: a FIFO or a
    device named ``*.py`` is never read, a name no model may have is skipped, bad DIMS too."""
    name = f"plugin:{path.stem}"
    if not _PLUGIN_NAME.fullmatch(path.stem):
        return None  # no model can be named so (spaces, control characters, 130+ characters)
    try:
        tree = ast.parse(read_regular(path, MAX_PLUGIN_BYTES).decode("utf-8"), filename=str(path))
        info = _plugin_from_tree(path, tree)
    except (OSError, SyntaxError, ValueError, TypeError, IndexError) as e:
        PLUGIN_PROBLEMS[name] = f"{path.name}: {type(e).__name__}: {str(e)[:200]}"
        return None
    if info is None:
        PLUGIN_PROBLEMS[name] = f"{path.name} defines no factory()"
    return info


def _plugin_from_tree(path: Path, tree: ast.Module) -> ModelInfo | None:
    values: dict[str, Any] = {}
    has_factory = False
    for node in tree.body:
        if isinstance(node, ast.FunctionDef) and node.name == "factory":
            has_factory = True
        if isinstance(node, ast.Assign) and len(node.targets) == 1:
            target = node.targets[0]
            if isinstance(target, ast.Name) and target.id in ("DIMS", "DTYPES", "DESCRIPTION"):
                with contextlib.suppress(ValueError):
                    values[target.id] = ast.literal_eval(node.value)
    if not has_factory:
        return None
    dims = tuple(
        Dim(str(name), int(spec[0]), int(spec[1]), int(spec[2]),
            input_only=bool(spec[3:4] and spec[3]))
        for name, spec in dict(values.get("DIMS", {})).items()
    )
    return ModelInfo(
        name=f"plugin:{path.stem}",
        description=str(values.get("DESCRIPTION", f"Operator plugin {path.name}")),
        factory=f"{path}:factory",
        dims=dims,
        dtypes=tuple(values.get("DTYPES", ALL_DTYPES)),
        source="plugin",
    )


def plugin_models() -> list[ModelInfo]:
    folder = os.environ.get(PLUGIN_ENV)
    if not folder or not Path(folder).is_dir():
        return []
    PLUGIN_PROBLEMS.clear()
    found = (_plugin_info(p) for p in sorted(Path(folder).glob("*.py")))
    return [m for m in found if m is not None]


def list_models(include_unavailable: bool = False) -> list[ModelInfo]:
    """Built-ins (those whose optional packages are installed) followed by plugin models."""
    builtins = [m for m in BUILTIN if include_unavailable or m.available()]
    return builtins + plugin_models()


def get_model(name: str) -> ModelInfo:
    """Resolve a catalogue name, ``plugin:NAME``, a registry model (``timm:NAME``,
    ``torchvision:NAME``, ``hf:ARCH``: those prefixes are reserved), or a user reference
    ``file.py:fn`` / ``pkg.mod:fn`` (the last two are for the CLI and the operator only)."""
    for m in list_models(include_unavailable=True):
        if m.name == name:
            if not m.available():
                raise CatalogueError(f"model {name!r} needs {', '.join(m.requires)} installed")
            return m
    if name.startswith("plugin:"):
        why = PLUGIN_PROBLEMS.get(name)
        raise CatalogueError(f"no plugin model {name!r} in ${PLUGIN_ENV}"
                             + (f" (its file was skipped: {why})" if why else ""))
    from engine.models import registries

    if registries.is_registry_name(name):
        return registries.model_info(name)
    if ":" in name:
        return _user_model(name)
    raise CatalogueError(unknown_model(name, [m.name for m in list_models()]))


def unknown_model(name: str, known: list[str]) -> str:
    """"unknown model 'mpl': did you mean mlp?" (difflib's close matches), else the list."""
    close = difflib.get_close_matches(name, known, n=3, cutoff=0.6)
    if close:
        return (f"unknown model {name!r}: did you mean {' or '.join(close)}? "
                "(python -m engine models lists every model)")
    return f"unknown model {name!r}; known models: {', '.join(known)}"


def _user_model(ref: str) -> ModelInfo:
    target, _, fn = ref.rpartition(":")
    if not fn.isidentifier():
        raise CatalogueError(f"{ref!r}: expected path/to/file.py:factory or package.module:factory")
    if target.endswith(".py"):
        try:
            path = Path(target).expanduser().resolve()
            read_regular(path, MAX_PLUGIN_BYTES)  # a FIFO or a device is never imported
        except NotARegularFile as e:
            raise CatalogueError(f"user model file: {e}") from None
        except (OSError, RuntimeError, ValueError) as e:
            raise CatalogueError(f"user model file {target[:200]!r}: {e}") from None
        info = _plugin_info(path)
        dims = info.dims if info else ()
        return ModelInfo(ref, f"User model {path.name}:{fn}", f"{path}:{fn}", dims, source="user")
    if importlib.util.find_spec(target.split(".")[0]) is None:
        raise CatalogueError(f"user model module {target!r} cannot be imported")
    return ModelInfo(ref, f"User model {ref}", ref, (), source="user")


def load_factory(ref: str) -> Callable[..., Any]:
    """Import ``module:function`` or ``/path/file.py:function``; imported only in the child or
    while validating a CLI request, never in the dashboard."""
    from engine.models import registries

    if registries.is_registry_name(ref):  # the factory of a registry model is its name
        import functools

        from engine.models import registry

        return functools.partial(registry.build, ref)
    target, _, fn = ref.rpartition(":")
    if target.endswith(".py"):
        spec = importlib.util.spec_from_file_location(f"compilelab_user_{Path(target).stem}", target)
        if spec is None or spec.loader is None:
            raise CatalogueError(f"cannot load {target!r}")
        module = importlib.util.module_from_spec(spec)
        sys.modules[spec.name] = module
        spec.loader.exec_module(module)
    else:
        module = importlib.import_module(target)
    factory = getattr(module, fn, None)
    if not callable(factory):
        raise CatalogueError(f"{ref!r}: {fn!r} is not a function in {target!r}")
    return factory
