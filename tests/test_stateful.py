"""Proof that nothing is lost: random operation sequences against an in-memory model.

One hypothesis ``RuleBasedStateMachine`` per table kind: a partitioned append table (with and
without deletion vectors) and primary-key tables for every merge engine -- deduplicate,
first-row, partial-update, aggregation (sum + max + last_non_null_value) -- each plain, with
deletion vectors (not first-row: Java refuses them there), and with a changelog producer. The machines run random sequences of writes
(random keys, values, nulls and, for primary-key tables, the row kinds the engine accepts),
partition overwrites, DELETE, UPDATE, compactions (full, minor, one partition), snapshot
expiration, tags, rollbacks (to snapshots and tags), schema changes (add a nullable column,
rename a non-key column) and orphan-file removal.

The model keeps the expected contents after every snapshot. After every step:

* the snapshot ids and the tags on disk are exactly the model's;
* the latest read equals the model;
* every snapshot created by the step reads exactly what the model recorded for it, and after a
  step that deletes files or changes the schema (expire, rollback, orphan removal, alter)
  *every* still-existing snapshot and tag is read again (time travel);
* for the lookup changelog producer, replaying ``changes()`` over the new snapshots on the
  previous contents gives the new contents.

The primary-key model implements each merge engine per row, in plain Python. Reads always use
the current schema (renamed columns keep their data, added ones read as null), so model rows
are keyed by field id.
"""

from __future__ import annotations

import copy
import os
import shutil
import tempfile
import time

import pyarrow as pa
import pyarrow.compute as pc
import pytest
from hypothesis import HealthCheck, Phase, note, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, precondition, rule, run_state_machine_as_test

from paimon_lab import Catalog, SchemaChange, Table
from paimon_lab.errors import PaimonLabError


PARTS_APPEND = ["a", "b", None]
PARTS_PK = ["a", "b"]
STRINGS = ["x", "y", "xy", "z", None]


# ----------------------------------------------------------------------------- table kinds

def _agg_options(extra=None):
    return {"merge-engine": "aggregation",
            "fields.v.aggregate-function": "sum",
            "fields.m.aggregate-function": "max",
            "fields.s.aggregate-function": "last_non_null_value",
            # max and last_non_null_value cannot retract; -U/-D only subtract from the sum
            "fields.m.ignore-retract": "true", "fields.s.ignore-retract": "true",
            **(extra or {})}


# name -> (primary key?, options, merge engine, lookup table?, replay changelog?)
KINDS = {
    "append": (False, {}, None),
    "append-dv": (False, {"deletion-vectors.enabled": "true"}, None),
    "dedup": (True, {}, "deduplicate"),
    "dedup-dv": (True, {"deletion-vectors.enabled": "true"}, "deduplicate"),
    "dedup-lookup": (True, {"changelog-producer": "lookup"}, "deduplicate"),
    "first-row": (True, {"merge-engine": "first-row", "first-row.ignore-delete": "true"}, "first-row"),
    "first-row-lookup": (True, {"merge-engine": "first-row", "first-row.ignore-delete": "true",
                                "changelog-producer": "lookup"}, "first-row"),
    "partial-update": (True, {"merge-engine": "partial-update", "partial-update.ignore-delete": "true"},
                       "partial-update"),
    "partial-update-dv": (True, {"merge-engine": "partial-update", "partial-update.ignore-delete": "true",
                                 "deletion-vectors.enabled": "true"}, "partial-update"),
    "partial-update-lookup": (True, {"merge-engine": "partial-update", "partial-update.ignore-delete": "true",
                                     "changelog-producer": "lookup"}, "partial-update"),
    "partial-update-fullcompaction": (True, {"merge-engine": "partial-update",
                                             "partial-update.ignore-delete": "true",
                                             "changelog-producer": "full-compaction"}, "partial-update"),
    "aggregation": (True, _agg_options(), "aggregation"),
    "aggregation-dv": (True, _agg_options({"deletion-vectors.enabled": "true"}), "aggregation"),
    "aggregation-lookup": (True, _agg_options({"changelog-producer": "lookup"}), "aggregation"),
}

# DML refused per engine with these kinds' options (partial-update sets ignore-delete).
REFUSED = {"aggregation": ["delete", "update"], "first-row": ["delete", "update"], "partial-update": ["delete"]}

# Row kinds each engine is fed. first-row and partial-update ignore -U/-D (their ignore-delete
# options are set); aggregation retracts them from the sum.
ENGINE_KINDS = {
    "deduplicate": ["+I", "+I", "+U", "-U", "-D"],
    "first-row": ["+I", "+I", "+U", "-D"],
    "partial-update": ["+I", "+U", "+U", "-D"],
    "aggregation": ["+I", "+I", "+U", "-U", "-D"],
}


