"""Alembic environment for Compile Lab (configured in code by storage.db, no alembic.ini).

``storage.db.upgrade_schema`` passes an open connection, already inside a locked transaction,
through ``config.attributes["connection"]``; the migrations then run in that transaction. Run on
its own (``python -m storage.migrate``), it connects to ``sqlalchemy.url`` itself.
"""

from __future__ import annotations

from typing import Any

from alembic import context
from sqlalchemy import JSON, Connection

import storage.models  # noqa: F401  (registers every entity on the metadata)
from storage.models.base import Base, UTCDateTime

config = context.config


def _render_item(kind: str, obj: Any, _autogen_context: Any) -> str | bool:
    """Autogenerate plain SQLAlchemy types, so migrations never import application code."""
    if kind == "type" and isinstance(obj, UTCDateTime):
        return "sa.DateTime(timezone=True)"
    if kind == "type" and isinstance(obj, JSON):
        return "sa.JSON()"
    return False


def _run(connection: Connection) -> None:
    context.configure(
        connection=connection,
        target_metadata=Base.metadata,
        # SQLite cannot ALTER most things: later migrations rebuild tables in batch mode.
        render_as_batch=connection.dialect.name == "sqlite",
        # SQLite and PostgreSQL both roll DDL back: keep a failed upgrade all-or-nothing.
        transactional_ddl=True,
        compare_type=True,
        render_item=_render_item,
    )
    with context.begin_transaction():
        context.run_migrations()


def _run_online() -> None:
    connection = config.attributes.get("connection")
    if connection is not None:
        _run(connection)
        return
    from storage.db import create_db_engine, resolve_url

    engine = create_db_engine(resolve_url(config.get_main_option("sqlalchemy.url")))
    try:
        with engine.connect() as conn:
            _run(conn)
            conn.commit()
    finally:
        engine.dispose()


if context.is_offline_mode():
    raise SystemExit("offline (--sql) migrations are not supported; run against a database")
_run_online()
