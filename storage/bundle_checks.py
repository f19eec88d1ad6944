"""Bundle checks beyond the JSON shape (called by storage/bundle_validation.py on every bundle).

* ``spec_problem``: an imported run's spec goes through the one validator, ``engine.spec
  .normalise`` (``stored=True``: the model need not be buildable on this machine, everything
  else is checked as for a new run), and the run's own ``model``, ``dtype``, ``device`` and
  each of its ``dims`` must be the spec's.  The spec is stored as the bundle gives it (so a re-import
  matches it by fingerprint); a run that fails refuses the whole bundle, before anything is
  written.
* ``extra_figures``: the figures of the contract that storage keeps in a result's ``extra``
  (``column=False`` in contract/schema.py) have kinds like the column ones; the bundle checks
  their values by kind too, instead of as free-form JSON, so an imported ``"speedup_spread":
  "fast"`` cannot reach a table or a chart.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

from contract import spec_check
from contract.schema import FIGURES
from contract.text import one_line

# What ``json.loads`` may be asked to build from one bundle, estimated before it runs (see
# ``parse_cost``). A genuine bundle costs about 1.7 times its size (mostly numbers, ~21 bytes
# of text each; the shipped H200 bundle 9.7 MiB for 5.7 MiB), so one at the 16 MiB size limit
# stays well under this; ``[],[],…`` cost 24 times its size: 47 MiB held 1.1 GiB for 12 s
# before the run-count check could refuse it.
MAX_PARSE_BYTES = 64 * 2**20
_CONTAINER_BYTES, _VALUE_BYTES = 80, 32  # a CPython list/dict, a float and its slot

_EXTRA: dict[str, tuple[tuple[str, str], ...]] = {
    where: tuple((f.name, f.kind) for f in FIGURES
                 if not f.column and f.where == where and f.kind != "json")
    for where in ("result", "stats")
}


def spec_problem(run: Mapping[str, Any]) -> tuple[str, str] | None:
    """``(field path below the run, message)`` when the run's spec is not one the validator
    accepts or the run's columns disagree with it; None when it is fine."""
    raw = run["spec"]
    if "model" not in raw:  # older bundles keep the model beside the spec only
        raw = {**raw, "model": run["model"]}
    try:
        spec = spec_check.stored_spec(raw)
    except spec_check.SpecError as e:
        return ("spec" + (f".{e.field}" if e.field else ""), one_line(e, 400))
    except Exception as e:  # noqa: BLE001 - hostile input must give a message, not a traceback
        return "spec", f"invalid spec ({type(e).__name__}: {one_line(e, 200)})"
    for name in ("dtype", "device"):
        if run.get(name) is not None and run[name] != spec[name]:
            return name, (f"{one_line(repr(run[name]), 40)} differs from the spec's "
                          f"{one_line(repr(spec[name]), 40)}")
    # The run's dims as stored may be the spec's as given (defaults not filled in): each must be
    # the validated spec's value of that dim.
    for key, value in (run.get("dims") or {}).items():
        if key not in spec["dims"] or spec["dims"][key] != value or isinstance(value, bool):
            return f"dims.{key}", (f"{one_line(repr(value), 40)} differs from the spec's "
                                   f"{one_line(repr(spec['dims'].get(key)), 40)}")
    return None


def extra_figures(extra: Any) -> Iterator[tuple[str, str, str, Any]]:
    """``(path below extra, name, kind, value)`` of every contract figure present in a result's
    ``extra`` (stats figures under ``extra["stats"]``), for the bundle to check by kind."""
    if not isinstance(extra, dict):
        return
    stats = extra.get("stats")
    for where, holder, prefix in (("result", extra, ""), ("stats", stats, "stats.")):
        if not isinstance(holder, dict):
            continue
        for name, kind in _EXTRA[where]:
            if name in holder:
                yield prefix + name, name, kind, holder[name]


def parse_cost(data: str | bytes) -> int:
    """Bytes of memory ``json.loads(data)`` would take, estimated from the text alone (three
    ``count`` passes, no parsing): brackets open a list or an object, commas separate values.
    Commas inside strings count too, so text-heavy bundles are overestimated, never the
    reverse for the shapes that amplify (empty containers, one-digit numbers)."""
    marks = (b"[", b"{", b",") if isinstance(data, bytes) else ("[", "{", ",")
    containers = data.count(marks[0]) + data.count(marks[1])  # type: ignore[arg-type]
    values = data.count(marks[2]) + 1  # type: ignore[arg-type]
    return containers * _CONTAINER_BYTES + values * _VALUE_BYTES
