"""Row counts and column min/max answered from the manifests where no data file needs reading.

The manifests record every data file's row count and (``metadata.stats-mode``) each column's
min, max and null count. They describe the table's rows when every row on disk is a row of the
table: append tables (minus the rows deletion vectors mark), and primary-key buckets that hold
one sorted run without retract rows (one file, or all files on one level above 0: no key is in
two files), or, with deletion vectors, nothing in level 0 (older versions of a key are marked
deleted). Files that carry only some columns (data evolution) or might hold deletes (an unknown
delete count) send the answer back to a read.

Min/max further needs exact statistics: a column whose file stats are absent (``none``,
``counts``, dense stats without it), truncated (strings and bytes under ``truncate(N)``), of
another type than today's (type evolution), NaN-blind (floating point: stats skip NaN, a read
does not), filled with a default value on read, or any row a deletion vector marks, is read.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, NamedTuple

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from paimon_lab.core.predicate import Predicate
from paimon_lab.core.schema import field_default_values
from paimon_lab.core.snapshot import Snapshot
from paimon_lab.core.stats import decode_stats
from paimon_lab.operation.scan import FileStoreScan, LiveEntries, created_since, real_buckets, stats_slot

if TYPE_CHECKING:
    from paimon_lab.store.file_store import FileStore


class MinMax(NamedTuple):
    """A column's smallest and largest non-null value (both None when it has none)."""

    min: Any
    max: Any


def partition_mask(store: FileStore, live: LiveEntries, predicate: Predicate) -> pa.Array:
    """Which entries' partitions satisfy ``predicate`` (over partition columns only), evaluated
    exactly on the distinct partition values."""
    fields = store.schema.partition_fields
    parts = pc.unique(live.table.column("_PARTITION"))
    codec = store.partition_codec
    decoded = [codec.from_bytes(p) for p in parts.to_pylist()]
    values = pa.table({f.name: pa.array([row[i] for row in decoded], f.type.to_arrow())
                       for i, f in enumerate(fields)})
    keep = pc.fill_null(predicate.evaluate(values), False)
    return pc.is_in(live.table.column("_PARTITION"), parts.filter(keep))


def _visible_entries(store: FileStore, snapshot: Snapshot, predicate: Predicate | None) -> LiveEntries | None:
    """The live entries a read filtered by ``predicate`` touches, when every row they hold is a
    row of the read (up to deletion vectors); None when rows must be merged or filtered."""
    schema = store.schema
    partition_names = {f.name for f in schema.partition_fields}
    if predicate is not None and not predicate.columns() <= partition_names:
        return None
    live = created_since(store, real_buckets(store, FileStoreScan(store).live_columns(snapshot)))
    if predicate is not None and live.num_rows:
        live = live.filter(partition_mask(store, live, predicate))
    t = live.table
    if t.num_rows == 0:
        return live
    if t.column("_FILE._WRITE_COLS").null_count != t.num_rows:
        return None
    if schema.primary_keys:
        deletes = t.column("_FILE._DELETE_ROW_COUNT")
        if deletes.null_count or (pc.max(deletes).as_py() or 0) > 0:
            return None
        runs = t.group_by(["_PARTITION", "_BUCKET"], use_threads=False).aggregate(
            [("_FILE._LEVEL", "min"), ("_FILE._LEVEL", "max"), ("_FILE._LEVEL", "count")])
        low = runs.column("_FILE._LEVEL_min").to_numpy()
        high = runs.column("_FILE._LEVEL_max").to_numpy()
        files = runs.column("_FILE._LEVEL_count").to_numpy()
        dv_enabled = bool(schema.core.get("deletion-vectors.enabled"))
        one_run = (low > 0) if dv_enabled else ((files == 1) | ((low == high) & (low > 0)))
        if not np.all(one_run):
            return None
    return live


def _deleted_rows(store: FileStore, snapshot: Snapshot, live: LiveEntries) -> int:
    """Rows of ``live``'s files that deletion vectors mark."""
    if not store.schema.core.get("deletion-vectors.enabled"):
        return 0
    vectors = store.deletion_vectors_at(snapshot)
    if not vectors:
        return 0
    t = live.table
    present = set(zip(t.column("_PARTITION").to_pylist(), t.column("_BUCKET").to_pylist(),
                      t.column("_FILE._FILE_NAME").to_pylist()))
    return sum(len(dv) for (part, bucket), (_, dvs) in vectors.items()
               for name, dv in dvs.items() if (part, bucket, name) in present)


def metadata_count(store: FileStore, snapshot: Snapshot, predicate: Predicate | None = None) -> int | None:
    """The number of rows a read of ``snapshot`` filtered by ``predicate`` returns, from the
    manifests alone; None when that needs reading data (a filter on non-partition columns, or
    rows that must be merged)."""
    live = _visible_entries(store, snapshot, predicate)
    if live is None:
        return None
    if live.num_rows == 0:
        return 0
    total = pc.sum(live.table.column("_FILE._ROW_COUNT")).as_py() or 0
    return total - _deleted_rows(store, snapshot, live)


