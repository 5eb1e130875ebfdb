"""The Hive catalog: databases and tables registered in a Hive Metastore, as Java Paimon's
``HiveCatalog`` registers them, so that Java Paimon, Spark/Hive with the Paimon connector and
Trino see our tables and we see theirs.

Table files are the usual Paimon directories (``{database location}/{table}``); the metastore
holds the database (with its location) and one table entry per table: ``table_type=PAIMON``,
the ``PaimonStorageHandler``, ``PaimonSerDe``, ``PaimonInputFormat``/``PaimonOutputFormat``,
the location and the columns in Hive types. Schema changes made through a table of this catalog
are written to the metastore too; with ``metastore.partitioned-table = true`` the table is a
partitioned Hive table and each commit adds (or, when it deleted files, drops) its partitions.
With ``lock.enabled`` (Java's default: on for object stores) commits take the metastore's
table lock (:class:`~paimon_lab.catalog.hive_client.HiveCommitLock`).

Hive tables that are not Paimon tables are read-only format tables with ``format-table.enabled``
(:mod:`.hive_format`), refused otherwise. Views are ``VIRTUAL_VIEW`` entries, as Java Paimon (1.x)
stores them. Not supported, refused with an error: ``location-in-properties``, ``hadoop-conf-dir`` and other metastore client classes.
"""

from __future__ import annotations

import getpass
import time
from typing import Any, Collection, Mapping, Sequence
from urllib.parse import urlparse

import pyarrow as pa

from paimon_lab.core import types as T
from paimon_lab.core.partition import escape_path_name, value_to_partition_string
from paimon_lab.core.schema import SchemaManager, TableSchema
from paimon_lab.errors import (CatalogError, DatabaseAlreadyExistError, HiveMetastoreError, DatabaseNotEmptyError,
                               DatabaseNotExistError, TableAlreadyExistError, TableNotExistError,
                               OptionError, ViewAlreadyExistError, ViewNotExistError)
from paimon_lab.io.file_io import check_name, check_new_table_name, join, normalize_path
from paimon_lab.io.fs_options import filesystem_from_options
from paimon_lab.operation.scan import FileStoreScan
from paimon_lab.store.metastore import MetastoreSync
from paimon_lab.system import parse_system_identifier
from paimon_lab.table import Table
from paimon_lab.catalog.base import WarehouseCatalog
from paimon_lab.catalog.hive_format import HiveFormatTable, paimon_type
from paimon_lab.catalog.hive_client import MetastoreClient, commit_lock_from_options, hive_conf
from paimon_lab.catalog.identifier import split_branch, split_identifier, table_of_warehouse_path
from paimon_lab.catalog.table_schema import table_schema_for
from paimon_lab.catalog.views import View, checked_view

INPUT_FORMAT = "org.apache.paimon.hive.mapred.PaimonInputFormat"
OUTPUT_FORMAT = "org.apache.paimon.hive.mapred.PaimonOutputFormat"
SERDE = "org.apache.paimon.hive.PaimonSerDe"
STORAGE_HANDLER = "org.apache.paimon.hive.PaimonStorageHandler"
TABLE_TYPE_PROP = "table_type"
STORAGE_HANDLER_PROP = "storage_handler"
HIVE_PREFIX = "hive."

OPT_TABLE_TYPE = "table.type"
OPT_SYNC_ALL = "sync-all-properties"
OPT_PARTITIONED = "metastore.partitioned-table"
OPT_FORMAT_TABLE = "format-table.enabled"
DEFAULT_PARTITION_NAME = "__DEFAULT_PARTITION__"
NOT_FOUND, ALREADY_EXISTS = "NoSuchObjectException", "AlreadyExistsException"
VIRTUAL_VIEW = "VIRTUAL_VIEW"
_REFUSED = {"hadoop-conf-dir": "configure the warehouse file system with the s3.*/oss.* options instead",
            "location-in-properties": "only the storage location (Java's default) is supported"}


