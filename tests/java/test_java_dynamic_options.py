"""Java 0.9 as the oracle for dynamic options and ``fields.<f>.default-value``: a read with
options Java's ``FileStoreTable.copy`` refuses is refused by paimon-lab's OPTIONS hint too, and the
option fills explicit NULLs as well as left-out columns when Java reads paimon-lab's files."""

from __future__ import annotations

import pyarrow as pa
import pytest

from paimon_lab.errors import OptionError
from paimon_lab.core.schema import with_dynamic_options

SCHEMA = pa.schema([pa.field("k", pa.int64(), nullable=False), ("v", pa.string()), ("n", pa.int32())])


def test_java_and_lab_agree_on_defaults_and_refused_dynamic_options(jo, java09, lab, wh):
    t = lab.create_table("db.t", SCHEMA, options={"fields.v.default-value": "dflt", "fields.n.default-value": "7"})
    t.write(pa.table({"k": pa.array([1, 2], pa.int64()), "v": pa.array([None, "x"], pa.string()),
                      "n": pa.array([None, 1], pa.int32())}, schema=SCHEMA))
    t.write(pa.table({"k": pa.array([3], pa.int64())}))  # v and n left out
    java_rows = jo.sort_rows(jo.read(wh, "db.t", version=java09), "k")
    assert [(r["k"], r["v"], r["n"]) for r in java_rows] == [(1, "dflt", 7), (2, "x", 1), (3, "dflt", 7)]
    assert jo.sort_rows(jo.canonical(t.to_arrow()), "k") == java_rows
    refused = [{"scan.mode": "latest", "scan.snapshot-id": "1"},
               {"scan.snapshot-id": "1", "scan.tag-name": "nope"},
               {"fields.nope.default-value": "1"}]
    for options in refused:
        with pytest.raises(jo.OracleError):
            jo.read(wh, "db.t", options=options, version=java09)
        with pytest.raises(OptionError):
            with_dynamic_options(t.schema, options)
    assert jo.read(wh, "db.t", options={"scan.snapshot-id": "1"}, version=java09)  # accepted by both
    with_dynamic_options(t.schema, {"scan.snapshot-id": "1"})
