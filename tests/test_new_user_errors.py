"""A new user's wrong input to the Python API: each mistake raises an error of
paimon_lab.errors that names it, not a bare AttributeError/TypeError/ArrowInvalid from inside."""

from __future__ import annotations

import pyarrow as pa
import pytest

from paimon_lab import SchemaChange, Table
from paimon_lab.errors import (ArgumentError, DataValidationError, OptionError, PaimonLabError, TableNotExistError,
                               TagError)

SCHEMA = pa.schema([pa.field("id", pa.int64(), nullable=False), ("v", pa.string()),
                    pa.field("dt", pa.string(), nullable=False)])


@pytest.fixture
def t(lab):
    table = lab.create_table("db.t", SCHEMA, primary_keys=["id", "dt"], partition_keys=["dt"],
                             options={"bucket": "1"})
    table.write({"id": [1, 2], "v": ["a", "b"], "dt": ["x", "y"]})
    return table


@pytest.mark.parametrize("data, message", [
    ([1, 2, 3], "A list is written as rows, each a dict of column -> value; row 0 is int 1"),
    ([{"id": 3, "dt": "x"}, "oops"], "row 1 is str 'oops'"),
    ({"id": 3, "dt": "x"}, "maps each column to a list of values; column 'id' holds int 3"),
    ({"id": [3, 4], "dt": ["x"]}, r"The columns have different lengths: \{'id': 2, 'dt': 1\}"),
])
def test_write_names_data_that_is_not_columns(t, data, message):
    with pytest.raises(DataValidationError, match=message):
        t.write(data)


def test_read_arguments(t):
    assert t.to_arrow(columns="v").column_names == ["v"]          # one column by name
    with pytest.raises(ArgumentError, match="limit must be at least 0, got -1"):
        t.to_arrow(limit=-1)
    with pytest.raises(ArgumentError, match="limit must be an integer, not str 'ten'"):
        t.to_arrow(limit="ten")
    with pytest.raises(ArgumentError, match="start_snapshot must be an integer, not str 'a'"):
        t.changes("a")


def test_keys_given_as_a_string(lab):
    t = lab.create_table("db.k", SCHEMA, primary_keys="id, dt", partition_keys="dt")
    assert (t.primary_keys, t.partition_keys) == (["id", "dt"], ["dt"])


def test_open_names_the_path(tmp_path):
    with pytest.raises(TableNotExistError, match=f"Table '{tmp_path}/nowhere' does not exist"):
        Table.open(str(tmp_path / "nowhere"))


@pytest.mark.parametrize("options, message", [
    ({"snapshot.num-retained.max": "0"},
     r"'snapshot.num-retained.min' \(10\) must not be greater than 'snapshot.num-retained.max' \(0\)"),
    ({"changelog.num-retained.max": "3"},
     r"'changelog.num-retained.min' \(10\) \(taken from 'snapshot.num-retained.min'\) must not be greater "
     r"than 'changelog.num-retained.max' \(3\)"),
    ({"num-levels": "1"}, "'num-levels' must be at least 2, got 1"),
    ({"num-sorted-run.compaction-trigger": "0"}, "'num-sorted-run.compaction-trigger' must be at least 1"),
])
def test_option_values_java_refuses(lab, options, message):
    with pytest.raises(OptionError, match=message):
        lab.create_table("db.o", SCHEMA, primary_keys=["id", "dt"], options={"bucket": "1", **options})


def test_maintenance_arguments(t):
    with pytest.raises(ArgumentError, match="alter\\(\\) takes SchemaChange objects .* not str 'bucket=2'"):
        t.alter("bucket=2")
    t.alter(SchemaChange.set_option("snapshot.num-retained.max", "20"))
    with pytest.raises(ArgumentError, match="partition is a dict .* not str 'dt=x'"):
        t.compact(partition="dt=x")
    with pytest.raises(ArgumentError, match="Give the partitions to drop as dicts"):
        t.drop_partitions("dt=x")
    with pytest.raises(ArgumentError, match="Give the partitions to drop as dicts"):
        t.drop_partitions([])
    t.drop_partitions({"dt": "y"})                    # one partition as a dict
    assert t.to_arrow().column("dt").to_pylist() == ["x"]
    with pytest.raises(ArgumentError, match="merge_into\\(\\) needs an action"):
        t.merge_into({"id": [1], "v": ["b"], "dt": ["x"]}, on=["id"])
    with pytest.raises(TagError, match="time retained must be positive, got -5"):
        t.create_tag("x", time_retained_seconds=-5)
    assert t.tags() == []


def test_stream_arguments(t):
    with pytest.raises(ArgumentError, match="timeout is a number of seconds .* not str 'abc'"):
        next(iter(t.stream(timeout="abc")))
    with pytest.raises(ArgumentError, match="consumer_id is a non-empty string, not int 5"):
        next(iter(t.stream(consumer_id=5, timeout=0)))


def test_argument_errors_are_paimon_lab_errors():
    assert issubclass(ArgumentError, PaimonLabError)
    assert issubclass(ArgumentError, TypeError) and issubclass(ArgumentError, ValueError)


def test_write_and_time_travel_arguments(t):
    with pytest.raises(ArgumentError, match="watermark must be an integer, not str 'soon'"):
        t.write({"id": [3], "dt": ["x"]}, watermark="soon")
    with pytest.raises(ArgumentError, match=r"row_kinds is a list with one row kind per row .* not str '\+I'"):
        t.write({"id": [3], "dt": ["x"]}, row_kinds="+I")
    with pytest.raises(ArgumentError, match="timestamp_millis must be an integer, not str 'yesterday'"):
        t.to_arrow(timestamp_millis="yesterday")
    with pytest.raises(ArgumentError, match="timestamp_millis must be an integer, not datetime"):
        t.count(timestamp_millis=__import__("datetime").datetime.now())
    import numpy as np
    assert t.to_arrow(timestamp_millis=np.int64(t.latest_snapshot().time_millis)).num_rows == 2
    t.create_tag("a")
    with pytest.raises(ArgumentError, match="older_than is a datetime .* not str '2024-01-01'"):
        t.expire_tags("2024-01-01")
    assert [g.name for g in t.tags()] == ["a"]
