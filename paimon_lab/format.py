"""Data file formats: Parquet (default), ORC and Avro, read and written as Arrow tables."""

from __future__ import annotations

import datetime as dt
import io
from decimal import Decimal
from typing import Iterator, Sequence

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from .errors import CorruptFileError, UnsupportedTypeError
from .fs import FileIO
from .types import ArrayType, DataField, DataType, MapType, MultisetType, RowType

FORMATS = ("parquet", "orc", "avro")


def _parquet_compression(codec: str) -> str:
    return {"none": "none", "uncompressed": "none"}.get(codec, codec)


# A column is written without a dictionary when a sample of its values is (almost) all distinct:
# a dictionary of unique values makes the file bigger and costs 3-5x the encoding time.
_DICTIONARY_SAMPLE = 2048
_DISTINCT_RATIO = 0.95


def _delta_encodable(t: pa.DataType) -> bool:
    """Types stored as Parquet INT32/INT64, where DELTA_BINARY_PACKED applies."""
    return pa.types.is_integer(t) or pa.types.is_date32(t) or pa.types.is_timestamp(t)


def parquet_encodings(sample: pa.Table, dictionary: bool | None = None) -> dict:
    """``ParquetWriter`` keyword arguments choosing each column's encoding from ``sample``.

    ``dictionary`` True or False forces dictionary encoding on or off for every column (the
    ``parquet.enable.dictionary`` table option, as in Parquet's Java writer); None decides per
    column: dictionary unless the first values are almost all distinct. Integer-like columns
    without a dictionary are delta-encoded (DELTA_BINARY_PACKED, what Parquet's v2 writer uses):
    sorted keys and sequence numbers shrink to a few bits per value and decode 3-4x faster.
    """
    if dictionary is True:
        return {"use_dictionary": True}
    plain = {f.name for f, column in zip(sample.schema, sample.columns)
             if dictionary is False or not _dictionary_pays(column)}
    return {"use_dictionary": [n for n in sample.column_names if n not in plain],
            "column_encoding": {f.name: "DELTA_BINARY_PACKED" for f in sample.schema
                                if f.name in plain and _delta_encodable(f.type)} or None}


