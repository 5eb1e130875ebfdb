"""Partition columns of append-table reads: made from each split's partition value, filter
conjuncts on them decided once per partition."""

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
