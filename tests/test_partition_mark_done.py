"""'partition.mark-done-action' and CALL sys.mark_partition_done: a '_SUCCESS' file per partition,
Java's JSON of its creation and modification time."""

from __future__ import annotations

import json
import os

import pyarrow as pa
import pytest

from paimon_lab.errors import DataValidationError, OptionError
from paimon_lab.sql import Session
from paimon_lab.utils.clock import use_clock

SCHEMA = pa.schema([("id", pa.int64()), ("dt", pa.string()), ("hh", pa.int32())])


def _table(lab, **options):
    t = lab.create_table("db.t", SCHEMA, partition_keys=["dt", "hh"], options=options)
    t.write(pa.table({"id": [1, 2], "dt": ["2024-01-01", "2024-01-02"], "hh": pa.array([1, 2], pa.int32())}))
    return t


def _success(t, directory):
    with open(os.path.join(t.path, directory, "_SUCCESS")) as f:
        return f.read()


def test_success_file_keeps_its_creation_time(lab):
    t = _table(lab)
    with use_clock(1000):
        assert t.mark_partitions_done([{"dt": "2024-01-01", "hh": 1}]) == ["dt=2024-01-01/hh=1"]
    assert _success(t, "dt=2024-01-01/hh=1") == '{\n  "creationTime" : 1000,\n  "modificationTime" : 1000\n}'
    with use_clock(5000):
        t.mark_partitions_done([{"dt": "2024-01-01", "hh": "1"}, {"dt": "2024-01-02"}])
    assert json.loads(_success(t, "dt=2024-01-01/hh=1")) == {"creationTime": 1000, "modificationTime": 5000}
    assert json.loads(_success(t, "dt=2024-01-02")) == {"creationTime": 5000, "modificationTime": 5000}
    assert sorted(t.to_arrow()["id"].to_pylist()) == [1, 2]


def test_call_mark_partition_done(lab, wh):
    t = _table(lab, **{"partition.mark-done-action": "success-file"})
    s = Session()
    s.run(f"CREATE CATALOG p WITH ('type' = 'paimon', 'warehouse' = '{wh}'); USE CATALOG p")
    out = s.execute("CALL sys.mark_partition_done('db.t', 'dt=2024-01-01,hh=1;dt=2024-01-02,hh=2')")
    assert out.column(0).to_pylist() == ["Success"]
    assert os.path.exists(os.path.join(t.path, "dt=2024-01-01/hh=1/_SUCCESS"))
    assert os.path.exists(os.path.join(t.path, "dt=2024-01-02/hh=2/_SUCCESS"))
    with pytest.raises(Exception, match="not partition keys"):
        s.execute("CALL sys.mark_partition_done('db.t', 'day=1')")


def test_metastore_actions_and_bad_input_are_refused(lab):
    for value in ("http-report", "success-file,custom", ""):
        with pytest.raises(OptionError, match="partition.mark-done-action"):
            lab.create_table(f"db.x{len(value)}", SCHEMA, partition_keys=["dt"],
                             options={"partition.mark-done-action": value})
    t = lab.create_table("db.plain", SCHEMA)
    with pytest.raises(DataValidationError, match="partitioned"):
        t.mark_partitions_done([{"dt": "x"}])


def test_end_input_to_done_marks_the_partitions_a_batch_write_wrote(lab):
    t = _table(lab, **{"partition.end-input-to-done": "true"})     # the first write: two partitions
    assert os.path.exists(os.path.join(t.path, "dt=2024-01-01/hh=1/_SUCCESS"))
    assert os.path.exists(os.path.join(t.path, "dt=2024-01-02/hh=2/_SUCCESS"))
    t.write(pa.table({"id": [3], "dt": ["2024-01-03"], "hh": pa.array([None], pa.int32())}))
    assert os.path.exists(os.path.join(t.path, "dt=2024-01-03/hh=__DEFAULT_PARTITION__/_SUCCESS"))
    off = lab.create_table("db.off", SCHEMA, partition_keys=["dt"])
    off.write(pa.table({"id": [1], "dt": ["x"], "hh": pa.array([1], pa.int32())}))
    assert not os.path.exists(os.path.join(off.path, "dt=x/_SUCCESS"))


def test_end_input_to_done_in_a_first_row_table_marks_what_the_compaction_lifted(lab):
    schema = pa.schema([pa.field("id", pa.int64(), nullable=False), pa.field("dt", pa.string(), nullable=False)])
    t = lab.create_table("db.fr", schema, primary_keys=["id", "dt"], partition_keys=["dt"], options={
        "bucket": "1", "merge-engine": "first-row", "partition.end-input-to-done": "true"})
    t.write(pa.table({"id": [1], "dt": ["a"]}, schema=schema))
    assert os.path.exists(os.path.join(t.path, "dt=a/_SUCCESS"))


def test_metastore_actions_need_a_hive_catalog(lab):
    t = _table(lab, **{"partition.mark-done-action": "success-file,done-partition"})
    with pytest.raises(OptionError, match="Hive catalog"):
        t.mark_partitions_done([{"dt": "2024-01-01", "hh": 1}])


def test_a_write_whose_partitions_cannot_be_marked_fails_before_it_commits(lab):
    t = lab.create_table("db.ev", SCHEMA, partition_keys=["dt"], options={
        "partition.end-input-to-done": "true", "partition.mark-done-action": "success-file,done-partition"})
    with pytest.raises(OptionError, match="Hive catalog"):
        t.write(pa.table({"id": [1], "dt": ["a"], "hh": pa.array([1], pa.int32())}))
    assert t.latest_snapshot() is None       # nothing committed: retrying cannot write the rows twice


def test_specs_name_leading_keys_and_write_values_as_directories_do(lab):
    t = _table(lab)
    with pytest.raises(DataValidationError, match="first keys"):
        t.mark_partitions_done([{"hh": 1}])
    assert t.mark_partitions_done([{"dt": "2024-01-03", "hh": None}]) == ["dt=2024-01-03/hh=__DEFAULT_PARTITION__"]
    assert os.path.exists(os.path.join(t.path, "dt=2024-01-03/hh=__DEFAULT_PARTITION__/_SUCCESS"))
