"""Manifests: the Avro files that list a snapshot's data files.

A snapshot points to manifest lists (``manifest-list-*``), each an Avro file of
:class:`ManifestFileMeta` records; each names a manifest (``manifest-*``), an Avro file of
:class:`ManifestEntry` records, each adding or deleting one data file (:class:`DataFileMeta`).
Record layouts, field names and nullability are Paimon's; binary rows (partitions, keys and
statistics) stay as bytes here and are decoded by whoever knows their types.
"""

from __future__ import annotations

import gc
import hashlib
import io
import threading
import uuid
from collections import OrderedDict
from contextlib import contextmanager
from dataclasses import dataclass, field, fields, replace
from datetime import datetime, timezone
from typing import Iterable, Sequence

import fastavro
import numpy as np
import pyarrow as pa

from paimon_lab.core import binary_row
from paimon_lab.errors import CorruptFileError
from paimon_lab.io.disk_cache import ArrowDiskCache
from paimon_lab.io.file_io import FileIO, join
from paimon_lab.utils.clock import local_now

ADD, DELETE = 0, 1
FILE_SOURCE_APPEND, FILE_SOURCE_COMPACT = 0, 1
MANIFEST_VERSION = 2
_NS = "org.apache.paimon.avro.generated"


def _opt(t):
    return ["null", t]


def _stats_schema(name: str) -> dict:
    return {"type": "record", "name": name, "fields": [
        {"name": "_MIN_VALUES", "type": "bytes"},
        {"name": "_MAX_VALUES", "type": "bytes"},
        {"name": "_NULL_COUNTS", "type": _opt({"type": "array", "items": _opt("long")}), "default": None},
    ]}


_STRINGS = {"type": "array", "items": "string"}
DATA_FILE_FIELDS = [
    {"name": "_FILE_NAME", "type": "string"},
    {"name": "_FILE_SIZE", "type": "long"},
    {"name": "_ROW_COUNT", "type": "long"},
    {"name": "_MIN_KEY", "type": "bytes"},
    {"name": "_MAX_KEY", "type": "bytes"},
    {"name": "_KEY_STATS", "type": _stats_schema("record__FILE__KEY_STATS")},
    {"name": "_VALUE_STATS", "type": _stats_schema("record__FILE__VALUE_STATS")},
    {"name": "_MIN_SEQUENCE_NUMBER", "type": "long"},
    {"name": "_MAX_SEQUENCE_NUMBER", "type": "long"},
    {"name": "_SCHEMA_ID", "type": "long"},
    {"name": "_LEVEL", "type": "int"},
    {"name": "_EXTRA_FILES", "type": _STRINGS},
    {"name": "_CREATION_TIME", "type": _opt({"type": "long", "logicalType": "timestamp-millis"}), "default": None},
    {"name": "_DELETE_ROW_COUNT", "type": _opt("long"), "default": None},
    {"name": "_EMBEDDED_FILE_INDEX", "type": _opt("bytes"), "default": None},
    {"name": "_FILE_SOURCE", "type": _opt("int"), "default": None},
    {"name": "_VALUE_STATS_COLS", "type": _opt(_STRINGS), "default": None},
    {"name": "_EXTERNAL_PATH", "type": _opt("string"), "default": None},
    {"name": "_FIRST_ROW_ID", "type": _opt("long"), "default": None},
    {"name": "_WRITE_COLS", "type": _opt(_STRINGS), "default": None},
    # per column of _WRITE_COLS, its highest sequence number (Paimon after 2.0; no release writes it yet)
    {"name": "_WRITE_COLS_SEQUENCES", "type": _opt({"type": "array", "items": "long"}), "default": None},
]
MANIFEST_ENTRY_SCHEMA = fastavro.parse_schema({
    "type": "record", "name": "record", "namespace": _NS, "fields": [
        {"name": "_VERSION", "type": "int"},
        {"name": "_KIND", "type": "int"},
        {"name": "_PARTITION", "type": "bytes"},
        {"name": "_BUCKET", "type": "int"},
        {"name": "_TOTAL_BUCKETS", "type": "int"},
        {"name": "_FILE", "type": {"type": "record", "name": "record__FILE", "fields": DATA_FILE_FIELDS}},
    ]})
