"""The file-index container (Java ``org.apache.paimon.fileindex.FileIndexFormat``) and the
helpers every index type shares: Java's modified UTF-8, Java ``HashMap`` iteration order (so our
bytes come out in the order Java writes them), and the conversion of Arrow columns and predicate
literals to the values Java indexes (``int`` days for DATE, epoch millis or micros for
TIMESTAMP, unscaled longs for DECIMAL, raw float bits for FLOAT/DOUBLE, UTF-8 bytes for strings).

Container layout (all integers big-endian)::

    magic          8 bytes long  1493475289347502
    version        4 bytes int   1
    head length    4 bytes int   length of everything up to the body, counted from the magic
    column number  4 bytes int
    per column:    column name (Java writeUTF: 2-byte length + modified UTF-8)
                   index number (4 bytes int)
                   per index: index type name (writeUTF), start (4 bytes int, absolute offset
                              from the start of the container, or -1 for an empty index),
                              length (4 bytes int)
    redundant length 4 bytes int = 0  (no redundant bytes follow)
    body           the index payloads, in head order
"""

from __future__ import annotations

import datetime as _dt
import decimal as _decimal
import math
import struct
from fractions import Fraction
from typing import Any, Mapping, Sequence

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from paimon_lab.core import types as T

MAGIC = 1493475289347502
VERSION_1 = 1
EMPTY_INDEX_FLAG = -1

BLOOM_FILTER = "bloom-filter"
BITMAP = "bitmap"
BSI = "bsi"
RANGE_BITMAP = "range-bitmap"


class FileIndexFormatError(ValueError):
    """Bytes that are not a (supported) Paimon file index."""


# --------------------------------------------------------------------------- modified UTF-8

def java_utf(text: str) -> bytes:
    """``DataOutput.writeUTF``: 2-byte big-endian length, then modified UTF-8 (NUL as C0 80,
    characters outside the BMP as two 3-byte surrogates)."""
    out = bytearray()
    for unit in _utf16_units(text):
        if 0x0001 <= unit <= 0x007F:
            out.append(unit)
        elif unit <= 0x07FF:  # includes NUL
            out += bytes((0xC0 | (unit >> 6), 0x80 | (unit & 0x3F)))
        else:
            out += bytes((0xE0 | (unit >> 12), 0x80 | ((unit >> 6) & 0x3F), 0x80 | (unit & 0x3F)))
    if len(out) > 0xFFFF:
        raise ValueError(f"encoded string too long: {len(out)} bytes")
    return struct.pack(">H", len(out)) + bytes(out)


def read_java_utf(buf: bytes, pos: int) -> tuple[str, int]:
    """Inverse of :func:`java_utf`; returns the string and the position after it."""
    (n,) = struct.unpack_from(">H", buf, pos)
    raw = buf[pos + 2: pos + 2 + n]
    if len(raw) != n:
        raise FileIndexFormatError("truncated modified UTF-8 string")
    units: list[int] = []
    i = 0
    while i < n:
        b = raw[i]
        if b < 0x80:
            units.append(b)
            i += 1
        elif b >> 5 == 0b110:
            units.append(((b & 0x1F) << 6) | (raw[i + 1] & 0x3F))
            i += 2
        elif b >> 4 == 0b1110:
            units.append(((b & 0x0F) << 12) | ((raw[i + 1] & 0x3F) << 6) | (raw[i + 2] & 0x3F))
            i += 3
        else:
            raise FileIndexFormatError("malformed modified UTF-8")
    text = struct.pack(f"<{len(units)}H", *units).decode("utf-16-le", errors="surrogatepass")
    return text, pos + 2 + n


def _utf16_units(text: str) -> list[int]:
    data = text.encode("utf-16-le", errors="surrogatepass")
    return list(struct.unpack(f"<{len(data) // 2}H", data))


# --------------------------------------------------------------------------- Java hashing

def java_string_hash(text: str) -> int:
    """``String.hashCode`` (signed 32-bit)."""
    h = 0
    for unit in _utf16_units(text):
        h = (31 * h + unit) & 0xFFFFFFFF
    return h - (1 << 32) if h >= 1 << 31 else h


