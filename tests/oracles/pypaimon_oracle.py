"""pypaimon 2.1.0 as a test oracle, out of process.

pypaimon pins pyarrow<20 and pandas<3, so it cannot live beside the engine's stack. It lives in
its own virtual environment (:func:`ensure_venv`, ``<repo>/.venv-pypaimon`` or the interpreter
named by ``PAIMON_LAB_PYPAIMON_PYTHON``) and one persistent worker process
(``pypaimon_worker.py``) per test session answers requests:

* ``oracle.call("read_table", warehouse, "db.t", columns=[...])``: a named operation of the worker
  (also as methods: ``oracle.read_table(...)``, ``oracle.write_table(...)``...);
* ``oracle.run(fn, *args)``: ``fn`` is a function written in a test module whose *source* is sent
  and executed in the worker (it must import what it needs itself, and use no closure).

Arrow objects cross as IPC streams, everything else as pickles of plain Python values (see
:mod:`wire`). An exception in the worker is raised here as :class:`PypaimonError` carrying the
remote traceback (and, for a builtin exception type, is an instance of that type too).
"""

from __future__ import annotations

import builtins
import inspect
import os
import subprocess
import sys
import tempfile
import textwrap
import threading
from pathlib import Path

try:
    from . import wire
except ImportError:  # imported as a top-level module (the tests' directory on sys.path)
    import wire

HERE = Path(__file__).resolve().parent
REPO_ROOT = HERE.parent.parent
ENV_VAR = "PAIMON_LAB_PYPAIMON_PYTHON"
VENV = REPO_ROOT / ".venv-pypaimon"
REQUIREMENT = "pypaimon==2.1.0"
VERSION = "2.1.0"


class PypaimonError(Exception):
    """An exception raised inside the pypaimon worker; ``str()`` includes the remote traceback."""

    def __init__(self, type_name: str, message: str, remote_traceback: str):
        self.type_name, self.message, self.remote_traceback = type_name, message, remote_traceback
        self.text = f"{type_name}: {message}\n--- traceback in the pypaimon worker ---\n{remote_traceback}"
        super().__init__(self.text)

    def __str__(self) -> str:
        return self.text


_remote_classes: dict[str, type] = {}


def remote_error(type_name: str, message: str, remote_traceback: str) -> PypaimonError:
    """A PypaimonError that is also an instance of the remote exception's class when that is a
    builtin (``pytest.raises(NotImplementedError)`` still works across the process boundary)."""
    builtin = getattr(builtins, type_name, None)
    if not (isinstance(builtin, type) and issubclass(builtin, Exception)):
        return PypaimonError(type_name, message, remote_traceback)
    cls = _remote_classes.get(type_name)
    if cls is None:
        try:
            cls = type(f"Pypaimon{type_name}", (PypaimonError, builtin), {})
        except TypeError:  # a builtin whose layout cannot be combined
            cls = PypaimonError
        _remote_classes[type_name] = cls
    try:
        return cls(type_name, message, remote_traceback)
    except TypeError:  # a builtin that insists on its own arguments (UnicodeDecodeError...)
        return PypaimonError(type_name, message, remote_traceback)


class OracleUnavailable(RuntimeError):
    """No usable pypaimon interpreter (or the worker died)."""


def python_path() -> Path:
    """The oracle's interpreter: ``$PAIMON_LAB_PYPAIMON_PYTHON``, else ``<repo>/.venv-pypaimon``."""
    return Path(os.environ.get(ENV_VAR) or VENV / "bin" / "python")


def ensure_venv(venv: Path = VENV, base_python: str | None = None, quiet: bool = True) -> Path:
    """Create ``venv`` with pypaimon 2.1.0 unless it already has it; return its interpreter.

    Idempotent and cheap when done: a stamp file names the requirement installed, and the
    interpreter must still import pypaimon."""
    py = venv / "bin" / "python"
    stamp = venv / ".paimon-lab-stamp"
    if py.exists() and stamp.exists() and stamp.read_text().strip() == REQUIREMENT and subprocess.run(
            [str(py), "-c", "import pypaimon"], capture_output=True).returncode == 0:
        return py
    if not py.exists():
        subprocess.run([base_python or sys.executable, "-m", "venv", str(venv)], check=True)
    q = ["-q"] if quiet else []
    subprocess.run([str(py), "-m", "pip", "install", *q, "--upgrade", "pip"], check=True, stdout=subprocess.DEVNULL)
    subprocess.run([str(py), "-m", "pip", "install", *q, REQUIREMENT], check=True)
    subprocess.run([str(py), "-c", "import pypaimon"], check=True)
    stamp.write_text(REQUIREMENT + "\n")
    return py


