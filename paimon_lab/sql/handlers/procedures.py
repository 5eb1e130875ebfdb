"""``CALL sys.<procedure>(...)``: Paimon's procedures with their names, argument orders and
named arguments (``table => 'db.t'``)."""

from __future__ import annotations

import datetime as dt
import re
from typing import TYPE_CHECKING, Any, Callable

import pyarrow as pa

from paimon_lab.errors import PaimonLabError
from paimon_lab.core.options import parse_duration
from paimon_lab.sql.common import text_table
from paimon_lab.sql.errors import SqlError
from paimon_lab.sql.lexer import TokenStream
from paimon_lab.operation import tag_auto
from paimon_lab.sql.object_table import refresh_object_table
from paimon_lab.store.consumer import ConsumerManager

if TYPE_CHECKING:
    from paimon_lab.sql.context import SessionContext, Statement


def _result(values: list) -> pa.Table:
    return pa.table({"result": pa.array([str(v) for v in values], pa.string())})


def _bool(v: Any) -> bool:
    return str(v).strip().lower() in ("true", "1", "yes")


class Call:
    """One procedure call: its arguments, the context it runs in, errors positioned at its name."""

    def __init__(self, ctx: SessionContext, ts: TokenStream, name: str, args: dict[str, Any], tok):
        self.ctx, self.ts, self.name, self.args, self.tok = ctx, ts, name, args, tok

    def error(self, msg: str) -> SqlError:
        return self.ts.error(f"CALL sys.{self.name}: {msg}", self.tok)

    def need(self, key: str) -> Any:
        if self.args.get(key) is None:
            raise self.error(f"argument '{key}' is required")
        return self.args[key]

    def table(self, key: str = "table"):
        ident = str(self.need(key))
        parts = [p.strip("`") for p in ident.split(".")]
        return self.ctx.get_table(parts, error=self.error)

    def integer(self, key: str, *, required: bool = False) -> int | None:
        """An integer argument ('' or NULL: not given)."""
        v = self.need(key) if required else self.args.get(key)
        if v is None or str(v).strip() == "":
            if required:
                raise self.error(f"argument '{key}' is required")
            return None
        try:
            return int(str(v).strip())
        except ValueError:
            raise self.error(f"argument '{key}' must be an integer, got {v!r}") from None

    def millis(self, key: str) -> int | None:
        v = self.args.get(key)
        if v is None:
            return None
        return self.ctx.parse_timestamp(str(v), key)


def _compact(c: Call):
    table = c.table()
    if str(c.args.get("order_strategy") or "none").strip().lower() != "none":
        raise c.error("sort compaction (order_strategy) is not supported")
    for key, why in (("order_by", "it belongs to sort compaction, which is not supported"),
                     ("where", "use 'partitions'"),
                     ("partition_idle_time", "give the idle partitions in 'partitions'")):
        if str(c.args.get(key) or "").strip():
            raise c.error(f"'{key}' is not supported; {why}")
    _parallelism_options(c)
    strategy = str(c.args.get("compact_strategy") or "full").strip().lower()
    if strategy not in ("full", "minor"):
        raise c.error(f"unknown compact_strategy '{strategy}'; use 'full' or 'minor'")
    full = strategy == "full"
    specs = [_partition_spec(c, s) for s in str(c.args["partitions"]).split(";")] if c.args.get("partitions") else []
    ids = [table.compact(full=full, partition=p) for p in (specs or [None])]
    c.ctx.last_snapshot_id = ids[-1]
    return _result([f"compacted: snapshot {i}" if i is not None else "nothing to compact" for i in ids])


_PARALLELISM = ("sink.parallelism", "scan.parallelism")


