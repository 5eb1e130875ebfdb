"""Data-file indexes: Paimon's bloom-filter, bitmap and bit-sliced (bsi) file indexes.

Writing: :func:`build_file_index` turns one data file's rows into the bytes of its index
container (Java ``DataFileIndexWriter`` + ``FileIndexFormat``), for the columns named by
``file-index.<type>.columns``. Java embeds the container in the manifest
(``_EMBEDDED_FILE_INDEX``) when its size is ``<=`` :func:`index_in_manifest_threshold`, and
otherwise writes it next to the data file as :func:`index_file_name` (``<data file>.index``),
listing that name in the file's ``_EXTRA_FILES``.

Reading: :class:`FileIndexReader` answers :meth:`~FileIndexReader.may_match` for a
:class:`~paimon_lab.core.predicate.Predicate` (False only when the index proves no row matches) and,
for bitmap and bsi indexes, :meth:`~FileIndexReader.rows_matching` gives row selections.

    data = build_file_index(table, {"file-index.bloom-filter.columns": "id"}, schema.fields)
    FileIndexReader(data, schema.fields).may_match(col("id") == 42)
"""

from __future__ import annotations

import struct
import warnings
from typing import Any, Mapping

import numpy as np
import pyarrow as pa

from paimon_lab.errors import OptionError, UnsupportedTypeError
from paimon_lab.core.options import parse_memory
from paimon_lab.core.predicate import And, Leaf, Not, Or, Predicate
from paimon_lab.fileindex import bitmap as _bitmap
from paimon_lab.fileindex import bloom as _bloom
from paimon_lab.fileindex import bsi as _bsi
from paimon_lab.fileindex.index_file import (BITMAP, BLOOM_FILTER, BSI, EMPTY_INDEX_FLAG,
                                         FileIndexFormatError, Unknown, ceil_int, column_keys,
                                         floor_int, java_hashmap_order_strings, key_kind, literal_key,
                                         normalize_fields, read_file_index, read_file_index_head,
                                         write_file_index)

__all__ = [
    "build_file_index", "FileIndexReader", "rows_matching", "index_in_manifest_threshold",
    "index_file_name", "embed_in_manifest", "file_index_columns", "validate_file_index",
    "read_file_index", "read_file_index_head", "write_file_index", "FileIndexFormatError",
    "BLOOM_FILTER", "BITMAP", "BSI", "INDEX_FILE_SUFFIX",
]

FILE_INDEX_PREFIX = "file-index."
COLUMNS_SUFFIX = ".columns"
IN_MANIFEST_THRESHOLD = "file-index.in-manifest-threshold"
DEFAULT_IN_MANIFEST_THRESHOLD = 500
INDEX_FILE_SUFFIX = ".index"  # DataFilePathFactory.INDEX_PATH_SUFFIX

_SUPPORTS = {BLOOM_FILTER: _bloom.supports, BITMAP: _bitmap.supports, BSI: _bsi.supports}


# --------------------------------------------------------------------------- options

def index_in_manifest_threshold(options: Mapping[str, str]) -> int:
    """``file-index.in-manifest-threshold`` in bytes (default 500 B). Java writes a separate
    index file only when the container is *larger* than this; otherwise it is embedded."""
    raw = options.get(IN_MANIFEST_THRESHOLD)
    return DEFAULT_IN_MANIFEST_THRESHOLD if raw is None else parse_memory(raw)


def embed_in_manifest(index_bytes: bytes, options: Mapping[str, str]) -> bool:
    """True if Java would put these bytes in ``_EMBEDDED_FILE_INDEX`` (size <= threshold)."""
    return len(index_bytes) <= index_in_manifest_threshold(options)


def index_file_name(data_file_name: str) -> str:
    """Name of a data file's separate index file (``DataFilePathFactory.dataFileToFileIndexPath``:
    same directory, data file name + ``.index``); this bare name goes in ``_EXTRA_FILES``."""
    return data_file_name + INDEX_FILE_SUFFIX


