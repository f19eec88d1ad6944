"""The bundle format: what a bundle file looks like, its versions, and ``BundleError``.

A bundle is runs exported as one JSON document, to share history between databases
(``storage/bundle.py`` is the overview). Format (version 2)::

    {"format": "compilelab-bundle", "version": 2, "exported_at": "<ISO 8601 UTC>",
     "runs": [{"source_id": 12, "created_at": "...", "started_at": "...", "finished_at": "...",
               "status": "done", "model": "mlp", "dims": {...}, "dtype": "float32",
               "device": "cuda", "spec": {...}, "error": null, "note": "", "environment": {...},
               "tags": ["baseline"], "variants": [<VariantResult JSON, plus "extra">, ...]}]}

Versions: 2 added ``eager_median_ms`` to the sweep points (``variants[].sweep[]``). Version 1
bundles (without it) still import, with the field missing (null). The version is bumped for any
addition because ``import_bundle`` refuses unknown keys: an older Compile Lab then says "version
2 is not supported" instead of pointing at a key it has never heard of.
"""

from __future__ import annotations

BUNDLE_FORMAT = "compilelab-bundle"
BUNDLE_VERSION = 2  # what export_bundle writes
# What import_bundle reads. The field lists are shared: a version 1 bundle is a version 2 bundle
# without sweep[].eager_median_ms, and every field of a VariantResult is optional on import.
READABLE_VERSIONS: tuple[int, ...] = (1, 2)


class BundleError(ValueError):
    """A bundle that cannot be imported; the message says where and why."""
