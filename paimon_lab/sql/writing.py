"""Writing query results into Paimon tables: rows cast to the table's types with SQL CAST
semantics (DuckDB), then written (the snapshot id recorded in the session)."""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from sqlglot import exp

from paimon_lab.core import types as T
from paimon_lab.sql.duck import connect, duckdb_error, fetch_arrow
from paimon_lab.sql.errors import SqlError
from paimon_lab.sql.spelling import duck_type, type_sql

if TYPE_CHECKING:
    from paimon_lab.sql.context import SessionContext


def cast_rows(data: pa.Table, fields: list[T.DataField], constants: dict[str, Any] | None = None,
              statement: str | None = None) -> pa.Table:
    """Cast ``data`` (columns matched to ``fields`` by position; ``constants`` fill named fields,
    missing ones are NULL) to the fields' types with SQL CAST semantics (DuckDB)."""
    constants = constants or {}
    src = data.rename_columns([f"c{i}" for i in range(data.num_columns)])
    given_fields = [f for f in fields if f.name not in constants]
    for i, f in enumerate(given_fields[:src.num_columns]):
        col = src.column(i)
        if isinstance(f.type, T.RowType) and pa.types.is_struct(col.type) and \
                col.type.num_fields == len(f.type.fields) and \
                [col.type.field(j).name for j in range(col.type.num_fields)] != [x.name for x in f.type.fields]:
            names = [x.name for x in f.type.fields]  # ROW(...) values are positional
            chunks = [pa.StructArray.from_arrays([c.field(j) for j in range(len(names))], names=names,
                                                 mask=c.is_null()) for c in col.chunks]
            src = src.set_column(i, f"c{i}", pa.chunked_array(chunks) if chunks else col)
        if f.type.root in ("TIMESTAMP", "TIMESTAMP_LTZ") and f.type.precision <= 6 and \
                pa.types.is_timestamp(col.type) and col.type.unit == "ns":  # DuckDB would round nanoseconds
            micros = T.truncate_timestamps(col, 6).cast(pa.timestamp("us", col.type.tz))
            src = src.set_column(i, f"c{i}", micros)
    exprs = []
    sources: dict[str, tuple[str, str]] = {}  # internal column -> its cast
    positions = {f.name: i for i, f in enumerate(given_fields)} if data.num_columns else {}
    for f in fields:
        name = '"' + f.name.replace('"', '""') + '"'
        if f.name in constants:
            v = constants[f.name]
            lit = "NULL" if v is None else "'" + str(v).replace("'", "''") + "'"
            exprs.append(f"CAST({lit} AS {duck_type(f.type)}) AS {name}")
        elif f.name in positions and positions[f.name] < data.num_columns:
            source = f"c{positions[f.name]}"
            if getattr(src.schema.field(source).type, "tz", None) is not None and f.type.root == "TIMESTAMP":
                source = f"CAST({source} AS TIMESTAMP)"  # DuckDB < 2 casts TIMESTAMPTZ to TIMESTAMP only
            sources[f"c{positions[f.name]}"] = (source, duck_type(f.type))
            exprs.append(f"CAST({source} AS {duck_type(f.type)}) AS {name}")
        else:
            exprs.append(f"CAST(NULL AS {duck_type(f.type)}) AS {name}")
    con = connect()
    try:
        con.register("__src", src)
        out = fetch_arrow(con, f"SELECT {', '.join(exprs)} FROM __src")
    except Exception as e:
        import duckdb  # heavy, imported when a query runs

        if isinstance(e, duckdb.Error):
            names = {c: (f.name, type_sql(f.type)) for f in given_fields
                     for c in [f"c{positions[f.name]}"] if c in sources}
            error = duckdb_error(e, statement or "", names)
            row = _first_failing_row(con, e, sources)
            if row is not None:
                error = SqlError(f"{error.reason} (row {row:,} of the rows written)", error.line, error.column,
                                 error.statement, error.detail)
            raise error from None
        raise
    finally:
        con.close()
    target = T.arrow_schema(fields)
    cols = []
    for f in target:
        c = out.column(f.name)
        dtype = next(x.type for x in fields if x.name == f.name)
        if dtype.root in ("TIMESTAMP", "TIMESTAMP_LTZ"):  # Flink truncates to the column's precision
            c = T.truncate_timestamps(c, dtype.precision)
        if c.type != f.type:
            try:
                c = c.cast(f.type)
            except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
                c = c.cast(f.type, safe=False)
        cols.append(c)
    return pa.Table.from_arrays(cols, schema=target.with_metadata(None)) if cols else out


