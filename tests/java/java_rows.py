"""Rows for the Java-oracle tests: one table with every Paimon type, and a primary-key table.

Values are generated with numpy from a seed, so both sides (paimon-lab and Java, which gets the
same rows as JSON) write exactly the same data; every nullable column is NULL in about one row
in ten. Integer, decimal and timestamp columns are (almost) all distinct, the case in which
Parquet writers drop their dictionaries and the encodings differ between engines.
"""

from __future__ import annotations

import datetime as dt
from decimal import Decimal

import numpy as np
import pyarrow as pa

from paimon_lab.core.types import DataField, parse_type

# (name, Paimon type); TIMESTAMP(7..9) columns are left out for Avro (Java's Avro format
# rejects them: Avro timestamps stop at microseconds).
ALL_TYPES = [
    ("id", "BIGINT NOT NULL"),
    ("tiny", "TINYINT"),
    ("small", "SMALLINT"),
    ("i", "INT"),
    ("big", "BIGINT"),
    ("f", "FLOAT"),
    ("d", "DOUBLE"),
    ("flag", "BOOLEAN"),
    ("dec5", "DECIMAL(5, 2)"),
    ("dec9", "DECIMAL(9, 3)"),
    ("dec18", "DECIMAL(18, 4)"),
    ("dec38", "DECIMAL(38, 10)"),
    ("ts0", "TIMESTAMP(0)"),
    ("ts3", "TIMESTAMP(3)"),
    ("ts6", "TIMESTAMP(6)"),
    ("ts9", "TIMESTAMP(9)"),
    ("ltz3", "TIMESTAMP(3) WITH LOCAL TIME ZONE"),
    ("ltz6", "TIMESTAMP(6) WITH LOCAL TIME ZONE"),
    ("ltz9", "TIMESTAMP(9) WITH LOCAL TIME ZONE"),
    ("day", "DATE"),
    ("tod", "TIME(3)"),
    ("ch", "CHAR(5)"),
    ("vc", "VARCHAR(20)"),
    ("s", "STRING"),
    ("bin", "BINARY(4)"),
    ("bytes", "BYTES"),
    ("arr", "ARRAY<INT>"),
    ("m", "MAP<STRING, BIGINT>"),
    ("r", "ROW<x INT, y STRING, z ARRAY<DECIMAL(10, 2)>>"),
    ("nested", "ARRAY<ROW<k STRING, v MAP<INT, TIMESTAMP(6)>>>"),
]
NANOS_TYPES = {"ts9", "ltz9", "rn"}
# TIMESTAMP(9) inside a ROW and an ARRAY (nested INT96 columns in Parquet). Not in ALL_TYPES:
# Java Paimon 0.9/1.0 cannot read such columns back from its own Parquet files (its nested
# column reader fails decoding their dictionary), so they only go from us to Java.
NESTED_NANOS = ("rn", "ROW<t TIMESTAMP(9), a ARRAY<TIMESTAMP(9) WITH LOCAL TIME ZONE>>")


def all_types_fields(fmt: str = "parquet", nested_nanos: bool = False) -> list[tuple[str, str]]:
    extra = [NESTED_NANOS] if nested_nanos else []
    return [(n, t) for n, t in ALL_TYPES + extra if not (fmt == "avro" and n in NANOS_TYPES)]


def lab_fields(fields: list[tuple[str, str]]) -> list[DataField]:
    return [DataField(i, n, parse_type(t)) for i, (n, t) in enumerate(fields)]


def arrow_schema(fields: list[tuple[str, str]]) -> pa.Schema:
    return pa.schema([f.to_arrow() for f in lab_fields(fields)])


_EPOCH_2024 = 1_704_067_200  # 2024-01-01T00:00:00Z