def file_index_columns(options: Mapping[str, str]) -> dict[str, dict[str, dict[str, str]]]:
    """``{index type: {column: {option: value}}}`` as Java's ``FileIndexOptions`` reads them:
    ``file-index.<type>.columns`` (comma list) declares columns, ``file-index.<type>.<column>.
    <option>`` sets a per-column option (keys that do not split into exactly three parts after
    ``file-index.`` are ignored; an option for an undeclared column is an error)."""
    out: dict[str, dict[str, dict[str, str]]] = {}
    others: list[tuple[str, str]] = []
    for key, value in options.items():
        if not key.startswith(FILE_INDEX_PREFIX):
            continue
        if key.endswith(COLUMNS_SUFFIX):
            index_type = key[len(FILE_INDEX_PREFIX): -len(COLUMNS_SUFFIX)]
            for name in str(value).split(","):
                if not name.strip():
                    raise OptionError(f"Wrong option in {key}, should not have empty column")
                out.setdefault(index_type, {}).setdefault(name.strip(), {})
        else:
            others.append((key, value))
    for key, value in others:
        parts = key[len(FILE_INDEX_PREFIX):].split(".")
        if len(parts) != 3:
            continue
        index_type, column, opt = parts
        declared = out.get(index_type, {})
        if column in declared:
            declared[column][opt] = value
        elif any(c.startswith(column + "[") for c in declared):
            continue  # map top-level options; nested map indexes are not built here
        else:
            raise OptionError(
                f"Wrong file index option '{key}': column '{column}' is not declared in "
                f"'file-index.{index_type}.columns'")
    return out


def validate_file_index(options: Mapping[str, str], fields: Any) -> None:
    """Raise like Java's SchemaValidation for missing columns or unsupported types."""
    types = normalize_fields(fields)
    for index_type, columns in file_index_columns(options).items():
        for column in columns:
            base = column.split("[", 1)[0] if column.endswith("]") and "[" in column else column
            if base not in types:
                raise OptionError(
                    f"Column '{base}' specified in 'file-index.{index_type}.columns' does not "
                    f"exist in table schema. Existing columns: {list(types)}.")
            supports = _SUPPORTS.get(index_type)
            if supports is not None and base == column and not supports(types[column]):
                raise UnsupportedTypeError(
                    f"Column '{column}' with type '{types[column]}' is not supported by "
                    f"'{index_type}' index.")


# --------------------------------------------------------------------------- writing

def build_file_index(rows: pa.Table | pa.RecordBatch, options: Mapping[str, str],
                     fields: Any) -> bytes | None:
    """The file-index container for one data file's ``rows`` (row ``i`` of ``rows`` is row
    ``i`` of the data file), or None when no index is configured. Columns are laid out in the
    order Java's HashMaps give; index types Java has but we do not build (``range-bitmap``)
    and nested map-key columns (``m[key]``) are skipped with a warning."""
    config = file_index_columns(options)
    if not config:
        return None
    validate_file_index(options, fields)
    types = normalize_fields(fields)
    keys_cache: dict[str, Any] = {}
    built: dict[str, dict[str, bytes]] = {}
    for index_type in java_hashmap_order_strings(list(config)):
        if index_type not in _SUPPORTS:
            warnings.warn(f"file index type '{index_type}' is not supported by paimon-lab; "
                          f"it is not written", stacklevel=2)
            continue
        columns = config[index_type]
        for column in java_hashmap_order_strings(list(columns)):
            if column not in types:
                warnings.warn(f"nested file index column '{column}' is not supported; "
                              f"it is not written", stacklevel=2)
                continue
            dtype = types[column]
            keys = keys_cache.get(column)
            if keys is None:
                keys = keys_cache[column] = column_keys(rows.column(column), dtype)
            opts = columns[column]
            if index_type == BLOOM_FILTER:
                payload = _bloom.build(keys, opts)
            elif index_type == BITMAP:
                payload = _bitmap.build(keys, dtype, opts)
            else:
                payload = _bsi.build(keys)
            built.setdefault(column, {})[index_type] = payload
    if not built:
        return None
    ordered = {}
    for column in java_hashmap_order_strings(list(built)):
        by_type = built[column]
        ordered[column] = {t: by_type[t] for t in java_hashmap_order_strings(list(by_type))}
    return write_file_index(ordered)


