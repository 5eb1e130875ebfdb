"""The filesystem catalog: databases are ``{warehouse}/{db}.db`` directories, tables live inside."""

from __future__ import annotations

from dataclasses import replace
from typing import Any, Sequence

import pyarrow as pa

from paimon_lab.core import types as T
from paimon_lab.errors import (DatabaseAlreadyExistError, DatabaseNotEmptyError, DatabaseNotExistError,
                               InvalidIdentifierError, SchemaError, TableAlreadyExistError,
                               TableNotExistError)
from paimon_lab.io.file_io import CommitLock, FileIO, check_name, check_new_table_name, join, normalize_path
from paimon_lab.core.schema import SchemaManager, TableSchema, new_schema
from paimon_lab.table import Table

DB_SUFFIX = ".db"
DEFAULT_DATABASE = "default"


def split_branch(identifier: str) -> tuple[str, str]:
    """'db.t$branch_b' -> ('db.t', 'b'); without a branch suffix the branch is 'main'."""
    if isinstance(identifier, str) and "$branch_" in identifier:
        table, branch = identifier.split("$branch_", 1)
        return table, branch
    return identifier, "main"


def split_identifier(identifier: str, default_db: str = DEFAULT_DATABASE) -> tuple[str, str]:
    """'db.table' -> ('db', 'table'); a bare 'table' is in the default database."""
    if not isinstance(identifier, str) or not identifier:
        raise InvalidIdentifierError(f"Invalid table identifier {identifier!r}")
    parts = [p.strip("`") for p in identifier.split(".")]
    if len(parts) == 1:
        return default_db, check_name("table", parts[0])
    if len(parts) == 2:
        return check_name("database", parts[0]), check_name("table", parts[1])
    raise InvalidIdentifierError(f"Invalid table identifier '{identifier}': use 'database.table'")


def table_schema_for(schema: "pa.Schema | TableSchema | None" = None, *,
                     fields: "Sequence[T.DataField] | None" = None, primary_keys: Sequence[str] = (),
                     partition_keys: Sequence[str] = (), options: dict[str, Any] | None = None,
                     comment: str | None = None) -> TableSchema:
    """Schema 0 of a new table, validated: from a pyarrow schema, from Paimon ``fields`` (keeping
    types Arrow cannot tell apart: VARCHAR(n), CHAR(n), TIMESTAMP(p), ...), or a ready
    :class:`TableSchema` (used as given, as schema 0)."""
    primary_keys, partition_keys = primary_keys or (), partition_keys or ()
    if isinstance(schema, TableSchema):
        if fields is not None or primary_keys or partition_keys or options or comment is not None:
            raise SchemaError("Give either a TableSchema or fields / keys / options / comment, not both")
        out = replace(schema, id=0) if schema.id != 0 else schema
    elif fields is not None:
        if schema is not None:
            raise SchemaError("Give either a schema or fields, not both")
        fields = list(fields)
        for f in fields:
            if not isinstance(f, T.DataField):
                raise SchemaError(f"fields must be paimon_lab.core.types.DataField, got {type(f).__name__}")
        base = new_schema(T.arrow_schema(fields), partition_keys=partition_keys, primary_keys=primary_keys,
                          options={k: v for k, v in (options or {}).items()}, comment=comment)
        counter = iter(range(1 << 30))
        typed = []
        for f in fields:
            fid = next(counter)
            dtype = T.assign_field_ids(f.type, counter)
            if f.name in base.primary_keys:
                dtype = dtype.copy(False)
            typed.append(T.DataField(fid, f.name, dtype, f.description, f.default_value))
        out = replace(base, fields=tuple(typed), highest_field_id=T.max_field_id(typed))
    elif isinstance(schema, pa.Schema):
        out = new_schema(schema, partition_keys=partition_keys, primary_keys=primary_keys,
                         options={k: v for k, v in (options or {}).items()}, comment=comment)
    else:
        raise SchemaError("create_table needs a pyarrow.Schema, a TableSchema or fields=[DataField, ...], "
                          f"got {type(schema).__name__}")
    if out.primary_keys:
        from paimon_lab.core.key_value import KeyValueLayout
        from paimon_lab.mergetree.merge_engine import merge_function_for

        KeyValueLayout(out)  # validates sequence.field
        merge_function_for(out)  # validates merge engine options
    from paimon_lab.fileindex import validate_file_index

    validate_file_index(out.options, list(out.fields))
    return out


