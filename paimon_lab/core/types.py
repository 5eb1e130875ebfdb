"""Paimon data types: the type strings of schema files, their JSON form and Arrow types.

A type is an immutable value. Atomic types print as Paimon writes them in ``schema-N``
(``INT NOT NULL``, ``DECIMAL(10, 2)``, ``TIMESTAMP(6) WITH LOCAL TIME ZONE``); nested types
(ARRAY, MAP, MULTISET, ROW) are JSON objects in schema files and ``ARRAY<INT>`` in SQL text.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field, replace
from typing import Any, Iterable, Iterator

import pyarrow as pa
import pyarrow.compute as pc

from paimon_lab.errors import UnsupportedTypeError

MAX_LENGTH = 2147483647

_DEFAULTS: dict[str, dict[str, int]] = {
    "CHAR": {"length": 1},
    "VARCHAR": {"length": 1},
    "BINARY": {"length": 1},
    "VARBINARY": {"length": 1},
    "DECIMAL": {"precision": 10, "scale": 0},
    "TIME": {"precision": 0},
    "TIMESTAMP": {"precision": 6},
    "TIMESTAMP_LTZ": {"precision": 6},
}
_PLAIN = ("BOOLEAN", "TINYINT", "SMALLINT", "INT", "BIGINT", "FLOAT", "DOUBLE", "DATE")
_ALIASES = {"INTEGER": "INT", "DEC": "DECIMAL", "NUMERIC": "DECIMAL", "BOOL": "BOOLEAN",
            "LONG": "BIGINT", "SHORT": "SMALLINT", "BYTE": "TINYINT", "REAL": "FLOAT",
            "TIMESTAMP_NTZ": "TIMESTAMP"}


class DataType:
    """Base of all Paimon data types."""

    root: str
    nullable: bool

    def copy(self, nullable: bool) -> "DataType":
        return replace(self, nullable=nullable)

    def _suffix(self) -> str:
        return "" if self.nullable else " NOT NULL"

    def to_json(self) -> Any:
        return str(self)

    def to_arrow(self) -> pa.DataType:
        raise NotImplementedError

    @property
    def is_nested(self) -> bool:
        return self.root in ("ARRAY", "MAP", "MULTISET", "ROW")


@dataclass(frozen=True)
class AtomicType(DataType):
    """Any non-nested type. ``length`` for CHAR/VARCHAR/BINARY/VARBINARY, ``precision`` and
    ``scale`` for DECIMAL, ``precision`` for TIME/TIMESTAMP/TIMESTAMP_LTZ."""

    root: str
    nullable: bool = True
    length: int | None = None
    precision: int | None = None
    scale: int | None = None

    def __str__(self) -> str:
        r = self.root
        if r == "VARCHAR" and self.length == MAX_LENGTH:
            body = "STRING"
        elif r == "VARBINARY" and self.length == MAX_LENGTH:
            body = "BYTES"
        elif r in ("CHAR", "VARCHAR", "BINARY", "VARBINARY"):
            body = f"{r}({self.length})"
        elif r == "DECIMAL":
            body = f"DECIMAL({self.precision}, {self.scale})"
        elif r in ("TIME", "TIMESTAMP"):
            body = f"{r}({self.precision})"
        elif r == "TIMESTAMP_LTZ":
            body = f"TIMESTAMP({self.precision}) WITH LOCAL TIME ZONE"
        else:
            body = r
        return body + self._suffix()

    def to_arrow(self) -> pa.DataType:
        r = self.root
        simple = {"BOOLEAN": pa.bool_(), "TINYINT": pa.int8(), "SMALLINT": pa.int16(),
                  "INT": pa.int32(), "BIGINT": pa.int64(), "FLOAT": pa.float32(),
                  "DOUBLE": pa.float64(), "DATE": pa.date32(), "TIME": pa.time32("ms"),
                  "CHAR": pa.string(), "VARCHAR": pa.string(),
                  "BINARY": pa.binary(), "VARBINARY": pa.binary()}
        if r in simple:
            return simple[r]
        if r == "DECIMAL":
            return pa.decimal128(self.precision, self.scale)
        if r in ("TIMESTAMP", "TIMESTAMP_LTZ"):
            return pa.timestamp(timestamp_unit(self.precision), tz="UTC" if r == "TIMESTAMP_LTZ" else None)
        raise UnsupportedTypeError(f"No Arrow type for {self}")


@dataclass(frozen=True)
class DataField:
    """A named, numbered field of a row type or table schema."""

    id: int
    name: str
    type: DataType
    description: str | None = None
    default_value: str | None = None   # the schema JSON's "defaultValue", as Java keeps it (a literal's text)

    def to_json(self) -> dict:
        out = {"id": self.id, "name": self.name, "type": self.type.to_json()}
        if self.description is not None:
            out["description"] = self.description
        if self.default_value is not None:
            out["defaultValue"] = self.default_value
        return out

    @staticmethod
    def from_json(obj: dict) -> "DataField":
        return DataField(obj["id"], obj["name"], type_from_json(obj["type"]), obj.get("description"),
                         obj.get("defaultValue"))

    def to_arrow(self) -> pa.Field:
        meta = {b"description": self.description.encode()} if self.description else None
        return pa.field(self.name, self.type.to_arrow(), nullable=self.type.nullable, metadata=meta)


@dataclass(frozen=True)
class ArrayType(DataType):
    element: DataType
    nullable: bool = True
    root: str = field(default="ARRAY", init=False)

    def __str__(self) -> str:
        return f"ARRAY<{self.element}>{self._suffix()}"

    def to_json(self) -> Any:
        return {"type": "ARRAY" + self._suffix(), "element": self.element.to_json()}

    def to_arrow(self) -> pa.DataType:
        return pa.list_(pa.field("element", self.element.to_arrow(), nullable=self.element.nullable))


@dataclass(frozen=True)
class MultisetType(DataType):
    """A bag of elements; stored as a map from element to its count (INT NOT NULL)."""

    element: DataType
    nullable: bool = True
    root: str = field(default="MULTISET", init=False)

    def __str__(self) -> str:
        return f"MULTISET<{self.element}>{self._suffix()}"

    def to_json(self) -> Any:
        return {"type": "MULTISET" + self._suffix(), "element": self.element.to_json()}

    def to_arrow(self) -> pa.DataType:
        return pa.map_(self.element.to_arrow(), pa.field("value", pa.int32(), nullable=False))


@dataclass(frozen=True)
class MapType(DataType):
    key: DataType
    value: DataType
    nullable: bool = True
    root: str = field(default="MAP", init=False)

    def __str__(self) -> str:
        return f"MAP<{self.key}, {self.value}>{self._suffix()}"

    def to_json(self) -> Any:
        return {"type": "MAP" + self._suffix(), "key": self.key.to_json(), "value": self.value.to_json()}

    def to_arrow(self) -> pa.DataType:
        return pa.map_(pa.field("key", self.key.to_arrow(), nullable=False),
                       pa.field("value", self.value.to_arrow(), nullable=self.value.nullable))


@dataclass(frozen=True)
class RowType(DataType):
    fields: tuple[DataField, ...]
    nullable: bool = True
    root: str = field(default="ROW", init=False)

    def __str__(self) -> str:
        inner = ", ".join(f"`{f.name}` {f.type}" for f in self.fields)
        return f"ROW<{inner}>{self._suffix()}"

    def to_json(self) -> Any:
        return {"type": "ROW" + self._suffix(), "fields": [f.to_json() for f in self.fields]}

    def to_arrow(self) -> pa.DataType:
        return pa.struct([f.to_arrow() for f in self.fields])


def timestamp_unit(precision: int) -> str:
    if precision == 0:
        return "s"
    if precision <= 3:
        return "ms"
    if precision <= 6:
        return "us"
    return "ns"


_UNIT_DIGITS = {"s": 0, "ms": 3, "us": 6, "ns": 9}


def truncate_timestamps(column: "pa.Array | pa.ChunkedArray", precision: int) -> "pa.Array | pa.ChunkedArray":
    """Timestamps with the digits below ``precision`` dropped, as Java's ``DateTimeUtils.truncate``
    (Flink's cast into a TIMESTAMP(p) / TIMESTAMP_LTZ(p) column): below the millisecond toward the
    earlier time, and for p < 3 the epoch milliseconds toward zero; the unit stays."""
    digits = _UNIT_DIGITS[column.type.unit]
    if precision >= digits:
        return column
    ints = pc.cast(column, pa.int64())

    def toward_zero(values, factor: int):
        return pc.multiply(pc.divide(values, factor), factor)   # Arrow's integer division does

    def floor(values, factor: int):
        back = toward_zero(values, factor)
        return pc.subtract(back, pc.if_else(pc.and_(pc.less(values, 0), pc.not_equal(back, values)), factor, 0))

    out = floor(ints, 10 ** (digits - max(precision, 3))) if digits > 3 else ints
    if precision < 3:
        to_millis = 10 ** max(digits - 3, 0)
        out = pc.multiply(toward_zero(pc.divide(out, to_millis), 10 ** (3 - precision)), to_millis)
    return pc.cast(out, column.type)

def atomic(root: str, nullable: bool = True, **params: int) -> AtomicType:
    """Build an atomic type, filling Paimon's default length/precision/scale."""
    root = _ALIASES.get(root.upper(), root.upper())
    if root == "STRING":
        root, params = "VARCHAR", {"length": MAX_LENGTH}
    elif root == "BYTES":
        root, params = "VARBINARY", {"length": MAX_LENGTH}
    if root not in _PLAIN and root not in _DEFAULTS:
        raise UnsupportedTypeError(f"Unknown data type '{root}'")
    merged = {**_DEFAULTS.get(root, {}), **params}
    if root == "DECIMAL" and not (1 <= merged["precision"] <= 38 and 0 <= merged["scale"] <= merged["precision"]):
        raise UnsupportedTypeError(f"Invalid DECIMAL({merged['precision']}, {merged['scale']})")
    if root in ("TIMESTAMP", "TIMESTAMP_LTZ", "TIME") and not 0 <= merged["precision"] <= 9:
        raise UnsupportedTypeError(f"Invalid {root} precision {merged['precision']}")
    return AtomicType(root, nullable, **merged)


# ---------------------------------------------------------------- parsing type strings

_TOKEN = re.compile(r"\s*(?:(`(?:[^`]|``)*`)|([A-Za-z_][A-Za-z0-9_]*)|(\d+)|(<|>|\(|\)|,|'(?:[^']|'')*'))")


class _Tokens:
    def __init__(self, text: str):
        self.text = text
        self.items: list[str] = []
        pos = 0
        while pos < len(text):
            if text[pos:].strip() == "":
                break
            m = _TOKEN.match(text, pos)
            if not m:
                raise UnsupportedTypeError(f"Cannot parse data type '{text}' at position {pos}")
            self.items.append(m.group(m.lastindex))
            pos = m.end()
        self.i = 0

    def peek(self, upper: bool = True) -> str | None:
        if self.i >= len(self.items):
            return None
        tok = self.items[self.i]
        return tok.upper() if upper else tok

    def take(self, expected: str | None = None) -> str:
        tok = self.peek(upper=False)
        if tok is None or (expected is not None and tok.upper() != expected):
            raise UnsupportedTypeError(f"Cannot parse data type '{self.text}': expected {expected or 'more'}")
        self.i += 1
        return tok

    def take_int(self) -> int:
        tok = self.take()
        if not tok.isdigit():
            raise UnsupportedTypeError(f"Cannot parse data type '{self.text}': '{tok}' is not a number")
        return int(tok)


def parse_type(text: str) -> DataType:
    """Parse a Paimon/SQL type string such as ``'VARCHAR(10) NOT NULL'`` or ``'MAP<STRING, INT>'``."""
    toks = _Tokens(text)
    counter = [0]
    dt = _parse(toks, counter)
    if toks.peek() is not None:
        raise UnsupportedTypeError(f"Cannot parse data type '{text}': unexpected '{toks.peek(False)}'")
    return dt


def _parse_nullability(toks: _Tokens) -> bool:
    if toks.peek() == "NOT":
        toks.take()
        toks.take("NULL")
        return False
    if toks.peek() == "NULL":
        toks.take()
    return True


def _parse(toks: _Tokens, counter: list[int]) -> DataType:
    name = toks.take().upper()
    name = _ALIASES.get(name, name)
    if name in ("ARRAY", "MULTISET"):
        toks.take("<")
        elem = _parse(toks, counter)
        toks.take(">")
        cls = ArrayType if name == "ARRAY" else MultisetType
        return cls(elem, _parse_nullability(toks))
    if name == "MAP":
        toks.take("<")
        key = _parse(toks, counter)
        toks.take(",")
        value = _parse(toks, counter)
        toks.take(">")
        return MapType(key, value, _parse_nullability(toks))
    if name == "ROW":
        toks.take("<")
        fields = []
        while True:
            fname = toks.take()
            if fname.startswith("`"):
                fname = fname[1:-1].replace("``", "`")
            ftype = _parse(toks, counter)
            desc = None
            if toks.peek(False) and toks.peek(False).startswith("'"):
                desc = toks.take()[1:-1].replace("''", "'")
            fields.append(DataField(counter[0], fname, ftype, desc))
            counter[0] += 1
            if toks.peek() == ",":
                toks.take()
                continue
            toks.take(">")
            break
        return RowType(tuple(fields), _parse_nullability(toks))
    params: list[int] = []
    if toks.peek() == "(":
        toks.take()
        params.append(toks.take_int())
        while toks.peek() == ",":
            toks.take()
            params.append(toks.take_int())
        toks.take(")")
    if name == "TIMESTAMP" and toks.peek() in ("WITH", "WITHOUT"):
        with_tz = toks.take().upper() == "WITH"
        if with_tz:
            toks.take("LOCAL")
        toks.take("TIME")
        toks.take("ZONE")
        if with_tz:
            name = "TIMESTAMP_LTZ"
    if name == "DOUBLE" and toks.peek() == "PRECISION":
        toks.take()
    kw: dict[str, int] = {}
    if params:
        if name in ("CHAR", "VARCHAR", "BINARY", "VARBINARY"):
            kw["length"] = params[0]
        elif name == "DECIMAL":
            kw["precision"] = params[0]
            kw["scale"] = params[1] if len(params) > 1 else 0
        elif name in ("TIME", "TIMESTAMP", "TIMESTAMP_LTZ"):
            kw["precision"] = params[0]
        else:
            raise UnsupportedTypeError(f"Type {name} takes no parameters")
    return atomic(name, _parse_nullability(toks), **kw)


def type_from_json(obj: Any) -> DataType:
    """Read a type as it appears in a schema file (a string, or an object for nested types)."""
    if isinstance(obj, str):
        return parse_type(obj)
    if not isinstance(obj, dict) or "type" not in obj:
        raise UnsupportedTypeError(f"Not a data type: {obj!r}")
    head = str(obj["type"]).strip()
    nullable = not head.upper().endswith("NOT NULL")
    root = head.split()[0].upper()
    if root == "ARRAY":
        return ArrayType(type_from_json(obj["element"]), nullable)
    if root == "MULTISET":
        return MultisetType(type_from_json(obj["element"]), nullable)
    if root == "MAP":
        return MapType(type_from_json(obj["key"]), type_from_json(obj["value"]), nullable)
    if root == "ROW":
        return RowType(tuple(DataField.from_json(f) for f in obj["fields"]), nullable)
    return parse_type(head)


# ---------------------------------------------------------------- Arrow conversion

def from_arrow(t: pa.DataType, nullable: bool = True) -> DataType:
    """The Paimon type for an Arrow type (strings become STRING, binaries BYTES)."""
    import pyarrow.types as pt

    if pt.is_boolean(t):
        return atomic("BOOLEAN", nullable)
    for check, name in ((pt.is_int8, "TINYINT"), (pt.is_int16, "SMALLINT"), (pt.is_int32, "INT"),
                        (pt.is_int64, "BIGINT"), (pt.is_float32, "FLOAT"), (pt.is_float64, "DOUBLE"),
                        (pt.is_date32, "DATE")):
        if check(t):
            return atomic(name, nullable)
    if pt.is_uint8(t):
        return atomic("SMALLINT", nullable)
    if pt.is_uint16(t):
        return atomic("INT", nullable)
    if pt.is_uint32(t):
        return atomic("BIGINT", nullable)
    if pt.is_string(t) or pt.is_large_string(t) or (hasattr(pt, "is_string_view") and pt.is_string_view(t)):
        return atomic("STRING", nullable)
    if pt.is_fixed_size_binary(t):
        return atomic("BINARY", nullable, length=t.byte_width)
    if pt.is_binary(t) or pt.is_large_binary(t):
        return atomic("BYTES", nullable)
    if pt.is_decimal(t):
        return atomic("DECIMAL", nullable, precision=t.precision, scale=t.scale)
    if pt.is_timestamp(t):
        precision = {"s": 0, "ms": 3, "us": 6, "ns": 9}[t.unit]
        return atomic("TIMESTAMP_LTZ" if t.tz else "TIMESTAMP", nullable, precision=precision)
    if pt.is_date64(t):
        return atomic("DATE", nullable)
    if pt.is_time(t):
        precision = {"s": 0, "ms": 3, "us": 6, "ns": 9}[t.unit]
        return atomic("TIME", nullable, precision=min(precision, 3))
    if pt.is_list(t) or pt.is_large_list(t):
        return ArrayType(from_arrow(t.value_type, t.value_field.nullable), nullable)
    if pt.is_map(t):
        return MapType(from_arrow(t.key_type, False), from_arrow(t.item_type, t.item_field.nullable), nullable)
    if pt.is_struct(t):
        fields = tuple(DataField(-1, t.field(i).name, from_arrow(t.field(i).type, t.field(i).nullable))
                       for i in range(t.num_fields))
        return RowType(fields, nullable)
    if pt.is_dictionary(t):
        return from_arrow(t.value_type, nullable)
    raise UnsupportedTypeError(f"Arrow type {t} has no Paimon equivalent")


def assign_field_ids(dt: DataType, next_id: Iterator[int]) -> DataType:
    """Give every nested ROW field a fresh id from ``next_id`` (parents before children)."""
    if isinstance(dt, RowType):
        fields = []
        for f in dt.fields:
            fid = next(next_id)
            fields.append(DataField(fid, f.name, assign_field_ids(f.type, next_id), f.description))
        return RowType(tuple(fields), dt.nullable)
    if isinstance(dt, (ArrayType, MultisetType)):
        return replace(dt, element=assign_field_ids(dt.element, next_id))
    if isinstance(dt, MapType):
        return replace(dt, key=assign_field_ids(dt.key, next_id), value=assign_field_ids(dt.value, next_id))
    return dt


def fields_from_arrow(schema: pa.Schema) -> list[DataField]:
    """Table fields for an Arrow schema, numbered 0.. with nested fields numbered after their parent."""
    ids = iter(range(1 << 30))
    out = []
    for f in schema:
        fid = next(ids)
        dt = assign_field_ids(from_arrow(f.type, f.nullable), ids)
        desc = f.metadata.get(b"description").decode() if f.metadata and b"description" in f.metadata else None
        out.append(DataField(fid, f.name, dt, desc))
    return out


def max_field_id(fields: Iterable[DataField]) -> int:
    """The highest field id used anywhere, nested fields included (-1 for none)."""
    best = -1
    for f in fields:
        best = max(best, f.id, _max_nested_id(f.type))
    return best


def _max_nested_id(dt: DataType) -> int:
    if isinstance(dt, RowType):
        return max_field_id(dt.fields)
    if isinstance(dt, (ArrayType, MultisetType)):
        return _max_nested_id(dt.element)
    if isinstance(dt, MapType):
        return max(_max_nested_id(dt.key), _max_nested_id(dt.value))
    return -1


def arrow_schema(fields: Iterable[DataField]) -> pa.Schema:
    return pa.schema([f.to_arrow() for f in fields])