class Col:
    def __init__(self, fid: int, name: str, kind: str, role: str):
        self.fid, self.name, self.kind, self.role = fid, name, kind, role  # kind: int/str; role: key/part/value

    def __repr__(self):
        return f"Col({self.fid}, {self.name!r}, {self.kind}, {self.role})"


# ----------------------------------------------------------------------------- filters

def _leaf(col: Col, data) -> tuple:
    if col.kind == "int":
        lo, hi = (0, 11) if col.role == "key" else (-3, 12)
        op = data.draw(st.sampled_from(["=", "!=", "<", ">=", "is_null", "is_not_null", "in", "between"]))
        if op == "in":
            return (op, col.fid, tuple(data.draw(st.lists(st.integers(lo, hi), min_size=1, max_size=3))))
        if op == "between":
            a = data.draw(st.integers(lo, hi))
            return (op, col.fid, (a, a + data.draw(st.integers(0, 5))))
        return (op, col.fid, data.draw(st.integers(lo, hi)))
    values = [v for v in (PARTS_PK if col.role == "part" else STRINGS) if v is not None]
    op = data.draw(st.sampled_from(["=", "!=", "is_null", "is_not_null", "in", "like"]))
    if op == "in":
        return (op, col.fid, tuple(data.draw(st.lists(st.sampled_from(values), min_size=1, max_size=2))))
    if op == "like":
        return (op, col.fid, data.draw(st.sampled_from(["x", "y", "a"])))
    return (op, col.fid, data.draw(st.sampled_from(values)))


def draw_filter(cols: list[Col], data, depth: int = 0) -> tuple:
    shape = data.draw(st.sampled_from(["leaf", "leaf", "and", "or", "not"] if depth < 2 else ["leaf"]))
    if shape == "leaf":
        return _leaf(data.draw(st.sampled_from(cols)), data)
    if shape == "not":
        return ("not", draw_filter(cols, data, depth + 1))
    return (shape, draw_filter(cols, data, depth + 1), draw_filter(cols, data, depth + 1))


def _lit(v) -> str:
    return f"'{v}'" if isinstance(v, str) else str(v)


def render(f: tuple, names: dict[int, str]) -> str:
    op = f[0]
    if op in ("and", "or"):
        return f"({render(f[1], names)} {op.upper()} {render(f[2], names)})"
    if op == "not":
        return f"(NOT {render(f[1], names)})"
    name = names[f[1]]
    if op == "is_null":
        return f"{name} IS NULL"
    if op == "is_not_null":
        return f"{name} IS NOT NULL"
    if op == "in":
        return f"{name} IN ({', '.join(_lit(v) for v in f[2])})"
    if op == "between":
        return f"{name} BETWEEN {f[2][0]} AND {f[2][1]}"
    if op == "like":
        return f"{name} LIKE '{f[2]}%'"
    return f"{name} {op} {_lit(f[2])}"


def evaluate(f: tuple, row: dict) -> bool | None:
    """SQL three-valued logic; a row is selected only when this is True."""
    op = f[0]
    if op == "and":
        a, b = evaluate(f[1], row), evaluate(f[2], row)
        return False if (a is False or b is False) else (None if (a is None or b is None) else True)
    if op == "or":
        a, b = evaluate(f[1], row), evaluate(f[2], row)
        return True if (a is True or b is True) else (None if (a is None or b is None) else False)
    if op == "not":
        a = evaluate(f[1], row)
        return None if a is None else not a
    x = row.get(f[1])
    if op == "is_null":
        return x is None
    if op == "is_not_null":
        return x is not None
    if x is None:
        return None
    lit = f[2]
    return {"=": lambda: x == lit, "!=": lambda: x != lit, "<": lambda: x < lit, ">=": lambda: x >= lit,
            "in": lambda: x in lit, "between": lambda: lit[0] <= x <= lit[1],
            "like": lambda: x.startswith(lit)}[op]()


# ----------------------------------------------------------------------------- merge engines