MANIFEST_FILE_META_SCHEMA = fastavro.parse_schema({
    "type": "record", "name": "record", "namespace": _NS, "fields": [
        {"name": "_VERSION", "type": "int"},
        {"name": "_FILE_NAME", "type": "string"},
        {"name": "_FILE_SIZE", "type": "long"},
        {"name": "_NUM_ADDED_FILES", "type": "long"},
        {"name": "_NUM_DELETED_FILES", "type": "long"},
        {"name": "_PARTITION_STATS", "type": _stats_schema("record__PARTITION_STATS")},
        {"name": "_SCHEMA_ID", "type": "long"},
        {"name": "_MIN_BUCKET", "type": _opt("int"), "default": None},
        {"name": "_MAX_BUCKET", "type": _opt("int"), "default": None},
        {"name": "_MIN_LEVEL", "type": _opt("int"), "default": None},
        {"name": "_MAX_LEVEL", "type": _opt("int"), "default": None},
        {"name": "_MIN_ROW_ID", "type": _opt("long"), "default": None},
        {"name": "_MAX_ROW_ID", "type": _opt("long"), "default": None},
    ]})



def creation_time_now() -> int:
    """A data file's ``_CREATION_TIME`` as Java writes it: the local wall-clock time (Java's
    ``LocalDateTime.now()``) as milliseconds, not the UTC epoch."""
    return int(local_now().replace(tzinfo=timezone.utc).timestamp() * 1000)


@dataclass(frozen=True)
class SimpleStats:
    """Min/max values (serialized binary rows) and null counts of some columns."""

    min_values: bytes
    max_values: bytes
    null_counts: tuple[int | None, ...] | None

    def to_avro(self) -> dict:
        return {"_MIN_VALUES": self.min_values, "_MAX_VALUES": self.max_values,
                "_NULL_COUNTS": list(self.null_counts) if self.null_counts is not None else None}

    @staticmethod
    def from_avro(rec: dict) -> "SimpleStats":
        nc = rec.get("_NULL_COUNTS")
        return SimpleStats(rec["_MIN_VALUES"], rec["_MAX_VALUES"], tuple(nc) if nc is not None else None)


EMPTY_STATS = SimpleStats(binary_row.EMPTY, binary_row.EMPTY, ())


