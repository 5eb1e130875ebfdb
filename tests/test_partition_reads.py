"""Partition columns of append-table reads: made from each split's partition value, filter
conjuncts on them decided once per partition (also for primary-key reads)."""

import pyarrow as pa
import pyarrow.compute as pc

from paimon_lab.operation.split_read import TableRead


def test_partition_columns_are_made_from_the_partition_not_decoded(catalog, monkeypatch):
    """Partition columns come from each split's partition value (Java fills them in the same way),
    and filter conjuncts on them alone are decided once per partition: the rows, column order and
    types match a plain pyarrow filter of the written rows, NULL partitions and mixed conjuncts
    included, and the files are never asked for a partition column they need not give."""
    schema = pa.schema([("id", pa.int64()), ("dt", pa.string()), ("name", pa.string()), ("hr", pa.int32())])
    t = catalog.create_table("db.parts", schema, partition_keys=["dt", "hr"])
    n = 60
    rows = pa.table({"id": pa.array(range(n), pa.int64()),
                     "dt": [None if i % 7 == 0 else ["x", "y"][i % 2] for i in range(n)],
                     "name": [f"n{i}" for i in range(n)],
                     "hr": pa.array([i % 3 for i in range(n)], pa.int32())})
    t.write(rows)
    asked: list[list[str]] = []
    real = TableRead.read_file_rows

    def spy(self, split, file, columns=None, predicate=None):
        asked.append(list(columns or []))
        return real(self, split, file, columns, predicate)

    monkeypatch.setattr(TableRead, "read_file_rows", spy)
    cases = [
        (None, None, pc.scalar(True)),
        ("dt = 'x'", None, pc.field("dt") == "x"),
        ("dt = 'x' AND id > 20", None, (pc.field("dt") == "x") & (pc.field("id") > 20)),
        ("hr = 2 AND dt = 'y' AND id < 50", ["name", "hr"],
         (pc.field("hr") == 2) & (pc.field("dt") == "y") & (pc.field("id") < 50)),
        ("dt IS NULL", ["dt", "id"], pc.field("dt").is_null()),
        ("dt = 'x' OR id < 5", None, (pc.field("dt") == "x") | (pc.field("id") < 5)),  # mixed: dt from the file
        ("dt = 'nope' AND id > 0", None, (pc.field("dt") == "nope") & (pc.field("id") > 0)),
        ("hr = 1", ["hr"], pc.field("hr") == 1),  # only partition columns asked for
    ]
    for text, columns, model in cases:
        asked.clear()
        got = t.to_arrow(filter=text, columns=columns)
        want = rows.filter(model).select(columns or schema.names)
        assert got.schema.remove_metadata() == want.schema, text
        order = [(c, "ascending") for c in want.column_names]
        assert got.sort_by(order).to_pylist() == want.sort_by(order).to_pylist(), text
        if text is not None and "OR" not in text and columns != ["hr"]:
            assert all("dt" not in c and "hr" not in c for c in asked), (text, asked)
            assert asked or "nope" in text, text


def test_not_null_partition_columns_and_partitions_ruled_out_per_file(catalog):
    """NOT NULL partition columns: parts made from the partition and parts read whole (a file with
    a deletion vector) concatenate; a NOT over a partition conjunct prunes no partition when
    planning: each one is decided when its files are read."""
    schema = pa.schema([pa.field("id", pa.int64()), pa.field("dt", pa.string(), nullable=False)])
    t = catalog.create_table("db.nn", schema, partition_keys=["dt"], options={"deletion-vectors.enabled": "true"})
    rows = pa.table({"id": pa.array(range(30), pa.int64()), "dt": [["p", "q", "r"][i % 3] for i in range(30)]},
                    schema=schema)
    t.write(rows)
    t.delete("id = 4")  # a deletion vector for partition q's file only
    rows = rows.filter(pc.field("id") != 4)
    for text, model in [("NOT (dt = 'p')", ~(pc.field("dt") == "p")),
                        ("NOT (dt = 'p') AND id > 10", ~(pc.field("dt") == "p") & (pc.field("id") > 10)),
                        ("NOT (dt = 'p') OR id = 0", ~(pc.field("dt") == "p") | (pc.field("id") == 0)),
                        (None, pc.scalar(True)), ("id > 2", pc.field("id") > 2)]:
        got = t.to_arrow(filter=text)
        assert got.schema == schema, text
        assert sorted(got.column("id").to_pylist()) == sorted(rows.filter(model).column("id").to_pylist()), text


def test_primary_key_reads_decide_partition_conjuncts_once(catalog, monkeypatch):
    """A merge read gets the filter minus its conjuncts on partition columns alone (true for every
    row of the bucket): the partition key column is not decoded to be compared, mixed conjuncts
    and ones the partition rules out still apply, NULL partitions included."""
    from paimon_lab.mergetree import reader as merge_read

    schema = pa.schema([("id", pa.int64()), ("dt", pa.string()), ("v", pa.int64())])
    t = catalog.create_table("db.pkparts", schema, primary_keys=["id", "dt"], partition_keys=["dt"],
                             options={"bucket": "2", "write-only": "true"})
    n = 60
    rows = pa.table({"id": pa.array(range(n), pa.int64()),
                     "dt": [["x", "y", "z"][i % 3] for i in range(n)],
                     "v": pa.array([i % 5 for i in range(n)], pa.int64())})
    t.write(rows)
    t.write(rows.slice(0, 30).set_column(2, "v", pa.array([9] * 30, pa.int64())))
    model = pa.concat_tables([rows.slice(0, 30).set_column(2, "v", pa.array([9] * 30, pa.int64())), rows.slice(30)])
    given: list = []
    real = merge_read.MergeReader.read_deduplicated

    def spy(self, files, needed, predicate, ignore_delete):
        given.append(None if predicate is None else predicate.columns())
        return real(self, files, needed, predicate, ignore_delete)

    monkeypatch.setattr(merge_read.MergeReader, "read_deduplicated", spy)
    cases = [
        ("dt = 'x'", pc.field("dt") == "x", set()),
        ("dt = 'x' AND id > 20", (pc.field("dt") == "x") & (pc.field("id") > 20), {"id"}),
        ("dt = 'y' AND v = 9", (pc.field("dt") == "y") & (pc.field("v") == 9), {"v"}),
        ("dt IN ('x', 'z') AND v < 3", pc.field("dt").isin(["x", "z"]) & (pc.field("v") < 3), {"v"}),
        ("dt = 'x' OR v = 9", (pc.field("dt") == "x") | (pc.field("v") == 9), {"dt", "v"}),
        ("dt = 'nope' AND id > 0", (pc.field("dt") == "nope") & (pc.field("id") > 0), None),
    ]
    full = t.to_arrow().schema
    for text, expr, columns in cases:
        given.clear()
        got = t.to_arrow(filter=text).sort_by([("dt", "ascending"), ("id", "ascending")])
        want = model.filter(expr).sort_by([("dt", "ascending"), ("id", "ascending")])
        assert got.schema == full and got.to_pylist() == want.to_pylist(), text
        if columns is None:
            assert given == [], text
        else:
            assert given and all((g or set()) == columns for g in given), (text, given)