def apply_record(engine: str, state: dict, kind: str, row: dict, value_cols: list[Col], sum_fid, max_fid) -> None:
    """Merge one record into ``state`` (key -> row) as the merge engine does."""
    key = row["__key__"]
    row = {k: v for k, v in row.items() if k != "__key__"}
    retract = kind in ("-U", "-D")
    cur = state.get(key)
    if engine == "deduplicate":
        if retract:
            state.pop(key, None)
        else:
            state[key] = row
    elif engine == "first-row":
        if not retract and cur is None:
            state[key] = row
    elif engine == "partial-update":
        if retract:
            return
        if cur is None:
            state[key] = row
        else:
            for c in value_cols:
                if row.get(c.fid) is not None:
                    cur[c.fid] = row[c.fid]
    elif engine == "aggregation":
        if cur is None:
            cur = state[key] = {k: (v if k not in {c.fid for c in value_cols} else None) for k, v in row.items()}
        for c in value_cols:
            x = row.get(c.fid)
            if x is None:
                continue
            if c.fid == sum_fid:
                x = -x if retract else x
                cur[c.fid] = x if cur.get(c.fid) is None else cur[c.fid] + x
            elif retract:
                continue  # ignore-retract
            elif c.fid == max_fid:
                cur[c.fid] = x if cur.get(c.fid) is None else max(cur[c.fid], x)
            else:  # last_non_null_value (the default for added columns too)
                cur[c.fid] = x
    else:  # pragma: no cover
        raise AssertionError(engine)


# ----------------------------------------------------------------------------- the machine