@dataclass(frozen=True)
class DataFileMeta:
    """Metadata of one data (or changelog) file, as a manifest entry records it."""

    file_name: str
    file_size: int
    row_count: int
    min_key: bytes
    max_key: bytes
    key_stats: SimpleStats
    value_stats: SimpleStats
    min_sequence_number: int
    max_sequence_number: int
    schema_id: int
    level: int
    extra_files: tuple[str, ...] = ()
    creation_time_millis: int | None = None
    delete_row_count: int | None = 0
    embedded_index: bytes | None = None
    file_source: int | None = FILE_SOURCE_APPEND
    value_stats_cols: tuple[str, ...] | None = None
    external_path: str | None = None
    first_row_id: int | None = None
    write_cols: tuple[str, ...] | None = None
    write_cols_sequences: tuple[int, ...] | None = None

    @property
    def format(self) -> str:
        return self.file_name.rsplit(".", 1)[-1] if "." in self.file_name else "parquet"

    def key_range(self, key_types: Sequence) -> tuple[tuple, tuple]:
        """The file's smallest and largest key, decoded with ``key_types`` (kept on the object:
        sections, upgrades, shadowing and lookups all ask for it). Raises if undecodable."""
        cached = self.__dict__.get("_key_range")
        if cached is not None and cached[0] == list(key_types):
            return cached[1]
        decoded = (tuple(binary_row.deserialize(self.min_key, key_types)),
                   tuple(binary_row.deserialize(self.max_key, key_types)))
        object.__setattr__(self, "_key_range", (list(key_types), decoded))
        return decoded

    def to_avro(self) -> dict:
        return {
            "_FILE_NAME": self.file_name, "_FILE_SIZE": self.file_size, "_ROW_COUNT": self.row_count,
            "_MIN_KEY": self.min_key, "_MAX_KEY": self.max_key,
            "_KEY_STATS": self.key_stats.to_avro(), "_VALUE_STATS": self.value_stats.to_avro(),
            "_MIN_SEQUENCE_NUMBER": self.min_sequence_number, "_MAX_SEQUENCE_NUMBER": self.max_sequence_number,
            "_SCHEMA_ID": self.schema_id, "_LEVEL": self.level, "_EXTRA_FILES": list(self.extra_files),
            "_CREATION_TIME": self.creation_time_millis, "_DELETE_ROW_COUNT": self.delete_row_count,
            "_EMBEDDED_FILE_INDEX": self.embedded_index, "_FILE_SOURCE": self.file_source,
            "_VALUE_STATS_COLS": list(self.value_stats_cols) if self.value_stats_cols is not None else None,
            "_EXTERNAL_PATH": self.external_path, "_FIRST_ROW_ID": self.first_row_id,
            "_WRITE_COLS": list(self.write_cols) if self.write_cols is not None else None,
            "_WRITE_COLS_SEQUENCES": (list(self.write_cols_sequences) if self.write_cols_sequences is not None
                                      else None),
        }

    @staticmethod
    def from_avro(rec: dict) -> "DataFileMeta":
        created = rec.get("_CREATION_TIME")
        if isinstance(created, datetime):
            created = int(created.replace(tzinfo=created.tzinfo or timezone.utc).timestamp() * 1000)
        cols = rec.get("_VALUE_STATS_COLS")
        wcols = rec.get("_WRITE_COLS")
        wseqs = rec.get("_WRITE_COLS_SEQUENCES")
        return DataFileMeta(
            file_name=rec["_FILE_NAME"], file_size=rec["_FILE_SIZE"], row_count=rec["_ROW_COUNT"],
            min_key=rec["_MIN_KEY"], max_key=rec["_MAX_KEY"],
            key_stats=SimpleStats.from_avro(rec["_KEY_STATS"]),
            value_stats=SimpleStats.from_avro(rec["_VALUE_STATS"]),
            min_sequence_number=rec["_MIN_SEQUENCE_NUMBER"], max_sequence_number=rec["_MAX_SEQUENCE_NUMBER"],
            schema_id=rec["_SCHEMA_ID"], level=rec["_LEVEL"], extra_files=tuple(rec.get("_EXTRA_FILES") or ()),
            creation_time_millis=created, delete_row_count=rec.get("_DELETE_ROW_COUNT"),
            embedded_index=rec.get("_EMBEDDED_FILE_INDEX"), file_source=rec.get("_FILE_SOURCE"),
            value_stats_cols=tuple(cols) if cols is not None else None,
            external_path=rec.get("_EXTERNAL_PATH"), first_row_id=rec.get("_FIRST_ROW_ID"),
            write_cols=tuple(wcols) if wcols is not None else None,
            write_cols_sequences=tuple(wseqs) if wseqs is not None else None,
        )


@dataclass(frozen=True)
class ManifestEntry:
    """ADD or DELETE of one data file in one partition and bucket."""

    kind: int
    partition: bytes
    bucket: int
    total_buckets: int
    file: DataFileMeta

    @property
    def identifier(self) -> tuple:
        """What makes a file unique in a table: ADD and DELETE entries with it cancel."""
        return (self.partition, self.bucket, self.file.level, self.file.file_name,
                self.file.extra_files, self.file.embedded_index, self.file.external_path)

    def to_avro(self) -> dict:
        return {"_VERSION": MANIFEST_VERSION, "_KIND": self.kind, "_PARTITION": self.partition,
                "_BUCKET": self.bucket, "_TOTAL_BUCKETS": self.total_buckets, "_FILE": self.file.to_avro()}

    @staticmethod
    def from_avro(rec: dict) -> "ManifestEntry":
        return ManifestEntry(rec["_KIND"], rec["_PARTITION"], rec["_BUCKET"], rec["_TOTAL_BUCKETS"],
                             DataFileMeta.from_avro(rec["_FILE"]))

    def as_delete(self) -> "ManifestEntry":
        return replace(self, kind=DELETE)