class PypaimonOracle:
    """A persistent pypaimon worker, started on first use; thread-safe (one request at a time)."""

    def __init__(self, python: str | os.PathLike | None = None):
        self.python = Path(python) if python else python_path()
        self.versions: dict | None = None
        self._proc: subprocess.Popen | None = None
        self._log = None
        self._lock = threading.Lock()
        self._sources: dict = {}

    # -------------------------------------------------------------- process

    def start(self) -> dict:
        """Start the worker if needed; return its versions ({"pypaimon", "pyarrow", "python"})."""
        with self._lock:
            if self._proc is None or self._proc.poll() is not None:
                self._start()
            return self.versions

    def _start(self) -> None:
        if not self.python.exists():
            raise OracleUnavailable(
                f"no pypaimon interpreter at {self.python}: run ./test.sh or `python "
                f"tests/oracles/pypaimon_oracle.py ensure-venv` (they build {VENV.name}/), or set {ENV_VAR} "
                f"to a Python that has {REQUIREMENT}")
        env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONHOME")}
        self._log = tempfile.TemporaryFile()
        self._proc = subprocess.Popen([str(self.python), str(HERE / "pypaimon_worker.py")], cwd=str(HERE),
                                      stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=self._log, env=env)
        self.versions = self._reply()
        if self.versions.get("pypaimon") != VERSION:
            raise OracleUnavailable(f"{self.python} has pypaimon {self.versions.get('pypaimon')}, not {VERSION}")

    def stderr_tail(self, limit: int = 4000) -> str:
        if self._log is None:
            return ""
        self._log.seek(0)
        return self._log.read().decode(errors="replace")[-limit:]

    def close(self) -> None:
        with self._lock:
            if self._proc is not None:
                try:
                    self._proc.stdin.close()
                    self._proc.wait(timeout=30)
                except Exception:
                    self._proc.kill()
                    self._proc.wait()
                self._proc = None
            if self._log is not None:
                self._log.close()
                self._log = None

    # -------------------------------------------------------------- requests

    def _reply(self):
        try:
            reply = wire.receive(self._proc.stdout)
        except EOFError:
            code = self._proc.wait()
            self._proc = None
            raise OracleUnavailable(f"the pypaimon worker ({self.python}) exited with code {code}; its stderr:\n"
                                    f"{self.stderr_tail()}") from None
        if not reply["ok"]:
            raise remote_error(reply["type"], reply["message"], reply["traceback"])
        return reply["value"]

    def _request(self, request: dict):
        with self._lock:
            if self._proc is None or self._proc.poll() is not None:
                self._start()
            try:
                wire.send(self._proc.stdin, request)
            except BrokenPipeError:
                pass  # the worker died: _reply reports how
            return self._reply()

    def call(self, name: str, *args, **kwargs):
        """Run the worker's named operation ``name`` (see ``pypaimon_worker.OPERATIONS``)."""
        return self._request({"op": "call", "name": name, "args": args, "kwargs": kwargs})

    def run(self, fn, *args, **kwargs):
        """Call ``fn(*args, **kwargs)`` in the worker: ``fn``'s source is sent, not ``fn``.

        ``fn`` must be a module-level or nested function that imports pypaimon itself and uses
        nothing from the test module; its globals there are the worker's ``SNIPPET_GLOBALS``
        (``catalog``, ``table``, ``read_table``... and ``pa``, ``dt``, ``Decimal``, ``UTC``)."""
        source = self._sources.get(fn)
        if source is None:
            source = self._sources[fn] = textwrap.dedent(inspect.getsource(fn))
        return self._request({"op": "run", "source": source, "name": fn.__name__, "args": args, "kwargs": kwargs})

    def __getattr__(self, name: str):
        if name.startswith("_"):
            raise AttributeError(name)
        return lambda *args, **kwargs: self.call(name, *args, **kwargs)


if __name__ == "__main__":
    # python tests/oracles/pypaimon_oracle.py ensure-venv [VENV_DIR]
    if sys.argv[1:2] != ["ensure-venv"]:
        sys.exit("usage: pypaimon_oracle.py ensure-venv [VENV_DIR]")
    print(ensure_venv(Path(sys.argv[2]) if len(sys.argv) > 2 else VENV))