class TableMachine(RuleBasedStateMachine):
    KIND = "append"

    def __init__(self):
        super().__init__()
        self.pk, options, self.engine = KINDS[self.KIND]
        self.options = {"bucket": "2"} if self.pk else {}
        self.options.update(options)
        # Batch reads skip level 0 (Java's batchScanSkipLevel0) on DV and first-row tables only: their
        # APPEND snapshot, before the COMPACT that lifts level 0, still shows the old contents.
        self.lookup = self.pk and (options.get("deletion-vectors.enabled") == "true" or self.engine == "first-row")
        self.replay = self.pk and options.get("changelog-producer") == "lookup"
        self.dir = tempfile.mkdtemp(prefix="stateful-")
        cat = Catalog(self.dir)
        cat.create_database("db")
        if self.pk:
            schema = pa.schema([("k", pa.int32()), ("p", pa.string()), ("v", pa.int64()), ("m", pa.int64()),
                                ("s", pa.string())])
            self.t = cat.create_table("db.t", schema, primary_keys=["k", "p"], partition_keys=["p"],
                                      options=self.options)
            roles = {"k": ("int", "key"), "p": ("str", "part"), "v": ("int", "value"), "m": ("int", "value"),
                     "s": ("str", "value")}
        else:
            schema = pa.schema([("id", pa.int64()), ("p", pa.string()), ("v", pa.int64()), ("s", pa.string())])
            self.t = cat.create_table("db.t", schema, partition_keys=["p"], options=self.options)
            roles = {"id": ("int", "value"), "p": ("str", "part"), "v": ("int", "value"), "s": ("str", "value")}
        self.cols = [Col(f.id, f.name, *roles[f.name]) for f in self.t.schema.fields]
        fid = {c.name: c.fid for c in self.cols}
        self.sum_fid, self.max_fid = fid.get("v"), fid.get("m")
        self.key_fids = [fid["k"], fid["p"]] if self.pk else []
        self.part_fid = fid["p"]
        self.state = {} if self.pk else []     # current contents
        self.snaps: dict[int, tuple] = {}      # snapshot id -> (contents, clean)
        self.tags: dict[str, tuple] = {}       # tag -> (snapshot id, contents, clean)
        self.verified: set = set()             # snapshot ids and ("tag", name) read since the last reset
        self.names = 0
        self.log: list[str] = []

    def teardown(self):
        try:
            if getattr(self, "snaps", None) is not None:
                self.verified.clear()
                self.check()
        finally:
            shutil.rmtree(self.dir, ignore_errors=True)

    # ------------------------------------------------------------------ helpers
    @property
    def value_cols(self) -> list[Col]:
        return [c for c in self.cols if c.role == "value"]

    def names_by_fid(self) -> dict[int, str]:
        return {c.fid: c.name for c in self.cols}

    def arrow_schema(self) -> pa.Schema:
        return self.t.schema.arrow_schema()

    def canon(self, contents) -> list:
        fids = [c.fid for c in self.cols]
        rows = contents.values() if self.pk else contents
        return sorted((tuple(r.get(f) for f in fids) for r in rows), key=repr)

    def read_canon(self, **kwargs) -> list:
        got = self.t.to_arrow(**kwargs)
        assert got.column_names == [c.name for c in self.cols], (got.column_names, self.cols)
        return sorted((tuple(r.values()) for r in got.to_pylist()), key=repr)

    def draw_value(self, col: Col, data):
        if col.role == "key":
            return data.draw(st.integers(0, 9))
        if col.role == "part":
            return data.draw(st.sampled_from(PARTS_PK if self.pk else PARTS_APPEND))
        if col.kind == "int":
            return data.draw(st.one_of(st.none(), st.integers(-3, 12)))
        return data.draw(st.sampled_from(STRINGS))

    def draw_rows(self, data, n_max=6, part=...) -> list[dict]:
        rows = []
        for _ in range(data.draw(st.integers(1, n_max))):
            row = {c.fid: self.draw_value(c, data) for c in self.cols}
            if part is not ...:
                row[self.part_fid] = part
            rows.append(row)
        return rows

    def to_arrow_rows(self, rows: list[dict]) -> pa.Table:
        names = self.names_by_fid()
        return pa.Table.from_pylist([{names[f]: v for f, v in r.items()} for r in rows], schema=self.arrow_schema())

    def key(self, row: dict) -> tuple:
        return tuple(row[f] for f in self.key_fids)

    def apply(self, state: dict, records: list[tuple[str, dict]]) -> dict:
        state = copy.deepcopy(state)
        for kind, row in records:
            apply_record(self.engine, state, kind, {**row, "__key__": self.key(row)}, self.value_cols,
                         self.sum_fid, self.max_fid)
        return state

    def insert_first(self, batches: list[list[dict]], kinds: list[list[str]], state: dict) -> list[list[str]]:
        """Aggregation: a retraction of a key with no row yet becomes +I. Such a key's lone -U/-D
        is not merged (Java's rule), so whether it counts depends on when compaction drops it:
        beyond this per-record model (test_merge_function.py and tests/java cover it)."""
        if self.engine != "aggregation":
            return kinds
        seen = set(state)
        out = []
        for batch, ks in zip(batches, kinds):
            fixed = []
            for row, kind in zip(batch, ks):
                key = self.key(row)
                fixed.append("+I" if kind in ("-U", "-D") and key not in seen else kind)
                seen.add(key)
            out.append(fixed)
        return out

    def latest_id(self):
        return max(self.snaps) if self.snaps else None

    def commit_step(self, before_ids: set, new_state, intermediate=None, replay: bool = False) -> list[int]:
        """Record the snapshots an operation created. Snapshots before the last one read
        ``intermediate`` (tables whose batch reads skip level 0; default: the new contents)."""
        prev_latest, prev_state = self.latest_id(), self.state
        ids = self.t.snapshot_manager.list_ids()
        new = [i for i in ids if i not in before_ids]
        assert new == sorted(new) and all(i > (prev_latest or 0) for i in new), (before_ids, ids)
        for i in new:
            last = i == new[-1]
            # A lookup table's APPEND snapshot before its COMPACT one still holds level-0 files
            # whose changelog the next lift produces: rolling back to it and writing on would
            # replay them, so it is no clean rollback point (whatever its contents).
            if last:
                self.snaps[i] = (copy.deepcopy(new_state), True)
            elif intermediate is None:
                self.snaps[i] = (copy.deepcopy(new_state), not self.replay)
            else:
                self.snaps[i] = (copy.deepcopy(intermediate), False)
        if new:
            self.state = copy.deepcopy(new_state)
        else:
            assert self.canon(new_state) == self.canon(self.state), "contents changed without a snapshot"
        if replay and new and self.replay:
            self.check_changelog(prev_latest, new[-1], prev_state, new_state)
        return new

    def check_changelog(self, start, end, before: dict, after: dict) -> None:
        changes = self.t.changes(start or 0, end)
        names = self.names_by_fid()
        fid_of = {n: f for f, n in names.items()}
        state = copy.deepcopy(before)
        for r in changes.to_pylist():
            kind = r.pop("rowkind")
            row = {fid_of[n]: v for n, v in r.items()}
            if kind in ("+I", "+U"):
                state[self.key(row)] = row
            else:
                assert self.key(row) in state, f"changelog retracts absent key {row}"
                state.pop(self.key(row))
        assert self.canon(state) == self.canon(after), "lookup changelog replay differs from the contents"

    def check(self) -> None:
        assert self.t.snapshot_manager.list_ids() == sorted(self.snaps)
        assert {tg.name: tg.snapshot.id for tg in self.t.tags()} == {n: v[0] for n, v in self.tags.items()}
        assert self.read_canon() == self.canon(self.state)
        if self.snaps:
            assert self.t.latest_snapshot().id == self.latest_id()
        for sid, (contents, _) in sorted(self.snaps.items()):
            if sid not in self.verified:
                assert self.read_canon(snapshot_id=sid) == self.canon(contents), f"snapshot {sid}"
                self.verified.add(sid)
        for name, (sid, contents, _) in sorted(self.tags.items()):
            if ("tag", name) not in self.verified:
                assert self.read_canon(tag=name) == self.canon(contents), f"tag {name}"
                self.verified.add(("tag", name))

    def reset_verification(self) -> None:
        self.verified.clear()

    # ------------------------------------------------------------------ writes
    @rule(data=st.data())
    def write(self, data):
        before = set(self.snaps)
        batches = [self.draw_rows(data) for _ in range(data.draw(st.sampled_from([1, 1, 1, 2])))]
        if self.pk:
            kinds = [[data.draw(st.sampled_from(ENGINE_KINDS[self.engine])) for _ in b] for b in batches]
            kinds = self.insert_first(batches, kinds, self.state)
            records = [(k, r) for b, ks in zip(batches, kinds) for k, r in zip(ks, b)]
            new_state = self.apply(self.state, records)
        else:
            kinds = [None] * len(batches)
            new_state = self.state + [r for b in batches for r in b]
        note(f"write {batches} {kinds}")
        if len(batches) == 1:
            self.t.write(self.to_arrow_rows(batches[0]), row_kinds=kinds[0])
        else:
            with self.t.writer() as w:
                for b, ks in zip(batches, kinds):
                    w.write(self.to_arrow_rows(b), row_kinds=ks)
        self.commit_step(before, new_state, self.state if self.lookup else None, replay=True)

    @rule(data=st.data())
    def overwrite_partition(self, data):
        before = set(self.snaps)
        part = data.draw(st.sampled_from(PARTS_PK if self.pk else PARTS_APPEND))
        rows = self.draw_rows(data, part=part)
        if self.pk:
            kinds = self.insert_first([rows], [[data.draw(st.sampled_from(ENGINE_KINDS[self.engine]))
                                                for _ in rows]], {})[0]
            others = {k: v for k, v in self.state.items() if k[1] != part}
            new_state = {**others, **self.apply({}, list(zip(kinds, rows)))}
            intermediate = others
        else:
            kinds = None
            new_state = [r for r in self.state if r[self.part_fid] != part] + rows
            intermediate = None
        note(f"overwrite {part} {rows} {kinds}")
        self.t.write(self.to_arrow_rows(rows), overwrite={"p": part}, row_kinds=kinds)
        self.commit_step(before, new_state, intermediate if self.lookup else None)

    @precondition(lambda self: "delete" not in REFUSED.get(self.engine, ()))  # see refused_dml
    @rule(data=st.data())
    def delete(self, data):
        before = set(self.snaps)
        f = None if data.draw(st.integers(0, 9)) == 0 else draw_filter(self.cols, data)
        sql = None if f is None else render(f, self.names_by_fid())
        note(f"delete {sql}")
        rows = self.state.values() if self.pk else self.state
        hit = [r for r in rows if f is None or evaluate(f, r) is True]
        if self.pk:
            new_state = self.apply(self.state, [("-D", r) for r in hit])
        else:
            new_state = [r for r in self.state if not (f is None or evaluate(f, r) is True)]
        self.t.delete(sql)
        self.commit_step(before, new_state, self.state if self.lookup else None, replay=True)

    @precondition(lambda self: "update" not in REFUSED.get(self.engine, ()))
    @rule(data=st.data())
    def update(self, data):
        before = set(self.snaps)
        col = data.draw(st.sampled_from(self.value_cols))
        f = None if data.draw(st.integers(0, 9)) == 0 else draw_filter(self.cols, data)
        sql = None if f is None else render(f, self.names_by_fid())
        if col.kind == "int" and data.draw(st.booleans()):
            value, fn = (lambda rows, n=col.name: pc.add(rows.column(n), 1)), (lambda x: None if x is None else x + 1)
            what = f"{col.name} + 1"
        else:
            literal = self.draw_value(col, data)
            value, fn = literal, (lambda x, lit=literal: lit)
            what = repr(literal)
        note(f"update set {col.name} = {what} where {sql}")
        rows = list(self.state.values()) if self.pk else self.state
        if self.pk:
            hit = [r for r in rows if f is None or evaluate(f, r) is True]
            new_state = self.apply(self.state, [("+U", {**r, col.fid: fn(r.get(col.fid))}) for r in hit])
        else:
            new_state = [{**r, col.fid: fn(r.get(col.fid))} if (f is None or evaluate(f, r) is True) else r
                         for r in rows]
        self.t.update({col.name: value}, sql)
        self.commit_step(before, new_state, self.state if self.lookup else None, replay=True)

    @precondition(lambda self: self.engine in REFUSED)
    @rule(data=st.data())
    def refused_dml(self, data):
        """Row-level DML the merge engine would not apply as written is refused (UPDATE on
        aggregation and first-row, as Paimon's Spark integration does; DELETE where -D rows are
        ignored or retract) and commits nothing."""
        statement = data.draw(st.sampled_from(REFUSED[self.engine]))
        before = self.t.snapshot_manager.latest_id()
        with pytest.raises(PaimonLabError, match="DELETE|UPDATE"):
            if statement == "delete":
                self.t.delete("k > 0")
            else:
                self.t.update({"v": 1}, "k > 0")
        assert self.t.snapshot_manager.latest_id() == before

    # ------------------------------------------------------------------ maintenance
    @rule(full=st.booleans(), part=st.sampled_from([None, "a", "b"]))
    def compact(self, full, part):
        before = set(self.snaps)
        note(f"compact full={full} part={part}")
        self.t.compact(full=full, partition=None if part is None else {"p": part})
        new = self.commit_step(before, self.state)
        assert all(self.t.snapshot(i).commit_kind == "COMPACT" for i in new)

    @precondition(lambda self: self.snaps)
    @rule(k=st.integers(1, 4))
    def expire(self, k):
        ids = sorted(self.snaps)
        expected = [i for i in ids if i < ids[-1] - k + 1][:50]
        note(f"expire retain_max={k}")
        res = self.t.expire_snapshots(retain_max=k, retain_min=1)
        assert res.expired_snapshots == expected
        for i in expected:
            del self.snaps[i]
        self.reset_verification()

    @precondition(lambda self: self.snaps)
    @rule(data=st.data())
    def create_tag(self, data):
        sid = data.draw(st.sampled_from(sorted(self.snaps)))
        name = f"tag{self.names}"
        self.names += 1
        note(f"tag {name} -> {sid}")
        self.t.create_tag(name, sid)
        contents, clean = self.snaps[sid]
        self.tags[name] = (sid, copy.deepcopy(contents), clean)

    @precondition(lambda self: self.tags)
    @rule(data=st.data())
    def delete_tag(self, data):
        name = data.draw(st.sampled_from(sorted(self.tags)))
        note(f"delete tag {name}")
        self.t.delete_tag(name)
        del self.tags[name]
        self.reset_verification()

    @precondition(lambda self: any(clean for _, clean in self.snaps.values()))
    @rule(data=st.data())
    def rollback_to_snapshot(self, data):
        # Only to snapshots whose contents are complete: in lookup tables the APPEND snapshot of
        # a write still has its rows in level 0 (not read), and the next write would lift them.
        sid = data.draw(st.sampled_from(sorted(i for i, (_, clean) in self.snaps.items() if clean)))
        note(f"rollback to {sid}")
        self.t.rollback_to(sid)
        self._rolled_back(sid, self.snaps[sid][0])

    @precondition(lambda self: any(clean for _, _, clean in self.tags.values()))
    @rule(data=st.data())
    def rollback_to_tag(self, data):
        name = data.draw(st.sampled_from(sorted(n for n, (_, _, clean) in self.tags.items() if clean)))
        sid, contents, _ = self.tags[name]
        note(f"rollback to tag {name} ({sid})")
        self.t.rollback_to(tag=name)
        if sid not in self.snaps:  # expired: restored from the tag, and nothing older exists
            assert all(i > sid for i in self.snaps)
            self.snaps[sid] = (copy.deepcopy(contents), True)
        self._rolled_back(sid, contents)

    def _rolled_back(self, sid, contents):
        self.snaps = {i: v for i, v in self.snaps.items() if i <= sid}
        self.tags = {n: v for n, v in self.tags.items() if v[0] <= sid}
        self.state = copy.deepcopy(contents)
        self.reset_verification()

    @rule()
    def remove_orphans(self):
        note("remove orphans")
        self.t.remove_orphan_files(older_than_millis=int(time.time() * 1000) + 1000)
        self.reset_verification()

    # ------------------------------------------------------------------ schema changes
    @precondition(lambda self: len(self.cols) < 8)
    @rule(kind=st.sampled_from(["int", "str"]))
    def add_column(self, kind):
        name = f"c{self.names}"
        self.names += 1
        changes = [SchemaChange.add_column(name, pa.int64() if kind == "int" else pa.string())]
        if self.engine == "aggregation":
            changes.append(SchemaChange.set_option(f"fields.{name}.ignore-retract", "true"))
        note(f"add column {name} {kind}")
        schema = self.t.alter(*changes)
        self.cols.append(Col(schema.field(name).id, name, kind, "value"))
        self.reset_verification()

    @rule(data=st.data())
    def rename_column(self, data):
        col = data.draw(st.sampled_from(self.value_cols))
        new = f"r{self.names}"
        self.names += 1
        note(f"rename {col.name} -> {new}")
        self.t.alter(SchemaChange.rename_column(col.name, new))
        col.name = new
        self.reset_verification()

    @rule()
    def reopen(self):
        """Another process's view: everything must come from disk."""
        self.t = Table.open(self.t.path)

    @invariant()
    def consistent(self):
        self.check()


