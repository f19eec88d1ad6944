"""Opening the database: URL resolution, engine set-up, and Alembic upgrade on open.

This is the only module that knows which database it is talking to. SQLite (one machine) and
PostgreSQL (a team) get the same schema and the same behaviour; the differences are confined to
the engine set-up here and to the queue's claim statement in ``storage.queue``.

SQLite notes, because they decide whether several processes can share one file:

* WAL journal: readers never block the writer and the writer never blocks readers.
* ``busy_timeout``: a second writer waits (up to 30 s) for the lock instead of failing at once.
* The driver's own implicit transactions are switched off and we emit ``BEGIN`` ourselves.
  Write sessions start with ``BEGIN IMMEDIATE``, which takes the write lock up front *through the
  busy handler*. A deferred transaction that reads first and writes later cannot wait: when
  another process committed in between, SQLite answers "database is locked" at once.
* Foreign keys are off by default in SQLite; they are switched on for every connection.
"""

from __future__ import annotations

import contextlib
import os
import re
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

from sqlalchemy import Connection, Engine, create_engine, event, inspect, text
from sqlalchemy.engine import URL, make_url
from sqlalchemy.exc import ArgumentError, DBAPIError, NoSuchModuleError, OperationalError
from sqlalchemy.orm import Session, sessionmaker
from sqlalchemy.pool import StaticPool

if TYPE_CHECKING:
    from alembic.config import Config
    from alembic.script import ScriptDirectory

DEFAULT_URL = "sqlite:///compilelab.db"
ENV_VAR = "COMPILELAB_DB"
MIGRATIONS_DIR = Path(__file__).resolve().parent / "migrations"
SQLITE_BUSY_TIMEOUT_S = 30.0
HEAD_REVISION = "0007"
"""The newest migration under ``migrations/versions`` (a test checks it against Alembic's own
head).  Opening a database already at this revision reads its version table with SQLAlchemy
and never imports Alembic: that import is paid before every run's first process, on the path
to the answer (docs/measurements/2026-12-05-time-to-answer-cpu.md)."""

# Execution option that marks a connection whose transactions will write (see module docstring).
_WRITE_OPTION = "compilelab_write"
# Arbitrary constant key for the PostgreSQL advisory lock that serialises concurrent migrations.
_PG_MIGRATION_LOCK_KEY = 0x436F6D70  # "Comp"


class SchemaError(RuntimeError):
    """The database's schema cannot be used by this version of Compile Lab."""


class DatabaseOpenError(RuntimeError):
    """The database cannot be opened: a bad URL, an unreachable server, a corrupt or unwritable
    SQLite file. The message is one line meant for the user, with any password masked."""


class DatabaseMissing(DatabaseOpenError):
    """A read-only command was pointed at a database that does not exist (nothing was created)."""


def mask_url(url: URL | str | None) -> str:
    """``url`` as text with its password hidden: the one way storage, the CLI, the worker and the
    dashboard show a database URL (``make_url(...).render_as_string(hide_password=True)``).

    Text that does not parse as a URL is still masked (``scheme://user:***@host``), since a user
    who mistyped a URL may well have typed its password too."""
    if url is None:
        return "(none)"
    if isinstance(url, URL):
        return url.render_as_string(hide_password=True)
    try:
        return make_url(url).render_as_string(hide_password=True)
    except Exception:  # not a URL: mask anything that looks like user:password@
        return (
            re.sub(r"(?<=:)[^/@:]*(?=@)", "***", str(url))
            .encode("utf-8", "backslashreplace")
            .decode("utf-8")
        )


def _reason(exc: BaseException, url: URL) -> str:
    """The driver's own first line (not SQLAlchemy's SQL and parameters), password scrubbed."""
    orig = exc.orig if isinstance(exc, DBAPIError) and exc.orig is not None else exc
    lines = [line.strip() for line in str(orig).splitlines() if line.strip()]
    text = lines[0] if lines else type(orig).__name__
    if url.password:
        text = text.replace(str(url.password), "***")
    return text[:300]