def _parallelism_options(c: Call) -> None:
    """compact's 'options' ('k=v,k=v'): the Flink job's parallelism (the docs' example) is taken
    and has no effect, as the compaction runs in this process; other keys are refused."""
    for kv in str(c.args.get("options") or "").split(","):
        if not kv.strip():
            continue
        key, _, value = (part.strip() for part in kv.partition("="))
        if key not in _PARALLELISM:
            raise c.error(f"'options' key '{key}' is not supported (only {', '.join(_PARALLELISM)}, which this "
                          "process's compaction does not need); set table options with ALTER TABLE ... SET")
        if not value.isdigit() or int(value) < 1:
            raise c.error(f"'options' {key} must be a positive integer, got {value!r}")


def _tag_target(c: Call):
    """(table, tag name, snapshot: 'snapshot_id' or the latest) of create_tag / replace_tag."""
    table = c.table()
    sid = c.integer("snapshot_id")
    snap = table.snapshot(sid) if sid is not None else table.latest_snapshot()
    if snap is None:
        raise c.error(f"table {table.identifier} has no snapshot to tag")
    return table, str(c.need("tag")), snap


def _create_tag(c: Call):
    table, tag, snap = _tag_target(c)
    table.tag_manager.create(tag, snap, _duration_seconds(c, "time_retained"))
    return _result([f"tag {tag} -> snapshot {snap.id}"])


def _partition_spec(c: Call, spec: str) -> dict[str, str]:
    """A procedure's partition argument 'k=v[,k=v]' as a dict."""
    part = {}
    for kv in spec.split(","):
        if "=" not in kv:
            raise c.error(f"partition spec '{spec}' must be k=v[,k=v]")
        k, v = kv.split("=", 1)
        part[k.strip()] = v.strip()
    return part


def _names(c: Call, key: str) -> list[str]:
    """A required comma-separated list argument ('t1,t2')."""
    return [n.strip() for n in str(c.need(key)).split(",") if n.strip()]


def _delete_tag(c: Call):
    table = c.table()
    names = _names(c, "tag")
    missing = [n for n in names if not table.tag_manager.exists(n)]
    if missing:  # checked first, so a list with a wrong name deletes nothing
        raise c.error(f"tag {', '.join(repr(n) for n in missing)} does not exist; nothing was deleted")
    for n in names:
        table.delete_tag(n)
    return _result([f"deleted tag {n}" for n in names])


def _rollback_to(c: Call):
    table = c.table()
    tag, sid = c.args.get("tag"), c.integer("snapshot_id")
    if tag is not None and sid is None and str(tag).isdigit() and c.args.get("_tag_positional_number"):
        tag, sid = None, int(tag)
    if (tag is None) == (sid is None):
        raise c.error("give either a tag or a snapshot_id")
    snap = table.rollback_to(sid, tag=tag) if tag is not None else table.rollback_to(sid)
    return _result([f"rolled back to snapshot {snap.id}"])


def _rollback_to_timestamp(c: Call):
    table = c.table()
    ms = c.millis("timestamp")
    if ms is None:
        raise c.error("argument 'timestamp' is required")
    snap = table.snapshot(timestamp_millis=ms)
    snap = table.rollback_to(snap.id)
    return _result([f"rolled back to snapshot {snap.id}"])


def _expire_snapshots(c: Call):
    table = c.table()
    result = table.expire_snapshots(retain_max=c.integer("retain_max"),
                                    retain_min=c.integer("retain_min"),
                                    older_than_millis=c.millis("older_than"),
                                    max_deletes=c.integer("max_deletes"))
    expired = getattr(result, "expired_snapshots", [])
    return _result([len(expired)])


def _expire_changelogs(c: Call):
    table = c.table()
    if _bool(c.args.get("delete_all", False)):
        table.expire_changelogs(delete_all=True)
        return _result(["Delete all separated changelogs success."])
    n = table.expire_changelogs(retain_max=c.integer("retain_max"),
                                retain_min=c.integer("retain_min"),
                                older_than_millis=c.millis("older_than"),
                                max_deletes=c.integer("max_deletes"))
    return _result([n])


def _create_branch(c: Call):
    table = c.table()
    branch = str(c.need("branch"))
    tag = c.args.get("tag")
    sid = c.integer("snapshot_id")
    if tag is not None and str(tag).isdigit() and c.args.get("_tag_positional_number"):
        tag, sid = None, int(tag)
    table.create_branch(branch, tag=tag or None, snapshot_id=sid)
    return _result([f"created branch {branch}"])