# --------------------------------------------------------------------------- reading

class _Res:
    """Candidate rows: ``mask`` None means "no information" (every row may match); ``exact``
    says the mask is exactly the matching rows (otherwise a superset)."""

    __slots__ = ("mask", "exact")

    def __init__(self, mask: np.ndarray | None, exact: bool):
        self.mask = mask
        self.exact = exact and mask is not None


_ALL = _Res(None, False)
_NEGATE = {"=": "!=", "!=": "=", "<": ">=", "<=": ">", ">": "<=", ">=": "<",
           "is_null": "is_not_null", "is_not_null": "is_null"}


class FileIndexReader:
    """Evaluates predicates against one data file's index container.

    ``fields`` are the fields of the schema the data file was written with (index entries are
    keyed by column name and read according to the column's type)."""

    def __init__(self, data: bytes, fields: Any):
        self.data = bytes(data)
        self.head = read_file_index_head(self.data)
        self.types = normalize_fields(fields)
        self._readers: dict[tuple[str, str], Any] = {}
        self.row_count = self._find_row_count()

    def _find_row_count(self) -> int | None:
        for by_type in self.head.values():
            for index_type, (start, length) in by_type.items():
                if index_type in (BITMAP, BSI) and start != EMPTY_INDEX_FLAG and length >= 5:
                    return int.from_bytes(self.data[start + 1: start + 5], "big", signed=True)
        return None

    def indexes(self) -> dict[str, list[str]]:
        """``{column: [index types]}`` present in the container."""
        return {c: list(t) for c, t in self.head.items()}

    def _reader(self, column: str, index_type: str) -> Any:
        key = (column, index_type)
        if key not in self._readers:
            reader = None
            start, length = self.head[column][index_type]
            dtype = self.types.get(column)
            if start != EMPTY_INDEX_FLAG and dtype is not None:
                payload = self.data[start: start + length]
                try:
                    if index_type == BLOOM_FILTER and _bloom.supports(dtype):
                        reader = _bloom.BloomReader(payload, dtype)
                    elif index_type == BITMAP and _bitmap.supports(dtype):
                        reader = _bitmap.BitmapReader(payload, dtype)
                    elif index_type == BSI and _bsi.supports(dtype):
                        reader = _bsi.BsiReader(payload, dtype)
                except (ValueError, IndexError, KeyError, OSError, struct.error) as e:
                    warnings.warn(f"ignoring unreadable {index_type} index of '{column}': {e}",
                                  stacklevel=3)
                    reader = None
            self._readers[key] = reader
        return self._readers[key]

    # ----------------------------------------------------------------- public

    def may_match(self, predicate: Predicate | None) -> bool:
        """False only if the index proves that no row of the file satisfies ``predicate``."""
        if predicate is None:
            return True
        res = self._eval(predicate, self.row_count)
        return res.mask is None or bool(res.mask.any())

    def select(self, predicate: Predicate, num_rows: int | None = None) -> tuple[np.ndarray | None, bool]:
        """(mask over the file's rows, exact). The mask is a superset of the matching rows
        (exactly them if ``exact``); None when the index says nothing."""
        n = self.row_count if num_rows is None else num_rows
        res = self._eval(predicate, n)
        return res.mask, res.exact

    def rows_matching(self, predicate: Predicate, num_rows: int | None = None,
                      exact: bool = True) -> np.ndarray | None:
        """Boolean mask of the rows satisfying ``predicate``, or None. With ``exact=True`` only
        a mask that is exactly the matching rows is returned; with ``exact=False`` any
        superset the indexes give (rows outside it certainly do not match)."""
        mask, is_exact = self.select(predicate, num_rows)
        if mask is None or (exact and not is_exact):
            return None
        return mask

    # ----------------------------------------------------------------- evaluation

    def _eval(self, pred: Predicate | None, n: int | None) -> _Res:
        if pred is None:
            return _ALL
        if isinstance(pred, Leaf):
            return self._leaf(pred, n)
        if isinstance(pred, And):
            masks, exact = [], True
            for child in pred.children:
                r = self._eval(child, n)
                if r.mask is None:
                    exact = False
                    continue
                if r.exact and not r.mask.any():
                    return r
                masks.append(r.mask)
                exact = exact and r.exact
            if not masks:
                return _ALL
            out = masks[0].copy()
            for m in masks[1:]:
                out &= m
            return _Res(out, exact)
        if isinstance(pred, Or):
            out, exact = None, True
            for child in pred.children:
                r = self._eval(child, n)
                if r.mask is None:
                    return _ALL
                out = r.mask.copy() if out is None else (out | r.mask)
                exact = exact and r.exact
            return _ALL if out is None else _Res(out, exact)
        if isinstance(pred, Not):
            return self._eval(self._negate(pred.child), n)
        return _ALL

    def _negate(self, pred: Predicate) -> Predicate | None:
        """A predicate true exactly where NOT ``pred`` is true (under the Arrow expressions
        :mod:`paimon_lab.core.predicate` evaluates), or None if there is none we can use."""
        if isinstance(pred, Not):
            return pred.child
        if isinstance(pred, And):
            parts = [self._negate(c) for c in pred.children]
            return None if any(p is None for p in parts) else Or(tuple(parts))
        if isinstance(pred, Or):
            parts = [p for p in (self._negate(c) for c in pred.children) if p is not None]
            if not parts:
                return None
            return parts[0] if len(parts) == 1 else And(tuple(parts))
        if isinstance(pred, Leaf):
            op = pred.op
            dtype = self.types.get(pred.column)
            if op in ("<", "<=", ">", ">=") and (dtype is None or key_kind(dtype) in ("float", "double")):
                return None  # NaN fails both x < v and x >= v
            if op in _NEGATE:
                return Leaf(_NEGATE[op], pred.column, pred.literals)
            # SQL: NOT (x IN (...)) is NULL, not true, for a null x and (list with a NULL) for a miss
            values = tuple(v for v in pred.literals if v is not None)
            if op == "in":
                return Leaf("in", pred.column, ()) if len(values) < len(pred.literals) \
                    else Leaf("not_in", pred.column, values)
            if op == "not_in":
                return Leaf("in", pred.column, values)
        return None

    def _leaf(self, leaf: Leaf, n: int | None) -> _Res:
        column = leaf.column
        if column not in self.head or column not in self.types:
            return _ALL
        results = []
        for index_type in self.head[column]:
            reader = self._reader(column, index_type)
            if reader is None:
                continue
            try:
                if index_type == BLOOM_FILTER:
                    r = _bloom_leaf(reader, leaf, n)
                elif index_type == BITMAP:
                    r = _bitmap_leaf(reader, leaf, n) if reader.row_count == n else _ALL
                else:
                    r = _bsi_leaf(reader, leaf, n) if reader.row_count == n else _ALL
            except Unknown:
                r = _ALL
            if r.exact:
                return r
            if r.mask is not None:
                results.append(r.mask)
        if not results:
            return _ALL
        out = results[0].copy()
        for m in results[1:]:
            out &= m
        return _Res(out, False)