# ----------------------------------------------------------------------------- the tests

# Heavier kinds get fewer examples; together about a minute on 2 cores.
EXAMPLES = {"append": 8, "append-dv": 8}
STEPS = int(os.environ.get("PAIMON_LAB_STATEFUL_STEPS", "22"))


SCALE = float(os.environ.get("PAIMON_LAB_STATEFUL_SCALE", "1"))  # more examples when hunting bugs


@pytest.mark.slow
@pytest.mark.parametrize("kind", list(KINDS))
def test_state_machine(kind):
    machine = type(f"Machine_{kind.replace('-', '_')}", (TableMachine,), {"KIND": kind})
    phases = list(Phase)
    if os.environ.get("PAIMON_LAB_STATEFUL_NO_SHRINK"):
        phases.remove(Phase.shrink)
    run_state_machine_as_test(machine, settings=settings(
        max_examples=max(1, int(EXAMPLES.get(kind, 6) * SCALE)), stateful_step_count=STEPS, deadline=None,
        suppress_health_check=list(HealthCheck), phases=phases))


# ----------------------------------------------------------------------------- bugs the machines found
# Minimal reproductions of bugs the machines found, kept as regression tests.

def _table(tmp_path, schema, **kwargs):
    cat = Catalog(str(tmp_path / "wh"))
    cat.create_database("db", ignore_if_exists=True)
    return cat.create_table("db.t", schema, **kwargs)