def _delete_branch(c: Call):
    table = c.table()
    names = _names(c, "branch")
    missing = [n for n in names if n not in table.branches()]
    if missing:
        raise c.error(f"branch {', '.join(repr(n) for n in missing)} does not exist; nothing was deleted")
    for n in names:
        table.delete_branch(n)
    return _result([f"deleted branch {n}" for n in names])


def _fast_forward(c: Call):
    table = c.table()
    branch = str(c.need("branch"))
    table.fast_forward(branch)
    return _result([f"fast-forwarded to branch {branch}"])


def _remove_orphan_files(c: Call):
    ident = str(c.need("table"))
    dry_run = _bool(c.args.get("dry_run", False))
    older = c.millis("older_than")
    mode = str(c.args.get("mode") or "").strip()
    if mode and mode.upper() not in ("LOCAL", "DISTRIBUTED"):
        raise c.error(f"unknown mode '{mode}'; 'local' and 'distributed' are supported (both clean in this process)")
    parallelism = c.integer("parallelism")
    if parallelism is not None and parallelism < 1:
        raise c.error(f"argument 'parallelism' must be at least 1, got {parallelism}")
    parts = [p.strip("`") for p in ident.split(".")]
    tables = []
    if parts[-1] == "*":
        cat = c.ctx.paimon_catalog(c.ctx.current.catalog, c.error)
        db = parts[-2] if len(parts) > 1 else c.ctx.current.database
        tables = [cat.catalog.get_table(f"{db}.{t}") for t in cat.catalog.list_tables(db)]
    else:
        tables = [c.table()]
    deleted = []
    for t in tables:
        deleted += list(t.remove_orphan_files(older, dry_run=dry_run))
    return _result([len(deleted)] + deleted)


def _refresh_object_table(c: Call):
    table = c.table()
    n = refresh_object_table(c.ctx, table)
    return _result([f"{n} objects"])


def _duration_seconds(c: Call, key: str) -> float | None:
    v = c.args.get(key)
    if v is None or str(v).strip() == "":
        return None
    try:
        return parse_duration(str(v)) / 1000
    except ValueError as e:
        raise c.error(f"'{key}': {e}") from None


def _tag_rows(tag: str, snap) -> pa.Table:
    return pa.table({"tagName": [tag], "snapshot": pa.array([snap.id], pa.int64()),
                     "commit_time": pa.array([snap.time_millis], pa.int64()), "watermark": [str(snap.watermark)]})


def _tag_snapshot(c: Call, table, tag: str, snap) -> pa.Table:
    """Tag ``snap`` (a snapshot, or a tag's snapshot that has expired)."""
    retained = _duration_seconds(c, "time_retained")
    if table.snapshot_manager.exists(snap.id):
        table.create_tag(tag, snap.id, time_retained_seconds=retained)
    else:
        table.tag_manager.create(tag, snap, retained)
    return _tag_rows(tag, snap)


def _create_tag_from_timestamp(c: Call):
    table = c.table()
    tag = str(c.need("tag"))
    c.need("timestamp")
    return _tag_snapshot(c, table, tag, tag_auto.snapshot_for_timestamp(table.store, c.millis("timestamp")))


def _create_tag_from_watermark(c: Call):
    table = c.table()
    tag = str(c.need("tag"))
    watermark = c.integer("watermark", required=True)
    return _tag_snapshot(c, table, tag, tag_auto.snapshot_for_watermark(table.store, watermark))


def _expire_tags(c: Call):
    table = c.table()
    older = c.args.get("older_than")
    when = None
    if older is not None and str(older).strip():
        try:
            when = dt.datetime.fromisoformat(str(older).strip().replace("T", " "))
        except ValueError:
            raise c.error(f"'older_than' {older!r} is not a timestamp such as '2024-01-01 12:00:00'") from None
    expired = table.expire_tags(when)
    return pa.table({"expired_tags": expired or ["No expired tags."]})


