"""Lookup-changelog tables fold a key's older levels into the row their compaction lifts level 0
to, and reads above level 0 take only a key's lowest-level row (Java's LookupMergeFunction)."""

import glob

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from paimon_lab.mergetree.compact_rewriter import newest_upper

S = pa.schema([("k", pa.int32()), ("s", pa.int64()), ("tag", pa.string())])


def _kv(keys, values):
    return pa.table({"k": pa.array(keys, pa.int32()), "s": pa.array(values, pa.int64())})


def test_newest_upper_keeps_level0_and_each_keys_lowest_upper_level():
    parts = [(3, _kv([1, 2, 3], [31, 32, 33])), (1, _kv([1], [11])), (2, _kv([1, 2], [21, 22])),
             (0, _kv([1, 2, 3], [1, 2, 3])), (1, _kv([4], [14]))]
    out = newest_upper(["k"], parts)
    assert [(lv, t.to_pydict()["s"]) for lv, t in out] == [
        (3, [33]), (1, [11]), (2, [22]), (0, [1, 2, 3]), (1, [14])]
    single = [(0, _kv([1], [1])), (2, _kv([1], [2]))]
    assert newest_upper(["k"], single) is single     # one level above 0: nothing to choose


def _files_by_level(catalog, t):
    """(level, rows of the raw data file) for every data file, lowest level first."""
    out = []
    for _, r in t.levels().sort_values("level").iterrows():
        path, = glob.glob(f"{catalog.warehouse}/**/{r['file_name']}", recursive=True)
        out.append((int(r["level"]), pq.read_table(path).to_pylist()))
    return out


@pytest.mark.parametrize("engine", ["aggregation", "partial-update"])
def test_lookup_lift_folds_the_older_levels(catalog, engine):
    options = {"bucket": "1", "changelog-producer": "lookup", "merge-engine": engine}
    if engine == "aggregation":
        options["fields.s.aggregate-function"] = "sum"
    t = catalog.create_table("db.t", S, primary_keys=["k"], options=options)
    total = 0
    keys = 1
    # each commit far smaller than the one before, so that it is lifted just above it (Java's
    # size-ratio pick merges runs of similar size) and the levels stack up
    for i, n in enumerate((20000, 5000, 1250, 320, 80, 20, 5)):
        tag = "first" if i == 0 else None   # partial-update: a field set once must survive every lift
        other = list(range(100_000 * (i + 1), 100_000 * (i + 1) + n - 1))
        keys += len(other)
        noise = [f"{v:032x}" for v in np.random.default_rng(i).integers(0, 2 ** 62, len(other))]  # sizes follow rows
        t.write(pa.table({"k": pa.array([1] + other, pa.int32()), "s": pa.array([10 ** i] + [1] * len(other), pa.int64()),
                          "tag": pa.array([tag] + noise, pa.string())}))
        total = total + 10 ** i if engine == "aggregation" else 10 ** i
        assert t.to_arrow(filter="k = 1").to_pylist() == [{"k": 1, "s": total, "tag": "first"}]
        levels = _files_by_level(catalog, t)
        assert len({lv for lv, _ in levels}) == min(i + 1, 5) and 0 not in {lv for lv, _ in levels}
        newest = next(rows for _, rows in levels for r in rows if r["_KEY_k"] == 1)
        row = next(r for r in newest if r["_KEY_k"] == 1)
        assert (row["s"], row["tag"]) == (total, "first")   # the file holds the folded value
    audit = t.system("audit_log").filter(pa.compute.equal(pa.compute.field("k"), 1)).to_pylist()
    assert [(r["rowkind"], r["s"]) for r in audit] == [("+I", total)]
    t.compact(full=True)
    assert t.to_arrow(filter="k = 1").to_pylist() == [{"k": 1, "s": total, "tag": "first"}]
    assert t.to_arrow().num_rows == keys
