"""ManifestExplorer: snapshot → manifest lists → manifests → ADD/DELETE entries → data files."""

from __future__ import annotations

from typing import TYPE_CHECKING

import pandas as pd

from paimon_lab.errors import ArgumentError, TagNotExistError
from paimon_lab.widgets._common import (CSS, W, Pager, Raw, check_snapshot_id, choose, error_html, esc, fmt_key,
                                        fmt_partition, fmt_time, fmt_value, html_table, kv_table, pre, raw_bytes,
                                        resolve, snapshot_refs)
from paimon_lab.core.stats import decode_stats
from paimon_lab.core import binary_row

if TYPE_CHECKING:
    from paimon_lab.core.manifest import DataFileMeta, ManifestEntry, ManifestFileMeta
    from paimon_lab.table import Table

KINDS = {0: "ADD", 1: "DELETE"}
FILE_SOURCES = {0: "APPEND", 1: "COMPACT", None: "null"}
LISTS = (("base", "base_manifest_list"), ("delta", "delta_manifest_list"), ("changelog", "changelog_manifest_list"))


def decode_partition_stats(table: "Table", meta: "ManifestFileMeta") -> pd.DataFrame:

    fields = table.schema.partition_fields
    if not fields:
        return pd.DataFrame(columns=["column", "min", "max", "null count"])
    stats = decode_stats(meta.partition_stats, fields)
    return pd.DataFrame([(k, fmt_value(v[0]), fmt_value(v[1]), v[2]) for k, v in stats.items()],
                        columns=["column", "min", "max", "null count"])


def decode_file(table: "Table", entry: "ManifestEntry") -> dict:
    """Every field of a manifest entry and its data file, BinaryRows both raw (as Paimon's docs
    print them) and decoded."""

    f: DataFileMeta = entry.file
    key_types = table.store.kv_layout.key_types if table.primary_keys else []
    key_fields = table.store.kv_layout.key_fields if table.primary_keys else []

    def key(data: bytes):
        if not key_types or not data:
            return None
        return tuple(binary_row.deserialize(data, key_types))

    value_fields = table.store.stats_fields(f)
    value_stats = decode_stats(f.value_stats, value_fields) if value_fields else {}
    key_stats = decode_stats(f.key_stats, key_fields) if key_fields and f.key_stats.min_values else {}
    return {
        "_KIND": KINDS.get(entry.kind, entry.kind),
        "_PARTITION": entry.partition, "partition": table.store.partition_codec.to_dict(entry.partition),
        "_BUCKET": entry.bucket, "_TOTAL_BUCKETS": entry.total_buckets,
        "_FILE_NAME": f.file_name, "_FILE_SIZE": f.file_size, "_ROW_COUNT": f.row_count,
        "_MIN_KEY": f.min_key, "min_key": key(f.min_key), "_MAX_KEY": f.max_key, "max_key": key(f.max_key),
        "_KEY_STATS": f.key_stats, "key_stats": key_stats,
        "_VALUE_STATS": f.value_stats, "value_stats": value_stats,
        "_MIN_SEQUENCE_NUMBER": f.min_sequence_number, "_MAX_SEQUENCE_NUMBER": f.max_sequence_number,
        "_SCHEMA_ID": f.schema_id, "_LEVEL": f.level, "_EXTRA_FILES": list(f.extra_files),
        "_CREATION_TIME": f.creation_time_millis, "_DELETE_ROW_COUNT": f.delete_row_count,
        "_EMBEDDED_FILE_INDEX": f.embedded_index, "_FILE_SOURCE": FILE_SOURCES.get(f.file_source, f.file_source),
        "_VALUE_STATS_COLS": None if f.value_stats_cols is None else list(f.value_stats_cols),
        "_EXTERNAL_PATH": f.external_path,
    }


def _stats_table(stats: dict) -> str:
    df = pd.DataFrame([(k, fmt_value(v[0]), fmt_value(v[1]), v[2]) for k, v in stats.items()],
                      columns=["column", "min", "max", "null count"])
    return html_table(df, empty="no statistics")