def hive_type(t: T.DataType) -> str:
    """The Hive type name Java Paimon registers for a Paimon type (Hive 2.3 names)."""
    r = t.root
    simple = {"BOOLEAN": "boolean", "TINYINT": "tinyint", "SMALLINT": "smallint", "INT": "int",
              "BIGINT": "bigint", "FLOAT": "float", "DOUBLE": "double", "DATE": "date", "TIME": "string",
              "BINARY": "binary", "VARBINARY": "binary", "TIMESTAMP": "timestamp", "TIMESTAMP_LTZ": "timestamp"}
    if r in simple:
        return simple[r]
    if r == "DECIMAL":
        return f"decimal({t.precision},{t.scale})"
    if r == "CHAR":
        return "string" if t.length > 255 else f"char({t.length})"
    if r == "VARCHAR":
        return "string" if t.length > 65535 else f"varchar({t.length})"
    if r == "ARRAY":
        return f"array<{hive_type(t.element)}>"
    if r == "MULTISET":
        return f"map<{hive_type(t.element)},int>"
    if r == "MAP":
        return f"map<{hive_type(t.key)},{hive_type(t.value)}>"
    if r == "ROW":
        return "struct<" + ",".join(f"{f.name}:{hive_type(f.type)}" for f in t.fields) + ">"
    raise CatalogError(f"Type {t} has no Hive counterpart")


def _flag(options: Mapping[str, str], key: str, default: bool = False) -> bool:
    return str(options.get(key, default)).strip().lower() == "true"


def is_paimon_table(hms_table) -> bool:
    sd = hms_table.sd
    return sd is not None and sd.inputFormat == INPUT_FORMAT and sd.outputFormat == OUTPUT_FORMAT