def _none(n: int | None) -> _Res:
    if n is None:
        # no row count known (a container holding only bloom filters): "no rows" still prunes
        return _Res(np.zeros(0, dtype=bool), True)
    return _Res(np.zeros(n, dtype=bool), True)


def _literals(leaf: Leaf) -> tuple:
    if not leaf.literals or any(v is None for v in leaf.literals):
        raise Unknown
    return leaf.literals


def _bloom_leaf(reader: _bloom.BloomReader, leaf: Leaf, n: int | None) -> _Res:
    if leaf.op not in ("=", "in"):
        return _ALL
    lits = _literals(leaf)
    if leaf.op == "=":
        lits = lits[:1]
    for lit in lits:
        if reader.may_contain(lit):
            return _ALL
    return _none(n)


def _mask(n: int, rows: np.ndarray) -> np.ndarray:
    m = np.zeros(n, dtype=bool)
    if len(rows):
        rows = rows[rows < n]
        m[rows] = True
    return m


def _bitmap_leaf(reader: _bitmap.BitmapReader, leaf: Leaf, n: int) -> _Res:
    op = leaf.op
    kind = reader.kind
    if op == "is_null":
        return _Res(_mask(n, reader.null_rows()), True)
    nonnull = ~_mask(n, reader.null_rows())
    if op == "is_not_null":
        return _Res(nonnull, True)
    if op in ("=", "!=", "in", "not_in"):
        lits = _literals(leaf)
        if op in ("=", "!="):
            lits = lits[:1]
        exact = True
        eq = np.zeros(n, dtype=bool)
        for lit in lits:
            keys = reader.keys_for_literal(lit)
            if kind in ("float", "double") and op in ("in", "not_in") and len(keys) > 1:
                # Arrow's is_in tells 0.0 and -0.0 apart; our key set covers both
                if op == "not_in":
                    raise Unknown
                exact = False
            for key in keys:
                rows = reader.rows_equal_key(key)
                if len(rows):
                    eq[rows[rows < n]] = True
        if op in ("=", "in"):
            return _Res(eq, exact)
        return _Res(nonnull & ~eq, exact)
    if op in ("<", "<=", ">", ">="):
        if kind == "bool":
            raise Unknown
        lit = literal_key(_literals(leaf)[0], reader.dtype)
        test = _compare(op, lit)
        return _Res(_mask(n, reader.rows_where(test)), True)
    if op == "starts_with" and kind == "string":
        lit = _literals(leaf)[0]
        if not isinstance(lit, str):
            raise Unknown
        prefix = lit.encode("utf-8")
        return _Res(_mask(n, reader.rows_where(lambda v: v.startswith(prefix))), True)
    return _ALL


