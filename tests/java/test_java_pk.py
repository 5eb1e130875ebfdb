"""Primary-key tables of realistic size between Java Paimon and paimon-lab.

60,000 keys in 2 partitions x 3 buckets (10,000 rows per data file), arriving unsorted, then
upserts and deletes; the other side reads, upserts and fully compacts (merging the first side's
LSM files into its own), and the first side reads the result. Before paimon-lab wrote Parquet the
way Java does, Java failed on such files ("Unsupported encoding: DELTA_BINARY_PACKED" for the
`_KEY_*` / `_SEQUENCE_NUMBER` columns).
"""

from __future__ import annotations

import os

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest

from paimon_lab.mergetree.spill import SpillDirectory

from .java_rows import PK_FIELDS, lab_fields, pk_rows

KEYS = 60_000
OPTIONS = {"bucket": "3"}
# Parquet (the default); PAIMON_JAVA_ORACLE_FULL=1 adds ORC and Avro
PK_FORMATS = ["parquet"] + (["orc", "avro"] if os.environ.get("PAIMON_JAVA_ORACLE_FULL") else [])


class Model:
    """What the table should hold, as an Arrow table (keys are unique within each batch)."""

    def __init__(self, jo):
        self.jo, self.table = jo, None

    def upsert(self, data: pa.Table) -> None:
        if self.table is None:
            self.table = data
        else:
            self.table = pa.concat_tables([self.table.filter(pc.invert(pc.is_in(self.table["k"], data["k"]))), data])

    def delete(self, keys) -> None:
        self.table = self.table.filter(pc.invert(pc.is_in(self.table["k"], pa.array(keys, pa.int64()))))

    def check(self, got: pa.Table) -> None:
        """``got``: what paimon-lab read."""
        got, expected = got.sort_by("k"), self.table.sort_by("k")
        assert got.schema == expected.schema
        assert got.num_rows == expected.num_rows
        assert [n for n in got.column_names if not got.column(n).equals(expected.column(n))] == []

    def check_java(self, rows: list[dict]) -> None:
        """``rows``: what Java read (canonical rows)."""
        got = self.jo.sort_rows(rows, "k")
        expected = self.jo.sort_rows(self.jo.canonical(self.table), "k")
        assert len(got) == len(expected)
        assert got == expected


def _fields(fmt: str) -> list[tuple[str, str]]:
    # Java's Avro format has no TIMESTAMP(7..9)
    return [f for f in PK_FIELDS if not (fmt == "avro" and f[0] == "at9")]


def _rows(keys, version: int, fmt: str) -> pa.Table:
    rows = pk_rows(keys, version)
    return rows.drop_columns(["at9"]) if fmt == "avro" else rows


def _keys(n: int, seed: int) -> np.ndarray:
    return np.random.default_rng(seed).permutation(n).astype(np.int64)


@pytest.mark.compat("primary-key", "60,000 keys, 2 partitions x 3 buckets ({fmt})", "lab writes; Java reads, compacts")
@pytest.mark.parametrize("fmt", PK_FORMATS)
def test_java_reads_lab_primary_key_table(jo, java, lab, wh, fmt):
    t = lab.create_table("db.pk", fields=lab_fields(_fields(fmt)), primary_keys=["k", "part"],
                         partition_keys=["part"], options={**OPTIONS, "file.format": fmt})
    model = Model(jo)
    first = _rows(_keys(KEYS, 1), 1, fmt)
    t.write(first)
    model.upsert(first)
    updates = _rows(_keys(KEYS, 2)[:15_000], 2, fmt)
    t.write(updates)
    model.upsert(updates)
    gone = _rows(_keys(KEYS, 3)[:1_000], 3, fmt)
    t.write(gone, row_kinds=["-D"] * gone.num_rows)
    model.delete(gone.column("k").to_pylist())
    files = [os.path.join(d, f) for d, _, fs in os.walk(t.path) for f in fs if f.startswith("data-")]
    assert len(files) == 18
    if fmt == "parquet":
        assert max(pq.ParquetFile(f).metadata.num_rows for f in files) > 9_000
        for f in files:  # only encodings Java 0.9's vectorized reader decodes
            meta = pq.ParquetFile(f).metadata
            assert {e for c in range(meta.num_columns) for e in meta.row_group(0).column(c).encodings} <= \
                {"PLAIN", "RLE", "RLE_DICTIONARY", "BIT_PACKED"}
    model.check_java(jo.read(wh, "db.pk", version=java))

    # Java upserts and deletes, then fully compacts every bucket (merging our three levels)
    more = _rows(_keys(KEYS, 4)[:5_000], 4, fmt)
    kinds = ["+U"] * 4_000 + ["-D"] * 1_000
    jo.write(wh, "db.pk", more, row_kinds=kinds, compact=True, version=java)
    model.upsert(more.slice(0, 4_000))
    model.delete(more.column("k").to_pylist()[4_000:])
    t = lab.get_table("db.pk")
    assert t.snapshots()[-1].commit_kind == "COMPACT"
    model.check(t.to_arrow())


