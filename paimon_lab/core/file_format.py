"""Data file formats: Parquet (default), ORC and Avro, read and written as Arrow tables."""

from __future__ import annotations

import datetime as dt
import io
from decimal import Decimal
from typing import Callable, Iterator, Sequence

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from paimon_lab.errors import CorruptFileError, DataValidationError, OptionError, UnsupportedTypeError
from paimon_lab.io.file_io import FileIO
from paimon_lab.core.predicate import match_mask
from paimon_lab.core.parquet_int96 import has_nanos, int96_paths, patch_footer, storage_schema, table_to_storage
from paimon_lab.core.types import ArrayType, DataField, DataType, MapType, MultisetType, RowType
from paimon_lab.core.types import fields_from_arrow

FORMATS = ("parquet", "orc", "avro")


def _parquet_compression(codec: str) -> str:
    return {"none": "none", "uncompressed": "none"}.get(codec, codec)


# Java passes parquet.* / orc.* table options to the parquet-mr / ORC writers; these are the ones
# paimon-lab maps onto pyarrow's writers (the registry refuses the others by name).
_PARQUET_SETTINGS = {"parquet.page.size": "data_page_size", "parquet.dictionary.page.size": "dictionary_pagesize_limit"}
_ORC_SETTINGS = {"orc.stripe.size": "stripe_size", "orc.compress.size": "compression_block_size",
                 "orc.row.index.stride": "row_index_stride", "orc.bloom.filter.fpp": "bloom_filter_fpp",
                 "orc.dictionary.key.threshold": "dictionary_key_size_threshold"}


def format_writer_settings(core) -> dict:
    """The pyarrow writer arguments of a table's ``parquet.*`` / ``orc.*`` options (``core``: its
    :class:`CoreOptions`), plus ``block_size`` (Parquet row group bytes) and ``bloom_columns``
    (ORC bloom filter column names) that the writer resolves itself."""
    out: dict = {}
    for key, arg in {**_PARQUET_SETTINGS, **_ORC_SETTINGS}.items():
        if key in core.raw:
            out[arg] = core.get(key)
    if "parquet.writer.version" in core.raw:
        out["data_page_version"] = {"v1": "1.0", "v2": "2.0"}[core.get("parquet.writer.version")]
    if "parquet.block.size" in core.raw:
        out["block_size"] = core.get("parquet.block.size")
    if "orc.bloom.filter.columns" in core.raw:
        out["bloom_columns"] = [c.strip() for c in core.get("orc.bloom.filter.columns").split(",") if c.strip()]
    return out


_PARQUET_ARGS = set(_PARQUET_SETTINGS.values()) | {"data_page_version"}
_ORC_ARGS = set(_ORC_SETTINGS.values())


# A column is written without a dictionary when a sample of its values is (almost) all distinct:
# a dictionary of unique values makes the file bigger and costs 3-5x the encoding time.
_DICTIONARY_SAMPLE = 2048
_DISTINCT_RATIO = 0.95

# What Java Paimon writes (ParquetSchemaConverter, 0.9 and later) and therefore what every Java
# reader since 0.9 reads, per Paimon type:
#   TINYINT/SMALLINT/INT  INT32 (INT(8)/INT(16) annotated)   BIGINT  INT64
#   DECIMAL(p <= 9)       INT32 DECIMAL                      DECIMAL(p <= 18)  INT64 DECIMAL
#   DECIMAL(p > 18)       FIXED_LEN_BYTE_ARRAY DECIMAL (minimal length)
#   DATE                  INT32 DATE                         TIME  INT32 TIME(MILLIS)
#   TIMESTAMP(0..3)       INT64 TIMESTAMP(MILLIS)            TIMESTAMP(4..6)  INT64 TIMESTAMP(MICROS)
#   TIMESTAMP(7..9)       INT96 (no annotation)
#   (WITH LOCAL TIME ZONE: the same, isAdjustedToUTC = true; without: false)
# Java's vectorized reader (0.9, 1.0) checks these physical types (a TIMESTAMP(9) column must be
# INT96, a short DECIMAL's dictionary must hold integers) and decodes only PLAIN and dictionary
# (PLAIN_DICTIONARY / RLE_DICTIONARY) data pages: DELTA_BINARY_PACKED, DELTA_BYTE_ARRAY and
# BYTE_STREAM_SPLIT fail with "Unsupported encoding".


