"""Views of the JDBC catalog: a query and the schema of its result, stored as Paimon's ``ViewSchema`` JSON."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any, Mapping

import pyarrow as pa

from paimon_lab.core import types as T
from paimon_lab.errors import CatalogError, JdbcCatalogError


@dataclass(frozen=True)
class View:
    """A persisted view: its SQL text and the schema of its result, kept for the SQL layer."""

    identifier: str
    query: str
    fields: tuple[T.DataField, ...]
    comment: str | None = None
    dialects: dict[str, str] = field(default_factory=dict)
    options: dict[str, str] = field(default_factory=dict)

    @property
    def schema(self) -> pa.Schema:
        return T.arrow_schema(self.fields)

    def to_json(self) -> str:
        """Paimon's ``ViewSchema`` JSON (what Java stores in ``paimon_views.view_schema``)."""
        obj: dict[str, Any] = {"fields": [f.to_json() for f in self.fields], "query": self.query,
                               "dialects": dict(self.dialects)}
        if self.comment is not None:
            obj["comment"] = self.comment
        obj["options"] = dict(self.options)
        return json.dumps(obj)

    @staticmethod
    def from_json(identifier: str, text: str) -> "View":
        try:
            obj = json.loads(text)
            return View(identifier, obj["query"], tuple(T.DataField.from_json(f) for f in obj["fields"]),
                        obj.get("comment"), dict(obj.get("dialects") or {}), dict(obj.get("options") or {}))
        except (ValueError, KeyError, TypeError) as e:
            raise JdbcCatalogError(f"The stored schema of view '{identifier}' is not a Paimon view schema: {e}") from None


def checked_view(action: str, full: str, query: str, schema: pa.Schema, comment: str | None,
                 dialects: Mapping[str, str] | None, options: Mapping[str, str] | None) -> View:
    """A checked view definition (``action``: 'create' or 'alter', for the error messages)."""
    if not isinstance(query, str) or not query.strip():
        raise CatalogError(f"Cannot {action} view '{full}': the query is empty")
    if not isinstance(schema, pa.Schema):
        raise CatalogError(f"Cannot {action} view '{full}': the schema must be a pyarrow.Schema, "
                           f"got {type(schema).__name__}")
    if len(set(schema.names)) != len(schema.names):
        raise CatalogError(f"Cannot {action} view '{full}': duplicate column names in {schema.names}")
    return View(full, query, tuple(T.fields_from_arrow(schema)), comment,
                {str(k): str(v) for k, v in (dialects or {}).items()},
                {str(k): str(v) for k, v in (options or {}).items()})


__all__ = ["View", "checked_view"]
