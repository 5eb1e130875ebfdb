"""Importing paimon_lab leaves pyarrow's default memory pool alone unless
``PAIMON_LAB_MEMORY_POOL=jemalloc`` asks for jemalloc (and ``ARROW_DEFAULT_MEMORY_POOL`` does not
name a pool)."""

from __future__ import annotations

import os
import subprocess
import sys

import pyarrow as pa
import pytest

from paimon_lab.io.memory import ENV

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
HAS_JEMALLOC = "jemalloc" in pa.supported_memory_backends()


def _pool_after_import(**env: str) -> subprocess.CompletedProcess:
    clean = {k: v for k, v in os.environ.items() if k not in ("ARROW_DEFAULT_MEMORY_POOL", ENV)}
    clean["PYTHONPATH"] = os.pathsep.join(p for p in (ROOT, clean.get("PYTHONPATH")) if p)
    code = ("import pyarrow as pa; before = pa.default_memory_pool().backend_name; import paimon_lab; "
            "print(before, pa.default_memory_pool().backend_name)")
    return subprocess.run([sys.executable, "-c", code], env={**clean, **env}, capture_output=True, text=True,
                          check=False)


@pytest.mark.skipif(not sys.platform.startswith("linux") or not HAS_JEMALLOC, reason="jemalloc on Linux only")
def test_jemalloc_only_when_asked():
    before, after = _pool_after_import().stdout.split()
    assert after == before
    kept = _pool_after_import(**{ENV: "keep"}).stdout.split()
    assert kept[0] == kept[1] == before
    asked = _pool_after_import(**{ENV: "jemalloc"}).stdout.split()
    assert asked[1] == "jemalloc"
    chosen = _pool_after_import(ARROW_DEFAULT_MEMORY_POOL="system", **{ENV: "jemalloc"}).stdout.split()
    assert chosen == ["system", "system"]


def test_an_unknown_setting_is_refused():
    proc = _pool_after_import(**{ENV: "fastest"})
    assert proc.returncode != 0 and "PAIMON_LAB_MEMORY_POOL='fastest'" in proc.stderr