def _delta_encodable(t: pa.DataType) -> bool:
    """Types stored as Parquet INT32/INT64, where DELTA_BINARY_PACKED applies."""
    return pa.types.is_integer(t) or pa.types.is_date32(t) or pa.types.is_timestamp(t)


def parquet_encodings(sample: pa.Table, dictionary: bool | None = None, delta: bool = False) -> dict:
    """``ParquetWriter`` keyword arguments choosing each column's encoding from ``sample``.

    ``dictionary`` True or False forces dictionary encoding on or off for every column (the
    ``parquet.enable.dictionary`` table option, as in Parquet's Java writer, which also falls
    back to PLAIN once a column's dictionary passes its size limit); None decides per column:
    dictionary unless the first values are almost all distinct. Columns without a dictionary are
    PLAIN, the one other encoding Java Paimon's reader decodes. ``delta`` (the
    ``parquet.delta-encoding`` option) delta-encodes integer-like columns without a dictionary
    instead (DELTA_BINARY_PACKED): smaller and faster to decode, but unreadable by Java Paimon
    <= 1.0 (its vectorized reader has no DELTA_BINARY_PACKED decoder).
    """
    if dictionary is True:
        return {"use_dictionary": True}
    plain = {f.name for f, column in zip(sample.schema, sample.columns)
             if dictionary is False or not _dictionary_pays(column)}
    out: dict = {"use_dictionary": [n for n in sample.column_names if n not in plain]}
    if delta:
        out["column_encoding"] = {f.name: "DELTA_BINARY_PACKED" for f in sample.schema
                                  if f.name in plain and _delta_encodable(f.type) and not has_nanos(f.type)} or None
    return out


def _dictionary_pays(column: pa.ChunkedArray) -> bool:
    if pa.types.is_nested(column.type):
        return True  # not sampled; its leaf columns are written PLAIN
    head = column.slice(0, _DICTIONARY_SAMPLE)
    n = len(head) - head.null_count
    if n < 64:
        return True  # too few values to judge (pyarrow still falls back past 1 MB of dictionary)
    return pc.count_distinct(head).as_py() <= _DISTINCT_RATIO * n


_FIELD_ID = b"PARQUET:field_id"


def _with_ids(t: pa.DataType, dt: DataType | None) -> pa.DataType:
    """``t`` with the ids of a ROW's fields (from the Paimon type ``dt``) on its struct fields."""
    if dt is None:
        return t
    if pa.types.is_struct(t) and isinstance(dt, RowType):
        by_name = {f.name: f for f in dt.fields}
        return pa.struct([_field_with_id(t.field(i), by_name.get(t.field(i).name)) for i in range(t.num_fields)])
    if pa.types.is_list(t) and isinstance(dt, ArrayType):
        return pa.list_(t.value_field.with_type(_with_ids(t.value_type, dt.element)))
    if pa.types.is_map(t) and isinstance(dt, MapType):
        return pa.map_(t.key_field.with_type(_with_ids(t.key_type, dt.key)),
                       t.item_field.with_type(_with_ids(t.item_type, dt.value)))
    return t


def _field_with_id(f: pa.Field, df: DataField | None) -> pa.Field:
    if df is None:
        return f
    meta = dict(f.metadata or {})
    meta[_FIELD_ID] = str(df.id).encode()
    return f.with_type(_with_ids(f.type, df.type)).with_metadata(meta)


def parquet_schema(schema: pa.Schema, fields: Sequence[DataField] | None) -> pa.Schema:
    """The Arrow schema a Parquet file is written with: each column (and each ROW's nested field)
    carries its Paimon field id as the Parquet field_id, as Java Paimon's writer records them."""
    if not fields:
        return schema
    by_name = {f.name: f for f in fields}
    return pa.schema([_field_with_id(f, by_name.get(f.name)) for f in schema], metadata=schema.metadata)


def _writer_supports(option: str) -> bool:
    try:
        pq.ParquetWriter(pa.BufferOutputStream(), pa.schema([("x", pa.int32())]), **{option: True}).close()
        return True
    except TypeError:
        return False


