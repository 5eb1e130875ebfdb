"""pyarrow's default memory pool: jemalloc on Linux unless the user chose one.

pyarrow allocates from mimalloc by default. In a fresh process already holding a large Arrow
table, paimon-lab's reads then spent much of their time in the kernel: six filtered scans of the
benchmark's 1,000,000-row tables (bench ``point_filter_sql``, 27 Nov 2026, 2-core Linux VM) took
a median 523 ms of CPU, 100-230 ms of it system time, against 349 ms (20-70 ms system) with
pyarrow's jemalloc pool, which also releases freed pages at once (decay 0).

So importing paimon_lab makes jemalloc pyarrow's default pool where pyarrow has it, on Linux,
unless ``ARROW_DEFAULT_MEMORY_POOL`` names a pool (pyarrow's own choice then stands) or
``PAIMON_LAB_MEMORY_POOL=keep`` (``jemalloc``, the default, is the other value it takes).
"""

from __future__ import annotations

import os
import sys

import pyarrow as pa

from paimon_lab.errors import OptionError

ENV = "PAIMON_LAB_MEMORY_POOL"


def prefer_jemalloc() -> str:
    """Make jemalloc pyarrow's default memory pool where that applies (see the module
    docstring); returns the backend name of the default pool afterwards."""
    current = pa.default_memory_pool().backend_name
    choice = os.environ.get(ENV, "").strip().lower()
    if choice not in ("", "keep", "jemalloc"):
        raise OptionError(f"{ENV}={os.environ[ENV]!r}: expected 'keep' (pyarrow's default memory pool) "
                          "or 'jemalloc'")
    if os.environ.get("ARROW_DEFAULT_MEMORY_POOL") or choice == "keep":
        return current
    if not sys.platform.startswith("linux") or current == "jemalloc":
        return current
    try:
        pool = pa.jemalloc_memory_pool()
    except (NotImplementedError, pa.ArrowNotImplementedError):
        return current
    pa.set_memory_pool(pool)
    return pool.backend_name


__all__ = ["ENV", "prefer_jemalloc"]
