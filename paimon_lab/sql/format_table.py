"""Format tables: a directory of CSV / Parquet / ORC / JSON files with a Paimon schema, read as
a dataset and written file by file (INSERT OVERWRITE replaces the written partitions' files)."""

from __future__ import annotations

import uuid

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.csv as csv
import pyarrow.fs as pafs

from paimon_lab.core.file_format import write_table_bytes
from paimon_lab.io.file_io import join
from paimon_lab.sql.clauses import TableDef
from paimon_lab.sql.errors import SqlError
from paimon_lab.sql.lexer import TokenStream
from paimon_lab.sql.relations import Relation
from paimon_lab.sql.schemas import create_paimon_table

FORMATS = {"csv": "csv", "parquet": "parquet", "orc": "orc", "json": "json"}


def _format(table) -> str:
    fmt = table.options.get("file.format", "parquet").lower()
    if fmt not in FORMATS:
        raise SqlError(f"Format table {table.identifier}: file.format '{fmt}' is not supported (csv, parquet, orc)")
    return fmt


def _delimiter(table) -> str:
    o = table.options
    return o.get("csv.field-delimiter", o.get("field-delimiter", ","))


def _data_files(table) -> list[str]:
    io = table.file_io
    sel = pafs.FileSelector(io.arrow_path(table.path), allow_not_found=True, recursive=True)
    root = io.arrow_path(table.path).rstrip("/") + "/"
    out = []
    for info in io.fs.get_file_info(sel):
        if info.type != pafs.FileType.File:
            continue
        rel = info.path[len(root):] if info.path.startswith(root) else info.base_name
        if rel.startswith("schema/") or any(p.startswith(".") or p.startswith("_") for p in rel.split("/")):
            continue
        out.append(info.path)
    return sorted(out)


class FormatTableRelation(Relation):
    """A format table read as a pyarrow dataset over its files (partition directories hive-style)."""

    def __init__(self, table, label: str):
        self.table = table
        self.label = label

    @property
    def schema(self) -> pa.Schema:
        return self.table.schema.arrow_schema()

    def read(self, columns=None, predicate=None, limit=None) -> pa.Table:
        import pyarrow.dataset as ds  # heavy, imported when a format table is read

        t = self.table
        schema = self.schema
        parts = t.partition_keys
        files = _data_files(t)
        if not files:
            data = schema.empty_table()
        else:
            data_fields = [f for f in schema if f.name not in parts]
            fmt = _format(t)
            if fmt == "csv":
                file_format = ds.CsvFileFormat(
                    parse_options=csv.ParseOptions(delimiter=_delimiter(t)),
                    read_options=csv.ReadOptions(column_names=[f.name for f in data_fields]),
                    convert_options=csv.ConvertOptions(column_types={f.name: f.type for f in data_fields}))
            elif fmt == "json":
                file_format = ds.JsonFileFormat()
            else:
                file_format = fmt
            partitioning = ds.partitioning(pa.schema([schema.field(p) for p in parts]), flavor="hive") \
                if parts else None
            dataset = ds.dataset(files, schema=schema, format=file_format, filesystem=t.file_io.fs,
                                 partitioning=partitioning, partition_base_dir=t.file_io.arrow_path(t.path))
            data = dataset.to_table()
        data = data.select(schema.names).cast(schema)
        return data.select(columns) if columns is not None else data


def format_insert(table, rows: pa.Table, overwrite: bool, static: dict) -> None:
    """Append files (INSERT INTO) or replace the written partitions' files (INSERT OVERWRITE)."""
    if getattr(table, "read_only", False):
        raise SqlError(f"Format table {table.identifier} is a Hive table: paimon-lab reads it but does not write it")
    fmt = _format(table)
    parts = table.partition_keys
    io = table.file_io
    groups: list[tuple[dict, pa.Table]] = []
    if parts:
        keys = rows.select(parts).group_by(parts, use_threads=False).aggregate([]).to_pylist()
        for key in keys:
            mask = None
            for k, v in key.items():
                m = pc.is_null(rows.column(k)) if v is None else pc.equal(rows.column(k), pa.scalar(v, rows.schema.field(k).type))
                mask = m if mask is None else pc.and_(mask, m)
            groups.append((key, rows.filter(mask)))
    else:
        groups.append(({}, rows))
    default = table.options.get("partition.default-name", "__DEFAULT_PARTITION__")

    def directory(key: dict) -> str:
        segs = [f"{k}={default if v is None else v}" for k, v in key.items()]
        return join(table.path, *segs) if segs else table.path

    if overwrite:
        if parts:
            targets = [directory({k: static[k] for k in parts})] if static and set(static) >= set(parts) else \
                [directory(k) for k, _ in groups]
        else:
            targets = [table.path]
        old = [f for f in _data_files(table) if any(
            f.startswith(io.arrow_path(d).rstrip("/") + "/") for d in targets)]
        if not parts:
            old = _data_files(table)
    else:
        old = []
    written = []
    try:
        for key, data in groups:
            if data.num_rows == 0:
                continue
            body = data.drop_columns(parts) if parts else data
            path = join(directory(key), f"data-{uuid.uuid4()}-0.{fmt}")
            with io.open_output(path) as out:
                if fmt == "csv":
                    csv.write_csv(body, out, csv.WriteOptions(include_header=False, delimiter=_delimiter(table)))
                elif fmt in ("parquet", "orc"):
                    # laid out as Java Paimon writes these formats (short DECIMALs as integers,
                    # TIMESTAMP(7..9) as INT96, TIME in ORC as an int), so Java reads them too
                    out.write(write_table_bytes(body, fmt, "snappy" if fmt == "parquet" else "none"))
                else:
                    raise SqlError("Writing JSON format tables is not supported")
            written.append(path)
    except BaseException:
        io.delete_quietly(written)
        raise
    for f in old:
        try:
            io.fs.delete_file(f)
        except OSError:
            pass


def create_format_table(ts: TokenStream, d: TableDef, entry, db: str, name: str) -> None:
    """CREATE TABLE ... WITH ('type' = 'format-table', 'file.format' = ...)."""
    fmt = d.options.get("file.format", "parquet").lower()
    if fmt not in ("csv", "parquet", "orc", "json"):
        raise ts.error(f"Format tables support file.format csv, parquet, orc (got '{fmt}')", d.token)
    if not d.columns:
        raise ts.error("A format table needs columns", d.token)
    if d.primary_keys:
        raise ts.error("Format tables have no primary key", d.token)
    if entry.catalog.table_exists(f"{db}.{name}"):
        if d.if_not_exists:
            return None
        raise ts.error(f"Table '{entry.name}.{db}.{name}' already exists", d.token)
    create_paimon_table(ts, entry, db, name, d.columns, [], d.partition_keys, {}, d.comment, d.token,
                        raw_options=dict(d.options))
    return None