# Types whose stats are exact and compare as a read does; the numeric ones decode in bulk.
_BULK = {"TINYINT": "<i1", "SMALLINT": "<i2", "INT": "<i4", "BIGINT": "<i8", "DATE": "<i4"}
_EXACT = {*_BULK, "BOOLEAN", "DECIMAL", "TIME", "TIMESTAMP", "TIMESTAMP_LTZ"}
_STRINGS = {"CHAR", "VARCHAR", "BINARY", "VARBINARY"}


def metadata_min_max(store: FileStore, snapshot: Snapshot, columns: Sequence[str],
                     predicate: Predicate | None = None) -> dict[str, MinMax] | None:
    """{column: MinMax} of a read of ``snapshot`` filtered by ``predicate``, from the files'
    value statistics alone; None when any column needs reading data (see the module notes)."""
    schema = store.schema
    defaults = field_default_values(schema)
    if any(c in defaults for c in columns):
        return None
    live = _visible_entries(store, snapshot, predicate)
    if live is None:
        return None
    out = {}
    if live.num_rows == 0:
        return {c: MinMax(None, None) for c in columns}
    if _deleted_rows(store, snapshot, live):
        return None
    t = live.table
    bulk = (t.column("_FILE._SCHEMA_ID").to_numpy() == schema.id).all() and \
        t.column("_FILE._VALUE_STATS_COLS").null_count == t.num_rows
    entries = None
    for name in columns:
        field = schema.field(name)
        root = field.type.root
        if root not in _EXACT and root not in _STRINGS:
            return None
        if root.startswith("TIMESTAMP") and field.type.precision > 6:
            return None  # nanoseconds: the decoded bounds are not the read's values
        if bulk and root in _BULK:
            got = _bulk_min_max(store, t, name)
        else:
            entries = entries if entries is not None else live.entries()
            got = _file_min_max(store, entries, field)
        if got is None:
            return None
        out[name] = got
    return out


def _bulk_min_max(store: FileStore, t: pa.Table, name: str) -> MinMax | None:
    """Min/max of a fixed-width numeric column over entries all written under today's schema."""
    schema = store.schema
    fields = list(schema.fields)
    pos = next(i for i, f in enumerate(fields) if f.name == name)
    field = fields[pos]
    mode = schema.core.field_stats_mode(name)
    if mode in ("none", "counts"):
        return None
    dtype = _BULK[field.type.root]
    lo, lo_known = stats_slot(t.column("_FILE._VALUE_STATS._MIN_VALUES"), pos, len(fields), dtype)
    hi, hi_known = stats_slot(t.column("_FILE._VALUE_STATS._MAX_VALUES"), pos, len(fields), dtype)
    rows = t.column("_FILE._ROW_COUNT").to_numpy()
    nulls = pc.list_element(t.column("_FILE._VALUE_STATS._NULL_COUNTS"), pos) \
        if pos < pc.min(pc.list_value_length(t.column("_FILE._VALUE_STATS._NULL_COUNTS"))).as_py() else None
    if nulls is None or nulls.null_count:
        return None
    nulls = nulls.to_numpy()
    known = lo_known & hi_known
    empty = (rows == 0) | (nulls == rows)  # no non-null value: stats rightly absent
    if not np.all(known | empty):
        return None
    known &= ~empty
    if not known.any():
        return MinMax(None, None)
    bounds = pa.array([lo[known].min(), hi[known].max()], pa.from_numpy_dtype(np.dtype(dtype)))
    low, high = bounds.cast(field.type.to_arrow()).to_pylist()
    return MinMax(low, high)


def _file_min_max(store: FileStore, entries, field) -> MinMax | None:
    """Min/max of one column from each file's decoded statistics (any schema, dense stats)."""
    lows, highs = [], []
    for e in entries:
        file = e.file
        if file.row_count == 0:
            continue
        file_schema = store.schema_for(file.schema_id)
        written = next((f for f in file_schema.fields if f.id == field.id), None)
        if written is None:
            continue  # the column came later: NULL in this file
        if written.type != field.type:
            return None
        mode = file_schema.core.field_stats_mode(written.name)
        if mode in ("none", "counts") or (mode != "full" and field.type.root in _STRINGS):
            return None
        stats = decode_stats(file.value_stats, store.stats_fields(file))
        lo, hi, nulls = stats.get(field.name, (None, None, None))
        if lo is None or hi is None:
            if nulls is not None and nulls == file.row_count:
                continue
            return None
        lows.append(lo)
        highs.append(hi)
    if not lows:
        return MinMax(None, None)
    return MinMax(min(lows), max(highs))
