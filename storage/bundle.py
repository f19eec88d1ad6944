"""Bundles: runs exported as one JSON document, to share history between databases.

This module is the public face of bundles (``from storage.bundle import ...``); the code lives in:

* ``storage/bundle_format.py``: what a bundle file looks like, its versions, ``BundleError``;
* ``storage/bundle_validation.py``: ``parse_bundle`` and ``validate_bundle``, which treat a
  bundle as hostile input, and the limits they enforce (``MAX_BUNDLE_BYTES``, ``MAX_RUNS``, ...);
* ``storage/bundle_checks.py``: each run's spec through the one validator, and ``extra``;
* ``storage/bundle_export.py``: ``export_bundle`` (finished runs only; artifacts are left out);
* ``storage/bundle_import.py``: ``import_bundle`` and ``import_bundle_result``, all runs in one
  transaction, runs already here (same content fingerprint) not imported again.

The limits are read where they are checked: a test that lowers one patches
``storage.bundle_validation``, not this module.
"""

from __future__ import annotations

from storage.bundle_checks import MAX_PARSE_BYTES
from storage.bundle_export import export_bundle, export_runs
from storage.bundle_format import BUNDLE_FORMAT, BUNDLE_VERSION, READABLE_VERSIONS, BundleError
from storage.bundle_import import ImportResult, import_bundle, import_bundle_result
from storage.bundle_validation import (
    MAX_BUNDLE_BYTES,
    MAX_CHILDREN,
    MAX_DIMS,
    MAX_JSON_DEPTH,
    MAX_JSON_NODES,
    MAX_RUNS,
    MAX_SERIES_LENGTH,
    MAX_SHORT_TEXT,
    MAX_TEXT,
    MAX_TOTAL_NUMBERS,
    MAX_VARIANTS_PER_RUN,
    VARIANT_NAME,
    parse_bundle,
    validate_bundle,
)

__all__ = [
    "BUNDLE_FORMAT",
    "BUNDLE_VERSION",
    "MAX_BUNDLE_BYTES",
    "MAX_CHILDREN",
    "MAX_DIMS",
    "MAX_JSON_DEPTH",
    "MAX_JSON_NODES",
    "MAX_PARSE_BYTES",
    "MAX_RUNS",
    "MAX_SERIES_LENGTH",
    "MAX_SHORT_TEXT",
    "MAX_TEXT",
    "MAX_TOTAL_NUMBERS",
    "MAX_VARIANTS_PER_RUN",
    "READABLE_VERSIONS",
    "VARIANT_NAME",
    "BundleError",
    "ImportResult",
    "export_bundle",
    "export_runs",
    "import_bundle",
    "import_bundle_result",
    "parse_bundle",
    "validate_bundle",
]