def _compare(op: str, lit: Any):
    if op == "<":
        return lambda v: v < lit
    if op == "<=":
        return lambda v: v <= lit
    if op == ">":
        return lambda v: v > lit
    return lambda v: v >= lit


_I64_MIN, _I64_MAX = -(1 << 63), (1 << 63) - 1


def _bsi_leaf(reader: _bsi.BsiReader, leaf: Leaf, n: int) -> _Res:
    op = leaf.op
    if op == "is_null":
        return _Res(~reader.valid, True)
    if op == "is_not_null":
        return _Res(reader.valid.copy(), True)
    if op in ("=", "!=", "in", "not_in"):
        lits = _literals(leaf)
        if op in ("=", "!="):
            lits = lits[:1]
        eq = np.zeros(n, dtype=bool)
        for lit in lits:
            q = literal_key(lit, reader.dtype)
            if q.denominator == 1 and _I64_MIN <= q.numerator <= _I64_MAX:
                eq |= reader.select("=", q.numerator)
        if op in ("=", "in"):
            return _Res(eq, True)
        return _Res(reader.valid & ~eq, True)
    if op in ("<", "<=", ">", ">="):
        q = literal_key(_literals(leaf)[0], reader.dtype)
        # integer bound k with the same meaning: v < q <=> v < ceil(q), v <= q <=> v <= floor(q)
        k = ceil_int(q) if op in ("<", ">=") else floor_int(q)
        if k > _I64_MAX:
            return _Res(reader.valid.copy() if op in ("<", "<=") else np.zeros(n, dtype=bool), True)
        if k < _I64_MIN:
            return _Res(reader.valid.copy() if op in (">", ">=") else np.zeros(n, dtype=bool), True)
        return _Res(reader.select(op, k), True)
    return _ALL


def rows_matching(data: bytes | FileIndexReader, predicate: Predicate, num_rows: int,
                  fields: Any = None, exact: bool = True) -> np.ndarray | None:
    """Boolean mask (length ``num_rows``) of the rows of a data file satisfying ``predicate``
    according to its bitmap/bsi indexes, or None when they cannot tell (see
    :meth:`FileIndexReader.rows_matching`). ``data`` is the container bytes (then ``fields``
    is required) or a :class:`FileIndexReader`."""
    reader = data if isinstance(data, FileIndexReader) else None
    if reader is None:
        if fields is None:
            raise ValueError("rows_matching needs the data file's fields to read index bytes")
        reader = FileIndexReader(data, fields)
    return reader.rows_matching(predicate, num_rows, exact=exact)
