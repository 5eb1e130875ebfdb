import atexit
import os
import shutil
import tempfile

import pyarrow as pa
import pytest
from hypothesis import settings

from paimon_lab import Catalog

# Property tests draw new examples on every run, except in CI (.ci/run sets HYPOTHESIS_PROFILE=ci):
# there the examples are derived from each test's name, so a red CI is reproducible and is never
# a rare draw that happened to come up.
settings.register_profile("ci", derandomize=True, print_blob=True)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "default"))

# Decoded manifests go to a disk cache (paimon_lab.io.disk_cache): the tests' own, not the user's.
if "PAIMON_LAB_CACHE_DIR" not in os.environ:
    os.environ["PAIMON_LAB_CACHE_DIR"] = tempfile.mkdtemp(prefix="paimon-lab-test-cache-")
    atexit.register(shutil.rmtree, os.environ["PAIMON_LAB_CACHE_DIR"], True)


@pytest.fixture(autouse=True, scope="session")
def _lookup_cache_dir(tmp_path_factory):
    """Local lookup files go to a session directory, not the user's ~/.cache."""
    if "PAIMON_LAB_LOOKUP_CACHE_DIR" not in os.environ:
        os.environ["PAIMON_LAB_LOOKUP_CACHE_DIR"] = str(tmp_path_factory.mktemp("lookup-cache"))
    yield


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


@pytest.fixture
def wh(tmp_path) -> str:
    """A fresh warehouse directory, as a string path."""
    path = tmp_path / "wh"
    path.mkdir()
    return str(path)


@pytest.fixture
def lab(wh) -> Catalog:
    """paimon_lab's catalog over ``wh``, with database ``db``."""
    cat = Catalog(wh)
    cat.create_database("db", ignore_if_exists=True)
    return cat


# ---------------------------------------------------------------- interop (pypaimon as a peer)

@pytest.fixture
def warehouse(wh) -> str:
    """The warehouse both engines share in one test (``wh``)."""
    return wh


@pytest.fixture
def lab_catalog(lab):
    """paimon_lab's catalog over ``warehouse`` (``lab``)."""
    return lab


@pytest.fixture(scope="session")
def pypaimon():
    """pypaimon 2.1.0 in its own virtual environment, behind one worker process per session
    (tests/oracles/pypaimon_oracle.py). Without its interpreter: fail under CI, else skip."""
    import os

    from oracles.pypaimon_oracle import OracleUnavailable, PypaimonOracle

    oracle = PypaimonOracle()
    try:
        oracle.start()
        problem = None
    except OracleUnavailable as e:
        oracle.close()
        problem = str(e)
    if problem and os.environ.get("CI"):
        pytest.fail(f"pypaimon oracle unavailable (CI is set, so this fails): {problem}", pytrace=False)
    if problem:
        pytest.skip(f"pypaimon oracle unavailable: {problem}")
    yield oracle
    oracle.close()


class PyCatalog:
    """pypaimon's filesystem catalog over one warehouse: the oracle's operations with the
    warehouse filled in (``py_catalog.read_table("db.t")`` = ``pypaimon.read_table(warehouse, "db.t")``)."""

    def __init__(self, oracle, warehouse: str):
        self.oracle, self.warehouse = oracle, warehouse

    def run(self, fn, *args, **kwargs):
        """``fn(warehouse, *args, **kwargs)`` in the pypaimon worker (see PypaimonOracle.run)."""
        return self.oracle.run(fn, self.warehouse, *args, **kwargs)

    def __getattr__(self, name: str):
        if name.startswith("_"):
            raise AttributeError(name)
        return lambda *args, **kwargs: self.oracle.call(name, self.warehouse, *args, **kwargs)


@pytest.fixture
def py_catalog(pypaimon, warehouse):
    """pypaimon's filesystem catalog over the same ``warehouse``, with database ``db``."""
    cat = PyCatalog(pypaimon, warehouse)
    cat.create_database("db")
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


# ---------------------------------------------------------------- markers by what a test needs

@pytest.hookimpl(tryfirst=True)   # before pytest's own -m selection reads the markers
def pytest_collection_modifyitems(config, items):
    """Mark tests by the outside systems they need, so CI's lowest-versions run can leave out
    Spark, the browser, the Java oracle and pypaimon (their own runs cover them). Soak tests run
    only when asked for (``-m soak``)."""
    for item in items:
        fixtures = set(getattr(item, "fixturenames", ()))
        path = str(item.fspath)
        if fixtures & {"spark", "spark_cluster"} or path.endswith("test_spark.py"):
            item.add_marker(pytest.mark.spark)
        if path.endswith("test_browser.py"):
            item.add_marker(pytest.mark.browser)
        if f"{os.sep}java{os.sep}" in path:
            item.add_marker(pytest.mark.java)
        if fixtures & {"pypaimon", "py_catalog"}:
            item.add_marker(pytest.mark.pypaimon)
        if item.get_closest_marker("soak") and "soak" not in (config.getoption("markexpr") or ""):
            item.add_marker(pytest.mark.skip(reason="a soak run: select it with -m soak"))
