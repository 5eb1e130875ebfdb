"""Table schemas and the ``schema/schema-N`` files that store them."""

from __future__ import annotations

import json
import time
from dataclasses import dataclass, field, replace
from typing import Sequence

import pyarrow as pa

from paimon_lab.core import types as T
from paimon_lab.core.bucket_function import check_bucket_function
from paimon_lab.errors import CorruptFileError, OptionError, SchemaError
from paimon_lab.io.file_io import FileIO, join
from paimon_lab.core.options import CoreOptions, registry_entry, validate_options
from paimon_lab.core.schema_validation import validate_table_schema
from paimon_lab.utils import html as H

SCHEMA_VERSION = 3


@dataclass(frozen=True)
class TableSchema:
    """One version of a table's schema, as stored in ``schema/schema-{id}``."""

    id: int
    fields: tuple[T.DataField, ...]
    highest_field_id: int
    partition_keys: tuple[str, ...] = ()
    primary_keys: tuple[str, ...] = ()
    options: dict[str, str] = field(default_factory=dict)
    comment: str | None = None
    time_millis: int = 0
    version: int = SCHEMA_VERSION

    # ---------------------------------------------------------------- derived views
    @property
    def field_names(self) -> list[str]:
        return [f.name for f in self.fields]

    def field(self, name: str) -> T.DataField:
        for f in self.fields:
            if f.name == name:
                return f
        raise SchemaError(f"Column '{name}' does not exist; columns are {self.field_names}")

    def fields_of(self, names: Sequence[str]) -> list[T.DataField]:
        return [self.field(n) for n in names]

    @property
    def partition_fields(self) -> list[T.DataField]:
        return self.fields_of(self.partition_keys)

    @property
    def core(self) -> CoreOptions:
        return CoreOptions(self.options, primary_keys=bool(self.primary_keys))

    @property
    def bucket_keys(self) -> list[str]:
        explicit = self.core.bucket_key
        if explicit:
            return explicit
        return [k for k in self.primary_keys if k not in self.partition_keys]

    @property
    def trimmed_primary_keys(self) -> list[str]:
        return [k for k in self.primary_keys if k not in self.partition_keys]

    def arrow_schema(self, columns: Sequence[str] | None = None) -> pa.Schema:
        """The table's Arrow schema, or the schema of ``columns`` (in that order)."""
        cached = self.__dict__.get("_arrow_schema")  # built once: reads ask for it per file and column
        if cached is None:
            cached = T.arrow_schema(self.fields)
            object.__setattr__(self, "_arrow_schema", cached)
        return cached if columns is None else pa.schema([cached.field(c) for c in columns])

    # ---------------------------------------------------------------- display
    def __repr__(self) -> str:
        cols = ", ".join(f"{f.name} {f.type}" for f in self.fields)
        keys = "".join(f", {label}={list(v)}" for label, v in (("primary_keys", self.primary_keys),
                                                              ("partition_keys", self.partition_keys)) if v)
        return f"TableSchema(id={self.id}, [{cols}]{keys}, {len(self.options)} options)"

    def _repr_html_(self) -> str:
        return H.box(H.title(f"Schema {self.id}", self.comment or ""), self.fields_html(),
                     H.details(f"options ({len(self.options)})", H.options_block(self.options)))

    def fields_html(self) -> str:
        """The columns as an HTML table: field id, name, type, key role and comment."""
        def role(name: str) -> str:
            return ", ".join(r for r, keys in (("primary key", self.primary_keys),
                                               ("partition key", self.partition_keys)) if name in keys)
        return H.table(["id", "name", "type", "key", "comment"],
                       [(f.id, f.name, f.type, role(f.name), f.description or "") for f in self.fields])

    # ---------------------------------------------------------------- JSON
    def to_json(self) -> str:
        obj = {
            "version": self.version,
            "id": self.id,
            "fields": [f.to_json() for f in self.fields],
            "highestFieldId": self.highest_field_id,
            "partitionKeys": list(self.partition_keys),
            "primaryKeys": list(self.primary_keys),
            "options": dict(self.options),
        }
        if self.comment is not None:
            obj["comment"] = self.comment
        obj["timeMillis"] = self.time_millis
        return json.dumps(obj, indent=2, ensure_ascii=False)

    @staticmethod
    def from_json(text: str, source: str = "schema") -> "TableSchema":
        try:
            obj = json.loads(text)
            fields = tuple(T.DataField.from_json(f) for f in obj["fields"])
            return TableSchema(
                id=int(obj["id"]),
                fields=fields,
                highest_field_id=int(obj.get("highestFieldId", T.max_field_id(fields))),
                partition_keys=tuple(obj.get("partitionKeys", [])),
                primary_keys=tuple(obj.get("primaryKeys", [])),
                options={str(k): str(v) for k, v in obj.get("options", {}).items()},
                comment=obj.get("comment"),
                time_millis=int(obj.get("timeMillis", 0)),
                version=int(obj.get("version", 1)),
            )
        except (ValueError, KeyError, TypeError, AttributeError) as e:
            raise CorruptFileError(f"{source} is not a valid Paimon schema file: {e}") from None


