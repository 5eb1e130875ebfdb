"""Workload registry. A workload is one operation measured on every system.

To add one, drop a module in this package that defines a :class:`Workload` subclass decorated
with :func:`register`; ``python -m bench`` discovers it (``--only NAME`` selects it). The
harness runs, in fresh subprocesses and per system:

* :meth:`Workload.setup` once (untimed; e.g. write the table a read workload scans),
* then for every run: :meth:`Workload.prepare` (untimed), :meth:`Workload.run` (timed, with
  peak memory), then, after the clock has stopped and the peak has been read, :meth:`Workload.check`
  (cheap checks) and :meth:`Workload.verify` (row count + order-free checksum of what the run
  produced, compared with :meth:`Workload.expected`). Every run is verified, the warm-up and each
  timed run; only the warm-up's read-backs also go through the other implementations of the same
  table format (``ctx.cross_check``).

Data sets above ``bench.data.BATCH_ROWS`` rows are *streamed* (``ctx.streamed``): workloads that
support it feed their input in batches and fingerprint their output piece by piece, so nothing
holds all rows at once; the others raise ``NotImplementedError`` there (the cell is ``n/a``).

``targets`` maps a peer system to the largest allowed ratio paimon-lab time / peer time;
``workload_targets`` maps another workload to the largest allowed ratio of paimon-lab's median
here to paimon-lab's median there (e.g. full compaction < 3x one upsert commit); ``step_targets``
maps a timed step (lap) to {peer system: largest allowed ratio of the two systems' median times
of that step}; ``peak_limit``
is an absolute bound on paimon-lab's median peak RSS in bytes.
Systems implement operations through :class:`bench.systems.System`; a system that raises
``NotImplementedError`` for a workload is shown as ``n/a``.

A run that does several timed steps (three upsert commits, a handful of filtered scans) times
each with ``with ctx.lap("name"):``; the run's reported time is then the ``summary`` of its
laps (``"median"`` or ``"sum"``) and every lap is kept (``--json``, and the laps table).
"""

from __future__ import annotations

import contextlib
import importlib
import pkgutil
import statistics
import time
from dataclasses import dataclass, field
from typing import Any, Callable, Iterator

import pyarrow as pa

from ..data import Fingerprint
from ..systems import System

_END = object()


@dataclass
class Context:
    """What a workload sees inside a worker process."""

    rows: int
    data_path: str          # Arrow IPC file with the shared input rows
    expected: Fingerprint   # fingerprint of those rows
    cell_dir: str           # persists across the runs of one (workload, system): setup output
    run_dir: str            # fresh for every run, deleted afterwards
    shared_dir: str = ""    # persists for the whole invocation, per system: tables several workloads reuse
    cache_dir: str = ""     # persists across invocations (--cache-dir): tables that are slow to build
    cross_check: bool = False  # the warm-up: read back by the other implementations too
    laps: dict[str, float] = field(default_factory=dict)
    # the clock of laps: the worker's, or the seconds a system measured inside its own runtime
    clock: Callable[[], float] = time.perf_counter
    paused_seconds: float = 0.0  # time spent in paused() (subtracted from the laps it falls in)
    _data: pa.Table | None = field(default=None, repr=False)

    @property
    def streamed(self) -> bool:
        """The data set is larger than one batch: input and output must be streamed."""
        from ..data import BATCH_ROWS

        return self.rows > BATCH_ROWS

    @contextlib.contextmanager
    def lap(self, name: str) -> Iterator[None]:
        """Time one step of a multi-step run (``perf_counter``, or the system's inside clock),
        minus :meth:`paused` time inside it; kept in ``laps``."""
        start, paused = self.clock(), self.paused_seconds
        try:
            yield
        finally:
            self.laps[name] = self.clock() - start - (self.paused_seconds - paused)

    @contextlib.contextmanager
    def paused(self) -> Iterator[None]:
        """Work inside a lap that is not part of the measured operation (making the next input
        batch, fingerprinting an output piece): its time is left out of the lap."""
        start = self.clock()
        try:
            yield
        finally:
            self.paused_seconds += self.clock() - start

    def paused_iter(self, items):
        """``items`` with the work of producing each item left out of the laps (see :meth:`paused`)."""
        it = iter(items)
        while True:
            with self.paused():
                item = next(it, _END)
            if item is _END:
                return
            yield item

    @property
    def data(self) -> pa.Table:
        """The shared input rows (loaded on first use, so readers do not pay for them)."""
        if self._data is None:
            from ..data import load

            self._data = load(self.data_path)
        return self._data


