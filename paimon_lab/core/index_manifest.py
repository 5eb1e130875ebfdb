"""Index manifests: the Avro files that list a snapshot's index files.

Index files (deletion vectors, dynamic-bucket hashes, global indexes) live in ``{table}/index/``
named ``index-{uuid}-{n}`` (or next to the data files with ``index-file-in-data-file-dir``, or
at ``external_path``). A snapshot's ``indexManifest`` names one Avro file in
``{table}/manifest/``, ``index-manifest-{uuid}-{n}``, that lists **all** live index files of the
snapshot as ADD entries: each commit that changes index files reads the previous index
manifest, folds in its ADD/DELETE changes (:func:`merge_index_entries`) and writes a new
complete one (Java's ``IndexManifestFile.writeIndexFiles`` / ``IndexManifestFileHandler``).
A commit without index changes keeps the previous name.

The Avro record is Java's ``IndexManifestEntry.MANIFEST_ROW_TYPE`` converted by
``AvroSchemaConverter``: ``_VERSION`` (format identifier, always 1) then the entry's fields.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Iterable, Mapping, Sequence

import fastavro

from paimon_lab.core.deletion_vector import DELETION_VECTORS_INDEX, DeletionVectorMeta
from paimon_lab.errors import CorruptFileError
from paimon_lab.io.file_io import FileIO, join
from paimon_lab.core.hash_index import HASH_INDEX
from paimon_lab.core.manifest import ADD, DELETE, FileNamer, _NS, _opt, _read_avro, _write_avro

__all__ = [
    "ADD",
    "DELETE",
    "DELETION_VECTORS_INDEX",
    "HASH_INDEX",
    "INDEX_DIR",
    "INDEX_FILE_PREFIX",
    "INDEX_MANIFEST_PREFIX",
    "INDEX_MANIFEST_SCHEMA",
    "INDEX_MANIFEST_VERSION",
    "GlobalIndexMeta",
    "IndexFileMeta",
    "IndexManifestEntry",
    "commit_index_changes",
    "index_file_path",
    "merge_index_entries",
    "read_index_manifest",
    "write_index_manifest",
]

INDEX_MANIFEST_VERSION = 1  # IndexManifestEntrySerializer.FORMAT_IDENTIFIER
INDEX_DIR = "index"
INDEX_FILE_PREFIX = "index-"
INDEX_MANIFEST_PREFIX = "index-manifest-"

_DV_META_SCHEMA = {"type": "record", "name": "record__DELETIONS_VECTORS_RANGES", "fields": [
    {"name": "f0", "type": "string"},
    {"name": "f1", "type": "int"},
    {"name": "f2", "type": "int"},
    {"name": "_CARDINALITY", "type": _opt("long"), "default": None},
]}
_GLOBAL_INDEX_SCHEMA = {"type": "record", "name": "record__GLOBAL_INDEX", "fields": [
    {"name": "_ROW_RANGE_START", "type": "long"},
    {"name": "_ROW_RANGE_END", "type": "long"},
    {"name": "_INDEX_FIELD_ID", "type": "int"},
    {"name": "_EXTRA_FIELD_IDS", "type": _opt({"type": "array", "items": "int"}), "default": None},
    {"name": "_INDEX_META", "type": _opt("bytes"), "default": None},
    {"name": "_SOURCE_META", "type": _opt("bytes"), "default": None},
]}
INDEX_MANIFEST_SCHEMA = fastavro.parse_schema({
    "type": "record", "name": "record", "namespace": _NS, "fields": [
        {"name": "_VERSION", "type": "int"},
        {"name": "_KIND", "type": "int"},  # TINYINT in Java, an Avro int on disk
        {"name": "_PARTITION", "type": "bytes"},
        {"name": "_BUCKET", "type": "int"},
        {"name": "_INDEX_TYPE", "type": "string"},
        {"name": "_FILE_NAME", "type": "string"},
        {"name": "_FILE_SIZE", "type": "long"},
        {"name": "_ROW_COUNT", "type": "long"},
        {"name": "_DELETIONS_VECTORS_RANGES", "type": _opt({"type": "array", "items": _DV_META_SCHEMA}),
         "default": None},
        {"name": "_EXTERNAL_PATH", "type": _opt("string"), "default": None},
        {"name": "_GLOBAL_INDEX", "type": _opt(_GLOBAL_INDEX_SCHEMA), "default": None},
    ]})


@dataclass(frozen=True)
class GlobalIndexMeta:
    """Row range and field of a global index file (``_GLOBAL_INDEX``); kept opaque here."""

    row_range_start: int
    row_range_end: int
    index_field_id: int
    extra_field_ids: tuple[int, ...] | None = None
    index_meta: bytes | None = None
    source_meta: bytes | None = None

    def to_avro(self) -> dict:
        return {"_ROW_RANGE_START": self.row_range_start, "_ROW_RANGE_END": self.row_range_end,
                "_INDEX_FIELD_ID": self.index_field_id,
                "_EXTRA_FIELD_IDS": list(self.extra_field_ids) if self.extra_field_ids is not None else None,
                "_INDEX_META": self.index_meta, "_SOURCE_META": self.source_meta}

    @staticmethod
    def from_avro(rec: dict) -> "GlobalIndexMeta":
        extra = rec.get("_EXTRA_FIELD_IDS")
        return GlobalIndexMeta(rec["_ROW_RANGE_START"], rec["_ROW_RANGE_END"], rec["_INDEX_FIELD_ID"],
                               tuple(extra) if extra is not None else None,
                               rec.get("_INDEX_META"), rec.get("_SOURCE_META"))


@dataclass(frozen=True)
class IndexFileMeta:
    """One index file. ``dv_ranges`` (deletion-vector files only) lists where each data file's
    vector is, in file order; ``None`` for other index types. An empty list (a DV file written
    for a bucket that no longer has deletions) stays distinct from ``None``, as in Java."""

    index_type: str
    file_name: str
    file_size: int
    row_count: int
    dv_ranges: tuple[DeletionVectorMeta, ...] | None = None
    external_path: str | None = None
    global_index: GlobalIndexMeta | None = field(default=None)

    def __post_init__(self):
        if self.dv_ranges is not None and not isinstance(self.dv_ranges, tuple):
            ranges = self.dv_ranges.values() if isinstance(self.dv_ranges, Mapping) else self.dv_ranges
            object.__setattr__(self, "dv_ranges", tuple(ranges))

    @staticmethod
    def for_deletion_vectors(file_name: str, file_size: int,
                         dv_ranges: Mapping[str, DeletionVectorMeta] | Sequence[DeletionVectorMeta],
                         external_path: str | None = None) -> "IndexFileMeta":
        """Meta of a deletion-vector index file, as Java's ``DeletionFileWriter.result()``:
        ``row_count`` is the number of vectors in the file."""
        ranges = tuple(dv_ranges.values() if isinstance(dv_ranges, Mapping) else dv_ranges)
        return IndexFileMeta(DELETION_VECTORS_INDEX, file_name, file_size, len(ranges), ranges, external_path)

    @staticmethod
    def for_hash(file_name: str, file_size: int, row_count: int, external_path: str | None = None) -> "IndexFileMeta":
        """Meta of a dynamic-bucket HASH index file (``row_count`` = number of hashes)."""
        return IndexFileMeta(HASH_INDEX, file_name, file_size, row_count, None, external_path)

    def dv_range_map(self) -> dict[str, DeletionVectorMeta]:
        """``dv_ranges`` keyed by data file name (Java's ``LinkedHashMap``)."""
        return {m.data_file_name: m for m in self.dv_ranges or ()}

    def to_avro(self) -> dict:
        ranges = None
        if self.dv_ranges is not None:
            ranges = [{"f0": m.data_file_name, "f1": m.offset, "f2": m.length, "_CARDINALITY": m.cardinality}
                      for m in self.dv_ranges]
        return {"_INDEX_TYPE": self.index_type, "_FILE_NAME": self.file_name, "_FILE_SIZE": self.file_size,
                "_ROW_COUNT": self.row_count, "_DELETIONS_VECTORS_RANGES": ranges,
                "_EXTERNAL_PATH": self.external_path,
                "_GLOBAL_INDEX": self.global_index.to_avro() if self.global_index is not None else None}

    @staticmethod
    def from_avro(rec: dict) -> "IndexFileMeta":
        ranges = rec.get("_DELETIONS_VECTORS_RANGES")
        if ranges is not None:
            ranges = tuple(DeletionVectorMeta(r["f0"], r["f1"], r["f2"], r.get("_CARDINALITY")) for r in ranges)
        gi = rec.get("_GLOBAL_INDEX")
        return IndexFileMeta(rec["_INDEX_TYPE"], rec["_FILE_NAME"], rec["_FILE_SIZE"], rec["_ROW_COUNT"],
                             ranges, rec.get("_EXTERNAL_PATH"),
                             GlobalIndexMeta.from_avro(gi) if gi is not None else None)


@dataclass(frozen=True)
class IndexManifestEntry:
    """ADD (0) or DELETE (1) of one index file in one partition (serialized BinaryRow) and bucket."""

    kind: int
    partition: bytes
    bucket: int
    index_file: IndexFileMeta

    @property
    def identifier(self) -> tuple:
        return (self.partition, self.bucket, self.index_file.index_type, self.index_file.file_name)

    def as_delete(self) -> "IndexManifestEntry":
        if self.kind != ADD:
            raise ValueError("Only an ADD index manifest entry can be turned into a DELETE")
        return replace(self, kind=DELETE)

    def to_avro(self) -> dict:
        rec = {"_VERSION": INDEX_MANIFEST_VERSION, "_KIND": self.kind, "_PARTITION": self.partition,
               "_BUCKET": self.bucket}
        rec.update(self.index_file.to_avro())
        return rec

    @staticmethod
    def from_avro(rec: dict) -> "IndexManifestEntry":
        version = rec["_VERSION"]
        if version != INDEX_MANIFEST_VERSION:
            raise CorruptFileError(f"Unsupported index manifest format identifier {version}")
        kind = rec["_KIND"]
        if kind not in (ADD, DELETE):
            raise CorruptFileError(f"Unknown index manifest entry kind {kind}")
        return IndexManifestEntry(kind, rec["_PARTITION"], rec["_BUCKET"], IndexFileMeta.from_avro(rec))


# ------------------------------------------------------------------------------ files

def write_index_manifest(file_io: FileIO, path: str, entries: Iterable[IndexManifestEntry],
                         compression: str = "zstd") -> int:
    """Write an index manifest (``manifest.compression``, default zstd) and return its size."""
    data = _write_avro(INDEX_MANIFEST_SCHEMA, (e.to_avro() for e in entries), compression)
    file_io.write_bytes(path, data)
    return len(data)


def read_index_manifest(file_io: FileIO, path: str) -> list[IndexManifestEntry]:
    try:
        return [IndexManifestEntry.from_avro(r) for r in _read_avro(file_io, path, "Index manifest")]
    except (KeyError, TypeError) as e:
        raise CorruptFileError(f"Index manifest {path} has an unexpected layout: {e}") from None


def index_file_path(table_path: str, meta: IndexFileMeta) -> str:
    """Where an index file is: its ``external_path`` if set, else ``{table}/index/{name}``.
    (Tables with ``index-file-in-data-file-dir`` keep them in the bucket directory instead.)"""
    return meta.external_path or join(table_path, INDEX_DIR, meta.file_name)


# ------------------------------------------------------------------------------ folding

def merge_index_entries(old_live: Iterable[IndexManifestEntry], new_entries: Iterable[IndexManifestEntry],
                        *, bucket_unaware: bool = False) -> list[IndexManifestEntry]:
    """The live index entries after applying ``new_entries`` (ADDs and DELETEs) to ``old_live``
    (the ADD entries of the previous index manifest), as Java's ``IndexManifestFileHandler``:

    * ``HASH``, and ``DELETION_VECTORS`` of bucketed tables: one file per
      ``(partition, bucket, index_type)``. DELETEs are applied first, then each ADD *replaces*
      whatever file the bucket had (an ADD needs no matching DELETE; Java's HASH writers send
      none).
    * ``DELETION_VECTORS`` of bucket-unaware append tables (``bucket_unaware=True``): keyed by
      index file name, in order; adding a known file, deleting an unknown one, or giving a
      data file a second vector is an error.
    * any other type (global indexes): keyed by file name; DELETEs first (must exist), then ADDs.

    The result keeps the order of ``old_live`` for retained entries, then new ADDs.
    """
    old_live = list(old_live)
    for e in old_live:
        if e.kind != ADD:
            raise ValueError(f"Live index entries must be ADDs, got a DELETE of {e.index_file.file_name}")
    new_entries = list(new_entries)
    types = list(dict.fromkeys([e.index_file.index_type for e in old_live + new_entries]))
    out: list[IndexManifestEntry] = []
    for t in types:
        prev = [e for e in old_live if e.index_file.index_type == t]
        cur = [e for e in new_entries if e.index_file.index_type == t]
        if t in (HASH_INDEX, DELETION_VECTORS_INDEX) and not (t == DELETION_VECTORS_INDEX and bucket_unaware):
            out += _combine(prev, cur, lambda e: (e.partition, e.bucket, e.index_file.index_type), strict=False)
        elif t == DELETION_VECTORS_INDEX:
            out += _combine_unaware_dv(prev, cur)
        else:
            out += _combine(prev, cur, lambda e: e.index_file.file_name, strict=True)
    return out


def _combine(prev, cur, key, strict: bool) -> list[IndexManifestEntry]:
    live = {key(e): e for e in prev}
    for e in cur:
        if e.kind == DELETE:
            k = key(e)
            if k not in live and strict:
                raise ValueError(f"Trying to delete index file {e.index_file.file_name} which does not exist")
            live.pop(k, None)
    for e in cur:
        if e.kind == ADD:
            live.pop(key(e), None)
            live[key(e)] = e
    return list(live.values())


def _combine_unaware_dv(prev, cur) -> list[IndexManifestEntry]:
    live = {e.index_file.file_name: e for e in prev}
    data_files = {m.data_file_name for e in prev for m in e.index_file.dv_ranges or ()}
    for e in cur:
        name = e.index_file.file_name
        covered = [m.data_file_name for m in e.index_file.dv_ranges or ()]
        if e.kind == ADD:
            if name in live:
                raise ValueError(f"Trying to add index file {name} which is already added")
            for d in covered:
                if d in data_files:
                    raise ValueError(f"Trying to add a deletion vector for data file {d} which already has one")
                data_files.add(d)
            live[name] = e
        else:
            if name not in live:
                raise ValueError(f"Trying to delete index file {name} which does not exist")
            for d in covered:
                if d not in data_files:
                    raise ValueError(f"Trying to delete the deletion vector of data file {d} which has none")
                data_files.discard(d)
            del live[name]
    return list(live.values())


def commit_index_changes(file_io: FileIO, table_path: str, previous: str | None,
                         changes: Sequence[IndexManifestEntry], *, bucket_unaware: bool = False,
                         compression: str = "zstd", namer: FileNamer | None = None,
                         previous_entries: list[IndexManifestEntry] | None = None) -> str | None:
    """The ``indexManifest`` of a new snapshot: ``previous`` if there are no index changes, else
    the name of a freshly written index manifest with all live entries (Java writes one even if
    nothing remains live). ``previous_entries``: the entries of ``previous``, if already read."""
    if not changes:
        return previous
    manifest_dir = join(table_path, "manifest")
    if previous_entries is not None:
        old = previous_entries
    else:
        old = read_index_manifest(file_io, join(manifest_dir, previous)) if previous else []
    live = merge_index_entries(old, changes, bucket_unaware=bucket_unaware)
    name = (namer or FileNamer(INDEX_MANIFEST_PREFIX)).next()
    write_index_manifest(file_io, join(manifest_dir, name), live, compression)
    return name
