"""The pyarrow floor's machinery (:class:`bench.systems.PyArrowFloor`): its settings, the per-column
encoding rule it shares with paimon-lab, concurrent per-partition writes and the dataset it reads.
"""

from __future__ import annotations

import os
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.dataset as ds
import pyarrow.parquet as pq

# Printed with every report that includes the floor (and in bench/README.md).
SETTINGS = {
    "encodings": "dictionary per column unless its first 2,048 values are >= 95% distinct (then PLAIN), "
                 "as paimon-lab; statistics on",
    "write_threads": os.cpu_count() or 1,  # partitions written concurrently, one file each
    "read_threads": True,                  # pyarrow.dataset use_threads
    "pre_buffer": True,                    # coalesced, concurrent reads of each file's column chunks
}


def settings_text(compression: str) -> str:
    f = SETTINGS
    return (f"pyarrow floor: parquet {compression}; {f['encodings']}; writes one file per partition on a "
            f"pool of {f['write_threads']} threads; reads pyarrow.dataset use_threads={f['read_threads']}, "
            f"pre_buffer={f['pre_buffer']}")


def dictionary_columns(rows: pa.Table) -> list[str]:
    """The columns that get a dictionary (paimon-lab's rule: not when a sample is almost all distinct)."""
    out = []
    for name, column in zip(rows.column_names, rows.columns):
        head = column.slice(0, 2048)
        n = len(head) - head.null_count
        if n < 64 or pc.count_distinct(head).as_py() <= 0.95 * n:
            out.append(name)
    return out


def write_partitions(rows: pa.Table, jobs: list[tuple[str, int, int]], compression: str, level: int) -> None:
    """Write ``rows.slice(start, count)`` to ``<directory>/data-0.parquet`` for every job, concurrently."""
    dictionary = dictionary_columns(rows)

    def one(job):
        directory, start, count = job
        os.makedirs(directory, exist_ok=True)
        pq.write_table(rows.slice(start, count), os.path.join(directory, "data-0.parquet"),
                       compression=compression, compression_level=level, use_dictionary=dictionary,
                       write_statistics=True)

    workers = min(SETTINGS["write_threads"], len(jobs))
    if workers <= 1:
        for job in jobs:
            one(job)
        return
    with ThreadPoolExecutor(workers) as pool:
        list(pool.map(one, jobs))


def dataset(files: list[str]) -> ds.Dataset:
    fmt = ds.ParquetFileFormat(default_fragment_scan_options=ds.ParquetFragmentScanOptions(
        pre_buffer=SETTINGS["pre_buffer"]))
    return ds.dataset(files, format=fmt)


def runs(sorted_values: pa.ChunkedArray) -> list[tuple[Any, int]]:
    """(value, run length) of a sorted column, in order."""
    counts = pc.run_end_encode(sorted_values.combine_chunks())
    ends = counts.run_ends.to_pylist()
    values = counts.values.to_pylist()
    return [(v, e - s) for v, s, e in zip(values, [0] + ends[:-1], ends)]