def java_hashmap_order(hashes: Sequence[int] | np.ndarray, head_insert: bool = False) -> np.ndarray:
    """Iteration order of a ``java.util.HashMap`` (default capacity and load factor) into which
    keys with these ``hashCode()`` values were put in this order, as indices into ``hashes``.
    ``head_insert``: the keys went in through ``computeIfAbsent``, which puts a new key at the
    head of its bin (``put`` appends it), so keys sharing a bin come out newest first.

    Exact for untreeified bins (fewer than 9 keys per bucket, which is every ordinary case);
    Java switches a bin holding 9+ keys at capacity >= 64 to a tree whose iteration order
    differs, which only changes the order of entries, never what a reader finds.
    """
    h = np.asarray(hashes, dtype=np.int64).astype(np.uint32)
    n = len(h)
    if n == 0:
        return np.zeros(0, dtype=np.int64)
    spread = h ^ (h >> np.uint32(16))
    cap = 16
    while n > cap * 3 // 4:
        cap *= 2
    while cap < 64:  # a bin reaching 9 keys resizes instead of treeifying below capacity 64
        counts = np.bincount((spread & np.uint32(cap - 1)).astype(np.int64), minlength=cap)
        if counts.max() < 9:
            break
        cap *= 2
    bucket = (spread & np.uint32(cap - 1)).astype(np.int64)
    return np.lexsort((-np.arange(n) if head_insert else np.arange(n), bucket))


def java_hashmap_order_strings(keys: Sequence[str]) -> list[str]:
    order = java_hashmap_order([java_string_hash(k) for k in keys])
    return [keys[i] for i in order]


# --------------------------------------------------------------------------- container

def write_file_index(indexes: Mapping[str, Mapping[str, bytes | None]]) -> bytes:
    """Serialize ``{column: {index type: payload}}`` in the mapping's iteration order, exactly
    as ``FileIndexFormat.Writer.writeColumnIndexes`` does; a ``None`` payload is an empty index
    (start -1, length 0)."""
    names = bytearray()
    n_items = 0
    for column, by_type in indexes.items():
        names += java_utf(column)
        for index_type in by_type:
            names += java_utf(index_type)
            n_items += 1
    head_length = 8 + 4 + 4 + 4 + n_items * 8 + len(indexes) * 4 + 4 + len(names)

    head = bytearray(struct.pack(">qii", MAGIC, VERSION_1, head_length))
    head += struct.pack(">i", len(indexes))
    body = bytearray()
    for column, by_type in indexes.items():
        head += java_utf(column)
        head += struct.pack(">i", len(by_type))
        for index_type, payload in by_type.items():
            head += java_utf(index_type)
            if payload is None:
                head += struct.pack(">ii", EMPTY_INDEX_FLAG, 0)
            else:
                head += struct.pack(">ii", head_length + len(body), len(payload))
                body += payload
    head += struct.pack(">i", 0)  # redundant length
    assert len(head) == head_length
    return bytes(head + body)


def read_file_index_head(data: bytes) -> dict[str, dict[str, tuple[int, int]]]:
    """``{column: {index type: (start, length)}}`` from a container's head (start is absolute,
    -1 for an empty index), in head order."""
    if len(data) < 16:
        raise FileIndexFormatError("too short to be a file index")
    magic, version, head_length = struct.unpack_from(">qii", data, 0)
    if magic != MAGIC:
        raise FileIndexFormatError("This file is not file index file.")
    if version != VERSION_1:
        raise FileIndexFormatError(f"Unsupported file index version {version}")
    pos = 16
    (n_columns,) = struct.unpack_from(">i", data, pos)
    pos += 4
    out: dict[str, dict[str, tuple[int, int]]] = {}
    for _ in range(n_columns):
        column, pos = read_java_utf(data, pos)
        (n_indexes,) = struct.unpack_from(">i", data, pos)
        pos += 4
        entry = out.setdefault(column, {})
        for _ in range(n_indexes):
            index_type, pos = read_java_utf(data, pos)
            start, length = struct.unpack_from(">ii", data, pos)
            pos += 8
            entry[index_type] = (start, length)
    if pos > head_length:
        raise FileIndexFormatError("file index head overruns its declared length")
    return out


def read_file_index(data: bytes) -> dict[str, dict[str, bytes | None]]:
    """Every payload of a container, ``None`` for empty indexes."""
    out: dict[str, dict[str, bytes | None]] = {}
    for column, by_type in read_file_index_head(data).items():
        for index_type, (start, length) in by_type.items():
            out.setdefault(column, {})[index_type] = (
                None if start == EMPTY_INDEX_FLAG else bytes(data[start: start + length]))
    return out


# --------------------------------------------------------------------------- types and keys

INT_ROOTS = {"TINYINT", "SMALLINT", "INT", "BIGINT"}
STRING_ROOTS = {"CHAR", "VARCHAR"}
BINARY_ROOTS = {"BINARY", "VARBINARY"}
TIMESTAMP_ROOTS = {"TIMESTAMP", "TIMESTAMP_LTZ"}


