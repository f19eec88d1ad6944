"""An attacker's pass over bundle import: a file whose JSON would balloon in memory is refused
from its text, before ``json.loads`` builds it (the run-count check came only after the whole
tree was built: 47 MiB of ``[],`` held 1.1 GiB for 12 s)."""

from __future__ import annotations

import json

import pytest

from storage import bundle, bundle_validation
from storage.bundle_checks import _CONTAINER_BYTES as _CONTAINER
from storage.bundle_checks import MAX_PARSE_BYTES, parse_cost
from tests.review_support import BUNDLE


def _no_parse(*args, **kwargs):
    raise AssertionError("json.loads ran on a bundle that should have been refused unread")


@pytest.mark.parametrize("item", [b"[],", b"{},", b"[[]],"])
def test_a_bundle_that_would_balloon_is_refused_before_parsing(item, monkeypatch):
    head = b'{"format": "compilelab-bundle", "version": 2, "runs": ['
    data = head + item * (MAX_PARSE_BYTES // _CONTAINER // (item.count(b"[") + item.count(b"{"))) + b"[]]}"
    assert len(data) < bundle.MAX_BUNDLE_BYTES // 4  # well inside the size limit
    monkeypatch.setattr(bundle_validation.json, "loads", _no_parse)
    with pytest.raises(bundle.BundleError, match="MiB to read"):
        bundle.parse_bundle(data)
    with pytest.raises(bundle.BundleError, match="MiB to read"):
        bundle.parse_bundle(data.decode())


def test_a_genuine_bundle_costs_about_its_size():
    text = BUNDLE.read_bytes()
    assert parse_cost(text) < 4 * len(text)
    assert parse_cost(text) == parse_cost(text.decode())
    assert len(bundle.parse_bundle(text)["runs"]) == len(json.loads(text)["runs"])
