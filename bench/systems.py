"""The systems under test, each behind the same small adapter interface.

A workload only talks to :class:`System` methods, so adding a workload usually means adding a
method here (and implementing it per system); a system that does not implement a method raises
``NotImplementedError`` and the harness reports that cell as ``n/a`` instead of failing.

``"table"`` handles are whatever the system needs to find its table again (a ``Table`` object,
or a directory); :meth:`System.open` recreates one from the warehouse path in a new process.
"""

from __future__ import annotations

import glob
import importlib
import os
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.dataset as ds
import pyarrow.parquet as pq

from . import data

TABLE_ID = "bench.t"

# Parquet compression used by every system: Paimon's defaults, file.compression=zstd and
# file.compression.zstd-level=1. paimon_lab and pypaimon use them implicitly; the pyarrow floor
# is given them explicitly.
COMPRESSION = "zstd"
ZSTD_LEVEL = 1
APPEND_OPTIONS = {"bucket": "-1", "file.format": "parquet",
                  "file.compression": COMPRESSION, "file.compression.zstd-level": str(ZSTD_LEVEL)}


class System:
    name = "?"
    label = "?"
    module = None  # import name whose absence makes the system unavailable
    table_format = "?"  # systems with the same format can read each other's tables

    @classmethod
    def available(cls) -> str | None:
        """None if usable, else why not."""
        if cls.module is None:
            return None
        try:
            importlib.import_module(cls.module)
        except Exception as e:  # ImportError, or a broken install
            return f"cannot import {cls.module}: {e}"
        return None

    @classmethod
    def version(cls) -> str:
        if cls.module is None:
            return ""
        try:
            mod = importlib.import_module(cls.module)
        except Exception:
            return "missing"
        ver = getattr(mod, "__version__", None)
        if ver is None:
            from importlib.metadata import PackageNotFoundError, version
            try:
                ver = version(cls.module)
            except PackageNotFoundError:
                ver = "?"
        return str(ver)

    # --- table lifecycle -------------------------------------------------------------------
    def create_append_table(self, warehouse: str, schema: pa.Schema, partition_keys: list[str]) -> Any:
        """Create an empty append-only table (bucket -1, parquet, zstd level 1)."""
        raise NotImplementedError

    def open(self, warehouse: str) -> Any:
        """The table created in ``warehouse`` by :meth:`create_append_table`."""
        raise NotImplementedError

    # --- operations (these are what gets timed) --------------------------------------------
    def write(self, table: Any, rows: pa.Table) -> None:
        """Write ``rows`` as exactly one commit."""
        raise NotImplementedError

    def read(self, table: Any) -> pa.Table:
        """Full scan of the latest snapshot."""
        raise NotImplementedError

    def prime(self, scratch_dir: str) -> None:
        """Create, write and read a tiny table so lazy imports and first-call costs are paid
        before the clock starts (every worker does this; the timed operation is steady-state)."""
        try:
            table = self.create_append_table(scratch_dir, data.SCHEMA, data.PARTITION_KEYS)
            self.write(table, data.generate(200, seed=1))
            self.read(self.open(scratch_dir))
        except NotImplementedError:
            pass


# ----------------------------------------------------------------------------- paimon-lab

class PaimonLab(System):
    name = "paimon_lab"
    label = "paimon-lab"
    module = "paimon_lab"
    table_format = "paimon"

    def create_append_table(self, warehouse, schema, partition_keys):
        from paimon_lab import Catalog

        catalog = Catalog(warehouse)
        catalog.create_database(TABLE_ID.split(".")[0], ignore_if_exists=True)
        return catalog.create_table(TABLE_ID, schema, partition_keys=partition_keys, options=APPEND_OPTIONS)

    def open(self, warehouse):
        from paimon_lab import Catalog

        return Catalog(warehouse).get_table(TABLE_ID)

    def write(self, table, rows):
        table.write(rows)

    def read(self, table):
        return table.to_arrow()