def resolve_url(url: str | None = None) -> URL:
    """Pick the database URL: the argument, else ``$COMPILELAB_DB``, else ``compilelab.db`` here.

    ``postgresql://`` and ``postgres://`` URLs without a driver get psycopg 3, the driver the
    project ships with (SQLAlchemy's own default would be psycopg2).
    """
    raw = url or os.environ.get(ENV_VAR) or DEFAULT_URL
    if raw.startswith("postgres://"):
        raw = "postgresql://" + raw[len("postgres://") :]
    try:
        parsed = make_url(raw)
    except (ArgumentError, ValueError, TypeError):
        raise DatabaseOpenError(
            f"{mask_url(raw)!s} is not a database URL (expected e.g. sqlite:///compilelab.db or "
            "postgresql://user@host/compilelab)"
        ) from None
    if parsed.drivername == "postgresql":
        parsed = parsed.set(drivername="postgresql+psycopg")
    return parsed


def _is_sqlite_memory(url: URL) -> bool:
    return url.database in (None, "", ":memory:") or url.query.get("mode") == "memory"


def _install_sqlite_listeners(engine: Engine) -> None:
    """Per-connection pragmas and explicit BEGINs (the reasons are in the module docstring)."""

    @event.listens_for(engine, "connect")
    def _on_connect(dbapi_connection: Any, _record: Any) -> None:
        # Hand transaction control to SQLAlchemy's "begin" event below.
        dbapi_connection.isolation_level = None
        cursor = dbapi_connection.cursor()
        try:
            # busy_timeout first, so that switching to WAL on a brand-new file also waits.
            cursor.execute(f"PRAGMA busy_timeout = {int(SQLITE_BUSY_TIMEOUT_S * 1000)}")
            cursor.execute("PRAGMA journal_mode = WAL")
            cursor.execute("PRAGMA foreign_keys = ON")
        finally:
            cursor.close()

    @event.listens_for(engine, "begin")
    def _on_begin(conn: Connection) -> None:
        if conn.get_execution_options().get(_WRITE_OPTION):
            conn.exec_driver_sql("BEGIN IMMEDIATE")
        else:
            conn.exec_driver_sql("BEGIN")


def create_db_engine(url: URL) -> Engine:
    """An Engine configured for Compile Lab's use of ``url``'s dialect (no migration)."""
    if url.get_backend_name() == "sqlite":
        kwargs: dict[str, Any] = {"connect_args": {"timeout": SQLITE_BUSY_TIMEOUT_S}}
        if _is_sqlite_memory(url):
            # One shared connection, otherwise every connection would see its own empty DB.
            kwargs["poolclass"] = StaticPool
            kwargs["connect_args"]["check_same_thread"] = False
        engine = create_engine(url, **kwargs)
        _install_sqlite_listeners(engine)
        return engine
    # pool_pre_ping: workers live for days and the server may restart under them.
    return create_engine(url, pool_pre_ping=True)


def alembic_config(url: URL | str | None = None, connection: Connection | None = None) -> Config:
    """Alembic configuration built in code (no alembic.ini): script location plus URL.

    With ``connection``, migrations run on that connection inside its open transaction.
    """
    from alembic.config import Config

    cfg = Config()
    cfg.set_main_option("script_location", str(MIGRATIONS_DIR).replace("%", "%%"))
    if url is not None:
        rendered = url if isinstance(url, str) else url.render_as_string(hide_password=False)
        cfg.set_main_option("sqlalchemy.url", rendered.replace("%", "%%"))
    if connection is not None:
        cfg.attributes["connection"] = connection
    return cfg


def head_revision() -> str:
    """The newest migration revision shipped with this code."""
    from alembic.script import ScriptDirectory

    head = ScriptDirectory.from_config(alembic_config()).get_current_head()
    assert head is not None, "storage/migrations/versions has no revision"
    return head


def current_revision(engine: Engine) -> str | None:
    """The revision the database is at (None for an empty database)."""
    with engine.connect() as conn:
        return _read_revision(conn)


def _read_revision(conn: Connection) -> str | None:
    """Alembic's version table read with plain SQL (what ``MigrationContext.
    get_current_revision`` does, without importing Alembic); None when there is none."""
    if not inspect(conn).has_table("alembic_version"):
        return None
    rows = conn.execute(text("SELECT version_num FROM alembic_version")).scalars().all()
    if len(rows) > 1:  # branches: this project's history is linear
        raise SchemaError(f"the database has several schema heads {sorted(map(str, rows))!r}")
    return str(rows[0]) if rows else None


