"""What a table name in a query reads: a Paimon table (with projection, filter and limit pushed
into ``Table.to_arrow``), a system table, a generated or registered Arrow table, a format table."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from paimon_lab.core.predicate import Predicate
from paimon_lab.operation.count import MinMax, metadata_count, metadata_min_max
from paimon_lab.operation.scan import scan_target


class Relation:
    label: str = "?"
    pushdown: bool = False  # accepts columns / predicate / limit
    exact_filter: bool = False  # read() returns exactly the rows its predicate selects

    @property
    def schema(self) -> pa.Schema:
        raise NotImplementedError

    def read(self, columns: list[str] | None = None, predicate: Predicate | None = None,
             limit: int | None = None) -> pa.Table:
        raise NotImplementedError

    def metadata_count(self, predicate: Predicate | None) -> int | None:
        """The row count of a filtered read without reading rows, where the source knows it."""
        return None

    def metadata_min_max(self, columns: list[str], predicate: Predicate | None) -> dict[str, MinMax] | None:
        """Min/max of columns of a filtered read without reading rows, where the source knows them."""
        return None

    def describe(self) -> str:
        return self.label


class ArrowRelation(Relation):
    """A fixed Arrow table, or a function producing one on first read."""

    def __init__(self, label: str, data: pa.Table | Callable[[], pa.Table], schema: pa.Schema | None = None):
        self.label = label
        self._data = data
        self._schema = schema

    def table(self) -> pa.Table:
        if callable(self._data):
            self._data = self._data()
        return self._data

    @property
    def schema(self) -> pa.Schema:
        return self._schema if self._schema is not None else self.table().schema

    def read(self, columns=None, predicate=None, limit=None) -> pa.Table:
        data = self.table()
        if columns is not None:
            data = data.select(columns)
        return data


class PaimonRelation(Relation):
    """A Paimon table read as of a snapshot / tag / time (default latest)."""

    pushdown = True
    exact_filter = True

    def __init__(self, table, *, snapshot_id: int | None = None, tag: str | None = None,
                 timestamp_millis: int | None = None, read_optimized: bool = False, label: str | None = None):
        self.table = table
        self.snapshot_id = snapshot_id
        self.tag = tag
        self.timestamp_millis = timestamp_millis
        self.read_optimized = read_optimized
        self.label = label or table.identifier
        self._schema: pa.Schema | None = None

    @property
    def schema(self) -> pa.Schema:
        if self._schema is None:  # asked many times while one statement is planned
            self._schema = self.table.schema.arrow_schema()
        return self._schema

    def read(self, columns=None, predicate=None, limit=None) -> pa.Table:
        return self.table.to_arrow(columns=columns, filter=predicate, snapshot_id=self.snapshot_id, tag=self.tag,
                                   timestamp_millis=self.timestamp_millis, limit=limit,
                                   read_optimized=self.read_optimized)

    def _read_snapshot(self):
        """The snapshot :meth:`read` reads (None: the table is empty), or False when the metadata
        of one snapshot cannot answer: a read-optimized read, or the table's own
        'incremental-between'. Without a snapshot, tag or time the table's own scan options apply,
        as in ``Table.to_arrow``."""
        if self.read_optimized:
            return False
        target = scan_target(self.table.store, self.snapshot_id, self.tag, self.timestamp_millis)
        if target.incremental is not None:
            return False
        return self.table.snapshot(target.snapshot_id, tag=target.tag, timestamp_millis=target.timestamp_millis)

    def metadata_count(self, predicate: Predicate | None) -> int | None:
        """The row count of a filtered read from the table's metadata alone (None: it needs a read)."""
        snap = self._read_snapshot()
        if snap is False:
            return None
        if snap is None:
            return 0
        return metadata_count(self.table.store, snap, predicate)

    def metadata_min_max(self, columns: list[str], predicate: Predicate | None) -> dict[str, MinMax] | None:
        """Min/max of columns of a filtered read from the files' statistics (None: it needs a read)."""
        snap = self._read_snapshot()
        if snap is False:
            return None
        if snap is None:
            return {c: MinMax(None, None) for c in columns}
        return metadata_min_max(self.table.store, snap, columns, predicate)

    def describe(self) -> str:
        at = []
        if self.snapshot_id is not None:
            at.append(f"snapshot {self.snapshot_id}")
        if self.tag is not None:
            at.append(f"tag {self.tag}")
        if self.timestamp_millis is not None:
            at.append(f"timestamp-millis {self.timestamp_millis}")
        if self.read_optimized:
            at.append("read-optimized")
        return self.label + (f" ({', '.join(at)})" if at else "")


class ChangesRelation(Relation):
    """Batch incremental read ('incremental-between'): the rows added or updated after snapshot
    ``start`` up to ``end``, merged by key on primary-key tables (``mode``: the scan mode), or the
    diff of two tags."""

    def __init__(self, table, start: int | str, end: int | str, label: str | None = None, mode: str | None = None):
        self.table = table
        self.start = start
        self.end = end
        self.label = label or table.identifier
        self.mode = mode

    @property
    def schema(self) -> pa.Schema:
        return self.table.schema.arrow_schema()

    def read(self, columns=None, predicate=None, limit=None) -> pa.Table:
        changes = self.table.incremental_changes(self.start, self.end, columns=columns, mode=self.mode)
        kept = changes.filter(pc.is_in(changes.column("rowkind"), pa.array(["+I", "+U"])))
        return kept.drop_columns(["rowkind"])

    def describe(self) -> str:
        return f"{self.label} (incremental {self.start}..{self.end})"


class FunctionRelation(Relation):
    """Rows produced by a function of (columns) — used for generated sources."""

    def __init__(self, label: str, schema: pa.Schema, produce: Callable[[], pa.Table], **info: Any):
        self.label = label
        self._schema = schema
        self.produce = produce
        self.info = info

    @property
    def schema(self) -> pa.Schema:
        return self._schema

    def read(self, columns=None, predicate=None, limit=None) -> pa.Table:
        data = self.produce()
        return data.select(columns) if columns is not None else data
