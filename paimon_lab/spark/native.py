"""``read_table(spark, "db.t")``: a Paimon table as a Spark DataFrame, with the files that need no
merge read by Spark's own vectorized Parquet / ORC reader.

The driver plans the splits as the ``paimon`` data source does (same options: time travel,
``read-optimized``, ``columns``, ``split.target-size``). A data file is read natively when
reading it raw gives exactly what paimon_lab's reader would:

* append tables: every Parquet/ORC file without a deletion vector;
* primary-key tables: the files of a raw-convertible split (Java's rule: one file, or one sorted
  run above level 0, no delete rows; tables that skip level 0 on batch reads, deletion-vector and
  first-row tables, their files above level 0) that carry no deletion vector;
* and only where every column read has the same field id and type in the file's schema as in
  the table's (renamed columns are read by their old name, columns added later are NULL), its
  type reads the same through Spark (no TIME, nested types or nanosecond timestamps), the table
  has no ``fields.*.default-value``, and the file's file system is one Spark's JVM has (``s3://``
  is read as ``s3a://`` when the Hadoop S3A classes are on its classpath; the JVM then needs its
  own S3A credentials, ``spark.hadoop.fs.s3a.*``).

Everything else (merges, deletion vectors, Avro files, other schemas) is read by paimon_lab in
Spark's Python workers, one task per split, and the two parts are unioned. Filters and column
pruning on the DataFrame reach Spark's Parquet scan as for any Parquet read. ``native=False`` (or
option ``native-read=false``) reads everything in Python workers.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from paimon_lab.core import types as T
from paimon_lab.core.manifest import DataFileMeta
from paimon_lab.core.schema import TableSchema, field_default_values
from paimon_lab.errors import SchemaError
from paimon_lab.io.file_io import join
from paimon_lab.operation.scan import DataSplit
from paimon_lab.spark.datasource import (
    PaimonReader,
    SplitPartition,
    _bool,
    _lower,
    _opt,
    field_ids,
    table_ref,
)
from paimon_lab.spark.jobs import _ensure_registered, default_warehouse
from paimon_lab.spark.types import spark_schema, spark_type
from paimon_lab.store.file_store import batch_scan_skips_level0

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

    from paimon_lab.store.file_store import FileStore

NATIVE_FORMATS = ("parquet", "orc")
_PLAIN = {"BOOLEAN", "TINYINT", "SMALLINT", "INT", "BIGINT", "FLOAT", "DOUBLE", "DATE", "CHAR", "VARCHAR",
          "BINARY", "VARBINARY", "DECIMAL"}


def native_type(t: T.DataType, fmt: str = "parquet") -> bool:
    """Types whose stored values Spark's Parquet (or ORC) reader returns as paimon_lab does.
    Spark's ORC reader refuses ORC timestamps as TIMESTAMP_NTZ, so ORC timestamps stay in Python."""
    if t.is_nested:
        return False
    if t.root in _PLAIN:
        return True
    return fmt == "parquet" and t.root in ("TIMESTAMP", "TIMESTAMP_LTZ") and (t.precision or 0) <= 6


def file_columns(schema: TableSchema, file_schema: TableSchema, columns: list[str],
                 fmt: str = "parquet") -> list[tuple] | None:
    """[(column, name in the file or None if the file predates it)] for a native read of a file
    written with ``file_schema``, or None when a column's type differs or Spark cannot read it."""
    by_id = {f.id: f for f in file_schema.fields}
    current = {f.name: f for f in schema.fields}
    out = []
    for name in columns:
        field = current[name]
        if not native_type(field.type, fmt):
            return None
        old = by_id.get(field.id)
        if old is not None and old.type.copy(nullable=True) != field.type.copy(nullable=True):
            return None
        out.append((name, None if old is None else old.name))
    return out


def raw_files(store: FileStore, split: DataSplit) -> tuple[list[DataFileMeta], list[DataFileMeta]]:
    """(files read raw, files for paimon_lab's reader) of a split: see the module docstring."""
    core = store.schema.core
    dvs: dict = {}
    if core.get("deletion-vectors.enabled") and (split.snapshot is not None or split.snapshot_id):
        _, dvs = store.deletion_vectors_at(split.snapshot or split.snapshot_id).get(
            (split.partition, split.bucket), (None, {}))
    if not store.schema.primary_keys:
        native = [f for f in split.files if f.file_name not in dvs and f.write_cols is None]
        return native, [f for f in split.files if f not in native]
    if batch_scan_skips_level0(core):
        # every key lives once above level 0 (older versions masked by deletion vectors)
        upper = [f for f in split.files if f.level > 0]
        native = [f for f in upper if f.file_name not in dvs and f.delete_row_count == 0]
        return native, [f for f in upper if f not in native]
    files = list(split.files)
    levels = {f.level for f in files}
    convertible = (len(files) == 1 or (len(levels) == 1 and 0 not in levels)) and \
        all(f.delete_row_count == 0 for f in files)
    return (files, []) if convertible else ([], files)


class _Paths:
    """Spark paths of data files, or None where Spark's JVM has no file system for them."""

    def __init__(self, spark: SparkSession):
        self.spark = spark
        self.known: dict[str, str | None] = {"file": "file"}

    def _scheme(self, scheme: str) -> str | None:
        if scheme not in self.known:
            self.known[scheme] = self._lookup(scheme)
        return self.known[scheme]

    def _lookup(self, scheme: str) -> str | None:
        from py4j.protocol import Py4JError

        jvm = getattr(self.spark, "_jvm", None)
        if jvm is None:  # Spark Connect: no way to ask; local files only
            return None
        if scheme in ("s3", "s3a", "s3n"):
            try:
                jvm.java.lang.Class.forName("org.apache.hadoop.fs.s3a.S3AFileSystem")
            except Py4JError:
                return None
            return "s3a"
        try:
            jvm.org.apache.hadoop.fs.FileSystem.getFileSystemClass(scheme, self.spark._jsc.hadoopConfiguration())
        except Py4JError:
            return None
        return scheme

    def __call__(self, path: str) -> str | None:
        if path.startswith("/"):
            return "file://" + path
        if "://" not in path:
            return None  # relative or drive-letter paths: left to paimon_lab
        scheme, rest = path.split("://", 1)
        spark_scheme = self._scheme(scheme.lower())
        return None if spark_scheme is None else f"{spark_scheme}://{rest}"