class HiveCatalog(WarehouseCatalog):
    """A Paimon catalog registered in a Hive Metastore (``'metastore' = 'hive'``).

    >>> catalog = HiveCatalog("thrift://hms:9083", "s3://bucket/warehouse", options={"s3.endpoint": "..."})
    >>> catalog = HiveCatalog(hive_conf_dir="/etc/hive/conf")   # uri and warehouse from hive-site.xml

    ``warehouse`` defaults to ``hive.metastore.warehouse.dir``. Options as in Java Paimon:
    ``hive-conf-dir``, ``table.type`` (``managed`` or ``external``: dropping an external table
    keeps its files), ``sync-all-properties``, ``lock.enabled``, ``lock-acquire-timeout``,
    ``lock-check-max-sleep``, and the object store options of the warehouse.
    """

    metastore = "hive"

    def __init__(self, uri: str | None = None, warehouse: str | None = None, *, hive_conf_dir: str | None = None,
                 filesystem=None, options: Mapping[str, str] | None = None):
        self.options = {k: str(v) for k, v in (options or {}).items()}
        if uri:
            self.options["uri"] = uri
        if hive_conf_dir:
            self.options["hive-conf-dir"] = hive_conf_dir
        for key, why in _REFUSED.items():
            if key in self.options and (key == "hadoop-conf-dir" or _flag(self.options, key)):
                raise CatalogError(f"Hive catalog option '{key}' is not supported by paimon-lab: {why}")
        client_class = self.options.get("metastore.client.class")
        if client_class and client_class != "org.apache.hadoop.hive.metastore.HiveMetaStoreClient":
            raise CatalogError(f"Hive catalog option 'metastore.client.class' = '{client_class}' is not supported")
        self.conf = hive_conf(self.options)
        warehouse = warehouse or self.options.get("warehouse") or self.conf.get("hive.metastore.warehouse.dir")
        if not warehouse:
            raise CatalogError("A Hive catalog needs a warehouse: the 'warehouse' option or "
                               "hive.metastore.warehouse.dir in hive-site.xml")
        self.warehouse = normalize_path(warehouse)
        table_type = self.options.get(OPT_TABLE_TYPE, "managed").lower()
        if table_type not in ("managed", "external"):
            raise CatalogError(f"Option '{OPT_TABLE_TYPE}' must be 'managed' or 'external', not '{table_type}'")
        self.external = table_type == "external"
        self.sync_all = _flag(self.options, OPT_SYNC_ALL)
        self.format_tables = _flag(self.options, OPT_FORMAT_TABLE)
        self.uri = self.conf.get("hive.metastore.uris", "")
        self.client = MetastoreClient(self.uri)
        self.types = self.client.types
        self._locations: dict[str, str] = {}  # table location -> (db, table), for the lock
        if filesystem is None:
            filesystem = filesystem_from_options(self.warehouse, self.options)
        self._open_warehouse(filesystem, None)
        object_store = urlparse(self.warehouse).scheme.lower() not in ("", "file", "hdfs", "viewfs", "memory")
        lock = commit_lock_from_options(self.client, self.options, object_store, self._table_of_path)
        if lock is not None:
            self.file_io.lock = lock
            self.file_io.lock_configured = True
        self.lock = self.file_io.lock

    # ------------------------------------------------------------------ plumbing
    def close(self) -> None:
        self.client.close()

    def _table_of_path(self, path: str) -> tuple[str, str] | None:
        """(database, table) of a path inside a table directory, for the lock."""
        for location, table in self._locations.items():
            if path == location or path.startswith(location + "/"):
                return table
        return table_of_warehouse_path(self.warehouse, path)

    def _hms_table(self, db: str, name: str):
        """The metastore's entry of ``db.name``, or None."""
        try:
            return self.client.call("get_table", db, name)
        except HiveMetastoreError as e:
            if e.kind == NOT_FOUND:
                return None
            raise

    # ------------------------------------------------------------------ databases
    def _database(self, name: str):
        check_name("database", name)
        try:
            return self.client.call("get_database", name)
        except HiveMetastoreError as e:
            if e.kind == NOT_FOUND:
                raise DatabaseNotExistError(name) from None
            raise

    def database_path(self, name: str) -> str:
        """The database's location in the metastore."""
        db = self._database(name)
        return normalize_path(db.locationUri) if db.locationUri else self._warehouse_database_path(name)

    def database_exists(self, name: str) -> bool:
        try:
            self._database(name)
        except DatabaseNotExistError:
            return False
        return True

    def list_databases(self) -> list[str]:
        return sorted(self.client.call("get_all_databases"))

    def database_properties(self, name: str) -> dict[str, str]:
        """The database's parameters with ``location`` and ``comment``, as Java reports them."""
        db = self._database(name)
        props = dict(db.parameters or {})
        if db.locationUri:
            props["location"] = db.locationUri
        if db.description is not None:
            props["comment"] = db.description
        return props

    def create_database(self, name: str, ignore_if_exists: bool = False,
                        properties: Mapping[str, str] | None = None) -> None:
        if not self._is_new_database(name, ignore_if_exists):
            return
        params = {str(k): str(v) for k, v in (properties or {}).items()}
        comment = params.pop("comment", None)
        location = normalize_path(params.pop("location", None) or self._warehouse_database_path(name))
        self.file_io.mkdirs(location)
        db = self.types.Database(name=name, description=comment, locationUri=location, parameters=params)
        try:
            self.client.call("create_database", db)
        except HiveMetastoreError as e:
            if e.kind != ALREADY_EXISTS:
                raise
            if not ignore_if_exists:
                raise DatabaseAlreadyExistError(name) from None

    def drop_database(self, name: str, ignore_if_not_exists: bool = False, cascade: bool = False) -> None:
        """Drop a database; with ``cascade`` its tables (files included) go too."""
        if not self.database_exists(name):
            if ignore_if_not_exists:
                return
            raise DatabaseNotExistError(name)
        names = self.client.call("get_all_tables", name)
        if names and not cascade:
            raise DatabaseNotEmptyError(name)
        for table in self.list_tables(name):
            self.drop_table(f"{name}.{table}", ignore_if_not_exists=True)
        location = self.database_path(name)
        self.client.call("drop_database", name, True, True)
        if self.file_io.exists(location) and not self.file_io.list_dir(location):
            self.file_io.delete_dir(location)

    # ------------------------------------------------------------------ tables
    def _location(self, db: str, name: str, hms=None) -> str:
        hms = hms if hms is not None else self._hms_table(db, name)
        if hms is not None and hms.sd is not None and hms.sd.location:
            location = normalize_path(hms.sd.location)
        else:
            location = join(self.database_path(db), name)
        self._locations[location] = (db, name)
        return location

    def list_tables(self, database: str) -> list[str]:
        """The Paimon tables of ``database`` (other Hive tables are left out, as Java does)."""
        if not self.database_exists(database):
            raise DatabaseNotExistError(database)
        names = self.client.call("get_all_tables", database)
        if not names:
            return []
        out = []
        for t in self.client.call("get_table_objects_by_name", database, names):
            if is_paimon_table(t):
                if SchemaManager(self.file_io, self._location(database, t.tableName, t)).list_ids():
                    out.append(t.tableName)
            elif self.format_tables:
                try:
                    HiveFormatTable(self.file_io, t)
                except CatalogError:
                    continue
                out.append(t.tableName)
        return sorted(out)

    def table_exists(self, identifier: str) -> bool:
        db, name = split_identifier(identifier)
        hms = self._hms_table(db, name)
        return hms is not None and is_paimon_table(hms) and bool(
            SchemaManager(self.file_io, self._location(db, name, hms)).list_ids())

    def _hms_columns(self, schema: TableSchema, partitioned: bool):
        F = self.types.FieldSchema
        parts = set(schema.partition_keys) if partitioned else set()
        cols = [F(name=f.name, type=hive_type(f.type), comment=f.description) for f in schema.fields
                if f.name not in parts]
        by_name = {f.name: f for f in schema.fields}
        keys = [F(name=k, type=hive_type(by_name[k].type), comment=by_name[k].description)
                for k in schema.partition_keys] if partitioned else []
        return cols, keys

    def _parameters(self, schema: TableSchema) -> dict[str, str]:
        """What Java copies of a schema into the table parameters."""
        if self.sync_all:
            params = dict(schema.options)
            if schema.primary_keys:
                params["primary-key"] = ",".join(schema.primary_keys)
            if schema.partition_keys:
                params["partition"] = ",".join(schema.partition_keys)
            bucket_key = schema.options.get("bucket-key")
            if bucket_key:
                params["bucket-key"] = bucket_key
            return params
        return {k[len(HIVE_PREFIX):]: v for k, v in schema.options.items() if k.startswith(HIVE_PREFIX)}

    def _update_hms_table(self, hms, schema: TableSchema, location: str) -> None:
        """Java's ``updateHmsTable``: formats, SerDe, columns, partition keys, comment, location."""
        t = self.types
        sd = hms.sd or t.StorageDescriptor()
        sd.inputFormat, sd.outputFormat = INPUT_FORMAT, OUTPUT_FORMAT
        sd.serdeInfo = sd.serdeInfo or t.SerDeInfo()
        sd.serdeInfo.parameters = {}
        sd.serdeInfo.serializationLib = SERDE
        partitioned = _flag(schema.options, OPT_PARTITIONED) and bool(schema.partition_keys)
        if not partitioned and schema.options.get("metastore.tag-to-partition"):
            raise CatalogError("Option 'metastore.tag-to-partition' is not supported by paimon-lab's Hive catalog")
        sd.cols, keys = self._hms_columns(schema, partitioned)
        if partitioned:
            hms.partitionKeys = keys
        sd.location = location
        hms.sd = sd
        if schema.comment is not None:
            hms.parameters["comment"] = schema.comment

    def _new_hms_table(self, db: str, name: str, schema: TableSchema, location: str):
        now = int(time.time())
        params = self._parameters(schema)
        params[TABLE_TYPE_PROP] = "PAIMON"
        params[STORAGE_HANDLER_PROP] = STORAGE_HANDLER
        if self.external:
            params["EXTERNAL"] = "TRUE"
        hms = self.types.Table(tableName=name, dbName=db, owner=getpass.getuser(), createTime=now,
                               lastAccessTime=now, retention=2**31 - 1, partitionKeys=[], parameters=params,
                               tableType="EXTERNAL_TABLE" if self.external else "MANAGED_TABLE")
        self._update_hms_table(hms, schema, location)
        return hms

    def create_table(self, identifier: str, schema: "pa.Schema | TableSchema | None" = None, *,
                     fields: "Sequence[T.DataField] | None" = None, primary_keys: Sequence[str] = (),
                     partition_keys: Sequence[str] = (), options: dict[str, Any] | None = None,
                     comment: str | None = None, ignore_if_exists: bool = False) -> Table:
        """Create a table and register it in the metastore; returns it (arguments as
        :meth:`Catalog.create_table`)."""
        db, name = split_identifier(identifier)
        check_new_table_name(name)
        full = f"{db}.{name}"
        if not self.database_exists(db):
            raise DatabaseNotExistError(db)
        if self._hms_table(db, name) is not None:
            if ignore_if_exists and self.table_exists(full):
                return self.get_table(full)
            raise TableAlreadyExistError(full)
        table_schema = table_schema_for(schema, fields=fields, primary_keys=primary_keys,
                                        partition_keys=partition_keys, options=options, comment=comment)
        for f in table_schema.fields:
            hive_type(f.type)  # refuse a type Hive cannot name before anything is written
        path = join(self.database_path(db), name)
        self._locations[path] = (db, name)  # schema-0 is created under the table's lock
        manager = SchemaManager(self.file_io, path)
        if manager.list_ids() or not manager.create(table_schema):
            raise CatalogError(f"Cannot create table '{full}': {path} already holds a Paimon table that the "
                               "metastore does not know; delete the directory or register it from Java "
                               "(repairTable)")
        try:
            self.client.call("create_table", self._new_hms_table(db, name, table_schema, path))
        except BaseException as e:
            self.file_io.delete_dir(path)
            if isinstance(e, HiveMetastoreError) and e.kind == ALREADY_EXISTS:
                raise TableAlreadyExistError(full) from None
            raise
        return self.get_table(full)

    def get_table(self, identifier: str) -> "Table | HiveFormatTable":
        """Load ``db.table`` (or ``db.table$branch_NAME``) registered in the metastore. With
        ``format-table.enabled = true`` a Hive Parquet/ORC/text table comes back as a read-only
        :class:`~paimon_lab.catalog.hive_format.HiveFormatTable` (read it with SQL)."""
        identifier, branch = split_branch(identifier)
        db, name = split_identifier(identifier)
        full = f"{db}.{name}"
        hms = self._hms_table(db, name)
        if hms is None:
            raise TableNotExistError(full)
        if not is_paimon_table(hms):
            if self.format_tables and branch == "main":
                return HiveFormatTable(self.file_io, hms)
            fmt = (hms.sd.inputFormat if hms.sd else None) or hms.tableType
            raise CatalogError(f"Table '{full}' is a Hive table ({fmt}), not a Paimon table; set the catalog "
                               f"option '{OPT_FORMAT_TABLE}' = 'true' to read Parquet, ORC and text tables "
                               "as format tables")
        path = self._location(db, name, hms)
        if branch == "main" and not SchemaManager(self.file_io, path).list_ids():
            raise CatalogError(f"Table '{full}' is registered in the Hive metastore but {path} holds no "
                               "Paimon schema")
        table = Table(self.file_io, path, full, branch)
        if branch == "main":
            table.store.metastore = HiveTableSync(self, db, name)
        return table

    def system_table(self, identifier: str, **kwargs: Any) -> pa.Table:
        """A table's system table: ``db.t$snapshots``, ``db.t$branch_b$files``."""
        table_id, name = parse_system_identifier(identifier)
        if table_id is None or name is None:
            raise CatalogError(f"'{identifier}' names no table system table of the Hive catalog")
        return self.get_table(table_id).system(name, **kwargs)

    def drop_table(self, identifier: str, ignore_if_not_exists: bool = False) -> None:
        """Drop the metastore entry and (unless the catalog is ``table.type = external``) the files."""
        db, name = split_identifier(identifier)
        if not self.table_exists(f"{db}.{name}"):
            if ignore_if_not_exists:
                return
            raise TableNotExistError(f"{db}.{name}")
        path = self._location(db, name)
        self.client.call("drop_table", db, name, not self.external)
        if not self.external and self.file_io.exists(path):
            self.file_io.delete_dir(path)

    def rename_table(self, identifier: str, new_identifier: str) -> None:
        """Rename in the metastore; the table directory moves with it (as Java does)."""
        db, name = split_identifier(identifier)
        ndb, nname = split_identifier(new_identifier)
        check_new_table_name(nname)
        if not self.table_exists(f"{db}.{name}"):
            raise TableNotExistError(f"{db}.{name}")
        if not self.database_exists(ndb):
            raise DatabaseNotExistError(ndb)
        if self._hms_table(ndb, nname) is not None:
            raise TableAlreadyExistError(f"{ndb}.{nname}")
        hms = self._hms_table(db, name)
        src, dst = self._location(db, name, hms), join(self.database_path(ndb), nname)
        if self.file_io.exists(dst):
            raise CatalogError(f"Cannot rename table '{db}.{name}' to '{ndb}.{nname}': {dst} exists")
        hms.dbName, hms.tableName = ndb, nname
        self.client.call("alter_table", db, name, hms)
        if SchemaManager(self.file_io, src).list_ids():  # the metastore did not move the directory
            self.file_io.fs.move(self.file_io.arrow_path(src), self.file_io.arrow_path(dst))
        hms.sd.location = dst
        self.client.call("alter_table", ndb, nname, hms)
        self._locations.pop(src, None)

    # ------------------------------------------------------------------ views
    def _hms_view(self, db: str, name: str):
        hms = self._hms_table(db, name)
        return hms if hms is not None and (hms.tableType or "").upper() == VIRTUAL_VIEW else None

    def _view_entry(self, db: str, name: str, view: View, parameters: dict[str, str] | None = None):
        """A ``VIRTUAL_VIEW`` entry as Java Paimon writes one: the query as its original and
        expanded text, the result columns in Hive types, the options (and comment) as parameters."""
        t = self.types
        params = dict(parameters or {})
        params.update(view.options)
        if view.comment is not None:
            params["comment"] = view.comment
        sd = t.StorageDescriptor(cols=[t.FieldSchema(name=f.name, type=hive_type(f.type), comment=f.description)
                                       for f in view.fields],
                                 serdeInfo=t.SerDeInfo(parameters={}), parameters={}, bucketCols=[], sortCols=[])
        return t.Table(tableName=name, dbName=db, owner=getpass.getuser(), createTime=int(time.time()),
                       partitionKeys=[], parameters=params, viewOriginalText=view.query,
                       viewExpandedText=view.query, tableType=VIRTUAL_VIEW, sd=sd)

    def view_exists(self, identifier: str) -> bool:
        db, name = split_identifier(identifier)
        return self._hms_view(db, name) is not None

    def get_view(self, identifier: str) -> View:
        db, name = split_identifier(identifier)
        hms = self._hms_view(db, name)
        if hms is None:
            raise ViewNotExistError(f"{db}.{name}")
        options = {k: v for k, v in (hms.parameters or {}).items() if k != "transient_lastDdlTime"}
        comment = options.pop("comment", None)
        fields = tuple(T.DataField(i, c.name, paimon_type(c.type), c.comment) for i, c in enumerate(hms.sd.cols))
        return View(f"{db}.{name}", hms.viewExpandedText or hms.viewOriginalText or "", fields, comment, {},
                    options)

    def create_view(self, identifier: str, query: str, schema: pa.Schema, comment: str | None = None, *,
                    dialects: Mapping[str, str] | None = None, options: Mapping[str, str] | None = None,
                    ignore_if_exists: bool = False) -> View:
        """Store a view in the metastore (a ``VIRTUAL_VIEW`` table, as Java Paimon stores it)."""
        db, name = split_identifier(identifier)
        full = f"{db}.{name}"
        view = checked_view("create", full, query, schema, comment, None, options)
        if dialects:
            raise CatalogError(f"Cannot create view '{full}': a Hive view has one query, not dialects")
        if not self.database_exists(db):
            raise DatabaseNotExistError(db)
        existing = self._hms_table(db, name)
        if existing is not None:
            if (existing.tableType or "").upper() != VIRTUAL_VIEW:
                raise ViewAlreadyExistError(full, "a table with that name exists")
            if ignore_if_exists:
                return self.get_view(full)
            raise ViewAlreadyExistError(full)
        try:
            self.client.call("create_table", self._view_entry(db, name, view))
        except HiveMetastoreError as e:
            if e.kind != ALREADY_EXISTS:
                raise
            if ignore_if_exists:
                return self.get_view(full)
            raise ViewAlreadyExistError(full) from None
        return view

    def alter_view(self, identifier: str, query: str, schema: pa.Schema, comment: str | None = None, *,
                   dialects: Mapping[str, str] | None = None, options: Mapping[str, str] | None = None) -> View:
        """Replace the definition (query and result schema) of an existing view."""
        db, name = split_identifier(identifier)
        full = f"{db}.{name}"
        view = checked_view("alter", full, query, schema, comment, None, options)
        if dialects:
            raise CatalogError(f"Cannot alter view '{full}': a Hive view has one query, not dialects")
        if self._hms_view(db, name) is None:
            raise ViewNotExistError(full)
        self.client.call("alter_table", db, name, self._view_entry(db, name, view))
        return view

    def drop_view(self, identifier: str, ignore_if_not_exists: bool = False) -> None:
        db, name = split_identifier(identifier)
        if self._hms_view(db, name) is None:
            if ignore_if_not_exists:
                return
            raise ViewNotExistError(f"{db}.{name}")
        self.client.call("drop_table", db, name, False)

    def rename_view(self, identifier: str, new_identifier: str) -> None:
        db, name = split_identifier(identifier)
        ndb, nname = split_identifier(new_identifier)
        hms = self._hms_view(db, name)
        if hms is None:
            raise ViewNotExistError(f"{db}.{name}")
        if not self.database_exists(ndb):
            raise DatabaseNotExistError(ndb)
        if self._hms_table(ndb, nname) is not None:
            raise ViewAlreadyExistError(f"{ndb}.{nname}")
        hms.dbName, hms.tableName = ndb, nname
        self.client.call("alter_table", db, name, hms)

    def list_views(self, database: str) -> list[str]:
        if not self.database_exists(database):
            raise DatabaseNotExistError(database)
        names = self.client.call("get_all_tables", database)
        return sorted(t.tableName for t in self.client.call("get_table_objects_by_name", database, names or [])
                      if (t.tableType or "").upper() == VIRTUAL_VIEW)

    def __repr__(self) -> str:
        return f"HiveCatalog({self.uri!r}, {self.warehouse!r})"