def test_dv_cache_survives_rollback(tmp_path):
    t = _table(tmp_path, pa.schema([("id", pa.int64())]), options={"deletion-vectors.enabled": "true"})
    t.write(pa.table({"id": pa.array([1], pa.int64())}))  # snapshot 1
    t.update({"id": 2})                                    # snapshot 2: a vector deletes row 0 of file 1
    assert t.to_arrow()["id"].to_pylist() == [2]           # ... and is cached as "snapshot 2"
    t.rollback_to(1)
    t.write(pa.table({"id": pa.array([3], pa.int64())}))  # a different snapshot 2
    assert sorted(Table.open(t.path).to_arrow()["id"].to_pylist()) == [1, 3]
    assert sorted(t.to_arrow()["id"].to_pylist()) == [1, 3]  # a stale cached vector used to hide row 1


@pytest.mark.parametrize("pk", [False, True])
def test_dv_tag_of_expired_snapshot_reads(tmp_path, pk):
    schema = pa.schema([("k", pa.int32()), ("v", pa.int64())])
    options = {"deletion-vectors.enabled": "true", **({"bucket": "1"} if pk else {})}
    t = _table(tmp_path, schema, primary_keys=["k"] if pk else [], options=options)
    t.write(pa.table({"k": pa.array([1, 2], pa.int32()), "v": pa.array([1, 1], pa.int64())}))
    t.create_tag("v1")
    t.write(pa.table({"k": pa.array([3], pa.int32()), "v": pa.array([1], pa.int64())}))
    t.expire_snapshots(retain_max=1, retain_min=1)
    assert sorted(Table.open(t.path).to_arrow(tag="v1")["k"].to_pylist()) == [1, 2]


