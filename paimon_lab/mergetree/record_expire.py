"""Record-level expiration ('record-level.expire-time'): compactions of a primary-key table drop
the rows whose time field is older than now minus the expire time, as Java's
``RecordLevelExpire`` filters the rows its compaction reads (reads never filter: until a
compaction rewrites a file, its expired rows stay visible).

The time field: INT seconds; BIGINT seconds, or milliseconds from 10^12 on; TIMESTAMP or
TIMESTAMP_LTZ (Java 1.0). 'record-level.time-field-type' (Java 0.9) pins it: ``seconds-int``
takes only INT, ``millis-long`` only BIGINT milliseconds.
"""

from __future__ import annotations

from dataclasses import dataclass

import pyarrow as pa
import pyarrow.compute as pc

from paimon_lab.core.options import CoreOptions
from paimon_lab.errors import DataValidationError, OptionError
from paimon_lab.utils.clock import now_millis

_MILLIS_FROM = 1_000_000_000_000   # Java 1.0: BIGINT values from here on are milliseconds


@dataclass(frozen=True)
class RecordExpire:
    """Drops expired rows from KV rows a compaction reads."""

    field: str
    expire_seconds: int
    kind: str   # "seconds", "millis", "auto-long" or "timestamp"

    @staticmethod
    def of(core: CoreOptions, fields) -> "RecordExpire | None":
        """The expiration of a table (``fields``: its value fields), None without an expire time.
        Raises OptionError where Java's writer refuses the settings."""
        expire = core.get("record-level.expire-time")
        if expire is None:
            return None
        name = core.get("record-level.time-field")
        if name is None:
            raise OptionError("'record-level.expire-time' needs 'record-level.time-field', the column holding "
                              "each record's time")
        field = next((f for f in fields if f.name == name), None)
        if field is None:
            raise OptionError(f"'record-level.time-field' names '{name}', which is not a column")
        root = field.type.root
        pinned = core.raw.get("record-level.time-field-type")
        if pinned is not None:
            pinned = core.get("record-level.time-field-type")
            want = {"seconds-int": "INT", "millis-long": "BIGINT"}[pinned]
            if root != want:
                raise OptionError(f"'record-level.time-field-type' = '{pinned}' needs an {want} time field; "
                                  f"'{name}' is {field.type}")
            kind = "seconds" if pinned == "seconds-int" else "millis"
        elif root == "INT":
            kind = "seconds"
        elif root == "BIGINT":
            kind = "auto-long"
        elif root in ("TIMESTAMP", "TIMESTAMP_LTZ"):
            kind = "timestamp"
        else:
            raise OptionError(f"'record-level.time-field' '{name}' is {field.type}; it must be INT, BIGINT, "
                              "TIMESTAMP or TIMESTAMP_LTZ")
        return RecordExpire(name, expire // 1000, kind)

    def seconds(self, column: pa.ChunkedArray | pa.Array) -> pa.Array:
        """Each row's time in epoch seconds (int64)."""
        values = column.cast(pa.int64())
        if self.kind == "timestamp":   # epoch units of the column's own precision
            per_second = {"s": 1, "ms": 1000, "us": 1_000_000, "ns": 1_000_000_000}[column.type.unit]
            return pc.divide(values, per_second)
        if self.kind == "millis":
            return pc.divide(values, 1000)
        if self.kind == "auto-long":
            return pc.if_else(pc.greater_equal(values, _MILLIS_FROM), pc.divide(values, 1000), values)
        return values

    def apply(self, kv: pa.Table) -> pa.Table:
        """``kv`` without its expired rows (a NULL time is an error, as in Java)."""
        if kv.num_rows == 0:
            return kv
        column = kv.column(self.field)
        if column.null_count:
            raise DataValidationError(f"Time field '{self.field}' of record-level expiration is NULL in "
                                      f"{column.null_count} row(s); it must not be")
        now = now_millis() // 1000
        keep = pc.greater_equal(pc.add(self.seconds(column), self.expire_seconds), now)
        return kv if pc.all(keep).as_py() else kv.filter(keep)
