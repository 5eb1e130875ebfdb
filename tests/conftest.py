import pyarrow as pa
import pytest

from paimon_lab import Catalog


@pytest.fixture
def catalog(tmp_path):
    cat = Catalog(str(tmp_path / "warehouse"))
    cat.create_database("db")
    return cat


@pytest.fixture
def sample_schema():
    return pa.schema([("id", pa.int64()), ("name", pa.string()), ("value", pa.float64()), ("dt", pa.string())])


def make_rows(n, start=0, parts=("a", "b", "c")):
    return pa.table({
        "id": pa.array(range(start, start + n), pa.int64()),
        "name": [f"name-{i}" for i in range(start, start + n)],
        "value": [i * 0.5 for i in range(start, start + n)],
        "dt": [parts[i % len(parts)] for i in range(start, start + n)],
    })


# ---------------------------------------------------------------- interop (pypaimon as a peer)

@pytest.fixture
def warehouse(tmp_path) -> str:
    """A fresh warehouse directory (a string path) shared by both engines in one test."""
    path = tmp_path / "interop-warehouse"
    path.mkdir()
    return str(path)


@pytest.fixture
def lab_catalog(warehouse):
    """paimon_lab's catalog over ``warehouse``, with database ``db``."""
    cat = Catalog(warehouse)
    cat.create_database("db", ignore_if_exists=True)
    return cat


@pytest.fixture
def py_catalog(warehouse):
    """pypaimon's filesystem catalog over the same ``warehouse``, with database ``db``."""
    from pypaimon import CatalogFactory

    cat = CatalogFactory.create({"warehouse": warehouse})
    cat.create_database("db", True)
    return cat


# ---------------------------------------------------------------- Spark (one local session per test run)

@pytest.fixture(scope="session")
def spark():
    """A local[2] SparkSession shared by every Spark test; skipped without Java or PySpark >= 4.1."""
    import os
    import shutil
    import sys

    if shutil.which("java") is None and not os.environ.get("JAVA_HOME"):
        pytest.skip("Spark tests need Java (no java on PATH and no JAVA_HOME)")
    pyspark = pytest.importorskip("pyspark")
    if tuple(int(x) for x in pyspark.__version__.split(".")[:2]) < (4, 1):
        pytest.skip(f"Spark tests need PySpark >= 4.1, found {pyspark.__version__}")
    # Executors' Python workers: this interpreter, able to import this checkout of paimon_lab.
    os.environ["PYSPARK_PYTHON"] = sys.executable
    os.environ["PYSPARK_DRIVER_PYTHON"] = sys.executable
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    os.environ["PYTHONPATH"] = os.pathsep.join(p for p in (root, os.environ.get("PYTHONPATH")) if p)
    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")  # loopback only
    from pyspark.sql import SparkSession

    session = (SparkSession.builder.master("local[2]").appName("paimon-lab-tests")
               .config("spark.ui.enabled", "false")
               .config("spark.driver.host", "127.0.0.1")
               .config("spark.driver.bindAddress", "127.0.0.1")
               .config("spark.ui.showConsoleProgress", "false")
               .config("spark.sql.shuffle.partitions", "2")
               .config("spark.default.parallelism", "2")
               .config("spark.sql.session.timeZone", "UTC")
               .config("spark.sql.python.filterPushdown.enabled", "true")
               .config("spark.driver.memory", "2g")
               # Python workers fork from a daemon that has paimon_lab imported already.
               .config("spark.python.daemon.module", "paimon_lab.spark.daemon")
               .config("spark.driver.extraJavaOptions", "-XX:TieredStopAtLevel=1 -XX:+UseSerialGC")
               .config("spark.sql.streaming.forceDeleteTempCheckpointLocation", "true")
               .getOrCreate())
    session.sparkContext.setLogLevel("ERROR")
    yield session
    session.stop()


@pytest.fixture(scope="session")
def spark_cluster(tmp_path_factory):
    """A Spark standalone cluster on 127.0.0.1 (a master and one 2-core worker, JVMs started from
    the pyspark package's jars; executors in JVMs of their own): its master URL. Stopped by the
    process ids it started, also when a test fails. Skipped like ``spark``."""
    import os
    import shutil

    if shutil.which("java") is None and not os.environ.get("JAVA_HOME"):
        pytest.skip("Spark tests need Java (no java on PATH and no JAVA_HOME)")
    pyspark = pytest.importorskip("pyspark")
    if tuple(int(x) for x in pyspark.__version__.split(".")[:2]) < (4, 1):
        pytest.skip(f"Spark tests need PySpark >= 4.1, found {pyspark.__version__}")
    from paimon_lab.spark.cluster import LocalCluster

    cluster = LocalCluster(cores=2, memory="2g", workdir=str(tmp_path_factory.mktemp("spark-cluster")))
    cluster.start()
    try:
        yield cluster
    finally:
        pids = cluster.pids()
        cluster.stop()
        for pid in pids:  # nothing left behind
            try:
                os.kill(pid, 0)
            except ProcessLookupError:
                continue
            raise AssertionError(f"Spark cluster process {pid} is still running")