@pytest.mark.parametrize("partition", [None, {"p": "a"}])
def test_append_dv_compaction_keeps_deleted_rows_deleted(tmp_path, partition):
    t = _table(tmp_path, pa.schema([("id", pa.int64()), ("p", pa.string())]), partition_keys=["p"],
               options={"deletion-vectors.enabled": "true"})
    t.write(pa.table({"id": pa.array([1, 2], pa.int64()), "p": ["a", "a"]}))
    t.write(pa.table({"id": pa.array([3], pa.int64()), "p": ["a"]}))
    t.delete("id = 1")
    assert sorted(t.to_arrow()["id"].to_pylist()) == [2, 3]
    t.compact(full=True, partition=partition)
    assert sorted(t.to_arrow()["id"].to_pylist()) == [2, 3]  # compaction used to ignore the vectors


@pytest.mark.parametrize("where", ["NOT (v IN (1, 2) AND id > 0)", "NOT (v = 1 AND v IN (1, 2))"])
def test_in_is_null_for_null_values(tmp_path, where):
    t = _table(tmp_path, pa.schema([("id", pa.int64()), ("v", pa.int64())]))
    t.write(pa.table({"id": pa.array([1, 2, 3], pa.int64()), "v": pa.array([1, None, 5], pa.int64())}))
    assert t.to_arrow(filter=where)["id"].to_pylist() == [3]  # SQL: NOT(NULL) is NULL, not selected
    t.delete(where)
    assert sorted(t.to_arrow()["id"].to_pylist()) == [1, 2]