@dataclass(frozen=True)
class ManifestFileMeta:
    """One manifest file, as a manifest list records it."""

    file_name: str
    file_size: int
    num_added_files: int
    num_deleted_files: int
    partition_stats: SimpleStats
    schema_id: int
    min_bucket: int | None = None
    max_bucket: int | None = None
    min_level: int | None = None
    max_level: int | None = None
    min_row_id: int | None = None
    max_row_id: int | None = None

    def to_avro(self) -> dict:
        return {"_VERSION": MANIFEST_VERSION, "_FILE_NAME": self.file_name, "_FILE_SIZE": self.file_size,
                "_NUM_ADDED_FILES": self.num_added_files, "_NUM_DELETED_FILES": self.num_deleted_files,
                "_PARTITION_STATS": self.partition_stats.to_avro(), "_SCHEMA_ID": self.schema_id,
                "_MIN_BUCKET": self.min_bucket, "_MAX_BUCKET": self.max_bucket,
                "_MIN_LEVEL": self.min_level, "_MAX_LEVEL": self.max_level,
                "_MIN_ROW_ID": self.min_row_id, "_MAX_ROW_ID": self.max_row_id}

    @staticmethod
    def from_avro(rec: dict) -> "ManifestFileMeta":
        return ManifestFileMeta(
            rec["_FILE_NAME"], rec["_FILE_SIZE"], rec["_NUM_ADDED_FILES"], rec["_NUM_DELETED_FILES"],
            SimpleStats.from_avro(rec["_PARTITION_STATS"]), rec["_SCHEMA_ID"],
            rec.get("_MIN_BUCKET"), rec.get("_MAX_BUCKET"), rec.get("_MIN_LEVEL"), rec.get("_MAX_LEVEL"),
            rec.get("_MIN_ROW_ID"), rec.get("_MAX_ROW_ID"))

_STATS_TYPE = pa.struct([("_MIN_VALUES", pa.binary()), ("_MAX_VALUES", pa.binary()),
                         ("_NULL_COUNTS", pa.list_(pa.int64()))])
_STRINGS_TYPE = pa.list_(pa.string())
ENTRY_ARROW_TYPE = pa.struct([
    ("_KIND", pa.int32()), ("_PARTITION", pa.binary()), ("_BUCKET", pa.int32()), ("_TOTAL_BUCKETS", pa.int32()),
    ("_FILE", pa.struct([
        ("_FILE_NAME", pa.string()), ("_FILE_SIZE", pa.int64()), ("_ROW_COUNT", pa.int64()),
        ("_MIN_KEY", pa.binary()), ("_MAX_KEY", pa.binary()), ("_KEY_STATS", _STATS_TYPE),
        ("_VALUE_STATS", _STATS_TYPE), ("_MIN_SEQUENCE_NUMBER", pa.int64()), ("_MAX_SEQUENCE_NUMBER", pa.int64()),
        ("_SCHEMA_ID", pa.int64()), ("_LEVEL", pa.int32()), ("_EXTRA_FILES", _STRINGS_TYPE),
        ("_CREATION_TIME", pa.timestamp("ms", tz="UTC")), ("_DELETE_ROW_COUNT", pa.int64()),
        ("_EMBEDDED_FILE_INDEX", pa.binary()), ("_FILE_SOURCE", pa.int32()), ("_VALUE_STATS_COLS", _STRINGS_TYPE),
        ("_EXTERNAL_PATH", pa.string()), ("_FIRST_ROW_ID", pa.int64()), ("_WRITE_COLS", _STRINGS_TYPE)])),
])


