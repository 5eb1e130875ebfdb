"""Key-value rows of primary-key tables and the data files that hold them.

A primary-key table's data file has the columns ``_KEY_<k>`` for each primary-key column that
is not a partition key (left out in ``data-file.thin-mode``), ``_SEQUENCE_NUMBER``,
``_VALUE_KIND`` (0 +I, 1 -U, 2 +U, 3 -D) and then every table column. In memory we keep
exactly that layout (with the key columns always present), so a file read is already a
"KV table" and writing one is a projection.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property
from typing import TYPE_CHECKING, Callable

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from paimon_lab.core import binary_row
from paimon_lab.utils.arrow import sort_indices_nulls_first
from paimon_lab.errors import DataValidationError
from paimon_lab.core.file_format import RollingFileWriter, read_file
from paimon_lab.io.file_io import FileIO
from paimon_lab.core.manifest import FILE_SOURCE_APPEND, DataFileMeta, creation_time_now
from paimon_lab.core.stats import collect_stats, summary_min_max
from paimon_lab.core.types import DataField, atomic
from paimon_lab.errors import PaimonLabError, SchemaError

if TYPE_CHECKING:
    from paimon_lab.core.options import CoreOptions
    from paimon_lab.core.schema import TableSchema

# Builds a finished data file's index: (data file path, its rows) -> (embedded bytes, extra files).
FileIndexer = Callable[[str, pa.Table], "tuple[bytes | None, tuple[str, ...]]"]

SEQUENCE_NUMBER = "_SEQUENCE_NUMBER"
VALUE_KIND = "_VALUE_KIND"
KEY_PREFIX = "_KEY_"
ROW_KIND_COLUMN = "_row_kind"
INSERT, UPDATE_BEFORE, UPDATE_AFTER, DELETE = 0, 1, 2, 3
ROW_KINDS = {"+I": INSERT, "-U": UPDATE_BEFORE, "+U": UPDATE_AFTER, "-D": DELETE}
KIND_NAMES = {v: k for k, v in ROW_KINDS.items()}
# Field ids Paimon reserves for the system columns.
SEQUENCE_FIELD_ID = 2147483646
VALUE_KIND_FIELD_ID = 2147483645
KEY_FIELD_ID_START = 1_073_741_823  # Integer.MAX_VALUE / 2
# the extra columns of a KeyValueFileWriter's slice summaries
_SUMMARY_ROWS, _SUMMARY_DELETES, _SUMMARY_NULLS = "__summary_rows__", "__summary_deletes__", "__summary_nulls__"


def is_retract(kinds: pa.Array | pa.ChunkedArray) -> pa.Array:
    """True where the row kind is -U or -D."""
    return pc.or_(pc.equal(kinds, UPDATE_BEFORE), pc.equal(kinds, DELETE))


@dataclass
class KeyValueLayout:
    """How one schema's rows become key-value rows and back."""

    schema: "TableSchema"

    def __post_init__(self) -> None:
        s = self.schema
        self.key_names = s.trimmed_primary_keys
        self.key_fields = [DataField(KEY_FIELD_ID_START + f.id, KEY_PREFIX + f.name, f.type)
                           for f in s.fields_of(self.key_names)]
        self.key_columns = [f.name for f in self.key_fields]
        self.value_fields = list(s.fields)
        self.value_names = [f.name for f in s.fields]
        core = s.core
        seq = core.get("sequence.field")
        self.sequence_fields = [c.strip() for c in seq.split(",")] if seq else []
        for c in self.sequence_fields:
            s.field(c)  # raises SchemaError for unknown columns
        kind_field = core.get("rowkind.field")
        if kind_field is not None:
            f = s.field(kind_field)
            if f.type.root not in ("VARCHAR", "CHAR"):

                raise SchemaError(f"'rowkind.field' column '{kind_field}' must be a string column")
        if self.sequence_fields and core.get("merge-engine") == "first-row":

            raise SchemaError("The first-row merge engine does not support 'sequence.field'")
        padding = core.get("sequence.auto-padding") or ""
        self.row_kind_flag = "row-kind-flag" in [p.strip() for p in padding.split(",")]
        self.thin_mode = bool(core.get("data-file.thin-mode"))
        self.system_fields = [DataField(SEQUENCE_FIELD_ID, SEQUENCE_NUMBER, atomic("BIGINT", False)),
                              DataField(VALUE_KIND_FIELD_ID, VALUE_KIND, atomic("TINYINT", False))]
        self.arrow_schema = pa.schema([f.to_arrow() for f in self.key_fields + self.system_fields + self.value_fields])
        file_fields = ([] if self.thin_mode else self.key_fields) + self.system_fields + self.value_fields
        self.file_fields = file_fields
        self.file_arrow_schema = pa.schema([f.to_arrow() for f in file_fields])
        self.key_types = [f.type for f in self.key_fields]

    @cached_property
    def fields_by_name(self) -> dict[str, DataField]:
        """Every column of the in-memory layout (keys, system columns, values) by name."""
        return {f.name: f for f in self.key_fields + self.system_fields + self.value_fields}

    @property
    def sort_columns(self) -> list[str]:
        """Merge order: key, then the user sequence fields, then the sequence number."""
        return self.key_columns + self.sequence_fields + [SEQUENCE_NUMBER]

    def to_kv(self, table: pa.Table, kinds: np.ndarray, first_sequence: int) -> pa.Table:
        """Wrap validated user rows as KV rows with consecutive sequence numbers."""
        n = table.num_rows
        columns = [table.column(k) for k in self.key_names]
        columns.append(pa.array(np.arange(first_sequence, first_sequence + n, dtype=np.int64)))
        columns.append(pa.array(kinds.astype(np.int8), pa.int8()))
        columns.extend(table.column(c) for c in self.value_names)
        return pa.Table.from_arrays(columns, schema=self.arrow_schema)

    def values(self, kv: pa.Table) -> pa.Table:
        return kv.select(self.value_names)

    def sort(self, kv: pa.Table) -> pa.Table:
        if kv.num_rows <= 1:
            return kv
        keys = self.sort_columns
        table = kv
        if self.row_kind_flag and self.sequence_fields:
            # 'sequence.auto-padding' = 'row-kind-flag': on equal sequence fields, -U/-D go first.
            table = kv.append_column("__add_flag", pc.invert(is_retract(kv.column(VALUE_KIND))))
            keys = self.key_columns + self.sequence_fields + ["__add_flag", SEQUENCE_NUMBER]
        return kv.take(sort_indices_nulls_first(table, keys))

    # ------------------------------------------------------------------ files
    def read(self, file_io: FileIO, path: str, file: DataFileMeta, file_schema: "TableSchema",
             filter: pc.Expression | None = None) -> pa.Table:
        """Read a KV data file as this layout (value columns mapped by field id), optionally only
        the rows matching ``filter`` (an expression over the file's own column names)."""
        old = KeyValueLayout(file_schema) if file_schema.id != self.schema.id else self
        raw = read_file(file_io, path, file.format, None, old.file_fields, filter)
        by_id = {f.id: f for f in file_schema.fields}
        out = []
        for f in self.key_fields:
            src = KEY_PREFIX + by_id[f.id - KEY_FIELD_ID_START].name if (f.id - KEY_FIELD_ID_START) in by_id else None
            if src is not None and src in raw.column_names:
                col = raw.column(src)
            else:  # thin mode: keys are read from the value columns
                col = raw.column(by_id[f.id - KEY_FIELD_ID_START].name)
            out.append(col.cast(f.type.to_arrow()) if col.type != f.type.to_arrow() else col)
        out.append(raw.column(SEQUENCE_NUMBER).cast(pa.int64()))
        out.append(raw.column(VALUE_KIND).cast(pa.int8()))
        for f in self.value_fields:
            src = by_id.get(f.id)
            if src is None or src.name not in raw.column_names:
                out.append(pa.nulls(raw.num_rows, f.type.to_arrow()))
                continue
            col = raw.column(src.name)
            out.append(col.cast(f.type.to_arrow()) if col.type != f.type.to_arrow() else col)
        return pa.Table.from_arrays(out, schema=self.arrow_schema)

    def first_key_file_column(self, file_schema: "TableSchema") -> str:
        """The name the first key column has inside files written with ``file_schema``."""
        fid = self.key_fields[0].id - KEY_FIELD_ID_START
        name = next(f.name for f in file_schema.fields if f.id == fid)
        return name if self.thin_mode else KEY_PREFIX + name

    def writer(self, file_io: FileIO, options: "CoreOptions", level: int, next_path: Callable[[], str],
               file_source: int = FILE_SOURCE_APPEND, target_size: int | None = None,
               indexer: FileIndexer | None = None) -> "KeyValueFileWriter":
        return KeyValueFileWriter(self, file_io, options, level, next_path, file_source, target_size, indexer)

    def write_sorted(self, file_io: FileIO, kv: pa.Table, options: "CoreOptions", level: int,
                     next_path: Callable[[], str], file_source: int = FILE_SOURCE_APPEND,
                     target_size: int | None = None, indexer: FileIndexer | None = None) -> list[DataFileMeta]:
        """Write sorted KV rows into rolling files; returns the files' metadata. ``indexer``
        (see ``fileindex.data_file``) builds each file's index over its value columns."""
        w = self.writer(file_io, options, level, next_path, file_source, target_size, indexer)
        try:
            w.write(kv)
            return w.close()
        except BaseException:
            file_io.delete_quietly(w.abort())
            raise