def normalize_fields(fields: Any) -> dict[str, T.DataType]:
    """Accept a sequence of :class:`DataField`, a RowType / TableSchema (``.fields``), or a
    mapping of name -> DataType (or -> DataField)."""
    if fields is None:
        return {}
    if hasattr(fields, "fields") and not isinstance(fields, Mapping):
        fields = fields.fields
    if isinstance(fields, Mapping):
        return {name: (f.type if isinstance(f, T.DataField) else f) for name, f in fields.items()}
    return {f.name: f.type for f in fields}


def key_kind(dtype: T.DataType) -> str:
    """How Java represents a value of this type inside the indexes: 'int' (a Java integral value:
    TINYINT..BIGINT, DATE days, TIME millis, TIMESTAMP millis (precision <= 3) or micros),
    'float'/'double' (IEEE value, keyed by its canonical bits), 'bool', 'string', 'binary',
    'decimal' (unscaled long) or 'unsupported'."""
    root = dtype.root
    if root in INT_ROOTS or root in ("DATE", "TIME") or root in TIMESTAMP_ROOTS:
        return "int"
    if root == "FLOAT":
        return "float"
    if root == "DOUBLE":
        return "double"
    if root == "BOOLEAN":
        return "bool"
    if root in STRING_ROOTS:
        return "string"
    if root in BINARY_ROOTS:
        return "binary"
    if root == "DECIMAL":
        return "decimal"
    return "unsupported"


def int_width(dtype: T.DataType) -> int:
    """Bytes of Java's integral representation of an 'int'-kind type."""
    root = dtype.root
    if root == "TINYINT":
        return 1
    if root == "SMALLINT":
        return 2
    if root in ("INT", "DATE", "TIME"):
        return 4
    return 8


def timestamp_key_unit(dtype: T.DataType) -> str:
    """Java indexes TIMESTAMP(p <= 3) by epoch millis, higher precisions by epoch micros."""
    return "ms" if (dtype.precision if dtype.precision is not None else 6) <= 3 else "us"


_UNIT_PER_SECOND = {"s": 1, "ms": 1000, "us": 1_000_000, "ns": 1_000_000_000}


class ColumnKeys:
    """One column's values as Java indexes them. ``valid`` marks non-null rows. ``ints`` holds
    integral keys (int kinds, decimals as unscaled longs, booleans as 0/1, floats/doubles as
    canonical IEEE bits) as int64 with 0 at null rows; ``floats`` holds float/double values;
    ``array`` holds string/binary values as an Arrow (large) binary array."""

    __slots__ = ("kind", "valid", "ints", "floats", "array", "n")

    def __init__(self, kind: str, valid: np.ndarray, ints=None, floats=None, array=None):
        self.kind = kind
        self.valid = valid
        self.ints = ints
        self.floats = floats
        self.array = array
        self.n = len(valid)


def _flatten(col: Any) -> pa.Array:
    if isinstance(col, pa.ChunkedArray):
        col = col.combine_chunks() if col.num_chunks != 1 else col.chunk(0)
    if pa.types.is_dictionary(col.type):
        col = col.dictionary_decode()
    return col


def _int64_values(arr: pa.Array) -> np.ndarray:
    arr = pc.fill_null(arr, 0) if arr.null_count else arr
    return np.asarray(arr.to_numpy(zero_copy_only=False), dtype=np.int64)


