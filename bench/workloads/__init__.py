"""Workload registry. A workload is one operation measured on every system.

To add one, drop a module in this package that defines a :class:`Workload` subclass decorated
with :func:`register`; ``python -m bench`` discovers it (``--only NAME`` selects it). The
harness runs, in fresh subprocesses and per system:

* :meth:`Workload.setup` once (untimed; e.g. write the table a read workload scans),
* then for every run: :meth:`Workload.prepare` (untimed), :meth:`Workload.run` (timed, with
  peak memory), and either :meth:`Workload.verify` (the warm-up run: full row count + checksum
  comparison) or :meth:`Workload.check` (timed runs: cheap checks only, so they do not inflate
  the measured memory).

``targets`` maps a peer system to the largest allowed ratio paimon-lab time / peer time.
Systems implement operations through :class:`bench.systems.System`; a system that raises
``NotImplementedError`` for a workload is shown as ``n/a``.
"""

from __future__ import annotations

import importlib
import pkgutil
from dataclasses import dataclass, field
from typing import Any

import pyarrow as pa

from ..data import Fingerprint
from ..systems import System


@dataclass
class Context:
    """What a workload sees inside a worker process."""

    rows: int
    data_path: str          # Arrow IPC file with the shared input rows
    expected: Fingerprint   # fingerprint of those rows
    cell_dir: str           # persists across the runs of one (workload, system): setup output
    run_dir: str            # fresh for every run, deleted afterwards
    _data: pa.Table | None = field(default=None, repr=False)

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

    def setup(self, ctx: Context, system: System) -> None:
        """Once per system before any run, in its own process (untimed)."""

    def prepare(self, ctx: Context, system: System) -> Any:
        """Per run, untimed; the return value is handed to :meth:`run`."""
        return None

    def run(self, ctx: Context, system: System, state: Any) -> Any:
        """The measured operation."""
        raise NotImplementedError

    def verify(self, ctx: Context, system: System, state: Any, result: Any) -> dict[str, Fingerprint]:
        """Full correctness check: fingerprints of what was read back, by who read it."""
        return {}

    def check(self, ctx: Context, system: System, state: Any, result: Any) -> list[str]:
        """Cheap per-run check (no big allocations); returns problems."""
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
