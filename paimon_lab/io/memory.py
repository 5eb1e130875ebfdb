"""pyarrow's default memory pool, by choice: ``PAIMON_LAB_MEMORY_POOL=jemalloc`` makes pyarrow's
bundled jemalloc the default pool when paimon_lab is imported (Linux, where pyarrow has it);
unset or ``keep`` leaves pyarrow's own default (mimalloc) alone, as does ``ARROW_DEFAULT_MEMORY_POOL``.

Measured on a 2-core Linux VM (bench, 1,000,000 rows, 27 Nov 2026, idle machine): jemalloc made
the six filtered scans of ``point_filter`` / ``point_filter_sql`` 10-20% faster (a fresh process
holding a large table spent 100-230 ms of system time in mimalloc there) but the full reads
20-40% slower (``pk_read`` 0.105 s against 0.082 s, ``wide_cdc`` 0.349 s against 0.295 s, the
compacted wide read 0.213 s against 0.153 s), so pyarrow's default stays the default.
"""

from __future__ import annotations

import os
import sys

import pyarrow as pa

from paimon_lab.errors import OptionError

ENV = "PAIMON_LAB_MEMORY_POOL"


def prefer_jemalloc() -> str:
    """Make jemalloc pyarrow's default memory pool where the user asked for it (see the module
    docstring); returns the backend name of the default pool afterwards."""
    current = pa.default_memory_pool().backend_name
    choice = os.environ.get(ENV, "").strip().lower()
    if choice not in ("", "keep", "jemalloc"):
        raise OptionError(f"{ENV}={os.environ[ENV]!r}: expected 'keep' (pyarrow's default memory pool) "
                          "or 'jemalloc'")
    if os.environ.get("ARROW_DEFAULT_MEMORY_POOL") or choice != "jemalloc":
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
