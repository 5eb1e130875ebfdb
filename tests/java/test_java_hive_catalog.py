"""Java Paimon 0.9's HiveCatalog and ours on one Hive Metastore (the Thrift server inside pyspark,
one per test run; see tests/_servers.py): each lists and reads the tables the other registered,
and the metastore entries both write agree field by field.

Paimon 0.9 only: the oracle's Hive mode is verified with the 0.9 bundle; the 1.0 bundle's own
Hadoop/Hive classes clash with pyspark's Hive 2.3 jars."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import uuid

import pyarrow as pa
import pytest

pytest.importorskip("pymetastore")

from paimon_lab import HiveCatalog  # noqa: E402
from _servers import shared_hive_metastore  # noqa: E402
from java.conftest import oracle_dir  # noqa: E402


@pytest.fixture(scope="session")
def hms_uri():
    return shared_hive_metastore()


@pytest.fixture
def catalog(hms_uri, tmp_path):
    c = HiveCatalog(hms_uri, str(tmp_path / "wh"))
    yield c
    c.close()


@pytest.fixture
def java_hive(jo, java09, hms_uri, monkeypatch, tmp_path_factory):
    """Java Paimon 0.9's HiveCatalog on the same metastore (the oracle's Hive mode)."""
    cp = subprocess.run(["bash", os.path.join(oracle_dir(), "hms.sh"), "classpath"], capture_output=True, text=True,
                        env=dict(os.environ, PAIMON_ORACLE_PYTHON=os.environ.get("PAIMON_ORACLE_PYTHON", sys.executable)),
                        check=True).stdout.strip()
    # java_oracle.py builds the class path from {PAIMON_ORACLE_HOME}/0.9/classpath itself (oracle.sh
    # is what reads PAIMON_ORACLE_EXTRA_CP): a home beside the built one whose class path has the
    # metastore's jars added.
    built = os.path.join(jo.home(), "0.9")
    home = tmp_path_factory.mktemp("oracle-home")
    os.makedirs(home / "0.9")
    os.symlink(os.path.join(built, "classes"), home / "0.9" / "classes")
    with open(os.path.join(built, "classpath")) as fh:
        (home / "0.9" / "classpath").write_text(fh.read().strip() + os.pathsep + cp)
    monkeypatch.setenv("PAIMON_ORACLE_HOME", str(home))
    monkeypatch.setenv("PAIMON_ORACLE_EXTRA_CP", cp)
    monkeypatch.setenv("PAIMON_ORACLE_CATALOG", json.dumps({"metastore": "hive", "uri": hms_uri}))
    return jo


def _entry(catalog, db, name) -> dict:
    """The fields of a metastore table entry both writers must agree on."""
    h = catalog.client.call("get_table", db, name)
    params = {k: v for k, v in h.parameters.items() if k not in ("transient_lastDdlTime",)}
    return {"tableType": h.tableType, "params": params, "in": h.sd.inputFormat, "out": h.sd.outputFormat,
            "serde": h.sd.serdeInfo.serializationLib, "serdeParams": h.sd.serdeInfo.parameters,
            "cols": [(c.name, c.type, c.comment) for c in h.sd.cols],
            "partitionKeys": [(c.name, c.type) for c in h.partitionKeys], "retention": h.retention,
            "location": h.sd.location.split(f"/{db}.db/")[-1]}


@pytest.mark.compat("catalog", "Hive Metastore catalog (Hive 2.3)", "both")
def test_java_and_we_share_the_metastore(java_hive, catalog):
    db = f"db_{uuid.uuid4().hex[:8]}"
    jo = java_hive
    wh = catalog.warehouse
    catalog.create_database(db)
    opts = {"bucket": "1", "metastore.partitioned-table": "true", "hive.k": "v"}
    fields = [("id", "BIGINT NOT NULL"), ("dt", "STRING NOT NULL"), ("v", "STRING"), ("d", "DECIMAL(10, 2)")]
    jo.create(wh, f"{db}.java_t", fields, partition_keys=["dt"], primary_keys=["id", "dt"], options=opts,
              version="0.9")
    jo.write(wh, f"{db}.java_t", [{"id": 1, "dt": "a", "v": "x", "d": "1.50"}], version="0.9")
    ours = catalog.create_table(f"{db}.our_t", pa.schema([pa.field("id", pa.int64(), False),
                                                          pa.field("dt", pa.string(), False), ("v", pa.string()),
                                                          ("d", pa.decimal128(10, 2))]),
                                primary_keys=["id", "dt"], partition_keys=["dt"], options=opts)
    ours.write(pa.table({"id": [2], "dt": ["b"], "v": ["y"], "d": pa.array([None], pa.decimal128(10, 2))}))

    # the metastore entries, field by field
    java_entry, our_entry = _entry(catalog, db, "java_t"), _entry(catalog, db, "our_t")
    assert java_entry["location"] == "java_t" and our_entry["location"] == "our_t"
    java_entry.pop("location"), our_entry.pop("location")
    assert our_entry == java_entry
    pj = catalog.client.call("get_partition", db, "java_t", ["a"])
    po = catalog.client.call("get_partition", db, "our_t", ["b"])
    assert (po.sd.inputFormat, po.sd.serdeInfo.serializationLib, po.sd.location.rstrip("/").rsplit("/", 1)[-1]) == \
        (pj.sd.inputFormat, pj.sd.serdeInfo.serializationLib, "dt=b")

    # each reads the other's table through its own Hive catalog
    assert sorted(catalog.list_tables(db)) == ["java_t", "our_t"]
    assert catalog.get_table(f"{db}.java_t").to_arrow().column("v").to_pylist() == ["x"]
    assert [r["v"] for r in jo.read(wh, f"{db}.our_t", version="0.9")] == ["y"]
