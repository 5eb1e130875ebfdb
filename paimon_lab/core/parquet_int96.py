"""TIMESTAMP(7..9) columns in Parquet as INT96, column by column, the way Java Paimon stores them.

Java Paimon writes TIMESTAMP(7..9) (and TIMESTAMP_LTZ(7..9)) as INT96 and its reader accepts
nothing else for them, while TIMESTAMP(0..6) must stay INT64 (its reader casts an INT96 column of
such a type to the wrong vector and fails). pyarrow can only make *every* timestamp of a file
INT96 (``use_deprecated_int96_timestamps``), so a file with both kinds cannot be written
directly. Instead:

1. each nanosecond timestamp column is converted to FIXED_LEN_BYTE_ARRAY(12) holding exactly the
   INT96 bytes (8 bytes little-endian nanoseconds of the day, then 4 bytes little-endian Julian
   day). PLAIN and dictionary pages of a 12-byte fixed-length column are byte for byte those of
   an INT96 column;
2. after pyarrow has written the file, its footer (Thrift compact protocol) is rewritten: those
   columns' physical type becomes INT96 (schema element and column metadata) and their
   ``type_length`` and min/max statistics are dropped: the footer pyarrow itself writes for an
   INT96 column. Data pages are not touched, so no offset changes.
"""

from __future__ import annotations

import struct
from typing import Any

import numpy as np
import pyarrow as pa

_JULIAN_EPOCH = 2_440_588  # Julian day of 1970-01-01
_NANOS_PER_DAY = 86_400_000_000_000
INT96_STORAGE = pa.binary(12)


# ------------------------------------------------------------------------- arrays

def _is_nanos(t: pa.DataType) -> bool:
    return pa.types.is_timestamp(t) and t.unit == "ns"


def has_nanos(t: pa.DataType) -> bool:
    """A TIMESTAMP(7..9) anywhere in ``t``."""
    if _is_nanos(t):
        return True
    if pa.types.is_struct(t):
        return any(has_nanos(t.field(i).type) for i in range(t.num_fields))
    if pa.types.is_map(t):
        return has_nanos(t.key_type) or has_nanos(t.item_type)
    if pa.types.is_list(t) or pa.types.is_large_list(t):
        return has_nanos(t.value_type)
    return False


def storage_type(t: pa.DataType) -> pa.DataType:
    """``t`` with every nanosecond timestamp replaced by its INT96 bytes."""
    if _is_nanos(t):
        return INT96_STORAGE
    if pa.types.is_struct(t):
        return pa.struct([t.field(i).with_type(storage_type(t.field(i).type)) for i in range(t.num_fields)])
    if pa.types.is_map(t):
        return pa.map_(t.key_field.with_type(storage_type(t.key_type)),
                       t.item_field.with_type(storage_type(t.item_type)))
    if pa.types.is_list(t):
        return pa.list_(t.value_field.with_type(storage_type(t.value_type)))
    if pa.types.is_large_list(t):
        return pa.large_list(t.value_field.with_type(storage_type(t.value_type)))
    return t


def storage_schema(schema: pa.Schema) -> pa.Schema:
    return pa.schema([f.with_type(storage_type(f.type)) for f in schema], metadata=schema.metadata)


def _int96(arr: pa.Array) -> pa.Array:
    ns = arr.cast(pa.int64()).fill_null(0).to_numpy(zero_copy_only=False)
    day, nanos = np.divmod(ns, _NANOS_PER_DAY)
    out = np.empty(len(ns), dtype=[("nanos", "<i8"), ("day", "<i4")])
    out["nanos"] = nanos
    out["day"] = day + _JULIAN_EPOCH
    validity = arr.buffers()[0] if arr.null_count else None
    if validity is not None and arr.offset:
        validity = pa.array(arr.is_valid()).buffers()[1]
    return pa.Array.from_buffers(INT96_STORAGE, len(ns), [validity, pa.py_buffer(out.tobytes())],
                                 null_count=arr.null_count)


def to_storage(arr: pa.Array) -> pa.Array:
    """``arr`` (one chunk) with its nanosecond timestamps as INT96 bytes."""
    t = arr.type
    if not has_nanos(t):
        return arr
    if _is_nanos(t):
        return _int96(arr)
    mask = arr.is_null() if arr.null_count else None
    if pa.types.is_struct(t):
        children = [to_storage(c) for c in arr.flatten()]   # the slice, nulls where the row is null
        return pa.StructArray.from_arrays(children, fields=list(storage_type(t)), mask=mask)
    # Lists and maps are rebuilt from their entries as seen through this (possibly sliced) array,
    # with null entries empty: Parquet writers before pyarrow 20 refuse null lists with contents.
    if pa.types.is_map(t):
        offsets, take = _entries(arr, pa.int32())
        return pa.MapArray.from_arrays(offsets, to_storage(arr.keys.take(take)), to_storage(arr.items.take(take)),
                                       type=storage_type(t), mask=mask)
    if pa.types.is_list(t) or pa.types.is_large_list(t):
        large = pa.types.is_large_list(t)
        cls = pa.LargeListArray if large else pa.ListArray
        offsets, take = _entries(arr, pa.int64() if large else pa.int32())
        return cls.from_arrays(offsets, to_storage(arr.values.take(take)), type=storage_type(t), mask=mask)
    raise TypeError(f"cannot store {t} with INT96 timestamps")