# DECIMAL(p <= 18) as INT32/INT64 (pyarrow's default is FIXED_LEN_BYTE_ARRAY for all precisions;
# a pyarrow without the option keeps that, which Java Paimon cannot read).
PARQUET_WRITER_OPTIONS = {"store_decimal_as_integer": True} if _writer_supports("store_decimal_as_integer") else {}
# Column and offset indexes (page min/max and locations), as parquet-mr (Java Paimon's writer)
# writes by default: readers that skip pages (Java's column-index filter, DuckDB, Spark) use them.
if _writer_supports("write_page_index"):
    PARQUET_WRITER_OPTIONS["write_page_index"] = True


def _leaf_paths(schema: pa.Schema) -> list[str]:
    """The Parquet column paths (dotted) of ``schema``'s leaves, as pyarrow names them."""
    buf = pa.BufferOutputStream()
    pq.write_table(schema.empty_table(), buf)
    meta = pq.ParquetFile(pa.BufferReader(buf.getvalue())).metadata
    return [meta.schema.column(i).path for i in range(meta.num_columns)]


class _ParquetFile:
    """One Parquet file being written the way Java Paimon lays it out: Paimon field ids, short
    decimals as integers and TIMESTAMP(7..9) columns as INT96 (see :mod:`.parquet_int96`; such a
    file is assembled in memory, its footer rewritten when it is finished)."""

    def __init__(self, file_io: FileIO, path: str, schema: pa.Schema, fields, **options):
        self.io, self.path = file_io, path
        file_schema = parquet_schema(schema, fields)
        self.int96 = int96_paths(schema) if any(has_nanos(f.type) for f in schema) else None
        if self.int96:
            file_schema = storage_schema(file_schema)
            self.sink = pa.BufferOutputStream()
            if options.get("write_statistics", True) is True:
                # no statistics of the INT96 bytes (pages included): INT96 has no sort order
                skip = {".".join(p) for p in self.int96}
                options["write_statistics"] = [c for c in _leaf_paths(file_schema) if c not in skip]
        else:
            self.sink = file_io.open_output(path)
        self.schema = file_schema
        self.writer = pq.ParquetWriter(self.sink, file_schema, **PARQUET_WRITER_OPTIONS, **options)

    def write(self, table: pa.Table, row_group_size: int | None = None) -> None:
        if self.int96:
            table = table_to_storage(table, self.schema)
        self.writer.write_table(table, row_group_size=row_group_size)

    def tell(self) -> int:
        return self.sink.tell()

    def close(self) -> int:
        """Finish the file; returns its size."""
        try:
            self.writer.close()
            if not self.int96:
                return self.sink.tell()
            data = patch_footer(self.sink.getvalue().to_pybytes(), self.int96)
            self.io.write_bytes(self.path, data)
            return len(data)
        finally:
            if not self.sink.closed:
                self.sink.close()

    def abort(self) -> None:
        try:
            self.writer.close()
        finally:
            self.sink.close()


