"""Row counts answered from the manifests where no data file needs reading.

The manifests record every data file's row count. Summed, they are the table's row count when
every row on disk is a row of the table: append tables (minus the rows deletion vectors mark),
and primary-key buckets that hold one sorted run without retract rows (one file, or all files on
one level above 0: no key is in two files), or, with deletion vectors, nothing in level 0 (older
versions of a key are marked deleted). Files that carry only some columns (data evolution) or
might hold deletes (an unknown delete count) send the count back to a read.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from paimon_lab.core.predicate import Predicate
from paimon_lab.core.snapshot import Snapshot
from paimon_lab.operation.scan import FileStoreScan, LiveEntries, real_buckets

if TYPE_CHECKING:
    from paimon_lab.store.file_store import FileStore


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


def metadata_count(store: FileStore, snapshot: Snapshot, predicate: Predicate | None = None) -> int | None:
    """The number of rows a read of ``snapshot`` filtered by ``predicate`` returns, from the
    manifests alone; None when that needs reading data (a filter on non-partition columns, or
    rows that must be merged)."""
    schema = store.schema
    partition_names = {f.name for f in schema.partition_fields}
    if predicate is not None and not predicate.columns() <= partition_names:
        return None
    live = real_buckets(store, FileStoreScan(store).live_columns(snapshot))
    if predicate is not None and live.num_rows:
        live = live.filter(partition_mask(store, live, predicate))
    t = live.table
    if t.num_rows == 0:
        return 0
    if t.column("_FILE._WRITE_COLS").null_count != t.num_rows:
        return None
    dv_enabled = bool(schema.core.get("deletion-vectors.enabled"))
    if schema.primary_keys:
        deletes = t.column("_FILE._DELETE_ROW_COUNT")
        if deletes.null_count or (pc.max(deletes).as_py() or 0) > 0:
            return None
        runs = t.group_by(["_PARTITION", "_BUCKET"], use_threads=False).aggregate(
            [("_FILE._LEVEL", "min"), ("_FILE._LEVEL", "max"), ("_FILE._LEVEL", "count")])
        low = runs.column("_FILE._LEVEL_min").to_numpy()
        high = runs.column("_FILE._LEVEL_max").to_numpy()
        files = runs.column("_FILE._LEVEL_count").to_numpy()
        one_run = (low > 0) if dv_enabled else ((files == 1) | ((low == high) & (low > 0)))
        if not np.all(one_run):
            return None
    total = pc.sum(t.column("_FILE._ROW_COUNT")).as_py() or 0
    if dv_enabled:
        vectors = store.deletion_vectors_at(snapshot)
        if vectors:
            present = set(zip(t.column("_PARTITION").to_pylist(), t.column("_BUCKET").to_pylist(),
                              t.column("_FILE._FILE_NAME").to_pylist()))
            for (part, bucket), (_, dvs) in vectors.items():
                total -= sum(len(dv) for name, dv in dvs.items() if (part, bucket, name) in present)
    return total
