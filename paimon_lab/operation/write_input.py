"""User data in, Arrow out: check incoming rows against the table schema and group them."""

from __future__ import annotations

from contextvars import ContextVar
from typing import TYPE_CHECKING, Any, Sequence

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from paimon_lab.core.options import TYPE_LENGTH_ENFORCER
from paimon_lab.core.types import MAX_LENGTH, truncate_timestamps
from paimon_lab.errors import DataValidationError

if TYPE_CHECKING:
    from paimon_lab.core.schema import TableSchema


def to_arrow_table(data: Any, schema: "TableSchema") -> pa.Table:
    """Turn user data into an Arrow table of exactly the table's schema, or say what is wrong."""
    if isinstance(data, pa.RecordBatch):
        data = pa.Table.from_batches([data])
    elif not isinstance(data, pa.Table):
        try:
            import pandas as pd
        except ImportError:  # pragma: no cover
            pd = None
        if pd is not None and isinstance(data, pd.DataFrame):
            data = pa.Table.from_pandas(data, preserve_index=False)
        elif isinstance(data, (list, dict)):
            data = _from_python(data)
        else:
            raise DataValidationError(
                f"Cannot write {type(data).__name__}; pass a pyarrow Table/RecordBatch or a pandas DataFrame")
    target = schema.arrow_schema()
    given = set(data.column_names)
    missing = [n for n in target.names if n not in given]
    extra = [n for n in data.column_names if n not in target.names]
    if extra:
        raise DataValidationError(f"Data has columns that are not in the table: {extra}; table columns are "
                                  f"{target.names}")
    if missing:
        data = _fill_missing(data, missing, schema, target)
    columns = []
    length_mode = length_enforcer_override.get() or schema.core.get(TYPE_LENGTH_ENFORCER)
    for f in target:
        column = data.column(f.name)
        dtype = schema.field(f.name).type
        timestamp = dtype.root in ("TIMESTAMP", "TIMESTAMP_LTZ")
        # Flink casts to the column's precision: timestamps before the (safe) cast, which would
        # refuse to drop their digits; other inputs (strings...) once they are timestamps
        truncated = timestamp and pa.types.is_timestamp(column.type)
        if truncated:
            column = truncate_timestamps(column, dtype.precision)
        if column.type != f.type:
            try:
                column = column.cast(f.type, safe=True)
            except (pa.ArrowInvalid, pa.ArrowNotImplementedError, pa.ArrowTypeError) as e:
                raise DataValidationError(
                    f"Column '{f.name}' has type {column.type}, which cannot be stored as "
                    f"{schema.field(f.name).type}: {e}") from None
            if timestamp and not truncated:
                column = truncate_timestamps(column, dtype.precision)
        column = _with_default(column, schema.field(f.name))
        if not f.nullable and column.null_count:
            raise DataValidationError(f"Column '{f.name}' is NOT NULL but has {column.null_count} null value(s)")
        columns.append(enforce_length(column, schema.field(f.name), length_mode))
    return pa.Table.from_arrays(columns, schema=target)


def _from_python(data: list | dict) -> pa.Table:
    """A dict of columns (name -> list of values) or a list of rows (dicts) as an Arrow table."""
    if isinstance(data, dict):
        for name, values in data.items():
            if isinstance(values, (str, bytes, dict)) or not hasattr(values, "__len__"):
                raise DataValidationError(f"A dict of columns maps each column to a list of values; column "
                                          f"'{name}' holds {type(values).__name__} {values!r}")
        lengths = {name: len(values) for name, values in data.items()}
        if len(set(lengths.values())) > 1:
            raise DataValidationError(f"The columns have different lengths: {lengths}")
    else:
        # (pyarrow reads a row that is not a dict as a row of nulls)
        i, row = next(((i, r) for i, r in enumerate(data) if not isinstance(r, dict)), (None, None))
        if i is not None:
            raise DataValidationError(f"A list is written as rows, each a dict of column -> value; row {i} "
                                      f"is {type(row).__name__} {row!r}")
    try:
        return pa.table(data) if isinstance(data, dict) else pa.Table.from_pylist(data)
    except (pa.ArrowInvalid, pa.ArrowTypeError, pa.ArrowNotImplementedError) as e:
        raise DataValidationError(f"Cannot turn the data into columns: {e}") from None


