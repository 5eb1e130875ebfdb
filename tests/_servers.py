"""Throwaway servers on loopback for the catalog and object store tests: a moto S3 server and a
PostgreSQL cluster. Each helper skips the calling test with the install command when its
software is missing. ``shared_s3()`` / ``shared_postgres()`` start one of each per test run
(stopped when the run ends), so test modules do not each pay the start-up."""

from __future__ import annotations

import atexit
import glob
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import uuid
from contextlib import contextmanager
from typing import Iterator

import pytest

S3_KEY = "testing"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


# --------------------------------------------------------------------------- S3 (moto)

class S3Server:
    def __init__(self, port: int):
        self.port = port
        self.endpoint = f"http://127.0.0.1:{port}"

    def options(self) -> dict[str, str]:
        """Catalog options for paimon_lab.io.fs_options."""
        return {"s3.endpoint": self.endpoint, "s3.access-key": S3_KEY, "s3.secret-key": S3_KEY,
                "s3.path.style.access": "true"}

    def filesystem(self):
        import pyarrow.fs as pafs

        return pafs.S3FileSystem(access_key=S3_KEY, secret_key=S3_KEY, region="us-east-1",
                                 endpoint_override=f"127.0.0.1:{self.port}", scheme="http",
                                 allow_bucket_creation=True)

    def new_bucket(self) -> str:
        name = f"b-{uuid.uuid4().hex[:12]}"
        self.filesystem().create_dir(name)
        return name


