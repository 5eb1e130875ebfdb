"""Column statistics (SimpleStats) of data files, computed with Arrow kernels.

Paimon keeps per-file min, max and null count of each column in the manifest; readers use them
to skip files. The ``metadata.stats-mode`` option (and ``fields.X.stats-mode``) chooses
``none``, ``counts``, ``full`` or ``truncate(N)`` (strings cut to N characters; the max is then
rounded up so it still bounds every value).
"""

from __future__ import annotations

from typing import Mapping, Sequence

import pyarrow as pa
import pyarrow.compute as pc

from paimon_lab.core import binary_row
from paimon_lab.core.manifest import SimpleStats
from paimon_lab.core.options import CoreOptions
from paimon_lab.core.types import DataField

_NO_MINMAX = ("ARRAY", "MAP", "MULTISET", "ROW")


def _truncate_max(value, n: int):
    """Cut to n characters and bump the last one so the result is >= the original, or None."""
    if isinstance(value, str):
        chars = list(value[:n])
        while chars:
            cp = ord(chars[-1])
            if cp < 0x10FFFF and not (0xD7FF <= cp < 0xE000):
                chars[-1] = chr(cp + 1)
                return "".join(chars)
            chars.pop()
        return None
    data = bytearray(value[:n])
    while data:
        if data[-1] < 0xFF:
            data[-1] += 1
            return bytes(data)
        data.pop()
    return None


def column_stats(column: pa.ChunkedArray | pa.Array, field: DataField, mode: str):
    """(min, max, null_count) of one column under a stats mode."""
    if mode == "none":
        return None, None, None
    nulls = column.null_count
    if mode == "counts" or field.type.root in _NO_MINMAX or nulls == len(column):
        return None, None, nulls
    if pa.types.is_floating(column.type):
        column = pc.drop_null(pc.if_else(pc.is_nan(column), None, column))
        if len(column) == 0:
            return None, None, nulls
    mm = pc.min_max(column)
    lo, hi = mm["min"].as_py(), mm["max"].as_py()
    if mode.startswith("truncate(") and isinstance(lo, (str, bytes)):
        n = int(mode[9:-1])
        if len(lo) > n:
            lo = lo[:n]
        if len(hi) > n:
            hi = _truncate_max(hi, n)
    return lo, hi, nulls


def summary_min_max(column: pa.ChunkedArray | pa.Array) -> pa.Array:
    """[min, max] of a column (nulls where it has no comparable value, or is nested): the rows a
    summary keeps so that the stats of many slices are the stats of their summaries."""
    if pa.types.is_nested(column.type) or column.null_count == len(column):
        return pa.nulls(2, column.type)
    if pa.types.is_floating(column.type):
        column = pc.drop_null(pc.if_else(pc.is_nan(column), None, column))
        if len(column) == 0:
            return pa.nulls(2, column.type)
    mm = pc.min_max(column)
    return pa.array([mm["min"], mm["max"]], column.type)


def collect_stats(table: pa.Table, fields: Sequence[DataField], options: CoreOptions,
                  null_counts: Mapping[str, int] | None = None) -> SimpleStats:
    """SimpleStats of ``fields`` over ``table`` (columns looked up by field name). ``null_counts``:
    the true null count per column when ``table`` is a summary (see :func:`summary_min_max`)."""
    mins, maxs, counts = [], [], []
    for f in fields:
        lo, hi, nulls = column_stats(table.column(f.name), f, options.field_stats_mode(f.name))
        if null_counts is not None and nulls is not None:
            nulls = null_counts[f.name]
        mins.append(lo)
        maxs.append(hi)
        counts.append(nulls)
    types = [f.type for f in fields]
    return SimpleStats(binary_row.serialize(mins, types), binary_row.serialize(maxs, types), tuple(counts))


def decode_stats(stats: SimpleStats, fields: Sequence[DataField]) -> dict[str, tuple]:
    """{column: (min, max, null_count)} for the given fields, in the order the stats were written."""
    types = [f.type for f in fields]
    mins = binary_row.deserialize(stats.min_values, types)
    maxs = binary_row.deserialize(stats.max_values, types)
    counts = list(stats.null_counts) if stats.null_counts is not None else []
    counts += [None] * (len(fields) - len(counts))
    return {f.name: (mins[i], maxs[i], counts[i]) for i, f in enumerate(fields)}
