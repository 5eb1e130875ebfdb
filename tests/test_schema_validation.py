"""Schemas Java Paimon's SchemaValidation refuses are refused at create and at alter, with an
error from the project's hierarchy that names the problem (tests/java/test_java_differential.py
checks the same cases against Java itself)."""

from __future__ import annotations

import pyarrow as pa
import pytest

from paimon_lab import Catalog
from paimon_lab.core.schema import SchemaChange
from paimon_lab.errors import OptionError, SchemaError

SCHEMA = pa.schema([("k", pa.int64()), ("part", pa.int32()), ("n", pa.int64()), ("s", pa.string()),
                    ("arr", pa.list_(pa.int32()))])
PK = ["k", "part"]

# id: (primary keys, partition keys, options, extra column, error, words of the message)
REFUSED = {
    "producer-without-pk": ([], ["part"], {"changelog-producer": "input", "bucket": "-1"}, None, OptionError,
                            "needs a primary key"),
    "overwrite-lookup": (PK, ["part"], {"streaming-read-overwrite": "true", "changelog-producer": "lookup"}, None,
                         OptionError, "duplicate changes"),
    "overwrite-without-pk": ([], ["part"], {"streaming-read-overwrite": "true", "bucket": "-1"}, None, OptionError,
                             "needs a primary key"),
    "snapshot-min-0": (PK, ["part"], {"snapshot.num-retained.min": "0"}, None, OptionError, "at least 1"),
    "changelog-min-above-max": (PK, ["part"], {"changelog.num-retained.min": "5", "changelog.num-retained.max": "3"},
                                None, OptionError, "must not be greater"),
    "snapshot-min-above-max": (PK, ["part"], {"snapshot.num-retained.min": "5", "snapshot.num-retained.max": "3"},
                               None, OptionError, r"'snapshot.num-retained.min' \(5\) must not be greater"),
    "changelog-min-above-default-max": (PK, ["part"], {"snapshot.num-retained.min": "1", "snapshot.num-retained.max": "3",
                                                       "changelog.num-retained.min": "5"}, None,
                                        OptionError, r"'changelog.num-retained.max' \(3\)"),
    "expiration-unpartitioned": (PK, [], {"partition.expiration-time": "1 d"}, None, OptionError, "partitioned"),
    "first-row-input": (PK, ["part"], {"merge-engine": "first-row", "changelog-producer": "input"}, None,
                        OptionError, "'none' or 'lookup'"),
    "dv-full-compaction": (PK, ["part"], {"deletion-vectors.enabled": "true",
                                          "changelog-producer": "full-compaction"}, None, OptionError, "Deletion vectors"),
    "dv-first-row": (PK, ["part"], {"deletion-vectors.enabled": "true", "merge-engine": "first-row"}, None,
                     OptionError, "first-row"),
    "from-timestamp-without-time": (PK, ["part"], {"scan.mode": "from-timestamp"}, None, OptionError,
                                    "exactly one of"),
    "latest-with-snapshot": (PK, ["part"], {"scan.mode": "latest", "scan.snapshot-id": "1"}, None, OptionError,
                             "must not be set"),
    "snapshot-and-timestamp": (PK, ["part"], {"scan.snapshot-id": "1", "scan.timestamp-millis": "5"}, None,
                               OptionError, "must not be set"),
    "unknown-field-option": (PK, ["part"], {"merge-engine": "aggregation", "fields.nope.aggregate-function": "sum"},
                             None, OptionError, "'nope' is not a column"),
    "aggregated-sequence-field": (PK, ["part"], {"sequence.field": "n", "merge-engine": "aggregation",
                                                 "fields.n.aggregate-function": "sum"}, None, OptionError,
                                  "aggregate function"),
    "repeated-sequence-field": (PK, ["part"], {"sequence.field": "n,n"}, None, OptionError, "more than once"),
    "cross-partition-sequence-field": (["k"], ["part"], {"sequence.field": "n", "bucket": "-1"}, None, OptionError,
                                       "between partitions"),
    "aggregated-group-sequence": (PK, ["part"], {"merge-engine": "partial-update", "fields.n.sequence-group": "s",
                                                 "fields.n.aggregate-function": "sum"}, None, OptionError,
                                  "aggregate function"),
    "column-in-two-groups": (PK, ["part"], {"merge-engine": "partial-update", "fields.n.sequence-group": "s",
                                            "fields.arr.sequence-group": "s"}, None, OptionError, "more than one sequence group"),
    "dynamic-bucket-key": (PK, ["part"], {"bucket": "-1", "bucket-key": "k"}, None, OptionError, "bucket count"),
    "unaware-full-compaction-commits": ([], ["part"], {"bucket": "-1", "full-compaction.delta-commits": "1"}, None,
                                        OptionError, "full-compaction.delta-commits"),
    "nested-bucket-key": ([], ["part"], {"bucket": "2", "bucket-key": "arr"}, None, OptionError, "nested type"),
    "array-primary-key": (["k", "part", "arr"], ["part"], {}, None, SchemaError, "Primary key column 'arr'"),
    "reserved-column": (PK, ["part"], {}, ("_SEQUENCE_NUMBER", pa.int64()), SchemaError, "reserved"),
    "key-prefix-column": (PK, ["part"], {}, ("_KEY_k", pa.int64()), SchemaError, "_KEY_"),
}


