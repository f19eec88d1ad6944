"""Configuration grids: several values per compile option, expanded into variants of ONE run.

A grid variant's name encodes its config, so that it is stored, shown, exported and compared like
any other variant (``variant_results.variant`` is its identity, at most 64 characters)::

    MODE[+opt]@key=value,key=value      e.g.  default@dyn=1,fg=1   max-autotune-no-cudagraphs@cdt=1

``MODE[+opt]`` is one of engine/spec.py's variants; the keys, in this fixed order, are

====  ============================  ============  ==============================================
key   option                        values        passed to torch.compile as
====  ============================  ============  ==============================================
dyn   dynamic                       none, 1, 0    ``dynamic=None | True | False``
fg    fullgraph                     1, 0          ``fullgraph=``
cdt   coordinate_descent_tuning     1, 0          inductor ``options`` (needs backend inductor)
frz   freezing                      1, 0          inductor ``options`` (inference only)
====  ============================  ============  ==============================================

A key that is absent takes the run's own setting (``dynamic``, ``fullgraph``) or inductor's
default.  torch.compile refuses ``mode`` and ``options`` together, so a variant with inductor
options passes its mode as the options the mode stands for (``torch._inductor.list_mode_options``)
plus its own: the same compile, one argument.

``expand`` turns ``--option dynamic=none,true --option fullgraph=false,true`` and the list of
modes into the cross product (eager stays one variant).  Pure Python: the dashboard, the CLI and
the worker validate grids without torch; only :func:`compile_kwargs` imports it.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterable, Mapping
from typing import Any

from contract.schema import BOUNDS, RunSpec

SEP = "@"
OPT_SUFFIX = "+opt"
MAX_NAME = 64  # the variant column's width
# Compiled variants a run may have unless the user raises it (spec option grid_limit), and the
# most it may be raised to (a bundle holds at most 64 variants per run, eager included).
DEFAULT_GRID_LIMIT = RunSpec.defaults()["grid_limit"]
MAX_GRID_LIMIT = int(BOUNDS["grid_limit"].hi)

# option name -> (short key in variant names, {text value as typed: python value})
_TRI = {"none": None, "true": True, "false": False, "1": True, "0": False, "auto": None}
_BOOL = {"true": True, "false": False, "1": True, "0": False, "on": True, "off": False}
OPTIONS: dict[str, tuple[str, dict[str, Any]]] = {
    "dynamic": ("dyn", _TRI),
    "fullgraph": ("fg", _BOOL),
    "coordinate_descent_tuning": ("cdt", _BOOL),
    "freezing": ("frz", _BOOL),
}
INDUCTOR_OPTIONS = ("coordinate_descent_tuning", "freezing")
_BY_KEY = {key: name for name, (key, _) in OPTIONS.items()}
_ORDER = list(OPTIONS)


class GridError(ValueError):
    """A bad grid or grid variant name; the message is meant for the user."""


def _text(value: Any) -> str:
    """How a config value is written in a variant name."""
    return "none" if value is None else ("1" if value else "0")


def _mode(base: str) -> tuple[str, bool]:
    return (base[: -len(OPT_SUFFIX)], True) if base.endswith(OPT_SUFFIX) else (base, False)


def variant_name(base: str, config: Mapping[str, Any]) -> str:
    """The canonical name of ``base`` with ``config`` ({option: python value})."""
    parts = [f"{OPTIONS[k][0]}={_text(config[k])}" for k in _ORDER if k in config]
    return base + (SEP + ",".join(parts) if parts else "")


def parse_variant(name: str, bases: Iterable[str]) -> tuple[str, dict[str, Any]]:
    """``"default@dyn=1,fg=0"`` -> ``("default", {"dynamic": True, "fullgraph": False})``.

    Raises GridError for an unknown base or key, a bad value, a repeated key, config on eager,
    or a name that is not written the canonical way (one spelling per config, so two rows of a
    run never hold the same config under two names)."""
    if not isinstance(name, str):
        raise GridError(f"a variant name must be text, got {type(name).__name__}")
    base, sep, rest = name.partition(SEP)
    bases = tuple(bases)
    if base not in bases:
        raise GridError(f"unknown variant {base[:60]!r}; choose from {', '.join(bases)}")
    if not sep:
        return base, {}
    if _mode(base)[0] == "eager":
        raise GridError(f"{name[:60]!r}: eager is not compiled, so it takes no compile options")
    config: dict[str, Any] = {}
    for item in rest.split(","):
        key, eq, value = item.partition("=")
        option = _BY_KEY.get(key)
        if not eq or option is None:
            raise GridError(f"{name[:60]!r}: {item[:30]!r} is not key=value with a key from "
                            f"{', '.join(k for k, _ in OPTIONS.values())}")
        if option in config:
            raise GridError(f"{name[:60]!r}: {key} given twice")
        values = OPTIONS[option][1]
        if value not in values:
            raise GridError(f"{name[:60]!r}: {key}={value[:20]!r} is not one of "
                            f"{', '.join(sorted({_text(v) for v in values.values()}))}")
        config[option] = values[value]
    canonical = variant_name(base, config)
    if canonical != name:
        raise GridError(f"{name[:60]!r} should be written {canonical!r}")
    return base, config


def parse_options(items: Iterable[str]) -> dict[str, list[Any]]:
    """``["dynamic=none,true", "fullgraph=false,true"]`` -> {option: [values]} (as typed on the
    CLI or in the dashboard's form); values keep their order, a repeat is refused."""
    out: dict[str, list[Any]] = {}
    for item in items:
        name, eq, text = str(item).partition("=")
        name = name.strip().replace("-", "_")
        if not eq or name not in OPTIONS:
            raise GridError(f"--option expects NAME=v1,v2 with NAME one of {', '.join(OPTIONS)}, "
                            f"got {str(item)[:60]!r}")
        if name in out:
            raise GridError(f"--option {name} given twice: list its values once, comma-separated")
        values: list[Any] = []
        choices = OPTIONS[name][1]
        for raw in text.split(","):
            v = raw.strip().lower()
            if v not in choices:
                raise GridError(f"--option {name}: {raw.strip()[:20]!r} is not one of "
                                f"{', '.join(k for k in choices if not k.isdigit())}")
            if choices[v] in values:  # "true,1" too: one value, typed twice
                raise GridError(f"--option {name}: {raw.strip()[:20]!r} repeats a value given "
                                "before it: give each value once")
            values.append(choices[v])
        if not values:
            raise GridError(f"--option {name}: no value given")
        out[name] = values
    return out


def expand(variants: Iterable[str], options: Mapping[str, list[Any]]) -> list[str]:
    """Every variant crossed with every combination of ``options`` (eager, and ``eager+opt``
    unless options leave it alone, stay single: nothing of theirs is compiled by the model's
    options).  Options with one value are still written in the name: the run's default for that
    option stays visible beside the grid's."""
    names = [k for k in _ORDER if k in options]
    combos = [dict(zip(names, vals, strict=True))
              for vals in itertools.product(*(options[k] for k in names))]
    out: list[str] = []
    for v in variants:
        if _mode(v)[0] == "eager" or not names:
            out.append(v)
            continue
        out += [variant_name(v, c) for c in combos]
    return out  # a name given twice stays twice: the validator says so (engine/spec.py)


def check_config(base: str, config: Mapping[str, Any], *, backend: str, step: str) -> None:
    """The rules a config must follow beyond its spelling (raises GridError)."""
    inductor = [k for k in INDUCTOR_OPTIONS if k in config]
    if inductor and backend != "inductor":
        raise GridError(f"{', '.join(inductor)}: inductor option(s), they need backend "
                        f"'inductor' (got {backend!r})")
    if config.get("freezing") and step == "train":
        raise GridError("freezing folds the weights into constants: it is for inference "
                        "only (step 'inference')")


def mode_of(variant: str) -> str:
    """The compile mode of a variant name: ``"reduce-overhead@dyn=1"`` -> ``"reduce-overhead"``
    (``"eager"`` for eager and ``eager+opt``)."""
    return _mode(variant.partition(SEP)[0])[0]


def compiled_count(variants: Iterable[str]) -> int:
    """How many variants of a run are compiled (what the grid limit counts)."""
    return sum(1 for v in variants if mode_of(v) != "eager")


def compile_kwargs(run: Mapping[str, Any], variant: str) -> dict[str, Any]:
    """torch.compile's keyword arguments for ``variant`` of ``run`` (the model's compile; the
    optimizer step of a ``+opt`` variant is compiled with the backend alone)."""
    base, _, rest = variant.partition(SEP)
    mode = _mode(base)[0]
    config = parse_variant(variant, [base])[1] if rest else {}
    kwargs: dict[str, Any] = {
        "backend": run.get("backend", "inductor"),
        "dynamic": config.get("dynamic", run.get("dynamic")),
        "fullgraph": bool(config.get("fullgraph", run.get("fullgraph", False))),
    }
    inductor = {k: bool(config[k]) for k in INDUCTOR_OPTIONS if k in config}
    if inductor:
        # torch.compile takes mode or options, not both: the mode as its options, then ours
        from torch._inductor import list_mode_options

        # (mode None would return the table of every mode: name the mode, "default" included)
        options = dict(list_mode_options(mode, kwargs["dynamic"]))
        options.update(inductor)
        kwargs["options"] = options
    elif mode != "default":
        kwargs["mode"] = mode
    return kwargs


def settings(variant: str) -> dict[str, Any]:
    """What a variant name says, for hover texts and tables: {"mode": ..., option: value}."""
    base, _, rest = variant.partition(SEP)
    mode, opt = _mode(base)
    out: dict[str, Any] = {"mode": mode + (" + optimizer" if opt else "")}
    if rest:
        try:
            out.update(parse_variant(variant, [base])[1])
        except GridError:
            out["config"] = rest  # a name from elsewhere (an import) shown as it is
    return out


def split_variant(variant: str) -> tuple[str, bool]:
    """``"reduce-overhead+opt"`` -> ``("reduce-overhead", True)``: the model's compile mode
    ("eager": not compiled) and whether the optimizer step is compiled too.  A grid config
    (``"default+opt@dyn=1"``, engine/grid.py) is not part of the mode."""
    return _mode(variant.partition(SEP)[0])
