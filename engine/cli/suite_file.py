"""Suites: a named list of configs in a small TOML file, run with one command.

Format (``acceptance/suites/ci_small.toml`` is an example)::

    name = "ci-small"              # required: the runs are tagged "suite:ci-small"
    description = "..."            # optional
    tags = ["nightly"]             # optional: more tags on every run
    [defaults]                     # optional: any RunSpec option (docs/CONTRACTS.md)
    device = "cuda"
    variants = ["eager", "default", "reduce-overhead"]
    [[configs]]                    # one or more: RunSpec options over the defaults
    model = "mlp"
    dims = { batch = 32 }

Every config is validated by ``engine.spec.normalise`` (the one validator) before anything is
queued, so a bad suite changes nothing; errors name the file, the config and the option.
"""

from __future__ import annotations

import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from contract.files import NotARegularFile, read_regular
from engine.spec import SpecError, normalise

MAX_SUITE_BYTES = 1024 * 1024
MAX_CONFIGS = 500
TOP_KEYS = {"name", "description", "tags", "defaults", "configs"}
TAG_PREFIX = "suite:"


class SuiteError(ValueError):
    """A suite file that cannot be used; the message names where and why."""


@dataclass(frozen=True)
class Suite:
    name: str
    description: str
    specs: list[dict[str, Any]]
    tags: list[str] = field(default_factory=list)

    @property
    def tag(self) -> str:
        return TAG_PREFIX + self.name


def suite_tag(name: str) -> str:
    return TAG_PREFIX + name


def parse_suite(text: str, source: str = "suite", *, overrides: dict[str, Any] | None = None,
                check_device: bool = False) -> Suite:
    """A validated ``Suite`` from TOML text; ``overrides`` (``--set``) apply to every config
    after the file's own values."""
    from contract.text import check_tag, normalize_tags

    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as e:
        raise SuiteError(f"{source}: not valid TOML: {e}") from None
    unknown = sorted(set(data) - TOP_KEYS)
    if unknown:
        raise SuiteError(f"{source}: unknown key(s) {', '.join(unknown)} (allowed: "
                         f"{', '.join(sorted(TOP_KEYS))})")
    name = data.get("name")
    if not isinstance(name, str) or not name.strip():
        raise SuiteError(f"{source}: 'name' is required (text)")
    try:
        check_tag(TAG_PREFIX + name.strip())
        tags = normalize_tags(data.get("tags") or [])
    except (TypeError, ValueError) as e:
        raise SuiteError(f"{source}: {e}") from None
    description = data.get("description", "")
    if not isinstance(description, str):
        raise SuiteError(f"{source}: 'description' must be text")
    defaults = data.get("defaults", {})
    if not isinstance(defaults, dict):
        raise SuiteError(f"{source}: [defaults] must be a table")
    configs = data.get("configs")
    if not isinstance(configs, list) or not configs:
        raise SuiteError(f"{source}: at least one [[configs]] entry is required")
    if len(configs) > MAX_CONFIGS:
        raise SuiteError(f"{source}: {len(configs)} configs; the limit is {MAX_CONFIGS}")
    specs = []
    for i, config in enumerate(configs, 1):
        where = f"{source}: config {i}"
        if not isinstance(config, dict):
            raise SuiteError(f"{where}: must be a table")
        try:
            # The local user wrote this file, as they would type `run`: references allowed.
            spec = normalise({**defaults, **config, **(overrides or {})},
                             check_device=check_device, check_factory=check_device,
                             allow_user_models=True)
        except SpecError as e:
            raise SuiteError(f"{where} ({config.get('model', '?')}): {e}") from None
        specs.append(spec)
    return Suite(name.strip(), description, specs, tags)


def load_suite(path: str | Path, **kwargs: Any) -> Suite:
    path = Path(path)
    try:  # a FIFO or a device is never read (it would block or never end)
        raw = read_regular(path, MAX_SUITE_BYTES)
    except NotARegularFile as e:
        raise SuiteError(f"suite file: {e}") from None
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        raise SuiteError(f"{path}: not UTF-8 text") from None
    return parse_suite(text, str(path), **kwargs)


def parse_override(item: str) -> tuple[str, Any]:
    """``--set KEY=VALUE``: VALUE read as a TOML value (``backend="aot_eager"``, ``processes=2``,
    ``variants=["eager","default"]``), or as bare text when it is not one (``backend=aot_eager``)."""
    key, sep, value = item.partition("=")
    key = key.strip()
    if not sep or not key:
        raise SuiteError(f"--set expects KEY=VALUE, got {item!r}")
    try:
        return key, tomllib.loads(f"v = {value}")["v"]
    except tomllib.TOMLDecodeError:
        return key, value