@dataclass
class ReadPlan:
    """What :func:`read_table` reads how: ``native`` maps (format, schema id, column mapping) to
    the Spark paths of the files Spark reads itself; ``python`` are the splits (or parts of
    splits) left to paimon_lab."""

    schema: Any                                   # the DataFrame's StructType
    reader: PaimonReader
    native: dict[tuple, list[str]] = field(default_factory=dict)
    python: list[SplitPartition] = field(default_factory=list)
    store: Any = None

    def frame(self, spark: SparkSession) -> DataFrame:
        frames = [_native_frame(spark, self.store, key, files, self.schema) for key, files in self.native.items()]
        if self.python:
            frames.append(_python_frame(spark, self.reader, self.python, self.schema))
        if not frames:
            return spark.createDataFrame([], self.schema)
        out = frames[0]
        for f in frames[1:]:
            out = out.unionByName(f)
        return out


def plan_read(spark: SparkSession, table: str, warehouse: str | None = None,
              options: Mapping[str, Any] | None = None, *, native: bool | None = None) -> ReadPlan:
    """Plan :func:`read_table`: the splits, and which files Spark reads itself."""
    from pyspark.sql.types import StructType

    opts = _lower({k: str(v) for k, v in (options or {}).items()})
    warehouse = warehouse or _opt(opts, "warehouse") or default_warehouse()
    if native is None:
        native = _bool(_opt(opts, "native-read") or "true")
    ref = table_ref(table, warehouse)
    tbl = ref.open()
    schema = spark_schema(tbl.schema)
    wanted = _opt(opts, "columns")
    if wanted:
        names = [c.strip() for c in wanted.split(",") if c.strip()]
        unknown = [n for n in names if n not in schema.fieldNames()]
        if unknown:
            raise SchemaError(f"Columns {unknown} are not in the table; columns are {schema.fieldNames()}")
        schema = StructType([f for f in schema.fields if f.name in set(names)])
    columns = schema.fieldNames()
    reader = PaimonReader(ref, schema, field_ids(tbl, columns), opts, tbl.schema.arrow_schema())
    plan = ReadPlan(schema, reader, store=tbl.store)
    usable = native and not field_default_values(tbl.schema)
    store, paths, groups = tbl.store, _Paths(spark), defaultdict(list)
    for part in reader.partitions():
        if not isinstance(part, SplitPartition):
            continue
        split = part.split
        raw, rest = raw_files(store, split) if usable else ([], list(split.files))
        directory = store.bucket_path(split.partition, split.bucket)
        for f in raw:
            mapping = file_columns(tbl.schema, store.schema_for(f.schema_id), columns, f.format) \
                if f.format in NATIVE_FORMATS else None
            path = paths(f.external_path or join(directory, f.file_name)) if mapping is not None else None
            if path is None:
                rest.append(f)
            else:
                groups[(f.format, f.schema_id, tuple(mapping))].append(path)
        if rest:
            if len(rest) != len(split.files):
                split = DataSplit(split.partition, split.bucket, rest, split.snapshot_id, split.snapshot)
            plan.python.append(SplitPartition("split", split))
    plan.native = dict(groups)
    return plan


def read_table(spark: SparkSession, table: str, warehouse: str | None = None,
               options: Mapping[str, Any] | None = None, *, native: bool | None = None) -> DataFrame:
    """The rows of a Paimon table (``db.t`` in ``warehouse``, or a table path) as a DataFrame:
    files that need no merge through Spark's own Parquet/ORC reader, the rest through paimon_lab
    in Python workers (see the module docstring). ``options`` are the ``paimon`` data source's
    read options (``snapshot-id``, ``tag``, ``timestamp-millis``, ``read-optimized``,
    ``columns``, ``split.target-size``, ``native-read``); ``native=False`` reads it all in Python."""
    _ensure_registered(spark)
    return plan_read(spark, table, warehouse, options, native=native).frame(spark)


def _native_frame(spark, store: FileStore, key: tuple, files: list[str], schema) -> DataFrame:
    from pyspark.sql import functions as F
    from pyspark.sql.types import StructField, StructType

    fmt, schema_id, mapping = key
    by_name = {f.name: f for f in store.schema_for(schema_id).fields}
    physical = StructType([StructField(old, spark_type(by_name[old].type), True) for _, old in mapping if old])
    df = spark.read.schema(physical).format(fmt).load(files)
    types = {f.name: f.dataType for f in schema.fields}
    return df.select(*[F.col(f"`{old}`").alias(name) if old else F.lit(None).cast(types[name]).alias(name)
                       for name, old in mapping])


def _python_frame(spark, reader: PaimonReader, parts: list[SplitPartition], schema) -> DataFrame:
    """The splits read by paimon_lab in Python workers: one Spark task per split."""

    def run(batches):
        for batch in batches:
            for i in batch.column(0).to_pylist():
                yield from reader.read(parts[i])

    n = len(parts)
    return spark.range(0, n, 1, n).mapInArrow(run, schema)


__all__ = ["NATIVE_FORMATS", "ReadPlan", "file_columns", "native_type", "plan_read", "raw_files", "read_table"]