def column_keys(col: Any, dtype: T.DataType) -> ColumnKeys:
    """Convert an Arrow column to the keys Java indexes for ``dtype``."""
    arr = _flatten(col)
    n = len(arr)
    valid = (np.ones(n, dtype=bool) if arr.null_count == 0
             else np.asarray(arr.is_valid().to_numpy(zero_copy_only=False), dtype=bool))
    kind = key_kind(dtype)
    root = dtype.root
    if kind == "int":
        if root in TIMESTAMP_ROOTS:
            at = arr.type
            if not pa.types.is_timestamp(at):
                arr = arr.cast(pa.timestamp("us"))
                at = arr.type
            raw = _int64_values(arr.cast(pa.int64()))
            src = _UNIT_PER_SECOND[at.unit]
            dst = _UNIT_PER_SECOND[timestamp_key_unit(dtype)]
            ints = raw * (dst // src) if dst >= src else np.floor_divide(raw, src // dst)
        elif root == "DATE":
            if not pa.types.is_date32(arr.type):
                arr = arr.cast(pa.date32())
            ints = _int64_values(arr.cast(pa.int32()))
        elif root == "TIME":
            at = arr.type
            if pa.types.is_time(at):
                raw = _int64_values(arr.cast(pa.int64() if at.bit_width == 64 else pa.int32()))
                src = _UNIT_PER_SECOND[at.unit]
                ints = raw * (1000 // src) if src <= 1000 else np.floor_divide(raw, src // 1000)
            else:
                ints = _int64_values(arr.cast(pa.int32()))
        else:
            ints = _int64_values(arr.cast(pa.int64()))
        return ColumnKeys(kind, valid, ints=ints)
    if kind in ("float", "double"):
        np_t, bits_t, canon = ((np.float32, np.int32, 0x7FC00000) if kind == "float"
                               else (np.float64, np.int64, 0x7FF8000000000000))
        arr = arr.cast(pa.float32() if kind == "float" else pa.float64())
        vals = np.asarray(pc.fill_null(arr, 0.0).to_numpy(zero_copy_only=False), dtype=np_t)
        bits = vals.view(bits_t).astype(np.int64)
        bits[np.isnan(vals)] = canon  # Float.floatToIntBits / Double.doubleToLongBits
        return ColumnKeys(kind, valid, ints=bits, floats=vals)
    if kind == "bool":
        vals = np.asarray(pc.fill_null(arr.cast(pa.bool_()), False).to_numpy(zero_copy_only=False))
        return ColumnKeys(kind, valid, ints=vals.astype(np.int64))
    if kind in ("string", "binary"):
        return ColumnKeys(kind, valid, array=arr.cast(pa.large_binary()))
    if kind == "decimal":
        return ColumnKeys(kind, valid, ints=decimal_unscaled(arr, dtype))
    raise ValueError(f"type {dtype} cannot be indexed")


def decimal_unscaled(arr: pa.Array, dtype: T.DataType) -> np.ndarray:
    """Unscaled values of a decimal column as int64 (Java ``Decimal.toUnscaledLong``), 0 at
    nulls; raises if a value does not fit a long."""
    scale = dtype.scale or 0
    target = pa.decimal128(38, scale)
    if arr.type != target:
        arr = arr.cast(target)
    n = len(arr)
    words = np.frombuffer(arr.buffers()[1], dtype="<i8")[2 * arr.offset: 2 * (arr.offset + n)]
    lo = words[0::2].copy()
    hi = words[1::2]
    valid = (np.ones(n, dtype=bool) if arr.null_count == 0
             else np.asarray(arr.is_valid().to_numpy(zero_copy_only=False), dtype=bool))
    bad = valid & (hi != (lo >> 63))
    if bad.any():
        raise ValueError(f"decimal value does not fit a long for {dtype}")
    lo[~valid] = 0
    return lo


# --------------------------------------------------------------------------- literals

class Unknown(Exception):
    """A literal the index cannot reason about: the caller must assume rows may match."""


def binary_views(arr: pa.Array, pad: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The bytes of every value of a binary/string array as ``(data, start, length)``: one
    uint8 buffer (``pad`` zero bytes appended so word-wise reads past a value's end stay in
    bounds) and each value's offset and length in it (nulls are empty)."""
    arr = arr.cast(pa.large_binary())
    n = len(arr)
    offsets = np.frombuffer(arr.buffers()[1], dtype=np.int64)[arr.offset: arr.offset + n + 1]
    buf = arr.buffers()[2]
    data = np.frombuffer(buf, dtype=np.uint8) if buf is not None else np.zeros(0, np.uint8)
    data = np.concatenate([data, np.zeros(pad, dtype=np.uint8)])
    return data, offsets[:-1].astype(np.int64), (offsets[1:] - offsets[:-1]).astype(np.int64)


def _exact_float(x: float) -> Fraction:
    if not math.isfinite(x):
        raise Unknown
    return Fraction(x)


def literal_key(value: Any, dtype: T.DataType) -> Any:
    """A predicate literal in the index's key domain.

    'int' and 'decimal' kinds give an exact :class:`Fraction` in key units (a non-integral
    one cannot equal any stored key); 'float'/'double' give a Python float (already rounded to
    float32 for FLOAT when that is exact); 'bool' a bool; 'string'/'binary' bytes. Raises
    :class:`Unknown` whenever Arrow's comparison of the column with this literal might not be
    an exact comparison of values (so no row may be ruled out).
    """
    if value is None:
        raise Unknown
    kind = key_kind(dtype)
    root = dtype.root
    if isinstance(value, pa.Scalar):
        value = value.as_py()
    if isinstance(value, np.generic):
        if isinstance(value, np.datetime64):
            value = pa.scalar(value)
        else:
            value = value.item()
    if kind == "int":
        if root in TIMESTAMP_ROOTS:
            return _timestamp_literal(value, dtype)
        if root == "DATE":
            if isinstance(value, str):
                try:
                    value = _dt.date.fromisoformat(value)
                except ValueError:
                    raise Unknown from None
            if isinstance(value, _dt.datetime) or not isinstance(value, _dt.date):
                raise Unknown
            return Fraction((value - _dt.date(1970, 1, 1)).days)
        if root == "TIME":
            if not isinstance(value, _dt.time) or value.tzinfo is not None:
                raise Unknown
            micros = ((value.hour * 60 + value.minute) * 60 + value.second) * 1_000_000 + value.microsecond
            return Fraction(micros, 1000)
        return _number_literal(value)
    if kind == "decimal":
        if isinstance(value, bool) or not isinstance(value, (int, _decimal.Decimal)):
            raise Unknown
        if isinstance(value, _decimal.Decimal) and not value.is_finite():
            raise Unknown
        return Fraction(value) * (10 ** (dtype.scale or 0))
    if kind in ("float", "double"):
        if isinstance(value, bool) or not isinstance(value, (int, float, _decimal.Decimal)):
            raise Unknown
        x = float(value)
        if isinstance(value, int) and x != value:
            raise Unknown
        if isinstance(value, _decimal.Decimal) and Fraction(x) != Fraction(value):
            raise Unknown
        if math.isnan(x):
            raise Unknown
        if kind == "float":
            x32 = float(np.float32(x))
            if x32 != x:
                raise Unknown
        return x
    if kind == "bool":
        if not isinstance(value, (bool, np.bool_)):
            raise Unknown
        return bool(value)
    if kind == "string":
        if not isinstance(value, str):
            raise Unknown
        return value.encode("utf-8")
    if kind == "binary":
        if not isinstance(value, (bytes, bytearray, memoryview)):
            raise Unknown
        return bytes(value)
    raise Unknown


def _number_literal(value: Any) -> Fraction:
    if isinstance(value, bool):
        raise Unknown
    if isinstance(value, int):
        return Fraction(value)
    if isinstance(value, float):
        if abs(value) >= 2.0 ** 52:  # an int column compared as double may round
            raise Unknown
        return _exact_float(value)
    if isinstance(value, _decimal.Decimal):
        if not value.is_finite():
            raise Unknown
        return Fraction(value)
    raise Unknown


def _timestamp_literal(value: Any, dtype: T.DataType) -> Fraction:
    if isinstance(value, str):
        try:
            value = _dt.datetime.fromisoformat(value.replace("T", " "))
        except ValueError:
            raise Unknown from None
    if isinstance(value, _dt.date) and not isinstance(value, _dt.datetime):
        raise Unknown
    try:
        scalar = value if isinstance(value, pa.TimestampScalar) else pa.scalar(value)
    except (pa.ArrowInvalid, pa.ArrowTypeError, TypeError):
        raise Unknown from None
    if not pa.types.is_timestamp(scalar.type) or not scalar.is_valid:
        raise Unknown
    raw = scalar.cast(pa.int64()).as_py()
    src = _UNIT_PER_SECOND[scalar.type.unit]
    dst = _UNIT_PER_SECOND[timestamp_key_unit(dtype)]
    return Fraction(raw * dst, src)


def floor_int(q: Fraction) -> int:
    return q.numerator // q.denominator


def ceil_int(q: Fraction) -> int:
    return -((-q.numerator) // q.denominator)


def float_bits(x: float, kind: str) -> int:
    """Canonical Java bits of a float/double value, as the int64 stored in ColumnKeys."""
    if kind == "float":
        return int(np.array([x], dtype=np.float32).view(np.int32)[0])
    return int(np.array([x], dtype=np.float64).view(np.int64)[0])


def equal_keys(lit: Any, kind: str) -> list:
    """Stored keys equal (per Arrow '=') to a literal from :func:`literal_key`: [] when nothing
    can be equal; for floats both zeros."""
    if kind in ("float", "double"):
        if lit == 0.0:
            return [float_bits(0.0, kind), float_bits(-0.0, kind)]
        return [float_bits(lit, kind)]
    if kind in ("int", "decimal"):
        return [int(lit)] if lit.denominator == 1 else []
    if kind == "bool":
        return [int(lit)]
    return [lit]

