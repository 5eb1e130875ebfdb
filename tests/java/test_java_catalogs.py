"""Java Paimon's JDBC catalog on the database paimon-lab's JdbcCatalog uses, and our consumers
under Java's snapshot expiration (issue #17, item 5).

JDBC: both catalogs on one database (PostgreSQL, the server of tests/_servers.py, or an SQLite
file) and one catalog key. Java's ``JdbcCatalog`` (in both Paimon bundles) runs through the
oracle's ``PAIMON_ORACLE_CATALOG`` options with the database's JDBC driver on its classpath:
Debian's ``libpostgresql-jdbc-java`` and ``libxerial-sqlite-jdbc-java`` (.ci/run installs them;
see ``java_jdbc`` in conftest.py). pyspark's jars hold only Derby's embedded driver, which locks
the database to one process, so paimon-lab could not share it; PyPI's list of package names
shows no PostgreSQL or SQLite driver jar package. Java reads a table paimon-lab registered,
paimon-lab lists and reads a table Java created, and a table directory nobody registered is not a
table to Java either. (Java 0.9/1.0's JDBC commit lock works on neither database: see
test_java_concurrent.py.)

Consumers: Java expires snapshots after each of its commits (``snapshot.num-retained.*``) and must
keep every snapshot from our ``consumer/consumer-<id>`` on; it does, and expires them once we
drop the consumer.
"""

from __future__ import annotations

import os
import uuid

import pyarrow as pa
import pytest
from _servers import shared_postgres, shared_s3

from paimon_lab import Catalog
from paimon_lab.catalog import JdbcCatalog
from paimon_lab.store.consumer import ConsumerManager

VERSIONS = ("0.9", "1.0") if os.environ.get("PAIMON_JAVA_ORACLE_FULL") else ("0.9",)
IDS = [f"java{v}" for v in VERSIONS]
SCHEMA = pa.schema([pa.field("k", pa.int64(), nullable=False), ("v", pa.string())])


def _rows(start: int, n: int) -> pa.Table:
    return pa.table({"k": pa.array(range(start, start + n), pa.int64()),
                     "v": [f"v{i}" for i in range(start, start + n)]}, schema=SCHEMA)


@pytest.mark.compat("catalog", "JDBC catalog ({backend})", "both")
@pytest.mark.parametrize("backend", ["PostgreSQL", "SQLite"])
@pytest.mark.parametrize("version", VERSIONS, ids=IDS)
def test_java_jdbc_catalog_shares_our_database(jo, java_jdbc, wh, tmp_path, version, backend):
    pg = shared_postgres() if backend == "PostgreSQL" else f"sqlite:///{tmp_path}/catalog.db"
    key = f"j{uuid.uuid4().hex[:10]}"
    java_jdbc(version, pg, key)
    with JdbcCatalog(pg, wh, catalog_key=key) as ours:
        ours.create_database("db")
        t = ours.create_table("db.ours", SCHEMA, primary_keys=["k"], options={"bucket": "2"})
        t.write(_rows(0, 50))
        Catalog(wh).create_table("db.unregistered", SCHEMA)  # a directory, not in the catalog database

        assert jo.sort_rows(jo.read(wh, "db.ours", version=version), "k") == \
            jo.sort_rows(jo.canonical(_rows(0, 50)), "k")
        with pytest.raises(jo.OracleError, match="not exist"):
            jo.read(wh, "db.unregistered", version=version)

        jo.create(wh, "db.theirs", SCHEMA, primary_keys=["k"], options={"bucket": "1"}, version=version)
        jo.write(wh, "db.theirs", _rows(100, 30), version=version)
        assert ours.list_tables("db") == ["ours", "theirs"]
        assert ours.get_table("db.theirs").to_arrow().sort_by("k") == _rows(100, 30)
        assert not ours.table_exists("db.unregistered")


