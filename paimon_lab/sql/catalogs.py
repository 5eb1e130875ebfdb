"""The catalogs of a session: Flink's in-memory catalog (connector tables, registered data,
views) and Paimon catalogs with their views; the scope unqualified names resolve in."""

from __future__ import annotations

import json
from dataclasses import dataclass, field

import pyarrow as pa

from paimon_lab.core import types as T
from paimon_lab.io.file_io import join
from paimon_lab.errors import ViewNotExistError
from paimon_lab.sql.datagen import DatagenSpec
from paimon_lab.sql.spelling import quote

DEFAULT_CATALOG = "default_catalog"
DEFAULT_MEMORY_DB = "default_database"
SYSTEM_DB = "sys"
VIEWS_DIR = ".views"


@dataclass(frozen=True)
class Scope:
    """Where unqualified names resolve: a catalog and a database."""

    catalog: str
    database: str


@dataclass
class ViewDef:
    catalog: str
    database: str
    name: str
    query: str
    scope: Scope  # the scope its query was defined in
    columns: list[str] | None = None
    comment: str | None = None


@dataclass
class MemTable:
    kind: str  # datagen | data | print | blackhole | view
    schema: pa.Schema | None = None
    spec: DatagenSpec | None = None
    data: pa.Table | None = None
    view: ViewDef | None = None
    options: dict[str, str] = field(default_factory=dict)
    fields: list[T.DataField] = field(default_factory=list)
    primary_keys: list[str] = field(default_factory=list)


class MemoryCatalog:
    """Flink's in-memory default catalog: connector tables (datagen, print, blackhole),
    registered data and views, for the session's lifetime."""

    kind = "memory"

    def __init__(self, name: str):
        self.name = name
        self.databases: dict[str, dict[str, MemTable]] = {DEFAULT_MEMORY_DB: {}}
        self.options = {"type": "generic_in_memory"}


class PaimonCatalog:
    """A Paimon catalog in a session: the filesystem :class:`Catalog` or a
    :class:`~paimon_lab.catalog.jdbc.JdbcCatalog`. Views live in the JDBC catalog's database, or
    for the filesystem catalog in ``{warehouse}/{db}.db/.views/{name}.json``."""

    kind = "paimon"

    def __init__(self, name: str, catalog, options: dict[str, str]):
        self.name = name
        self.catalog = catalog
        self.options = options

    @property
    def is_jdbc(self) -> bool:
        """Whether views live in the catalog's own registry (JDBC database, Hive metastore)."""
        return hasattr(self.catalog, "create_view") and (hasattr(self.catalog, "db")
                                                         or getattr(self.catalog, "metastore", None) == "hive")

    # ------------------------------------------------------------------ views
    def view_path(self, db: str, name: str) -> str:
        return join(self.catalog.database_path(db), VIEWS_DIR, f"{name}.json")

    def _scope(self, catalog: str | None, db: str) -> Scope:
        return Scope(catalog or self.name, db)

    def get_view(self, db: str, name: str) -> ViewDef | None:
        if self.is_jdbc:
            try:
                v = self.catalog.get_view(f"{quote(db)}.{quote(name)}")
            except ViewNotExistError:
                return None
            o = v.options
            columns = json.loads(o[VIEW_COLUMNS]) if o.get(VIEW_COLUMNS) else None
            return ViewDef(self.name, db, name, v.query, self._scope(o.get(VIEW_CATALOG), o.get(VIEW_DATABASE, db)),
                           columns, v.comment)
        try:
            text = self.catalog.file_io.read_text(self.view_path(db, name))
        except (FileNotFoundError, OSError):
            return None
        obj = json.loads(text)
        return ViewDef(self.name, db, name, obj["query"], self._scope(obj.get("catalog"), obj.get("database") or db),
                       obj.get("columns"), obj.get("comment"))

    def list_views(self, db: str) -> list[str]:
        if self.is_jdbc:
            return self.catalog.list_views(db)
        names = self.catalog.file_io.list_names(join(self.catalog.database_path(db), VIEWS_DIR))
        return sorted(n[:-5] for n in names if n.endswith(".json"))

    def put_view(self, view: ViewDef, schema: pa.Schema, *, exists: bool) -> None:
        """Store a view (replacing the one of that name when ``exists``)."""
        ctx_catalog = None if view.scope.catalog == self.name else view.scope.catalog
        if self.is_jdbc:
            ident = f"{quote(view.database)}.{quote(view.name)}"
            options = {VIEW_DATABASE: view.scope.database}
            if ctx_catalog:
                options[VIEW_CATALOG] = ctx_catalog
            if view.columns:
                options[VIEW_COLUMNS] = json.dumps(view.columns)
            if exists:
                self.catalog.alter_view(ident, view.query, schema, view.comment, options=options)
            else:
                self.catalog.create_view(ident, view.query, schema, view.comment, options=options)
            return
        obj = {"query": view.query, "catalog": ctx_catalog, "database": view.scope.database,
               "columns": view.columns, "comment": view.comment}
        self.catalog.file_io.write_bytes(self.view_path(view.database, view.name),
                                         json.dumps(obj, indent=2).encode())

    def drop_view(self, db: str, name: str) -> None:
        if self.is_jdbc:
            self.catalog.drop_view(f"{quote(db)}.{quote(name)}")
        else:
            self.catalog.file_io.delete(self.view_path(db, name))

    def rename_view(self, db: str, name: str, new_db: str, new_name: str) -> None:
        if self.is_jdbc:
            self.catalog.rename_view(f"{quote(db)}.{quote(name)}", f"{quote(new_db)}.{quote(new_name)}")
            return
        text = self.catalog.file_io.read_text(self.view_path(db, name))
        self.catalog.file_io.write_bytes(self.view_path(new_db, new_name), text.encode())
        self.catalog.file_io.delete(self.view_path(db, name))


VIEW_CATALOG = "lab.default-catalog"
VIEW_DATABASE = "lab.default-database"
VIEW_COLUMNS = "lab.column-names"


def memory_table(temporary: dict[tuple[str, str, str], MemTable], entry: MemoryCatalog | PaimonCatalog,
                 cat: str, db: str, name: str) -> MemTable | None:
    """The temporary table or view ``cat.db.name``, else the in-memory catalog's (None if neither)."""
    mt = temporary.get((cat, db, name))
    if mt is None and entry.kind == "memory":
        mt = entry.databases.get(db, {}).get(name)
    return mt
