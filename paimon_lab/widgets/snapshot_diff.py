"""SnapshotDiff: what changed between two snapshots or tags - rows, data files and record counts."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import pandas as pd

from paimon_lab.errors import SnapshotNotExistError, TagNotExistError
from paimon_lab.widgets._common import (CSS, W, error_html, esc, fmt_partition, hashable_frame,
                                        html_table, kv_table, partition_filter, read_kwargs, ref_label,
                                        resolve, snapshot_refs)
from paimon_lab.operation.scan import FileStoreScan

if TYPE_CHECKING:
    from paimon_lab.table import Table


@dataclass
class DiffResult:
    """The difference between two points of a table's history."""

    before: tuple
    after: tuple
    counts: pd.DataFrame                       # record counts of both snapshots
    files: pd.DataFrame                        # per partition and bucket: files/rows added and deleted
    file_list: pd.DataFrame                    # every data file added, deleted or moved to another level
    added: pd.DataFrame = field(default_factory=pd.DataFrame)     # rows only in `after`
    removed: pd.DataFrame = field(default_factory=pd.DataFrame)   # rows only in `before`
    changed: pd.DataFrame = field(default_factory=pd.DataFrame)   # PK tables: one row per changed cell
    rows_compared: bool = False
    note: str = ""

    @property
    def summary(self) -> dict:
        return {"rows added": len(self.added), "rows removed": len(self.removed),
                "rows changed": (self.changed.drop(columns=["column", "before", "after"]).drop_duplicates().shape[0]
                                 if len(self.changed) else 0),
                "files added": int((self.file_list["change"] == "added").sum()) if len(self.file_list) else 0,
                "files deleted": int((self.file_list["change"] == "deleted").sum()) if len(self.file_list) else 0}


def _live_files(table: "Table", snap) -> dict[tuple, tuple]:
    out = {}
    for e in FileStoreScan(table.store).read_entries(snap):
        out[(e.partition, e.bucket, e.file.file_name)] = (e.file.level, e.file.row_count)
    return out


def diff(table: "Table", before: tuple, after: tuple, *, max_rows: int = 200_000) -> DiffResult:
    """Compare ``before`` and ``after`` (("snapshot", id) or ("tag", name)).

    Data files are compared by name per partition and bucket. Rows are compared only in the
    partitions whose files changed, and only if those hold at most ``max_rows`` rows: by primary
    key (added, removed, and changed column by column) or, for append tables, as multisets of
    whole rows.
    """
    t = table
    sb, sa = resolve(t, before), resolve(t, after)
    counts = pd.DataFrame(
        [(ref_label(before), sb.id, sb.commit_kind, sb.total_record_count, sb.delta_record_count,
          sb.changelog_record_count),
         (ref_label(after), sa.id, sa.commit_kind, sa.total_record_count, sa.delta_record_count,
          sa.changelog_record_count)],
        columns=["as of", "snapshot", "commit kind", "total records", "delta records", "changelog records"])
    fb, fa = _live_files(t, sb), _live_files(t, sa)
    codec = t.store.partition_codec
    file_rows = []
    for key in sorted(set(fb) | set(fa), key=lambda k: (k[0], k[1], k[2])):
        part, bucket, name = key
        if key in fb and key in fa:
            if fb[key][0] == fa[key][0]:
                continue
            change, level, rows = "moved", f"{fb[key][0]}→{fa[key][0]}", fa[key][1]
        elif key in fa:
            change, level, rows = "added", str(fa[key][0]), fa[key][1]
        else:
            change, level, rows = "deleted", str(fb[key][0]), fb[key][1]
        file_rows.append((part, codec.to_dict(part), bucket, change, name, level, rows))
    file_list = pd.DataFrame(file_rows, columns=["_p", "partition", "bucket", "change", "file", "level", "rows"])
    groups = []
    for (p, bucket), g in file_list.groupby(["_p", "bucket"], sort=True) if len(file_list) else []:
        add, dele = g[g["change"] == "added"], g[g["change"] == "deleted"]
        groups.append((g["partition"].iloc[0], bucket, len(add), len(dele), int(add["rows"].sum()),
                       int(dele["rows"].sum()), int((g["change"] == "moved").sum())))
    files = pd.DataFrame(groups, columns=["partition", "bucket", "files added", "files deleted", "rows in added files",
                                          "rows in deleted files", "files moved level"])
    result = DiffResult(before, after, counts, files, file_list.drop(columns=["_p"]))

    touched = file_list[file_list["change"] != "moved"]
    if not len(touched):
        result.rows_compared = True
        result.note = "No data file changed: the rows are the same."
        return result
    parts = list({tuple(p.items()): p for p in touched["partition"]}.values())
    pred = partition_filter(t, parts)
    keep = {tuple(sorted(p.items())) for p in parts}
    in_scope = [rows for (pb, _, _), (_, rows) in list(fb.items()) + list(fa.items())
                if not t.partition_keys or tuple(sorted(codec.to_dict(pb).items())) in keep]
    if sum(in_scope) > max_rows:
        result.note = (f"Row comparison skipped: the changed partitions hold {sum(in_scope)} rows, more than "
                       f"max_rows={max_rows}. Files and counts are compared above.")
        return result
    old = t.to_pandas(filter=pred, **read_kwargs(before))
    new = t.to_pandas(filter=pred, **read_kwargs(after))
    if t.primary_keys:
        _diff_by_key(result, old, new, t.primary_keys)
    else:
        _diff_rows(result, old, new)
    result.rows_compared = True
    where = "the whole table" if not t.partition_keys else f"{len(parts)} changed partition(s)"
    result.note = f"Rows compared in {where}."
    return result


