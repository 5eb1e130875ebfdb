"""A terminal walkthrough of a Paimon table's life: ``python -m paimon_lab.walkthrough [WAREHOUSE]``.

It creates a partitioned append table, commits to it, overwrites a partition, tags a snapshot,
and after each step prints what the engine sees and which files appeared on disk.
"""

from __future__ import annotations

import os
import sys
import tempfile

import pyarrow as pa

from paimon_lab.catalog import Catalog


def _tree(root: str, skip: set[str]) -> list[str]:
    lines = []
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames.sort()
        rel = os.path.relpath(dirpath, root)
        for name in sorted(filenames):
            path = name if rel == "." else f"{rel}/{name}"
            if path not in skip:
                lines.append(path)
    return lines


def _step(title: str) -> None:
    print(f"\n== {title} " + "=" * max(0, 70 - len(title)))


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    warehouse = argv[0] if argv else tempfile.mkdtemp(prefix="paimon-lab-")
    catalog = Catalog(warehouse)
    catalog.create_database("demo", ignore_if_exists=True)
    catalog.drop_table("demo.orders", ignore_if_not_exists=True)
    schema = pa.schema([("order_id", pa.int64()), ("customer", pa.string()),
                        ("amount", pa.float64()), ("dt", pa.string())])

    _step("CREATE TABLE demo.orders PARTITIONED BY (dt)")
    table = catalog.create_table("demo.orders", schema, partition_keys=["dt"])
    seen = set(_tree(table.path, set()))
    print(open(os.path.join(table.path, "schema", "schema-0")).read())

    def show_new_files() -> None:
        nonlocal seen
        now = _tree(table.path, set())
        for path in now:
            if path not in seen:
                print("  +", path)
        seen = set(now)

    _step("INSERT: two days of orders (snapshot 1)")
    table.write(pa.table({"order_id": [1, 2, 3, 4], "customer": ["ann", "bob", "cy", "ann"],
                          "amount": [9.5, 20.0, 3.25, 11.0], "dt": ["2024-05-01"] * 2 + ["2024-05-02"] * 2}))
    show_new_files()

    _step("INSERT: more orders (snapshot 2)")
    table.write(pa.table({"order_id": [5, 6], "customer": ["dee", "bob"], "amount": [7.0, 1.5],
                          "dt": ["2024-05-02", "2024-05-03"]}))
    show_new_files()
    table.create_tag("before-fix", 2)

    _step("INSERT OVERWRITE PARTITION (dt='2024-05-01') (snapshot 3)")
    table.write(pa.table({"order_id": [1], "customer": ["ann"], "amount": [9.75], "dt": ["2024-05-01"]}),
                overwrite={"dt": "2024-05-01"})
    show_new_files()

    _step("Snapshots")
    for s in table.snapshots():
        print(f"  snapshot {s.id}: {s.commit_kind:<9} total={s.total_record_count} delta={s.delta_record_count}")

    _step("SELECT * (latest)")
    print(table.to_pandas().sort_values("order_id").to_string(index=False))

    _step("SELECT * WHERE amount > 5 AND dt >= '2024-05-02'")
    print(table.to_pandas(filter="amount > 5 AND dt >= '2024-05-02'").to_string(index=False))

    _step("Time travel: tag 'before-fix' (snapshot 2)")
    print(table.to_pandas(tag="before-fix").sort_values("order_id").to_string(index=False))
    print(f"\nWarehouse: {warehouse}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