def _entries(arr: pa.Array, type: pa.DataType) -> tuple[pa.Array, pa.Array]:
    """For a list or map array (possibly a slice): offsets counted from 0 with null entries empty,
    and the positions in its child array of the values those offsets cover."""
    offsets = arr.offsets.to_numpy().astype(np.int64)
    lengths = np.diff(offsets)
    if arr.null_count:
        lengths = np.where(arr.is_valid().to_numpy(zero_copy_only=False), lengths, 0)
    ends = np.cumsum(lengths)
    starts = np.repeat(offsets[:-1], lengths)
    within = np.arange(int(ends[-1]) if len(ends) else 0) - np.repeat(ends - lengths, lengths)
    return pa.array(np.concatenate([[0], ends]), type), pa.array(starts + within)


def table_to_storage(table: pa.Table, schema: pa.Schema) -> pa.Table:
    """``table`` converted to ``schema`` (its :func:`storage_schema`)."""
    columns = [pa.chunked_array([to_storage(c) for c in col.chunks], type=schema.field(i).type)
               if has_nanos(col.type) else col for i, col in enumerate(table.columns)]
    return pa.Table.from_arrays(columns, schema=schema)


def int96_paths(schema: pa.Schema) -> set[tuple[str, ...]]:
    """Parquet leaf paths (as pyarrow names them) of the nanosecond timestamps in ``schema``."""
    out: set[tuple[str, ...]] = set()

    def walk(t: pa.DataType, path: tuple[str, ...]) -> None:
        if _is_nanos(t):
            out.add(path)
        elif pa.types.is_struct(t):
            for i in range(t.num_fields):
                walk(t.field(i).type, path + (t.field(i).name,))
        elif pa.types.is_map(t):
            walk(t.key_type, path + ("key_value", "key"))
            walk(t.item_type, path + ("key_value", "value"))
        elif pa.types.is_list(t) or pa.types.is_large_list(t):
            walk(t.value_type, path + ("list", "element"))

    for f in schema:
        walk(f.type, (f.name,))
    return out


# ------------------------------------------------------------------------- Thrift compact protocol

_STOP, _TRUE, _FALSE, _I8, _I16, _I32, _I64, _DOUBLE, _BINARY, _LIST, _SET, _MAP, _STRUCT = range(13)


class _Reader:
    def __init__(self, data: bytes):
        self.data, self.pos = data, 0

    def byte(self) -> int:
        b = self.data[self.pos]
        self.pos += 1
        return b

    def varint(self) -> int:
        shift = result = 0
        while True:
            b = self.byte()
            result |= (b & 0x7F) << shift
            if not b & 0x80:
                return result
            shift += 7

    def zigzag(self) -> int:
        n = self.varint()
        return (n >> 1) ^ -(n & 1)

    def value(self, ttype: int) -> Any:
        if ttype in (_TRUE, _FALSE):
            return ttype == _TRUE
        if ttype == _I8:
            return struct.unpack("<b", bytes([self.byte()]))[0]
        if ttype in (_I16, _I32, _I64):
            return self.zigzag()
        if ttype == _DOUBLE:
            v = struct.unpack_from("<d", self.data, self.pos)[0]
            self.pos += 8
            return v
        if ttype == _BINARY:
            n = self.varint()
            v = self.data[self.pos:self.pos + n]
            self.pos += n
            return v
        if ttype in (_LIST, _SET):
            head = self.byte()
            size, etype = head >> 4, head & 0x0F
            if size == 15:
                size = self.varint()
            if etype in (_TRUE, _FALSE):
                return (etype, [self.byte() == 1 for _ in range(size)])
            return (etype, [self.value(etype) for _ in range(size)])
        if ttype == _MAP:
            size = self.varint()
            if not size:
                return (0, 0, [])
            kv = self.byte()
            return (kv >> 4, kv & 0x0F, [(self.value(kv >> 4), self.value(kv & 0x0F)) for _ in range(size)])
        if ttype == _STRUCT:
            return self.struct()
        raise ValueError(f"unknown Thrift type {ttype}")

    def struct(self) -> list:
        fields, last = [], 0
        while True:
            head = self.byte()
            if head == _STOP:
                return fields
            delta, ttype = head >> 4, head & 0x0F
            fid = last + delta if delta else self.zigzag()
            fields.append([fid, ttype, self.value(ttype)])
            last = fid


