"""Every data type as the value columns of a primary-key table, and keys of several types, in
Parquet, ORC and Avro, between Java Paimon and paimon-lab (issue #17, item 1).

The key is ``id`` BIGINT and a column of every other type Java allows in a key (any but ARRAY,
MAP, ROW, MULTISET: strings, CHAR, BINARY/VARBINARY, DATE, small and large DECIMAL, TIMESTAMP and
LTZ, TIME, BOOLEAN, TINYINT/SMALLINT, FLOAT/DOUBLE), all derived from ``id``, over three buckets
hashed on the whole key: a key whose bucket we computed differently from Java would show up twice
after the other side upserts it. The value
columns are those of the all-types table (java_rows.ALL_TYPES: small and large DECIMALs,
TIMESTAMP 0/3/6/9 and LTZ, TIME, CHAR/VARCHAR/BINARY/BYTES, nested ARRAY/MAP/ROW, NULLs in every
nullable column). One chain per format, three JVM calls:

1. paimon-lab writes, upserts (new values for a third of the keys) and deletes: Java reads the
   merge of our level-0 files;
2. Java upserts and deletes with row kinds and compacts every bucket (rewriting our files):
   paimon-lab reads Java's files;
3. paimon-lab upserts and fully compacts (rewriting Java's files): Java reads our files.
"""

from __future__ import annotations

import datetime as dt
import os
from decimal import Decimal

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pytest

from .java_rows import all_types_fields, all_types_rows, arrow_schema, lab_fields

KEY_FIELDS = [("kstr", "VARCHAR(24) NOT NULL"), ("kdate", "DATE NOT NULL"), ("kdec", "DECIMAL(12, 3) NOT NULL"),
              ("kts", "TIMESTAMP(6) NOT NULL"), ("ksmall", "SMALLINT NOT NULL"), ("kbool", "BOOLEAN NOT NULL"),
              ("ktiny", "TINYINT NOT NULL"), ("kfloat", "FLOAT NOT NULL"), ("kdouble", "DOUBLE NOT NULL"),
              ("kchar", "CHAR(4) NOT NULL"), ("kbin", "BINARY(3) NOT NULL"), ("kbytes", "VARBINARY(8) NOT NULL"),
              ("kltz", "TIMESTAMP(3) WITH LOCAL TIME ZONE NOT NULL"), ("ktime", "TIME(3) NOT NULL"),
              ("kbig", "DECIMAL(30, 2) NOT NULL")]
PRIMARY_KEYS = ["id"] + [n for n, _ in KEY_FIELDS]
N = 1_500

FORMATS = ["parquet", "orc", "avro"]
VERSIONS = ("0.9", "1.0") if os.environ.get("PAIMON_JAVA_ORACLE_FULL") else ("0.9",)
CASES = [pytest.param(v, f, id=f"java{v}-{f}") for v in VERSIONS for f in FORMATS]


def _fields(fmt: str) -> list[tuple[str, str]]:
    values = all_types_fields(fmt)
    return values[:1] + KEY_FIELDS + values[1:]


