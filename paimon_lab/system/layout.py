"""Layout views for notebooks: the LSM levels and the deletion vectors of a snapshot."""

from __future__ import annotations

from typing import TYPE_CHECKING

import pandas as pd

from paimon_lab.core import binary_row
from paimon_lab.core.snapshot import Snapshot
from paimon_lab.operation.scan import FileStoreScan

if TYPE_CHECKING:
    from paimon_lab.store.file_store import FileStore


def lsm_levels(store: "FileStore", snap: Snapshot | None) -> pd.DataFrame:
    """The LSM layout of a snapshot: one row per data file with its partition, bucket, level,
    row count, size, min/max key, sequence range and deleted-row count."""
    columns = ["partition", "bucket", "level", "file_name", "row_count", "file_size", "min_key",
               "max_key", "min_sequence_number", "max_sequence_number", "deleted_rows", "schema_id"]
    if snap is None:
        return pd.DataFrame(columns=columns)
    key_types = store.kv_layout.key_types if store.schema.primary_keys else []
    dvs = store.deletion_vectors_at(snap) if store.schema.core.get("deletion-vectors.enabled") else {}
    codec = store.partition_codec
    rows = []
    for e in FileStoreScan(store).live_entries(snap):
        f = e.file
        dv = dvs.get((e.partition, e.bucket), (None, {}))[1].get(f.file_name)
        rows.append((codec.to_dict(e.partition), e.bucket, f.level, f.file_name, f.row_count, f.file_size,
                     tuple(binary_row.deserialize(f.min_key, key_types)) if key_types else None,
                     tuple(binary_row.deserialize(f.max_key, key_types)) if key_types else None,
                     f.min_sequence_number, f.max_sequence_number,
                     dv.cardinality if dv is not None else (f.delete_row_count or 0), f.schema_id))
    df = pd.DataFrame(rows, columns=columns)
    order = df["partition"].map(lambda d: tuple(str(v) for v in d.values()))
    return df.assign(_o=order).sort_values(["_o", "bucket", "level", "min_sequence_number"]) \
        .drop(columns="_o").reset_index(drop=True)


def deletion_vector_rows(store: "FileStore", snap: Snapshot | None) -> pd.DataFrame:
    """Per data file with deletions: partition, bucket, file name, cardinality and the deleted
    row positions (a sorted numpy array)."""
    rows = []
    if snap is not None:
        for (part, bucket), (_, vectors) in store.deletion_vectors_at(snap).items():
            for name, dv in vectors.items():
                rows.append((store.partition_codec.to_dict(part), bucket, name, dv.cardinality, dv.to_numpy()))
    return pd.DataFrame(rows, columns=["partition", "bucket", "file_name", "cardinality", "positions"])
