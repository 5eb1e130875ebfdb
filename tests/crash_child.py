"""The child side of the crash trials in test_crash.py (kept small: the fork server preloads it).

:func:`run` opens a table, arms a crash and runs one operation. The crash is ``os._exit(1)`` at
the N-th call of a FileIO method that changes the file system (``write_bytes``, ``try_create``,
``copy_append``, ``open_output``, ``delete``, ``delete_dir``), in one of three modes:

* ``before``: die instead of making the call;
* ``after``: make the call, then die (for ``try_create``: the snapshot exists, no hint written);
* ``torn``: die half-way: a writer's temporary file (``write_bytes``/``try_create``/``copy_append``) or the
  target file (``open_output``) holds only part of the bytes.

With ``n == 0`` nothing is armed; the child then reports how many such calls the operation made.
"""

from __future__ import annotations

import json
import os
import time
import uuid

import pyarrow as pa

from paimon_lab import Table
from paimon_lab.io.file_io import FileIO

MUTATING = ("write_bytes", "try_create", "copy_append", "open_output", "delete", "delete_dir")


def _tmp_name(target: str) -> str:
    return f"{os.path.dirname(target)}/.{os.path.basename(target)}.{uuid.uuid4().hex}.tmp"


def _arm(n: int, mode: str, calls: list) -> None:
    def wrap(name, original):
        def call(self, path, *args, **kwargs):
            calls.append(name)
            if len(calls) != n:
                return original(self, path, *args, **kwargs)
            if mode == "before" or (mode == "torn" and name in ("delete", "delete_dir")):
                os._exit(1)
            if mode == "torn":
                target = self.arrow_path(path)
                os.makedirs(os.path.dirname(target), exist_ok=True)
                if name == "open_output":
                    with open(target, "wb") as f:  # a data file cut off by the crash
                        f.write(b"PAR1\x15\x04\x15\x10")
                else:
                    data = bytes(args[-1]) if args else b""   # the bytes (copy_append: its tail)
                    with open(_tmp_name(target), "wb") as f:
                        f.write(data[: len(data) // 2])
                os._exit(1)
            result = original(self, path, *args, **kwargs)
            if name == "open_output":
                result.close()
            os._exit(1)
        return call

    for name in MUTATING:
        setattr(FileIO, name, wrap(name, getattr(FileIO, name)))


def _rows(t: Table, rows: list[dict]) -> pa.Table:
    return pa.Table.from_pylist(rows, schema=t.schema.arrow_schema())


def run_op(t: Table, op: str, args: dict):
    if op == "write":
        return t.write(_rows(t, args["rows"]), row_kinds=args.get("kinds"))
    if op == "writer":
        with t.writer() as w:
            for rows in args["batches"]:
                w.write(_rows(t, rows))
        return w.snapshot_id
    if op == "overwrite":
        return t.write(_rows(t, args["rows"]), overwrite=args["partition"])
    if op == "delete":
        return t.delete(args["filter"])
    if op == "update":
        return t.update(args["values"], args["filter"])
    if op == "compact":
        return t.compact(full=args["full"])
    if op == "expire":
        return t.expire_snapshots(retain_max=args["retain_max"], retain_min=1).expired_snapshots
    if op == "rollback":
        return t.rollback_to(args.get("snapshot_id"), tag=args.get("tag")).id
    if op == "alter":
        from paimon_lab import SchemaChange

        return t.alter(SchemaChange.add_column(args["column"], pa.int64())).id
    raise ValueError(op)


def run(path: str, op: str, args: dict, n: int, mode: str, report: str | None, ready=None) -> None:
    t = Table.open(path)
    calls: list = []
    _arm(n if n else -1, mode, calls)
    if ready is not None:
        ready.send(True)
        ready.close()
    start = time.perf_counter()
    result = run_op(t, op, args)
    if report:
        with open(report, "w") as f:
            json.dump({"calls": calls, "result": result, "seconds": time.perf_counter() - start}, f)
