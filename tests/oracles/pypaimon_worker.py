"""The pypaimon oracle's worker: ``python pypaimon_worker.py`` in the pypaimon virtual environment.

It answers requests from :mod:`pypaimon_oracle` on stdin/stdout (framing in :mod:`wire`) until
stdin closes. Two kinds of request:

* ``{"op": "call", "name": ..., "args": ..., "kwargs": ...}`` runs one of the named operations
  below (``create_table``, ``write_table``, ``read_table``...);
* ``{"op": "run", "source": ..., "name": ..., ...}`` executes ``source`` (the text of a function
  written in a test module) and calls the function ``name`` it defines. Its globals start as this
  module's ``SNIPPET_GLOBALS``, so a snippet can reuse ``table(warehouse, ident)`` & co.

Replies are ``{"ok": True, "value": ...}`` or ``{"ok": False, "type", "message", "traceback"}``.
This module runs only here: it imports pypaimon and pyarrow (19.x), never paimon_lab.
"""

from __future__ import annotations

import datetime as dt
import linecache
import os
import sys
import traceback
from decimal import Decimal

import pyarrow as pa

import wire

UTC = dt.timezone.utc


# ====================================================================== named operations

def catalog(warehouse: str, database: str | None = "db"):
    """pypaimon's filesystem catalog over ``warehouse`` (creating ``database`` if given)."""
    from pypaimon import CatalogFactory

    cat = CatalogFactory.create({"warehouse": warehouse})
    if database:
        cat.create_database(database, True)
    return cat


def create_database(warehouse: str, name: str) -> None:
    catalog(warehouse, name)


def table(warehouse: str, ident: str, options: dict | None = None):
    """A freshly loaded table (pypaimon tables pin their schema and options when loaded)."""
    t = catalog(warehouse, None).get_table(ident)
    return t.copy(options) if options else t


def create_table(warehouse: str, ident: str, schema: pa.Schema | None = None, partition_keys=(),
                 primary_keys=(), options: dict | None = None, fields: list | None = None) -> None:
    """Create ``ident`` from an Arrow schema, or from ``fields``: [(id, name, Paimon type string)]."""
    from pypaimon import Schema
    from pypaimon.schema.data_types import AtomicType, DataField

    kw = dict(partition_keys=list(partition_keys) or None, primary_keys=list(primary_keys) or None,
              options=dict(options or {}))
    if fields is not None:
        paimon_schema = Schema([DataField(i, n, AtomicType(t)) for i, n, t in fields], **kw)
    else:
        paimon_schema = Schema.from_pyarrow_schema(schema, **kw)
    catalog(warehouse, ident.split(".")[0]).create_table(ident, paimon_schema, False)


def write_table(warehouse: str, ident: str, data, overwrite: bool | dict = False) -> int | None:
    """One batch commit of ``data`` (a table, or a list of tables written in turn); returns the
    latest snapshot id after it."""
    from pypaimon.schema.data_types import PyarrowFieldParser

    t = table(warehouse, ident)
    wb = t.new_batch_write_builder()
    if overwrite is True:
        wb.overwrite()
    elif isinstance(overwrite, dict):
        wb.overwrite(overwrite)
    # pypaimon limitation: write_arrow demands exactly the table's Arrow schema (it will not take
    # fixed_size_binary(4) for BINARY(4), which it reads back as binary), so cast first.
    target = PyarrowFieldParser.from_paimon_schema(t.fields)
    w, c = wb.new_write(), wb.new_commit()
    try:
        for b in (data if isinstance(data, (list, tuple)) else [data]):
            w.write_arrow(b.cast(target) if b.schema != target else b)
        c.commit(w.prepare_commit())
    finally:
        w.close()
        c.close()
    latest = table(warehouse, ident).snapshot_manager().get_latest_snapshot()
    return latest.id if latest else None


PREDICATE_NAMES = {"dt": dt, "Decimal": Decimal, "UTC": UTC}