class Workload:
    name: str = "?"
    description: str = ""
    order: int = 100                 # position in the output table (then by name)
    needs_setup: bool = False
    targets: dict[str, float] = {}   # peer system -> max paimon-lab/peer median-time ratio
    workload_targets: dict[str, float] = {}  # other workload -> max ratio of paimon-lab's medians
    step_targets: dict[str, dict[str, float]] = {}  # lap -> {peer system: max paimon-lab/peer median lap}
    peak_limit: int | None = None    # max paimon-lab median peak RSS (bytes)
    # --scale (two sizes or more): max ratio of paimon-lab's slowest to fastest time per row, and
    # a bound on its median peak RSS at every size (bytes)
    scale_flatness: float | None = None
    scale_peak_limit: int | None = None
    max_repeat: int | None = None    # cap on timed runs (slow workloads); None: --repeat
    # Timed runs with --quick (None: --repeat). 0: the verified warm-up run is the one measurement
    # (no extra process), which keeps CI's smoke run of all workloads short.
    quick_repeat: int | None = 0
    summary: str = "median"          # how a run's laps become its time: "median" or "sum"
    systems: tuple[str, ...] | None = None  # only these systems take part (None: all)
    requires: tuple[str, ...] = ()   # System methods the timed operation needs (else the cell is n/a)

    # The process tree is measured, not just the worker: CPU time and peak RSS include child
    # processes (Spark's JVM and its Python workers), see bench.worker.
    process_tree: bool = False

    def unavailable(self) -> str | None:
        """Why the workload cannot run on this machine at all (every cell is then n/a), or None."""
        return None

    def expected(self, ctx: Context) -> Fingerprint:
        """What :meth:`verify`'s fingerprints must equal (default: the input rows)."""
        return ctx.expected

    def run_seconds(self, laps: dict[str, float]) -> float:
        values = list(laps.values())
        return sum(values) if self.summary == "sum" else statistics.median(values)

    def setup(self, ctx: Context, system: System) -> None:
        """Once per system before any run, in its own process (untimed)."""

    def prepare(self, ctx: Context, system: System) -> Any:
        """Per run, untimed; the return value is handed to :meth:`run`."""
        return None

    def run(self, ctx: Context, system: System, state: Any) -> Any:
        """The measured operation."""
        raise NotImplementedError

    def verify(self, ctx: Context, system: System, state: Any, result: Any) -> dict[str, Fingerprint]:
        """Full correctness check of every run (after the clock stops): fingerprints of what the
        run produced or wrote (read back), by who read it; must not be empty."""
        return {}

    def check(self, ctx: Context, system: System, state: Any, result: Any) -> list[str]:
        """Cheap extra check of every run (e.g. the row count); returns problems."""
        return []


WORKLOADS: dict[str, Workload] = {}
_discovered = False


def register(cls: type[Workload]) -> type[Workload]:
    if cls.name in WORKLOADS:
        raise ValueError(f"workload {cls.name!r} registered twice")
    WORKLOADS[cls.name] = cls()
    return cls


def all_workloads() -> dict[str, Workload]:
    """Every registered workload, importing this package's modules on first call."""
    global _discovered
    if not _discovered:
        for info in pkgutil.iter_modules(__path__):
            if not info.name.startswith("_"):
                importlib.import_module(f"{__name__}.{info.name}")
        _discovered = True
    return dict(sorted(WORKLOADS.items(), key=lambda kv: (kv[1].order, kv[0])))


def get(name: str) -> Workload:
    return all_workloads()[name]
