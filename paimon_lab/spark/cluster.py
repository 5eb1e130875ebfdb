"""A Spark standalone cluster on loopback, started from the pyspark package's own jars.

The pip package of PySpark has no ``sbin/start-master.sh``; a master and a worker are plain JVMs
of ``org.apache.spark.deploy.master.Master`` / ``...worker.Worker`` with ``$SPARK_HOME/jars/*``
on the class path (``SPARK_HOME`` = the pyspark package directory). Executors then run in JVMs of
their own, started by the worker, with Python workers of their own: a real cluster, on one
machine. Everything binds to 127.0.0.1 only. Used by the tests and the benchmark::

    with LocalCluster(cores=2, memory="2g") as cluster:
        spark = SparkSession.builder.master(cluster.master_url)...getOrCreate()

:meth:`LocalCluster.stop` ends the worker (and with it its executors) and the master by the
process ids it started (each in a process group of its own, which it ends too).
"""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import tempfile
import time

__all__ = ["LocalCluster", "spark_home", "free_port"]


def spark_home() -> str:
    import pyspark

    return os.path.dirname(os.path.abspath(pyspark.__file__))


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _scala_version() -> str:
    """The Scala version of the jars (the launcher asks for it, as load-spark-env.sh sets it)."""
    import re

    for name in os.listdir(os.path.join(spark_home(), "jars")):
        m = re.match(r"spark-core_(\d+\.\d+)-", name)
        if m:
            return m.group(1)
    return "2.13"


def _java() -> str:
    home = os.environ.get("JAVA_HOME")
    if home and os.path.exists(os.path.join(home, "bin", "java")):
        return os.path.join(home, "bin", "java")
    found = shutil.which("java")
    if found is None:
        raise RuntimeError("A Spark cluster needs Java: no java on PATH and no JAVA_HOME")
    return found


class LocalCluster:
    """A standalone master and one worker (``cores``, ``memory``) on 127.0.0.1."""

    def __init__(self, cores: int = 2, memory: str = "2g", workdir: str | None = None,
                 start_timeout: float = 120.0):
        self.cores, self.memory = cores, memory
        self.own_dir = workdir is None
        self.dir = workdir or tempfile.mkdtemp(prefix="paimon-spark-cluster-")
        self.start_timeout = start_timeout
        self.port = free_port()
        self.master_url = f"spark://127.0.0.1:{self.port}"
        self.procs: list[subprocess.Popen] = []

    def _env(self) -> dict[str, str]:
        env = {k: v for k, v in os.environ.items()
               if k not in ("PYSPARK_PYTHON", "PYSPARK_DRIVER_PYTHON", "PYTHONPATH", "SPARK_CONF_DIR")}
        env.update(SPARK_HOME=spark_home(), SPARK_SCALA_VERSION=_scala_version(), SPARK_LOCAL_IP="127.0.0.1", SPARK_LOCAL_HOSTNAME="localhost",
                   SPARK_LOG_DIR=self.dir, SPARK_WORKER_DIR=os.path.join(self.dir, "work"))
        return env

    def _start(self, name: str, args: list[str]) -> subprocess.Popen:
        log = open(os.path.join(self.dir, f"{name}.log"), "wb")
        cmd = [_java(), "-Xmx512m", "-XX:+UseSerialGC", "-cp", os.path.join(spark_home(), "jars", "*"), *args]
        proc = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                env=self._env(), cwd=self.dir, start_new_session=True)
        log.close()
        self.procs.append(proc)
        return proc

    def log(self, name: str) -> str:
        try:
            with open(os.path.join(self.dir, f"{name}.log"), errors="replace") as f:
                return f.read()
        except OSError:
            return ""

    def _wait(self, what: str, ready, proc_name: str) -> None:
        deadline = time.monotonic() + self.start_timeout
        while time.monotonic() < deadline:
            if ready():
                return
            for p in self.procs:
                if p.poll() is not None:
                    raise RuntimeError(f"Spark {proc_name} exited with {p.returncode} while waiting for {what}:\n"
                                       + self.log(proc_name)[-3000:])
            time.sleep(0.3)
        raise RuntimeError(f"Timed out waiting for {what}:\n" + self.log(proc_name)[-3000:])

    def start(self) -> "LocalCluster":
        try:
            self._start("master", ["org.apache.spark.deploy.master.Master", "--host", "127.0.0.1",
                                   "--port", str(self.port), "--webui-port", "0"])

            def listening() -> bool:
                try:
                    with socket.create_connection(("127.0.0.1", self.port), timeout=0.5):
                        return True
                except OSError:
                    return False

            self._wait("the master to listen", lambda: listening() and "I have been elected leader" in
                       self.log("master"), "master")
            os.makedirs(os.path.join(self.dir, "work"), exist_ok=True)
            self._start("worker", ["org.apache.spark.deploy.worker.Worker", self.master_url, "--host", "127.0.0.1",
                                   "--cores", str(self.cores), "--memory", self.memory, "--webui-port", "0",
                                   "--work-dir", os.path.join(self.dir, "work")])
            self._wait("the worker to register", lambda: "Successfully registered with master" in self.log("worker"),
                       "worker")
        except BaseException:
            self.stop()
            raise
        return self

    def pids(self) -> list[int]:
        return [p.pid for p in self.procs]

    def stop(self) -> None:
        """End the worker (its executors with it) and then the master: SIGTERM to each process
        group this cluster started, SIGKILL after 15 s."""
        for proc in reversed(self.procs):
            for sig, wait in ((signal.SIGTERM, 15.0), (signal.SIGKILL, 5.0)):
                try:
                    os.killpg(proc.pid, sig)  # the group of this process (start_new_session)
                except (ProcessLookupError, PermissionError):
                    pass
                try:
                    proc.wait(wait)
                    break
                except subprocess.TimeoutExpired:
                    continue
            # Executors the worker started sit in its group: make sure none is left.
            try:
                os.killpg(proc.pid, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                pass
        self.procs = []
        if self.own_dir:
            shutil.rmtree(self.dir, ignore_errors=True)

    def __enter__(self) -> "LocalCluster":
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()