def _with_extension(next_path: Callable[[], str], default: str, fmt: str) -> Callable[[], str]:
    """``next_path`` with its names' extension ``.<default>`` swapped for ``.<fmt>``."""
    def path() -> str:
        p = next_path()
        if not p.endswith("." + default):
            raise PaimonLabError(f"Data file path {p} does not end with the table's format '.{default}'")
        return p[:-len(default)] + fmt
    return path


class KeyValueFileWriter:
    """Rolling KV data files at one level; metadata is computed as each file is finished."""

    def __init__(self, layout: KeyValueLayout, file_io: FileIO, options: "CoreOptions", level: int,
                 next_path: Callable[[], str], file_source: int, target_size: int | None,
                 indexer: FileIndexer | None = None):
        self.layout, self.options, self.level, self.file_source = layout, options, level, file_source
        self.indexer = indexer
        self.index_paths: list[str] = []
        fmt = options.format_for_level(level)
        if fmt != options.file_format:   # 'file.format.per.level': the name's extension is the level's format
            next_path = _with_extension(next_path, options.file_format, fmt)
        self.rolling = RollingFileWriter.for_table(file_io, options, layout.arrow_schema,
                                                   target_size or options.target_file_size, next_path,
                                                   [f.name for f in layout.file_fields], layout.file_fields, level)
        self.metas: list[DataFileMeta] = []
        if indexer is None:   # a file index needs every row; the metadata needs only summaries
            self.rolling.summarize = self._summary

    def _summary(self, kv: pa.Table) -> pa.Table:
        """What a file's metadata needs of a slice of its rows: the first row, every column's min
        and max, the last row (min/max over these rows are the slice's), and the counts of rows,
        deletes and each column's nulls (in extra columns, on the first row)."""
        n = kv.num_rows
        columns = [pa.concat_arrays([c.slice(0, 1).combine_chunks(), summary_min_max(c),
                                     c.slice(n - 1, 1).combine_chunks()]) for c in kv.columns]
        zeros = [0, 0, 0]
        deletes = pc.sum(is_retract(kv.column(VALUE_KIND))).as_py() or 0
        counts = {_SUMMARY_ROWS: n, _SUMMARY_DELETES: deletes}
        counts.update({_SUMMARY_NULLS + name: kv.column(name).null_count for name in kv.column_names})
        names = kv.column_names + list(counts)
        arrays = columns + [pa.array([v] + zeros, pa.int64()) for v in counts.values()]
        return pa.Table.from_arrays(arrays, names=names)

    def write(self, kv: pa.Table) -> None:
        self.rolling.write(kv)
        self.metas += [self._meta(*done) for done in self.rolling.drain()]

    def close(self) -> list[DataFileMeta]:
        self.metas += [self._meta(*done) for done in self.rolling.close()]
        return self.metas

    def abort(self) -> list[str]:
        """Paths of the files written so far (data files and their index files), to delete."""
        return self.rolling.abort() + list(self.index_paths)

    def _meta(self, path: str, size: int, rows: pa.Table) -> DataFileMeta:
        """The metadata of a finished file from its rows, or from the summaries of its slices."""
        layout, options = self.layout, self.options
        key_cols = [rows.column(c) for c in layout.key_columns]
        mm = pc.min_max(rows.column(SEQUENCE_NUMBER))
        nulls = None
        if _SUMMARY_ROWS in rows.column_names:
            row_count = pc.sum(rows.column(_SUMMARY_ROWS)).as_py()
            deletes = pc.sum(rows.column(_SUMMARY_DELETES)).as_py()
            nulls = {name[len(_SUMMARY_NULLS):]: pc.sum(rows.column(name)).as_py()
                     for name in rows.column_names if name.startswith(_SUMMARY_NULLS)}
        else:
            row_count = rows.num_rows
            deletes = pc.sum(is_retract(rows.column(VALUE_KIND))).as_py() or 0
        embedded, extra = None, ()
        if self.indexer is not None:
            embedded, extra = self.indexer(path, rows.select(layout.value_names))
            directory = path.rpartition("/")[0]
            self.index_paths += [f"{directory}/{name}" for name in extra]
        return DataFileMeta(
            file_name=path.rsplit("/", 1)[-1], file_size=size, row_count=row_count,
            min_key=binary_row.serialize([c[0].as_py() for c in key_cols], layout.key_types),
            max_key=binary_row.serialize([c[-1].as_py() for c in key_cols], layout.key_types),
            key_stats=collect_stats(rows, layout.key_fields, options, nulls),
            value_stats=collect_stats(rows, layout.value_fields, options, nulls),
            min_sequence_number=mm["min"].as_py(), max_sequence_number=mm["max"].as_py(),
            schema_id=layout.schema.id, level=self.level, creation_time_millis=creation_time_now(),
            delete_row_count=deletes, file_source=self.file_source, extra_files=extra, embedded_index=embedded)