def new_schema(
    arrow_schema: pa.Schema,
    *,
    partition_keys: Sequence[str] = (),
    primary_keys: Sequence[str] = (),
    options: dict | None = None,
    comment: str | None = None,
) -> TableSchema:
    """Build and validate schema 0 of a new table from an Arrow schema."""
    if not isinstance(arrow_schema, pa.Schema):
        raise SchemaError(f"A table schema must be a pyarrow.Schema, got {type(arrow_schema).__name__}")
    names = arrow_schema.names
    if len(set(names)) != len(names):
        dup = sorted({n for n in names if names.count(n) > 1})
        raise SchemaError(f"Duplicate column names: {dup}")
    if not names:
        raise SchemaError("A table needs at least one column")
    fields = T.fields_from_arrow(arrow_schema)
    for kind, keys in (("Partition key", partition_keys), ("Primary key", primary_keys)):
        for k in keys:
            if k not in names:
                raise SchemaError(f"{kind} '{k}' is not a column; columns are {names}")
        if len(set(keys)) != len(keys):
            raise SchemaError(f"{kind}s repeat a column: {list(keys)}")
    # Primary key columns can never be null.
    fields = [replace(f, type=f.type.copy(False)) if f.name in primary_keys else f for f in fields]
    for f in fields:
        if f.name in partition_keys and f.type.is_nested:
            raise SchemaError(f"Partition key '{f.name}' has nested type {f.type}")
    opts = validate_options(options or {})
    schema = TableSchema(
        id=0,
        fields=tuple(fields),
        highest_field_id=T.max_field_id(fields),
        partition_keys=tuple(partition_keys),
        primary_keys=tuple(primary_keys),
        options=opts,
        comment=comment,
        time_millis=int(time.time() * 1000),
    )
    _validate(schema)
    return schema


_DEFAULT_PREFIX, _DEFAULT_SUFFIX = "fields.", ".default-value"


def field_default_values(schema: TableSchema) -> dict[str, pa.Scalar]:
    """``fields.<f>.default-value`` options as Arrow scalars of their columns' types (Java 0.9-1.1:
    a read returns the default where the column is NULL, including files written before the
    column was added)."""
    texts = {k[len(_DEFAULT_PREFIX):-len(_DEFAULT_SUFFIX)]: v for k, v in schema.options.items()
             if k.startswith(_DEFAULT_PREFIX) and k.endswith(_DEFAULT_SUFFIX)}
    out = {}
    for name, text in texts.items():
        if name not in schema.field_names:
            raise OptionError(f"'fields.{name}.default-value': '{name}' is not a column")
        if name in schema.partition_keys or name in schema.primary_keys:
            raise OptionError(f"'fields.{name}.default-value': partition and primary key columns take no default")
        arrow_type = schema.field(name).type.to_arrow()
        if pa.types.is_nested(arrow_type):
            raise OptionError(f"'fields.{name}.default-value': a {schema.field(name).type} column takes no default")
        try:
            out[name] = pa.scalar(text).cast(arrow_type)
        except (pa.ArrowInvalid, pa.ArrowNotImplementedError) as e:
            raise OptionError(f"'fields.{name}.default-value' = '{text}' is not a {schema.field(name).type}: {e}") from None
    return out


def _validate(schema: TableSchema) -> None:
    _validate_buckets(schema)
    validate_table_schema(schema)
    field_default_values(schema)
    function = schema.core.get("bucket-function.type")
    if function != "default" and schema.core.bucket > 0:
        keys = schema.bucket_keys
        check_bucket_function(function, keys, [f.type for f in schema.fields_of(keys)])