def _flatten(struct: pa.StructArray, prefix: str = "") -> dict[str, pa.Array]:
    out: dict[str, pa.Array] = {}
    for i, f in enumerate(struct.type):
        child = struct.field(i)
        if pa.types.is_struct(f.type):
            out.update(_flatten(child, f"{prefix}{f.name}."))
        else:
            out[prefix + f.name] = child
    return out


class ManifestColumns:
    """One manifest's entries decoded in bulk: one Arrow column per field of the entry, the nested
    file record flattened (``_FILE._ROW_COUNT``, ``_FILE._VALUE_STATS._MIN_VALUES``, ...);
    ``_FILE._CREATION_TIME`` as epoch milliseconds. :class:`ManifestEntry` objects are built only
    for the rows asked for, once each."""

    def __init__(self, table: pa.Table, objects: list | None = None):
        self.table = table
        self._objects: list[ManifestEntry | None] = objects if objects is not None else [None] * table.num_rows
        self._files: list[DataFileMeta | None] = [e.file for e in objects] if objects is not None \
            else [None] * table.num_rows

    @staticmethod
    def from_records(records: list[dict], objects: list | None = None) -> ManifestColumns:
        columns = _flatten(pa.array(records, type=ENTRY_ARROW_TYPE))
        created = columns["_FILE._CREATION_TIME"]
        columns["_FILE._CREATION_TIME"] = created.cast(pa.int64())
        return ManifestColumns(pa.table(columns), objects)

    @property
    def num_rows(self) -> int:
        return self.table.num_rows

    @property
    def nbytes(self) -> int:
        """Memory held, estimated as if every row's objects were built (about 1.3 KB each)."""
        return self.table.nbytes + 1300 * self.table.num_rows

    def files(self, rows: Sequence[int] | np.ndarray | None = None) -> list[DataFileMeta]:
        """The data files of the entries at ``rows`` (default: all), in that order (built once)."""
        files = self._files
        rows = range(self.table.num_rows) if rows is None else [int(r) for r in rows]
        missing = [r for r in rows if files[r] is None]
        if missing:
            if 2 * len(missing) >= self.table.num_rows:  # build them all: cheaper than a take
                for r, f in enumerate(_files_of(self.table)):
                    if files[r] is None:
                        files[r] = f
            else:
                for r, f in zip(missing, _files_of(self.table.take(pa.array(missing, pa.int64())))):
                    files[r] = f
        return [files[r] for r in rows]

    def entries(self, rows: Sequence[int] | np.ndarray | None = None) -> list[ManifestEntry]:
        """The entries at ``rows`` (default: all), in that order (built once)."""
        objects = self._objects
        rows = range(self.table.num_rows) if rows is None else [int(r) for r in rows]
        missing = [r for r in rows if objects[r] is None]
        if missing:
            t = self.table
            at = pa.array(missing, pa.int64())
            heads = [(t.column(n).take(at) if len(missing) < t.num_rows else t.column(n)).to_pylist()
                     for n in ("_KIND", "_PARTITION", "_BUCKET", "_TOTAL_BUCKETS")]
            with _no_gc():
                built = _build(ManifestEntry, _ENTRY_FIELDS, zip(*heads, self.files(missing)))
            for r, e in zip(missing, built):
                objects[r] = e
        return [objects[r] for r in rows]


_FILE_FIELDS = tuple(f.name for f in fields(DataFileMeta))
_STATS_FIELDS = tuple(f.name for f in fields(SimpleStats))
_ENTRY_FIELDS = tuple(f.name for f in fields(ManifestEntry))


def _build(cls, names: tuple[str, ...], rows: Iterable[tuple]) -> list:
    """Instances of the frozen dataclass ``cls`` from value tuples in field order, without its
    ``__init__`` (which sets each field through ``object.__setattr__``: ~3x slower in bulk)."""
    new = object.__new__
    out = []
    for values in rows:
        obj = new(cls)
        obj.__dict__.update(zip(names, values))
        out.append(obj)
    return out