def _expire_partitions(c: Call):
    table = c.table()
    dynamic: dict[str, str] = {}
    if c.args.get("options"):
        for kv in str(c.args["options"]).split(","):
            if "=" not in kv:
                raise c.error(f"'options' must be k=v[,k=v], got {kv!r}")
            k, v = kv.split("=", 1)
            dynamic[k.strip()] = v.strip()
    for key, option in (("expire_strategy", "partition.expiration-strategy"),
                        ("timestamp_formatter", "partition.timestamp-formatter"),
                        ("timestamp_pattern", "partition.timestamp-pattern"),
                        ("expiration_time", "partition.expiration-time"),
                        ("max_expires", "partition.expiration-max-num")):
        if c.args.get(key) is not None and str(c.args[key]).strip():
            dynamic[option] = str(c.args[key])
    expired = table.expire_partitions(**dynamic)
    c.ctx.last_snapshot_id = table.store.snapshot_manager.latest_id()
    rows = [", ".join(f"{k}={v}" for k, v in p.items()) for p in expired]
    return pa.table({"expired_partitions": rows or ["No expired partitions."]})


def _rename_tag(c: Call):
    table = c.table()
    old, new = str(c.need("tagname")), str(c.need("targettagname"))
    table.tag_manager.rename(old, new)
    return _result([f"renamed tag {old} to {new}"])


def _replace_tag(c: Call):
    table, tag, snap = _tag_target(c)
    table.tag_manager.replace(tag, snap, _duration_seconds(c, "time_retained"))
    return _result([f"tag {tag} -> snapshot {snap.id}"])


def _rollback_to_watermark(c: Call):
    table = c.table()
    watermark = c.integer("watermark", required=True)
    found = [s for s in table.snapshots() if s.watermark is not None and s.watermark <= watermark]
    if not found:
        raise c.error(f"could not find a snapshot with a watermark at or before {watermark}")
    snap = table.rollback_to(found[-1].id)
    return _result([f"Success roll back to snapshot: {snap.id} ."])


def _reset_consumer(c: Call):
    table = c.table()
    consumer = str(c.need("consumer_id"))
    nxt = c.integer("next_snapshot_id")
    manager = ConsumerManager(table.store)
    if nxt is not None:
        table.snapshot(nxt)  # must exist, as in Java
        manager.record(consumer, nxt)
    else:
        manager.delete(consumer)
    return _result(["Success"])


def _clear_consumers(c: Call):
    table = c.table()
    including = str(c.args.get("including_consumers") or "").strip() or ".*"
    excluding = str(c.args.get("excluding_consumers") or "").strip() or None
    try:
        inc, exc = re.compile(including), re.compile(excluding) if excluding else None
    except re.error as e:
        raise c.error(f"not a regular expression: {e}") from None
    manager = ConsumerManager(table.store)
    for name in manager.list():
        if inc.fullmatch(name) and not (exc is not None and exc.fullmatch(name)):
            manager.delete(name)
    return _result(["Success"])


def _drop_partition(c: Call):
    table = c.table()
    specs = [p for p in c.args.get("*partitions", []) if p is not None and str(p).strip()]
    if not specs:
        raise c.error("give the partitions to drop, as 'k=v[,k=v]' arguments")
    parts = [_partition_spec(c, str(spec)) for spec in specs]
    for part in parts:
        for k in part:
            if k not in table.partition_keys:
                raise c.error(f"'{k}' is not a partition key of {table.identifier}; they are {table.partition_keys}")
    c.ctx.last_snapshot_id = table.drop_partitions(parts)
    return _result(["Success"])


def _mark_partition_done(c: Call):
    table = c.table()
    specs = [s for s in str(c.args.get("partitions") or "").split(";") if s.strip()]
    if not specs:
        raise c.error("give the partitions, as 'k=v[,k=v][;k=v...]'")
    table.mark_partitions_done([_partition_spec(c, spec) for spec in specs])
    return _result(["Success"])


