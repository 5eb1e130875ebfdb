"""Java Paimon as the oracle: the shared harness in ``../shared/java-oracle`` (beside the repository
in CI; ``PAIMON_JAVA_ORACLE_DIR`` overrides it) runs the real Paimon 0.9 / 1.0 library, one JVM
per call. The oracle is built once per session; without a JDK or with a failed build the tests
are skipped locally and FAIL in CI (``CI`` set)."""

from __future__ import annotations

import json
import os
import sys

import pytest

from . import compat

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
VERSIONS = ("0.9", "1.0")


def oracle_dir() -> str:
    explicit = os.environ.get("PAIMON_JAVA_ORACLE_DIR")
    if explicit:
        return explicit
    beside = os.path.join(REPO, "..", "shared", "java-oracle")
    return beside if os.path.isdir(beside) else "/work/shared/java-oracle"


def _unavailable(reason: str):
    if os.environ.get("CI"):
        pytest.fail(f"Java oracle unavailable in CI: {reason}", pytrace=False)
    pytest.skip(reason)


@pytest.fixture(scope="session")
def jo():
    """The ``java_oracle`` module."""
    d = oracle_dir()
    if not os.path.exists(os.path.join(d, "java_oracle.py")):
        _unavailable(f"no java_oracle.py in {d} (set PAIMON_JAVA_ORACLE_DIR)")
    if d not in sys.path:
        sys.path.insert(0, d)
    import java_oracle

    return java_oracle


_built: dict[str, str | None] = {}


def _ensure(jo, version: str) -> None:
    if version not in _built:
        try:
            ok = jo.available(version) or jo.build(version, python=os.environ.get("PAIMON_ORACLE_PYTHON", sys.executable))
            _built[version] = None if ok else "build finished but the oracle is not available (java on PATH?)"
        except Exception as e:  # OracleError, missing JDK, no network...
            _built[version] = f"{type(e).__name__}: {e}"
    if _built[version]:
        _unavailable(f"Java oracle {version}: {_built[version]}")


@pytest.fixture(scope="session", params=VERSIONS, ids=[f"java{v}" for v in VERSIONS])
def java(request, jo):
    """Each Paimon version of the oracle (built on first use)."""
    _ensure(jo, request.param)
    return request.param


@pytest.fixture(scope="session")
def oracle(jo):
    """``oracle(version)``: that version of the oracle, built on first use (for tests that pick
    their versions in their own parameters)."""
    def ensure(version: str) -> str:
        _ensure(jo, version)
        return version
    return ensure


@pytest.fixture(scope="session")
def java09(jo):
    """Only Paimon 0.9 (the oldest reader we promise), for the costlier tests."""
    _ensure(jo, "0.9")
    return "0.9"


# JDBC drivers for Java's JdbcCatalog, from Debian (.ci/run installs them): PostgreSQL's, and
# SQLite's (its native library in /usr/lib/<arch>/jni). Java 0.9/1.0 lock only on SQLite and MySQL.
PG_DRIVER = "/usr/share/java/postgresql.jar"
SQLITE_DRIVER = "/usr/share/java/sqlite-jdbc.jar"


@pytest.fixture
def java_jdbc(jo, oracle, tmp_path, monkeypatch):
    """``use(version, uri, key, **catalog_options)``: from then on every oracle call of this test
    goes through Java's JdbcCatalog on the database paimon-lab's JdbcCatalog opens with ``uri``
    (``postgresql://user@host:port/db`` or ``sqlite:///path``) and catalog key ``key``: an oracle
    home beside the built one, whose classpath also holds the driver."""
    def use(version: str, uri: str, key: str, **options: str) -> None:
        oracle(version)
        if uri.startswith("sqlite:///"):
            driver, java_uri, extra = SQLITE_DRIVER, "jdbc:sqlite:" + uri[len("sqlite://"):], {}
            package = "libxerial-sqlite-jdbc-java"
        else:  # postgresql://user@host:port/db -> jdbc:postgresql://host:port/db with jdbc.user
            user, rest = uri.split("://", 1)[1].split("@", 1)
            driver, java_uri, extra = PG_DRIVER, f"jdbc:postgresql://{rest}", {"jdbc.user": user}
            package = "libpostgresql-jdbc-java"
        if not os.path.exists(driver):
            _unavailable(f"{driver} missing (apt-get install {package})")
        built = os.path.join(jo.home(), version)
        home = tmp_path / "oracle-home"
        (home / version).mkdir(parents=True, exist_ok=True)
        if not (home / version / "classes").exists():
            os.symlink(os.path.join(built, "classes"), home / version / "classes")
        with open(os.path.join(built, "classpath")) as f:
            (home / version / "classpath").write_text(f.read().strip() + os.pathsep + driver)
        monkeypatch.setenv("PAIMON_ORACLE_HOME", str(home))
        monkeypatch.setenv("PAIMON_ORACLE_CATALOG", json.dumps(
            {"metastore": "jdbc", "uri": java_uri, "catalog-key": key, **extra, **options}))
    return use


# ----------------------------------------------------------- the README's compatibility table

def pytest_configure(config):
    path = os.environ.get(compat.ENV)
    if path:
        config._java_compat = compat.Recorder(path)


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    made = yield
    recorder = getattr(item.config, "_java_compat", None)
    row = compat.row_of(item) if recorder is not None else None
    result = compat.outcome(made.get_result()) if row is not None else None
    if result is not None:
        recorder.add(row, result)


def pytest_sessionfinish(session):
    recorder = getattr(session.config, "_java_compat", None)
    if recorder is not None and recorder.results:
        recorder.save()