def parse_row_kinds(row_kinds, n: int) -> np.ndarray:
    """Row kinds given as '+I'/'-U'/'+U'/'-D' strings (or their byte values) as an int8 array."""
    if row_kinds is None:
        return np.zeros(n, dtype=np.int8)
    arr = row_kinds.to_pylist() if isinstance(row_kinds, (pa.Array, pa.ChunkedArray)) else list(row_kinds)
    if len(arr) != n:
        raise DataValidationError(f"row_kinds has {len(arr)} entries for {n} rows")
    if not arr:
        return np.zeros(0, dtype=np.int8)
    if isinstance(arr[0], str):
        strings = pa.array(arr, pa.string())
        codes = pc.index_in(strings, value_set=pa.array(list(ROW_KINDS)))
        if codes.null_count:
            bad = pc.filter(strings, pc.is_null(codes))[0].as_py()
            raise DataValidationError(f"Unknown row kind {bad!r}; use one of {list(ROW_KINDS)}")
        return np.asarray(codes.to_numpy(zero_copy_only=False), dtype=np.int8)
    kinds = np.asarray(arr, dtype=np.int64)
    if ((kinds < 0) | (kinds > 3)).any():
        raise DataValidationError(f"Invalid row kind value {int(kinds[(kinds < 0) | (kinds > 3)][0])}")
    return kinds.astype(np.int8)