@contextmanager
def moto_s3() -> Iterator[S3Server]:
    """moto's S3 server in its own process (so it does not share the GIL with the clients)."""
    try:
        import moto  # noqa: F401
        import moto.server  # noqa: F401  (needs the [server] extra: flask, werkzeug)
    except ImportError:
        pytest.skip("needs an S3 test server: pip install 'moto[server]>=5.2.5'")
    port = free_port()
    log = tempfile.NamedTemporaryFile(prefix="moto-", suffix=".log", delete=False)
    proc = subprocess.Popen([sys.executable, "-m", "moto.server", "-H", "127.0.0.1", "-p", str(port)],
                            stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
    try:
        deadline = time.time() + 60
        while True:
            if proc.poll() is not None:
                log.flush()
                pytest.fail(f"moto server exited: {open(log.name).read()[-2000:]}")
            try:
                with socket.create_connection(("127.0.0.1", port), timeout=1):
                    break
            except OSError:
                if time.time() > deadline:
                    pytest.fail("moto server did not start within 60 s")
                time.sleep(0.1)
        s3 = S3Server(port)
        # moto 5.2.1-5.2.4 answer CompleteMultipartUpload with a root element pyarrow rejects.
        fs = s3.filesystem()
        probe = s3.new_bucket()
        try:
            with fs.open_output_stream(f"{probe}/probe") as f:
                f.write(b"x")
        except OSError as e:
            pytest.fail(f"moto {moto.__version__} cannot complete a pyarrow upload ({e}); "
                        "pip install 'moto[server]>=5.2.5'")
        yield s3
    finally:
        proc.terminate()
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        log.close()
        os.unlink(log.name)


# --------------------------------------------------------------------------- PostgreSQL

def _pg_bin() -> str | None:
    candidates = sorted(glob.glob("/usr/lib/postgresql/*/bin"), key=lambda p: int(p.split("/")[-2])
                        if p.split("/")[-2].isdigit() else 0)
    for d in reversed(candidates):
        if os.path.exists(os.path.join(d, "initdb")) and os.path.exists(os.path.join(d, "pg_ctl")):
            return d
    initdb = shutil.which("initdb")
    if initdb and shutil.which("pg_ctl"):
        return os.path.dirname(os.path.realpath(initdb))
    return None


@contextmanager
def postgres() -> Iterator[str]:
    """A fresh PostgreSQL cluster on 127.0.0.1; yields the URI of an empty database."""
    try:
        import psycopg
    except ImportError:
        pytest.skip("PostgreSQL catalog tests need psycopg 3: pip install 'psycopg[binary]'")
    bindir = _pg_bin()
    if bindir is None:
        pytest.skip("PostgreSQL server binaries not found: apt-get install -y postgresql")
    run_as: list[str] = []
    if os.geteuid() == 0:  # initdb and postgres refuse to run as root
        import pwd

        try:
            pw = pwd.getpwnam("postgres")
        except KeyError:
            pytest.skip("running as root and there is no 'postgres' user to run the server as "
                        "(apt-get install -y postgresql creates it)")
        runuser = shutil.which("runuser")
        run_as = [runuser, "-u", "postgres", "--"] if runuser else None
        if run_as is None:
            pytest.skip("running as root and runuser (util-linux) is missing")
    base = tempfile.mkdtemp(prefix="paimon-pg-")
    data, sock, log = os.path.join(base, "data"), os.path.join(base, "sock"), os.path.join(base, "log")
    os.makedirs(sock)
    if run_as:
        for p in (base, sock):
            os.chown(p, pw.pw_uid, pw.pw_gid)
    port = free_port()
    started = False

    def run(*args: str, timeout: float = 60) -> subprocess.CompletedProcess:
        return subprocess.run([*run_as, *args], capture_output=True, text=True, timeout=timeout,
                              stdin=subprocess.DEVNULL)

    try:
        r = run(os.path.join(bindir, "initdb"), "-D", data, "-U", "postgres", "--auth=trust", "-E", "UTF8",
                "--no-sync", "--no-instructions")
        if r.returncode != 0:
            pytest.fail(f"initdb failed: {r.stdout}\n{r.stderr}")
        opts = f"-p {port} -k {sock} -c listen_addresses=127.0.0.1 -c fsync=off -c full_page_writes=off"
        r = run(os.path.join(bindir, "pg_ctl"), "-D", data, "-l", log, "-o", opts, "-w", "-t", "60", "start")
        if r.returncode != 0:
            text = open(log).read() if os.path.exists(log) else ""
            pytest.fail(f"pg_ctl start failed: {r.stdout}\n{r.stderr}\n{text[-2000:]}")
        started = True
        deadline = time.time() + 30
        while True:
            try:
                with psycopg.connect(f"postgresql://postgres@127.0.0.1:{port}/postgres", autocommit=True,
                                     connect_timeout=5) as conn:
                    conn.execute("CREATE DATABASE paimon")
                break
            except psycopg.OperationalError:
                if time.time() > deadline:
                    raise
                time.sleep(0.2)
        yield f"postgresql://postgres@127.0.0.1:{port}/paimon"
    finally:
        if started:
            run(os.path.join(bindir, "pg_ctl"), "-D", data, "-m", "immediate", "-w", "stop")
        shutil.rmtree(base, ignore_errors=True)


# --------------------------------------------------------------------------- Hive Metastore

def pyspark_jars() -> str:
    try:
        import pyspark
    except ImportError:
        pytest.skip("no pyspark (its jars hold the Hive Metastore): pip install 'paimon-lab[spark]'")
    return os.path.join(os.path.dirname(pyspark.__file__), "jars")


@contextmanager
def hive_metastore(timeout: float = 300.0) -> Iterator[str]:
    """The Hive Metastore 2.3 Thrift server inside the pyspark package, on loopback with an
    embedded Derby database (as ../shared/java-oracle/hms.sh starts it), plus what its lock API
    needs: the transaction tables (created first by Hive's own ``TxnDbUtil.prepDb``, which the
    metastore only runs itself in its test mode) and a connection pool that is in pyspark's jars
    (DBCP). Yields ``thrift://127.0.0.1:PORT``; stopped by its PID."""
    if not shutil.which("java"):
        pytest.skip("no java on PATH (the Hive Metastore runs on the JVM)")
    jars = pyspark_jars()
    base = tempfile.mkdtemp(prefix="paimon-lab-hms-")
    port = free_port()
    java = ["java", "-cp", os.path.join(jars, "*"), "-Dhive.async.log.enabled=false",
            f"-Djavax.jdo.option.ConnectionURL=jdbc:derby:;databaseName={base}/derby;create=true"]
    with open(os.path.join(base, "PrepTxn.java"), "w") as fh:
        fh.write("public class PrepTxn { public static void main(String[] a) throws Exception {\n"
                 "  org.apache.hadoop.hive.metastore.txn.TxnDbUtil.prepDb(new org.apache.hadoop.hive.conf.HiveConf());\n"
                 "} }\n")
    prep = subprocess.run(java + ["PrepTxn.java"], cwd=base, capture_output=True, text=True, timeout=timeout)
    if prep.returncode != 0:
        pytest.fail(f"creating the metastore's transaction tables failed: {prep.stderr[-2000:]}")
    log = open(os.path.join(base, "hms.log"), "wb")
    proc = subprocess.Popen(
        java + [f"-Dhive.metastore.warehouse.dir={base}/warehouse", "-Ddatanucleus.schema.autoCreateAll=true",
                "-Dhive.metastore.schema.verification=false", "-Ddatanucleus.connectionPoolingType=dbcp",
                "org.apache.hadoop.hive.metastore.HiveMetaStore", "-p", str(port)],
        stdout=log, stderr=subprocess.STDOUT, cwd=base)
    try:
        deadline = time.monotonic() + timeout
        while True:
            if proc.poll() is not None:
                with open(os.path.join(base, "hms.log"), "rb") as fh:
                    tail = fh.read()[-2000:].decode(errors="replace")
                pytest.fail(f"the Hive Metastore exited with {proc.returncode}: {tail}")
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                break
            except OSError:
                if time.monotonic() > deadline:
                    pytest.fail(f"the Hive Metastore did not listen on {port} within {timeout:.0f} s")
                time.sleep(1)
        yield f"thrift://127.0.0.1:{port}"
    finally:
        proc.terminate()
        try:
            proc.wait(30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        log.close()
        shutil.rmtree(base, ignore_errors=True)


# --------------------------------------------------------------------------- one per test run

_shared: dict[str, object] = {}


def _shared_server(name: str, factory):
    if name not in _shared:
        cm = factory()
        value = cm.__enter__()  # a skip or failure propagates to the test; the next one retries
        atexit.register(cm.__exit__, None, None, None)
        _shared[name] = value
    return _shared[name]


def shared_s3() -> S3Server:
    return _shared_server("s3", moto_s3)


def shared_postgres() -> str:
    """The URI of a database on the run's PostgreSQL server; tests keep apart by catalog key."""
    return _shared_server("postgres", postgres)


def shared_hive_metastore() -> str:
    """The thrift:// URI of the run's Hive Metastore; tests keep apart by database name."""
    return _shared_server("hive", hive_metastore)