@pytest.mark.compat("append", "consumer protects snapshots from Java's expiration", "lab writes, Java expires/reads")
@pytest.mark.parametrize("version", VERSIONS, ids=IDS)
def test_java_expiration_keeps_our_consumers_snapshots(jo, oracle, lab, wh, version):
    oracle(version)
    t = lab.create_table("db.t", SCHEMA, options={"snapshot.num-retained.min": "1", "snapshot.num-retained.max": "2",
                                                  "bucket": "1", "bucket-key": "k"})
    t.write(_rows(0, 10))
    ConsumerManager(t.store).record("reader-1", 2)  # it has read snapshot 1, reads 2 next
    for i in range(1, 5):
        t.write(_rows(10 * i, 10))
    t.expire_snapshots(retain_max=1)  # ours keeps 2.. too
    ids = lambda: [s.id for s in lab.get_table("db.t").snapshots()]
    assert ids() == list(range(2, ids()[-1] + 1))

    jo.write(wh, "db.t", _rows(50, 10), version=version)  # Java expires after its commit
    assert ids() == list(range(2, ids()[-1] + 1)) and ids()[-1] > 6
    expected = jo.sort_rows(jo.canonical(_rows(0, 20)), "k")
    assert jo.sort_rows(jo.read(wh, "db.t", snapshot=2, version=version), "k") == expected

    ConsumerManager(t.store).delete("reader-1")
    jo.write(wh, "db.t", _rows(60, 10), version=version)  # now Java keeps only its two latest
    assert ids() == [ids()[-1] - 1, ids()[-1]]
    expected = jo.sort_rows(jo.canonical(_rows(0, 70)), "k")
    assert jo.sort_rows(jo.read(wh, "db.t", version=version), "k") == expected


def _pypaimon_s3_roundtrip(warehouse: str, options: dict, rows):
    """In pypaimon's worker: read db.ours, then create and write db.theirs (a PK table)."""
    from pypaimon import CatalogFactory, Schema

    cat = CatalogFactory.create({"warehouse": warehouse, **options})
    t = cat.get_table("db.ours")
    rb = t.new_read_builder()
    got = rb.new_read().to_arrow(rb.new_scan().plan().splits())
    schema = pa.schema([pa.field("k", pa.int64(), nullable=False), ("v", pa.string())])
    cat.create_table("db.theirs", Schema.from_pyarrow_schema(schema, primary_keys=["k"], options={"bucket": "2"}),
                     False)
    theirs = cat.get_table("db.theirs")
    for batch in rows:
        wb = theirs.new_batch_write_builder()
        w, c = wb.new_write(), wb.new_commit()
        w.write_arrow(pa.Table.from_pylist(batch, schema=schema))
        c.commit(w.prepare_commit())
        w.close()
        c.close()
    return got


@pytest.mark.pypaimon
@pytest.mark.compat("object store", "S3 warehouse (moto), read back by pypaimon 2.1", "both")
def test_s3_tables_read_back_by_pypaimon(pypaimon):
    """The oracle has no S3 filesystem jar (neither bundle ships paimon-s3, pyspark has no
    hadoop-aws), so S3 tables are checked by pypaimon instead, as the issue allows."""
    s3 = shared_s3()
    wh = f"s3://{s3.new_bucket()}/wh"
    ours = Catalog(wh, options=s3.options())
    ours.create_database("db")
    t = ours.create_table("db.ours", SCHEMA, primary_keys=["k"], options={"bucket": "2"})
    t.write(_rows(0, 40))
    upserts = _rows(30, 20).set_column(1, "v", pa.array([f"u{k}" for k in range(30, 50)]))
    t.write(upserts)  # 30..39 updated, 40..49 new
    t.write(_rows(0, 5), row_kinds=["-D"] * 5)
    got = pypaimon.run(_pypaimon_s3_roundtrip, wh, s3.options(),
                       [_rows(100, 20).to_pylist(), [{"k": 105, "v": "again"}]])
    assert got.sort_by("k").to_pylist() == pa.concat_tables([_rows(5, 25), upserts]).to_pylist()
    theirs = ours.get_table("db.theirs").to_arrow().sort_by("k").to_pylist()
    assert theirs == [{"k": k, "v": "again" if k == 105 else f"v{k}"} for k in range(100, 120)]