def _rows(fmt: str, ids, seed: int, java_writes: bool = False) -> pa.Table:
    """Rows for ``ids`` (values depend on ``seed``). No timestamps before 1970 in ORC (see
    test_java_all_types.test_orc_timestamps_before_1970), nor in Parquet files Java writes (Java
    cannot read back its own pre-1970 TIMESTAMP(9))."""
    ids = np.asarray(ids, dtype=np.int64)
    pre_epoch = fmt == "avro" or (fmt == "parquet" and not java_writes)
    values = all_types_rows(len(ids), seed=seed, fmt=fmt, pre_epoch=pre_epoch)
    values = values.set_column(0, "id", pa.array(ids))
    schema = arrow_schema(_fields(fmt))
    base = dt.datetime(1970, 1, 2) if fmt == "orc" else dt.datetime(1969, 12, 31, 23, 59)  # keys: same per id
    keys = {
        "kstr": pa.array([f"key-{k % 7}-\u00e9-{k}" for k in ids.tolist()]),
        "kdate": pa.array((ids % 4000 - 1000).astype(np.int32), pa.date32()),
        "kdec": pa.array([Decimal(int(k) * 1001 - 500_000).scaleb(-3) for k in ids], pa.decimal128(12, 3)),
        "kts": pa.array([base + dt.timedelta(seconds=int(k), microseconds=int(k) * 7)
                         for k in ids], pa.timestamp("us")),
        "ksmall": pa.array((ids % 3000 - 1500).astype(np.int16)),
        "kbool": pa.array(ids % 3 == 0),
        "ktiny": pa.array((ids % 200 - 100).astype(np.int8)),
        "kfloat": pa.array((ids % 97 - 48).astype(np.float32) / 4),
        "kdouble": pa.array(ids * -1.5e-3),
        "kchar": pa.array([f"c{k % 50}" for k in ids.tolist()]),
        "kbin": pa.array([bytes([k % 256, (k // 256) % 256, 7]) for k in ids.tolist()], pa.binary()),
        "kbytes": pa.array([bytes(range(k % 9)) for k in ids.tolist()], pa.binary()),
        "kltz": pa.array(ids * 86_400_123 - 10**12 * (1 if base.year < 1970 else 0), pa.timestamp("ms", "UTC")),
        "ktime": pa.array((ids * 3_600_007 % 86_400_000).astype(np.int32), pa.time32("ms")),
        "kbig": pa.array([Decimal(int(k) * 10**18 + 5).scaleb(-2) for k in ids], pa.decimal128(30, 2)),
    }
    cols = [keys[n] if n in keys else values.column(n) for n in schema.names]
    return pa.Table.from_arrays([c.cast(f.type) for c, f in zip(cols, schema)], schema=schema)


class Model:
    def __init__(self, jo):
        self.jo, self.table = jo, None

    def upsert(self, data: pa.Table) -> None:
        if self.table is not None:
            data = pa.concat_tables([self.table.filter(pc.invert(pc.is_in(self.table["id"], data["id"]))), data])
        self.table = data

    def delete(self, ids) -> None:
        self.table = self.table.filter(pc.invert(pc.is_in(self.table["id"], pa.array(ids, pa.int64()))))

    def check(self, rows: list[dict], who: str) -> None:
        got = self.jo.sort_rows(rows, "id")
        expected = self.jo.sort_rows(self.jo.canonical(self.table), "id")
        assert len(got) == len(expected), who
        for g, e in zip(got, expected):
            if g != e:  # the first differing row, column by column
                diff = [k for k in e if g.get(k) != e[k]]
                assert {k: g.get(k) for k in diff} == {k: e[k] for k in diff}, f"{who}: id {e['id']}"


@pytest.mark.compat("primary-key", "every type as value; typed keys ({fmt})", "both")
@pytest.mark.parametrize("version,fmt", CASES)
def test_pk_all_types_both_ways(jo, oracle, lab, wh, version, fmt):
    java = oracle(version)
    t = lab.create_table("db.t", fields=lab_fields(_fields(fmt)), primary_keys=PRIMARY_KEYS,
                         options={"bucket": "3", "file.format": fmt})
    rng = np.random.default_rng(11)
    model = Model(jo)
    first = _rows(fmt, rng.permutation(N), seed=1)
    t.write(first)
    model.upsert(first)
    upserts = _rows(fmt, rng.permutation(N)[: N // 3], seed=2)
    t.write(upserts)
    model.upsert(upserts)
    gone = rng.permutation(N)[:100]
    t.write(_rows(fmt, gone, seed=3), row_kinds=["-D"] * len(gone))
    model.delete(gone)
    model.check(jo.read(wh, "db.t", version=java), "Java reading paimon-lab's level-0 files")

    # Java: updates as -U/+U pairs, deletes, new keys; then compacts every bucket
    upd = rng.permutation(N)[:200]
    dels = np.setdiff1d(rng.permutation(N)[:150], upd)[:50]
    new = np.arange(N, N + 100)
    before = model.table.filter(pc.is_in(model.table["id"], pa.array(upd, pa.int64())))
    after = _rows(fmt, upd, seed=4, java_writes=True)
    added = _rows(fmt, new, seed=5, java_writes=True)
    removed = model.table.filter(pc.is_in(model.table["id"], pa.array(dels, pa.int64())))
    batch = pa.concat_tables([before, after, removed, added])
    kinds = ["-U"] * before.num_rows + ["+U"] * after.num_rows + ["-D"] * removed.num_rows + ["+I"] * added.num_rows
    jo.write(wh, "db.t", batch, row_kinds=kinds, compact=True, version=java)
    model.upsert(pa.concat_tables([after, added]))
    model.delete(dels)
    t = lab.get_table("db.t")
    assert t.snapshots()[-1].commit_kind == "COMPACT"
    model.check(jo.canonical(t.to_arrow()), "paimon-lab reading Java's compacted files")

    # paimon-lab upserts on top of Java's files and rewrites them all
    more = _rows(fmt, rng.permutation(N + 100)[:300], seed=6)
    t.write(more)
    model.upsert(more)
    assert t.compact(full=True) is not None
    model.check(jo.canonical(t.to_arrow()), "paimon-lab after its full compaction")
    model.check(jo.read(wh, "db.t", version=java), "Java reading paimon-lab's compacted files")
