"""What a table tells the catalog's metastore (Hive) after it changes on its own: a new schema,
and the partitions a commit added or may have emptied."""

from __future__ import annotations

from typing import Any, Collection

from paimon_lab.core.schema import TableSchema


class MetastoreSync:
    """Told by the table's operations about changes of the main branch. A catalog whose registry
    mirrors the table (the Hive catalog) sets one on the stores it hands out."""

    def schema_changed(self, store: Any, schema: TableSchema) -> None:
        """A new schema file was committed."""

    def committed(self, store: Any, added: Collection[bytes], removed: bool) -> None:
        """A snapshot was committed: ``added`` partitions (binary rows) received files; when
        ``removed``, files were deleted and some partitions may be empty now."""

    def mark_done(self, store: Any, spec: dict[str, str], action: str) -> None:
        """Mark a partition done in the metastore: ``action`` 'done-partition' (register the
        partition whose last value has '.done' appended) or 'mark-event' (a LOAD_DONE event);
        ``spec``: every partition key's value as text, in key order."""
        raise NotImplementedError


__all__ = ["MetastoreSync"]
