"""Types, options, schema and snapshot files, catalog operations, and damaged metadata."""

import json
import os

import pyarrow as pa
import pytest
from hypothesis import given, strategies as st

from paimon_lab import Catalog
from paimon_lab.core import types as T
from paimon_lab.core.manifest import MANIFEST_CACHE
from paimon_lab.errors import (CorruptFileError, DatabaseAlreadyExistError, DatabaseNotEmptyError,
                               DatabaseNotExistError, InvalidIdentifierError, OptionError, SchemaError,
                               TableAlreadyExistError, TableNotExistError, UnsupportedTypeError)
from paimon_lab.core.schema import TableSchema
from paimon_lab.core.snapshot import Snapshot
from conftest import make_rows

ALL_TYPES = [
    "BOOLEAN", "TINYINT", "SMALLINT", "INT", "BIGINT", "FLOAT", "DOUBLE", "DECIMAL(10, 2)",
    "DECIMAL(38, 18)", "CHAR(5)", "VARCHAR(20)", "STRING", "BINARY(4)", "VARBINARY(9)", "BYTES",
    "DATE", "TIME(0)", "TIME(3)", "TIMESTAMP(0)", "TIMESTAMP(3)", "TIMESTAMP(6)", "TIMESTAMP(9)",
    "TIMESTAMP(3) WITH LOCAL TIME ZONE", "TIMESTAMP(6) WITH LOCAL TIME ZONE", "ARRAY<INT>",
    "ARRAY<STRING NOT NULL>", "MAP<STRING, BIGINT>", "MULTISET<STRING>", "ROW<`a` INT, `b` STRING>",
    "INT NOT NULL", "MAP<INT, ARRAY<DOUBLE>> NOT NULL",
]


@pytest.mark.parametrize("text", ALL_TYPES)
def test_type_strings_roundtrip(text):
    t = T.parse_type(text)
    assert str(t) == text
    assert T.type_from_json(json.loads(json.dumps(t.to_json()))) == t
    t.to_arrow()  # every type has an Arrow form


@pytest.mark.parametrize("text,expected", [
    ("INTEGER", "INT"), ("DEC(5,1)", "DECIMAL(5, 1)"), ("TIMESTAMP", "TIMESTAMP(6)"),
    ("TIMESTAMP_LTZ(3)", "TIMESTAMP(3) WITH LOCAL TIME ZONE"), ("VARCHAR", "VARCHAR(1)"),
    ("decimal", "DECIMAL(10, 0)"), ("string not null", "STRING NOT NULL"),
])
def test_type_aliases_and_defaults(text, expected):
    assert str(T.parse_type(text)) == expected


@pytest.mark.parametrize("bad", ["FOO", "DECIMAL(50, 2)", "TIMESTAMP(12)", "ARRAY<INT", "INT(3)", "MAP<INT>"])
def test_bad_type_strings(bad):
    with pytest.raises(UnsupportedTypeError):
        T.parse_type(bad)


def test_arrow_mapping():
    schema = pa.schema([("a", pa.int32()), ("b", pa.string()), ("c", pa.timestamp("us", tz="UTC")),
                        ("d", pa.list_(pa.int64())), ("e", pa.struct([("x", pa.int8()), ("y", pa.binary())])),
                        pa.field("f", pa.decimal128(12, 3), nullable=False)])
    fields = T.fields_from_arrow(schema)
    assert [str(f.type) for f in fields] == [
        "INT", "STRING", "TIMESTAMP(6) WITH LOCAL TIME ZONE", "ARRAY<BIGINT>",
        "ROW<`x` TINYINT, `y` BYTES>", "DECIMAL(12, 3) NOT NULL"]
    # nested fields are numbered after their parent; ids are unique
    assert [f.id for f in fields] == [0, 1, 2, 3, 4, 7]
    assert T.max_field_id(fields) == 7
    assert T.arrow_schema(fields).field("f").nullable is False