def _diff_by_key(result: DiffResult, old: pd.DataFrame, new: pd.DataFrame, keys: list[str]) -> None:
    o, n = hashable_frame(old).set_index(keys), hashable_frame(new).set_index(keys)
    values = [c for c in old.columns if c not in keys]
    added, removed = n.index.difference(o.index), o.index.difference(n.index)
    result.added = n.loc[added].reset_index()[list(new.columns)].sort_values(keys).reset_index(drop=True)
    result.removed = o.loc[removed].reset_index()[list(old.columns)].sort_values(keys).reset_index(drop=True)
    common = o.index.intersection(n.index)
    before, after = o.loc[common], n.loc[common]
    cells = []
    for c in values:
        b, a = before[c], after[c]
        differs = ~((b == a) | (b.isna() & a.isna()))
        for key, bv, av in zip(b.index[differs.to_numpy()], b[differs], a[differs]):
            cells.append((key if isinstance(key, tuple) else (key,)) + (c, bv, av))
    changed = pd.DataFrame(cells, columns=keys + ["column", "before", "after"])
    result.changed = changed.sort_values(keys + ["column"], kind="stable").reset_index(drop=True)


def _diff_rows(result: DiffResult, old: pd.DataFrame, new: pd.DataFrame) -> None:
    def hashes(df: pd.DataFrame) -> pd.Series:
        if not len(df):
            return pd.Series([], dtype="uint64")
        return pd.util.hash_pandas_object(hashable_frame(df), index=False)

    ho, hn = hashes(old), hashes(new)
    co, cn = ho.value_counts(), hn.value_counts()
    delta = cn.sub(co, fill_value=0)

    def take(df: pd.DataFrame, h: pd.Series, wanted: pd.Series) -> pd.DataFrame:
        need = wanted[wanted > 0].astype(int).to_dict()
        picks = []
        for i, v in enumerate(h.to_numpy()):
            left = need.get(v, 0)
            if left:
                picks.append(i)
                need[v] = left - 1
        return df.iloc[picks].reset_index(drop=True)

    result.added = take(new, hn, delta)
    result.removed = take(old, ho, -delta)