def _first_failing_row(con, error: Exception, sources: dict[str, tuple[str, str]]) -> int | None:
    """The 1-based row of ``__src`` whose value the cast the error names cannot convert (None if
    the error names no column or no row fails a TRY_CAST)."""
    m = re.search(r"when casting from source column (\w+)", str(error))
    if m is None or m.group(1) not in sources:
        return None
    source, target = sources[m.group(1)]
    import duckdb  # loaded already: a DuckDB error got us here

    try:
        bad = fetch_arrow(con, f"SELECT ({source}) IS NOT NULL AND TRY_CAST({source} AS {target}) IS NULL "
                               "AS bad FROM __src").column("bad")
    except duckdb.Error:  # only a better message is at stake
        return None
    index = pc.index(bad, True).as_py()
    return None if index < 0 else index + 1


def cast_values(rw, values: exp.Values, fields: list[T.DataField], error: SqlError) -> pa.Table:
    """The rows of a ``VALUES`` list DuckDB could not evaluate as a whole (its rows' value types
    do not unify, e.g. ``(1, 10.5), (2, 'ten')``), each value cast on its own to the type of the
    column it goes to (``fields``, by position), as a one-row ``VALUES`` would be. A value that does
    not convert raises a SqlError naming it, its column and its row; otherwise ``error`` stands if
    even the cast rows fail."""
    import duckdb  # loaded already: a DuckDB error got us here

    rows = [t.expressions if isinstance(t, exp.Tuple) else [t] for t in values.expressions]
    if not rows or any(len(r) != len(fields) for r in rows):
        raise error
    sql = [[c.sql(dialect="duckdb") for c in r] for r in rows]
    types = [duck_type(f.type) for f in fields]
    checks = ", ".join("(" + ", ".join(f"(({c}) IS NOT NULL AND TRY_CAST(({c}) AS {t}) IS NULL)"
                                       for c, t in zip(r, types)) + ")" for r in sql)
    casts = ", ".join("(" + ", ".join(f"CAST(({c}) AS {t})" for c, t in zip(r, types)) + ")" for r in sql)
    names = ", ".join(f"c{i}" for i in range(len(fields)))
    con = connect()
    try:
        bad = fetch_arrow(con, f"SELECT * FROM (VALUES {checks}) AS v({names})")
        matrix = np.column_stack([c.to_numpy(zero_copy_only=False) for c in bad.columns]).astype(bool)
        if matrix.any():
            row, col = (int(x) for x in np.argwhere(matrix)[0])  # the first row's leftmost bad value
            cell = rows[row][col]
            what = f"string {sql[row][col]}" if isinstance(cell, exp.Literal) and cell.is_string else sql[row][col]
            located = rw.node_error("", cell)
            raise SqlError(f"Conversion Error: Could not convert {what} to {type_sql(fields[col].type)} for column "
                           f"{fields[col].name} (row {row + 1:,} of the rows written)",
                           located.line if located.line is not None else error.line,
                           located.column if located.line is not None else error.column,
                           error.statement, error.detail)
        return fetch_arrow(con, f"SELECT * FROM (VALUES {casts}) AS v({names})")
    except duckdb.Error:
        raise error from None
    finally:
        con.close()


def write_rows(ctx: SessionContext, table, data: pa.Table, overwrite: Any = False,
               row_kinds: list[str] | None = None) -> int | None:
    """Write rows already shaped like the table (names in schema order)."""
    fields = list(table.schema.fields)
    if data.column_names != [f.name for f in fields] or data.schema != T.arrow_schema(fields):
        data = cast_rows(data, fields)
    if overwrite is False and data.num_rows == 0:
        return None
    snap = table.write(data, overwrite=overwrite, row_kinds=row_kinds) if row_kinds else \
        table.write(data, overwrite=overwrite)
    ctx.last_snapshot_id = snap
    return snap
