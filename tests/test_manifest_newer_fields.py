"""Data file metadata fields of newer Paimon versions survive a manifest rewrite: a manifest written
by a newer Java (with _WRITE_COLS, _WRITE_COLS_SEQUENCES...) keeps them when paimon-lab rewrites
manifests, and a manifest without them (Java 0.9/1.0 write none: their DataFileMeta stops at
_FILE_SOURCE) reads them as absent."""

from __future__ import annotations

import copy
import dataclasses
import io

import fastavro
import pyarrow as pa

from paimon_lab.core.manifest import MANIFEST_ENTRY_SCHEMA, ManifestIO
from paimon_lab.operation.scan import FileStoreScan

NEWER = ["_VALUE_STATS_COLS", "_EXTERNAL_PATH", "_FIRST_ROW_ID", "_WRITE_COLS", "_WRITE_COLS_SEQUENCES"]


def _entry(lab):
    t = lab.create_table("db.t", pa.schema([("id", pa.int64()), ("v", pa.string())]))
    t.write(pa.table({"id": [1, 2, 3], "v": ["a", "b", None]}))
    (entry,) = FileStoreScan(t.store).read_entries(t.latest_snapshot())
    return t, entry


def test_newer_data_file_fields_round_trip(lab):
    t, entry = _entry(lab)
    newer = dataclasses.replace(entry, file=dataclasses.replace(
        entry.file, first_row_id=7, write_cols=("id", "v"), write_cols_sequences=(4, 9)))
    mio = ManifestIO(t.file_io, t.path)
    mio.write_manifest("manifest-newer", [newer], 0, newer.file.value_stats)
    (back,) = mio.read_manifest("manifest-newer")
    assert back == newer
    assert (back.file.write_cols, back.file.write_cols_sequences, back.file.first_row_id) == (("id", "v"), (4, 9), 7)


def test_manifest_without_newer_fields(lab):
    t, entry = _entry(lab)
    old = copy.deepcopy(MANIFEST_ENTRY_SCHEMA)  # the layout Java 0.9/1.0 write
    file_record = next(f for f in old["fields"] if f["name"] == "_FILE")["type"]
    file_record["fields"] = [f for f in file_record["fields"] if f["name"] not in NEWER]
    record = entry.to_avro()
    for name in NEWER:
        record["_FILE"].pop(name)
    buf = io.BytesIO()
    fastavro.writer(buf, fastavro.parse_schema(old), [record])
    t.file_io.write_bytes(f"{t.path}/manifest/manifest-old", buf.getvalue())
    (back,) = ManifestIO(t.file_io, t.path).read_manifest("manifest-old")
    assert back.file.write_cols is None and back.file.write_cols_sequences is None and back.file.first_row_id is None
    assert back.file.file_name == entry.file.file_name and back.file.row_count == 3
