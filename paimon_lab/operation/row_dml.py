"""Row-level DML: DELETE, UPDATE and MERGE INTO.

Primary-key tables turn them into -D and +U records (the merge engine does the rest). Append
tables rewrite the data files that hold affected rows (an OVERWRITE snapshot replacing exactly
those files), or, with 'deletion-vectors.enabled', mark the deleted rows in deletion vectors
and write updated rows as new files.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Callable, Mapping, Sequence

import numpy as np
import pyarrow as pa

from paimon_lab.operation.commit import FileStoreCommit
from paimon_lab.operation.maintenance import after_commit
from paimon_lab.errors import DataValidationError, PaimonLabError
from paimon_lab.io.file_io import join
from paimon_lab.core.manifest import ADD, ManifestEntry
from paimon_lab.core.predicate import Predicate
from paimon_lab.operation.scan import DataSplit
from paimon_lab.operation.scan import FileStoreScan
from paimon_lab.mergetree.merge_engine import merge_function_of
from paimon_lab.operation.table_write import new_store_write
from paimon_lab.operation.split_read import read_table
from paimon_lab.operation.table_write import write_rows
from paimon_lab.operation.split_read import TableRead
from paimon_lab.store.file_store import dv_index_entries, load_deletion_vectors
from paimon_lab.core.deletion_vector import DeletionVector, write_dv_index
from paimon_lab.core.index_manifest import IndexFileMeta, IndexManifestEntry
from paimon_lab.core.manifest import FileNamer
from paimon_lab.store.commit_message import CommitMessage
from paimon_lab.core.predicate import And, Leaf, Or, bind

if TYPE_CHECKING:
    from paimon_lab.store.file_store import FileStore

Assignment = Any  # a literal, or a callable(rows: pa.Table) -> array of new values


def _assign(rows: pa.Table, values: Mapping[str, Assignment], schema: pa.Schema) -> pa.Table:
    for name, v in values.items():
        if name not in schema.names:
            raise DataValidationError(f"UPDATE sets unknown column '{name}'")
        target = schema.field(name).type
        try:
            col = v(rows) if callable(v) else pa.array([v] * rows.num_rows, type=target) if v is not None \
                else pa.nulls(rows.num_rows, target)
            if not isinstance(col, (pa.Array, pa.ChunkedArray)):
                col = pa.array(col)
            col = col.cast(target)
        except (pa.ArrowInvalid, pa.ArrowNotImplementedError, pa.ArrowTypeError, TypeError) as e:
            raise DataValidationError(f"UPDATE value for '{name}' does not fit {target}: {e}") from None
        rows = rows.set_column(rows.schema.get_field_index(name), name, col)
    return rows


def _match_mask(rows: pa.Table, pred: Predicate | None) -> np.ndarray:
    """Which rows ``pred`` selects (SQL semantics: a null result does not select)."""
    if pred is None:
        return np.ones(rows.num_rows, dtype=bool)
    indexed = rows.append_column("__i", pa.array(np.arange(rows.num_rows), pa.int64()))
    out = np.zeros(rows.num_rows, dtype=bool)
    out[indexed.filter(pred.to_expression()).column("__i").to_numpy()] = True
    return out


def _check_merge_engine(store: "FileStore", statement: str) -> None:
    """Refuse row-level DML a primary-key table's merge engine would not apply as written (as
    Paimon's Spark integration does): UPDATE and MERGE INTO need deduplicate or partial-update
    (aggregation would aggregate the rewritten row again, first-row would ignore it); DELETE
    also works on aggregation and partial-update tables that remove records on delete."""
    if not store.schema.primary_keys:
        return
    fn = merge_function_of(store)
    engine = fn.engine
    if statement == "DELETE":
        if fn.ignore_delete:
            raise PaimonLabError(f"DELETE on this {engine} table would be ignored: it sets "
                                 f"{' or '.join(repr(o) for o in fn.ignore_delete_options)} = 'true'")
        if engine == "deduplicate" or fn.remove_on_delete:
            return
        if engine == "first-row":
            raise PaimonLabError("DELETE is not supported on a first-row table: the first row of a key "
                                 "always wins, deletes cannot be expressed")
        raise PaimonLabError(f"DELETE on a {engine} table needs '{fn.remove_on_delete_option}' = 'true' "
                             "(otherwise a -D row is a retraction, not a removal)")
    if engine not in ("deduplicate", "partial-update"):
        raise PaimonLabError(f"{statement} is not supported on a {engine} table (only deduplicate and "
                             "partial-update tables can take rewritten rows)")


def delete_rows(store: "FileStore", pred: Predicate | None) -> int | None:
    """DELETE FROM table WHERE pred. Returns the new snapshot id (None if nothing matched)."""
    return delete_rows_counted(store, pred)[0]


def delete_rows_counted(store: "FileStore", pred: Predicate | None) -> tuple[int | None, int]:
    """:func:`delete_rows`, returning (the new snapshot id, the number of rows deleted)."""
    _check_merge_engine(store, "DELETE")
    if store.schema.primary_keys:
        rows = read_table(store, predicate=pred)
        if rows.num_rows == 0:
            return None, 0
        return write_rows(store, rows, row_kinds=["-D"] * rows.num_rows), rows.num_rows
    return rewrite_append(store, pred, None)


def update_rows(store: "FileStore", values: Mapping[str, Assignment], pred: Predicate | None) -> int | None:
    """UPDATE table SET values WHERE pred."""
    return update_rows_counted(store, values, pred)[0]


def update_rows_counted(store: "FileStore", values: Mapping[str, Assignment],
                        pred: Predicate | None) -> tuple[int | None, int]:
    """:func:`update_rows`, returning (the new snapshot id, the number of rows updated)."""
    if not values:
        raise PaimonLabError("UPDATE needs at least one column to set")
    _check_merge_engine(store, "UPDATE")
    keys = set(store.schema.primary_keys) | set(store.schema.partition_keys)
    if store.schema.primary_keys:
        bad = [k for k in values if k in keys]
        if bad:
            raise PaimonLabError(f"UPDATE cannot change primary or partition key columns {bad}")
        rows = read_table(store, predicate=pred)
        if rows.num_rows == 0:
            return None, 0
        rows = _assign(rows, values, store.schema.arrow_schema())
        return write_rows(store, rows, row_kinds=["+U"] * rows.num_rows), rows.num_rows
    return rewrite_append(store, pred, values)


def rewrite_append(store: "FileStore", pred: Predicate | None, values: Mapping[str, Assignment] | None,
                    extra_rows: Sequence[pa.Table] = ()) -> tuple[int | None, int]:
    """Rewrite the append-table files holding matching rows: drop them (DELETE) or replace them
    with updated values (UPDATE); ``extra_rows`` are added in the same commit.
    Returns (snapshot id or None, number of matched rows)."""

    snap = store.snapshot_manager.latest()
    if snap is None and not extra_rows:
        return None, 0
    if store.schema.core.get("deletion-vectors.enabled") and snap is not None:
        return _append_with_deletion_vectors(store, snap, pred, values, extra_rows)
    schema = store.schema.arrow_schema()
    reader = TableRead(store)
    deleted: list[ManifestEntry] = []
    kept_parts: list[pa.Table] = list(extra_rows)
    matched = 0
    for split in (FileStoreScan(store).plan(snap, pred) if snap is not None and pred is not False else []):
        for f in split.files:
            rows = reader.read([DataSplit(split.partition, split.bucket, [f], snap.id, snap)])
            mask = _match_mask(rows, pred)
            if not mask.any():
                continue
            matched += int(mask.sum())
            deleted.append(ManifestEntry(ADD, split.partition, split.bucket, store.schema.core.bucket, f))
            kept_parts.append(rows.filter(pa.array(~mask)))
            if values is not None:
                kept_parts.append(_assign(rows.filter(pa.array(mask)), values, schema))
    if not deleted and not any(p.num_rows for p in extra_rows):
        return None, 0
    writer = new_store_write(store, "dml", ignore_previous_files=True)
    messages = []
    try:
        for rest in kept_parts:
            writer.write(rest)
        messages = writer.prepare_commit()
        first, _ = FileStoreCommit(store).commit(messages, deleted=deleted,
                                                 commit_kind="OVERWRITE" if deleted else "APPEND")
    except BaseException:
        store.discard(messages)
        raise
    if first is not None:
        after_commit(store)
    return first, matched


def _append_with_deletion_vectors(store: "FileStore", snap, pred, values, extra_rows=()) -> tuple[int | None, int]:
    """Append table with deletion vectors: mark matching rows deleted, append updated rows."""

    existing = load_deletion_vectors(store, snap)
    reader = TableRead(store)
    schema = store.schema.arrow_schema()
    changed: dict[tuple[bytes, int], dict[str, DeletionVector]] = {}
    updated: list[pa.Table] = list(extra_rows)
    matched = 0
    bitmap64 = bool(store.schema.core.get("deletion-vectors.bitmap64"))  # existing vectors keep their kind
    for split in FileStoreScan(store).plan(snap, pred):
        key = (split.partition, split.bucket)
        vectors = changed.get(key) or {n: dv.copy() for n, dv in existing.get(key, (None, {}))[1].items()}
        touched = False
        for f in split.files:
            rows = reader.read_file_rows(split, f)  # every physical row, in file order
            mask = _match_mask(rows, pred)
            dv = vectors.get(f.file_name)
            if dv is not None:
                mask &= dv.mask(rows.num_rows)
            if not mask.any():
                continue
            matched += int(mask.sum())
            touched = True
            vectors.setdefault(f.file_name, DeletionVector(bitmap64=bitmap64)).delete(np.flatnonzero(mask))
            if values is not None:
                updated.append(_assign(rows.filter(pa.array(mask)), values, schema))
        if touched:
            changed[key] = vectors
    if not changed and not any(p.num_rows for p in extra_rows):
        return None, 0
    namer = FileNamer("index-")
    index_changes = []
    for (part, bucket), vectors in changed.items():
        for old in dv_index_entries(store, snap, part, bucket):
            index_changes.append(IndexManifestEntry(1, part, bucket, old.index_file))
        live = {n: v for n, v in vectors.items() if not v.is_empty()}
        data, metas = write_dv_index(live)
        name = namer.next()
        store.file_io.write_bytes(join(store.path, "index", name), data)
        index_changes.append(IndexManifestEntry(0, part, bucket, IndexFileMeta.for_deletion_vectors(name, len(data), metas)))
    writer = new_store_write(store, "dml")
    messages = []
    try:
        for rows in updated:
            writer.write(rows)
        messages = writer.prepare_commit()

        holder = CommitMessage(b"", 0, store.schema.core.bucket, index_changes=index_changes)
        first, _ = FileStoreCommit(store).commit(list(messages) + [holder])
    except BaseException:
        store.discard(messages)
        store.file_io.delete_quietly([join(store.path, "index", e.index_file.file_name)
                                      for e in index_changes if e.kind == 0])
        raise
    if first is not None:
        after_commit(store)
    return first, matched


def merge_into(store: "FileStore", source: pa.Table, on: Sequence[str], *,
               matched_update: Mapping[str, Assignment] | bool | None = None,
               matched_delete: bool = False,
               not_matched_insert: bool | Callable[[pa.Table], pa.Table] = False,
               matched_condition: Predicate | None = None) -> int | None:
    """MERGE INTO table USING source ON table.k = source.k for each column in ``on``.

    ``matched_update``: True updates every column from the source, a mapping sets columns (values
    may be callables of the joined source rows). ``matched_delete`` deletes matched target rows.
    ``not_matched_insert``: insert source rows without a match. One commit for the whole merge.
    """
    _check_merge_engine(store, "MERGE INTO")
    schema = store.schema.arrow_schema()
    missing = [c for c in on if c not in schema.names or c not in source.column_names]
    if missing:
        raise PaimonLabError(f"MERGE INTO join columns {missing} must exist in both target and source")
    target = read_table(store)
    if matched_condition is not None:
        eligible = target.filter(matched_condition.to_expression())
    else:
        eligible = target
    keys = source.select(list(on)).group_by(list(on)).aggregate([])
    matched = eligible.join(keys, keys=list(on), join_type="left semi")
    inserts = source.join(target.select(list(on)).group_by(list(on)).aggregate([]), keys=list(on),
                          join_type="left anti") if not_matched_insert else None
    if callable(not_matched_insert) and inserts is not None:
        inserts = not_matched_insert(inserts)
    pk = store.schema.primary_keys
    new_rows: list[pa.Table] = []
    kinds: list[str] = []
    if matched.num_rows and (matched_update or matched_delete):
        if matched_delete:
            if pk:
                new_rows.append(matched)
                kinds += ["-D"] * matched.num_rows
        else:
            src = source.rename_columns([f"__src_{c}" if c not in on else c for c in source.column_names])
            joined = matched.join(src, keys=list(on), join_type="inner")
            view = _source_view(joined, on)
            if matched_update is True:
                values = {c: view.column(c) for c in schema.names if c not in on and c in view.column_names}
            else:
                values = {c: (v(view) if callable(v) else v) for c, v in matched_update.items()}
            upd = joined.select(schema.names)
            for c, v in values.items():
                upd = _assign(upd, {c: (lambda _r, v=v: v) if isinstance(v, (pa.Array, pa.ChunkedArray)) else v},
                              schema)
            new_rows.append(upd)
            kinds += ["+U"] * upd.num_rows
    if inserts is not None and inserts.num_rows:
        extra = [c for c in inserts.column_names if c not in schema.names]
        inserts = inserts.drop_columns(extra)
        new_rows.append(inserts)
        kinds += ["+I"] * inserts.num_rows
    if pk:
        if not new_rows:
            return None
        data = pa.concat_tables([r.select(schema.names).cast(schema) for r in new_rows])
        return write_rows(store, data, row_kinds=kinds)
    return _merge_append(store, matched if (matched_update or matched_delete) else None, on, new_rows, kinds)


def _source_view(joined: pa.Table, on: Sequence[str]) -> pa.Table:
    """The source columns of a MERGE join, under their own names."""
    cols = {c[len("__src_"):]: joined.column(c) for c in joined.column_names if c.startswith("__src_")}
    for c in on:
        cols[c] = joined.column(c)
    return pa.table(cols)


def _merge_append(store: "FileStore", matched: pa.Table | None, on: Sequence[str], new_rows: list[pa.Table],
                  kinds: list[str]) -> int | None:
    """MERGE on an append table, as one commit: rewrite the files holding matched rows without
    them, and add the updated and inserted rows."""

    schema = store.schema.arrow_schema()
    pred: Predicate | bool = False
    if matched is not None and matched.num_rows:
        keys = matched.select(list(on)).group_by(list(on)).aggregate([]).to_pylist()
        if len(on) == 1:
            pred = bind(Leaf("in", on[0], tuple(k[on[0]] for k in keys)), schema)
        else:
            pred = bind(Or(tuple(And(tuple(Leaf("=", c, (k[c],)) for c in on)) for k in keys)), schema)
    extra = [r.select(schema.names).cast(schema) for r in new_rows]
    if pred is False and not extra:
        return None
    return rewrite_append(store, pred, None, extra)[0]