def entries_frame(table: "Table", entries: list) -> pd.DataFrame:
    codec = table.store.partition_codec
    return pd.DataFrame(
        [(KINDS.get(e.kind, e.kind), codec.to_dict(e.partition), e.bucket, e.file.level, e.file.file_name,
          e.file.row_count, e.file.min_sequence_number, e.file.max_sequence_number,
          FILE_SOURCES.get(e.file.file_source, e.file.file_source)) for e in entries],
        columns=["kind", "partition", "bucket", "level", "file", "rows", "min seq", "max seq", "source"])


class ManifestExplorer(W.VBox):
    """Walk a snapshot's metadata the way Paimon's readers do: choose a snapshot (or tag), one of
    its manifest lists (base, delta, changelog), a manifest in it, and an ADD/DELETE entry in that
    to see the data file's metadata with its partition, keys and statistics decoded. A manifest's
    entries are listed ``page_size`` at a time."""

    def __init__(self, table: "Table", snapshot_id: int | None = None, *, tag: str | None = None,
                 page_size: int = 100):
        self.table = table
        self.page_size = page_size
        self.entries_pager = Pager(page_size, self._show_entries, noun="entries")
        self.manifests: list = []
        self.entries: list = []
        self.entries_df: pd.DataFrame = pd.DataFrame()
        self.file: dict | None = None
        self.snapshot_selector = W.Dropdown(description="Snapshot", layout=W.Layout(width="360px"))
        self.refresh_button = W.Button(description="Refresh", icon="refresh", layout=W.Layout(width="100px"))
        self.snapshot_html = W.HTML()
        self.list_selector = W.ToggleButtons(options=[l for l, _ in LISTS], value="delta",
                                             description="Manifest list", style={"button_width": "90px"})
        self.list_html = W.HTML()
        self.manifest_selector = W.Select(description="Manifests", rows=5, layout=W.Layout(width="720px"))
        self.manifest_html = W.HTML()
        self.entry_selector = W.Select(description="Entries", rows=8, layout=W.Layout(width="720px"))
        self.entries_html = W.HTML()
        self.file_html = W.HTML()
        self._loading = False
        self.snapshot_selector.observe(lambda _: self._load_snapshot(), names="value")
        self.list_selector.observe(lambda _: self._load_list(), names="value")
        self.manifest_selector.observe(lambda _: self._load_manifest(), names="value")
        self.entry_selector.observe(lambda _: self._load_entry(), names="value")
        self.refresh_button.on_click(lambda _: self.refresh())
        acc = W.Accordion(children=[self.snapshot_html])
        acc.set_title(0, "Snapshot JSON")
        self.snapshot_accordion = acc
        super().__init__([W.HTML(CSS), W.HTML(f"<b>Manifests of {esc(table.identifier)}</b>"),
                          W.HBox([self.snapshot_selector, self.refresh_button]), acc,
                          self.list_selector, self.list_html, self.manifest_selector, self.manifest_html,
                          self.entries_pager.box, self.entry_selector, self.entries_html, self.file_html])
        self.refresh(("tag", tag) if tag is not None else (("snapshot", snapshot_id) if snapshot_id else None))

    # ------------------------------------------------------------------ navigation
    def refresh(self, ref=None) -> None:
        self.table.refresh()
        options = snapshot_refs(self.table)
        values = [v for _, v in options]
        want = ref if ref is not None else self.snapshot_selector.value
        snaps = [v for v in values if v[0] == "snapshot"]
        if ref is not None and ref not in values:  # asked for by code: never swapped for the latest
            if ref[0] == "tag":
                raise TagNotExistError(ref[1])
            check_snapshot_id(ref[1], [v[1] for v in snaps])
        self._loading = True
        try:
            self.snapshot_selector.options = options
            self.snapshot_selector.value = want if want in values else (snaps[-1] if snaps else None)
        finally:
            self._loading = False
        self._load_snapshot()

    def select(self, *, manifest_list: str | None = None, manifest: int | str | None = None,
               entry: int | None = None) -> None:
        """Navigate from code: a list ('base', 'delta', 'changelog'), a manifest (index or file
        name) and an entry (index)."""
        if manifest_list is not None:
            choose(self.list_selector, manifest_list, "manifest list")
        if manifest is not None:
            if isinstance(manifest, str):
                names = [m.file_name for m in self.manifests]
                if manifest not in names:
                    raise ArgumentError(f"No manifest {manifest!r} in this list; its manifests are {names}")
                manifest = names.index(manifest)
            choose(self.manifest_selector, manifest, "manifest (index)")
        if entry is not None:
            if not 0 <= entry < len(self.entries):
                raise ArgumentError(f"No entry {entry}: this manifest has {len(self.entries)} entries")
            self.entries_pager.go(entry // self.page_size)
            choose(self.entry_selector, entry, "entry")

    def _snapshot(self):
        ref = self.snapshot_selector.value
        return resolve(self.table, ref) if ref is not None else None

    def _load_snapshot(self) -> None:
        if self._loading:
            return
        try:
            snap = self._snapshot()
        except Exception as e:  # noqa: BLE001
            self.snapshot_html.value = error_html(e)
            return
        if snap is None:
            self.snapshot_html.value = "<span class='plab-muted'>The table has no snapshot yet.</span>"
            self.list_html.value = ""
            self._set_manifests([])
            return
        self.snapshot_html.value = pre(snap.to_json())
        self.snapshot_accordion.set_title(
            0, f"Snapshot {snap.id} · {snap.commit_kind} · schema {snap.schema_id} · total "
               f"{snap.total_record_count}, delta {snap.delta_record_count}, changelog {snap.changelog_record_count}")
        self._load_list()

    def _load_list(self) -> None:
        if self._loading:
            return
        snap = self._snapshot()
        if snap is None:
            return
        attr = dict(LISTS)[self.list_selector.value]
        name = getattr(snap, attr)
        if not name:
            self.list_html.value = "<span class='plab-muted'>This snapshot has no such manifest list.</span>"
            self._set_manifests([])
            return
        try:
            metas = self.table.store.manifest_io.read_manifest_list(name)
        except Exception as e:  # noqa: BLE001
            self.list_html.value = error_html(e)
            self._set_manifests([])
            return
        self.list_html.value = (f"<div>{esc(name)}: {len(metas)} manifest(s)"
                                + ("" if metas else " <span class='plab-muted'>(an empty list: "
                                   "nothing before this snapshot)</span>") + "</div>")
        self._set_manifests(metas)

    def _set_manifests(self, metas: list) -> None:
        self.manifests = metas
        options = [(f"{m.file_name}  +{m.num_added_files} / -{m.num_deleted_files} files", i)
                   for i, m in enumerate(metas)]
        self._loading = True
        try:
            self.manifest_selector.options = options
            self.manifest_selector.value = 0 if options else None
        finally:
            self._loading = False
        self._load_manifest()

    def _load_manifest(self) -> None:
        if self._loading:
            return
        i = self.manifest_selector.value
        if i is None or i >= len(self.manifests):
            self.manifest_html.value = ""
            self._set_entries([])
            return
        m = self.manifests[i]
        info = kv_table([
            ("_FILE_NAME", m.file_name), ("_FILE_SIZE", m.file_size), ("_NUM_ADDED_FILES", m.num_added_files),
            ("_NUM_DELETED_FILES", m.num_deleted_files), ("_SCHEMA_ID", m.schema_id),
            ("_MIN_BUCKET … _MAX_BUCKET", f"{m.min_bucket} … {m.max_bucket}"),
            ("_MIN_LEVEL … _MAX_LEVEL", f"{m.min_level} … {m.max_level}"),
            ("_PARTITION_STATS", Raw(html_table(decode_partition_stats(self.table, m), empty="unpartitioned table")
                                     + raw_bytes(m.partition_stats.min_values, "_MIN_VALUES, raw bytes")
                                     + raw_bytes(m.partition_stats.max_values, "_MAX_VALUES, raw bytes"))),
        ])
        info = f"<div class='plab-scroll-tall'>{info}</div>"
        self.manifest_html.value = info
        try:
            entries = self.table.store.manifest_io.read_manifest(m.file_name)
        except Exception as e:  # noqa: BLE001
            self.manifest_html.value = info + error_html(e)
            entries = []
        self._set_entries(entries)

    def _set_entries(self, entries: list) -> None:
        self.entries = entries
        self.entries_pager.reset(len(entries))

    def _show_entries(self, page: int) -> None:
        """One page of the manifest's entries: the list to choose from and their table."""
        window = self.entries_pager.slice()
        shown = self.entries[window]
        self.entries_df = entries_frame(self.table, shown)
        codec = self.table.store.partition_codec
        options = [(f"{KINDS.get(e.kind, e.kind):<6} {fmt_partition(codec.to_dict(e.partition))}"
                    f" bucket-{e.bucket} L{e.file.level} {e.file.file_name} ({e.file.row_count} rows)", i)
                   for i, e in enumerate(shown, start=window.start)]
        df = self.entries_df.assign(partition=self.entries_df["partition"].map(fmt_partition)) \
            if len(self.entries_df) else self.entries_df
        self.entries_html.value = html_table(df, empty="no entries")
        self._loading = True
        try:
            self.entry_selector.options = options
            self.entry_selector.value = options[0][1] if options else None
        finally:
            self._loading = False
        self._load_entry()

    def _load_entry(self) -> None:
        if self._loading:
            return
        i = self.entry_selector.value
        if i is None or i >= len(self.entries):
            self.file = None
            self.file_html.value = ""
            return
        try:
            d = self.file = decode_file(self.table, self.entries[i])
        except Exception as e:  # noqa: BLE001
            self.file_html.value = error_html(e)
            return
        self.file_html.value = "<b>Data file</b><div class='plab-scroll-tall'>" + kv_table([
            ("_KIND", d["_KIND"]),
            ("_PARTITION", Raw(esc(fmt_partition(d["partition"])) + raw_bytes(d["_PARTITION"]))),
            ("_BUCKET / _TOTAL_BUCKETS", f"{d['_BUCKET']} / {d['_TOTAL_BUCKETS']}"),
            ("_FILE_NAME", d["_FILE_NAME"]), ("_FILE_SIZE", d["_FILE_SIZE"]), ("_ROW_COUNT", d["_ROW_COUNT"]),
            ("_MIN_KEY", Raw(esc(fmt_key(d["min_key"])) + raw_bytes(d["_MIN_KEY"]))),
            ("_MAX_KEY", Raw(esc(fmt_key(d["max_key"])) + raw_bytes(d["_MAX_KEY"]))),
            ("_KEY_STATS", Raw(_stats_table(d["key_stats"]))),
            ("_VALUE_STATS", Raw(_stats_table(d["value_stats"])
                                 + raw_bytes(d["_VALUE_STATS"].min_values, "_MIN_VALUES, raw bytes"))),
            ("_MIN_SEQUENCE_NUMBER … _MAX", f"{d['_MIN_SEQUENCE_NUMBER']} … {d['_MAX_SEQUENCE_NUMBER']}"),
            ("_SCHEMA_ID", d["_SCHEMA_ID"]), ("_LEVEL", d["_LEVEL"]), ("_EXTRA_FILES", d["_EXTRA_FILES"]),
            ("_CREATION_TIME", fmt_time(d["_CREATION_TIME"])), ("_DELETE_ROW_COUNT", d["_DELETE_ROW_COUNT"]),
            ("_EMBEDDED_FILE_INDEX", "null" if d["_EMBEDDED_FILE_INDEX"] is None
             else f"{len(d['_EMBEDDED_FILE_INDEX'])} bytes"),
            ("_FILE_SOURCE", d["_FILE_SOURCE"]), ("_VALUE_STATS_COLS", d["_VALUE_STATS_COLS"]),
            ("_EXTERNAL_PATH", d["_EXTERNAL_PATH"]),
        ]) + "</div>"

    def __repr__(self) -> str:
        return f"ManifestExplorer({self.table.identifier!r})"