def _dictionary_pays(column: pa.ChunkedArray) -> bool:
    if pa.types.is_nested(column.type):
        return True  # not sampled; its leaf columns are written PLAIN
    head = column.slice(0, _DICTIONARY_SAMPLE)
    n = len(head) - head.null_count
    if n < 64:
        return True  # too few values to judge (pyarrow still falls back past 1 MB of dictionary)
    return pc.count_distinct(head).as_py() <= _DISTINCT_RATIO * n


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
                 file_columns: Sequence[str] | None = None, dictionary: bool | None = None):
        if fmt not in FORMATS:
            raise UnsupportedTypeError(f"Unknown file format '{fmt}'")
        self.io, self.fmt = file_io, fmt
        self.file_columns = list(file_columns) if file_columns is not None else None
        self.schema = pa.schema([schema.field(c) for c in self.file_columns]) if self.file_columns else schema
        self.target = target_size
        self.next_path = next_path
        self.compression = compression
        self.zstd_level = zstd_level
        self.dictionary = dictionary
        self._encodings: dict | None = None  # chosen from the first rows, kept for every file
        self.done: list[tuple[str, int, pa.Table]] = []
        self._open: tuple | None = None  # (path, sink, parquet writer, [row slices])

    @classmethod
    def for_table(cls, file_io: FileIO, core, schema: pa.Schema, target_size: int, next_path,
                  file_columns: Sequence[str] | None = None) -> "RollingFileWriter":
        """A writer with a table's format options (``core``: its :class:`CoreOptions`)."""
        return cls(file_io, core.file_format, schema, target_size, next_path, core.get("file.compression"),
                   core.get("file.compression.zstd-level"), file_columns, core.get("parquet.enable.dictionary"))

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
                data = write_table_bytes(self._project(part), self.fmt, self.compression)
                self.io.write_bytes(path, data)
                self.done.append((path, len(data), part))

    def _write_parquet(self, table: pa.Table) -> None:
        level = self.zstd_level if self.compression == "zstd" else None
        # The writer's position only moves when a row group is flushed, so row groups must be
        # small enough (in memory) that a file cannot overshoot the target by much.
        per_row = max(1, table.nbytes // max(1, table.num_rows))
        row_group = int(min(256 * 1024, max(1024, self.target // per_row)))
        start = 0
        while start < table.num_rows:
            if self._open is None:
                if self._encodings is None:
                    self._encodings = parquet_encodings(self._project(table.slice(start, _DICTIONARY_SAMPLE)),
                                                        self.dictionary)
                path = self.next_path()
                sink = self.io.open_output(path)
                writer = pq.ParquetWriter(sink, self.schema, compression=_parquet_compression(self.compression),
                                          compression_level=level, write_statistics=True, **self._encodings)
                self._open = (path, sink, writer, [])
            path, sink, writer, slices = self._open
            chunk = table.slice(start, row_group)
            writer.write_table(self._project(chunk), row_group_size=row_group)
            slices.append(chunk)
            start += chunk.num_rows
            if sink.tell() >= self.target:
                self._finish()

    def _finish(self) -> None:
        if self._open is None:
            return
        path, sink, writer, slices = self._open
        self._open = None
        try:
            writer.close()
            size = sink.tell()
        finally:
            sink.close()
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
            path, sink, writer, _ = self._open
            self._open = None
            try:
                writer.close()
            finally:
                sink.close()
            paths.append(path)
        self.done = []
        return paths


def write_table_bytes(table: pa.Table, fmt: str, compression: str = "zstd") -> bytes:
    if fmt == "parquet":
        buf = pa.BufferOutputStream()
        pq.write_table(table, buf, compression=_parquet_compression(compression))
        return buf.getvalue().to_pybytes()
    if fmt == "orc":
        import pyarrow.orc as orc

        buf = pa.BufferOutputStream()
        codec = {"zstd": "zstd", "snappy": "snappy", "lz4": "lz4", "gzip": "zlib"}.get(compression, "uncompressed")
        orc.write_table(table, buf, compression=codec)
        return buf.getvalue().to_pybytes()
    if fmt == "avro":
        return _write_avro(table, compression)
    raise UnsupportedTypeError(f"Unknown file format '{fmt}'")


def read_file(file_io: FileIO, path: str, fmt: str, columns: Sequence[str] | None,
              fields: Sequence[DataField], filter: pc.Expression | None = None, use_threads: bool = True) -> pa.Table:
    """Read one data file (only ``columns``; rows pre-filtered by ``filter`` where the format allows).
    ``use_threads``: decode Parquet columns on Arrow's thread pool (off when the caller already
    reads several files in parallel)."""
    try:
        if fmt == "parquet":
            with file_io.open_input(path) as f:
                return pq.read_table(f, columns=list(columns) if columns is not None else None,
                                     filters=filter, use_threads=use_threads)
        if fmt == "orc":
            import pyarrow.orc as orc

            with file_io.open_input(path) as f:
                table = orc.ORCFile(f).read(columns=list(columns) if columns is not None else None)
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

    from .types import fields_from_arrow

    fields = fields_from_arrow(table.schema)
    records = table.to_pylist()
    for f in fields:
        if isinstance(f.type, MultisetType) or (isinstance(f.type, MapType) and f.type.key.root not in ("VARCHAR", "CHAR")):
            for rec in records:
                val = rec[f.name]
                if val is not None:
                    rec[f.name] = ({str(k): v for k, v in val} if isinstance(f.type, MultisetType)
                                   else [{"key": k, "value": v} for k, v in val])
        elif isinstance(f.type, MapType):
            for rec in records:
                if rec[f.name] is not None:
                    rec[f.name] = dict(rec[f.name])
    buf = io.BytesIO()
    codec = {"zstd": "zstandard", "none": "null", "uncompressed": "null"}.get(compression, compression)
    fastavro.writer(buf, fastavro.parse_schema(avro_schema(fields)), records, codec=codec)
    return buf.getvalue()


def _read_avro(data: bytes, fields: Sequence[DataField]) -> pa.Table:
    import fastavro

    reader = fastavro.reader(io.BytesIO(data))
    records = list(reader)
    names = [f["name"] for f in reader.writer_schema["fields"]]
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


def _from_avro_value(v, t: DataType):
    if v is None:
        return None
    if isinstance(t, MultisetType):
        return list(v.items())
    if isinstance(t, MapType):
        return [(e["key"], e["value"]) for e in v] if isinstance(v, list) else list(v.items())
    if t.root == "TIMESTAMP" and isinstance(v, dt.datetime):
        return v.replace(tzinfo=None)
    if t.root == "DECIMAL" and not isinstance(v, Decimal):
        return Decimal(v)
    return v


def iter_batches(table: pa.Table, size: int) -> Iterator[pa.Table]:
    for start in range(0, table.num_rows, size):
        yield table.slice(start, size)