class SnapshotDiff(W.VBox):
    """Compare two snapshots or tags of a table: record counts, data files added and deleted per
    partition and bucket, and the rows added, removed and (primary-key tables, column by column)
    changed. ``before`` / ``after`` default to the two latest snapshots."""

    def __init__(self, table: "Table", before=None, after=None, *, max_rows: int = 200_000, page_size: int = 50):
        self.table = table
        self.max_rows = max_rows
        self.page_size = page_size
        self.result: DiffResult | None = None
        self.before_selector = W.Dropdown(description="Before", layout=W.Layout(width="360px"))
        self.after_selector = W.Dropdown(description="After", layout=W.Layout(width="360px"))
        self.refresh_button = W.Button(description="Refresh", icon="refresh", layout=W.Layout(width="100px"))
        self.summary_html = W.HTML()
        self.counts_html = W.HTML()
        self.files_html = W.HTML()
        self.added_html, self.removed_html, self.changed_html = W.HTML(), W.HTML(), W.HTML()
        self.tabs = W.Tab(children=[self.files_html, self.added_html, self.removed_html, self.changed_html])
        for i, name in enumerate(["Data files", "Rows added", "Rows removed", "Rows changed"]):
            self.tabs.set_title(i, name)
        self._loading = False
        self.before_selector.observe(lambda _: self.compute(), names="value")
        self.after_selector.observe(lambda _: self.compute(), names="value")
        self.refresh_button.on_click(lambda _: self.refresh())
        super().__init__([W.HTML(CSS), W.HTML(f"<b>Diff of {esc(table.identifier)}</b>"),
                          W.HBox([self.before_selector, self.after_selector, self.refresh_button]),
                          self.summary_html, self.counts_html, self.tabs])
        self.refresh(before, after)

    def refresh(self, before=None, after=None) -> None:
        """Re-read the snapshots and tags to choose from."""
        self.table.refresh()
        options = snapshot_refs(self.table)
        values = [v for _, v in options]
        snaps = [v for v in values if v[0] == "snapshot"]
        for asked in (before, after):  # a point asked for by name is never swapped for another
            if asked is not None and _as_ref(asked) not in values:
                kind, name = _as_ref(asked)
                raise TagNotExistError(name) if kind == "tag" else SnapshotNotExistError(
                    f"Snapshot {name} does not exist (snapshots: {', '.join(str(v[1]) for v in snaps) or 'none'})")
        before = _as_ref(before) if before is not None else self.before_selector.value
        after = _as_ref(after) if after is not None else self.after_selector.value
        if after not in values:
            after = snaps[-1] if snaps else None
        if before not in values:
            before = snaps[-2] if len(snaps) > 1 else after
        self._loading = True
        try:
            self.before_selector.options = options
            self.after_selector.options = options
            self.before_selector.value = before
            self.after_selector.value = after
        finally:
            self._loading = False
        self.compute()

    def compute(self) -> DiffResult | None:
        if self._loading:
            return None
        b, a = self.before_selector.value, self.after_selector.value
        if b is None or a is None:
            self.summary_html.value = "<span class='plab-muted'>The table has no snapshot yet.</span>"
            return None
        try:
            r = self.result = diff(self.table, b, a, max_rows=self.max_rows)
        except Exception as e:  # noqa: BLE001
            self.summary_html.value = error_html(e)
            return None
        s = r.summary
        self.summary_html.value = kv_table(list(s.items()) + [("note", r.note)])
        self.counts_html.value = html_table(r.counts)
        files = r.files.assign(partition=r.files["partition"].map(fmt_partition)) if len(r.files) else r.files
        file_list = (r.file_list.assign(partition=r.file_list["partition"].map(fmt_partition))
                     if len(r.file_list) else r.file_list)
        self.files_html.value = (html_table(files, empty="no data file changed") + "<br>"
                                 + html_table(file_list, self.page_size, empty=""))
        if r.rows_compared:
            self.added_html.value = html_table(r.added, self.page_size, empty="no rows added")
            self.removed_html.value = html_table(r.removed, self.page_size, empty="no rows removed")
            self.changed_html.value = (html_table(r.changed, self.page_size, empty="no rows changed")
                                       if self.table.primary_keys else
                                       "<span class='plab-muted'>An append table has no key: a changed row "
                                       "shows as one removed and one added row.</span>")
        else:
            for w in (self.added_html, self.removed_html, self.changed_html):
                w.value = f"<span class='plab-muted'>{esc(r.note)}</span>"
        return r

    def __repr__(self) -> str:
        return f"SnapshotDiff({self.table.identifier!r})"


def _as_ref(value) -> tuple:
    if isinstance(value, tuple):
        return value
    if isinstance(value, str) and not value.isdigit():
        return ("tag", value)
    return ("snapshot", int(value))