class _Writer:
    def __init__(self) -> None:
        self.out = bytearray()

    def varint(self, n: int) -> None:
        while True:
            if n < 0x80:
                self.out.append(n)
                return
            self.out.append((n & 0x7F) | 0x80)
            n >>= 7

    def zigzag(self, n: int) -> None:
        self.varint((n << 1) ^ (n >> 63))

    def value(self, ttype: int, v: Any) -> None:
        if ttype in (_TRUE, _FALSE):
            return  # in the field header
        if ttype == _I8:
            self.out += struct.pack("<b", v)
        elif ttype in (_I16, _I32, _I64):
            self.zigzag(v)
        elif ttype == _DOUBLE:
            self.out += struct.pack("<d", v)
        elif ttype == _BINARY:
            self.varint(len(v))
            self.out += v
        elif ttype in (_LIST, _SET):
            etype, items = v
            if len(items) < 15:
                self.out.append(len(items) << 4 | etype)
            else:
                self.out.append(0xF0 | etype)
                self.varint(len(items))
            for item in items:
                if etype in (_TRUE, _FALSE):
                    self.out.append(1 if item else 2)
                else:
                    self.value(etype, item)
        elif ttype == _MAP:
            ktype, vtype, items = v
            self.varint(len(items))
            if items:
                self.out.append(ktype << 4 | vtype)
                for k, x in items:
                    self.value(ktype, k)
                    self.value(vtype, x)
        elif ttype == _STRUCT:
            self.struct(v)
        else:
            raise ValueError(f"unknown Thrift type {ttype}")

    def struct(self, fields: list) -> None:
        last = 0
        for fid, ttype, v in fields:
            if ttype in (_TRUE, _FALSE):
                ttype = _TRUE if v else _FALSE
            if 0 < fid - last <= 15:
                self.out.append((fid - last) << 4 | ttype)
            else:
                self.out.append(ttype)
                self.zigzag(fid)
            self.value(ttype, v)
            last = fid
        self.out.append(_STOP)


def _get(fields: list, fid: int, default: Any = None) -> Any:
    return next((v for f, _, v in fields if f == fid), default)


def _set(fields: list, fid: int, ttype: int, value: Any) -> None:
    for f in fields:
        if f[0] == fid:
            f[1], f[2] = ttype, value
            return
    fields.append([fid, ttype, value])
    fields.sort(key=lambda f: f[0])


def _drop(fields: list, fid: int) -> None:
    fields[:] = [f for f in fields if f[0] != fid]


# Parquet physical types and FileMetaData field ids
_INT96, _FIXED_LEN_BYTE_ARRAY = 3, 7


def patch_footer(tail: bytes, paths: set[tuple[str, ...]]) -> bytes:
    """A Parquet file's ``tail`` (the footer, its 4-byte length and ``PAR1``; data may precede it)
    with the FIXED_LEN_BYTE_ARRAY(12) leaves at ``paths`` turned into INT96 columns."""
    if tail[-4:] != b"PAR1":
        raise ValueError("not a Parquet file")
    (length,) = struct.unpack("<I", tail[-8:-4])
    start = len(tail) - 8 - length
    meta = _Reader(tail[start:-8]).struct()
    schema = _get(meta, 2)[1]
    # the leaves of the depth-first schema list, in column order, with their paths
    leaves: list[tuple[tuple[str, ...], list]] = []
    stack: list[list] = []  # [name, children left]
    for i, element in enumerate(schema):
        name = _get(element, 4).decode()
        children = _get(element, 5, 0)
        if i == 0:
            stack.append(["", children])
            continue
        path = tuple(s[0] for s in stack[1:]) + (name,)
        stack[-1][1] -= 1
        if children:
            stack.append([name, children])
        else:
            leaves.append((path, element))
        while len(stack) > 1 and stack[-1][1] == 0:
            stack.pop()
    patched = set()
    for index, (path, element) in enumerate(leaves):
        if path not in paths:
            continue
        if _get(element, 1) != _FIXED_LEN_BYTE_ARRAY or _get(element, 2) != 12:
            raise ValueError(f"column {'.'.join(path)} is not the 12-byte INT96 storage")
        _set(element, 1, _I32, _INT96)
        _drop(element, 2)
        patched.add(index)
    if len(patched) != len(paths):
        raise ValueError(f"INT96 columns not found: {sorted(paths)}")
    for group in _get(meta, 4)[1]:
        for index, chunk in enumerate(_get(group, 1)[1]):
            if index in patched:
                cmd = _get(chunk, 3)
                _set(cmd, 1, _I32, _INT96)
                _drop(cmd, 12)  # statistics of the bytes: INT96 has no defined sort order
    w = _Writer()
    w.struct(meta)
    footer = bytes(w.out)
    return tail[:start] + footer + struct.pack("<I", len(footer)) + b"PAR1"