def test_schema_file_matches_paimon_layout(catalog):
    schema = pa.schema([("id", pa.int32()), ("name", pa.string()), ("age", pa.int32()), ("dt", pa.string())])
    t = catalog.create_table("db.layout", schema, partition_keys=["dt"], options={"file.format": "orc"},
                             comment="demo")
    obj = json.load(open(os.path.join(t.path, "schema", "schema-0")))
    assert obj["version"] == 3 and obj["id"] == 0 and obj["highestFieldId"] == 3
    assert obj["fields"][0] == {"id": 0, "name": "id", "type": "INT"}
    assert obj["partitionKeys"] == ["dt"] and obj["primaryKeys"] == []
    assert obj["options"] == {"file.format": "orc"} and obj["comment"] == "demo"
    # the seed's example (schema version 2) parses too
    seed = {"version": 2, "id": 0, "fields": [{"id": 0, "name": "id", "type": "INT NOT NULL"},
                                              {"id": 3, "name": "dt", "type": "STRING NOT NULL"}],
            "highestFieldId": 3, "partitionKeys": ["dt"], "primaryKeys": ["id", "dt"],
            "options": {"bucket": "1"}, "comment": "", "timeMillis": 1728655009691}
    parsed = TableSchema.from_json(json.dumps(seed))
    assert parsed.primary_keys == ("id", "dt") and parsed.fields[1].type.nullable is False


def test_snapshot_json_roundtrip_of_seed_example():
    seed = {
        "version": 3, "id": 1, "schemaId": 0,
        "baseManifestList": "manifest-list-c935e5b9-5701-4aa9-951a-61ceef8ffd23-0",
        "deltaManifestList": "manifest-list-c935e5b9-5701-4aa9-951a-61ceef8ffd23-1",
        "changelogManifestList": "manifest-list-c935e5b9-5701-4aa9-951a-61ceef8ffd23-2",
        "commitUser": "3bd48472-3f17-4753-a663-fc7e3b58015a", "commitIdentifier": 1, "commitKind": "APPEND",
        "timeMillis": 1728655078994, "logOffsets": {}, "totalRecordCount": 39, "deltaRecordCount": 39,
        "changelogRecordCount": 50, "watermark": -9223372036854775808}
    snap = Snapshot.from_json(json.dumps(seed))
    assert snap.changelog_record_count == 50 and snap.watermark == -(2 ** 63)
    assert json.loads(snap.to_json()) == seed
    assert list(json.loads(snap.to_json())) == list(seed)  # same field order


@pytest.mark.parametrize("options,match", [
    ({"buckett": "2"}, "Unknown table option 'buckett'; did you mean 'bucket'"),
    ({"bucket": "two"}, "Option 'bucket': 'two' is not an integer"),
    ({"file.format": "csv"}, "Option 'file.format'"),
    ({"target-file-size": "lots"}, "memory size"),
    ({"snapshot.time-retained": "1 fortnight"}, "duration"),
    ({"write-only": "yes"}, "boolean"),
    ({"bucket": "2", "bucket-key": ["id"]}, r"Option 'bucket-key' takes a string \(a list as 'a,b'\).*not list \['id'\]"),
])
def test_bad_options(catalog, sample_schema, options, match):
    with pytest.raises(OptionError, match=match):
        catalog.create_table("db.t", sample_schema, options=options)
    assert not catalog.table_exists("db.t")


def test_pattern_options_accepted(catalog, sample_schema):
    t = catalog.create_table("db.t", sample_schema, options={
        "fields.value.stats-mode": "full", "file-index.bloom-filter.columns": "id", "write-only": True})
    assert t.options["write-only"] == "true"


@pytest.mark.parametrize("kwargs,match", [
    (dict(partition_keys=["nope"]), "Partition key 'nope' is not a column"),
    (dict(options={"bucket": "2"}), "needs a 'bucket-key'"),
    (dict(options={"bucket": "2", "bucket-key": "zz"}), "bucket-key 'zz' is not a column"),
    (dict(options={"bucket": "0"}), "'bucket' must be"),
    (dict(partition_keys=["dt"], options={"bucket": "2", "bucket-key": "dt"}), "must not be a partition key"),
])
def test_bad_schemas(catalog, sample_schema, kwargs, match):
    with pytest.raises(SchemaError, match=match):
        catalog.create_table("db.t", sample_schema, **kwargs)


def test_duplicate_columns_rejected(catalog):
    with pytest.raises(SchemaError, match="Duplicate column"):
        catalog.create_table("db.t", pa.schema([("a", pa.int32()), ("a", pa.int64())]))
    with pytest.raises(SchemaError, match="pyarrow.Schema"):
        catalog.create_table("db.t", {"a": "int"})


