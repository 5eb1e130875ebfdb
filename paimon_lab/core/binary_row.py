"""Paimon's BinaryRow: the byte layout of partitions, keys and statistics, and bucket hashing.

A BinaryRow of arity ``n`` is a fixed part followed by a variable part::

    [header byte (row kind) + null bits]  ((n + 63 + 8) // 64) * 8 bytes, field i -> bit i + 8
    [n slots of 8 bytes]                  little-endian
    [variable part]                       8-byte aligned, zero padded

A slot holds the value itself (numbers, DATE, TIME, compact DECIMAL and TIMESTAMP), a string or
binary of at most 7 bytes inline (marker byte ``0x80 | len`` in the slot's last byte), or
``offset << 32 | size`` pointing into the variable part, where the offset counts from the row's
first byte. Manifests store rows as a 4-byte big-endian arity followed by the row
(:func:`serialize`). Bucket assignment hashes the row bytes with MurmurHash3 (x86_32, by 4-byte
words, seed 42), as Java's ``BinaryRow.hashCode()`` does (:func:`hash_codes`).
"""

from __future__ import annotations

import datetime as dt
import struct
from decimal import ROUND_HALF_UP, Context, Decimal, InvalidOperation
from typing import Any, Sequence

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from paimon_lab.errors import CorruptFileError, DataValidationError, UnsupportedTypeError
from paimon_lab.utils.parallel import WORKERS, thread_map

__all__ = [
    "EMPTY",
    "HASH_SEED",
    "bucket_of",
    "deserialize",
    "fixed_part_size",
    "from_bytes",
    "hash_bytes",
    "hash_code",
    "hash_codes",
    "null_bits_width",
    "rows_to_bytes",
    "serialize",
    "to_bytes",
]

HEADER_BITS = 8
MAX_INLINE_SIZE = 7
HASH_SEED = 42
COMPACT_DECIMAL_PRECISION = 18
COMPACT_TIMESTAMP_PRECISION = 3
WIDE_DECIMAL_BYTES = 16

_U64 = 0xFFFF_FFFF_FFFF_FFFF
_INLINE_MARK = 0x80
_EPOCH_ORDINAL = dt.date(1970, 1, 1).toordinal()
_EPOCH = dt.datetime(1970, 1, 1)
_UTC = dt.timezone.utc
_NANOS_PER_MILLI = 1_000_000
_DECIMAL_CONTEXT = Context(prec=100, rounding=ROUND_HALF_UP)
_NANOS_PER_UNIT = {"D": 86_400 * 10**9, "h": 3_600 * 10**9, "m": 60 * 10**9, "s": 10**9,
                   "ms": 10**6, "us": 10**3, "ns": 1}

_INT_RANGES = {"TINYINT": 8, "SMALLINT": 16, "INT": 32, "BIGINT": 64}
_INT_ARROW = {"TINYINT": pa.int8(), "SMALLINT": pa.int16(), "INT": pa.int32(), "BIGINT": pa.int64()}
_INT_WIDTH_VIEW = {"TINYINT": np.uint8, "SMALLINT": np.uint16, "INT": np.uint32, "BIGINT": np.uint64}


