"""A new user's pass over tags, branches, rollback and expiration, through the SQL procedures as
the Paimon docs write them and through the Python API: documented arguments do what they say,
refused ones and wrong values raise errors naming them."""

from __future__ import annotations

import pyarrow as pa
import pytest

from paimon_lab import Catalog
from paimon_lab.errors import ArgumentError, PaimonLabError, TagError
from paimon_lab.sql import Session, SqlError

pytest.importorskip("duckdb")


@pytest.fixture
def s(tmp_path):
    session = Session()
    session.run(f"CREATE CATALOG paimon WITH ('type' = 'paimon', 'warehouse' = '{tmp_path}/wh'); USE CATALOG paimon;")
    session.run("CREATE TABLE t (id INT, v STRING, PRIMARY KEY (id) NOT ENFORCED) WITH ('bucket' = '1')")
    for i in range(1, 4):
        session.run(f"INSERT INTO t VALUES ({i}, 'v{i}')")
    yield session
    session.close()


def rows(s, q):
    return sorted(tuple(r.values()) for r in s.execute(q).to_pylist())


def test_cast_arguments_as_the_docs_write_them(s):
    s.execute("CALL sys.create_tag(`table` => 'default.t', tag => 'my_tag', snapshot_id => cast(2 as bigint), "
              "time_retained => '1 d')")
    assert rows(s, "SELECT tag_name, snapshot_id FROM `t$tags`") == [("my_tag", 2)]
    s.execute("CALL sys.reset_consumer(`table` => 'default.t', consumer_id => 'myid', "
              "next_snapshot_id => CAST(3 AS BIGINT))")
    assert rows(s, "SELECT consumer_id, next_snapshot_id FROM `t$consumers`") == [("myid", 3)]
    s.execute("CALL sys.rollback_to('default.t', CAST(2 AS BIGINT))")   # a number: a snapshot, not a tag
    assert rows(s, "SELECT id FROM t") == [(1,), (2,)]
    with pytest.raises(SqlError, match="Cannot cast 'x' to BIGINT"):
        s.execute("CALL sys.create_tag('default.t', 'n', CAST('x' AS BIGINT))")


def test_integer_arguments_name_a_bad_value(s):
    for call, arg in (("sys.create_tag(`table` => 'default.t', tag => 'y', snapshot_id => 'abc')", "snapshot_id"),
                      ("sys.expire_snapshots(`table` => 'default.t', retain_max => 'abc')", "retain_max"),
                      ("sys.rollback_to_watermark('default.t', 'soon')", "watermark"),
                      ("sys.reset_consumer('default.t', 'c', 'next')", "next_snapshot_id")):
        with pytest.raises(SqlError, match=f"argument '{arg}' must be an integer"):
            s.execute(f"CALL {call}")


def test_remove_orphan_files_checks_mode_and_parallelism(s):
    out = s.execute("CALL sys.remove_orphan_files(`table` => 'default.t', older_than => '2023-10-31 12:00:00', "
                    "dry_run => false, parallelism => '5', mode => 'local')")
    assert out["result"].to_pylist() == ["0"]
    with pytest.raises(SqlError, match="unknown mode 'bogus'"):
        s.execute("CALL sys.remove_orphan_files(`table` => 'default.t', mode => 'bogus')")
    with pytest.raises(SqlError, match="'parallelism' must be an integer"):
        s.execute("CALL sys.remove_orphan_files(`table` => 'default.t', parallelism => 'many')")
    with pytest.raises(SqlError, match="'parallelism' must be at least 1"):
        s.execute("CALL sys.remove_orphan_files(`table` => 'default.t', parallelism => 0)")


def test_compact_refuses_the_arguments_it_does_not_honour(s):
    for arg, value in (("options", "'write-only=true'"), ("options", "'sink.parallelism=x'"),
                       ("partition_idle_time", "'1 d'"), ("order_by", "'id'"), ("compact_strategy", "'major'")):
        with pytest.raises(SqlError, match=f"'?{arg}'? |{arg} '"):
            s.execute(f"CALL sys.compact(`table` => 'default.t', {arg} => {value})")
    # the docs' Flink 1.18 example: '' for the arguments not given, the job's parallelism
    s.execute("CALL sys.compact('default.t', '', '', '', 'sink.parallelism=4')")
    assert rows(s, "SELECT commit_kind FROM `t$snapshots` WHERE snapshot_id = 4") == [("COMPACT",)]


def test_delete_tag_and_branch_lists_delete_nothing_when_a_name_is_wrong(s):
    s.execute("CALL sys.create_tag('default.t', 'a', 1)")
    s.execute("CALL sys.create_branch('default.t', 'b1')")
    with pytest.raises(SqlError, match="tag 'nope' does not exist; nothing was deleted"):
        s.execute("CALL sys.delete_tag(`table` => 'default.t', tag => 'a,nope')")
    assert rows(s, "SELECT tag_name FROM `t$tags`") == [("a",)]
    with pytest.raises(SqlError, match="branch 'nope' does not exist; nothing was deleted"):
        s.execute("CALL sys.delete_branch('default.t', 'b1,nope')")
    assert rows(s, "SELECT branch_name FROM `t$branches`") == [("b1",)]
    with pytest.raises(SqlError, match="Branch 'zz' does not exist"):
        s.execute("CALL sys.fast_forward(`table` => 'default.t', branch => 'zz')")


def test_python_api_names_wrong_arguments(tmp_path):
    cat = Catalog(str(tmp_path / "wh"))
    cat.create_database("default")
    t = cat.create_table("default.t", pa.schema([("id", pa.int64())]))
    t.write({"id": [1]})
    t.write({"id": [2]})
    t.create_tag("a", 1)
    with pytest.raises(ArgumentError, match="retain_max must be an integer, not str 'abc'"):
        t.expire_snapshots(retain_max="abc")
    with pytest.raises(ArgumentError, match="max_deletes must be at least 0"):
        t.expire_snapshots(max_deletes=-1)
    with pytest.raises(ArgumentError, match="older_than_millis must be an integer"):
        t.remove_orphan_files(older_than_millis="yesterday")
    with pytest.raises(ArgumentError, match="retain_min must be an integer"):
        t.expire_changelogs(retain_min=1.5)
    with pytest.raises(ArgumentError, match="from a tag or from a snapshot, not both"):
        t.create_branch("b", tag="a", snapshot_id=2)
    assert t.branches() == []
    with pytest.raises(PaimonLabError, match="Branch 'nope' does not exist"):
        t.fast_forward("nope")
    with pytest.raises(TagError, match="A tag name is a string, not int 5"):
        t.create_tag(5)
