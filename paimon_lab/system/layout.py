"""Layout views for notebooks: the LSM levels and the deletion vectors of a snapshot."""

from __future__ import annotations

from typing import TYPE_CHECKING

import pandas as pd

from paimon_lab.core import binary_row
from paimon_lab.core.snapshot import Snapshot
from paimon_lab.operation.scan import FileStoreScan
from paimon_lab.utils import html as H

if TYPE_CHECKING:
    from paimon_lab.store.file_store import FileStore


class _View(pd.DataFrame):
    """A DataFrame with its own notebook display; anything derived from it (a selection, a
    groupby) is a plain DataFrame."""

    @property
    def _constructor(self):
        return pd.DataFrame

    def _partition_text(self, p) -> str:
        return "/".join(f"{k}={'null' if v is None else v}" for k, v in p.items()) if p else ""


class LevelsView(_View):
    """The LSM levels of a snapshot (:meth:`Table.levels`): one row per data file. Notebooks show
    the files per level of each partition and bucket, then the files."""

    def _repr_html_(self) -> str:
        sid = self.attrs.get("snapshot_id")
        if sid is None:
            return H.title("LSM levels", "the table has no snapshot")
        note = (f"snapshot {sid} · {len(self)} files · {int(self['row_count'].sum()):,} rows · "
                f"{H.fmt_bytes(int(self['file_size'].sum()))}")
        levels = sorted(set(self["level"])) if len(self) else []
        groups: dict[tuple, dict] = {}
        for p, b, lv, n in zip(self["partition"], self["bucket"], self["level"], self["row_count"]):
            counts = groups.setdefault((self._partition_text(p), b), {})
            files, rows = counts.get(lv, (0, 0))
            counts[lv] = (files + 1, rows + int(n))
        summary = H.table(["partition", "bucket"] + [f"L{lv} files (rows)" for lv in levels],
                          [[p, b] + [f"{c[lv][0]} ({c[lv][1]:,})" if lv in c else "" for lv in levels]
                           for (p, b), c in groups.items()], empty="no data files")
        files = H.table(["partition", "bucket", "level", "file", "rows", "size", "keys", "sequence", "deleted rows"],
                        [(self._partition_text(r.partition), r.bucket, r.level, r.file_name, r.row_count,
                          H.fmt_bytes(r.file_size), "" if r.min_key is None else f"{_key(r.min_key)} … {_key(r.max_key)}",
                          f"{r.min_sequence_number} … {r.max_sequence_number}", r.deleted_rows)
                         for r in self.itertuples()], empty="no data files")
        return H.box(H.title("LSM levels", note), summary, H.details(f"data files ({len(self)})", files))


class DeletionVectorsView(_View):
    """The deletion vectors of a snapshot (:meth:`Table.deletion_vectors`): one row per data
    file with deletions. Notebooks show each file's deleted count and its first positions."""

    def _repr_html_(self) -> str:
        sid = self.attrs.get("snapshot_id")
        if sid is None:
            return H.title("Deletion vectors", "the table has no snapshot")
        note = f"snapshot {sid} · {len(self)} files with deletions · {int(self['cardinality'].sum()):,} rows deleted"
        rows = [(self._partition_text(r.partition), r.bucket, r.file_name, r.cardinality, _positions(r.positions))
                for r in self.itertuples()]
        return H.box(H.title("Deletion vectors", note),
                     H.table(["partition", "bucket", "file", "deleted rows", "positions"], rows,
                             empty="no deletion vectors in this snapshot"))


def _key(key) -> str:
    return str(key[0]) if len(key) == 1 else "(" + ", ".join(str(v) for v in key) + ")"


def _positions(positions, shown: int = 12) -> str:
    head = ", ".join(str(int(p)) for p in positions[:shown])
    return head + (f", … (+{len(positions) - shown:,})" if len(positions) > shown else "")


def lsm_levels(store: "FileStore", snap: Snapshot | None) -> pd.DataFrame:
    """The LSM layout of a snapshot: one row per data file with its partition, bucket, level,
    row count, size, min/max key, sequence range and deleted-row count."""
    columns = ["partition", "bucket", "level", "file_name", "row_count", "file_size", "min_key",
               "max_key", "min_sequence_number", "max_sequence_number", "deleted_rows", "schema_id"]
    if snap is None:
        return LevelsView(columns=columns)
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
    df = df.assign(_o=order).sort_values(["_o", "bucket", "level", "min_sequence_number"]) \
        .drop(columns="_o").reset_index(drop=True)
    view = LevelsView(df)
    view.attrs["snapshot_id"] = snap.id
    return view


def deletion_vector_rows(store: "FileStore", snap: Snapshot | None) -> pd.DataFrame:
    """Per data file with deletions: partition, bucket, file name, cardinality and the deleted
    row positions (a sorted numpy array)."""
    rows = []
    if snap is not None:
        for (part, bucket), (_, vectors) in store.deletion_vectors_at(snap).items():
            for name, dv in vectors.items():
                rows.append((store.partition_codec.to_dict(part), bucket, name, dv.cardinality, dv.to_numpy()))
    view = DeletionVectorsView(rows, columns=["partition", "bucket", "file_name", "cardinality", "positions"])
    if snap is not None:
        view.attrs["snapshot_id"] = snap.id
    return view


def table_html(store: FileStore) -> str:
    """A table's notebook display: what kind of table, its schema, options, snapshots and size."""
    schema = store.schema
    snaps = store.snapshot_manager
    latest = snaps.latest()
    ids = snaps.list_ids()
    if schema.primary_keys:
        kind = f"primary key ({', '.join(schema.primary_keys)})"
    else:
        kind = "append"
    bucket = schema.core.bucket
    facts = [("kind", kind), ("partitioned by", ", ".join(schema.partition_keys) or "-"),
             ("buckets", bucket if bucket > 0 else ("dynamic" if schema.primary_keys else "unaware (-1)")),
             ("path", store.path), ("branch", store.branch),
             ("snapshots", f"{len(ids)}" + (f" ({ids[0]} … {ids[-1]})" if ids else "")),
             ("tags", len(store.tags()))]
    if latest is not None:
        entries = FileStoreScan(store).live_entries(latest)
        size = sum(e.file.file_size for e in entries)
        facts += [("latest snapshot", f"{latest.id} ({latest.commit_kind})"),
                  ("records", f"{latest.total_record_count:,}" if latest.total_record_count is not None else "?"),
                  ("data files", f"{len(entries):,} ({H.fmt_bytes(size)})")]
    return H.box(H.title(f"Table {store.identifier}", f"schema {schema.id}"), H.pairs(facts),
                 H.details(f"columns ({len(schema.fields)})", schema.fields_html(), open_=True),
                 H.details(f"options ({len(schema.options)})", H.options_block(schema.options)))
