"""Merge-on-read of one bucket that reads as little as it can.

The general merge (:func:`.compact.merge_sorted`) reads every column of every file, sorts all
rows by key and merge order and reduces each key group. That is what the partial-update,
aggregation and first-row engines need. For the deduplicate engine (the default) the newest
version of a key is the whole answer, so :class:`MergeReader` works in two phases:

1. read only the key columns of every file (plus ``_SEQUENCE_NUMBER``, ``_VALUE_KIND`` and the
   ``sequence.field`` columns where the merge order needs them), find the winning row of every
   key with one stable sort of those narrow columns;
2. read the value columns only of files that hold winners and ``take`` only the winning rows.

Cheaper still, and used whenever it applies:

* the bucket's files are split into sections by key range (``min_key``/``max_key`` in the file
  metadata; Java's IntervalPartition): a section of one file needs no merge (each key has one
  version, so rows are only filtered, -U/-D rows dropped); only sections of overlapping files are
  merged, and the sections are concatenated in key order;
* a run whose key-column chunks are byte for byte those of a newer run (the same keys upserted
  again) loses every row: it is dropped before any of its columns is decoded; where the runs
  are split into files at different points, a file whose every key newer files hold is found
  from the decoded key column alone and dropped before any sort (:mod:`.shadowed`);
* the winners' values are gathered once from the files that hold any, read whole; string
  columns stored with a dictionary are read as their codes and gathered as codes, so strings
  are built only for the rows returned (losing versions cost only their codes);
* when every two files whose key ranges overlap have ordered sequence ranges, the position
  after concatenating the files oldest first *is* the merge order, so ``_SEQUENCE_NUMBER`` is not
  read and a single integer key is sorted with numpy's stable sort (timsort: near linear on
  concatenated sorted runs);
* key predicates (``id = 5``, ``id IN (...)``, ranges) skip Parquet row groups by their key
  statistics and drop rows before the merge: every version of a key has the same key, so this
  never changes which version wins. Predicates on other columns must wait until after the merge
  (an older version matching a value filter must not come back), which the caller does.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Sequence

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from paimon_lab.utils.arrow import sort_indices_nulls_first
from paimon_lab.errors import CorruptFileError
from paimon_lab.io.file_io import join
from paimon_lab.core.manifest import DataFileMeta
from paimon_lab.core.key_value import (DELETE, KEY_FIELD_ID_START, KEY_PREFIX, SEQUENCE_NUMBER,
                                     UPDATE_BEFORE, VALUE_KIND, KeyValueLayout, is_retract)
from paimon_lab.mergetree.merge_engine.deduplicate import DeduplicateMergeFunction
from paimon_lab.mergetree.key_groups import group_starts
from paimon_lab.mergetree.levels import key_sections
from paimon_lab.mergetree.compact_rewriter import folds_upper_levels, newest_upper
from paimon_lab.mergetree.shadowed import KeyChunks, covered_runs, key_chunks, shadowed_runs
from paimon_lab.core.predicate import match_mask

if TYPE_CHECKING:
    from paimon_lab.core.predicate import Predicate
    from paimon_lab.store.file_store import FileStore


def supports_fast_merge(merge_fn) -> bool:
    """Whether :meth:`MergeReader.read_deduplicated` gives exactly what ``merge_fn`` would."""
    return type(merge_fn) is DeduplicateMergeFunction and not getattr(merge_fn, "remove_on_delete", False)


def _retract_np(kinds: np.ndarray) -> np.ndarray:
    return (kinds == UPDATE_BEFORE) | (kinds == DELETE)


def _numpy_key(t: pa.DataType) -> bool:
    """Key types numpy sorts and compares exactly like Arrow (no NaN, no collation questions)."""
    return pa.types.is_integer(t) or pa.types.is_date(t) or pa.types.is_timestamp(t)


def _prunable(t: pa.DataType) -> bool:
    """Key types whose Parquet row-group statistics are safe to compare with literals."""
    return pa.types.is_integer(t) or pa.types.is_string(t) or pa.types.is_large_string(t)


def _identity(positions: np.ndarray, rows: int) -> bool:
    """Whether taking ``positions`` from ``rows`` rows gives them all, in order (no gather needed)."""
    return len(positions) == rows and bool(np.all(positions == np.arange(rows)))


def _last_positions(runs: list[np.ndarray]) -> np.ndarray:
    """Position (in the concatenation of ``runs``, oldest first) of each key's last occurrence,
    in key order. A run whose keys equal a newer run's (the same key set upserted again) loses
    every row, so it is left out of the sort."""
    offsets = np.zeros(len(runs) + 1, dtype=np.int64)
    np.cumsum([len(r) for r in runs], out=offsets[1:])
    live = [i for i, r in enumerate(runs)
            if not any(len(n) == len(r) and np.array_equal(n, r) for n in runs[i + 1:])]
    if len(live) == 1:
        return np.arange(offsets[live[0]], offsets[live[0] + 1], dtype=np.int64)
    keys = np.concatenate([runs[i] for i in live])
    idx = np.argsort(keys, kind="stable").astype(np.int64, copy=False)   # timsort: runs merge fast
    ks = keys[idx]
    last = np.ones(len(ks), dtype=bool)
    if len(ks) > 1:
        last[:-1] = ks[1:] != ks[:-1]
    winners = np.compress(last, idx)
    if len(live) < len(runs):                       # back to positions in every run's concatenation
        winners = np.concatenate([np.arange(offsets[i], offsets[i + 1], dtype=np.int64) for i in live])[winners]
    return winners


def _dictionary_coded(md, schema: pa.Schema, leaves: dict[str, int], name: str) -> bool:
    """Whether top-level column ``name`` of a Parquet file (footer ``md``, Arrow ``schema``, leaf
    column index by path ``leaves``) is a string/binary column whose every column chunk has a
    dictionary page (reading its codes is cheaper than building every string)."""
    i = schema.get_field_index(name)
    t = schema.field(i).type if i >= 0 else None
    if t is None or not (pa.types.is_string(t) or pa.types.is_large_string(t) or pa.types.is_binary(t)
                         or pa.types.is_large_binary(t)):
        return False
    leaf = leaves.get(name)
    return leaf is not None and md.num_row_groups > 0 and \
        all(md.row_group(g).column(leaf).has_dictionary_page for g in range(md.num_row_groups))


def _concat(parts: list[pa.Table]) -> pa.Table:
    """``pa.concat_tables`` of parts read by :meth:`KVFileReader.read`; where a column came back
    as dictionary codes from some files and as plain strings from others, it is decoded first."""
    if len(parts) == 1:
        return parts[0]
    if any(not p.schema.equals(parts[0].schema) for p in parts[1:]):
        parts = [_decode_dictionaries(p) for p in parts]
    return pa.concat_tables(parts)


def _decode_dictionaries(rows: pa.Table) -> pa.Table:
    for i, field in enumerate(rows.schema):
        if pa.types.is_dictionary(field.type):
            rows = rows.set_column(i, field.with_type(field.type.value_type),
                                   rows.column(i).cast(field.type.value_type))
    return rows


class KVFileReader:
    """Selected columns of one KV data file, as the table's current KV layout (by field id).

    A Parquet file is opened once and read column by column as asked (so a merge can read keys
    first and values later); other formats are read whole through the layout.
    ``row_groups`` restricts a Parquet read to some row groups (all reads of this reader alike).
    """

    def __init__(self, store: "FileStore", layout: KeyValueLayout, path: str, meta: DataFileMeta,
                 use_threads: bool = True):
        self.store, self.layout, self.path, self.meta = store, layout, path, meta
        self.use_threads = use_threads  # decode columns on Arrow's threads
        self.file_schema = store.schema_for(meta.schema_id)
        self.by_id = {f.id: f for f in self.file_schema.fields}
        self._parquet = None
        self._whole: pa.Table | None = None
        self.row_groups: list[int] | None = None
        self._keys_read: tuple | None = None    # the last read of key columns only, kept for reuse
        if meta.format == "parquet":
            self._open_parquet()

    # ------------------------------------------------------------------ opening
    def _open_parquet(self) -> None:
        import pyarrow.parquet as pq

        io = self.store.file_io
        try:
            self._source = io.open_input(self.path)
            self._parquet = pq.ParquetFile(self._source, pre_buffer=not getattr(io, "is_local", True))
        except FileNotFoundError:
            raise CorruptFileError(f"Data file {self.path} is missing") from None
        except (pa.ArrowInvalid, OSError, ValueError) as e:
            raise CorruptFileError(f"Data file {self.path} cannot be read: {e}") from None
        self._schema = self._parquet.schema_arrow   # built anew on every access: kept
        self.names = set(self._schema.names)
        self._coded = None              # the same file, dictionary string columns read as codes
        self._coded_set: set[str] = set()
        self._coded_columns: dict[str, bool] = {}
        self._leaves: dict[str, int] | None = None

    @property
    def leaves(self) -> dict[str, int]:
        """The footer's leaf column index by column path, built once per file."""
        if self._leaves is None:
            md = self._parquet.metadata
            self._leaves = {md.schema.column(j).path: j for j in range(md.num_columns)}
        return self._leaves

    def _coded_reader(self, wanted: Sequence[str]):
        """A reader of the same file (same footer) that returns the dictionary-encoded string
        columns among ``wanted`` as their codes, or None when there are none."""
        import pyarrow.parquet as pq

        new = [name for name in wanted if name not in self._coded_columns]
        for name in new:
            self._coded_columns[name] = _dictionary_coded(self._parquet.metadata, self._schema, self.leaves, name)
        coded = sorted(n for n in wanted if self._coded_columns[n])
        if not coded:
            return None
        if self._coded is None or not set(coded) <= self._coded_set:
            if self._coded is not None:
                self._coded.close()
            self._coded_set = {n for n, yes in self._coded_columns.items() if yes}
            self._coded = pq.ParquetFile(self._source, metadata=self._parquet.metadata,
                                         pre_buffer=not getattr(self.store.file_io, "is_local", True),
                                         read_dictionary=sorted(self._coded_set))
        return self._coded

    def close(self) -> None:
        if self._parquet is not None:
            try:
                self._parquet.close()
                if self._coded is not None:
                    self._coded.close()
            finally:
                self._source.close()
            self._parquet = self._coded = self._keys_read = None

    # ------------------------------------------------------------------ columns
    def _physical(self, name: str) -> str | None:
        """The file's column holding layout column ``name`` (None: not in the file, read as null)."""
        if name in (SEQUENCE_NUMBER, VALUE_KIND):
            return name
        if name in self.layout.key_columns:
            fid = self._layout_field(name).id - KEY_FIELD_ID_START
            old = self.by_id.get(fid)
            if old is None:
                return None
            keyed = KEY_PREFIX + old.name
            return keyed if keyed in self.names else (old.name if old.name in self.names else None)
        old = self.by_id.get(self._layout_field(name).id)
        return old.name if old is not None and old.name in self.names else None

    def _layout_field(self, name: str):
        return self.layout.fields_by_name[name]

    @property
    def num_rows(self) -> int:
        if self._parquet is not None:
            md = self._parquet.metadata
            if self.row_groups is None:
                return md.num_rows
            return sum(md.row_group(i).num_rows for i in self.row_groups)
        return self._read_whole().num_rows

    def read(self, names: Sequence[str], keep_dictionary: bool = False) -> pa.Table:
        """Columns ``names`` (layout names: ``_KEY_<k>``, system or value columns), typed as the
        current layout, every row of the file (or of the chosen row groups), in file order.

        ``keep_dictionary``: value columns of string type stored dictionary-encoded come back
        as Arrow dictionary arrays of that type (:meth:`MergeReader._assemble` turns them into
        plain strings once the rows to keep are known); key columns never do."""
        if self._parquet is None:
            return self._read_whole().select(list(names))
        memo = (tuple(names), None if self.row_groups is None else tuple(self.row_groups))
        if self._keys_read is not None and self._keys_read[0] == memo:
            return self._keys_read[1]   # e.g. keys decoded by covered_runs, read again by the merge
        out = self._read_parquet(names, keep_dictionary)
        if all(n in self.layout.key_columns for n in names):
            self._keys_read = (memo, out)
        return out

    def _read_parquet(self, names: Sequence[str], keep_dictionary: bool) -> pa.Table:
        target = self.layout.arrow_schema
        # Kinds are always decoded: deleteRowCount cannot be trusted (pypaimon 2.1 writes 0 for
        # files holding -D rows; see tests/test_interop_pk.py::test_pypaimon_delete_row_count).
        physical = {n: self._physical(n) for n in names}
        wanted = sorted({p for p in physical.values() if p is not None})
        try:
            values = [physical[n] for n in names if physical[n] is not None and n not in self.layout.key_columns]
            source = (self._coded_reader(values) if keep_dictionary and values else None) or self._parquet
            if self.row_groups is None:
                raw = source.read(columns=wanted, use_threads=self.use_threads)
            else:
                raw = source.read_row_groups(self.row_groups, columns=wanted, use_threads=self.use_threads)
        except (pa.ArrowInvalid, OSError, ValueError) as e:
            raise CorruptFileError(f"Data file {self.path} cannot be read: {e}") from None
        out, fields = [], []
        for n in names:
            field = target.field(n)
            t = field.type
            p = physical[n]
            if p is None:
                out.append(pa.nulls(raw.num_rows, t))
                fields.append(field)
                continue
            col = raw.column(p)
            if pa.types.is_dictionary(col.type):
                if keep_dictionary and col.type.value_type == t and n not in self.layout.key_columns:
                    out.append(col)
                    fields.append(field.with_type(col.type))
                    continue
                col = col.cast(col.type.value_type)
            out.append(col.cast(t) if col.type != t else col)
            fields.append(field)
        return pa.Table.from_arrays(out, schema=pa.schema(fields))

    def _read_whole(self) -> pa.Table:
        if self._whole is None:
            self._whole = self.layout.read(self.store.file_io, self.path, self.meta, self.file_schema)
        return self._whole

    def key_chunks(self) -> KeyChunks | None:
        """The raw Parquet column chunks of the key columns (None: not Parquet, or a key missing)."""
        if self._parquet is None:
            return None
        physical = [self._physical(c) for c in self.layout.key_columns]
        return None if None in physical else key_chunks(self._parquet, self.leaves, self._source, physical)

    # ------------------------------------------------------------------ pruning
    def prune_row_groups(self, key_pred: "Predicate | None") -> bool:
        """Keep only row groups whose key statistics may match ``key_pred`` (over the user names
        of key columns). Returns False when no row group (so no row) can match."""
        if key_pred is None or self._parquet is None:
            return True
        md = self._parquet.metadata
        if md.num_row_groups == 0:
            return True
        leaf = self.leaves
        columns = {}
        for f in self.layout.key_fields:
            user = f.name[len(KEY_PREFIX):]
            if user not in key_pred.columns() or not _prunable(f.type.to_arrow()):
                continue
            p = self._physical(f.name)
            if p is not None and p in leaf:
                columns[user] = leaf[p]
        if not columns:
            return True
        keep = []
        for g in range(md.num_row_groups):
            rg = md.row_group(g)
            stats = {}
            for user, i in columns.items():
                s = rg.column(i).statistics
                if s is not None and s.has_min_max:
                    stats[user] = (s.min, s.max, s.null_count if s.has_null_count else None)
            try:
                ok = key_pred.may_match(stats, rg.num_rows)
            except Exception:  # noqa: BLE001 - statistics we cannot compare never prune
                ok = True
            if ok:
                keep.append(g)
        if len(keep) < md.num_row_groups:
            self.row_groups = keep
        return bool(keep)