# ----------------------------------------------------------------------------- pypaimon

class PyPaimon(System):
    name = "pypaimon"
    label = "pypaimon"
    module = "pypaimon"
    table_format = "paimon"

    @staticmethod
    def _catalog(warehouse):
        from pypaimon import CatalogFactory

        return CatalogFactory.create({"warehouse": warehouse})

    def create_append_table(self, warehouse, schema, partition_keys):
        from pypaimon import Schema

        catalog = self._catalog(warehouse)
        catalog.create_database(TABLE_ID.split(".")[0], True)
        catalog.create_table(TABLE_ID, Schema.from_pyarrow_schema(
            schema, partition_keys=partition_keys, options=APPEND_OPTIONS), False)
        return catalog.get_table(TABLE_ID)

    def open(self, warehouse):
        return self._catalog(warehouse).get_table(TABLE_ID)

    def write(self, table, rows):
        builder = table.new_batch_write_builder()
        writer = builder.new_write()
        committer = builder.new_commit()
        try:
            writer.write_arrow(rows)
            committer.commit(writer.prepare_commit())
        finally:
            writer.close()
            committer.close()

    def read(self, table):
        builder = table.new_read_builder()
        splits = builder.new_scan().plan().splits()
        return builder.new_read().to_arrow(splits)


# ----------------------------------------------------------------------------- the floor

class PyArrowFloor(System):
    """Plain pyarrow: the same per-partition Parquet files with no table format around them.

    Write: split rows by partition (one stable sort of the dictionary codes, one ``take``) and
    ``pq.write_table`` one file per partition into ``dt=<value>/``, zstd level 1 like Paimon.
    Read: ``pyarrow.dataset`` over the list of those files. No snapshot, manifest or schema
    files: this is the lower bound a table format's overhead is measured against.
    """

    name = "pyarrow"
    label = "pyarrow (floor)"
    module = "pyarrow"
    table_format = "parquet-dirs"

    def create_append_table(self, warehouse, schema, partition_keys):
        if partition_keys != ["dt"]:
            raise NotImplementedError("the pyarrow floor only partitions by a single 'dt' column")
        path = os.path.join(warehouse, "floor")
        os.makedirs(path, exist_ok=True)
        return path

    def open(self, warehouse):
        return os.path.join(warehouse, "floor")

    def write(self, table, rows):
        encoded = rows.column("dt").combine_chunks().dictionary_encode()
        codes = encoded.indices.to_numpy(zero_copy_only=False)
        order = np.argsort(codes, kind="stable")
        counts = np.bincount(codes, minlength=len(encoded.dictionary))
        grouped = rows.take(pa.array(order))
        start = 0
        for value, count in zip(encoded.dictionary.to_pylist(), counts.tolist()):
            if count == 0:
                continue
            directory = os.path.join(table, f"dt={value}")
            os.makedirs(directory, exist_ok=True)
            pq.write_table(grouped.slice(start, count), os.path.join(directory, "data-0.parquet"),
                           compression=COMPRESSION, compression_level=ZSTD_LEVEL)
            start += count

    def read(self, table):
        files = sorted(glob.glob(os.path.join(table, "dt=*", "*.parquet")))
        if not files:
            return data.SCHEMA.empty_table()
        # pyarrow.dataset over the explicit file list reads the files concurrently (a tighter
        # floor than a loop of pq.read_table + concat_tables); dt is a column inside the files,
        # so no partition discovery.
        return ds.dataset(files, format="parquet").to_table()


SYSTEMS: dict[str, type[System]] = {cls.name: cls for cls in (PaimonLab, PyPaimon, PyArrowFloor)}
LAB = PaimonLab.name


def get(name: str) -> System:
    return SYSTEMS[name]()


__all__ = ["System", "SYSTEMS", "LAB", "get", "COMPRESSION", "ZSTD_LEVEL"]