class Catalog:
    """A Paimon filesystem catalog over a warehouse directory or URI.

    >>> catalog = Catalog("/tmp/warehouse")
    >>> catalog.create_database("db", ignore_if_exists=True)
    """

    def __init__(self, warehouse: str, *, filesystem=None, lock: CommitLock | None = None,
                 options: dict[str, str] | None = None):
        self.warehouse = normalize_path(warehouse)
        if filesystem is None and options:
            from paimon_lab.io.fs_options import filesystem_from_options

            filesystem = filesystem_from_options(self.warehouse, options)
        self.file_io = FileIO(self.warehouse, filesystem, lock)
        self.options = dict(options or {})
        if self.file_io.is_local:
            self.file_io.mkdirs(self.warehouse)

    # ------------------------------------------------------------------ databases
    def database_path(self, name: str) -> str:
        return join(self.warehouse, check_name("database", name) + DB_SUFFIX)

    def database_exists(self, name: str) -> bool:
        return self.file_io.is_dir(self.database_path(name))

    def list_databases(self) -> list[str]:
        return sorted(i.base_name[: -len(DB_SUFFIX)] for i in self.file_io.list_dir(self.warehouse)
                      if i.base_name.endswith(DB_SUFFIX) and i.type.name == "Directory")

    def create_database(self, name: str, ignore_if_exists: bool = False) -> None:
        if self.database_exists(name):
            if ignore_if_exists:
                return
            raise DatabaseAlreadyExistError(name)
        self.file_io.mkdirs(self.database_path(name))

    def drop_database(self, name: str, ignore_if_not_exists: bool = False, cascade: bool = False) -> None:
        if not self.database_exists(name):
            if ignore_if_not_exists:
                return
            raise DatabaseNotExistError(name)
        if self.list_tables(name) and not cascade:
            raise DatabaseNotEmptyError(name)
        self.file_io.delete_dir(self.database_path(name))

    # ------------------------------------------------------------------ tables
    def table_path(self, identifier: str) -> str:
        db, name = split_identifier(identifier)
        return join(self.database_path(db), name)

    def list_tables(self, database: str) -> list[str]:
        if not self.database_exists(database):
            raise DatabaseNotExistError(database)
        out = []
        for info in self.file_io.list_dir(self.database_path(database)):
            if info.type.name == "Directory" and SchemaManager(self.file_io, join(
                    self.database_path(database), info.base_name)).list_ids():
                out.append(info.base_name)
        return sorted(out)

    def table_exists(self, identifier: str) -> bool:
        db, _ = split_identifier(identifier)
        return self.database_exists(db) and bool(SchemaManager(self.file_io, self.table_path(identifier)).list_ids())

    def create_table(self, identifier: str, schema: "pa.Schema | TableSchema | None" = None, *,
                     fields: "Sequence[T.DataField] | None" = None, primary_keys: Sequence[str] = (),
                     partition_keys: Sequence[str] = (), options: dict[str, Any] | None = None,
                     comment: str | None = None, ignore_if_exists: bool = False) -> Table:
        """Create a table; returns it. The columns come from a pyarrow ``schema``, or from
        ``fields`` (a list of :class:`paimon_lab.core.types.DataField`, for exact Paimon types such as
        VARCHAR(20), CHAR(5), TIMESTAMP(3)), or ``schema`` is a whole :class:`TableSchema`."""
        db, name = split_identifier(identifier)
        check_new_table_name(name)
        if not self.database_exists(db):
            raise DatabaseNotExistError(db)
        full = f"{db}.{name}"
        table_schema = table_schema_for(schema, fields=fields, primary_keys=primary_keys,
                                        partition_keys=partition_keys, options=options, comment=comment)
        path = self.table_path(full)
        manager = SchemaManager(self.file_io, path)
        if manager.list_ids():
            if ignore_if_exists:
                return self.get_table(full)
            raise TableAlreadyExistError(full)
        if not manager.create(table_schema):
            if ignore_if_exists:
                return self.get_table(full)
            raise TableAlreadyExistError(full)
        return Table(self.file_io, path, full)

    def system_table(self, identifier: str, **kwargs: Any) -> pa.Table:
        """A system table by name: ``db.t$snapshots``, ``db.t$branch_b$files``, ``sys.all_table_options``."""
        from paimon_lab.system_tables import catalog_system_table, parse_system_identifier

        table_id, name = parse_system_identifier(identifier)
        if table_id is None:
            return catalog_system_table(self, name)
        if name is None:
            raise InvalidIdentifierError(f"'{identifier}' names no system table")
        return self.get_table(table_id).system(name, **kwargs)

    def get_table(self, identifier: str) -> Table:
        """Load ``db.table`` (or ``db.table$branch_NAME`` for a branch)."""
        identifier, branch = split_branch(identifier)
        db, name = split_identifier(identifier)
        full = f"{db}.{name}"
        if not self.database_exists(db):
            raise TableNotExistError(full)
        return Table(self.file_io, self.table_path(full), full, branch)

    def drop_table(self, identifier: str, ignore_if_not_exists: bool = False) -> None:
        if not self.table_exists(identifier):
            if ignore_if_not_exists:
                return
            db, name = split_identifier(identifier)
            raise TableNotExistError(f"{db}.{name}")
        self.file_io.delete_dir(self.table_path(identifier))

    def rename_table(self, identifier: str, new_identifier: str) -> None:
        """Rename ``db.t`` to ``db2.t2`` (the table directory moves)."""
        if not self.table_exists(identifier):
            db, name = split_identifier(identifier)
            raise TableNotExistError(f"{db}.{name}")
        ndb, nname = split_identifier(new_identifier)
        check_new_table_name(nname)
        if not self.database_exists(ndb):
            raise DatabaseNotExistError(ndb)
        if self.table_exists(new_identifier) or self.file_io.exists(self.table_path(new_identifier)):
            raise TableAlreadyExistError(f"{ndb}.{nname}")
        self.file_io.fs.move(self.file_io.arrow_path(self.table_path(identifier)),
                             self.file_io.arrow_path(self.table_path(new_identifier)))

    def __repr__(self) -> str:
        return f"Catalog({self.warehouse!r})"