def test_catalog_databases_and_tables(tmp_path, sample_schema):
    cat = Catalog(str(tmp_path / "wh"))
    assert cat.list_databases() == []
    cat.create_database("db1")
    cat.create_database("db2")
    cat.create_database("db1", ignore_if_exists=True)
    with pytest.raises(DatabaseAlreadyExistError):
        cat.create_database("db1")
    assert cat.list_databases() == ["db1", "db2"]
    assert os.path.isdir(tmp_path / "wh" / "db1.db")
    cat.create_table("db1.a", sample_schema)
    cat.create_table("db1.b", sample_schema)
    assert cat.list_tables("db1") == ["a", "b"]
    with pytest.raises(TableAlreadyExistError):
        cat.create_table("db1.a", sample_schema)
    assert cat.create_table("db1.a", sample_schema, ignore_if_exists=True).identifier == "db1.a"
    with pytest.raises(DatabaseNotExistError):
        cat.create_table("nodb.a", sample_schema)
    with pytest.raises(DatabaseNotExistError):
        cat.list_tables("nodb")
    with pytest.raises(TableNotExistError, match="'db1.zz'"):
        cat.get_table("db1.zz")
    with pytest.raises(DatabaseNotEmptyError):
        cat.drop_database("db1")
    cat.drop_table("db1.a")
    with pytest.raises(TableNotExistError):
        cat.drop_table("db1.a")
    cat.drop_table("db1.a", ignore_if_not_exists=True)
    assert cat.list_tables("db1") == ["b"]
    cat.drop_database("db1", cascade=True)
    assert cat.list_databases() == ["db2"]
    with pytest.raises(InvalidIdentifierError):
        cat.get_table("a.b.c")
    with pytest.raises(InvalidIdentifierError):
        cat.create_database("../evil")


def _table_with_data(catalog, sample_schema):
    t = catalog.create_table("db.t", sample_schema, partition_keys=["dt"])
    t.write(make_rows(20))
    t.write(make_rows(20, start=20))
    return t