def all_types_rows(n: int, start: int = 0, seed: int = 0, fmt: str = "parquet", pre_epoch: bool = True,
                   nested_nanos: bool = False) -> pa.Table:
    """``n`` rows with ids ``start..start+n-1``; timestamps from 1964 to 2044 (from 1971 without
    ``pre_epoch``)."""
    fields = all_types_fields(fmt, nested_nanos)
    rng = np.random.default_rng(seed)
    ids = np.arange(start, start + n, dtype=np.int64)
    null = lambda: rng.random(n) < 0.1  # noqa: E731
    low = -60 * 365 * 86400 if pre_epoch else -53 * 365 * 86400
    secs = _EPOCH_2024 + rng.integers(low, 20 * 365 * 86400, n)  # 1964 (or 1971)..2044
    nanos = rng.integers(0, 1_000_000_000, n)
    cols: dict[str, pa.Array] = {}

    def ts(unit: str, tz: str | None) -> pa.Array:
        div = {"s": 1_000_000_000, "ms": 1_000_000, "us": 1_000, "ns": 1}[unit]
        vals = secs * (1_000_000_000 // div) + nanos // div
        return pa.array(vals, pa.timestamp(unit, tz), mask=null())

    def dec(precision: int, scale: int) -> pa.Array:
        digits = rng.integers(0, 10 ** min(precision, 18), n, dtype=np.int64)
        sign = np.where(rng.random(n) < 0.3, -1, 1)
        vals = []
        for i in range(n):
            unscaled = int(digits[i]) * int(sign[i])
            if precision > 18:
                unscaled = unscaled * 10 ** (precision - 18) + int(ids[i]) % 10 ** (precision - 18)
            vals.append(Decimal(unscaled).scaleb(-scale))
        return pa.array(vals, pa.decimal128(precision, scale), mask=null())

    cols["id"] = pa.array(ids)
    cols["tiny"] = pa.array(rng.integers(-128, 128, n).astype(np.int8), mask=null())
    cols["small"] = pa.array(rng.integers(-32768, 32768, n).astype(np.int16), mask=null())
    cols["i"] = pa.array((ids * 7919 - 1_000_000).astype(np.int32), mask=null())
    cols["big"] = pa.array(rng.integers(-(1 << 62), 1 << 62, n), mask=null())
    cols["f"] = pa.array(rng.standard_normal(n).astype(np.float32), mask=null())
    cols["d"] = pa.array(rng.standard_normal(n) * 1e6, mask=null())
    cols["flag"] = pa.array(rng.random(n) < 0.5, mask=null())
    cols["dec5"] = dec(5, 2)
    cols["dec9"] = dec(9, 3)
    cols["dec18"] = dec(18, 4)
    cols["dec38"] = dec(38, 10)
    cols["ts0"] = ts("s", None)
    cols["ts3"] = ts("ms", None)
    cols["ts6"] = ts("us", None)
    cols["ts9"] = ts("ns", None)
    cols["ltz3"] = ts("ms", "UTC")
    cols["ltz6"] = ts("us", "UTC")
    cols["ltz9"] = ts("ns", "UTC")
    cols["day"] = pa.array((secs // 86400).astype(np.int32), pa.date32(), mask=null())
    cols["tod"] = pa.array(rng.integers(0, 86_400_000, n).astype(np.int32), pa.time32("ms"), mask=null())
    words = np.array(["oslo", "rome", "lima", "kyiv", "pune", "bonn"])
    cols["ch"] = pa.array(words[rng.integers(0, len(words), n)], mask=null())
    cols["vc"] = pa.array([f"v-{k}-\u00e9\u4e2d" for k in ids], mask=null())
    cols["s"] = pa.array([f"row {k} of {seed}" * int(k % 3) for k in ids], mask=null())
    raw = rng.integers(0, 256, (n, 4), dtype=np.uint8)
    cols["bin"] = pa.array([bytes(r) for r in raw], pa.binary(), mask=null())
    cols["bytes"] = pa.array([bytes(raw[i][: i % 5]) for i in range(n)], pa.binary(), mask=null())
    arr_null, m_null, r_null, nested_null = null(), null(), null(), null()
    arr, m, r, nested = [], [], [], []
    for i in range(n):
        k = int(ids[i])
        arr.append(None if arr_null[i] else [k, None, -k][: k % 4])
        m.append(None if m_null[i] else [(f"k{j}", k * j if j else None) for j in range(k % 3)])
        r.append(None if r_null[i] else {"x": k if k % 5 else None, "y": f"y{k % 7}",
                                         "z": [Decimal(k % 1000).scaleb(-2), None][: k % 3]})
        nested.append(None if nested_null[i] else [
            {"k": f"n{k}", "v": [(j, dt.datetime(2024, 1, 1) + dt.timedelta(microseconds=k * 1001 + j))
                                 for j in range(k % 3)]}
            for _ in range(k % 2)])
    cols["arr"] = pa.array(arr, pa.list_(pa.int32()))
    cols["m"] = pa.array(m, pa.map_(pa.string(), pa.int64()))
    schema = arrow_schema(fields)
    cols["r"] = pa.array(r, schema.field("r").type)
    cols["nested"] = pa.array(nested, schema.field("nested").type)
    if "rn" in schema.names:  # TIMESTAMP(9) inside a ROW and an ARRAY: nested INT96 columns
        t_null = (ids % 7 == 0)
        t_ns = pa.array(secs * 1_000_000_000 + nanos, pa.timestamp("ns"), mask=t_null)
        offsets = np.concatenate([[0], np.cumsum(ids % 3)]).astype(np.int32)
        a_vals = pa.array(np.repeat(secs, ids % 3) * 1_000_000_000 + 7, pa.timestamp("ns", "UTC"))
        a_list = pa.ListArray.from_arrays(pa.array(offsets), a_vals, type=schema.field("rn").type.field("a").type)
        cols["rn"] = pa.StructArray.from_arrays([t_ns, a_list], fields=list(schema.field("rn").type),
                                                mask=pa.array(ids % 11 == 0))
    return pa.Table.from_arrays([cols[name].cast(schema.field(name).type) for name, _ in fields], schema=schema)


PK_FIELDS = [("k", "BIGINT NOT NULL"), ("part", "INT NOT NULL"), ("name", "STRING"),
             ("amount", "DECIMAL(12, 2)"), ("qty", "INT"), ("at", "TIMESTAMP(6)"), ("at9", "TIMESTAMP(9)")]


def pk_rows(keys: np.ndarray, version: int) -> pa.Table:
    """Rows for keys ``keys`` (a permutation: keys arrive unsorted); ``version`` changes the values."""
    n = len(keys)
    rng = np.random.default_rng(version)
    schema = arrow_schema(PK_FIELDS)
    keys = np.asarray(keys, dtype=np.int64)
    return pa.Table.from_arrays([
        pa.array(keys),
        pa.array((keys % 2).astype(np.int32)),
        pa.array([f"name-{k}-v{version}" for k in keys]),
        pa.array([Decimal(int(k) * 100 + version).scaleb(-2) for k in keys], pa.decimal128(12, 2)),
        pa.array(rng.integers(0, 1000, n).astype(np.int32), mask=rng.random(n) < 0.05),
        pa.array(_EPOCH_2024 * 1_000_000 + keys * 1_000 + version, pa.timestamp("us")),
        pa.array(_EPOCH_2024 * 1_000_000_000 + keys * 1_000_003 + version, pa.timestamp("ns")),
    ], schema=schema)
