"""Where each key of a cross-partition-update table lives: key -> (partition, bucket).

Java bootstraps such an index (RocksDB) from the table's data when a job starts. Here it is
bootstrapped once and kept in the table's local cache directory
(:class:`~paimon_lab.mergetree.lookup_files.LocalCache`) as two memory-mapped Arrow files:

* a *base*: every live key with its partition and bucket, sorted by key (binary-searched);
* an *overlay* per snapshot: the keys whose location changed since the base (a new location,
  or gone), small.

A writer starting at snapshot N takes the newest saved state of a snapshot M <= N that is still
the table's (same delta manifest list: a rollback makes ids reusable) and replays the APPEND
commits M+1..N by reading only the data files those commits added. An OVERWRITE, a missing
snapshot or no usable state bootstraps again from the data. When the overlay grows past a tenth
of the base, the two are merged into a new base. So locating a commit's keys costs a lookup in a
small table and a binary search in a large one, plus the files of the commits in between.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Callable
from typing import TYPE_CHECKING

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from paimon_lab.core.key_value import (
    SEQUENCE_NUMBER,
    VALUE_KIND,
    KeyValueLayout,
    is_retract,
)
from paimon_lab.core.manifest import ADD
from paimon_lab.errors import CorruptFileError, SnapshotNotExistError
from paimon_lab.mergetree.compact_rewriter import BucketFiles
from paimon_lab.mergetree.lookup_files import LocalCache, find_sorted
from paimon_lab.utils.arrow import semi_join

if TYPE_CHECKING:
    from paimon_lab.core.snapshot import Snapshot
    from paimon_lab.store.file_store import FileStore

BUCKET = "__from_bucket__"
_ALIVE = "__alive__"
_POS = "__key_index_pos__"
_MIN_MERGE = 50_000


class _Missing(Exception):
    """A cache entry that is not there and cannot be rebuilt from its name alone."""


def _ident(snapshot: Snapshot) -> str:
    return hashlib.sha1(str(snapshot.delta_manifest_list).encode()).hexdigest()[:12]


class KeyIndex:
    """The key index of a cross-partition-update table as of one snapshot, plus this writer's own
    changes. ``bootstrap(snapshot)`` gives every live key's location read from the data."""

    def __init__(self, store: FileStore, layout: KeyValueLayout, bootstrap: Callable[[Snapshot], pa.Table]):
        self.store, self.layout = store, layout
        self.pk = list(store.schema.primary_keys)
        self.parts = [k for k in store.schema.partition_keys if k not in self.pk]
        self.cache = LocalCache(store)
        self.bootstrap = bootstrap
        self.base: pa.Table | None = None
        self.overlay: pa.Table | None = None
        self.base_name = ""
        self.bootstraps = 0       # full bootstraps from the data (tests count them)
        self.delta_files = 0      # data files read to replay commits

    # ------------------------------------------------------------------ state
    def _columns(self, located: pa.Table) -> pa.Table:
        return located.select(self.pk + self.parts + [BUCKET])

    def _empty_overlay(self, schema: pa.Schema) -> pa.Table:
        return schema.append(pa.field(_ALIVE, pa.bool_())).empty_table()

    def load(self, snapshot: Snapshot | None) -> KeyIndex:
        if snapshot is None:
            self.base = None
            self.overlay = None
            return self
        state = self._saved_state(snapshot)
        if state is not None:
            sid, base_name, overlay = state
            try:
                self.base = self._get(base_name)
                self.base_name, self.overlay = base_name, overlay
                if sid < snapshot.id and self._replay(sid, snapshot):
                    self._save(snapshot)
                return self
            except (_Missing, CorruptFileError, FileNotFoundError):
                pass   # no way from the saved state to this snapshot: bootstrap
        self._rebuild(snapshot)
        return self

    def _get(self, name: str) -> pa.Table:
        def missing() -> pa.Table:
            raise _Missing(name)
        return self.cache.get(name, {"kind": "key-index"}, missing)

    def _saved_state(self, snapshot: Snapshot) -> tuple[int, str, pa.Table] | None:
        """(snapshot id, base name, overlay) of the newest saved state this snapshot descends from."""
        try:
            names = os.listdir(self.cache.directory)
        except OSError:
            return None
        states = []
        for n in names:
            if n.startswith("keystate-") and n.endswith(".arrow"):
                parts = n[:-len(".arrow")].split("-")
                if len(parts) == 5 and parts[1].isdigit() and int(parts[1]) <= snapshot.id:
                    states.append((int(parts[1]), parts[2], f"keybase-{parts[3]}-{parts[4]}", n[:-len(".arrow")]))
        sm = self.store.snapshot_manager
        for sid, ident, base_name, name in sorted(states, reverse=True)[:4]:
            try:
                snap = snapshot if sid == snapshot.id else sm.snapshot(sid)
            except (SnapshotNotExistError, CorruptFileError):
                snap = None   # expired or unreadable: that state is of no use
            if snap is None or _ident(snap) != ident:
                continue
            try:
                return sid, base_name, self._get(name)
            except _Missing:
                continue
        return None

    def _rebuild(self, snapshot: Snapshot) -> None:
        self.bootstraps += 1
        located = self._columns(self.bootstrap(snapshot))
        self.overlay = self._empty_overlay(located.schema)
        self._new_base(snapshot, located)
        self._save(snapshot)

    def _new_base(self, snapshot: Snapshot, located: pa.Table) -> None:
        located = located.sort_by([(k, "ascending") for k in self.pk]).combine_chunks()
        name = f"keybase-{snapshot.id}-{_ident(snapshot)}"
        self.base = self.cache.get(name, {"kind": "key-index"}, lambda: located)
        self.base_name = name

    def _save(self, snapshot: Snapshot) -> None:
        if self.overlay.num_rows > max(_MIN_MERGE, self.base.num_rows // 10):
            alive = self.overlay.filter(self.overlay.column(_ALIVE)).drop_columns([_ALIVE])
            kept = semi_join(self.base, self.overlay, self.pk, anti=True)
            self._new_base(snapshot, pa.concat_tables([kept, alive.cast(kept.schema)]))
            self.overlay = self.overlay.schema.empty_table()
        name = f"keystate-{snapshot.id}-{_ident(snapshot)}-{self.base_name[len('keybase-'):]}"
        overlay = self.overlay
        self.overlay = self.cache.get(name, {"kind": "key-index"}, lambda: overlay)
        self._forget_older(snapshot.id)

    def _forget_older(self, sid: int) -> None:
        """Delete this table's key-index states older than ``sid`` and bases none of the rest use."""
        try:
            names = os.listdir(self.cache.directory)
        except OSError:
            return
        keep = {self.base_name}
        doomed = []
        for n in names:
            stem = n[:-len(".arrow")] if n.endswith(".arrow") else ""
            parts = stem.split("-")
            if stem.startswith("keystate-") and len(parts) == 5 and parts[1].isdigit():
                if int(parts[1]) < sid:
                    doomed.append(n)
                else:
                    keep.add(f"keybase-{parts[3]}-{parts[4]}")
        doomed += [n for n in names if n.startswith("keybase-") and n.endswith(".arrow") and n[:-6] not in keep]
        for n in doomed:
            try:
                os.remove(os.path.join(self.cache.directory, n))
            except OSError:
                pass

    # ------------------------------------------------------------------ replay
    def _replay(self, since: int, snapshot: Snapshot) -> bool:
        """Apply the APPEND commits after ``since`` up to ``snapshot``; True if anything changed.
        Raises _Missing when a commit cannot be replayed (expired, or an OVERWRITE)."""
        sm = self.store.snapshot_manager
        changed = False
        for sid in range(since + 1, snapshot.id + 1):
            try:
                snap = snapshot if sid == snapshot.id else sm.snapshot(sid)
            except (SnapshotNotExistError, CorruptFileError):
                raise _Missing(f"snapshot {sid}") from None
            if snap.commit_kind == "OVERWRITE":
                raise _Missing("an overwrite")
            if snap.commit_kind != "APPEND":
                continue   # compactions keep every key in its bucket
            delta = self._delta_rows(snap)
            if delta.num_rows:
                self.apply(delta)
                changed = True
        return changed or since != snapshot.id

    def _delta_rows(self, snap: Snapshot) -> pa.Table:
        """(key, partition, bucket, sequence, kind) of the rows one commit added."""
        mio = self.store.manifest_io
        codec = self.store.partition_codec
        layout = self.layout
        out = []
        for meta in mio.read_manifest_list(snap.delta_manifest_list):
            for e in mio.read_manifest(meta.file_name):
                if e.kind != ADD:
                    continue
                self.delta_files += 1
                kv = BucketFiles(self.store, layout, e.partition, e.bucket).read_file(e.file)
                cols = {k: kv.column(c) for k, c in zip(self.pk, layout.key_columns)}
                values = codec.to_dict(e.partition)
                for p in self.parts:
                    cols[p] = pa.array([values[p]] * kv.num_rows, self.base.schema.field(p).type)
                cols[BUCKET] = pa.array(np.full(kv.num_rows, e.bucket, np.int32))
                cols[SEQUENCE_NUMBER] = kv.column(SEQUENCE_NUMBER)
                cols[VALUE_KIND] = kv.column(VALUE_KIND)
                out.append(pa.table(cols))
        return pa.concat_tables(out) if out else pa.table({})

    def apply(self, delta: pa.Table) -> None:
        """Apply one commit's rows (key, partition, bucket, sequence number, kind): per key and
        location the newest row decides; a retraction removes the key if it lived there, a live
        row puts it there."""
        where = self.pk + self.parts + [BUCKET]
        delta = delta.sort_by([(SEQUENCE_NUMBER, "ascending")])
        delta = delta.append_column(_POS, pa.array(np.arange(delta.num_rows)))
        newest = delta.take(delta.group_by(where, use_threads=False).aggregate([(_POS, "max")]).column(f"{_POS}_max"))
        gone = is_retract(newest.column(VALUE_KIND))
        retracts, lives = newest.filter(gone).select(where), newest.filter(pc.invert(gone)).select(where)
        if retracts.num_rows:
            current = self.locate(retracts.select(self.pk))
            same = retracts.join(current, keys=where, join_type="inner")
            if same.num_rows:
                dead = same.select(self.pk + self.parts + [BUCKET])
                self._upsert(dead, alive=False)
        self._upsert(lives, alive=True)

    def remember(self, located: pa.Table) -> None:
        """This writer's own new locations (key, partition, bucket), seen by its later flushes."""
        self._upsert(self._columns(located), alive=True)

    def _upsert(self, rows: pa.Table, alive: bool) -> None:
        if rows.num_rows == 0:
            return
        if self.overlay is None:
            self.overlay = self._empty_overlay(self._columns(rows).schema)
        schema = self.overlay.schema
        rows = rows.append_column(_ALIVE, pa.array(np.full(rows.num_rows, alive))).select(schema.names).cast(schema)
        kept = semi_join(self.overlay, rows, self.pk, anti=True)
        self.overlay = pa.concat_tables([kept, rows])

    # ------------------------------------------------------------------ queries
    def locate(self, keys: pa.Table) -> pa.Table:
        """(key, partition, bucket) of those of ``keys`` that live in the table."""
        keys = keys.select(self.pk)
        parts = []
        rest = keys
        if self.overlay is not None and self.overlay.num_rows:
            hit = semi_join(self.overlay, keys, self.pk)
            parts.append(hit.filter(hit.column(_ALIVE)).drop_columns([_ALIVE]))
            rest = semi_join(keys, self.overlay, self.pk, anti=True)
        if self.base is not None and self.base.num_rows and rest.num_rows:
            firsts = pc.unique(rest.column(0)).sort()
            parts.append(find_sorted(self.base, firsts, rest, self.pk).replace_schema_metadata(None))
        if not parts:
            return self._empty_located(keys)
        schema = parts[0].schema
        return pa.concat_tables([p.cast(schema) for p in parts])

    def _empty_located(self, keys: pa.Table) -> pa.Table:
        schema = self.store.schema.arrow_schema()
        fields = [schema.field(n) for n in self.pk + self.parts] + [pa.field(BUCKET, pa.int32())]
        return pa.schema(fields).empty_table()

    def counts(self) -> pa.Table:
        """Keys per (partition columns, bucket) in column ``n``: the base's, corrected by the overlay."""
        by = list(self.store.schema.partition_keys) + [BUCKET]
        pieces = []
        if self.base is not None and self.base.num_rows:
            base = self.base
            pieces.append(self.cache.get("keycount-" + self.base_name[len("keybase-"):], {"kind": "key-index"},
                                         lambda: _count(base, by)).replace_schema_metadata(None))
        if self.overlay is not None and self.overlay.num_rows:
            if self.base is not None and self.base.num_rows:
                moved = self.overlay.select(self.pk)
                old = find_sorted(self.base, pc.unique(moved.column(0)).sort(), moved, self.pk)
                if old.num_rows:
                    gone = _count(old, by)
                    pieces.append(gone.set_column(len(by), "n", pc.negate(gone.column("n"))))
            alive = self.overlay.filter(self.overlay.column(_ALIVE))
            if alive.num_rows:
                pieces.append(_count(alive, by))
        if not pieces:
            return pa.table({})
        schema = pieces[0].schema
        return _count(pa.concat_tables([p.cast(schema) for p in pieces]), by, "n")


def _count(table: pa.Table, by: list[str], weight: str | None = None) -> pa.Table:
    """Rows (or the sum of ``weight``) per ``by``: the ``by`` columns and ``n``."""
    agg = (weight, "sum") if weight else (by[-1], "count")
    got = table.group_by(by, use_threads=False).aggregate([agg])
    return pa.table({**{c: got.column(c) for c in by}, "n": got.column(f"{agg[0]}_{agg[1]}").cast(pa.int64())})
