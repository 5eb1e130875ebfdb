"""Marking partitions done: telling downstream readers a partition is complete, by the actions of
'partition.mark-done-action' (``CALL sys.mark_partition_done``, :meth:`Table.mark_partitions_done`,
and with 'partition.end-input-to-done' after every batch write).

'success-file' (Java's default) writes ``<table>/<partition path>/_SUCCESS``, Java's JSON of its
creation and last modification time (a second mark keeps the creation time). The metastore
actions need a table of the Hive catalog: 'done-partition' registers the partition whose last
value has '.done' appended ('metastore.partitioned-table' on), 'mark-event' a LOAD_DONE event.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any, Sequence

from paimon_lab.core.partition import escape_path_name, value_to_partition_string
from paimon_lab.errors import CorruptFileError, DataValidationError, OptionError
from paimon_lab.io.file_io import join
from paimon_lab.utils.clock import now_millis

if TYPE_CHECKING:
    from paimon_lab.store.commit_message import CommitMessage
    from paimon_lab.store.file_store import FileStore

SUCCESS_FILE = "_SUCCESS"


def _spec_text(store: "FileStore", spec: dict[str, Any]) -> dict[str, str]:
    """A partition spec's keys (a leading part of the table's partition keys), values as the
    directory names write them (None: the default partition name)."""
    keys = list(store.partition_keys)
    unknown = [k for k in spec if k not in keys]
    if unknown:
        raise DataValidationError(f"{unknown} are not partition keys of the table; they are {keys}")
    given = [k for k in keys if k in spec]
    if not given:
        raise DataValidationError(f"The partition spec {spec} names no partition key of {keys}")
    if given != keys[:len(given)]:
        raise DataValidationError(f"A partition spec gives the first keys of {keys} (a partition or a parent "
                                  f"directory of partitions), not {given}")
    codec = store.partition_codec
    fields = {f.name: f for f in codec.fields}
    return {k: spec[k] if isinstance(spec[k], str) and spec[k].strip() else
            value_to_partition_string(spec[k], fields[k], codec.default_name, codec.legacy) for k in given}


def _path(spec: dict[str, str]) -> str:
    return "/".join(f"{escape_path_name(k)}={escape_path_name(v)}" for k, v in spec.items())


def partition_path(store: "FileStore", spec: dict[str, Any]) -> str:
    """The relative directory of a partition spec, as Java's: its keys in the table's partition
    order, values as given (a leading subset of the keys names a parent directory)."""
    return _path(_spec_text(store, spec))


def _success_file(store: "FileStore", directory: str) -> None:
    path = join(join(store.path, directory), SUCCESS_FILE)
    now = now_millis()
    created = now
    if store.file_io.exists(path):
        try:
            created = int(json.loads(store.file_io.read_text(path))["creationTime"])
        except (ValueError, KeyError, TypeError) as e:
            raise CorruptFileError(f"{path} is not a success file: {e}") from None
    text = f'{{\n  "creationTime" : {created},\n  "modificationTime" : {now}\n}}'   # Jackson's pretty print
    store.file_io.write_bytes(path, text.encode("utf-8"))


def mark_partitions_done(store: "FileStore", partitions: Sequence[dict[str, Any]]) -> list[str]:
    """Run the table's mark-done actions on each partition; returns their relative paths."""
    if not store.partition_keys:
        raise DataValidationError("Only a partitioned table has partitions to mark done")
    if not partitions:
        raise DataValidationError("Give the partitions to mark done")
    specs = [_spec_text(store, spec) for spec in partitions]
    _run_actions(store, specs)
    return [_path(spec) for spec in specs]


def mark_done_at_end_input(store: "FileStore", messages: Sequence["CommitMessage"], end_input: bool = True) -> list[str]:
    """'partition.end-input-to-done': after a batch write's commit (``end_input``; a streaming
    commit is not), mark the partitions it wrote done, as Java's end of input does: those that got
    data or index files, or in a primary-key table whose batch reads skip level 0 (Java then waits
    for the compaction) every one it touched."""
    if not end_input or not store.schema.core.get("partition.end-input-to-done") or not store.partition_keys:
        return []
    every = store.batch_scan_skips_level0
    touched = {m.partition for m in messages if every or m.new_files or m.index_changes}
    codec = store.partition_codec
    specs = sorted(({f.name: value_to_partition_string(v, f, codec.default_name, codec.legacy)
                     for f, v in zip(codec.fields, codec.from_bytes(p))} for p in touched), key=_path)
    _run_actions(store, specs)
    return [_path(spec) for spec in specs]


def check_mark_done_actions(store: "FileStore") -> None:
    """Refuse mark-done actions this table cannot run, before anything is written (as Java fails
    when it creates them, not after a commit)."""
    actions = store.schema.core.get("partition.mark-done-action")
    metastore = [a for a in actions if a != "success-file"]
    if metastore and store.metastore is None:
        raise OptionError(f"'partition.mark-done-action' {metastore} needs a table of a Hive catalog (a metastore)")
    if "done-partition" in actions and \
            str(store.schema.options.get("metastore.partitioned-table", "false")).lower() != "true":
        raise OptionError("'partition.mark-done-action' = 'done-partition' needs 'metastore.partitioned-table' = 'true'")


def _run_actions(store: "FileStore", specs: Sequence[dict[str, str]]) -> None:
    check_mark_done_actions(store)
    actions = store.schema.core.get("partition.mark-done-action")
    for spec in specs:
        for action in actions:
            if action == "success-file":
                _success_file(store, _path(spec))
            elif len(spec) != len(store.partition_keys):
                raise DataValidationError(f"'{action}' marks whole partitions: {spec} must give every key "
                                          f"of {list(store.partition_keys)}")
            else:
                store.metastore.mark_done(store, spec, action)