def with_dynamic_options(schema: TableSchema, dynamic: dict[str, str | None]) -> TableSchema:
    """``schema`` with ``dynamic`` options (an OPTIONS hint, a stream's start) over its own (None
    removes one), checked as Java's ``FileStoreTable.copy`` checks them: no option fixed at creation
    and not the bucket count changes, and the merged options pass the schema validation (so
    ``'scan.mode' = 'latest'`` with ``'scan.snapshot-id'``, or ``fields.<not a column>.*``, is refused)."""
    if not dynamic:
        return schema
    options = dict(schema.options)
    for key, value in dynamic.items():
        if value is not None:
            value = str(value)
            if registry_entry(key) is not None:   # unknown keys pass, as in Java
                validate_options({key: value})  # refused options raise (accepted they would be ignored); values parse
        if options.get(key) != value:       # a removal is a change too
            if key in _IMMUTABLE:
                raise OptionError(f"Option '{key}' cannot be changed by dynamic options: it is fixed when the "
                                  "table is created")
            if key == "bucket":
                raise OptionError("Option 'bucket' cannot be changed by dynamic options (rescale the table's "
                                  "buckets with ALTER TABLE and a compaction)")
        if value is None:
            options.pop(key, None)
        else:
            options[key] = value
    merged = replace(schema, options=options)
    _validate(merged)
    return merged


POSTPONE_BUCKET = -2


def is_postpone(schema: TableSchema) -> bool:
    """A postpone-bucket table (``'bucket' = -2``, Paimon 1.1+): new rows wait unmerged in the
    partition's ``bucket-postpone`` directory until a compaction gives them real buckets."""
    return schema.core.bucket == POSTPONE_BUCKET and bool(schema.primary_keys)


def check_bucket_mode(schema: TableSchema) -> None:
    """Refuse a bucket mode paimon-lab cannot honour: postpone buckets without a primary key (as
    Java) or with partition keys outside it (a key would move between partitions)."""
    if schema.core.bucket != POSTPONE_BUCKET:
        return
    if not schema.primary_keys:
        raise OptionError("'bucket' = -2 (postpone bucket) needs a primary key; an append table takes -1 "
                          "or a positive bucket count")
    missing = [k for k in schema.partition_keys if k not in schema.primary_keys]
    if missing:
        raise OptionError(f"A postpone-bucket table ('bucket' = -2) needs the partition keys in its primary key "
                          f"{list(schema.primary_keys)}; missing {missing}")


def _validate_buckets(schema: TableSchema) -> None:
    core = schema.core
    bucket = core.bucket
    check_bucket_mode(schema)
    if bucket == 0 or bucket < -2:
        raise SchemaError(f"'bucket' must be -1 (dynamic/unaware) or a positive number, got {bucket}")
    for k in core.bucket_key:
        if k not in schema.field_names:
            raise SchemaError(f"bucket-key '{k}' is not a column; columns are {schema.field_names}")
        if k in schema.partition_keys:
            raise SchemaError(f"bucket-key '{k}' must not be a partition key")
        if schema.primary_keys and k not in schema.primary_keys:
            raise SchemaError(f"bucket-key '{k}' must be part of the primary key {list(schema.primary_keys)}")
    if bucket > 0 and not schema.primary_keys and not core.bucket_key:
        raise SchemaError("An append table with a fixed 'bucket' needs a 'bucket-key' option")
    if bucket > 0 and schema.primary_keys:  # (postpone: check_bucket_mode)
        missing = [k for k in schema.partition_keys if k not in schema.primary_keys]
        if missing:
            raise SchemaError(
                f"With a fixed bucket, the primary key {list(schema.primary_keys)} must contain "
                f"the partition keys; missing {missing}")
    if schema.primary_keys and set(schema.primary_keys) <= set(schema.partition_keys):
        raise SchemaError("The primary key must contain at least one column that is not a partition key")