def _check_known(revision: str | None, script: ScriptDirectory) -> None:
    if revision is None:
        return
    known = {rev.revision for rev in script.walk_revisions()}
    if revision not in known:
        raise SchemaError(
            f"the database is at schema revision {revision!r}, which this version of Compile Lab "
            f"does not know (newest known: {script.get_current_head()!r}); it was probably "
            "migrated by a newer Compile Lab: upgrade this checkout"
        )


def upgrade_schema(engine: Engine, attempts: int = 5) -> None:
    """Bring the schema to head; safe when several processes open a new database at once.

    The migration runs in one transaction that first takes the database's own lock (SQLite:
    ``BEGIN IMMEDIATE``; PostgreSQL: a transaction-scoped advisory lock). A second process waits
    on that lock, then reads the version table *inside* the locked transaction, finds the schema
    at head and does nothing. Opening an up-to-date database only reads the version table.

    SQLite can still answer "database is locked" without waiting in a few corners (a file
    being switched to WAL by another process at that instant); those are retried.
    """
    for attempt in range(1, attempts + 1):
        try:
            _upgrade_once(engine)
            return
        except OperationalError as exc:
            transient = engine.dialect.name == "sqlite" and (
                "locked" in str(exc) or "busy" in str(exc)
            )
            if not transient or attempt == attempts:
                raise
            time.sleep(0.2 * attempt)


def _upgrade_once(engine: Engine) -> None:
    revision = current_revision(engine)
    if revision == HEAD_REVISION:
        return  # the common case: nothing to migrate, no Alembic import
    from alembic import command
    from alembic.script import ScriptDirectory

    script = ScriptDirectory.from_config(alembic_config())
    _check_known(revision, script)
    if revision == script.get_current_head():
        return
    with engine.connect() as conn:
        conn = conn.execution_options(**{_WRITE_OPTION: True})
        with conn.begin():
            if conn.dialect.name == "postgresql":
                conn.execute(
                    text("SELECT pg_advisory_xact_lock(:key)"), {"key": _PG_MIGRATION_LOCK_KEY}
                )
            # Re-read under the lock: another process may have migrated while we waited.
            _check_known(_read_revision(conn), script)
            command.upgrade(alembic_config(connection=conn), "head")


class Database:
    """A migrated database: an Engine plus sessions with the right transaction semantics.

    Create one per process (engines and their pools must not cross ``fork``).
    """

    def __init__(self, engine: Engine) -> None:
        self.engine = engine
        self._read_sessions = sessionmaker(bind=engine, expire_on_commit=False)
        self._write_sessions = sessionmaker(
            bind=engine.execution_options(**{_WRITE_OPTION: True}), expire_on_commit=False
        )

    @property
    def dialect(self) -> str:
        """The dialect name, e.g. ``"sqlite"`` or ``"postgresql"`` (for storage's own use)."""
        return self.engine.dialect.name

    @property
    def url(self) -> str:
        """The URL with any password masked, fit for logs and the dashboard's footer."""
        return mask_url(self.engine.url)

    @contextmanager
    def session(self, *, write: bool = False) -> Iterator[Session]:
        """A Session that commits when the block ends normally and rolls back on an exception.

        Pass ``write=True`` when the block will write: on SQLite the transaction then takes the
        write lock before its first read, so it waits for other writers instead of failing.
        """
        factory = self._write_sessions if write else self._read_sessions
        with factory() as session:
            try:
                yield session
                session.commit()
            except BaseException:
                session.rollback()
                raise

    def dispose(self) -> None:
        """Close pooled connections (call before a process exits or forks)."""
        self.engine.dispose()

    def __repr__(self) -> str:
        return f"Database({self.url!r})"


