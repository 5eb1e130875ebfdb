"""Tags, branches, schema evolution and expiration between Java Paimon and paimon-lab.

Each side makes the metadata (tag files, branch directories, schema files, expired snapshots) and
the other reads through it: the same rows, tag by tag and branch by branch.
"""

from __future__ import annotations

import pyarrow as pa
import pytest

from paimon_lab import SchemaChange

FIELDS = [("k", "BIGINT NOT NULL"), ("v", "STRING")]
SCHEMA = pa.schema([pa.field("k", pa.int64(), nullable=False), ("v", pa.string())])


def _batch(lo: int, hi: int, tag: str) -> pa.Table:
    return pa.table({"k": pa.array(range(lo, hi), pa.int64()), "v": [f"{tag}{i}" for i in range(lo, hi)]},
                    schema=SCHEMA)


def _same(jo, java_rows: list[dict], lab: pa.Table) -> None:
    assert jo.sort_rows(java_rows, "k") == jo.sort_rows(jo.canonical(lab), "k")


@pytest.mark.compat("lifecycle", "tags after expiration", "lab writes; Java reads")
def test_java_reads_lab_tags_after_expiration(jo, java, lab, wh):
    t = lab.create_table("db.t", SCHEMA, primary_keys=["k"], options={"bucket": "2"})
    t.write(_batch(0, 100, "a"))
    t.create_tag("first")
    t.write(_batch(50, 150, "b"))
    t.create_tag("second")
    t.write(_batch(0, 10, "c"), row_kinds=["-D"] * 10)
    t.expire_snapshots(retain_max=1, retain_min=1)
    assert [s.id for s in t.snapshots()] == [3]  # the tags' snapshots live only in their tag files
    for tag in ("first", "second"):
        _same(jo, jo.read(wh, "db.t", tag=tag, version=java), t.to_arrow(tag=tag))
    _same(jo, jo.read(wh, "db.t", version=java), t.to_arrow())


@pytest.mark.compat("lifecycle", "tags", "Java writes; lab reads")
def test_lab_reads_java_tags(jo, java, lab, wh):
    jo.create(wh, "db.t", FIELDS, primary_keys=["k"], options={"bucket": "2"}, version=java)
    jo.write(wh, "db.t", _batch(0, 100, "a"), version=java)
    jo.create_tag(wh, "db.t", "first", version=java)
    jo.write(wh, "db.t", _batch(50, 150, "b"), version=java)
    t = lab.get_table("db.t")
    assert [g.name for g in t.tags()] == ["first"]
    assert t.to_arrow(tag="first").sort_by("k").equals(_batch(0, 100, "a"))
    _same(jo, jo.read(wh, "db.t", version=java), t.to_arrow())


@pytest.mark.compat("lifecycle", "branches", "both")
def test_branches_both_ways(jo, java, lab, wh):
    t = lab.create_table("db.t", SCHEMA, primary_keys=["k"], options={"bucket": "1"})
    t.write(_batch(0, 20, "main"))
    t.create_tag("base")
    t.write(_batch(0, 5, "main2"))
    b = t.create_branch("dev", tag="base")
    b.write(_batch(100, 110, "dev"))
    # Java reads our branch and our main, each as we see them
    _same(jo, jo.read(wh, "db.t$branch_dev", version=java), b.to_arrow())
    _same(jo, jo.read(wh, "db.t", version=java), t.to_arrow())
    # Java writes to the branch; we read its commit there and main stays as it was
    jo.write(wh, "db.t$branch_dev", _batch(0, 3, "java"), row_kinds=["+U"] * 3, version=java)
    dev = lab.get_table("db.t$branch_dev")
    expected = pa.concat_tables([_batch(0, 3, "java"), _batch(3, 20, "main"), _batch(100, 110, "dev")])
    assert dev.to_arrow().sort_by("k").equals(expected)
    _same(jo, jo.read(wh, "db.t$branch_dev", version=java), dev.to_arrow())
    assert t.to_arrow().sort_by("k").equals(pa.concat_tables([_batch(0, 5, "main2"), _batch(5, 20, "main")]))


@pytest.mark.compat("lifecycle", "schema evolution", "lab evolves; Java reads, writes")
def test_schema_evolution_read_and_continued_by_java(jo, java, lab, wh):
    t = lab.create_table("db.t", pa.schema([pa.field("k", pa.int64(), nullable=False), ("v", pa.int32()),
                                            ("gone", pa.string())]), primary_keys=["k"], options={"bucket": "1"})
    t.write(pa.table({"k": [1, 2], "v": pa.array([10, 20], pa.int32()), "gone": ["x", "y"]}))
    t.alter(SchemaChange.add_column("extra", "STRING"), SchemaChange.rename_column("v", "value"),
            SchemaChange.update_column_type("value", "BIGINT"), SchemaChange.drop_column("gone"))
    t.write(pa.table({"k": [2, 3], "value": [21, 30], "extra": ["e2", "e3"]}))
    assert [f["name"] for f in jo.schema(wh, "db.t", version=java)["fields"]] == ["k", "value", "extra"]
    _same(jo, jo.read(wh, "db.t", version=java), t.to_arrow())
    # Java writes with the evolved schema and compacts files of both schemas into one
    jo.write(wh, "db.t", [{"k": 1, "value": 11, "extra": "java"}], compact=True, version=java)
    got = lab.get_table("db.t").to_arrow().sort_by("k").to_pylist()
    assert got == [{"k": 1, "value": 11, "extra": "java"}, {"k": 2, "value": 21, "extra": "e2"},
                   {"k": 3, "value": 30, "extra": "e3"}]


@pytest.mark.compat("lifecycle", "snapshot expiration", "lab expires; Java writes")
def test_java_continues_after_lab_expiration(jo, java, lab, wh):
    t = lab.create_table("db.t", SCHEMA, options={"bucket": "-1"})
    for i in range(5):
        t.write(_batch(i * 10, i * 10 + 10, "a"))
    t.expire_snapshots(retain_max=2, retain_min=1)
    assert [s.id for s in t.snapshots()] == [4, 5]
    jo.write(wh, "db.t", _batch(50, 60, "java"), version=java)
    ids = [s["id"] for s in jo.snapshots(wh, "db.t", version=java)]
    assert ids == [4, 5, 6]
    got = lab.get_table("db.t").to_arrow()
    assert got.num_rows == 60
    _same(jo, jo.read(wh, "db.t", version=java), got)