class SchemaManager:
    """Reads and writes ``schema/schema-N`` under a table path."""

    def __init__(self, file_io: FileIO, table_path: str):
        self.io = file_io
        self.dir = join(table_path, "schema")

    def path(self, schema_id: int) -> str:
        return join(self.dir, f"schema-{schema_id}")

    def list_ids(self) -> list[int]:
        ids = []
        for name in self.io.list_names(self.dir):
            if name.startswith("schema-") and name[7:].isdigit():
                ids.append(int(name[7:]))
        return sorted(ids)

    def latest(self) -> TableSchema | None:
        ids = self.list_ids()
        return self.schema(ids[-1]) if ids else None

    def schema(self, schema_id: int) -> TableSchema:
        path = self.path(schema_id)
        try:
            text = self.io.read_text(path)
        except FileNotFoundError:
            raise SchemaError(f"Schema {schema_id} does not exist at {path}") from None
        except UnicodeDecodeError:
            raise CorruptFileError(f"{path} is not a valid Paimon schema file") from None
        return TableSchema.from_json(text, path)

    def create(self, schema: TableSchema) -> bool:
        """Write schema-{id} if absent; False if another writer got there first."""
        return self.io.try_create(self.path(schema.id), schema.to_json().encode())


# --------------------------------------------------------------------------- schema evolution

@dataclass(frozen=True)
class SchemaChange:
    """One ALTER TABLE step. Build them with the static methods, apply with ``Table.alter``."""

    kind: str
    name: str | None = None
    value: object = None
    after: str | None = None
    first: bool = False
    comment: str | None = None

    @staticmethod
    def add_column(name: str, data_type, comment: str | None = None, *, first: bool = False,
                   after: str | None = None) -> "SchemaChange":
        dt = T.parse_type(data_type) if isinstance(data_type, str) else (
            T.from_arrow(data_type) if isinstance(data_type, pa.DataType) else data_type)
        return SchemaChange("add", name, dt, after, first, comment)

    @staticmethod
    def drop_column(name: str) -> "SchemaChange":
        return SchemaChange("drop", name)

    @staticmethod
    def rename_column(name: str, new_name: str) -> "SchemaChange":
        return SchemaChange("rename", name, new_name)

    @staticmethod
    def update_column_type(name: str, data_type) -> "SchemaChange":
        dt = T.parse_type(data_type) if isinstance(data_type, str) else (
            T.from_arrow(data_type) if isinstance(data_type, pa.DataType) else data_type)
        return SchemaChange("type", name, dt)

    @staticmethod
    def update_column_comment(name: str, comment: str | None) -> "SchemaChange":
        return SchemaChange("column_comment", name, comment=comment)

    @staticmethod
    def move_column(name: str, *, first: bool = False, after: str | None = None) -> "SchemaChange":
        return SchemaChange("move", name, after=after, first=first)

    @staticmethod
    def set_option(key: str, value) -> "SchemaChange":
        return SchemaChange("set", key, value)

    @staticmethod
    def remove_option(key: str) -> "SchemaChange":
        return SchemaChange("reset", key)

    @staticmethod
    def update_comment(comment: str | None) -> "SchemaChange":
        return SchemaChange("comment", comment=comment)


_INTEGERS = ["TINYINT", "SMALLINT", "INT", "BIGINT"]
# Options a table cannot change after creation.
# Java's @Immutable options (0.9-1.x), and a few whose change would need the files rewritten here
_IMMUTABLE = {"merge-engine", "sequence.field", "primary-key", "partition", "bucket-key", "ignore-delete",
              "partial-update.remove-record-on-delete", "rowkind.field", "force-lookup", "path",
              "data-file.thin-mode", "deletion-vectors.enabled", "changelog-producer.row-deduplicate"}


def is_widening(old: T.DataType, new: T.DataType) -> bool:
    """Type changes old data can be read as without loss: wider integers, FLOAT to DOUBLE,
    longer strings and binaries, more DECIMAL precision at the same scale, more time precision."""
    if old == new.copy(old.nullable):
        return True
    a, b = old.root, new.root
    if a in _INTEGERS and b in _INTEGERS:
        return _INTEGERS.index(a) <= _INTEGERS.index(b)
    if a in _INTEGERS and b in ("FLOAT", "DOUBLE"):
        return (b == "DOUBLE" and a != "BIGINT") or a in ("TINYINT", "SMALLINT")
    if (a, b) == ("FLOAT", "DOUBLE"):
        return True
    if a in _INTEGERS and b == "DECIMAL":
        digits = {"TINYINT": 3, "SMALLINT": 5, "INT": 10, "BIGINT": 19}[a]
        return new.precision - new.scale >= digits
    if a in ("CHAR", "VARCHAR") and b == "VARCHAR" or (a, b) == ("CHAR", "CHAR"):
        return new.length >= old.length
    if a in ("BINARY", "VARBINARY") and b == "VARBINARY":
        return new.length >= old.length
    if a == b == "DECIMAL":
        return new.scale == old.scale and new.precision >= old.precision
    if a == b and a in ("TIMESTAMP", "TIMESTAMP_LTZ", "TIME"):
        return new.precision >= old.precision
    if (a, b) == ("DATE", "TIMESTAMP"):
        return True
    return False


