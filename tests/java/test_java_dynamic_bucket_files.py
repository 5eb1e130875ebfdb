"""Java keeps writing a dynamic-bucket table (``bucket = -1``) whose HASH index files paimon-lab
wrote by appending: a bucket's next file is its previous file's bytes followed by the new keys'
hashes (Java's format has no order), so after a few commits a file is a sorted run and several
short tails. Java's writer loads those files to find each existing key's bucket; were any hash
lost or misread, its update would land in another bucket and the key would show twice.

The chain, one table (two partitions, buckets of 10 keys):

1. paimon-lab writes four commits, each updating keys and adding a few new ones (files with
   tails); Java reads the same rows;
2. Java updates every key and adds new ones (filling bucket 0, opening bucket 1); both read each
   key once, with Java's values;
3. paimon-lab does the same on top of Java's HASH files (written in its hash set's order); both
   read each key once, with our values.
"""

from __future__ import annotations

import os

import numpy as np
import pyarrow as pa
import pytest

from paimon_lab.core.hash_index import read_hash_index
from paimon_lab.core.index_manifest import HASH_INDEX, index_file_path
from paimon_lab.store.file_store import live_index_entries

from .java_rows import lab_fields

FIELDS = [("k", "BIGINT NOT NULL"), ("part", "INT NOT NULL"), ("v", "STRING")]
OPTIONS = {"bucket": "-1", "dynamic-bucket.target-row-num": "10"}
VERSIONS = ("0.9", "1.0") if os.environ.get("PAIMON_JAVA_ORACLE_FULL") else ("0.9",)
SCHEMA = pa.schema([pa.field("k", pa.int64(), nullable=False), pa.field("part", pa.int32(), nullable=False),
                    ("v", pa.string())])


def _rows(keys, tag: str) -> list[dict]:
    return [{"k": k, "part": k % 2, "v": f"{tag}-{k}"} for k in keys]


@pytest.mark.compat("primary-key", "dynamic-bucket HASH index files written by appending", "both")
@pytest.mark.parametrize("version", VERSIONS, ids=[f"java{v}" for v in VERSIONS])
def test_java_writes_on_appended_hash_files(jo, oracle, lab, wh, version):
    oracle(version)
    t = lab.create_table("db.t", fields=lab_fields(FIELDS), primary_keys=["k", "part"], partition_keys=["part"],
                         options=OPTIONS)
    model: dict[int, dict] = {}

    def apply(rows):
        model.update({r["k"]: r for r in rows})

    def check(what):
        want = jo.sort_rows(list(model.values()), ["k"])
        assert jo.sort_rows(jo.read(wh, "db.t", version=version), ["k"]) == want, f"Java: {what}"
        ours = jo.canonical(lab.get_table("db.t").to_arrow())
        assert jo.sort_rows(ours, ["k"]) == want, f"paimon-lab: {what}"

    # 1. paimon-lab: 6 keys per partition, then 1 new key per partition and commit (files get tails)
    for step, keys in enumerate([range(12), [0, 3, 12, 13], [5, 8, 14, 15], [1, 2, 16, 17]]):
        rows = _rows(keys, f"lab{step}")
        lab.get_table("db.t").write(pa.Table.from_pylist(rows, schema=SCHEMA))
        apply(rows)
    files = [read_hash_index(t.store.file_io.read_bytes(index_file_path(t.store.path, e.index_file)))
             for e in live_index_entries(t.store, HASH_INDEX)]
    assert sorted(len(h) for h in files) == [9, 9] and any(np.any(h[1:] < h[:-1]) for h in files)  # tails
    check("paimon-lab's commits")

    # 2. Java updates every key and adds 4 per partition: bucket 0 fills (10), bucket 1 opens
    rows = _rows(sorted(model) + list(range(18, 26)), "java")
    jo.write(wh, "db.t", rows, version=version)
    apply(rows)
    check("Java's upsert of every key on paimon-lab's HASH files")

    # 3. paimon-lab updates every key and adds more, reading Java's HASH files
    rows = _rows(sorted(model) + list(range(26, 30)), "lab9")
    lab.get_table("db.t").write(pa.Table.from_pylist(rows, schema=SCHEMA))
    apply(rows)
    check("paimon-lab's upsert of every key on Java's HASH files")
