"""The bundle format: what a bundle file looks like, its versions, and ``BundleError``.

A bundle is runs exported as one JSON document, to share history between databases
(``storage/bundle.py`` is the overview). Format (version 3)::

    {"format": "compilelab-bundle", "version": 3, "exported_at": "<ISO 8601 UTC>",
     "runs": [{"source_id": 12, "created_at": "...", "started_at": "...", "finished_at": "...",
               "status": "done", "model": "mlp", "dims": {...}, "dtype": "float32",
               "device": "cuda", "spec": {...}, "error": null, "note": "", "environment": {...},
               "tags": ["baseline"], "variants": [<VariantResult JSON, plus "extra">, ...]}]}

Versions: 2 added ``eager_median_ms`` to the sweep points (``variants[].sweep[]``); 3 added the
run-level eager and the shared-variance interval's figures (``measured_median_ms``,
``paired_eager_median_ms``, ``speedup_log_se``, ``speedup_df``, ``variance_prior``,
``variance_components``, ``decision``, ``provisional``, ``final_at`` in the stats,
``host_probe`` in a result). Older bundles still import, with those fields missing (null); their
``eager_median_ms`` is each variant's own paired eager, as that Compile Lab computed it. The version is bumped for any
addition because ``import_bundle`` refuses unknown keys: an older Compile Lab then says "version
2 is not supported" instead of pointing at a key it has never heard of.
"""

from __future__ import annotations

BUNDLE_FORMAT = "compilelab-bundle"
BUNDLE_VERSION = 3  # what export_bundle writes
# What import_bundle reads. The field lists are shared: an older bundle is a version 3 bundle
# without the fields its version came before, and every field of a VariantResult is optional on
# import.
READABLE_VERSIONS: tuple[int, ...] = (1, 2, 3)


class BundleError(ValueError):
    """A bundle that cannot be imported; the message says where and why."""