def _check_sqlite_file(url: URL, shown: str, create: bool) -> None:
    """Refuse, before anything is written, a SQLite path Compile Lab should not touch: a folder
    that does not exist (a typo must not leave new folders behind), and a file that holds
    another application's tables (opening it would switch its journal to WAL and add ours), and,
    without ``create``, a file that is not there.  Read with a read-only connection of the
    standard library, which changes nothing."""
    path = Path(str(url.database)).expanduser()
    try:
        folder, exists = path.parent.is_dir(), path.exists()
        empty = not exists or (path.is_file() and path.stat().st_size == 0)
    except OSError as exc:  # a name longer than the file system allows, ...
        raise DatabaseOpenError(f"cannot use {shown}: {exc.strerror or exc}") from None
    if not exists and not create:
        raise DatabaseMissing(f"database {shown} does not exist (nothing was created)")
    if not folder:
        raise DatabaseOpenError(f"the folder {str(path.parent)[:200]!r} of {shown} does not "
                                "exist (nothing was created): create it first, or name a file "
                                "in a folder that exists")
    if empty:
        return  # a new database: ours to create
    if not path.is_file():  # a FIFO would block the driver, a folder or device is no database
        raise DatabaseOpenError(f"cannot open database {shown}: not a regular file")
    import sqlite3

    try:
        with contextlib.closing(sqlite3.connect(f"{path.as_uri()}?mode=ro", uri=True,
                                                timeout=SQLITE_BUSY_TIMEOUT_S)) as conn:
            tables = {r[0] for r in conn.execute(
                "SELECT name FROM sqlite_master WHERE type = 'table'")}
    except sqlite3.DatabaseError as exc:
        raise DatabaseOpenError(f"cannot open database {shown}: {exc} (the file is corrupt "
                                "or not a Compile Lab database)") from None
    _check_ours(tables, shown)


def _check_ours(tables: set[str], shown: str) -> None:
    """A database with tables, but not Compile Lab's (its version table and its runs), belongs
    to someone else: refused, unchanged."""
    if tables and not {"alembic_version", "runs"} <= tables:
        names = ", ".join(sorted(tables)[:5]) + (", …" if len(tables) > 5 else "")
        raise SchemaError(f"{shown} holds another application's tables ({names}), not Compile "
                          "Lab's: nothing was changed; name a new file or database")


def open_database(url: str | None = None, *, create: bool = True,
                  lasting: bool = False) -> Database:
    """Open (creating if needed) and migrate the Compile Lab database at ``url``.

    The URL comes from the argument, else ``$COMPILELAB_DB``, else ``sqlite:///compilelab.db``
    in the current directory. With ``create=False`` (read-only commands such as ``show`` and
    ``cancel``) a database that does not exist, or holds no Compile Lab schema, raises
    ``DatabaseMissing`` and nothing is created: a typo in a URL must not leave an empty file.

    ``lasting``: the database must outlive this process (a queue, a worker, the dashboard, a
    run kept for later): an in-memory SQLite URL is refused.  A SQLite file in a folder that
    does not exist, or holding another application's tables, is refused before anything is
    written to it.

    Every failure to open raises ``DatabaseOpenError`` (one line, password masked) or
    ``SchemaError``; no driver traceback reaches the user.
    """
    parsed = resolve_url(url)
    shown = mask_url(parsed)
    if parsed.get_backend_name() not in ("sqlite", "postgresql"):
        raise DatabaseOpenError(f"{shown}: unsupported database (use sqlite:// or postgresql://)")
    memory = parsed.get_backend_name() == "sqlite" and _is_sqlite_memory(parsed)
    if memory and lasting:
        raise DatabaseOpenError(f"{shown} keeps the database in this process's memory: it is "
                                "gone when the process ends and no worker or dashboard can see "
                                "it; name a file (sqlite:///compilelab.db) or a server")
    if parsed.get_backend_name() == "sqlite" and not memory:
        _check_sqlite_file(parsed, shown, create)
    try:
        engine = create_db_engine(parsed)
    except (NoSuchModuleError, ImportError):
        raise DatabaseOpenError(
            f"{shown}: unsupported database (use sqlite:// or postgresql://)"
        ) from None
    except (ArgumentError, ValueError, TypeError) as exc:
        raise DatabaseOpenError(f"{shown}: {_reason(exc, parsed)}") from None
    try:
        if parsed.get_backend_name() == "postgresql":
            with engine.connect() as conn:
                _check_ours(set(inspect(conn).get_table_names()), shown)
        if not create and current_revision(engine) is None:
            raise DatabaseMissing(
                f"database {shown} holds no Compile Lab data (nothing was created)"
            )
        upgrade_schema(engine)
    except (DatabaseOpenError, SchemaError):
        engine.dispose()
        raise
    except DBAPIError as exc:
        engine.dispose()
        reason = _reason(exc, parsed)
        if "not a database" in reason:
            reason += " (the file is corrupt or not a Compile Lab database)"
        raise DatabaseOpenError(f"cannot open database {shown}: {reason}") from None
    except BaseException:
        engine.dispose()
        raise
    return Database(engine)