class HiveTableSync(MetastoreSync):
    """Keeps one table's metastore entry in step: columns and parameters after a schema change,
    partitions after a commit (``metastore.partitioned-table = true``)."""

    def __init__(self, catalog: HiveCatalog, database: str, table: str):
        self.catalog, self.database, self.table = catalog, database, table

    def schema_changed(self, store, schema: TableSchema) -> None:
        c = self.catalog
        hms = c._hms_table(self.database, self.table)
        if hms is None:
            raise TableNotExistError(f"{self.database}.{self.table}")
        hms.parameters.update(c._parameters(schema))
        c._update_hms_table(hms, schema, store.path)
        c.client.call("alter_table_with_cascade", self.database, self.table, hms,
                      _flag(c.options, "alter-table-cascade", True))

    def _values(self, store, partition: bytes) -> list[str]:
        codec = store.partition_codec
        default = store.schema.options.get("partition.default-name", DEFAULT_PARTITION_NAME)
        return [value_to_partition_string(v, f, default) for v, f in zip(codec.from_bytes(partition), codec.fields)]

    def mark_done(self, store, spec: dict[str, str], action: str) -> None:
        c = self.catalog
        if action == "mark-event":
            try:
                c.client.call("markPartitionForEvent", self.database, self.table, dict(spec), 1)   # LOAD_DONE
            except HiveMetastoreError as e:
                if e.kind != NOT_FOUND:
                    raise
            return
        if not _flag(store.schema.options, OPT_PARTITIONED):
            raise OptionError(f"'partition.mark-done-action' = 'done-partition' needs '{OPT_PARTITIONED}' = 'true'")
        done = {**spec}
        last = list(done)[-1]
        done[last] += ".done"
        try:
            c.client.call("get_partition", self.database, self.table, list(done.values()))
            return   # already there
        except HiveMetastoreError as e:
            if e.kind != NOT_FOUND:
                raise
        hms = c._hms_table(self.database, self.table)
        if hms is None:
            raise TableNotExistError(f"{self.database}.{self.table}")
        sd = c.types.StorageDescriptor(**vars(hms.sd))
        sd.location = hms.sd.location + "/" + "/".join(
            f"{escape_path_name(k)}={escape_path_name(v)}" for k, v in done.items()) + "/"
        now = int(time.time())
        c.client.call("add_partition", c.types.Partition(
            values=list(done.values()), dbName=self.database, tableName=self.table, createTime=now,
            lastAccessTime=now, sd=sd, parameters={}))

    def committed(self, store, added: Collection[bytes], removed: bool) -> None:
        schema = store.schema
        if not (_flag(schema.options, OPT_PARTITIONED) and schema.partition_keys):
            return
        c, t = self.catalog, self.catalog.types
        if removed:
            snap = store.snapshot_manager.latest()
            live = {e.partition for e in FileStoreScan(store).live_entries(snap)} if snap else set()
            wanted = {store.partition_codec.path(store.partition_codec.from_bytes(p)): p for p in live}
            present = set(c.client.call("get_partition_names", self.database, self.table, -1))
            # 'done-partition' marks are not data partitions (Java never drops them on a commit)
            for name in sorted(n for n in present - set(wanted) if not n.endswith(".done")):
                try:
                    c.client.call("drop_partition_by_name", self.database, self.table, name, False)
                except HiveMetastoreError as e:
                    if e.kind != NOT_FOUND:
                        raise
            added = [wanted[n] for n in wanted if n not in present]
        if not added:
            return
        hms = c._hms_table(self.database, self.table)
        if hms is None:
            raise TableNotExistError(f"{self.database}.{self.table}")
        now = int(time.time())
        parts = []
        for p in set(added):
            sd = t.StorageDescriptor(**vars(hms.sd))
            sd.location = hms.sd.location + "/" + store.partition_codec.path(store.partition_codec.from_bytes(p)) + "/"
            parts.append(t.Partition(values=self._values(store, p), dbName=self.database, tableName=self.table,
                                     createTime=now, lastAccessTime=now, sd=sd, parameters={}))
        c.client.call("add_partitions_req", t.AddPartitionsRequest(
            dbName=self.database, tblName=self.table, parts=parts, ifNotExists=True, needResult=False))


__all__ = ["HiveCatalog", "HiveTableSync", "hive_type", "is_paimon_table"]
