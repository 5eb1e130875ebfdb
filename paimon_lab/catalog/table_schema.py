"""Schema 0 of a new table, as both catalogs' ``create_table`` build and check it."""

from __future__ import annotations

from dataclasses import replace
from typing import Any, Sequence

import pyarrow as pa

from paimon_lab.core import types as T
from paimon_lab.errors import SchemaError
from paimon_lab.fileindex import validate_file_index
from paimon_lab.core.key_value import KeyValueLayout
from paimon_lab.mergetree.merge_engine import merge_function_for
from paimon_lab.core.schema import TableSchema, new_schema


def table_schema_for(schema: "pa.Schema | TableSchema | None" = None, *,
                     fields: "Sequence[T.DataField] | None" = None, primary_keys: Sequence[str] = (),
                     partition_keys: Sequence[str] = (), options: dict[str, Any] | None = None,
                     comment: str | None = None) -> TableSchema:
    """Schema 0 of a new table, validated: from a pyarrow schema, from Paimon ``fields`` (keeping
    types Arrow cannot tell apart: VARCHAR(n), CHAR(n), TIMESTAMP(p), ...), or a ready
    :class:`TableSchema` (used as given, as schema 0)."""
    # a string names the columns as Paimon's 'primary-key' / 'partition' options do: 'a,b'
    primary_keys, partition_keys = (
        [c.strip() for c in keys.split(",") if c.strip()] if isinstance(keys, str) else (keys or ())
        for keys in (primary_keys, partition_keys))
    if isinstance(schema, TableSchema):
        if fields is not None or primary_keys or partition_keys or options or comment is not None:
            raise SchemaError("Give either a TableSchema or fields / keys / options / comment, not both")
        out = replace(schema, id=0) if schema.id != 0 else schema
    elif fields is not None:
        if schema is not None:
            raise SchemaError("Give either a schema or fields, not both")
        fields = list(fields)
        for f in fields:
            if not isinstance(f, T.DataField):
                raise SchemaError(f"fields must be paimon_lab.core.types.DataField, got {type(f).__name__}")
        base = new_schema(T.arrow_schema(fields), partition_keys=partition_keys, primary_keys=primary_keys,
                          options={k: v for k, v in (options or {}).items()}, comment=comment)
        counter = iter(range(1 << 30))
        typed = []
        for f in fields:
            fid = next(counter)
            dtype = T.assign_field_ids(f.type, counter)
            if f.name in base.primary_keys:
                dtype = dtype.copy(False)
            typed.append(T.DataField(fid, f.name, dtype, f.description, f.default_value))
        out = replace(base, fields=tuple(typed), highest_field_id=T.max_field_id(typed))
    elif isinstance(schema, pa.Schema):
        out = new_schema(schema, partition_keys=partition_keys, primary_keys=primary_keys,
                         options={k: v for k, v in (options or {}).items()}, comment=comment)
    else:
        raise SchemaError("create_table needs a pyarrow.Schema, a TableSchema or fields=[DataField, ...], "
                          f"got {type(schema).__name__}")
    if out.primary_keys:
        KeyValueLayout(out)  # validates sequence.field
        merge_function_for(out)  # validates merge engine options
    validate_file_index(out.options, list(out.fields))
    return out


__all__ = ["table_schema_for"]
