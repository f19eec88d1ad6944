"""Declarative base, shared column types and the status vocabularies of the schema.

Everything dialect-sensitive about *types* lives here so the entity files read as plain data:
timestamps are always timezone-aware UTC in Python, whatever the database keeps.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from sqlalchemy import JSON, DateTime, MetaData
from sqlalchemy.engine import Dialect
from sqlalchemy.orm import DeclarativeBase
from sqlalchemy.types import TypeDecorator

# Stable constraint names: Alembic needs them to alter or drop constraints later (SQLite batch
# mode rebuilds tables and must know what each constraint is called).
NAMING_CONVENTION = {
    "ix": "ix_%(table_name)s_%(column_0_N_name)s",
    "uq": "uq_%(table_name)s_%(column_0_N_name)s",
    "ck": "ck_%(table_name)s_%(constraint_name)s",
    "fk": "fk_%(table_name)s_%(column_0_name)s_%(referred_table_name)s",
    "pk": "pk_%(table_name)s",
}

RUN_STATUSES: tuple[str, ...] = ("queued", "running", "done", "failed", "cancelled")
FINAL_RUN_STATUSES: tuple[str, ...] = ("done", "failed", "cancelled")
VARIANT_STATUSES: tuple[str, ...] = ("ok", "failed", "cancelled")
FAILURE_KINDS: tuple[str, ...] = ("crash", "oom", "compile_error", "timeout", "error", "cancelled")


def utcnow() -> datetime:
    """The one clock of the storage layer: aware UTC, computed in Python.

    Using Python's clock (not the database's ``now()``) keeps SQLite and PostgreSQL identical and
    lets heartbeat staleness be compared against values written by the same kind of clock.
    """
    return datetime.now(UTC)


class UTCDateTime(TypeDecorator[datetime]):
    """A timestamp that is always an aware UTC ``datetime`` on the Python side.

    PostgreSQL keeps ``timestamptz`` natively; SQLite keeps naive text, so values are converted
    to UTC before binding (making text order equal time order) and re-tagged as UTC on load.
    Naive datetimes are refused on the way in: guessing their zone is how timestamps drift.
    """

    impl = DateTime(timezone=True)
    cache_ok = True

    def process_bind_param(self, value: datetime | None, dialect: Dialect) -> datetime | None:
        if value is None:
            return None
        if value.tzinfo is None:
            raise ValueError(f"naive datetime {value!r}: storage needs timezone-aware datetimes")
        value = value.astimezone(UTC)
        if dialect.name == "sqlite":
            return value.replace(tzinfo=None)
        return value

    def process_result_value(self, value: datetime | None, dialect: Dialect) -> datetime | None:
        if not isinstance(value, datetime):
            return None
        if value.tzinfo is None:
            return value.replace(tzinfo=UTC)
        return value.astimezone(UTC)

    def result_processor(self, dialect: Dialect, coltype: Any) -> Any:
        """SQLite keeps text that anyone with the file can overwrite: a time column holding
        text that is not a time (or a number) reads as missing, where the driver's parser
        would raise and take every listing of runs down with that one row."""
        parse = super().result_processor(dialect, coltype)
        if parse is None:
            return None

        def lenient(value: Any) -> datetime | None:
            try:
                return parse(value)
            except (ValueError, TypeError, OverflowError):
                return None

        return lenient


def json_column_type() -> JSON:
    """JSON where Python ``None`` is SQL NULL (not the JSON text ``null``), so IS NULL works."""
    return JSON(none_as_null=True)


class Base(DeclarativeBase):
    """Declarative base of every Compile Lab table."""

    metadata = MetaData(naming_convention=NAMING_CONVENTION)
    type_annotation_map: dict[Any, Any] = {datetime: UTCDateTime()}
