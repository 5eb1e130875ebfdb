"""The benchmark data set: generated once with a fixed seed, saved, and shared by every system.

``generate`` builds the rows with numpy (random numbers) and Arrow kernels (string formatting),
so 1,000,000 rows take well under a second. ``checksum`` fingerprints a table independently of
row order, so data read back can be compared with what was written.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Iterable, Iterator
from dataclasses import asdict, dataclass

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

SEED = 20240101
NUM_PARTITIONS = 10
PARTITION_KEYS = ["dt"]
DATES = [f"2024-01-{d + 1:02d}" for d in range(NUM_PARTITIONS)]
# Data sets larger than this are generated, saved and fingerprinted one batch of this many rows at a
# time, and the workloads that support it stream them (``Context.streamed``): nothing holds them whole.
# $PAIMON_BENCH_BATCH_ROWS lowers it so tests can exercise the streamed path on small data sets.
BATCH_ROWS = int(os.environ.get("PAIMON_BENCH_BATCH_ROWS") or 1_000_000)

# Paimon types: id BIGINT, name STRING, value DOUBLE, dt STRING (the partition key).
SCHEMA = pa.schema([
    pa.field("id", pa.int64()),
    pa.field("name", pa.string()),
    pa.field("value", pa.float64()),
    pa.field("dt", pa.string()),
])


def generate(num_rows: int, seed: int = SEED) -> pa.Table:
    """``num_rows`` rows of (id, name, value, dt); the same arguments always give the same table.

    ``id`` is a shuffled 0..n-1 (unique), ``name`` a variable-length string, ``value`` a uniform
    double and ``dt`` one of ``NUM_PARTITIONS`` dates. Rows arrive in random partition order, so
    every writer has to split them by partition.
    """
    rng = np.random.default_rng(seed)
    ids = rng.permutation(num_rows).astype(np.int64)
    name_numbers = pa.array(rng.integers(0, 10 ** rng.integers(1, 9, num_rows)), pa.int64())
    names = pc.binary_join_element_wise("name-", pc.cast(name_numbers, pa.string()), "")
    values = rng.standard_normal(num_rows) * 1000.0
    dates = pa.array(DATES, pa.string())
    dt = dates.take(pa.array(rng.integers(0, NUM_PARTITIONS, num_rows)))
    return pa.Table.from_arrays([pa.array(ids), names, pa.array(values), dt], schema=SCHEMA)


def batch_seed(seed: int, i: int):
    """The seed of batch ``i`` of a batched data set (batch 0: ``seed`` itself, so a data set of at
    most ``BATCH_ROWS`` rows is the same however it is made)."""
    return seed if i == 0 else [seed, i]


def generate_batches(num_rows: int, seed: int = SEED, batch_rows: int | None = None) -> Iterator[pa.Table]:
    """The data set of ``num_rows`` rows as consecutive batches of ``batch_rows`` (default
    ``BATCH_ROWS``) rows, made one at a time. Batch ``i`` is :func:`generate` of its size with
    :func:`batch_seed` ``(seed, i)`` and its ids shifted by ``i * batch_rows``: ids stay unique."""
    batch_rows = batch_rows or BATCH_ROWS
    for i, start in enumerate(range(0, num_rows, batch_rows)):
        rows = generate(min(batch_rows, num_rows - start), seed=batch_seed(seed, i))
        if start:
            rows = rows.set_column(0, "id", pa.array(rows.column("id").to_numpy() + start))
        yield rows


def write_data_set(num_rows: int, path: str) -> Fingerprint:
    """Generate the data set batch by batch into an uncompressed Arrow IPC file (one record batch
    per batch) and return its fingerprint; memory holds one batch at a time."""
    with pa.OSFile(path, "wb") as sink, pa.ipc.new_file(sink, SCHEMA) as writer:
        def pieces():
            for rows in generate_batches(num_rows):
                writer.write_table(rows, max_chunksize=BATCH_ROWS)
                yield rows

        return fingerprint_pieces(pieces())


def read_batches(path: str) -> Iterator[pa.Table]:
    """The record batches of an IPC file one at a time, each read into ordinary memory (not
    memory-mapped: mapped pages would count in the reader's resident set until evicted)."""
    with pa.OSFile(path, "rb") as source:
        reader = pa.ipc.open_file(source)
        for i in range(reader.num_record_batches):
            yield pa.Table.from_batches([reader.get_batch(i)])


def save(table: pa.Table, path: str) -> None:
    """Write an uncompressed Arrow IPC file (loading it is a plain copy, no decoding)."""
    with pa.OSFile(path, "wb") as sink, pa.ipc.new_file(sink, table.schema) as writer:
        writer.write_table(table)


def load(path: str) -> pa.Table:
    """Read the IPC file into ordinary (anonymous) memory, not a memory map."""
    with pa.OSFile(path, "rb") as source:
        return pa.ipc.open_file(source).read_all()


@dataclass(frozen=True)
class Fingerprint:
    """What verification compares: row count, column names/types, and an order-free checksum."""

    rows: int
    columns: tuple[str, ...]
    types: tuple[str, ...]
    checksum: str

    def to_json(self) -> dict:
        return asdict(self)

    @classmethod
    def from_json(cls, obj: dict) -> "Fingerprint":
        return cls(int(obj["rows"]), tuple(obj["columns"]), tuple(obj["types"]), str(obj["checksum"]))

    def diff(self, other: "Fingerprint") -> list[str]:
        """Human-readable differences (empty if equal)."""
        out = []
        if self.rows != other.rows:
            out.append(f"row count {other.rows} != expected {self.rows}")
        if self.columns != other.columns:
            out.append(f"columns {list(other.columns)} != expected {list(self.columns)}")
        elif self.types != other.types:
            out.append(f"types {list(other.types)} != expected {list(self.types)}")
        if self.checksum != other.checksum:
            out.append(f"checksum {other.checksum} != expected {self.checksum}")
        return out


def _normalize(table: pa.Table) -> pa.Table:
    # large_string vs string (or a chunked layout) is a representation detail, not a data change.
    fields = [pa.field(f.name, pa.string() if pa.types.is_large_string(f.type) else f.type)
              for f in table.schema]
    return table.cast(pa.schema(fields)).combine_chunks()


def checksum(table: pa.Table) -> str:
    """An order-independent content checksum: wrapping sum of per-row 64-bit hashes.

    Every row is hashed over all of its columns (pandas' vectorized ``hash_pandas_object``);
    summing the row hashes modulo 2**64 makes the result independent of row order (readers may
    return partitions in any order) while any changed, lost or duplicated row changes it.
    """
    return finish_checksum(row_hash_sum(table), table.num_rows)


def row_hash_sum(table: pa.Table) -> int:
    """The wrapping 64-bit sum of the row hashes of ``table``: sums of pieces add up (mod 2**64)
    to the sum of the whole, so big tables can be fingerprinted piece by piece."""
    import pandas as pd

    df = _normalize(table).to_pandas()
    row_hashes = pd.util.hash_pandas_object(df, index=False).to_numpy(np.uint64)
    return int(row_hashes.sum(dtype=np.uint64))  # numpy uint64 addition wraps around


def finish_checksum(total: int, rows: int) -> str:
    total %= 2 ** 64
    return hashlib.sha256(total.to_bytes(8, "little") + str(rows).encode()).hexdigest()[:16]


class Accumulator:
    """Fingerprints a table arriving in pieces (any order, any sizes); hashes at most
    ``BATCH_ROWS`` rows at a time, so the extra memory stays small whatever the piece size."""

    def __init__(self):
        self.total = self.rows = 0
        self.schema: pa.Schema | None = None

    def add(self, piece: pa.Table) -> None:
        if self.schema is None and piece.num_rows == 0:
            self.schema = _normalize(piece).schema
        for batch in piece.to_batches(max_chunksize=BATCH_ROWS):
            norm = _normalize(pa.Table.from_batches([batch], schema=piece.schema))
            self.schema = self.schema or norm.schema
            self.total += row_hash_sum(norm)
            self.rows += norm.num_rows

    def result(self) -> Fingerprint:
        if self.schema is None:
            return fingerprint(SCHEMA.empty_table())
        return Fingerprint(self.rows, tuple(self.schema.names), tuple(str(t) for t in self.schema.types),
                           finish_checksum(self.total, self.rows))


def fingerprint_pieces(pieces: Iterable[pa.Table]) -> Fingerprint:
    """The fingerprint of the concatenation of ``pieces`` (an iterable of tables with the same
    columns), without holding them all in memory at once."""
    acc = Accumulator()
    for piece in pieces:
        acc.add(piece)
    return acc.result()


def fingerprint(table: pa.Table) -> Fingerprint:
    norm = _normalize(table)
    return Fingerprint(norm.num_rows, tuple(norm.column_names), tuple(str(t) for t in norm.schema.types),
                       checksum(norm))


def fingerprint_like(table: pa.Table, expected: Fingerprint) -> Fingerprint:
    """Fingerprint ``table`` after putting its columns in the expected order (if it has them all)."""
    if set(table.column_names) == set(expected.columns):
        table = table.select(list(expected.columns))
    return fingerprint(table)