def test_truncated_snapshot_is_reported(catalog, sample_schema):
    t = _table_with_data(catalog, sample_schema)
    path = os.path.join(t.path, "snapshot", "snapshot-2")
    data = open(path).read()
    open(path, "w").write(data[: len(data) // 2])
    with pytest.raises(CorruptFileError, match="snapshot-2 is not a valid Paimon snapshot"):
        t.to_arrow()
    assert t.to_arrow(snapshot_id=1).num_rows == 20


def test_corrupt_schema_is_reported(catalog, sample_schema):
    t = _table_with_data(catalog, sample_schema)
    open(os.path.join(t.path, "schema", "schema-0"), "w").write('{"id": 0, "fields": [')
    with pytest.raises(CorruptFileError, match="schema-0"):
        catalog.get_table("db.t")


def test_corrupt_manifest_is_reported(catalog, sample_schema):
    t = _table_with_data(catalog, sample_schema)
    snap = t.latest_snapshot()
    meta = t.store.manifest_io.read_manifest_list(snap.delta_manifest_list)[0]
    path = os.path.join(t.path, "manifest", meta.file_name)
    data = open(path, "rb").read()
    open(path, "wb").write(data[: len(data) // 2])
    # Manifests are immutable, so this process keeps what it decoded (or wrote): damage done
    # afterwards is seen by another process, as after clearing the cache.
    assert catalog.get_table("db.t").to_arrow().num_rows
    MANIFEST_CACHE.clear()
    fresh = catalog.get_table("db.t")
    with pytest.raises(CorruptFileError, match="Manifest .* is corrupt or truncated"):
        fresh.to_arrow()
    os.remove(path)
    MANIFEST_CACHE.clear()
    with pytest.raises(CorruptFileError, match="is missing"):
        catalog.get_table("db.t").to_arrow()


def test_stale_and_missing_hints(catalog, sample_schema):
    t = _table_with_data(catalog, sample_schema)
    snapdir = os.path.join(t.path, "snapshot")
    open(os.path.join(snapdir, "LATEST"), "w").write("1")  # stale
    assert t.latest_snapshot().id == 2
    os.remove(os.path.join(snapdir, "LATEST"))
    os.remove(os.path.join(snapdir, "EARLIEST"))
    assert t.latest_snapshot().id == 2
    assert t.snapshot_manager.earliest_id() == 1
    open(os.path.join(snapdir, "LATEST"), "w").write("garbage")
    assert t.to_arrow().num_rows == 40
    t.write(make_rows(1, start=99))
    assert open(os.path.join(snapdir, "LATEST")).read() == "3"


@given(st.lists(st.sampled_from(ALL_TYPES), min_size=1, max_size=4))
def test_row_type_of_any_fields_roundtrips(type_names):
    inner = ", ".join(f"`f{i}` {n}" for i, n in enumerate(type_names))
    t = T.parse_type(f"ROW<{inner}>")
    assert T.parse_type(str(t)) == t
    assert T.type_from_json(t.to_json()) == t


def test_bucketed_append_table_needs_bucket_key_as_java_paimon_does(catalog, sample_schema):
    """Seed 003 says a fixed-bucket append table without 'bucket-key' hashes all columns; Java
    Paimon's SchemaValidation instead rejects it ("You should define a 'bucket-key' for bucketed
    append mode"). The spec (Java) decides, so we reject it too, with the same advice."""
    with pytest.raises(SchemaError, match="needs a 'bucket-key'"):
        catalog.create_table("db.q", sample_schema, options={"bucket": "3"})
    t = catalog.create_table("db.q", sample_schema, options={"bucket": "3", "bucket-key": "id,name"})
    assert t.schema.bucket_keys == ["id", "name"]


def test_creation_time_is_local_wall_clock_as_java_writes_it(tmp_path):
    """Java writes _CREATION_TIME as LocalDateTime.now() in millis (the wall clock, not UTC epoch):
    in a UTC+5:30 process the stored value is 5.5 hours past the epoch time."""
    import subprocess
    import sys

    code = (
        "import time, pyarrow as pa; from paimon_lab import Catalog; from paimon_lab.operation.scan import FileStoreScan\n"
        f"c = Catalog({str(tmp_path)!r}); c.create_database('db')\n"
        "t = c.create_table('db.t', pa.schema([('k', pa.int64())]), primary_keys=['k'], options={'bucket': '1'})\n"
        "a = c.create_table('db.a', pa.schema([('k', pa.int64())]))\n"
        "before = time.time() * 1000; t.write(pa.table({'k': [1]})); a.write(pa.table({'k': [1]})); after = time.time() * 1000\n"
        "for tab in (t, a):\n"
        "    f = FileStoreScan(tab.store).live_entries(tab.snapshot_manager.latest())[0].file\n"
        "    shift = 5.5 * 3600 * 1000\n"
        "    assert before + shift - 1000 <= f.creation_time_millis <= after + shift + 1000, (f.creation_time_millis, before)\n"
        "print('ok')\n")
    env = {**os.environ, "TZ": "Asia/Kolkata"}
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0 and "ok" in out.stdout, out.stderr[-2000:]


def test_newer_metadata_fields_survive_a_rewrite(tmp_path):
    """A column's defaultValue (schema JSON) and snapshot fields of newer Paimon versions are kept
    when paimon-lab rewrites the schema (ALTER) or copies the snapshot (a tag)."""
    import json

    from paimon_lab import Catalog, SchemaChange

    c = Catalog(str(tmp_path))
    c.create_database("db")
    t = c.create_table("db.t", pa.schema([("k", pa.int64()), ("v", pa.string())]))
    t.write(pa.table({"k": [1], "v": ["a"]}))
    schema_file = tmp_path / "db.db" / "t" / "schema" / "schema-0"
    obj = json.loads(schema_file.read_text())
    obj["fields"][1]["defaultValue"] = "'none'"
    schema_file.write_text(json.dumps(obj))
    snap_file = tmp_path / "db.db" / "t" / "snapshot" / "snapshot-1"
    snap = json.loads(snap_file.read_text())
    snap["futureField"] = {"x": 1}
    snap_file.write_text(json.dumps(snap))

    t = c.get_table("db.t")
    t.alter(SchemaChange.set_option("snapshot.num-retained.max", "50"))
    t.create_tag("t1", snapshot_id=1)
    latest = json.loads((tmp_path / "db.db" / "t" / "schema" / "schema-1").read_text())
    assert latest["fields"][1]["defaultValue"] == "'none'"
    tag = json.loads((tmp_path / "db.db" / "t" / "tag" / "tag-t1").read_text())
    assert tag["futureField"] == {"x": 1} and tag["id"] == 1