@pytest.mark.compat("primary-key", "60,000 keys, 2 partitions x 3 buckets ({fmt})", "Java writes; lab reads, compacts")
@pytest.mark.parametrize("fmt", PK_FORMATS)
def test_lab_reads_java_primary_key_table(jo, java, lab, wh, fmt):
    jo.create(wh, "db.pk", _fields(fmt), partition_keys=["part"], primary_keys=["k", "part"],
              options={**OPTIONS, "file.format": fmt}, version=java)
    model = Model(jo)
    first = _rows(_keys(KEYS, 5), 5, fmt)
    jo.write(wh, "db.pk", first, version=java)
    model.upsert(first)
    t = lab.get_table("db.pk")
    model.check(t.to_arrow())

    # we upsert and delete, then fully compact (merging Java's files into ours)
    updates = _rows(_keys(KEYS, 6)[:10_000], 6, fmt)
    t.write(updates)
    model.upsert(updates)
    gone = _rows(_keys(KEYS, 7)[:2_000], 7, fmt)
    t.write(gone, row_kinds=["-D"] * gone.num_rows)
    model.delete(gone.column("k").to_pylist())
    assert t.compact(full=True) is not None
    model.check(t.to_arrow())
    model.check_java(jo.read(wh, "db.pk", version=java))


@pytest.mark.compat("compaction", "full compaction upgrades a lone level-0 file", "lab compacts; Java reads, compacts")
def test_full_compaction_upgrades_a_lone_level0_file(jo, java, lab, wh):
    """A fresh level-0 file that overlaps nothing is moved to the top level by metadata only, as
    Java does (the 004 walkthrough: one DELETE and one ADD of the same data file): the COMPACT
    snapshot deletes it at level 0 and adds the same file name at the max level; Java reads it
    and, after its own upsert and full compaction, merges it."""
    schema = pa.schema([pa.field("k", pa.int64(), nullable=False), ("v", pa.string()),
                        pa.field("part", pa.string(), nullable=False)])
    t = lab.create_table("db.up", schema, partition_keys=["part"], primary_keys=["k", "part"],
                         options={"bucket": "1"})
    rows = pa.table({"k": pa.array(range(100), pa.int64()), "v": [f"v{i}" for i in range(100)],
                     "part": ["a"] * 100}, schema=schema)
    t.write(rows)
    before = t.levels()
    assert before["level"].tolist() == [0]
    assert t.compact(full=True) is not None
    snap = t.latest_snapshot()
    mio = t.store.manifest_io
    delta = [e for m in mio.read_manifest_list(snap.delta_manifest_list) for e in mio.read_manifest(m.file_name)]
    top = t.store.num_levels - 1
    name = before["file_name"].iloc[0]
    assert sorted((e.kind, e.file.file_name, e.file.level) for e in delta) == [(0, name, top), (1, name, 0)]
    got = sorted((int(r["k"]), r["v"]) for r in jo.read(wh, "db.up", version=java))
    assert got == [(i, f"v{i}") for i in range(100)]
    jo.write(wh, "db.up", rows.slice(0, 10).set_column(1, "v", pa.array(["w"] * 10)), compact=True, version=java)
    out = lab.get_table("db.up").to_arrow().sort_by("k")
    assert out["v"].to_pylist() == ["w"] * 10 + [f"v{i}" for i in range(10, 100)]


@pytest.mark.compat("primary-key", "a spilled write buffer's merged runs", "lab writes; Java reads, compacts")
def test_java_reads_lab_spilled_write_buffer(jo, java, lab, wh, monkeypatch):
    """One writer whose small buffer spills sorted runs (overlapping keys, deletes): the runs
    merged into one level-0 run per bucket are what Java reads, and Java's full compaction of
    them (with its own upserts) is what we read back."""
    t = lab.create_table("db.sp", fields=lab_fields(_fields("parquet")), primary_keys=["k", "part"],
                         partition_keys=["part"], options={**OPTIONS, "write-buffer-size": "256 kb"})
    model = Model(jo)
    spilled = []
    real = SpillDirectory.write
    monkeypatch.setattr(SpillDirectory, "write", lambda self, kv: spilled.append(kv.num_rows) or real(self, kv))
    with t.writer() as w:
        for i in range(6):
            batch = _rows(_keys(KEYS // 4, 10 + i)[:4_000], 10 + i, "parquet")
            w.write(batch)
            model.upsert(batch)
        gone = _rows(_keys(KEYS // 4, 20)[:500], 20, "parquet")
        w.write(gone, row_kinds=["-D"] * gone.num_rows)
        model.delete(gone.column("k").to_pylist())
    assert len(spilled) > 6
    lv = t.levels()
    assert set(lv["level"]) == {0} and len(lv) == 6   # one run per bucket (2 partitions x 3 buckets)
    model.check(t.to_arrow())
    model.check_java(jo.read(wh, "db.sp", version=java))
    more = _rows(_keys(KEYS // 4, 30)[:2_000], 30, "parquet")
    jo.write(wh, "db.sp", more, compact=True, version=java)
    model.upsert(more)
    model.check(lab.get_table("db.sp").to_arrow())