class RollingFileWriter:
    """Writes a stream of Arrow tables into files of about ``target_size`` bytes each.

    Successive :meth:`write` calls continue the current file until it reaches the target.
    ``next_path`` is called for every new file. :meth:`drain` (and :meth:`close`, which also
    finishes the open file) return ``(path, size, rows)`` for each finished file, so the caller can
    compute statistics on exactly the rows of each file and then let them go.
    ``file_columns`` names the columns that go into the files (default: all).
    """

    def __init__(self, file_io: FileIO, fmt: str, schema: pa.Schema, target_size: int,
                 next_path, compression: str = "zstd", zstd_level: int = 1,
                 file_columns: Sequence[str] | None = None, dictionary: bool | None = None,
                 fields: Sequence[DataField] | None = None, delta: bool = False, settings: dict | None = None):
        if fmt not in FORMATS:
            raise UnsupportedTypeError(f"Unknown file format '{fmt}'")
        self.io, self.fmt = file_io, fmt
        self.file_columns = list(file_columns) if file_columns is not None else None
        self.schema = pa.schema([schema.field(c) for c in self.file_columns]) if self.file_columns else schema
        self.fields = fields  # the Paimon fields of the file's columns (their ids go into Parquet)
        self.delta = delta
        self.settings = dict(settings or {})  # see format_writer_settings
        self.target = target_size
        self.next_path = next_path
        self.compression = compression
        self.zstd_level = zstd_level
        self.dictionary = dictionary
        self._encodings: dict | None = None  # chosen from the first rows, kept for every file
        # Keeps each written slice's summary instead of its rows (a file's rows then need not stay
        # in memory until it is finished): what drain() returns per file is their concatenation.
        self.summarize: Callable[[pa.Table], pa.Table] | None = None
        self.done: list[tuple[str, int, pa.Table]] = []
        self._open: tuple | None = None  # (path, _ParquetFile, [row slices])

    @classmethod
    def for_table(cls, file_io: FileIO, core, schema: pa.Schema, target_size: int, next_path,
                  file_columns: Sequence[str] | None = None,
                  fields: Sequence[DataField] | None = None, level: int | None = None) -> "RollingFileWriter":
        """A writer with a table's format options (``core``: its :class:`CoreOptions`);
        ``fields``: the Paimon fields of the columns (for the field ids Parquet files carry);
        ``level``: the LSM level of a primary-key file ('file.format.per.level' and
        'file.compression.per.level' pick its format and compression)."""
        fmt = core.format_for_level(level)
        compression = core.compression_for_level(level)
        level = core.get("file.compression.zstd-level")
        if fmt == "parquet":  # Java: parquet.compression (and its zstd level) win over file.compression
            compression = core.get("parquet.compression") or compression
            level = core.get("parquet.compression.codec.zstd.level") or level
        return cls(file_io, fmt, schema, target_size, next_path, compression, level, file_columns,
                   core.get("parquet.enable.dictionary"), fields, core.get("parquet.delta-encoding"),
                   format_writer_settings(core))

    def write(self, table: pa.Table) -> None:
        if table.num_rows == 0:
            return
        if self.fmt == "parquet":
            self._write_parquet(table)
        else:
            # ORC and Avro buffer internally; estimate rows per file from in-memory size.
            per_row = max(1, table.nbytes // max(1, table.num_rows)) / 3
            rows = max(1, int(self.target / per_row))
            for start in range(0, table.num_rows, rows):
                part = table.slice(start, rows)
                path = self.next_path()
                data = write_table_bytes(self._project(part), self.fmt, self.compression, self._orc_settings())
                self.io.write_bytes(path, data)
                self.done.append((path, len(data), part))

    def _write_parquet(self, table: pa.Table) -> None:
        level = self.zstd_level if self.compression == "zstd" else None
        # The writer's position only moves when a row group is flushed, so row groups must be
        # small enough (in memory) that a file cannot overshoot the target by much.
        per_row = max(1, table.nbytes // max(1, table.num_rows))
        row_group = int(min(256 * 1024, max(1024, self.target // per_row)))
        if self.settings.get("block_size"):  # parquet.block.size: row groups of about that many bytes
            row_group = int(max(1, min(row_group, self.settings["block_size"] // per_row)))
        start = 0
        while start < table.num_rows:
            if self._open is None:
                if self._encodings is None:
                    self._encodings = parquet_encodings(self._project(table.slice(start, _DICTIONARY_SAMPLE)),
                                                        self.dictionary, self.delta)
                path = self.next_path()
                writer = _ParquetFile(self.io, path, self.schema, self.fields,
                                      compression=_parquet_compression(self.compression),
                                      compression_level=level, write_statistics=True, **self._encodings,
                                      **{k: v for k, v in self.settings.items() if k in _PARQUET_ARGS})
                self._open = (path, writer, [])
            path, writer, slices = self._open
            chunk = table.slice(start, row_group)
            writer.write(self._project(chunk), row_group_size=row_group)
            slices.append(self.summarize(chunk) if self.summarize is not None else chunk)
            start += chunk.num_rows
            if writer.tell() >= self.target:
                self._finish()

    def _orc_settings(self) -> dict:
        if self.fmt != "orc":
            return {}
        out = {k: v for k, v in self.settings.items() if k in _ORC_ARGS}
        if self.settings.get("bloom_columns"):
            names = self.schema.names
            missing = [c for c in self.settings["bloom_columns"] if c not in names]
            if missing:
                raise OptionError(f"'orc.bloom.filter.columns' names unknown columns {missing}")
            out["bloom_filter_columns"] = [names.index(c) for c in self.settings["bloom_columns"]]
        return out

    def _finish(self) -> None:
        if self._open is None:
            return
        path, writer, slices = self._open
        self._open = None
        size = writer.close()
        self.done.append((path, size, pa.concat_tables(slices) if len(slices) > 1 else slices[0]))

    def _project(self, table: pa.Table) -> pa.Table:
        return table.select(self.file_columns) if self.file_columns is not None else table

    def drain(self) -> list[tuple[str, int, pa.Table]]:
        """Files finished so far (each returned once)."""
        out, self.done = self.done, []
        return out

    def close(self) -> list[tuple[str, int, pa.Table]]:
        self._finish()
        return self.drain()

    def abort(self) -> list[str]:
        """Close without keeping anything; returns the paths written (for the caller to delete)."""
        paths = [p for p, _, _ in self.done]
        if self._open is not None:
            path, writer, _ = self._open
            self._open = None
            writer.abort()
            paths.append(path)
        self.done = []
        return paths


def write_table_bytes(table: pa.Table, fmt: str, compression: str = "zstd", orc_settings: dict | None = None) -> bytes:
    """One whole file's bytes; ``orc_settings``: extra ``pyarrow.orc.write_table`` arguments."""
    if fmt == "parquet":
        buf = pa.BufferOutputStream()
        if any(has_nanos(f.type) for f in table.schema):
            schema = storage_schema(table.schema)
            pq.write_table(table_to_storage(table, schema), buf, compression=_parquet_compression(compression),
                           **PARQUET_WRITER_OPTIONS)
            return patch_footer(buf.getvalue().to_pybytes(), int96_paths(table.schema))
        pq.write_table(table, buf, compression=_parquet_compression(compression), **PARQUET_WRITER_OPTIONS)
        return buf.getvalue().to_pybytes()
    if fmt == "orc":
        import pyarrow.orc as orc

        buf = pa.BufferOutputStream()
        codec = {"zstd": "zstd", "snappy": "snappy", "lz4": "lz4", "gzip": "zlib"}.get(compression, "uncompressed")
        _check_orc_timestamp_range(table)
        orc_schema = pa.schema([f.with_type(_orc_type(f.type)) for f in table.schema])
        if orc_schema != table.schema:
            table = table.cast(orc_schema)
        orc.write_table(table, buf, compression=codec, **(orc_settings or {}))
        return buf.getvalue().to_pybytes()
    if fmt == "avro":
        return _write_avro(table, compression)
    raise UnsupportedTypeError(f"Unknown file format '{fmt}'")


_NS_PER_UNIT = {"s": 1_000_000_000, "ms": 1_000_000, "us": 1_000, "ns": 1}


def _check_orc_timestamp_range(table: pa.Table) -> None:
    """Refuse TIMESTAMP values outside 1677-09-21..2262-04-11 in ORC files: pyarrow reads ORC
    timestamps as int64 nanoseconds, so such a file could not be read back (Parquet and Avro
    keep them)."""
    limit = (1 << 63) - 1
    for f in table.schema:
        if not pa.types.is_timestamp(f.type) or f.type.unit == "ns":
            continue
        per = _NS_PER_UNIT[f.type.unit]
        values = table.column(f.name).cast(pa.int64())
        lo, hi = pc.min(values).as_py(), pc.max(values).as_py()
        if (lo is not None and lo < -(limit // per)) or (hi is not None and hi > limit // per):
            raise DataValidationError(
                f"Column '{f.name}' has TIMESTAMP values outside 1677-09-21..2262-04-11, which an ORC file "
                "cannot hold readably here (pyarrow reads ORC timestamps as nanoseconds); use "
                "'file.format' = 'parquet' or 'avro' for such values")


def _orc_type(t: pa.DataType) -> pa.DataType:
    """The Arrow type ORC files store ``t`` as: TIME as its milliseconds of the day in an INT
    column, as Java Paimon writes it (ORC has no time type)."""
    if pa.types.is_time32(t):
        return pa.int32()
    if pa.types.is_struct(t):
        return pa.struct([t.field(i).with_type(_orc_type(t.field(i).type)) for i in range(t.num_fields)])
    if pa.types.is_map(t):
        return pa.map_(t.key_field.with_type(_orc_type(t.key_type)), t.item_field.with_type(_orc_type(t.item_type)))
    if pa.types.is_list(t):
        return pa.list_(t.value_field.with_type(_orc_type(t.value_type)))
    return t


def _orc_unpad_chars(table: pa.Table, fields: Sequence[DataField]) -> pa.Table:
    """Java writes CHAR(n) as ORC ``char(n)``, which pyarrow reads padded with spaces to n and
    Java reads without them: trailing spaces of top-level CHAR columns are dropped, as in Java."""
    for f in fields:
        if f.type.root == "CHAR" and f.name in table.column_names:
            i = table.column_names.index(f.name)
            table = table.set_column(i, table.field(i), pc.utf8_rtrim(table.column(i), characters=" "))
    return table


def read_file(file_io: FileIO, path: str, fmt: str, columns: Sequence[str] | None,
              fields: Sequence[DataField], filter: pc.Expression | None = None, use_threads: bool = True) -> pa.Table:
    """Read one data file (only ``columns``; rows pre-filtered by ``filter`` where the format allows).
    ``use_threads``: decode Parquet columns on Arrow's thread pool (off when the caller already
    reads several files in parallel)."""
    try:
        if fmt == "parquet":
            with file_io.open_input(path) as f:
                if filter is not None:
                    return pq.read_table(f, columns=list(columns) if columns is not None else None,
                                         filters=filter, use_threads=use_threads)
                # Without a filter the file reader alone (read_table builds a dataset around it: ~6% more CPU)
                table = pq.ParquetFile(f).read(columns=list(columns) if columns is not None else None,
                                               use_threads=use_threads)
            missing = [c for c in columns or () if c not in table.column_names]
            if missing:  # ParquetFile.read leaves out what the file lacks; read_table raised
                raise CorruptFileError(f"Data file {path} has no column(s) {missing}")
            return table
        if fmt == "orc":
            import pyarrow.orc as orc

            with file_io.open_input(path) as f:
                table = orc.ORCFile(f).read(columns=list(columns) if columns is not None else None)
            table = _orc_unpad_chars(table, fields)
        elif fmt == "avro":
            table = _read_avro(file_io.read_bytes(path), fields)
            if columns is not None:
                table = table.select(list(columns))
        else:
            raise UnsupportedTypeError(f"Unknown file format '{fmt}'")
    except FileNotFoundError:
        raise CorruptFileError(f"Data file {path} is missing") from None
    except (pa.ArrowInvalid, OSError, ValueError) as e:
        if isinstance(e, FileNotFoundError):
            raise
        raise CorruptFileError(f"Data file {path} cannot be read: {e}") from None
    return table.filter(filter) if filter is not None else table


def read_parquet_late(file_io: FileIO, path: str, columns: Sequence[str], predicate, use_threads: bool = True,
                      ) -> pa.Table:
    """The rows of a Parquet file matching ``predicate`` (a :class:`~paimon_lab.core.predicate.Predicate`
    over the file's column names, which ``columns`` holds with others): late materialization.
    Row groups whose statistics rule the filter out are skipped, the filter's columns are decoded
    for the rest, and the other columns only for the row groups that hold a matching row. A
    selective filter on a file whose row groups all span its range (unsorted data) then decodes
    one or two columns of the file instead of all of them."""
    wanted = list(columns)
    keys = sorted(predicate.columns())
    rest = [c for c in wanted if c not in keys]
    try:
        with file_io.open_input(path) as f:
            pf = pq.ParquetFile(f)
            md = pf.metadata
            groups = [g for g in range(md.num_row_groups) if _row_group_may_match(md, g, keys, predicate)]
            key_rows = pf.read_row_groups(groups, columns=keys, use_threads=use_threads)
            mask = match_mask(key_rows, predicate) if key_rows.num_rows else np.zeros(0, dtype=bool)
            sizes = np.array([md.row_group(g).num_rows for g in groups], dtype=np.int64)
            starts = np.concatenate([[0], np.cumsum(sizes)])
            hits = [i for i in range(len(groups)) if mask[starts[i]:starts[i + 1]].any()]
            rest_rows = pf.read_row_groups([groups[i] for i in hits], columns=rest, use_threads=use_threads) \
                if rest else None
    except FileNotFoundError:
        raise CorruptFileError(f"Data file {path} is missing") from None
    except (pa.ArrowInvalid, OSError, ValueError) as e:
        raise CorruptFileError(f"Data file {path} cannot be read: {e}") from None
    picked = key_rows.filter(pa.array(mask)) if len(mask) else key_rows
    out = {c: picked.column(c) for c in keys}
    if rest_rows is not None:
        sub = np.concatenate([mask[starts[i]:starts[i + 1]] for i in hits]) if hits else np.zeros(0, dtype=bool)
        rest_rows = rest_rows.filter(pa.array(sub))
        out.update({c: rest_rows.column(c) for c in rest})
    return pa.table({c: out[c] for c in wanted})


def _row_group_may_match(md, g: int, keys: Sequence[str], predicate) -> bool:
    """Whether row group ``g``'s statistics of the filter's (top-level, integer or string)
    columns allow a match; unsure counts as yes."""
    rg = md.row_group(g)
    stats = {}
    for i in range(rg.num_columns):
        col = rg.column(i)
        name = col.path_in_schema
        if name not in keys:
            continue
        st = col.statistics
        if st is None or not st.has_min_max or st.physical_type not in ("INT32", "INT64", "BYTE_ARRAY") \
                or st.logical_type.type not in ("NONE", "INT", "STRING"):
            continue
        stats[name] = (st.min, st.max, st.null_count if st.has_null_count else None)
    if not stats:
        return True
    try:
        return predicate.may_match(stats, rg.num_rows)
    except Exception:  # noqa: BLE001 - statistics we cannot compare never prune
        return True


# ----------------------------------------------------------------------------- Avro data files

def _avro_type(t: DataType, name: str):
    r = t.root
    if r in ("ARRAY", "MULTISET") and isinstance(t, (ArrayType, MultisetType)):
        if isinstance(t, MultisetType):
            base = {"type": "map", "values": "int"}
        else:
            base = {"type": "array", "items": _avro_type(t.element, name + "_element")}
    elif isinstance(t, MapType):
        if t.key.root not in ("VARCHAR", "CHAR"):
            base = {"type": "array", "items": {"type": "record", "name": name + "_entry", "fields": [
                {"name": "key", "type": _avro_type(t.key, name + "_key")},
                {"name": "value", "type": _avro_type(t.value, name + "_value")}]}}
        else:
            base = {"type": "map", "values": _avro_type(t.value, name + "_value")}
    elif isinstance(t, RowType):
        base = {"type": "record", "name": name, "fields": [
            {"name": f.name, "type": _avro_type(f.type, f"{name}_{f.name}")} for f in t.fields]}
    else:
        base = {
            "BOOLEAN": "boolean", "TINYINT": "int", "SMALLINT": "int", "INT": "int", "BIGINT": "long",
            "FLOAT": "float", "DOUBLE": "double", "CHAR": "string", "VARCHAR": "string",
            "BINARY": "bytes", "VARBINARY": "bytes",
            "DATE": {"type": "int", "logicalType": "date"},
            "TIME": {"type": "int", "logicalType": "time-millis"},
        }.get(r)
        if r == "DECIMAL":
            base = {"type": "bytes", "logicalType": "decimal", "precision": t.precision, "scale": t.scale}
        elif r in ("TIMESTAMP", "TIMESTAMP_LTZ"):
            if t.precision > 6:
                raise UnsupportedTypeError(f"Avro data files cannot hold {t}: Avro timestamps stop at microseconds")
            logical = "timestamp-millis" if t.precision <= 3 else "timestamp-micros"
            if r == "TIMESTAMP_LTZ":
                logical = "local-" + logical
            base = {"type": "long", "logicalType": logical}
        if base is None:
            raise UnsupportedTypeError(f"Type {t} cannot be stored in Avro")
    return ["null", base] if t.nullable else base


def avro_schema(fields: Sequence[DataField]) -> dict:
    return {"type": "record", "name": "record", "namespace": "org.apache.paimon.avro.generated",
            "fields": [{"name": f.name, "type": _avro_type(f.type, "record_" + f.name)} for f in fields]}


def _write_avro(table: pa.Table, compression: str) -> bytes:
    import fastavro

    fields = fields_from_arrow(table.schema)
    records = table.to_pylist()
    convert = [f for f in fields if _avro_needs_conversion(f.type)]
    for rec in records:
        for f in convert:
            rec[f.name] = _to_avro_value(rec[f.name], f.type)
    buf = io.BytesIO()
    codec = {"zstd": "zstandard", "none": "null", "uncompressed": "null"}.get(compression, compression)
    fastavro.writer(buf, fastavro.parse_schema(avro_schema(fields)), records, codec=codec)
    return buf.getvalue()


def _read_avro(data: bytes, fields: Sequence[DataField]) -> pa.Table:
    import fastavro

    reader = fastavro.reader(io.BytesIO(data))
    records = list(reader)
    top = reader.writer_schema
    if isinstance(top, list):  # Java Paimon writes the record as a union ["null", record]
        top = next(x for x in top if isinstance(x, dict) and x.get("type") == "record")
    names = [f["name"] for f in top["fields"]]
    by_name = {f.name: f for f in fields}
    arrays, out_fields = [], []
    for name in names:
        f = by_name.get(name)
        if f is None:
            continue
        values = [_from_avro_value(r.get(name), f.type) for r in records]
        arrays.append(pa.array(values, type=f.type.to_arrow()))
        out_fields.append(f.to_arrow())
    return pa.Table.from_arrays(arrays, schema=pa.schema(out_fields))


def _avro_needs_conversion(t: DataType) -> bool:
    """Whether values of ``t`` (Arrow's Python form) differ from what fastavro takes/returns:
    maps (Avro maps are dicts, maps with non-string keys arrays of key/value records) anywhere."""
    if isinstance(t, (MapType, MultisetType)):
        return True
    if isinstance(t, ArrayType):
        return _avro_needs_conversion(t.element)
    if isinstance(t, RowType):
        return any(_avro_needs_conversion(f.type) for f in t.fields)
    return False


def _to_avro_value(v, t: DataType):
    if v is None:
        return None
    if isinstance(t, MultisetType):
        return {str(k): n for k, n in v}
    if isinstance(t, MapType):
        if t.key.root in ("VARCHAR", "CHAR"):
            return {k: _to_avro_value(x, t.value) for k, x in v}
        return [{"key": _to_avro_value(k, t.key), "value": _to_avro_value(x, t.value)} for k, x in v]
    if isinstance(t, ArrayType):
        return [_to_avro_value(x, t.element) for x in v] if _avro_needs_conversion(t.element) else v
    if isinstance(t, RowType):
        return {f.name: _to_avro_value(v.get(f.name), f.type) for f in t.fields}
    return v


def _from_avro_value(v, t: DataType):
    if v is None:
        return None
    if isinstance(t, MultisetType):
        return list(v.items())
    if isinstance(t, MapType):
        pairs = [(e["key"], e["value"]) for e in v] if isinstance(v, list) else list(v.items())
        return [(_from_avro_value(k, t.key), _from_avro_value(x, t.value)) for k, x in pairs]
    if isinstance(t, ArrayType):
        return [_from_avro_value(x, t.element) for x in v]
    if isinstance(t, RowType):
        return {f.name: _from_avro_value(v.get(f.name), f.type) for f in t.fields}
    if t.root == "TIMESTAMP" and isinstance(v, dt.datetime):
        return v.replace(tzinfo=None)
    if t.root == "DECIMAL" and not isinstance(v, Decimal):
        return Decimal(v)
    return v


def iter_batches(table: pa.Table, size: int) -> Iterator[pa.Table]:
    for start in range(0, table.num_rows, size):
        yield table.slice(start, size)