@contextmanager
def _no_gc():
    """Pause the cyclic garbage collector while many acyclic objects are built (it would scan
    them over and over as they pile up)."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


def _values(column) -> list:
    """A column as a list of Python values."""
    n = len(column)
    if column.null_count == n:
        return [None] * n
    if pa.types.is_integer(column.type) and column.null_count == 0:
        return column.to_numpy().tolist()
    return column.to_pylist()


def _tuples(column) -> list:
    """A list column as tuples (None where null)."""
    n = len(column)
    if column.null_count == n:
        return [None] * n
    arr = column.combine_chunks() if isinstance(column, pa.ChunkedArray) else column
    offsets = arr.offsets.to_numpy()
    if column.null_count == 0 and offsets[-1] == offsets[0]:
        return [()] * n
    flat = arr.values.to_pylist()
    out = [tuple(flat[a:b]) for a, b in zip(offsets[:-1].tolist(), offsets[1:].tolist())]
    if column.null_count:
        out = [None if not valid else v for v, valid in zip(out, arr.is_valid().to_pylist())]
    return out


def _stats_of(t: pa.Table, prefix: str) -> list[SimpleStats]:
    """SimpleStats of the rows; when all are equal (key stats of append tables: empty), one
    object shared by all (they are immutable)."""
    lo, hi, counts = (_tuples(t.column(f"{prefix}.{n}")) if n == "_NULL_COUNTS" else _values(t.column(f"{prefix}.{n}"))
                      for n in ("_MIN_VALUES", "_MAX_VALUES", "_NULL_COUNTS"))
    if lo and len(set(lo)) == 1 and len(set(hi)) == 1 and len(set(counts)) == 1:
        return _build(SimpleStats, _STATS_FIELDS, [(lo[0], hi[0], counts[0])]) * len(lo)
    return _build(SimpleStats, _STATS_FIELDS, zip(lo, hi, counts))


def _files_of(t: pa.Table) -> list[DataFileMeta]:
    with _no_gc():
        c = {name: _tuples(t.column(name)) if pa.types.is_list(t.column(name).type) else _values(t.column(name))
             for name in _FILE_COLUMNS}
        return _build(DataFileMeta, _FILE_FIELDS, zip(
            c["_FILE._FILE_NAME"], c["_FILE._FILE_SIZE"], c["_FILE._ROW_COUNT"], c["_FILE._MIN_KEY"],
            c["_FILE._MAX_KEY"], _stats_of(t, "_FILE._KEY_STATS"), _stats_of(t, "_FILE._VALUE_STATS"),
            c["_FILE._MIN_SEQUENCE_NUMBER"], c["_FILE._MAX_SEQUENCE_NUMBER"], c["_FILE._SCHEMA_ID"],
            c["_FILE._LEVEL"], [v if v is not None else () for v in c["_FILE._EXTRA_FILES"]],
            c["_FILE._CREATION_TIME"], c["_FILE._DELETE_ROW_COUNT"], c["_FILE._EMBEDDED_FILE_INDEX"],
            c["_FILE._FILE_SOURCE"], c["_FILE._VALUE_STATS_COLS"], c["_FILE._EXTERNAL_PATH"],
            c["_FILE._FIRST_ROW_ID"], c["_FILE._WRITE_COLS"], [None] * t.num_rows))


_FILE_COLUMNS = ("_FILE._FILE_NAME", "_FILE._FILE_SIZE", "_FILE._ROW_COUNT", "_FILE._MIN_KEY", "_FILE._MAX_KEY",
                 "_FILE._MIN_SEQUENCE_NUMBER", "_FILE._MAX_SEQUENCE_NUMBER", "_FILE._SCHEMA_ID", "_FILE._LEVEL",
                 "_FILE._EXTRA_FILES", "_FILE._CREATION_TIME", "_FILE._DELETE_ROW_COUNT",
                 "_FILE._EMBEDDED_FILE_INDEX", "_FILE._FILE_SOURCE", "_FILE._VALUE_STATS_COLS",
                 "_FILE._EXTERNAL_PATH", "_FILE._FIRST_ROW_ID", "_FILE._WRITE_COLS")


class ManifestColumnsCache:
    """Decoded manifests by path, least recently used first out; bounded by their estimated memory
    (manifest files are immutable: a name is never written twice)."""

    def __init__(self, max_bytes: int = 256 << 20):
        self.max_bytes = max_bytes
        self._items: OrderedDict[tuple, ManifestColumns] = OrderedDict()
        self._bytes = 0
        self._lock = threading.Lock()

    def get(self, key: tuple) -> ManifestColumns | None:
        with self._lock:
            got = self._items.get(key)
            if got is not None:
                self._items.move_to_end(key)
            return got

    def put(self, key: tuple, value: ManifestColumns) -> None:
        with self._lock:
            old = self._items.pop(key, None)
            if old is not None:
                self._bytes -= old.nbytes
            self._items[key] = value
            self._bytes += value.nbytes
            while self._bytes > self.max_bytes and len(self._items) > 1:
                _, dropped = self._items.popitem(last=False)
                self._bytes -= dropped.nbytes

    def clear(self) -> None:
        with self._lock:
            self._items.clear()
            self._bytes = 0


#: the process's decoded manifests (``MANIFEST_CACHE.max_bytes`` to bound it differently)
MANIFEST_CACHE = ManifestColumnsCache()


def _avro_codec(compression: str) -> str:
    return {"zstd": "zstandard", "none": "null", "null": "null"}.get(compression, compression)


def _write_avro(schema, records: Iterable[dict], compression: str) -> bytes:
    buf = io.BytesIO()
    fastavro.writer(buf, schema, records, codec=_avro_codec(compression))
    return buf.getvalue()


def _read_bytes(file_io: FileIO, path: str, what: str) -> bytes:
    try:
        return file_io.read_bytes(path)
    except FileNotFoundError:
        raise CorruptFileError(f"{what} {path} is missing") from None


def _parse_avro(data: bytes, path: str, what: str) -> list[dict]:
    try:
        return list(fastavro.reader(io.BytesIO(data)))
    except Exception as e:  # fastavro raises many kinds of errors on bad input
        raise CorruptFileError(f"{what} {path} is corrupt or truncated: {e}") from None


def _read_avro(file_io: FileIO, path: str, what: str) -> list[dict]:
    return _parse_avro(_read_bytes(file_io, path, what), path, what)


#: decoded manifests on local disk, shared by processes (see :mod:`paimon_lab.io.disk_cache`)
MANIFEST_DISK_CACHE = ArrowDiskCache("manifests")
# in every disk-cache key: a change of the decoded layout makes old files misses
_LAYOUT = hashlib.blake2b(str(ENTRY_ARROW_TYPE).encode(), digest_size=8).hexdigest()


class ManifestIO:
    """Reads and writes manifests and manifest lists under ``{table}/manifest``."""

    def __init__(self, file_io: FileIO, table_path: str, compression: str = "zstd"):
        self.io = file_io
        self.dir = join(table_path, "manifest")
        self.compression = compression

    def path(self, name: str) -> str:
        return join(self.dir, name)

    # --------------------------------------------------------------- manifests
    def write_manifest(self, name: str, entries: Sequence[ManifestEntry], schema_id: int,
                       partition_stats: SimpleStats) -> ManifestFileMeta:
        records = [e.to_avro() for e in entries]
        data = _write_avro(MANIFEST_ENTRY_SCHEMA, records, self.compression)
        self.io.write_bytes(self.path(name), data)
        MANIFEST_CACHE.put((type(self.io.fs).__name__, self.path(name)),
                           ManifestColumns.from_records(records, list(entries)))
        buckets = [e.bucket for e in entries]
        levels = [e.file.level for e in entries]
        return ManifestFileMeta(
            name, len(data), sum(1 for e in entries if e.kind == ADD),
            sum(1 for e in entries if e.kind == DELETE), partition_stats, schema_id,
            min(buckets, default=None), max(buckets, default=None),
            min(levels, default=None), max(levels, default=None))

    def read_manifest(self, name: str) -> list[ManifestEntry]:
        return self.read_manifest_columns(name).entries()

    def read_manifest_columns(self, name: str) -> ManifestColumns:
        """A manifest's entries as Arrow columns, decoded once per process (see :data:`MANIFEST_CACHE`)
        and kept decoded on local disk (:data:`MANIFEST_DISK_CACHE`, keyed by the file's content)
        for other processes."""
        path = self.path(name)
        key = (type(self.io.fs).__name__, path)
        got = MANIFEST_CACHE.get(key)
        if got is None:
            data = _read_bytes(self.io, path, "Manifest")
            disk_key = f"{_LAYOUT}/{name}/{len(data)}/{hashlib.blake2b(data, digest_size=20).hexdigest()}"
            table = MANIFEST_DISK_CACHE.get(disk_key)
            if table is not None:
                got = ManifestColumns(table)
            else:
                records = _parse_avro(data, path, "Manifest")
                try:
                    got = ManifestColumns.from_records(records)
                except (KeyError, TypeError, pa.ArrowInvalid, pa.ArrowTypeError) as e:
                    raise CorruptFileError(f"Manifest {name} has an unexpected layout: {e}") from None
                MANIFEST_DISK_CACHE.put(disk_key, got.table)
            MANIFEST_CACHE.put(key, got)
        return got

    # --------------------------------------------------------------- manifest lists
    def write_manifest_list(self, name: str, metas: Sequence[ManifestFileMeta]) -> int:
        data = _write_avro(MANIFEST_FILE_META_SCHEMA, (m.to_avro() for m in metas), self.compression)
        self.io.write_bytes(self.path(name), data)
        return len(data)

    def read_manifest_list(self, name: str) -> list[ManifestFileMeta]:
        try:
            return [ManifestFileMeta.from_avro(r) for r in _read_avro(self.io, self.path(name), "Manifest list")]
        except (KeyError, TypeError) as e:
            raise CorruptFileError(f"Manifest list {name} has an unexpected layout: {e}") from None


def merge_entries(entries: Iterable[ManifestEntry]) -> list[ManifestEntry]:
    """Fold ADD and DELETE entries: a DELETE cancels the ADD of the same file, in any order.

    Paimon never re-adds a deleted file (names are unique), so the fold does not depend on the
    order of manifests. What remains are the live ADDs plus DELETEs whose ADD was not seen here.
    """
    adds: dict[tuple, ManifestEntry] = {}
    deletes: dict[tuple, ManifestEntry] = {}
    for e in entries:
        (adds if e.kind == ADD else deletes)[e.identifier] = e
    live = [e for k, e in adds.items() if k not in deletes]
    return live + [e for k, e in deletes.items() if k not in adds]


@dataclass
class FileNamer:
    """Names files the way Paimon does: ``{prefix}{uuid}-{n}``, one uuid per writer or commit."""

    prefix: str
    suffix: str = ""
    uuid: str = field(default_factory=lambda: str(uuid.uuid4()))
    counter: int = 0

    def for_bucket(self, partition: bytes, bucket: int) -> "FileNamer":
        """A namer of its own for one bucket's writer, as Java gives every bucket writer its
        own path factory: buckets written on parallel threads get the same names in every run.
        Its uuid keeps this one's first 12 hex digits (a Spark job's marker, see
        ``spark.datasource``) and derives the rest from the partition and bucket."""
        digest = hashlib.sha1(f"{self.uuid}/{partition.hex()}/{bucket}".encode()).hexdigest()
        derived = str(uuid.UUID(self.uuid.replace("-", "")[:12] + digest[:20]))
        return FileNamer(self.prefix, self.suffix, derived)

    def next(self) -> str:
        name = f"{self.prefix}{self.uuid}-{self.counter}{self.suffix}"
        self.counter += 1
        return name