def null_bits_width(arity: int) -> int:
    """Bytes of the header-and-null-bits region of a row of ``arity`` fields."""
    return ((arity + 63 + HEADER_BITS) // 64) * 8


def fixed_part_size(arity: int) -> int:
    """Bytes of the fixed part (null bits and slots) of a row of ``arity`` fields."""
    return null_bits_width(arity) + 8 * arity


# ------------------------------------------------------------------ field layouts

def _layout(t: Any) -> str:
    """How a field of type ``t`` is laid out: one of the keys of the encoders below."""
    root = t.root
    if root in ("CHAR", "VARCHAR"):
        return "string"
    if root in ("BINARY", "VARBINARY"):
        return "binary"
    if root == "DECIMAL":
        return "decimal" if t.precision <= COMPACT_DECIMAL_PRECISION else "wide_decimal"
    if root in ("TIMESTAMP", "TIMESTAMP_LTZ"):
        return "timestamp" if t.precision <= COMPACT_TIMESTAMP_PRECISION else "wide_timestamp"
    if root in ("BOOLEAN", "FLOAT", "DOUBLE", "DATE", "TIME") or root in _INT_RANGES:
        return root
    raise UnsupportedTypeError(f"BinaryRow supports atomic types only, not {t}")


# ------------------------------------------------------------------ Python values -> numbers

def _int(v: Any, root: str) -> int:
    if isinstance(v, (bool, np.bool_)) or not isinstance(v, (int, np.integer)):
        raise DataValidationError(f"{root} needs an int, got {v!r}")
    bits = _INT_RANGES[root]
    v = int(v)
    if not -(1 << (bits - 1)) <= v < (1 << (bits - 1)):
        raise DataValidationError(f"{v} is out of range for {root}")
    return v


def _unscaled(v: Any, precision: int, scale: int) -> int:
    """The unscaled integer of ``v`` at ``scale``, rounding half up, as Java's Decimal does."""
    if isinstance(v, (int, np.integer)) and not isinstance(v, (bool, np.bool_)):
        d = Decimal(int(v))
    elif isinstance(v, (float, np.floating)):
        d = Decimal(repr(float(v)))
    elif isinstance(v, (Decimal, str)):
        d = Decimal(v)
    else:
        raise DataValidationError(f"DECIMAL({precision}, {scale}) needs a number, got {v!r}")
    try:
        unscaled = int(d.scaleb(scale, context=_DECIMAL_CONTEXT).to_integral_value(context=_DECIMAL_CONTEXT))
    except (InvalidOperation, ValueError, OverflowError) as exc:
        raise DataValidationError(f"{v!r} is not a finite decimal") from exc
    if abs(unscaled) >= 10**precision:
        raise DataValidationError(f"{v!r} does not fit DECIMAL({precision}, {scale})")
    return unscaled


def _java_unscaled_bytes(unscaled: int) -> bytes:
    """Minimal big-endian two's complement bytes, as Java's ``BigInteger.toByteArray()``."""
    magnitude_bits = (unscaled if unscaled >= 0 else ~unscaled).bit_length()
    return unscaled.to_bytes(magnitude_bits // 8 + 1, "big", signed=True)


def _epoch_nanos(v: Any) -> int:
    """Nanoseconds since 1970-01-01 of a timestamp value; aware values count in UTC."""
    if isinstance(v, np.datetime64):
        unit, count = np.datetime_data(v.dtype)
        if np.isnat(v) or unit not in _NANOS_PER_UNIT:
            raise DataValidationError(f"Cannot use {v!r} as a timestamp")
        return int(v.astype(np.int64)) * count * _NANOS_PER_UNIT[unit]
    if not isinstance(v, dt.datetime):
        raise DataValidationError(f"TIMESTAMP needs a datetime, got {v!r}")
    if v.tzinfo is not None:
        v = v.astimezone(_UTC)
    seconds = (v.toordinal() - _EPOCH_ORDINAL) * 86_400 + v.hour * 3_600 + v.minute * 60 + v.second
    return seconds * 10**9 + v.microsecond * 1_000 + int(getattr(v, "nanosecond", 0))


def _epoch_days(v: Any) -> int:
    if isinstance(v, np.datetime64):
        return _epoch_nanos(v) // _NANOS_PER_UNIT["D"]
    if isinstance(v, dt.date):
        return v.toordinal() - _EPOCH_ORDINAL
    if isinstance(v, (int, np.integer)) and not isinstance(v, (bool, np.bool_)):
        return int(v)
    raise DataValidationError(f"DATE needs a date, got {v!r}")


def _millis_of_day(v: Any) -> int:
    if isinstance(v, dt.time):
        return ((v.hour * 60 + v.minute) * 60 + v.second) * 1_000 + v.microsecond // 1_000
    if isinstance(v, (int, np.integer)) and not isinstance(v, (bool, np.bool_)):
        return int(v)
    raise DataValidationError(f"TIME needs a time, got {v!r}")


def _as_bytes(v: Any, layout: str) -> bytes:
    if layout == "string":
        if not isinstance(v, str):
            raise DataValidationError(f"A string field needs a str, got {v!r}")
        return v.encode("utf-8")
    if not isinstance(v, (bytes, bytearray, memoryview)):
        raise DataValidationError(f"A binary field needs bytes, got {v!r}")
    return bytes(v)


def _fixed_slot(v: Any, t: Any, layout: str) -> int:
    """The unsigned 64-bit slot of a non-null value whose layout keeps it in the fixed part."""
    if layout == "BOOLEAN":
        if not isinstance(v, (bool, np.bool_)):
            raise DataValidationError(f"BOOLEAN needs a bool, got {v!r}")
        return int(bool(v))
    if layout in _INT_RANGES:
        return _int(v, layout) & ((1 << _INT_RANGES[layout]) - 1)
    try:
        if layout == "FLOAT":
            return struct.unpack("<I", struct.pack("<f", float(v)))[0]
        if layout == "DOUBLE":
            return struct.unpack("<Q", struct.pack("<d", float(v)))[0]
    except (TypeError, ValueError, OverflowError) as exc:
        raise DataValidationError(f"{t} cannot hold {v!r}") from exc
    if layout == "DATE":
        return _epoch_days(v) & 0xFFFF_FFFF
    if layout == "TIME":
        return _millis_of_day(v) & 0xFFFF_FFFF
    if layout == "decimal":
        return _unscaled(v, t.precision, t.scale) & _U64
    if layout == "timestamp":
        return (_epoch_nanos(v) // _NANOS_PER_MILLI) & _U64
    raise AssertionError(layout)


# ------------------------------------------------------------------ one row

def to_bytes(values: Sequence[Any], types: Sequence[Any]) -> bytes:
    """The BinaryRow bytes (row kind INSERT) of one row of ``values`` typed by ``types``."""
    if len(values) != len(types):
        raise ValueError(f"{len(values)} values for {len(types)} types")
    arity = len(types)
    nulls_size = null_bits_width(arity)
    fixed_size = nulls_size + 8 * arity
    fixed = bytearray(fixed_size)
    var = bytearray()
    for pos, (v, t) in enumerate(zip(values, types)):
        slot_at = nulls_size + 8 * pos
        if v is None:
            bit = pos + HEADER_BITS
            fixed[bit // 8] |= 1 << (bit % 8)
            # Nested types are only ever null here (statistics have no min/max for them).
            layout = None if getattr(t, "is_nested", False) else _layout(t)
            if layout in ("wide_decimal", "wide_timestamp"):
                struct.pack_into("<Q", fixed, slot_at, (fixed_size + len(var)) << 32)
                var += bytes(WIDE_DECIMAL_BYTES if layout == "wide_decimal" else 8)
            continue
        layout = _layout(t)
        if layout in ("string", "binary"):
            data = _as_bytes(v, layout)
            if len(data) <= MAX_INLINE_SIZE:
                fixed[slot_at:slot_at + len(data)] = data
                fixed[slot_at + 7] = _INLINE_MARK | len(data)
            else:
                struct.pack_into("<Q", fixed, slot_at, (fixed_size + len(var)) << 32 | len(data))
                var += data + bytes(-len(data) % 8)
        elif layout == "wide_decimal":
            data = _java_unscaled_bytes(_unscaled(v, t.precision, t.scale))
            struct.pack_into("<Q", fixed, slot_at, (fixed_size + len(var)) << 32 | len(data))
            var += data + bytes(WIDE_DECIMAL_BYTES - len(data))
        elif layout == "wide_timestamp":
            millis, nano_of_milli = divmod(_epoch_nanos(v), _NANOS_PER_MILLI)
            struct.pack_into("<Q", fixed, slot_at, (fixed_size + len(var)) << 32 | nano_of_milli)
            var += struct.pack("<q", millis)
        else:
            struct.pack_into("<Q", fixed, slot_at, _fixed_slot(v, t, layout))
    return bytes(fixed + var)


def serialize(values: Sequence[Any], types: Sequence[Any]) -> bytes:
    """The manifest form of a row: 4-byte big-endian arity, then :func:`to_bytes`."""
    return struct.pack(">i", len(types)) + to_bytes(values, types)


EMPTY = serialize([], [])


def _timestamp_value(nanos: int, t: Any) -> Any:
    ltz = t.root == "TIMESTAMP_LTZ"
    if t.precision > 6:
        import pandas as pd

        try:
            return pd.Timestamp(nanos, unit="ns", tz="UTC" if ltz else None)
        except (OverflowError, ValueError):
            pass
    value = _EPOCH + dt.timedelta(microseconds=nanos // 1_000)
    return value.replace(tzinfo=_UTC) if ltz else value


def _decimal_value(unscaled: int, scale: int) -> Decimal:
    sign, digits, _ = Decimal(unscaled).as_tuple()
    return Decimal((sign, digits, -scale))


def _read_field(row: bytes, slot_at: int, t: Any, layout: str) -> Any:
    slot = int.from_bytes(row[slot_at:slot_at + 8], "little")
    if layout in ("string", "binary"):
        if slot >> 63:
            data = row[slot_at:slot_at + ((slot >> 56) & 0x7F)]
        else:
            offset, size = slot >> 32, slot & 0xFFFF_FFFF
            if offset + size > len(row):
                raise CorruptFileError(f"BinaryRow field points past the row ({offset}+{size} > {len(row)})")
            data = row[offset:offset + size]
        return data.decode("utf-8") if layout == "string" else bytes(data)
    if layout == "wide_decimal":
        offset, size = slot >> 32, slot & 0xFFFF_FFFF
        return _decimal_value(int.from_bytes(row[offset:offset + size], "big", signed=True), t.scale)
    if layout == "wide_timestamp":
        offset = slot >> 32
        millis = int.from_bytes(row[offset:offset + 8], "little", signed=True)
        return _timestamp_value(millis * _NANOS_PER_MILLI + (slot & 0xFFFF_FFFF), t)
    if layout == "BOOLEAN":
        return bool(slot & 0xFF)
    if layout == "FLOAT":
        return struct.unpack_from("<f", row, slot_at)[0]
    if layout == "DOUBLE":
        return struct.unpack_from("<d", row, slot_at)[0]
    if layout in _INT_RANGES:
        bits = _INT_RANGES[layout]
        return int.from_bytes(row[slot_at:slot_at + bits // 8], "little", signed=True)
    if layout == "DATE":
        return dt.date.fromordinal(_EPOCH_ORDINAL + struct.unpack_from("<i", row, slot_at)[0])
    if layout == "TIME":
        millis = struct.unpack_from("<i", row, slot_at)[0]
        seconds, millis = divmod(millis, 1_000)
        return dt.time(seconds // 3_600, seconds // 60 % 60, seconds % 60, millis * 1_000)
    signed = slot - (1 << 64) if slot >> 63 else slot
    if layout == "decimal":
        return _decimal_value(signed, t.scale)
    return _timestamp_value(signed * _NANOS_PER_MILLI, t)


def _decode(row: bytes, arity: int, types: Sequence[Any]) -> list:
    nulls_size = null_bits_width(arity)
    if len(row) < nulls_size + 8 * arity:
        raise CorruptFileError(f"BinaryRow of arity {arity} needs {nulls_size + 8 * arity} bytes, got {len(row)}")
    out: list = []
    for pos, t in enumerate(types[:arity]):
        bit = pos + HEADER_BITS
        if row[bit // 8] >> (bit % 8) & 1:
            out.append(None)
        else:
            out.append(_read_field(row, nulls_size + 8 * pos, t, _layout(t)))
    return out + [None] * (len(types) - len(out))


def from_bytes(data: bytes, types: Sequence[Any]) -> list:
    """Decode BinaryRow bytes without the arity prefix; the row's arity is ``len(types)``."""
    return _decode(bytes(data), len(types), types)


def deserialize(data: bytes, types: Sequence[Any]) -> list:
    """Decode :func:`serialize` output. Rows of another arity (written under an older or newer
    schema) decode their first ``min(arity, len(types))`` fields; missing fields are None."""
    data = bytes(data)
    if not data:
        return [None] * len(types)
    if len(data) < 4:
        raise CorruptFileError(f"Serialized BinaryRow of {len(data)} bytes has no arity")
    arity = struct.unpack_from(">i", data)[0]
    if arity < 0:
        raise CorruptFileError(f"Serialized BinaryRow has negative arity {arity}")
    return _decode(data[4:], arity, types)


# ------------------------------------------------------------------ MurmurHash3 by words

_C1, _C2 = np.uint32(0xCC9E2D51), np.uint32(0x1B873593)
_M5, _N1 = np.uint32(5), np.uint32(0xE6546B64)
_F1, _F2 = np.uint32(0x85EBCA6B), np.uint32(0xC2B2AE35)
_MATRIX_ROWS = 64


def _rotl(x: np.ndarray, r: int) -> np.ndarray:
    return (x << np.uint32(r)) | (x >> np.uint32(32 - r))


def _mix_k1(k: np.ndarray) -> np.ndarray:
    return _rotl(k * _C1, 15) * _C2


def _mix_h1(h: np.ndarray, k: np.ndarray, scratch: np.ndarray) -> None:
    """One Murmur step over ``h`` in place."""
    h ^= k
    np.left_shift(h, np.uint32(13), out=scratch)
    h >>= np.uint32(19)
    h |= scratch
    h *= _M5
    h += _N1


def _fmix(h: np.ndarray, length: np.ndarray) -> np.ndarray:
    h = h ^ length.astype(np.uint32)
    h ^= h >> np.uint32(16)
    h *= _F1
    h ^= h >> np.uint32(13)
    h *= _F2
    h ^= h >> np.uint32(16)
    return h


def _by_length(counts: np.ndarray) -> np.ndarray:
    """Stable order of rows by ascending length."""
    small = len(counts) and int(counts.max()) < 1 << 16
    return np.argsort(counts.astype(np.uint16) if small else counts, kind="stable")


def _hash_rows(words: np.ndarray, starts: np.ndarray, counts: np.ndarray,
               order: np.ndarray | None = None) -> np.ndarray:
    """Murmur hashes (int32) of rows that are runs ``words[starts[i]:starts[i] + counts[i]]``.

    Rows of one length must lie back to back in ``words``, in the order of ``order`` (rows by
    ascending length, stable), so that they form one matrix hashed a word column at a time.
    Lengths shared by few rows are hashed together, column by column over the rows still that long.
    """
    n = len(starts)
    k = _mix_k1(words)
    h = np.full(n, HASH_SEED, dtype=np.uint32)
    if n == 0:
        return h.view(np.int32)
    if order is None:
        order = _by_length(counts)
    sorted_counts = counts[order]
    bounds = np.concatenate([[0], np.flatnonzero(np.diff(sorted_counts)) + 1, [n]])
    stragglers = []
    for lo, hi in zip(bounds[:-1].tolist(), bounds[1:].tolist()):
        rows, width = order[lo:hi], int(sorted_counts[lo])
        if hi - lo < _MATRIX_ROWS and width > 2:
            stragglers.append(rows)
            continue
        first = int(starts[rows[0]])
        matrix = k[first:first + width * (hi - lo)].reshape(hi - lo, width)
        hg = h[rows]
        scratch = np.empty_like(hg)
        for j in range(width):
            _mix_h1(hg, matrix[:, j], scratch)
        h[rows] = hg
    if stragglers:
        rows = np.concatenate(stragglers)[::-1]
        row_starts, row_counts = starts[rows], counts[rows]
        alive = np.searchsorted(-row_counts, -np.arange(int(row_counts[0])), side="left")
        hg, scratch = h[rows], np.empty(len(rows), dtype=np.uint32)
        for j, a in enumerate(alive.tolist()):
            _mix_h1(hg[:a], k[row_starts[:a] + j], scratch[:a])
        h[rows] = hg
    return _fmix(h, counts * 4).view(np.int32)


def hash_bytes(data: bytes) -> int:
    """Java's ``MurmurHashUtils.hashBytesByWords(data, seed 42)`` as a signed 32-bit int."""
    if len(data) % 4:
        raise ValueError("hash_bytes hashes whole 4-byte words")
    words = np.frombuffer(data, dtype="<u4").astype(np.uint32)
    return int(_hash_rows(words, np.zeros(1, np.int64), np.array([len(words)], np.int64))[0])


def hash_code(values: Sequence[Any], types: Sequence[Any]) -> int:
    """Java's ``BinaryRow.hashCode()`` of one row."""
    return hash_bytes(to_bytes(values, types))


def bucket_of(hashes: np.ndarray, num_buckets: int) -> np.ndarray:
    """Paimon's default bucket function: ``abs(hash % num_buckets)`` with Java's remainder."""
    if num_buckets <= 0:
        raise ValueError(f"num_buckets must be positive, got {num_buckets}")
    return np.abs(np.fmod(np.asarray(hashes, dtype=np.int64), num_buckets)).astype(np.int32)


# ------------------------------------------------------------------ many rows at once

class _Field:
    """One column encoded for the row layout: fixed slots plus its variable-part blocks."""

    __slots__ = ("null", "slot", "var_words", "fill")

    def __init__(self, null: np.ndarray, slot: np.ndarray, var_words: np.ndarray | int = 0, fill=None):
        self.null = null
        self.slot = slot
        self.var_words = var_words
        self.fill = fill


def _as_array(column: pa.Array | pa.ChunkedArray) -> pa.Array:
    if isinstance(column, pa.ChunkedArray):
        column = column.combine_chunks() if column.num_chunks != 1 else column.chunk(0)
    if pa.types.is_dictionary(column.type):
        column = column.dictionary_decode()
    return column


def _cast(column: pa.Array, target: pa.DataType) -> pa.Array:
    if column.type == target:
        return column
    try:
        return column.cast(target)
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError) as exc:
        raise DataValidationError(f"Cannot use a {column.type} column as {target}: {exc}") from exc


def _filled(column: pa.Array, numpy_type: Any) -> np.ndarray:
    if column.null_count:
        column = pc.fill_null(column, pa.scalar(0, column.type) if not pa.types.is_boolean(column.type) else False)
    return np.asarray(column.to_numpy(zero_copy_only=False), dtype=numpy_type)


def _bit_length(v: np.ndarray) -> np.ndarray:
    bits = np.zeros(len(v), dtype=np.int64)
    for s in (32, 16, 8, 4, 2, 1):
        big = v >= (np.uint64(1) << np.uint64(s))
        v = np.where(big, v >> np.uint64(s), v)
        bits += big * s
    return bits + (v > 0)


def _decimal_field(column: pa.Array, t: Any, null: np.ndarray, wide: bool) -> _Field:
    column = _cast(column, pa.decimal128(t.precision, t.scale))
    n = len(column)
    pairs = np.frombuffer(column.buffers()[1], dtype="<u8")[2 * column.offset:2 * (column.offset + n)]
    pairs = np.where(null[:, None], np.uint64(0), pairs.reshape(n, 2))
    if not wide:
        return _Field(null, pairs[:, 0].copy())
    negative = pairs[:, 1] >> np.uint64(63) == 1
    hi = np.where(negative, ~pairs[:, 1], pairs[:, 1])
    lo = np.where(negative, ~pairs[:, 0], pairs[:, 0])
    size = np.where(hi != 0, 64 + _bit_length(hi), _bit_length(lo)) // 8 + 1
    size[null] = 0
    big_endian = pairs.view(np.uint8).reshape(n, 16)[:, ::-1]
    k = np.arange(16)
    source = np.minimum(16 - size[:, None] + k, 15)
    block = np.take_along_axis(big_endian, source, axis=1)
    block[k >= size[:, None]] = 0
    block = np.ascontiguousarray(block).view("<u8")

    def fill(flat: np.ndarray, at: np.ndarray) -> None:
        flat[at] = block[:, 0]
        flat[at + 1] = block[:, 1]

    return _Field(null, size.astype(np.uint64), 2, fill)


def _timestamp_field(column: pa.Array, t: Any, null: np.ndarray, wide: bool) -> _Field:
    if not pa.types.is_timestamp(column.type):
        column = _cast(column, pa.timestamp("us"))
    per_unit = _NANOS_PER_UNIT[column.type.unit]
    ticks = _filled(_cast(column, pa.int64()), np.int64)
    if per_unit >= _NANOS_PER_MILLI:
        millis, nano_of_milli = ticks * (per_unit // _NANOS_PER_MILLI), np.zeros_like(ticks)
    else:
        per_milli = _NANOS_PER_MILLI // per_unit
        millis, nano_of_milli = np.divmod(ticks, per_milli)
        nano_of_milli *= per_unit
    if not wide:
        return _Field(null, millis.view(np.uint64))

    def fill(flat: np.ndarray, at: np.ndarray) -> None:
        flat[at] = millis.view(np.uint64)

    return _Field(null, nano_of_milli.astype(np.uint64), 1, fill)


def _bytes_field(column: pa.Array, null: np.ndarray) -> _Field:
    column = _cast(column, pa.large_binary())
    n = len(column)
    _, offsets_buffer, data_buffer = column.buffers()
    if n:
        offsets = np.frombuffer(offsets_buffer, dtype="<i8")[column.offset:column.offset + n + 1]
    else:
        offsets = np.zeros(1, np.int64)
    first, last = int(offsets[0]), int(offsets[-1])
    data = np.frombuffer(data_buffer, dtype=np.uint8)[first:last] if data_buffer is not None else np.zeros(0, np.uint8)
    padded = np.concatenate([data, np.zeros(8, np.uint8)])
    window = np.ndarray(shape=(len(padded) - 7,), dtype="<u8", buffer=padded, strides=(1,))
    starts = offsets[:-1] - first
    sizes = np.where(null, 0, np.diff(offsets))
    inline = sizes <= MAX_INLINE_SIZE
    inline_sizes = np.minimum(sizes, MAX_INLINE_SIZE).astype(np.uint64)
    inline_slot = (window[starts] & ((np.uint64(1) << (inline_sizes * np.uint64(8))) - np.uint64(1))) \
        | ((inline_sizes | np.uint64(_INLINE_MARK)) << np.uint64(56))
    slot = np.where(inline, np.where(null, np.uint64(0), inline_slot), sizes.astype(np.uint64))
    var_words = np.where(inline, 0, (sizes + 7) // 8)
    if inline.all():
        return _Field(null, slot)
    spilled = np.flatnonzero(~inline)
    spilled_sizes, spilled_words, spilled_starts = sizes[spilled], var_words[spilled], starts[spilled]
    first_word = np.cumsum(spilled_words) - spilled_words
    tail = (spilled_sizes % 8).astype(np.uint64)
    tail_mask = np.where(tail == 0, np.uint64(_U64), (np.uint64(1) << (tail * np.uint64(8))) - np.uint64(1))

    def fill(flat: np.ndarray, at: np.ndarray) -> None:
        word = np.arange(int(spilled_words.sum()), dtype=np.int64)
        values = window[np.repeat(spilled_starts - 8 * first_word, spilled_words) + 8 * word]
        values[first_word + spilled_words - 1] &= tail_mask
        flat[np.repeat(at[spilled] - first_word, spilled_words) + word] = values

    return _Field(null, slot, var_words, fill)


def _encode_field(column: pa.Array, t: Any) -> _Field:
    layout = _layout(t)
    null = column.is_null().to_numpy(zero_copy_only=False) if column.null_count else np.zeros(len(column), bool)
    if layout in ("string", "binary"):
        return _bytes_field(column, null)
    if layout in ("decimal", "wide_decimal"):
        return _decimal_field(column, t, null, layout == "wide_decimal")
    if layout in ("timestamp", "wide_timestamp"):
        return _timestamp_field(column, t, null, layout == "wide_timestamp")
    if layout == "BOOLEAN":
        return _Field(null, _filled(_cast(column, pa.bool_()), np.uint8).astype(np.uint64))
    if layout in _INT_RANGES:
        values = _filled(_cast(column, _INT_ARROW[layout]), _INT_ARROW[layout].to_pandas_dtype())
        return _Field(null, values.view(_INT_WIDTH_VIEW[layout]).astype(np.uint64))
    if layout in ("FLOAT", "DOUBLE"):
        arrow_type = pa.float32() if layout == "FLOAT" else pa.float64()
        values = _filled(_cast(column, arrow_type), arrow_type.to_pandas_dtype())
        return _Field(null, values.view(np.uint32 if layout == "FLOAT" else np.uint64).astype(np.uint64))
    if layout == "DATE":
        days = _filled(_cast(_cast(column, pa.date32()), pa.int32()), np.int32)
        return _Field(null, days.view(np.uint32).astype(np.uint64))
    if pa.types.is_time(column.type):
        per_unit = _NANOS_PER_UNIT[column.type.unit]
        ticks = _filled(_cast(column, pa.int64() if pa.types.is_time64(column.type) else pa.int32()), np.int64)
        millis = ticks * (per_unit // _NANOS_PER_MILLI) if per_unit >= _NANOS_PER_MILLI \
            else ticks // (_NANOS_PER_MILLI // per_unit)
    else:
        millis = _filled(_cast(column, pa.int32()), np.int64)
    return _Field(null, millis.astype(np.int32).view(np.uint32).astype(np.uint64))


def _build_rows(columns: Sequence[pa.Array | pa.ChunkedArray], types: Sequence[Any]
                ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """All rows' bytes in one uint64 buffer: each row's first word, its word count, and the rows
    by ascending length, which the buffer holds in that order."""
    if len(columns) != len(types):
        raise ValueError(f"{len(columns)} columns for {len(types)} types")
    if not columns:
        raise ValueError("A row needs at least one column")
    arrays = [_as_array(c) for c in columns]
    n = len(arrays[0])
    if any(len(a) != n for a in arrays):
        raise ValueError("Columns differ in length")
    fields = [_encode_field(a, t) for a, t in zip(arrays, types)]
    arity = len(fields)
    null_words = null_bits_width(arity) // 8
    fixed_words = null_words + arity

    fixed = np.zeros((n, fixed_words), dtype=np.uint64)
    cursor = np.full(n, fixed_words, dtype=np.int64)
    cursors = []
    for pos, f in enumerate(fields):
        bit = pos + HEADER_BITS
        fixed[:, bit // 64] |= f.null.astype(np.uint64) << np.uint64(bit % 64)
        cursors.append(cursor)
        slot = f.slot
        if f.fill is not None:
            pointer = (cursor.astype(np.uint64) * np.uint64(8)) << np.uint64(32)
            slot = np.where(np.asarray(f.var_words) > 0, pointer | slot, slot)
            cursor = cursor + f.var_words
        fixed[:, null_words + pos] = slot
    row_words = cursor

    if n and int(row_words.min()) == int(row_words.max()):
        width = int(row_words[0])
        flat = np.zeros((n, width), dtype=np.uint64)
        flat[:, :fixed_words] = fixed
        flat = flat.reshape(-1)
        row_start = np.arange(n, dtype=np.int64) * width
        order = np.arange(n)
    else:
        order = _by_length(row_words)
        row_start = np.empty(n, dtype=np.int64)
        row_start[order] = np.cumsum(row_words[order]) - row_words[order]
        flat = np.zeros(int(row_words.sum()), dtype=np.uint64)
        flat[row_start[:, None] + np.arange(fixed_words)] = fixed
    for f, at in zip(fields, cursors):
        if f.fill is not None:
            f.fill(flat, row_start + at)
    return flat, row_start, row_words, order


_PARALLEL_HASH_ROWS = 1 << 18
_HASH_SLICE_ROWS = 1 << 17


def hash_codes(columns: Sequence[pa.Array | pa.ChunkedArray], types: Sequence[Any]) -> np.ndarray:
    """Java's ``BinaryRow.hashCode()`` (int32) of every row made of ``columns``."""
    n = len(columns[0]) if columns else 0
    if n >= 2 * _PARALLEL_HASH_ROWS:  # numpy releases the GIL: hash slices on several threads
        # Slices of a bounded size: building a slice's rows takes a few hundred bytes per row at
        # its peak (over a whole write buffer, several times the buffer), and small slices stay
        # in the CPU caches (half the CPU time of two halves of a 7M-row buffer).
        step = min(-(-n // WORKERS), _HASH_SLICE_ROWS)
        parts = thread_map(lambda lo: _hash_codes([c.slice(lo, step) for c in columns], types), range(0, n, step))
        return np.concatenate(parts)
    return _hash_codes(columns, types)


def _hash_codes(columns: Sequence[pa.Array | pa.ChunkedArray], types: Sequence[Any]) -> np.ndarray:
    flat, row_start, row_words, order = _build_rows(columns, types)
    return _hash_rows(flat.view("<u4"), row_start * 2, row_words * 2, order)


def rows_to_bytes(columns: Sequence[pa.Array | pa.ChunkedArray], types: Sequence[Any]) -> list[bytes]:
    """:func:`to_bytes` of every row made of ``columns``, built column-wise."""
    flat, row_start, row_words, _ = _build_rows(columns, types)
    raw = flat.view(np.uint8).tobytes()
    return [raw[8 * s:8 * (s + w)] for s, w in zip(row_start.tolist(), row_words.tolist())]
