"""Writing the file index of a data file as it is finished (Java's ``DataFileIndexWriter``
inside ``RowDataFileWriter`` and, from Paimon 1.0, ``KeyValueDataFileWriter``)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import pyarrow as pa

from paimon_lab.fileindex import (
    build_file_index,
    embed_in_manifest,
    file_index_columns,
    index_file_name,
)
from paimon_lab.io.file_io import FileIO

__all__ = ["DataFileIndexer", "data_file_indexer"]


class DataFileIndexer:
    """Builds the index of each finished data file over the table's columns: embedded in the
    manifest when it fits ``file-index.in-manifest-threshold``, else written as
    ``<data file>.index`` beside it."""

    def __init__(self, file_io: FileIO, options: Mapping[str, str], fields: Sequence[Any]):
        self.file_io, self.options, self.fields = file_io, options, list(fields)
        self.names = [f.name for f in self.fields]
        self.written: list[str] = []  # index files written, for clean-up when a write fails

    def __call__(self, data_path: str, rows: pa.Table) -> tuple[bytes | None, tuple[str, ...]]:
        """``(embedded bytes, extra files)`` of the data file at ``data_path`` holding ``rows``
        (a table with at least the table's columns, in file order)."""
        data = build_file_index(rows.select(self.names), self.options, self.fields)
        if data is None:
            return None, ()
        if embed_in_manifest(data, self.options):
            return data, ()
        directory, _, file_name = data_path.rpartition("/")
        name = index_file_name(file_name)
        path = f"{directory}/{name}"
        self.file_io.write_bytes(path, data)
        self.written.append(path)
        return None, (name,)


def data_file_indexer(file_io: FileIO, options: Mapping[str, str], fields: Sequence[Any]) -> DataFileIndexer | None:
    """The indexer of a table's data files, or None when no ``file-index.<type>.columns`` is set."""
    return DataFileIndexer(file_io, options, fields) if file_index_columns(options) else None
