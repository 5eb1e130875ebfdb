"""Hive tables that are not Paimon tables, read as format tables where Java Paimon offers that
(``format-table.enabled = true``): Parquet, ORC, and text (CSV with the table's field delimiter,
Hive's ``\\x01`` by default). Read only: their files and partitions belong to Hive."""

from __future__ import annotations

import re
from dataclasses import replace

from paimon_lab.catalog.table_schema import table_schema_for
from paimon_lab.core import types as T
from paimon_lab.core.schema import TableSchema
from paimon_lab.errors import CatalogError
from paimon_lab.io.file_io import FileIO, normalize_path

_SIMPLE = {"boolean": "BOOLEAN", "tinyint": "TINYINT", "smallint": "SMALLINT", "int": "INT", "integer": "INT",
           "bigint": "BIGINT", "float": "FLOAT", "double": "DOUBLE", "string": "STRING", "date": "DATE",
           "timestamp": "TIMESTAMP(9)", "binary": "BYTES", "decimal": "DECIMAL(10, 0)"}


def _split_top(text: str, sep: str = ",") -> list[str]:
    out, depth, start = [], 0, 0
    for i, ch in enumerate(text):
        if ch in "<(":
            depth += 1
        elif ch in ">)":
            depth -= 1
        elif ch == sep and depth == 0:
            out.append(text[start:i])
            start = i + 1
    out.append(text[start:])
    return [p.strip() for p in out]


def _paimon_type_text(hive: str) -> str:
    t = hive.strip()
    low = t.lower()
    if low in _SIMPLE:
        return _SIMPLE[low]
    m = re.fullmatch(r"(decimal|char|varchar)\s*\(([^)]*)\)", low)
    if m:
        return f"{m.group(1).upper()}({m.group(2)})"
    m = re.fullmatch(r"(array|map|struct)\s*<(.*)>", t, re.IGNORECASE | re.DOTALL)
    if m:
        kind, body = m.group(1).lower(), m.group(2)
        if kind == "array":
            return f"ARRAY<{_paimon_type_text(body)}>"
        if kind == "map":
            key, value = _split_top(body)
            return f"MAP<{_paimon_type_text(key)}, {_paimon_type_text(value)}>"
        fields = []
        for part in _split_top(body):
            name, _, ftype = part.partition(":")
            fields.append(f"`{name.strip()}` {_paimon_type_text(ftype)}")
        return "ROW<" + ", ".join(fields) + ">"
    raise CatalogError(f"Hive type '{hive}' has no Paimon counterpart in paimon-lab")


def paimon_type(hive: str) -> T.DataType:
    """The Paimon type Java Paimon reads a Hive column type as."""
    return T.parse_type(_paimon_type_text(hive))


def _format_of(hms) -> tuple[str, dict[str, str]]:
    sd = hms.sd
    serde = ((sd.serdeInfo.serializationLib if sd.serdeInfo else None) or "").lower()
    if "parquet" in serde:
        return "parquet", {}
    if "orc" in serde:
        return "orc", {}
    if "text" in (sd.inputFormat or "").lower():
        params = (sd.serdeInfo.parameters if sd.serdeInfo else None) or {}
        return "csv", {"csv.field-delimiter": params.get("field.delim", "\x01")}
    raise CatalogError(f"Hive table '{hms.dbName}.{hms.tableName}' is stored as {sd.inputFormat} "
                       f"({serde or 'no SerDe'}); only Parquet, ORC and text tables are read as format tables")


class HiveFormatTable:
    """A Hive Parquet/ORC/text table as a read-only format table (what SQL reads through
    :class:`~paimon_lab.sql.format_table.FormatTableRelation`)."""

    read_only = True

    def __init__(self, file_io: FileIO, hms):
        if (hms.tableType or "").upper() == "VIRTUAL_VIEW":
            raise CatalogError(f"'{hms.dbName}.{hms.tableName}' is a Hive view; paimon-lab does not read Hive views")
        fmt, extra = _format_of(hms)
        self.identifier = f"{hms.dbName}.{hms.tableName}"
        self.file_io = file_io
        self.path = normalize_path(hms.sd.location)
        keys = [c.name for c in hms.partitionKeys or []]
        fields = [T.DataField(i, c.name, paimon_type(c.type), c.comment)
                  for i, c in enumerate(list(hms.sd.cols) + list(hms.partitionKeys or []))]
        self.options = {"type": "format-table", "file.format": fmt, **extra}
        comment = (hms.parameters or {}).get("comment")
        # The format options describe Hive's files; they are not Paimon table options to validate.
        self.schema: TableSchema = replace(table_schema_for(fields=fields, partition_keys=keys, comment=comment),
                                           options=dict(self.options))
        self.partition_keys = keys
        self.primary_keys: list[str] = []

    def on_branch(self, branch: str):
        raise CatalogError(f"Format table {self.identifier} has no branches")

    def __repr__(self) -> str:
        return f"HiveFormatTable({self.identifier!r}, {self.options['file.format']}, {self.path!r})"


__all__ = ["HiveFormatTable", "paimon_type"]