class MergeReader:
    """Reads the merged rows of one bucket (see the module docstring)."""

    def __init__(self, store: "FileStore", partition: bytes, bucket: int, use_threads: bool = True):
        """``use_threads``: decode each file's columns on Arrow's threads."""
        self.store = store
        self.use_threads = use_threads
        self.layout: KeyValueLayout = store.kv_layout
        self.directory = store.bucket_path(partition, bucket)
        self.key_names = list(self.layout.key_names)            # user names of the key columns
        self.key_columns = list(self.layout.key_columns)        # _KEY_<name>
        # Partition columns hold the bucket's partition values in every row: made, not decoded.
        self.constants = store.partition_codec.to_dict(partition) if store.schema.partition_keys else {}

    def path(self, f: DataFileMeta) -> str:
        return f.external_path or join(self.directory, f.file_name)

    def key_predicate(self, predicate: "Predicate | None") -> "Predicate | None":
        """The part of ``predicate`` on key columns only: safe to apply before merging."""
        return predicate.restrict(set(self.key_names)) if predicate is not None else None

    def read_kv(self, files: Sequence[DataFileMeta], key_pred: "Predicate") -> pa.Table:
        """Every KV row of ``files`` (in order) whose key matches ``key_pred``, skipping the Parquet
        row groups whose key statistics rule it out: a key's versions all share the key, so this is
        safe before any merge. Lookup-folded tables keep only the rows a merge sees there
        (:func:`~paimon_lab.mergetree.compact_rewriter.newest_upper`)."""
        names = list(self.layout.arrow_schema.names)
        parts = []
        for f in files:
            r = KVFileReader(self.store, self.layout, self.path(f), f, self.use_threads)
            try:
                if not r.prune_row_groups(key_pred):
                    continue
                kv = r.read(names)
            finally:
                r.close()
            parts.append((f.level, kv.filter(pa.array(match_mask(kv, key_pred))) if kv.num_rows else kv))
        if folds_upper_levels(self.store.schema.core):
            parts = newest_upper(self.layout.key_columns, parts)
        parts = [p for _, p in parts if p.num_rows]
        if not parts:
            return self.layout.arrow_schema.empty_table()
        return pa.concat_tables(parts) if len(parts) > 1 else parts[0]

    # ------------------------------------------------------------------ key ranges
    def _key_ranges(self, files: Sequence[DataFileMeta]) -> list[tuple] | None:
        types = self.layout.key_types
        try:
            return [f.key_range(types) for f in files]
        except Exception:  # noqa: BLE001 - undecodable keys: assume every range overlaps
            return None

    @staticmethod
    def _overlap(a: tuple, b: tuple) -> bool:
        try:
            return not (a[1] < b[0] or b[1] < a[0])
        except TypeError:
            return True

    def sections(self, files: Sequence[DataFileMeta]) -> list[list[int]] | None:
        """:func:`~paimon_lab.mergetree.levels.key_sections` of ``files`` (this bucket's key types)."""
        return key_sections(files, self.layout.key_types)

    def ordered_by_position(self, files: Sequence[DataFileMeta]) -> bool:
        """True if concatenating ``files`` in this order puts every key's versions in merge order:
        any two files whose key ranges may overlap have ordered sequence-number ranges."""
        if self.layout.sequence_fields:
            return False
        if all(a.max_sequence_number < b.min_sequence_number for a, b in zip(files, files[1:])):
            return True
        ranges = self._key_ranges(files)
        if ranges is None:
            return False
        for i in range(len(files)):
            for j in range(i + 1, len(files)):
                if files[i].max_sequence_number >= files[j].min_sequence_number and \
                        self._overlap(ranges[i], ranges[j]):
                    return False
        return True

    # ------------------------------------------------------------------ reading
    def _key_mask(self, keys: pa.Table, key_pred: "Predicate") -> np.ndarray:
        """Rows of ``keys`` (holding the key columns) that ``key_pred`` selects."""

        named = pa.Table.from_arrays([keys.column(c) for c in self.key_columns], names=self.key_names)
        return match_mask(named, key_pred)

    def _value_read(self, needed: Sequence[str]) -> tuple[list[str], list[str]]:
        """(value columns to read, key columns standing in for the others) for the ``needed``
        table columns: a ``_KEY_<k>`` column holds the same values as the table column ``k``."""
        from_keys = [KEY_PREFIX + n for n in needed if n in self.key_names and n not in self.constants]
        return [n for n in needed if n not in self.key_names and n not in self.constants], from_keys

    def read_with_deletion_vectors(self, files: Sequence[DataFileMeta], dvs: dict | None,
                                   needed: Sequence[str], predicate: "Predicate | None") -> pa.Table:
        """Rows of ``files`` (above level 0, where every key lives once) minus the rows deleted in
        ``dvs`` and -U/-D rows; no merge. Pre-filtered by key statistics only."""
        needed = list(needed)
        key_pred = self.key_predicate(predicate)
        values, from_keys = self._value_read(needed)
        parts = []
        for f in files:
            r = KVFileReader(self.store, self.layout, self.path(f), f, self.use_threads)
            try:
                dv = dvs.get(f.file_name) if dvs else None
                if dv is not None and dv.is_empty():
                    dv = None
                if dv is None and not r.prune_row_groups(key_pred):
                    continue  # row positions only matter to a deletion vector
                rows = r.read(from_keys + [VALUE_KIND] + values, keep_dictionary=True)
            finally:
                r.close()
            keep = ~_retract_np(rows.column(VALUE_KIND).to_numpy())
            if dv is not None:
                keep &= dv.mask(rows.num_rows)
            if not keep.all():
                rows = rows.filter(pa.array(keep))
            parts.append(rows)
        return self._assemble(parts, needed)

    def read_deduplicated(self, files: Sequence[DataFileMeta], needed: Sequence[str],
                          predicate: "Predicate | None", ignore_delete: bool) -> pa.Table:
        """Merged rows (deduplicate engine: the last version of a key wins, a -U/-D winner means
        the key is gone) of ``files`` (oldest first), columns ``needed``, in key order. Rows are
        pre-filtered by the key part of ``predicate`` only: the caller applies ``predicate``."""
        needed = list(needed)
        key_pred = self.key_predicate(predicate)
        readers: list[KVFileReader] = []
        try:
            for f in files:
                r = KVFileReader(self.store, self.layout, self.path(f), f, self.use_threads)
                readers.append(r)
                if not r.prune_row_groups(key_pred):
                    readers.pop().close()
            if not ignore_delete and not self.layout.sequence_fields and len(readers) > 1:
                for i in sorted(shadowed_runs([r.meta for r in readers], lambda i: readers[i].key_chunks()),
                                reverse=True):
                    readers.pop(i).close()
                for i in sorted(covered_runs(readers, self.key_columns, self.layout.key_types), reverse=True):
                    readers.pop(i).close()
            if not readers:
                return self._empty(needed)
            groups = self.sections([r.meta for r in readers])
            if groups is None:
                return self._read_overlapping(readers, needed, key_pred, ignore_delete)
            # Java's IntervalPartition: runs of sections holding one file are read straight
            # through; only sections whose files overlap are merged.
            parts, plain = [], []
            for group in groups:
                if len(group) == 1:
                    plain.append(readers[group[0]])
                    continue
                if plain:
                    parts.append(self._read_disjoint(plain, needed, key_pred))
                    plain = []
                parts.append(self._read_overlapping([readers[i] for i in group], needed, key_pred, ignore_delete))
            if plain:
                parts.append(self._read_disjoint(plain, needed, key_pred))
            return pa.concat_tables(parts) if len(parts) > 1 else parts[0]
        finally:
            for r in readers:
                r.close()

    def _empty(self, needed: Sequence[str]) -> pa.Table:
        return self.store.schema.arrow_schema(needed).empty_table()

    def _assemble(self, parts: list[pa.Table], needed: Sequence[str]) -> pa.Table:
        """Concatenate parts (layout-typed columns) and name them as the table's columns; the
        partition columns are added here."""
        if not parts:
            return self._empty(needed)
        rows = _concat(parts)
        if not needed:
            return rows.select([])  # keeps the row count
        schema = self.store.schema.arrow_schema()
        columns = []
        for n in needed:
            if n in self.constants:
                t = schema.field(n).type
                value = self.constants[n]
                columns.append(pa.nulls(rows.num_rows, t) if value is None
                               else pa.repeat(pa.scalar(value, t), rows.num_rows))
            else:
                column = rows.column(KEY_PREFIX + n if n in self.key_names else n)
                if pa.types.is_dictionary(column.type):  # codes read by KVFileReader.read: strings only now
                    column = column.cast(column.type.value_type)
                columns.append(column)
        return pa.Table.from_arrays(columns, schema=self.store.schema.arrow_schema(needed))

    def _read_disjoint(self, readers: list[KVFileReader], needed: list[str],
                       key_pred: "Predicate | None") -> pa.Table:
        """No two files share a key: filter each file's rows, concatenate in key order."""
        values, from_keys = self._value_read(needed)
        cols = list(self.key_columns) if key_pred is not None else from_keys
        parts = []
        for r in readers:
            if r.num_rows == 0:
                continue
            rows = r.read(cols + [VALUE_KIND] + values, keep_dictionary=True)
            keep = None
            if key_pred is not None:
                keep = self._key_mask(rows, key_pred)
            kinds = rows.column(VALUE_KIND).to_numpy()
            retract = _retract_np(kinds)
            if retract.any():
                keep = ~retract if keep is None else keep & ~retract
            if keep is not None and not keep.all():
                rows = rows.filter(pa.array(keep))
            parts.append(rows)
        return self._assemble(parts, needed)

    def _read_overlapping(self, readers: list[KVFileReader], needed: list[str],
                          key_pred: "Predicate | None", ignore_delete: bool) -> pa.Table:
        layout = self.layout
        by_position = self.ordered_by_position([r.meta for r in readers])
        slim_cols = list(self.key_columns)
        if not by_position:
            slim_cols += [c for c in layout.sequence_fields if c not in slim_cols] + [SEQUENCE_NUMBER]
        # Kinds of losing rows do not matter, except that ignore-delete drops -U/-D rows before
        # the merge and 'row-kind-flag' sorts by them.
        need_kinds = ignore_delete or (layout.row_kind_flag and bool(layout.sequence_fields))
        if need_kinds:
            slim_cols.append(VALUE_KIND)

        # Phase 1: narrow columns of every file; rows that cannot win or match are dropped.
        slims: list[pa.Table] = []
        kept: list[np.ndarray | None] = []      # file rows behind each slim row (None: all, in order)
        for r in readers:
            slim = r.read(slim_cols)
            keep = None
            if key_pred is not None:
                keep = self._key_mask(slim, key_pred)
            if ignore_delete:
                not_retract = ~_retract_np(slim.column(VALUE_KIND).to_numpy())
                keep = not_retract if keep is None else keep & not_retract
            if keep is not None and not keep.all():
                slim = slim.filter(pa.array(keep))
                kept.append(np.flatnonzero(keep))
            else:
                kept.append(None)
            slims.append(slim)
        sizes = np.array([s.num_rows for s in slims], dtype=np.int64)
        if not sizes.sum():
            return self._empty(needed)
        offsets = np.zeros(len(slims) + 1, dtype=np.int64)
        np.cumsum(sizes, out=offsets[1:])
        winners = self._winners(slims, by_position)   # positions in the concatenation, in key order
        values, from_keys = self._value_read(needed)
        cols = [VALUE_KIND] + values
        first = int(np.searchsorted(offsets, winners[0], side="right")) - 1
        start, stop = int(winners[0] - offsets[first]), int(winners[-1] - offsets[first]) + 1
        if winners[-1] < offsets[first + 1] and len(winners) == stop - start and \
                bool(np.all(winners[1:] > winners[:-1])):
            # The winners are consecutive rows of one file (typically the newest run holding
            # every key): a slice, no gather.
            merged = readers[first].read(cols, keep_dictionary=True)
            rows = kept[first]
            if rows is not None:
                merged = merged.take(pa.array(rows[start:stop]))
            elif stop - start < merged.num_rows:
                merged = merged.slice(start, stop - start)
            for c in from_keys:
                merged = merged.append_column(layout.arrow_schema.field(c), slims[first].column(c).slice(start, stop - start))
            return self._finish_overlapping(merged, needed)

        # Phase 2: kinds and values of the files holding winners, read whole (decoding is per
        # page anyway), and one gather of the winners from their concatenation, in key order.
        w_file = np.searchsorted(offsets, winners, side="right") - 1
        holders = np.flatnonzero(np.bincount(w_file, minlength=len(readers)))
        parts = [readers[i].read(cols, keep_dictionary=True) for i in holders]
        rows_at = np.zeros(len(readers) + 1, dtype=np.int64)   # where each file's rows start in parts
        rows_at[holders + 1] = [p.num_rows for p in parts]
        np.cumsum(rows_at, out=rows_at)
        local = winners - offsets[w_file]
        for i in holders:
            if kept[i] is not None:                            # slim rows -> file rows
                in_file = w_file == i
                local[in_file] = kept[i][local[in_file]]
        at = rows_at[w_file] + local
        merged = _concat(parts)
        if not _identity(at, merged.num_rows):
            merged = merged.take(pa.array(at))
        if from_keys:
            keys = (pa.concat_tables(slims) if len(slims) > 1 else slims[0]).select(from_keys)
            keys = keys if _identity(winners, keys.num_rows) else keys.take(pa.array(winners))
            for c in from_keys:
                merged = merged.append_column(keys.schema.field(c), keys.column(c))
        return self._finish_overlapping(merged, needed)

    def _finish_overlapping(self, merged: pa.Table, needed: list[str]) -> pa.Table:
        """Winning rows minus -U/-D winners (the key is gone), as the table's columns."""
        retract = _retract_np(merged.column(VALUE_KIND).to_numpy())
        if retract.any():
            merged = merged.filter(pa.array(~retract))
        return self._assemble([merged], needed)

    def _winners(self, slims: list[pa.Table], by_position: bool) -> np.ndarray:
        """Position (in the concatenation of ``slims``) of each key's winning row, in key order."""
        layout = self.layout
        if by_position and len(self.key_columns) == 1:
            t = self.layout.arrow_schema.field(self.key_columns[0]).type
            cols = [s.column(0) for s in slims]
            if _numpy_key(t) and all(c.null_count == 0 for c in cols):
                return _last_positions([c.to_numpy() for c in cols])
        slim = pa.concat_tables(slims) if len(slims) > 1 else slims[0]
        sort_keys = list(self.key_columns)
        keyed = slim
        if not by_position:
            sort_keys += list(layout.sequence_fields)
            if layout.row_kind_flag and layout.sequence_fields:
                keyed = slim.append_column("__add_flag", pc.invert(is_retract(slim.column(VALUE_KIND))))
                sort_keys.append("__add_flag")
            sort_keys.append(SEQUENCE_NUMBER)
        idx = sort_indices_nulls_first(keyed, sort_keys).to_numpy().astype(np.int64, copy=False)
        ordered = slim.select(self.key_columns).take(pa.array(idx))
        starts = group_starts(ordered, self.key_columns)
        last = np.ones(len(idx), dtype=bool)
        last[:-1] = starts[1:]
        return np.compress(last, idx)


__all__ = ["KVFileReader", "MergeReader", "supports_fast_merge"]