def _compact_manifest(c: Call):
    table = c.table()
    for key in ("manifest_sort_enabled", "manifest_sort_partition_field", "manifest_sort_max_rewrite_size"):
        if c.args.get(key) not in (None, "", False):
            raise c.error(f"'{key}' (sorted manifests) is not supported")
    if c.args.get("options"):
        raise c.error("'options' is not supported; set table options with ALTER TABLE ... SET")
    if _bool(c.args.get("dry_run", False)):
        raise c.error("'dry_run' is not supported")
    sid = table.compact_manifests()
    c.ctx.last_snapshot_id = sid
    return _result(["success" if sid is not None else "manifests are already compact"])


def _trigger_tag_automatic_creation(c: Call):
    table = c.table()
    tag_auto.auto_create_tags(table.store)
    if table.schema.core.get("tag.time-expire-enabled"):
        tag_auto.expire_tags(table.store)
    return pa.table({"result": ["Success"]})


# name -> (function, positional parameter names; a last '*name' takes every remaining argument)
PROCEDURES: dict[str, tuple[Callable[[Call], pa.Table], list[str]]] = {
    "compact": (_compact, ["table", "partitions", "order_strategy", "order_by", "options", "where",
                           "partition_idle_time", "compact_strategy"]),
    "create_tag": (_create_tag, ["table", "tag", "snapshot_id", "time_retained"]),
    "delete_tag": (_delete_tag, ["table", "tag"]),
    "rollback_to": (_rollback_to, ["table", "tag", "snapshot_id"]),
    "rollback_to_timestamp": (_rollback_to_timestamp, ["table", "timestamp"]),
    "expire_snapshots": (_expire_snapshots, ["table", "retain_max", "retain_min", "older_than", "max_deletes"]),
    "create_branch": (_create_branch, ["table", "branch", "tag"]),
    "delete_branch": (_delete_branch, ["table", "branch"]),
    "fast_forward": (_fast_forward, ["table", "branch"]),
    "remove_orphan_files": (_remove_orphan_files, ["table", "older_than", "dry_run", "parallelism", "mode"]),
    "refresh_object_table": (_refresh_object_table, ["table"]),
    "create_tag_from_timestamp": (_create_tag_from_timestamp, ["table", "tag", "timestamp", "time_retained"]),
    "create_tag_from_watermark": (_create_tag_from_watermark, ["table", "tag", "watermark", "time_retained"]),
    "expire_tags": (_expire_tags, ["table", "older_than"]),
    "expire_changelogs": (_expire_changelogs, ["table", "retain_max", "retain_min", "older_than", "max_deletes",
                                               "delete_all"]),
    "expire_partitions": (_expire_partitions, ["table", "expiration_time", "timestamp_formatter", "timestamp_pattern",
                                               "expire_strategy", "max_expires", "options"]),
    "rename_tag": (_rename_tag, ["table", "tagname", "targettagname"]),
    "replace_tag": (_replace_tag, ["table", "tag", "snapshot_id", "time_retained"]),
    "rollback_to_watermark": (_rollback_to_watermark, ["table", "watermark"]),
    "reset_consumer": (_reset_consumer, ["table", "consumer_id", "next_snapshot_id"]),
    "clear_consumers": (_clear_consumers, ["table", "including_consumers", "excluding_consumers"]),
    "trigger_tag_automatic_creation": (_trigger_tag_automatic_creation, ["table"]),
    "drop_partition": (_drop_partition, ["table", "*partitions"]),
    "mark_partition_done": (_mark_partition_done, ["table", "partitions"]),
    "compact_manifest": (_compact_manifest, ["table", "options", "dry_run", "manifest_sort_enabled",
                                             "manifest_sort_partition_field", "manifest_sort_max_rewrite_size"]),
}