def read_builder(warehouse: str, ident: str, *, columns=None, snapshot_id=None, tag=None,
                 timestamp_millis=None, predicate: str | None = None, predicate_vars: dict | None = None,
                 options: dict | None = None):
    """A read builder; ``predicate`` is a Python expression over ``pb`` (the predicate builder),
    ``dt``, ``Decimal``, ``UTC`` and ``predicate_vars``, e.g. ``"pb.equal('id', v)"``."""
    opts = dict(options or {})
    if snapshot_id is not None:
        opts["scan.snapshot-id"] = str(snapshot_id)
    if tag is not None:
        opts["scan.tag-name"] = tag
    if timestamp_millis is not None:
        opts["scan.timestamp-millis"] = str(timestamp_millis)
    rb = table(warehouse, ident, opts).new_read_builder()
    if predicate is not None:
        pb = rb.new_predicate_builder()
        rb = rb.with_filter(eval(predicate, {**PREDICATE_NAMES, **(predicate_vars or {}), "pb": pb}))
    if columns is not None:
        rb = rb.with_projection(list(columns))
    return rb


def read_table(warehouse: str, ident: str, **kw) -> pa.Table:
    """Every row of ``ident`` (a ``db.t$system`` table too); keywords as :func:`read_builder`."""
    rb = read_builder(warehouse, ident, **kw)
    return rb.new_read().to_arrow(rb.new_scan().plan().splits())


def read_splits(warehouse: str, ident: str, **kw) -> list[tuple[int, pa.Table]]:
    """[(bucket, rows)] per split of the plan."""
    rb = read_builder(warehouse, ident, **kw)
    return [(s.bucket, rb.new_read().to_arrow([s])) for s in rb.new_scan().plan().splits()]


def snapshots(warehouse: str, ident: str) -> list[tuple]:
    """[(id, commit kind, total record count, delta record count, time millis)] oldest first."""
    return [(s.id, s.commit_kind, s.total_record_count, s.delta_record_count, s.time_millis)
            for s in table(warehouse, ident).snapshot_manager().list_snapshots()]


def create_tag(warehouse: str, ident: str, name: str, snapshot_id: int) -> None:
    table(warehouse, ident).create_tag(name, snapshot_id)


def tags(warehouse: str, ident: str) -> dict[str, int]:
    t = table(warehouse, ident)
    return {n: t.tag_manager().get(n).id for n in t.list_tags()}


def table_options(warehouse: str, ident: str) -> dict[str, str]:
    return dict(table(warehouse, ident).options.options.to_map())


def versions() -> dict[str, str]:
    from importlib.metadata import version

    import pypaimon  # noqa: F401 - importable, not only installed

    return {"pypaimon": version("pypaimon"), "pyarrow": pa.__version__,
            "python": sys.version.split()[0]}


# what a test may call by name (plain values in, plain values out)
OPERATIONS = {f.__name__: f for f in (create_database, create_table, write_table, read_table, read_splits,
                                      snapshots, create_tag, tags, table_options, versions)}
# what a snippet sees as globals besides: also the helpers that return pypaimon objects
SNIPPET_GLOBALS = {"pa": pa, "dt": dt, "Decimal": Decimal, "UTC": UTC, "catalog": catalog, "table": table,
                   "read_builder": read_builder, **OPERATIONS}


# ====================================================================== the loop

_snippets: dict[str, dict] = {}


def _snippet(source: str, name: str) -> dict:
    """The namespace of ``source`` executed once (later calls reuse it)."""
    ns = _snippets.get(source)
    if ns is None:
        filename = f"<snippet {name} #{len(_snippets)}>"
        linecache.cache[filename] = (len(source), None, source.splitlines(True), filename)  # for tracebacks
        ns = {"__name__": "pypaimon_snippet", **SNIPPET_GLOBALS}
        exec(compile(source, filename, "exec"), ns)
        _snippets[source] = ns
    return ns


def handle(request: dict):
    if request["op"] == "call":
        fn = OPERATIONS[request["name"]]
    elif request["op"] == "run":
        fn = _snippet(request["source"], request["name"])[request["name"]]
    else:
        raise ValueError(f"unknown op {request['op']!r}")
    return fn(*request.get("args", ()), **request.get("kwargs", {}))


def main() -> None:
    replies = os.fdopen(os.dup(1), "wb")
    os.dup2(2, 1)  # anything pypaimon prints goes to stderr, not into the protocol
    sys.stdout = sys.stderr
    requests = sys.stdin.buffer
    wire.send(replies, {"ok": True, "value": versions()})
    while True:
        try:
            request = wire.receive(requests)
        except EOFError:
            return
        try:
            reply = wire.dumps({"ok": True, "value": handle(request)})
        except BaseException as e:  # noqa: BLE001 - everything goes back to the test
            reply = wire.dumps({"ok": False, "type": type(e).__name__, "message": str(e),
                                "traceback": traceback.format_exc()})
        wire.write_frame(replies, reply)


if __name__ == "__main__":
    main()