def _fill_missing(data: pa.Table, missing: list[str], schema: "TableSchema", target: pa.Schema) -> pa.Table:
    """``data`` with its missing nullable columns added as NULL, as SQL's INSERT with a column list
    does (a field's ``defaultValue`` then fills them, and a ``fields.<name>.default-value`` option
    shows on read, as in Java). A missing NOT NULL column is an error."""
    required = [n for n in missing if not target.field(n).nullable]
    if required:
        keys = [n for n in required if n in schema.primary_keys]
        what = "NOT NULL" + (f"; primary key: {keys}" if keys else "")
        raise DataValidationError(f"Data is missing column(s) {required} ({what}); only nullable columns may be "
                                  f"left out (they are written as NULL or their default value)")
    for name in missing:
        data = data.append_column(target.field(name), pa.nulls(data.num_rows, target.field(name).type))
    return data


def _with_default(column: pa.ChunkedArray, field) -> pa.ChunkedArray:
    """A column whose field has a ``defaultValue`` (the schema JSON's, Java 1.3+) with its NULLs
    replaced by it, as Java's table write does."""
    text = field.default_value
    if text is None or not column.null_count:
        return column
    literal = text[1:-1].replace("''", "'") if len(text) > 1 and text[0] == text[-1] == "'" else text
    try:
        value = pa.scalar(literal).cast(column.type)
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError) as e:
        raise DataValidationError(
            f"Column '{field.name}': its default value {text} does not convert to {field.type}: {e}") from None
    return pc.fill_null(column, value)


# A SQL session's SET of the enforcer, over the table option while its statement runs.
length_enforcer_override: ContextVar[str | None] = ContextVar("length_enforcer_override", default=None)

_LENGTHED = {"CHAR": True, "VARCHAR": False, "BINARY": True, "VARBINARY": False}   # root -> fixed length


def enforce_length(column: pa.ChunkedArray, field, mode: str = "error") -> pa.ChunkedArray:
    """Hold a CHAR(n)/VARCHAR(n)/BINARY(n)/VARBINARY(n) column to its length: characters for
    strings, bytes for binaries. ``mode`` 'error' refuses longer values (as Spark SQL does),
    'trim_pad' cuts them to n and pads CHAR/BINARY to n (Flink's TRIM_PAD), 'ignore' keeps them."""
    dtype = field.type
    fixed = _LENGTHED.get(dtype.root)
    length = getattr(dtype, "length", None)
    if fixed is None or length is None or length >= MAX_LENGTH or mode == "ignore" or not len(column):
        return column
    text = dtype.root in ("CHAR", "VARCHAR")
    sizes = pc.utf8_length(column) if text else pc.binary_length(column)
    longest = pc.max(sizes).as_py()
    if mode == "error":
        if longest is not None and longest > length:
            over = pc.sum(pc.greater(sizes, length)).as_py()
            unit = "characters" if text else "bytes"
            raise DataValidationError(
                f"Column '{field.name}' is {dtype}: {over} value(s) are longer than {length} {unit} (the longest has "
                f"{longest}); shorten them, or set '{TYPE_LENGTH_ENFORCER}' = 'trim_pad' to cut them to size")
        return column
    if text:
        column = pc.utf8_slice_codeunits(column, 0, length)
        return pc.utf8_rpad(column, length, " ") if fixed else column
    column = pc.binary_slice(column, 0, length)
    if fixed:
        short = pc.less(pc.binary_length(column), length)
        padded = pc.binary_join_element_wise(column, pa.scalar(b"\x00" * length, pa.binary()), b"")
        column = pc.if_else(short, pc.binary_slice(padded, 0, length), column)
    return column.cast(field.type.to_arrow())


def group_rows(table: pa.Table, keys: Sequence[str]) -> list[tuple[tuple, pa.Table]]:
    """Split a table into (key values, rows) groups, preserving the rows' order inside each group."""
    if not keys:
        return [((), table)]
    return [(key, table.take(indices)) for key, indices in group_indices(table, keys)]


def group_indices(table: pa.Table, keys: Sequence[str]) -> list[tuple[tuple, pa.Array | None]]:
    """(key values, ascending row indices) of each group of rows with equal ``keys`` values (a
    writer takes each group's rows where it writes them, e.g. on its own thread); without keys,
    one group whose indices are None: every row."""
    if not keys:
        return [((), None)]
    idx_name = "__row_index__"
    indexed = table.select(list(keys)).append_column(idx_name, pa.array(np.arange(table.num_rows)))
    grouped = indexed.group_by(list(keys), use_threads=False).aggregate([(idx_name, "list")])
    key_columns = [grouped.column(k).to_pylist() for k in keys]
    index_lists = grouped.column(f"{idx_name}_list")
    return [(tuple(c[i] for c in key_columns), index_lists[i].values) for i in range(grouped.num_rows)]
