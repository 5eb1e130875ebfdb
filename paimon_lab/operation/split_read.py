"""Reading splits into Arrow: projection, exact filtering, limit, and schema evolution by field id."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

import pyarrow as pa

from paimon_lab.core.file_format import read_file, read_parquet_late
from paimon_lab.core.manifest import DataFileMeta
from paimon_lab.core.predicate import And, Predicate, filter_table, match_mask
from paimon_lab.core.schema import TableSchema, field_default_values
from paimon_lab.fileindex import FileIndexReader
from paimon_lab.io.file_io import join
from paimon_lab.mergetree.compact_rewriter import (
    BucketFiles,
    drop_retracts,
    merge_order,
    merge_sorted,
)
from paimon_lab.mergetree.merge_engine import merge_function_of
from paimon_lab.mergetree.reader import MergeReader, supports_fast_merge
from paimon_lab.operation.scan import DataSplit, plan_splits, pushdown_predicate
from paimon_lab.store.file_store import batch_scan_skips_level0
from paimon_lab.utils.parallel import WORKERS, thread_map

if TYPE_CHECKING:
    from paimon_lab.store.file_store import FileStore


class TableRead:
    """Reads the rows of splits as the table's current schema, projected to ``columns``."""

    def __init__(self, store: FileStore, columns: Sequence[str] | None = None,
                 predicate: Predicate | None = None, limit: int | None = None):
        self.store = store
        self.schema: TableSchema = store.schema
        self.columns = list(columns) if columns is not None else self.schema.field_names
        self.output_schema = self.schema.arrow_schema(self.columns)
        self.defaults = field_default_values(self.schema)
        self.final_predicate, self.final_limit = None, None
        if self.defaults and predicate is not None and predicate.columns() & set(self.defaults):
            # Files hold NULL where the read shows the default: filter on those columns only after
            # the defaults are in (as Java, which drops them from the pushed-down filter).
            self.final_predicate, predicate = predicate, pushdown_predicate(self.schema, predicate)
            self.columns += [c for c in sorted(self.final_predicate.columns()) if c not in self.columns]
            self.final_limit, limit = limit, None
        self.predicate = predicate
        self.limit = limit
        self.inner_threads = True
        self._partitions: dict[bytes, tuple] = {}  # partition -> what _decide_partition found

    def _read_file(self, split: DataSplit, file: DataFileMeta) -> pa.Table:
        """The rows of one append-table file: deletion vectors applied, filtered, projected."""
        needed = list(self.columns)
        if self.predicate is not None:
            needed += [c for c in sorted(self.predicate.columns()) if c not in needed]
        if self.predicate is not None and not self._index_may_match(split, file):
            return self.schema.arrow_schema(needed).empty_table()
        dv = self._deletion_vector(split, file)
        if dv is not None:
            rows = self.read_file_rows(split, file, needed)
            rows = rows.filter(pa.array(dv.mask(rows.num_rows)))
            return rows.filter(self.predicate.to_expression()) if self.predicate is not None else rows
        constants, predicate = self._partition_constants(split, needed)
        if predicate is False:
            schema = self.schema.arrow_schema()
            return pa.schema([pa.field(c, schema.field(c).type) for c in needed]).empty_table()
        if not constants:
            return self.read_file_rows(split, file, needed, self.predicate)
        rows = self.read_file_rows(split, file, [c for c in needed if c not in constants], predicate)
        schema = self.schema.arrow_schema()
        columns = []
        for name in needed:
            if name not in constants:
                columns.append(rows.column(name))
                continue
            t, value = schema.field(name).type, constants[name]
            columns.append(pa.nulls(rows.num_rows, t) if value is None else pa.repeat(pa.scalar(value, t), rows.num_rows))
        return pa.Table.from_arrays(columns, names=needed)  # typed and nullable as read_file_rows gives them

    def _partition_constants(self, split: DataSplit, needed: Sequence[str]) -> tuple[dict, Predicate | None | bool]:
        """(partition columns of ``needed`` that are made from the split's partition value instead
        of decoded from the file: every row of a file holds it, as Java fills them in; the filter
        left for the file's rows, False when the partition alone rules every row out).

        A filter conjunct on partition columns only is decided here once; a column that another
        conjunct mixes with file columns is read from the file, as is one column when nothing
        else would be (the file's row count)."""
        keys = set(self.schema.partition_keys) & set(needed)
        if not keys:
            return {}, self.predicate
        values, predicate, mixed = self._decided(split.partition)
        constants = {k: values[k] for k in needed if k in keys and k not in mixed}
        if constants and all(c in constants for c in needed):
            constants.pop(next(iter(constants)))
        return constants, predicate

    def _decided(self, partition: bytes) -> tuple[dict, Predicate | None | bool, set]:
        """:meth:`_decide_partition` of ``partition``, once per read."""
        found = self._partitions.get(partition)
        if found is None:
            found = self._partitions[partition] = self._decide_partition(partition)
        return found

    def _decide_partition(self, partition: bytes) -> tuple[dict, Predicate | None | bool, set]:
        """(partition values, the filter for this partition's files, partition columns it still needs)."""
        values = self.store.partition_codec.to_dict(partition)
        if self.predicate is None:
            return values, None, set()
        conjuncts = list(_conjuncts(self.predicate))
        keys = set(values)
        row = pa.table({f.name: pa.array([values[f.name]], f.type.to_arrow()) for f in self.schema.partition_fields})
        kept = []
        for c in conjuncts:
            if not c.columns() <= keys:
                kept.append(c)
            elif not match_mask(row, c)[0]:
                return values, False, set()
        mixed = set().union(*(c.columns() for c in kept)) & keys if kept else set()
        predicate = None if not kept else kept[0] if len(kept) == 1 else And(tuple(kept))
        return values, predicate, mixed

    def _index_may_match(self, split: DataSplit, file: DataFileMeta) -> bool:
        """A separate ``<file>.index`` file index can rule a file out before it is read."""
        index = [x for x in file.extra_files if x.endswith(".index")]
        if not index or file.schema_id != self.schema.id or not self.schema.core.get("file-index.read.enabled"):
            return True

        data = self.store.file_io.read_bytes(join(self.store.bucket_path(split.partition, split.bucket), index[0]))
        return FileIndexReader(data, list(self.schema.fields)).may_match(self.predicate)

    def _deletion_vector(self, split: DataSplit, file: DataFileMeta):
        t = self.store
        if not t.schema.core.get("deletion-vectors.enabled") or (split.snapshot is None and not split.snapshot_id):
            return None
        _, dvs = t.deletion_vectors_at(split.snapshot or split.snapshot_id).get((split.partition, split.bucket), (None, {}))
        return dvs.get(file.file_name)

    def read_file_rows(self, split: DataSplit, file: DataFileMeta, columns: Sequence[str] | None = None,
                       predicate: Predicate | None = None) -> pa.Table:
        """Rows of one file in the current schema (columns mapped by field id). Without a
        ``predicate`` every physical row is returned, in file order (deletion-vector positions)."""
        t = self.store
        path = join(t.bucket_path(split.partition, split.bucket), file.file_name) \
            if file.external_path is None else file.external_path
        needed = list(columns) if columns is not None else self.schema.field_names
        file_schema = t.schema_for(file.schema_id)
        # Map current columns to the names they had when this file was written (by field id).
        by_id = {f.id: f for f in file_schema.fields}
        current = {f.name: f for f in self.schema.fields}
        physical = [by_id[current[n].id].name for n in needed if current[n].id in by_id]
        same_names = all(current[n].id in by_id and by_id[current[n].id].name == n for n in needed)
        # Parquet keeps TIMESTAMP_LTZ(7..9) as zone-less INT96: such a filter applies after the cast
        int96_ltz = file.format == "parquet" and predicate is not None and any(
            current[c].type.root == "TIMESTAMP_LTZ" and current[c].type.precision > 6
            for c in predicate.columns() if c in current)
        expr = predicate.to_expression() if (predicate is not None and same_names and not int96_ltz) else None
        if expr is not None and file.format == "parquet" and predicate.columns() < set(physical):
            data = read_parquet_late(t.file_io, path, physical, predicate, self.inner_threads)
        else:
            data = read_file(t.file_io, path, file.format, physical, file_schema.fields, expr, self.inner_threads)
        columns_out = []
        for name in needed:
            target = current[name]
            old = by_id.get(target.id)
            if old is None:
                columns_out.append(pa.nulls(data.num_rows, target.type.to_arrow()))
                continue
            column = data.column(old.name)
            arrow_type = target.type.to_arrow()
            columns_out.append(column.cast(arrow_type) if column.type != arrow_type else column)
        out = pa.Table.from_arrays(columns_out, names=needed)
        if predicate is not None and expr is None:
            out = out.filter(predicate.to_expression())
        return out

    def _needed_columns(self) -> list[str]:
        """Projected columns plus the columns the filter needs."""
        needed = list(self.columns)
        if self.predicate is not None:
            needed += [c for c in sorted(self.predicate.columns()) if c not in needed]
        return needed

    def _read_merged(self, split: DataSplit) -> pa.Table:
        """Merge-on-read of one bucket of a primary-key table.

        Only the key part of the filter is applied before merging (every version of a key has
        the same key); the whole filter is applied to the merged rows, so an older version that
        matches a value filter never comes back."""

        t = self.store
        layout = t.kv_layout
        merge_fn = merge_function_of(t)
        reader = MergeReader(t, split.partition, split.bucket, self.inner_threads)
        needed = self._needed_columns()
        predicate = self.predicate
        if predicate is not None and self.schema.partition_keys:
            # conjuncts on partition columns hold for every row of the bucket, or for none
            predicate = self._decided(split.partition)[1]
            if predicate is False:
                return t.schema.arrow_schema(needed).empty_table()
        if t.schema.core.get("deletion-vectors.enabled"):
            # Every key lives once above level 0; older versions are masked by deletion vectors.
            _, dvs = t.deletion_vectors_at(split.snapshot or split.snapshot_id).get((split.partition, split.bucket), (None, {}))
            values = reader.read_with_deletion_vectors([f for f in split.files if f.level > 0], dvs, needed,
                                                       predicate)
        else:

            chosen = merge_order([f for f in split.files if f.level > 0] if batch_scan_skips_level0(t.schema.core)
                                 else split.files)
            if supports_fast_merge(merge_fn) and reader.key_names:
                values = reader.read_deduplicated(chosen, needed, predicate, merge_fn.ignore_delete)
            else:
                # The other engines merge every column; only a single sorted run is not merged
                # (merging a key's lone row may change it, e.g. a lone retraction of a sum).
                key_pred = reader.key_predicate(predicate)
                if key_pred is not None:  # row groups pruned by key, rows filtered by key
                    kv = reader.read_kv(chosen, key_pred)
                else:
                    kv = BucketFiles(t, layout, split.partition, split.bucket).read(chosen)
                levels = {f.level for f in chosen}
                if len(chosen) > 1 and not (len(levels) == 1 and 0 not in levels):
                    kv = merge_sorted(layout, merge_fn, kv)
                values = drop_retracts(kv).select(needed)
        return filter_table(values, predicate)

    def read(self, splits: Sequence[DataSplit]) -> pa.Table:
        if self.store.schema.primary_keys:
            return self._finish(self._read_parts(self._read_merged, splits))
        jobs = [(s, f) for s in splits for f in s.files]
        return self._finish(self._read_parts(lambda job: self._read_file(*job), jobs))

    def _read_parts(self, fn, items) -> list[pa.Table]:
        # Files or buckets are read on WORKERS threads; when there are fewer of them, each one
        # decodes its columns on Arrow's threads instead. A bucket's merge also decodes on Arrow's
        # threads (a pool of one thread per core, shared by the buckets): while one bucket sorts
        # keys or gathers winners, another bucket's columns keep every core busy.
        self.inner_threads = self.limit is not None or len(items) < WORKERS or bool(self.store.schema.primary_keys)
        if self.limit is not None:
            parts, remaining = [], self.limit
            for item in items:
                if remaining <= 0:
                    break
                parts.append(fn(item).slice(0, remaining))
                remaining -= parts[-1].num_rows
            return parts
        return thread_map(fn, items)

    def _finish(self, parts: list[pa.Table]) -> pa.Table:
        if not parts:
            return self.output_schema.empty_table()
        if not self.columns:  # concat_tables loses the row count of tables without columns
            return pa.table({"_": pa.nulls(sum(p.num_rows for p in parts))}).select([])
        result = pa.concat_tables(parts) if len(parts) > 1 else parts[0]
        result = result.select(self.columns)
        if self.defaults:
            for name, value in self.defaults.items():
                if name in result.column_names:
                    i = result.column_names.index(name)
                    result = result.set_column(i, name, result.column(i).fill_null(value))
            if self.final_predicate is not None:
                result = result.filter(self.final_predicate.to_expression())
            if self.final_limit is not None:
                result = result.slice(0, self.final_limit)
        return result.select(self.output_schema.names).cast(self.output_schema)


def _conjuncts(pred: Predicate):
    """The top-level AND-ed parts of ``pred``."""
    if isinstance(pred, And):
        for c in pred.children:
            yield from _conjuncts(c)
    else:
        yield pred


def read_table(store: FileStore, columns: Sequence[str] | None = None, predicate: Predicate | None = None, *,
               snapshot_id: int | None = None, tag: str | None = None, timestamp_millis: int | None = None,
               limit: int | None = None, read_optimized: bool = False) -> pa.Table:
    """Read a snapshot of the table (latest, or by id, tag or time) as Arrow."""
    snap = store.snapshot(snapshot_id, tag=tag, timestamp_millis=timestamp_millis)
    reader = TableRead(store, columns, predicate, limit)
    if snap is None:
        return reader.output_schema.empty_table()
    return reader.read(plan_splits(store, snap, predicate, read_optimized))
