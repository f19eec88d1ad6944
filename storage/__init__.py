"""Compile Lab's storage: the only package that knows SQL (see docs/CONTRACTS.md).

Runs, their queue state and their results live in one database, SQLite by default and
PostgreSQL for teams, opened (and migrated) with ``open_database``. Everything else here is a
function of a ``Database``.
"""

from storage.bundle import (
    BUNDLE_FORMAT,
    BUNDLE_VERSION,
    BundleError,
    ImportResult,
    export_bundle,
    import_bundle,
    import_bundle_result,
    parse_bundle,
    validate_bundle,
)
from storage.db import (
    Database,
    DatabaseMissing,
    DatabaseOpenError,
    SchemaError,
    mask_url,
    open_database,
)
from storage.queries import list_runs, load_runs
from storage.queue import (
    claim_next_run,
    claim_run,
    enqueue_run,
    finish_run,
    heartbeat,
    recover_stale_runs,
    request_cancel,
    requeue_run,
)
from storage.results import (
    RunNotFound,
    delete_runs,
    save_variant_result,
    set_environment,
    set_note,
    set_tags,
)

__all__ = [
    "BUNDLE_FORMAT",
    "BUNDLE_VERSION",
    "BundleError",
    "Database",
    "DatabaseMissing",
    "DatabaseOpenError",
    "ImportResult",
    "RunNotFound",
    "SchemaError",
    "claim_next_run",
    "claim_run",
    "delete_runs",
    "enqueue_run",
    "export_bundle",
    "finish_run",
    "heartbeat",
    "import_bundle",
    "import_bundle_result",
    "list_runs",
    "load_runs",
    "mask_url",
    "open_database",
    "parse_bundle",
    "recover_stale_runs",
    "request_cancel",
    "requeue_run",
    "save_variant_result",
    "set_environment",
    "set_note",
    "set_tags",
    "validate_bundle",
]
