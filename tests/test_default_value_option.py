"""``fields.<f>.default-value`` as Java 0.9-1.1 have it (the versions paimon-lab is checked
against): applied when reading, to every NULL of the column: an explicit NULL as well as a value a
write left out or a file written before the column was added. The files keep the NULLs, so
resetting the option shows them again (later Java dropped the option for a field's default
value, filled in by the write: the schema's ``defaultValue``, which paimon-lab also honours)."""

from __future__ import annotations

import pyarrow as pa
import pytest

from paimon_lab import Catalog
from paimon_lab.core.schema import SchemaChange

pytest.importorskip("duckdb")


def test_explicit_and_missing_nulls_read_as_the_default(tmp_path):
    from paimon_lab.sql import Session

    s = Session()
    s.run(f"CREATE CATALOG c WITH ('type'='paimon', 'warehouse'='file:{tmp_path}'); USE CATALOG c")
    s.run("CREATE TABLE t (id INT, v STRING, n INT) WITH ('fields.v.default-value'='dflt', "
          "'fields.n.default-value'='7')")
    s.run("INSERT INTO t VALUES (1, NULL, NULL)")                       # explicit NULLs
    s.run("INSERT INTO t (id) VALUES (2)")                              # left out
    s.run("INSERT INTO t VALUES (3, 'x', 1)")
    t = Catalog(str(tmp_path)).get_table("default.t")
    t.write(pa.table({"id": pa.array([4], pa.int32()), "v": pa.array([None], pa.string()),
                      "n": pa.array([None], pa.int32())}))
    t.write(pa.table({"id": pa.array([5], pa.int32())}))
    expected = [(1, "dflt", 7), (2, "dflt", 7), (3, "x", 1), (4, "dflt", 7), (5, "dflt", 7)]
    got = s.run("SELECT id, v, n FROM t ORDER BY id").to_pylist()
    assert [(r["id"], r["v"], r["n"]) for r in got] == expected
    # filters see the default, on both paths (the files' statistics hold NULLs)
    assert sorted(t.to_arrow(filter="n = 7").column("id").to_pylist()) == [1, 2, 4, 5]
    assert s.run("SELECT count(*) AS c FROM t WHERE v = 'dflt'").to_pylist() == [{"c": 4}]
    assert t.count(filter="v IS NULL") == 0
    # the files keep NULL: without the option the NULLs are back
    t.alter(SchemaChange.remove_option("fields.v.default-value"))
    assert sorted(t.to_arrow(filter="v IS NULL").column("id").to_pylist()) == [1, 2, 4, 5]
    s.close()