def call(ctx: SessionContext, st: Statement) -> pa.Table:
    """CALL [c.]sys.<procedure>(args, name => value, ...)."""
    ts = st.ts
    parts, tok = ts.qualified_name("a procedure name")
    if len(parts) < 2 or parts[-2].lower() != "sys":
        raise ts.error("Procedures are called as sys.<name>(...)", tok)
    name = parts[-1].lower()
    if len(parts) == 3:
        ctx.paimon_catalog(parts[0], ts.error_at(tok))
    if name not in PROCEDURES:
        raise ts.error(f"Unknown procedure sys.{parts[-1]}; known are {sorted(PROCEDURES)}", tok)
    fn, params = PROCEDURES[name]
    ts.expect_op("(")
    args: dict[str, Any] = {}
    position = 0
    if not ts.accept_op(")"):
        while True:
            t = ts.peek()
            if t is not None and t.kind in ("word", "qident") and ts.peek(1) is not None and ts.peek(1).is_op("=>"):
                key = ts.identifier().lower()
                ts.next()
                if key not in params:
                    raise ts.error(f"sys.{name} has no argument '{key}'; arguments are {params}", t)
                args[key] = _value(ts)
            else:
                rest = params[-1] if params[-1].startswith("*") and position >= len(params) - 1 else None
                if position >= len(params) and rest is None:
                    raise ts.error(f"sys.{name} takes at most {len(params)} arguments", t)
                vt = ts.peek()
                value = _value(ts)
                key = rest or params[position]
                if rest is not None:   # a trailing variable-length argument list
                    args.setdefault(rest, []).append(value)
                else:
                    args[key] = value
                if key == "tag" and vt is not None and (vt.kind == "number" or type(value) is int):
                    args["_tag_positional_number"] = True
                position += 1
            if ts.accept_op(")"):
                break
            ts.expect_op(",")
    ts.expect_end()
    if ctx.catalog_entry(ctx.current.catalog).kind != "paimon" and len(parts) < 3:
        raise ts.error("Procedures run in a Paimon catalog: USE CATALOG <paimon catalog> first", tok)
    try:
        return fn(Call(ctx, ts, name, args, tok))
    except SqlError:
        raise
    except PaimonLabError as e:
        raise ts.error(f"CALL sys.{name}: {e}", tok) from e


def show(ctx: SessionContext, st: Statement) -> pa.Table:
    """SHOW PROCEDURES."""
    return text_table(**{"procedure name": sorted(f"sys.{p}" for p in PROCEDURES)})


def _value(ts: TokenStream) -> Any:
    t = ts.peek()
    if t is not None and t.is_kw("NULL"):
        ts.next()
        return None
    if t is not None and t.is_kw("TRUE", "FALSE"):
        ts.next()
        return t.upper == "TRUE"
    if t is not None and t.is_kw("TIMESTAMP") and ts.peek(1) is not None and ts.peek(1).kind == "string":
        ts.next()
        return ts.next().value
    if t is not None and t.is_kw("CAST") and ts.peek(1) is not None and ts.peek(1).is_op("("):
        return _cast(ts)
    return ts.literal("an argument value")


_INTEGER_TYPES = ("TINYINT", "SMALLINT", "INT", "INTEGER", "BIGINT")


def _cast(ts: TokenStream) -> Any:
    """``CAST(value AS type)``, as the Paimon docs pass numbers (``cast(10 as bigint)``)."""
    ts.next()
    ts.expect_op("(")
    vt = ts.peek()
    value = _value(ts)
    ts.expect_kw("AS")
    type_tok = ts.peek()
    type_name = ts.identifier("a type name").upper()
    if ts.peek() is not None and ts.peek().is_op("("):
        ts.balanced()
    ts.expect_op(")")
    if value is None:
        return None
    if type_name in _INTEGER_TYPES:
        try:
            return int(str(value).strip())
        except ValueError:
            raise ts.error(f"Cannot cast {value!r} to {type_name}", vt) from None
    if type_name in ("STRING", "VARCHAR", "CHAR", "BOOLEAN", "DOUBLE", "FLOAT", "DECIMAL", "TIMESTAMP"):
        return value
    raise ts.error(f"CAST to {type_name} is not supported in procedure arguments", type_tok)