AGG = pa.schema([("k", pa.int32()), ("v", pa.int64()), ("s", pa.string())])
AGG_OPTIONS = {"bucket": "1", "merge-engine": "aggregation", "fields.v.aggregate-function": "sum",
               "fields.s.ignore-retract": "true"}


def _rows(t, **cols):
    return pa.table(cols).cast(t.schema.arrow_schema())


def _write_agg(t):
    t.write(_rows(t, k=[1, 2], v=[3, 4], s=["a", "b"]))


@pytest.mark.parametrize("engine_options", [AGG_OPTIONS, {"bucket": "1", "merge-engine": "first-row"}])
def test_update_and_merge_refused_where_the_engine_cannot_apply_them(tmp_path, engine_options):
    """Aggregation would aggregate a rewritten row again, first-row would ignore it: refused, as
    Paimon's Spark UPDATE/MERGE INTO does, and nothing is committed."""
    t = _table(tmp_path, AGG, primary_keys=["k"], options=engine_options)
    _write_agg(t)
    latest = t.snapshot_manager.latest_id()
    with pytest.raises(PaimonLabError, match="UPDATE is not supported"):
        t.update({"s": "z"}, "k = 1")
    with pytest.raises(PaimonLabError, match="MERGE INTO is not supported"):
        t.merge_into(_rows(t, k=[1], v=[9], s=["z"]), on=["k"], matched_update=True)
    assert t.snapshot_manager.latest_id() == latest
    assert sorted(t.to_arrow().to_pylist(), key=lambda r: r["k"]) == \
        [{"k": 1, "v": 3, "s": "a"}, {"k": 2, "v": 4, "s": "b"}]


def test_delete_on_aggregation_needs_remove_record_on_delete(tmp_path):
    t = _table(tmp_path, AGG, primary_keys=["k"], options=AGG_OPTIONS)
    _write_agg(t)
    with pytest.raises(PaimonLabError, match="aggregation.remove-record-on-delete"):
        t.delete("k = 1")   # a -D would be a retraction: k=1 would stay with v = 0
    assert t.snapshot_manager.latest_id() == 1
    with pytest.raises(PaimonLabError, match="first-row"):
        _table(tmp_path / "fr", AGG, primary_keys=["k"], options={"bucket": "1", "merge-engine": "first-row"}
               ).delete("k = 1")


@pytest.mark.parametrize("engine", ["aggregation", "partial-update"])
def test_remove_record_on_delete(tmp_path, engine):
    """'<engine>.remove-record-on-delete': -D removes the row, later rows start afresh (Java's
    AggregateMergeFunction / PartialUpdateMergeFunction)."""
    options = dict(AGG_OPTIONS) if engine == "aggregation" else {"bucket": "1", "merge-engine": engine}
    options[f"{engine}.remove-record-on-delete"] = "true"
    t = _table(tmp_path, AGG, primary_keys=["k"], options=options)
    _write_agg(t)
    t.write(_rows(t, k=[1], v=[10], s=[None]))
    t.delete("k = 1")
    assert t.to_arrow().to_pylist() == [{"k": 2, "v": 4, "s": "b"}]
    t.write(_rows(t, k=[1], v=[5], s=[None]))          # starts afresh: no 3 + 10 carried over
    t.write(_rows(t, k=[2, 2], v=[1, 1], s=["c", None]), row_kinds=["+I", "-D"])  # one batch: -D last
    assert t.to_arrow().to_pylist() == [{"k": 1, "v": 5, "s": None}]
    t.compact(full=True)
    assert t.to_arrow().to_pylist() == [{"k": 1, "v": 5, "s": None}]
