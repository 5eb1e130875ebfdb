"""The oracle's wire format, shared by the test process and the worker (keep it stdlib + pyarrow).

A message is an 8-byte big-endian length followed by a pickle. Arrow objects never go through
pickle itself (pyarrow's own pickling is not promised stable between pyarrow 19 and 26): the
pickler swaps every Table, RecordBatch, Array, ChunkedArray, Schema, Field and DataType for the
Arrow IPC stream bytes of a table holding it. Everything else must be plain Python (bytes, int,
str, float, Decimal, datetime, lists, tuples, dicts...).
"""

from __future__ import annotations

import io
import pickle
import struct

import pyarrow as pa

PROTOCOL = 4
HEADER = struct.Struct(">Q")


def _ipc(table: pa.Table) -> bytes:
    sink = pa.BufferOutputStream()
    with pa.ipc.new_stream(sink, table.schema) as w:
        w.write_table(table)
    return sink.getvalue().to_pybytes()


def _unipc(data: bytes) -> pa.Table:
    return pa.ipc.open_stream(pa.BufferReader(data)).read_all()


def _encode(obj):
    """(kind, IPC bytes) for an Arrow object, None for anything else."""
    if isinstance(obj, pa.Table):
        return "table", _ipc(obj)
    if isinstance(obj, pa.RecordBatch):
        return "batch", _ipc(pa.Table.from_batches([obj]))
    if isinstance(obj, (pa.Array, pa.ChunkedArray)):
        return "array" if isinstance(obj, pa.Array) else "chunked", _ipc(pa.table({"a": obj}))
    if isinstance(obj, pa.Schema):
        return "schema", _ipc(obj.empty_table())
    if isinstance(obj, pa.Field):
        return "field", _ipc(pa.schema([obj]).empty_table())
    if isinstance(obj, pa.DataType):
        return "type", _ipc(pa.schema([pa.field("a", obj)]).empty_table())
    return None


def _decode(kind: str, data: bytes):
    t = _unipc(data)
    if kind == "table":
        return t
    if kind == "batch":
        return t.combine_chunks().to_batches()[0] if t.num_rows else pa.RecordBatch.from_pylist([], t.schema)
    if kind == "array":
        return t.column(0).combine_chunks()
    if kind == "chunked":
        return t.column(0)
    if kind == "schema":
        return t.schema
    if kind == "field":
        return t.schema.field(0)
    if kind == "type":
        return t.schema.field(0).type
    raise ValueError(f"unknown Arrow payload kind {kind!r}")


class _Pickler(pickle.Pickler):
    def persistent_id(self, obj):
        return _encode(obj)


class _Unpickler(pickle.Unpickler):
    def persistent_load(self, pid):
        return _decode(*pid)


def dumps(obj) -> bytes:
    buf = io.BytesIO()
    _Pickler(buf, protocol=PROTOCOL).dump(obj)
    return buf.getvalue()


def loads(data: bytes):
    return _Unpickler(io.BytesIO(data)).load()


def send(stream, obj) -> None:
    write_frame(stream, dumps(obj))


def write_frame(stream, data: bytes) -> None:
    stream.write(HEADER.pack(len(data)))
    stream.write(data)
    stream.flush()


def receive(stream):
    """The next message, or raise EOFError when the other side has gone."""
    header = stream.read(HEADER.size)
    if len(header) < HEADER.size:
        raise EOFError("the other side closed the pipe")
    (n,) = HEADER.unpack(header)
    data = stream.read(n)
    if len(data) < n:
        raise EOFError("the other side closed the pipe mid-message")
    return loads(data)