@pytest.fixture
def catalog(tmp_path):
    c = Catalog(str(tmp_path))
    c.create_database("db")
    return c


@pytest.mark.parametrize("case", REFUSED, ids=list(REFUSED))
def test_create_refuses_what_java_refuses(catalog, case):
    pk, parts, options, extra, error, words = REFUSED[case]
    schema = SCHEMA.append(pa.field(*extra)) if extra else SCHEMA
    with pytest.raises(error, match=words):
        catalog.create_table("db.t", schema, primary_keys=pk, partition_keys=parts, options=options)
    assert not catalog.table_exists("db.t")


def test_alter_refuses_what_java_refuses(catalog):
    catalog.create_table("db.t", SCHEMA, primary_keys=PK, partition_keys=["part"],
                         options={"merge-engine": "first-row"})
    table = catalog.get_table("db.t")
    with pytest.raises(OptionError, match="'none' or 'lookup'"):
        table.alter(SchemaChange.set_option("changelog-producer", "input"))
    with pytest.raises(OptionError, match="at least 1"):
        table.alter(SchemaChange.set_option("snapshot.num-retained.min", "0"))
    assert "changelog-producer" not in catalog.get_table("db.t").schema.options
    catalog.get_table("db.t").alter(SchemaChange.set_option("changelog-producer", "lookup"))   # Java takes this
    assert catalog.get_table("db.t").schema.options["changelog-producer"] == "lookup"


def test_accepted_neighbours(catalog):
    """The valid neighbours of the refused cases still create."""
    catalog.create_table("db.a", SCHEMA, primary_keys=PK, partition_keys=["part"],
                         options={"deletion-vectors.enabled": "true", "changelog-producer": "input",
                                  "scan.mode": "from-snapshot", "scan.snapshot-id": "1",
                                  "sequence.field": "n", "partition.expiration-time": "1 d"})
    catalog.create_table("db.b", SCHEMA, primary_keys=PK, partition_keys=["part"],
                         options={"merge-engine": "aggregation", "fields.default-aggregate-function": "last_value",
                                  "fields.n.aggregate-function": "sum", "changelog.num-retained.min": "3"})
    catalog.create_table("db.c", SCHEMA, partition_keys=["part"], options={"bucket": "2", "bucket-key": "k"})


@pytest.mark.parametrize("column", [pa.timestamp("ns"), pa.timestamp("ns", tz="UTC"),
                                    pa.list_(pa.struct([("t", pa.timestamp("ns"))]))])
def test_avro_refuses_nanosecond_timestamps(catalog, column):
    schema = pa.schema([("k", pa.int64()), ("t", column)])
    with pytest.raises(SchemaError, match="Avro"):
        catalog.create_table("db.t", schema, options={"file.format": "avro"})
    catalog.create_table("db.t", schema, options={"file.format": "parquet"})
    with pytest.raises(SchemaError, match="Avro"):
        catalog.get_table("db.t").alter(SchemaChange.set_option("file.format", "avro"))


@pytest.mark.parametrize("key,value", [("ignore-delete", "true"), ("rowkind.field", "s"),
                                       ("partial-update.remove-record-on-delete", "true")])
def test_java_immutable_options_are_not_altered(catalog, key, value):
    catalog.create_table("db.t", SCHEMA, primary_keys=PK, partition_keys=["part"])
    with pytest.raises(SchemaError, match=key):
        catalog.get_table("db.t").alter(SchemaChange.set_option(key, value))