def apply_changes(schema: TableSchema, changes: Sequence[SchemaChange]) -> TableSchema:
    """The next schema version after ``changes``, or a SchemaError naming what is not allowed."""
    fields = list(schema.fields)
    options = dict(schema.options)
    comment = schema.comment
    highest = schema.highest_field_id
    keys = set(schema.partition_keys) | set(schema.primary_keys)

    def index_of(name: str) -> int:
        for i, f in enumerate(fields):
            if f.name == name:
                return i
        raise SchemaError(f"Column '{name}' does not exist; columns are {[f.name for f in fields]}")

    def place(f: T.DataField, first: bool, after: str | None) -> None:
        if first:
            fields.insert(0, f)
        elif after is not None:
            fields.insert(index_of(after) + 1, f)
        else:
            fields.append(f)

    for ch in changes:
        if ch.kind == "add":
            if any(f.name == ch.name for f in fields):
                raise SchemaError(f"Column '{ch.name}' already exists")
            if not ch.value.nullable:
                raise SchemaError(f"Column '{ch.name}' cannot be added as NOT NULL: existing rows have no value")
            counter = iter(range(highest + 1, 1 << 30))
            fid = next(counter)
            dt = T.assign_field_ids(ch.value, counter)
            highest = max(fid, T.max_field_id([T.DataField(fid, ch.name, dt)]))
            place(T.DataField(fid, ch.name, dt, ch.comment), ch.first, ch.after)
        elif ch.kind == "drop":
            if ch.name in keys:
                raise SchemaError(f"Cannot drop '{ch.name}': it is a partition or primary key column")
            fields.pop(index_of(ch.name))
            if not fields:
                raise SchemaError("Cannot drop the last column of a table")
        elif ch.kind == "rename":
            if ch.name in keys:
                raise SchemaError(f"Cannot rename '{ch.name}': it is a partition or primary key column")
            if any(f.name == ch.value for f in fields):
                raise SchemaError(f"Cannot rename '{ch.name}' to '{ch.value}': that column exists")
            i = index_of(ch.name)
            fields[i] = replace(fields[i], name=ch.value)
            renamed = {k: v for k, v in options.items() if k.startswith(f"fields.{ch.name}.")}
            for k, v in renamed.items():
                options.pop(k)
                options[f"fields.{ch.value}." + k[len(f"fields.{ch.name}."):]] = v
        elif ch.kind == "type":
            i = index_of(ch.name)
            old = fields[i].type
            if ch.name in keys:
                raise SchemaError(f"Cannot change the type of '{ch.name}': it is a partition or primary key column")
            if not is_widening(old, ch.value):
                raise SchemaError(f"Cannot change column '{ch.name}' from {old} to {ch.value}: "
                                  "only widening changes keep old data readable")
            if old.nullable and not ch.value.nullable:
                raise SchemaError(f"Cannot make column '{ch.name}' NOT NULL")
            fields[i] = replace(fields[i], type=ch.value)
        elif ch.kind == "column_comment":
            i = index_of(ch.name)
            fields[i] = replace(fields[i], description=ch.comment)
        elif ch.kind == "move":
            f = fields.pop(index_of(ch.name))
            place(f, ch.first, ch.after)
        elif ch.kind in ("set", "reset"):
            if ch.name in _IMMUTABLE:
                raise SchemaError(f"Option '{ch.name}' cannot be changed after the table is created")
            if ch.kind == "set":
                options.update(validate_options({ch.name: ch.value}))
            else:
                options.pop(ch.name, None)
        elif ch.kind == "comment":
            comment = ch.comment
        else:
            raise SchemaError(f"Unknown schema change {ch.kind!r}")
    out = TableSchema(id=schema.id + 1, fields=tuple(fields), highest_field_id=highest,
                      partition_keys=schema.partition_keys, primary_keys=schema.primary_keys,
                      options=options, comment=comment, time_millis=int(time.time() * 1000))
    check_bucket_mode(out)
    if out.core.bucket != schema.core.bucket and (out.core.bucket <= 0) != (schema.core.bucket <= 0):
        raise SchemaError("'bucket' can be rescaled between fixed numbers only, not to or from -1")
    _validate(out)
    return out
